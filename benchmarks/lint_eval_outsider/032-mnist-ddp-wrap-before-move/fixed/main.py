import argparse

import torch
import torch.nn.functional as F
from torch import distributed, nn
from torch.utils import data
from torch.utils.data.distributed import DistributedSampler
from torchvision import datasets, transforms


class Trainer:
    def __init__(self, net, optimizer, train_loader, device):
        self.net = net
        self.optimizer = optimizer
        self.train_loader = train_loader
        self.device = device

    def train(self):
        self.net.train()
        for data, label in self.train_loader:
            data = data.to(self.device)
            label = label.to(self.device)
            output = self.net(data)
            loss = F.cross_entropy(output, label)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(784, 10)

    def forward(self, x):
        return self.fc(x.view(x.size(0), -1))


def get_dataloader(root, batch_size):
    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    train_set = datasets.MNIST(root, train=True, transform=transform, download=True)
    sampler = DistributedSampler(train_set)
    return data.DataLoader(train_set, batch_size=batch_size, shuffle=(sampler is None), sampler=sampler)


def run(args):
    use_cuda = torch.cuda.is_available() and not args.no_cuda
    device = torch.device("cuda" if use_cuda else "cpu")

    net = Net().to(device)
    if use_cuda:
        net = nn.parallel.DistributedDataParallel(net)
    else:
        net = nn.parallel.DistributedDataParallelCPU(net)

    optimizer = torch.optim.Adam(net.parameters(), lr=args.learning_rate)
    train_loader = get_dataloader(args.root, args.batch_size)
    trainer = Trainer(net, optimizer, train_loader, device)
    for epoch in range(args.epochs):
        trainer.train()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", type=str, default="gloo")
    parser.add_argument("-i", "--init-method", type=str, default="tcp://127.0.0.1:23456")
    parser.add_argument("-r", "--rank", type=int)
    parser.add_argument("-s", "--world-size", type=int)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--no-cuda", action="store_true")
    parser.add_argument("--learning-rate", "-lr", type=float, default=1e-3)
    parser.add_argument("--root", type=str, default="data")
    parser.add_argument("--batch-size", type=int, default=128)
    args = parser.parse_args()
    distributed.init_process_group(
        backend=args.backend, init_method=args.init_method, rank=args.rank, world_size=args.world_size
    )
    run(args)


if __name__ == "__main__":
    main()
