"""Reduced from https://github.com/yyvhang/IAGNet/issues/4 (train.py of IAGNet, run with --resume).

On resume the optimizer's state is loaded while the model is still on the CPU, so Adam casts exp_avg
and exp_avg_sq to the CPU; model.to(device) then moves only the parameters. The maintainer's answer:
move the model to the device before loading the checkpoint.
"""

import os
import tempfile

import torch
import torch.nn as nn


def get_IAGNet():
    return nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 1))


def train_steps(model, optimizer, device, steps):
    for _ in range(steps):
        point = torch.randn(8, 12).to(device)
        label = torch.rand(8, 1).to(device)
        optimizer.zero_grad()
        loss = nn.functional.binary_cross_entropy_with_logits(model(point), label)
        loss.backward()
        optimizer.step()
    return loss.item()


def main(resume, checkpoint_path, device):
    model = get_IAGNet()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-3)

    if resume:
        model_checkpoint = torch.load(checkpoint_path, map_location=device)
        model.load_state_dict(model_checkpoint["model"])
        optimizer.load_state_dict(model_checkpoint["optimizer"])
        start_epoch = model_checkpoint["Epoch"]
    else:
        start_epoch = -1

    model = model.to(device)
    loss = train_steps(model, optimizer, device, steps=2)
    checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "Epoch": start_epoch + 1}
    torch.save(checkpoint, checkpoint_path)
    return loss


if __name__ == "__main__":
    torch.manual_seed(42)
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    checkpoint_path = os.path.join(tempfile.mkdtemp(), "best.pt")
    print("first run, loss", main(False, checkpoint_path, device))
    print("resumed run, loss", main(True, checkpoint_path, device))
