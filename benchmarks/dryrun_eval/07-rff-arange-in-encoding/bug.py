"""Reduced from https://github.com/jmclong/random-fourier-features-pytorch/pull/4 (rff.functional).

positional_encoding builds its coefficients from torch.arange(m), created on the CPU whatever the
input's device, and multiplies them with the (GPU) input.
"""

import numpy as np
import torch
import torch.nn as nn


def positional_encoding(v, sigma: float, m: int):
    j = torch.arange(m)
    coeffs = 2 * np.pi * sigma ** (j / m)
    vp = coeffs * v[..., np.newaxis]
    vp_cat = torch.cat((torch.cos(vp), torch.sin(vp)), dim=-1)
    return vp_cat.flatten(-2, -1)


class PositionalEncoding(nn.Module):
    def __init__(self, sigma: float, m: int):
        super().__init__()
        self.sigma = sigma
        self.m = m

    def forward(self, v):
        return positional_encoding(v, self.sigma, self.m)


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    encoding = PositionalEncoding(sigma=1.0, m=10)
    mlp = nn.Sequential(encoding, nn.Linear(2 * 10 * 2, 1)).to(device)
    X = torch.rand(8, 2, device=device)
    print(mlp(X).shape)
