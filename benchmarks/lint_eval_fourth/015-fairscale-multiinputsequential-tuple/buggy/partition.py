import torch
from torch import nn

from fairscale.experimental.nn.distributed_pipeline.graph import MultiInputSequential


class Concat(nn.Module):
    def forward(self, a, b):
        return torch.cat([a, b], dim=1)


def build_partition(device):
    partition = MultiInputSequential(Concat(), nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    partition = partition.to(device)
    optimizer = torch.optim.SGD(partition.parameters(), lr=0.1)
    return partition, optimizer


if __name__ == "__main__":
    device = torch.device("cuda:0")
    partition, optimizer = build_partition(device)
    a = torch.randn(2, 4, device=device)
    b = torch.randn(2, 4, device=device)
    out = partition(a, b)
