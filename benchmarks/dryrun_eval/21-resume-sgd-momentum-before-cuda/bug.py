"""Reduced from https://github.com/microsoft/Cream/issues/2 (Cream/tools/train.py, AUTO_RESUME).

resume_checkpoint loads the checkpoint to the CPU, the optimizer is created and its state loaded while
the supernet is still on the CPU, and only then model = model.cuda(): SGD's momentum buffers stay on
the CPU.
"""

import os
import tempfile

import torch
import torch.nn as nn


def gen_supernet():
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10)
    )


def resume_checkpoint(model, checkpoint_path):
    checkpoint = torch.load(checkpoint_path, map_location="cpu")
    model.load_state_dict(checkpoint["state_dict"])
    return {"optimizer": checkpoint["optimizer"]}, checkpoint["epoch"]


def create_optimizer_supernet(model):
    return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)


def train_epoch(model, optimizer, train_loss_fn):
    for _ in range(2):
        input = torch.randn(4, 3, 8, 8)
        target = torch.randint(0, 10, (4,))
        if torch.cuda.is_available():
            input, target = input.cuda(), target.cuda()
        loss = train_loss_fn(model(input), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


def main(auto_resume, resume_path):
    model = gen_supernet()
    optimizer_state = None
    resume_epoch = None
    if auto_resume:
        optimizer_state, resume_epoch = resume_checkpoint(model, resume_path)

    optimizer = create_optimizer_supernet(model)
    if optimizer_state is not None:
        optimizer.load_state_dict(optimizer_state["optimizer"])
    if torch.cuda.is_available():
        model = model.cuda()

    train_loss_fn = nn.CrossEntropyLoss()
    loss = train_epoch(model, optimizer, train_loss_fn)
    epoch = 0 if resume_epoch is None else resume_epoch + 1
    torch.save(
        {"state_dict": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, resume_path
    )
    return loss


if __name__ == "__main__":
    torch.manual_seed(0)
    resume_path = os.path.join(tempfile.mkdtemp(), "checkpoint-0.pth.tar")
    print("first run, loss", main(False, resume_path))
    print("resumed run, loss", main(True, resume_path))
