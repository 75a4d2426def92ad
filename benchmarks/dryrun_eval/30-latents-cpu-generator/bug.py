"""Reduced from https://github.com/huggingface/diffusers/issues/6501 (a hand-written denoising loop).

The generator is created on the CPU for reproducibility, but the initial latents are drawn with
torch.randn(..., generator=generator, device=torch_device), a CUDA op.
"""

import torch
import torch.nn as nn


class UNet(nn.Module):
    def __init__(self, in_channels=4):
        super().__init__()
        self.config = type("Config", (), {"in_channels": in_channels})()
        self.conv = nn.Conv2d(in_channels, in_channels, 3, padding=1)

    def forward(self, latents, t):
        return self.conv(latents) * (1.0 - t / 1000)


def generate(unet, seed, torch_device, batch_size=1, height=64, width=64, num_inference_steps=4):
    generator = torch.Generator().manual_seed(seed)
    shape = (batch_size, unet.config.in_channels, height // 8, width // 8)
    latents = torch.randn(shape, generator=generator, device=torch_device)
    for t in torch.linspace(999, 0, num_inference_steps):
        with torch.no_grad():
            noise_pred = unet(latents, t)
        latents = latents - 0.1 * noise_pred
    return latents


if __name__ == "__main__":
    torch_device = "cuda" if torch.cuda.is_available() else "cpu"
    unet = UNet().to(torch_device)
    print(generate(unet, seed=0, torch_device=torch_device).shape)
