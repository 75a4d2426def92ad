"""Reduced from https://github.com/pytorch/pytorch/issues/42358 ("Type mismatch error in Autocast enabled
region", closed by its author as a user error).

The new fc layer is created (on the CPU, by default) after model.to(device); training then runs under
torch.autocast on the GPU.
"""

import torch
import torch.nn as nn


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(8, 1000)

    def forward(self, x):
        x = torch.flatten(self.features(x), 1)
        return self.fc(x)


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Backbone()
    model.to(device)
    model.fc = nn.Linear(8, 10)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler(device.type, enabled=device.type == "cuda")
    images, labels = torch.randn(4, 3, 16, 16).to(device), torch.randint(0, 10, (4,)).to(device)
    with torch.autocast(device_type=device.type, enabled=device.type == "cuda"):
        output = model(images)
        loss = nn.functional.cross_entropy(output, labels)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    print("loss", loss.item())
