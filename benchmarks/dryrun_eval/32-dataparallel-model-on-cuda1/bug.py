"""Reduced from https://github.com/google-research/big_transfer/issues/73 (bit_pytorch/train.py).

The user edited the device to train on cuda:1; train.py wraps the model in nn.DataParallel (all GPUs,
so device_ids[0] is 0) and then moves it to cuda:1.
"""

import torch
import torch.nn as nn


def run(device):
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10)
    )
    print(f"Going to train on {device}")
    print("Moving model onto all GPUs")
    model = torch.nn.DataParallel(model)
    optim = torch.optim.SGD(model.parameters(), lr=0.003, momentum=0.9)
    model = model.to(device)
    optim.zero_grad()
    cri = torch.nn.CrossEntropyLoss().to(device)
    print("Starting training!")
    for step in range(2):
        x = torch.randn(8, 3, 16, 16).to(device, non_blocking=True)
        y = torch.randint(0, 10, (8,)).to(device, non_blocking=True)
        logits = model(x)
        c = cri(logits, y)
        c.backward()
        optim.step()
        optim.zero_grad()
        print(step, c.item())


if __name__ == "__main__":
    torch.manual_seed(0)
    run(torch.device("cuda:1" if torch.cuda.device_count() > 1 else "cpu"))
