"""Reduced from https://github.com/flwrlabs/flower/pull/1140 (examples/quickstart_pytorch/client.py).

test() moves the images to DEVICE and hands the loss a moved copy of the labels, but compares the
predictions with the labels themselves, which are still on the CPU.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

DEVICE = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.fc1 = nn.Linear(6 * 14 * 14, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        return self.fc1(x.view(-1, 6 * 14 * 14))


def test(net, testloader):
    criterion = torch.nn.CrossEntropyLoss()
    correct, total, loss = 0, 0, 0.0
    with torch.no_grad():
        for images, labels in testloader:
            outputs = net(images.to(DEVICE))
            loss += criterion(outputs, labels.to(DEVICE)).item()
            total += labels.size(0)
            correct += (torch.max(outputs.data, 1)[1] == labels).sum().item()
    return loss / len(testloader), correct / total


if __name__ == "__main__":
    torch.manual_seed(0)
    net = Net().to(DEVICE)
    testloader = [(torch.randn(4, 3, 32, 32), torch.randint(0, 10, (4,))) for _ in range(2)]
    print("loss, accuracy", test(net, testloader))
