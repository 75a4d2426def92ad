"""Reduced from https://github.com/Saoge123/PocketFlow/issues/3 (main_generate.py of PocketFlow).

The script is started with "-d cuda:1" on a machine with one GPU; torch.load(args.ckpt,
map_location=device) then asks for a CUDA device that does not exist.
"""

import argparse
import os
import tempfile

import torch
import torch.nn as nn


class PocketFlow(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(16, 16)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        return self.head(torch.relu(self.encoder(x)))


def save_pretrained(path):
    # stands for the downloaded checkpoint ckpt/ZINC-pretrained-255000.pt
    torch.save({"config": {"hidden": 16}, "model": PocketFlow().state_dict()}, path)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--ckpt", default=os.path.join(tempfile.mkdtemp(), "ZINC-pretrained-255000.pt"))
    parser.add_argument("-d", "--device", default="cuda:1")
    args = parser.parse_args()
    save_pretrained(args.ckpt)

    device = args.device if torch.cuda.is_available() else "cpu"
    print("Loading model ...")
    ckpt = torch.load(args.ckpt, map_location=device)
    model = PocketFlow().to(device)
    model.load_state_dict(ckpt["model"])
    print(model(torch.randn(2, 16, device=device)).shape)
