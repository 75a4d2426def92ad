"""Reduced from https://github.com/modelscope/modelscope/issues/220 (the video diffusion pipeline).

The noise schedule tensors are built on the CPU when GaussianDiffusion is created; _i indexes them with
the timesteps t, which live on the GPU.
"""

import math

import torch
import torch.nn as nn


def _i(tensor, t, x):
    r"""Index tensor using t and format the output according to x."""
    shape = (x.size(0),) + (1,) * (x.ndim - 1)
    return tensor[t].view(shape).to(x)


def beta_schedule(schedule, num_timesteps=1000, init_beta=None, last_beta=None):
    if schedule == "linear_sd":
        return torch.linspace(init_beta**0.5, last_beta**0.5, num_timesteps, dtype=torch.float64) ** 2
    raise ValueError(schedule)


class GaussianDiffusion:
    def __init__(self, betas):
        self.betas = betas
        self.num_timesteps = len(betas)
        alphas = 1 - self.betas
        self.alphas_cumprod = torch.cumprod(alphas, dim=0)
        self.sqrt_alphas_cumprod = torch.sqrt(self.alphas_cumprod)
        self.sqrt_one_minus_alphas_cumprod = torch.sqrt(1.0 - self.alphas_cumprod)

    def q_sample(self, x0, t, noise=None):
        noise = torch.randn_like(x0) if noise is None else noise
        return (
            _i(self.sqrt_alphas_cumprod, t, x0) * x0 + _i(self.sqrt_one_minus_alphas_cumprod, t, x0) * noise
        )

    def loss(self, x0, t, model):
        noise = torch.randn_like(x0)
        xt = self.q_sample(x0, t, noise=noise)
        return (model(xt) - noise).pow(2).mean() + 0 * math.pi


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    betas = beta_schedule("linear_sd", 1000, init_beta=0.00085, last_beta=0.0120)
    diffusion = GaussianDiffusion(betas=betas)
    model = nn.Conv2d(4, 4, 3, padding=1).to(device)
    x0 = torch.randn(2, 4, 8, 8, device=device)
    t = torch.randint(0, diffusion.num_timesteps, (x0.size(0),), dtype=torch.long, device=device)
    print("loss", diffusion.loss(x0, t, model).item())
