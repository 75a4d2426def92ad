"""Reduced from https://github.com/rish-16/tokenlearner-pytorch/issues/4 (tokenlearner_pytorch.py).

TokenLearner keeps its SpatialAttention blocks in a plain Python list, so model.to(device) never moves
their convolutions; the answer in the issue wraps the list in nn.ModuleList.
"""

import torch
import torch.nn as nn


class SpatialAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(2, 1, kernel_size=(1, 1), stride=1),
            nn.BatchNorm2d(1),
            nn.ReLU(),
        )
        self.sgap = nn.AvgPool2d(2)

    def forward(self, x):
        B, H, W, C = x.shape
        x = x.view(B, C, H, W)
        mx = torch.max(x, 1)[0].unsqueeze(1)
        avg = torch.mean(x, 1).unsqueeze(1)
        combined = torch.cat([mx, avg], dim=1)
        fmap = self.conv(combined)
        weight_map = torch.sigmoid(fmap)
        out = (x * weight_map).mean(dim=(-2, -1))
        return out


class TokenLearner(nn.Module):
    def __init__(self, S):
        super().__init__()
        self.S = S
        self.tokenizers = [SpatialAttention() for _ in range(S)]

    def forward(self, x):
        B, _, _, C = x.shape
        Z = torch.zeros(B, self.S, C, device=x.device)
        for i in range(self.S):
            Zi = self.tokenizers[i](x)
            Z[:, i, :] = Zi
        return Z


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    tklr = TokenLearner(S=8).to(device)
    x = torch.rand(2, 32, 32, 3, device=device)
    print(tklr(x).shape)
