"""Fixed twin of bug.py (https://github.com/K-H-Ismail/Dilated-Convolution-with-Learnable-Spacings-PyTorch/pull/8):
lim and IDX are registered as buffers, as the maintainer asks in the review.
"""

import torch
import torch.nn as nn


class ConstructKernel2d(nn.Module):
    def __init__(self, out_channels, in_channels, groups, kernel_count, dilated_kernel_size):
        super().__init__()
        self.out_channels = out_channels
        self.in_channels = in_channels
        self.groups = groups
        self.dilated_kernel_size = dilated_kernel_size
        self.kernel_count = kernel_count
        self.__init_tmp_variables__()

    def __init_tmp_variables__(self):
        L = self.dilated_kernel_size
        self.register_buffer("lim", torch.tensor(L, dtype=torch.float).view(2, 1, 1, 1))
        I = torch.arange(0, L[0], dtype=torch.float)  # noqa: E741
        J = torch.arange(0, L[1], dtype=torch.float)
        self.register_buffer(
            "IDX", torch.stack(torch.meshgrid(I, J, indexing="ij")).view(2, 1, 1, 1, L[0], L[1])
        )

    def forward_vgauss(self, W, P, SIG):
        P = P + self.lim // 2
        SIG = SIG.abs() + 0.27
        X = (self.IDX - P.unsqueeze(-1).unsqueeze(-1)) / SIG.unsqueeze(-1).unsqueeze(-1)
        X = torch.exp(-0.5 * (X**2).sum(0))
        X = X / (X.sum((-2, -1), keepdim=True) + 1e-7)
        return (W.unsqueeze(-1).unsqueeze(-1) * X).sum(2)


class Dcls2d(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_count=3, dilated_kernel_size=(7, 7)):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_channels, in_channels, kernel_count) * 0.1)
        self.P = nn.Parameter(torch.randn(2, out_channels, in_channels, kernel_count))
        self.SIG = nn.Parameter(torch.ones(2, out_channels, in_channels, kernel_count))
        self.DCK = ConstructKernel2d(out_channels, in_channels, 1, kernel_count, dilated_kernel_size)
        self.padding = dilated_kernel_size[0] // 2

    def forward(self, x):
        kernel = self.DCK.forward_vgauss(self.weight, self.P, self.SIG)
        return nn.functional.conv2d(x, kernel, padding=self.padding)


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Sequential(Dcls2d(3, 8), nn.ReLU()).to(device)
    x = torch.randn(2, 3, 16, 16, device=device)
    print(model(x).shape)
