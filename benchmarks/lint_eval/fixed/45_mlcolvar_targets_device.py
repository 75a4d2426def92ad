# Reduced from https://github.com/luigibonati/mlcolvar/pull/50
# Scenario 1; the default rule that should find it: DK001 (fixed twin: no finding expected)
import torch

model = Net().to(device)
loss_fn = torch.nn.MSELoss()
train_loader = torch.utils.data.DataLoader(dataset, batch_size=64)
for x, target in train_loader:
    x, target = x.to(device), target.to(device)
    out = model(x)
    loss = loss_fn(out, target)
