import torch
from torchvision import transforms, datasets

from torchmps import MPS

use_gpu = torch.cuda.is_available()
device = torch.device('cuda' if use_gpu else 'cpu')

mps = MPS(input_dim=28**2, output_dim=10, bond_dim=20).to(device)
loss_fun = torch.nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(mps.parameters(), lr=1e-4, weight_decay=0.0)

transform = transforms.ToTensor()
train_set = datasets.MNIST('./mnist', download=True, transform=transform)
loader = torch.utils.data.DataLoader(train_set, batch_size=100, shuffle=True)

for inputs, labels in loader:
    inputs, labels = inputs.view([100, 28**2]).to(device), labels.data.to(device)
    scores = mps(inputs)
    loss = loss_fun(scores, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
