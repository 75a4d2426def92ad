import torch
from torchvision.models import resnet18

from holocron.nn.modules.loss import FocalLoss

device = torch.device("cuda")
model = resnet18(num_classes=2).to(device)
criterion = FocalLoss(weight=[0.3, 0.7]).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)


def train_epoch(loader):
    model.train()
    for x, target in loader:
        x, target = x.to(device), target.to(device)
        loss = criterion(model(x), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
