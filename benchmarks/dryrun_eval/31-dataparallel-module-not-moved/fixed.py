"""Fixed twin of bug.py (https://github.com/d2l-ai/d2l-en/pull/2461): the wrapped net is moved to
devices[0], where DataParallel expects the module.
"""

import torch
from torch import nn


def try_gpu(i=0):
    if torch.cuda.device_count() >= i + 1:
        return torch.device(f"cuda:{i}")
    return torch.device("cpu")


def resnet18_small(num_classes, in_channels=1):
    return nn.Sequential(
        nn.Conv2d(in_channels, 16, kernel_size=3, padding=1),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d((1, 1)),
        nn.Flatten(),
        nn.Linear(16, num_classes),
    )


def train(net, num_gpus, batch_size, lr):
    train_iter = [(torch.randn(batch_size, 1, 28, 28), torch.randint(0, 10, (batch_size,))) for _ in range(2)]
    devices = [try_gpu(i) for i in range(num_gpus)]

    def init_weights(module):
        if type(module) in [nn.Linear, nn.Conv2d]:
            nn.init.normal_(module.weight, std=0.01)

    net.apply(init_weights)
    # Set the model on multiple GPUs
    net = nn.DataParallel(net, device_ids=devices).to(devices[0])
    trainer = torch.optim.SGD(net.parameters(), lr)
    loss = nn.CrossEntropyLoss()
    for X, y in train_iter:
        trainer.zero_grad()
        X, y = X.to(devices[0]), y.to(devices[0])
        loss_value = loss(net(X), y)
        loss_value.backward()
        trainer.step()
    return loss_value.item()


if __name__ == "__main__":
    torch.manual_seed(0)
    net = resnet18_small(10)
    print("loss", train(net, num_gpus=2, batch_size=8, lr=0.1))
