"""Fixed twin of bug.py (https://github.com/amdegroot/ssd.pytorch/issues/578): the DataLoader gets a CUDA
generator, the fix given for this error in locuslab/deq#30 and GXYM/TextBPN-Plus-Plus#24.
"""

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.utils.data as data

parser = argparse.ArgumentParser(description="Single Shot MultiBox Detector Training With Pytorch")
parser.add_argument("--batch_size", default=4, type=int)
parser.add_argument("--cuda", default=True, type=bool)
parser.add_argument("--num_workers", default=0, type=int)
args = parser.parse_args()

if torch.cuda.is_available():
    if args.cuda:
        torch.set_default_tensor_type("torch.cuda.FloatTensor")
    if not args.cuda:
        torch.set_default_tensor_type("torch.FloatTensor")
else:
    torch.set_default_tensor_type("torch.FloatTensor")


class VOCDetection(data.Dataset):
    def __init__(self, n=16):
        rng = np.random.default_rng(0)
        self.images = rng.random((n, 3, 32, 32), dtype=np.float32)
        self.boxes = rng.random((n, 2, 5), dtype=np.float32)

    def __getitem__(self, index):
        return torch.from_numpy(self.images[index]), self.boxes[index]

    def __len__(self):
        return len(self.images)


def detection_collate(batch):
    targets = [torch.FloatTensor(sample[1]) for sample in batch]
    imgs = [sample[0] for sample in batch]
    return torch.stack(imgs, 0), targets


def train():
    dataset = VOCDetection()
    net = nn.Conv2d(3, 8, 3)
    if args.cuda and torch.cuda.is_available():
        net = net.cuda()
    data_loader = data.DataLoader(
        dataset,
        args.batch_size,
        num_workers=args.num_workers,
        shuffle=True,
        collate_fn=detection_collate,
        generator=torch.Generator(device="cuda") if torch.cuda.is_available() else None,
    )
    batch_iterator = iter(data_loader)
    for iteration in range(3):
        images, targets = next(batch_iterator)
        if args.cuda and torch.cuda.is_available():
            images = images.cuda()
            targets = [ann.cuda() for ann in targets]
        out = net(images)
        print(iteration, out.shape, len(targets))


if __name__ == "__main__":
    train()
