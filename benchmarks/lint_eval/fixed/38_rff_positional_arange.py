# Reduced from https://github.com/jmclong/random-fourier-features-pytorch/pull/4
# Scenario 3; the default rule that should find it: DK003 (fixed twin: no finding expected)
import numpy as np
import torch
import torch.nn as nn


class PositionalEncoding(nn.Module):
    def __init__(self, sigma: float, m: int):
        super().__init__()
        self.sigma = sigma
        self.m = m

    def forward(self, v):
        j = torch.arange(self.m, device=v.device)
        coeffs = 2 * np.pi * self.sigma ** (j / self.m)
        vp = coeffs * torch.unsqueeze(v, -1)
        return torch.cat((torch.cos(vp), torch.sin(vp)), dim=-1).flatten(-2, -1)
