"""Fixed twin of bug.py (https://github.com/huggingface/accelerate/issues/2251): the results of .to() are
assigned, as the maintainer's answer says (`t = t.to(batch.device)`).
"""

import numpy as np
import torch
import torch.nn as nn


class UniformSampler:
    def __init__(self, num_timesteps):
        self._weights = np.ones([num_timesteps])

    def weights(self):
        return self._weights

    def sample(self, batch_size):
        w = self.weights()
        p = w / np.sum(w)
        indices_np = np.random.choice(len(p), size=(batch_size,), p=p)
        indices = torch.from_numpy(indices_np).long()
        weights_np = 1 / (len(p) * p[indices_np])
        weights = torch.from_numpy(weights_np).float()
        return indices, weights


def _extract_into_tensor(arr, timesteps, broadcast_shape):
    res = torch.from_numpy(arr).to(device=timesteps.device)[timesteps].float()
    while len(res.shape) < len(broadcast_shape):
        res = res[..., None]
    return res.expand(broadcast_shape)


class GaussianDiffusion:
    def __init__(self, num_timesteps=50):
        betas = np.linspace(1e-4, 0.02, num_timesteps)
        alphas_cumprod = np.cumprod(1.0 - betas)
        self.sqrt_alphas_cumprod = np.sqrt(alphas_cumprod)
        self.sqrt_one_minus_alphas_cumprod = np.sqrt(1.0 - alphas_cumprod)

    def q_sample(self, x_start, t, noise):
        scale = _extract_into_tensor(self.sqrt_alphas_cumprod, t, x_start.shape)
        sigma = _extract_into_tensor(self.sqrt_one_minus_alphas_cumprod, t, x_start.shape)
        return scale * x_start + sigma * noise

    def training_losses(self, model, x_start, t):
        noise = torch.randn_like(x_start)
        x_t = self.q_sample(x_start, t, noise)
        return ((model(x_t) - noise) ** 2).mean(dim=(1, 2, 3))


if __name__ == "__main__":
    np.random.seed(0)
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Conv2d(3, 3, 3, padding=1).to(device)
    diffusion = GaussianDiffusion()
    schedule_sampler = UniformSampler(50)
    batch = torch.randn(4, 3, 8, 8).to(device)
    t, weights = schedule_sampler.sample(batch.shape[0])
    t = t.to(batch.device)
    weights = weights.to(batch.device)
    losses = diffusion.training_losses(model, batch, t)
    loss = (losses * weights).mean()
    print("loss", loss.item())
