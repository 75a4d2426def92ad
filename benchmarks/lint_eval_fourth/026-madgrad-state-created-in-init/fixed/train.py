import torch
import torch.nn as nn
import torch.nn.functional as F

from madgrad import MADGRAD


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.fc2 = nn.Linear(256, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def fit(train_loader, epochs=1):
    model = Net()
    opt = MADGRAD(model.parameters(), lr=1e-3)
    model.cuda()
    for epoch in range(epochs):
        for xb, yb in train_loader:
            xb, yb = xb.cuda(), yb.cuda()
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
