"""Reduced from https://github.com/torchgeo/torchgeo/pull/3232 (torchgeo.models.croma).

CROMA computes its 2D-ALiBi attention bias once, in __init__, and keeps it as a plain attribute, so
model.to(device) leaves it on the CPU while the encoders' attention runs on the GPU.
"""

import math

import torch
import torch.nn as nn


def get_2dalibi(num_heads, num_patches):
    points = [(i, j) for i in range(int(math.sqrt(num_patches))) for j in range(int(math.sqrt(num_patches)))]
    slopes = torch.tensor([2 ** (-8 * (h + 1) / num_heads) for h in range(num_heads)]).view(num_heads, 1, 1)
    idxs = torch.tensor(points, dtype=torch.float)
    distances = torch.cdist(idxs, idxs)
    return (-distances.unsqueeze(0) * slopes).unsqueeze(0)


class Attention(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.to_qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x, relative_position_bias):
        b, n, d = x.shape
        q, k, v = self.to_qkv(x).view(b, n, 3, self.num_heads, d // self.num_heads).permute(2, 0, 3, 1, 4)
        attention_scores = q @ k.transpose(-1, -2) / math.sqrt(d // self.num_heads)
        attention_scores = attention_scores + relative_position_bias
        attn = attention_scores.softmax(dim=-1)
        return self.to_out((attn @ v).transpose(1, 2).reshape(b, n, d))


class ViT(nn.Module):
    def __init__(self, dim, num_heads, in_channels, patch_size=8):
        super().__init__()
        self.linear_input = nn.Linear(in_channels * patch_size * patch_size, dim)
        self.patch_size = patch_size
        self.attention = Attention(dim, num_heads)

    def forward(self, imgs, attn_bias):
        b, c, h, w = imgs.shape
        p = self.patch_size
        patches = imgs.unfold(2, p, p).unfold(3, p, p).permute(0, 2, 3, 1, 4, 5).reshape(b, -1, c * p * p)
        x = self.linear_input(patches)
        return x + self.attention(x, relative_position_bias=attn_bias)


class CROMA(nn.Module):
    def __init__(self, encoder_dim=32, num_heads=4, image_size=32):
        super().__init__()
        self.num_patches = int((image_size / 8) ** 2)
        self.s1_encoder = ViT(encoder_dim, num_heads, in_channels=2)
        self.s2_encoder = ViT(encoder_dim, num_heads, in_channels=12)
        self.attn_bias = get_2dalibi(num_heads=num_heads, num_patches=self.num_patches)

    def forward(self, x_sar, x_optical):
        sar_encodings = self.s1_encoder(imgs=x_sar, attn_bias=self.attn_bias)
        optical_encodings = self.s2_encoder(imgs=x_optical, attn_bias=self.attn_bias)
        return sar_encodings.mean(dim=1), optical_encodings.mean(dim=1)


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = CROMA().to(device)
    x_sar, x_optical = torch.randn(2, 2, 32, 32, device=device), torch.randn(2, 12, 32, 32, device=device)
    sar, optical = model(x_sar, x_optical)
    print(sar.shape, optical.shape)
