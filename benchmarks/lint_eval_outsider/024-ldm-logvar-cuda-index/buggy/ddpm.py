"""Latent diffusion (reduced): the training loss indexes a per-timestep log-variance table."""

import pytorch_lightning as pl
import torch
import torch.nn as nn


class DDPM(pl.LightningModule):
    def __init__(self, unet_config, timesteps=1000, learn_logvar=False, logvar_init=0.0, l_simple_weight=1.0):
        super().__init__()
        self.model = unet_config.instantiate()
        self.num_timesteps = int(timesteps)
        self.l_simple_weight = l_simple_weight
        self.learn_logvar = learn_logvar
        self.logvar = torch.full(fill_value=logvar_init, size=(self.num_timesteps,))
        if self.learn_logvar:
            self.logvar = nn.Parameter(self.logvar, requires_grad=True)

    def get_loss(self, pred, target):
        return torch.nn.functional.mse_loss(target, pred, reduction="none")


class LatentDiffusion(DDPM):
    def forward(self, x, c):
        t = torch.randint(0, self.num_timesteps, (x.shape[0],), device=self.device).long()
        return self.p_losses(x, c, t)

    def p_losses(self, x_start, cond, t, noise=None):
        noise = torch.randn_like(x_start) if noise is None else noise
        model_output = self.model(x_start + noise, t, cond)
        prefix = "train" if self.training else "val"
        loss_simple = self.get_loss(model_output, noise).mean([1, 2, 3])
        loss_dict = {f"{prefix}/loss_simple": loss_simple.mean()}

        logvar_t = self.logvar[t].to(self.device)
        loss = loss_simple / torch.exp(logvar_t) + logvar_t
        loss = self.l_simple_weight * loss.mean()
        loss_dict.update({f"{prefix}/loss": loss})
        return loss, loss_dict
