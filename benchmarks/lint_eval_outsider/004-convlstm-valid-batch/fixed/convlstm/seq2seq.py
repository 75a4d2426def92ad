import torch
from torch import nn


class Seq2Seq(nn.Module):
    def __init__(self, num_channels: int, num_kernels: int, kernel_size: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv3d(num_channels, num_kernels, kernel_size, padding="same")
        self.head = nn.Conv3d(num_kernels, out_channels, kernel_size, padding="same")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.head(torch.relu(self.conv(x))))
