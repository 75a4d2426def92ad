import torch

from loss import ExponentialLogarithmicLoss
from model import UNet

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = UNet(n_classes=4).to(device)
criterion = ExponentialLogarithmicLoss(class_weights=torch.tensor([0.1, 0.3, 0.3, 0.3]))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)


def train_epoch(loader):
    for images, masks in loader:
        images, masks = images.to(device), masks.to(device)
        loss = criterion(model(images), masks)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
