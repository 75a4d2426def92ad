# Reduced from https://github.com/PacktPublishing/Mastering-PyTorch/pull/9
# Scenario 1; the default rule that should find it: DK201 (fixed twin: no finding expected)
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = ConvNet().to(device)
optimizer = torch.optim.Adadelta(model.parameters(), lr=0.5)
train_dataloader = torch.utils.data.DataLoader(train_dataset, batch_size=32, shuffle=True)
for b_i, (X, y) in enumerate(train_dataloader):
    X, y = X.to(device), y.to(device)
    optimizer.zero_grad()
    pred_prob = model(X)
