"""Causal Effect Variational Autoencoder, reduced to its training entry point."""

import logging

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from pyro.infer import SVI
from pyro.optim import ClippedAdam

logger = logging.getLogger(__name__)


class CEVAE(nn.Module):
    def __init__(self, feature_dim, latent_dim=20, hidden_dim=200, num_layers=3, num_samples=100):
        super().__init__()
        self.feature_dim = feature_dim
        self.num_samples = num_samples

    def fit(self, x, t, y, num_epochs=100, batch_size=100, learning_rate=1e-3, weight_decay=1e-4):
        """Train using SVI with the TraceCausalEffect_ELBO loss."""
        assert x.dim() == 2 and x.size(-1) == self.feature_dim
        dataset = TensorDataset(x, t, y)
        dataloader = DataLoader(
            dataset,
            batch_size=batch_size,
            shuffle=True,
            generator=torch.Generator(device=x.device),
        )
        logger.info("Training with {} minibatches per epoch".format(len(dataloader)))
        optim = ClippedAdam({"lr": learning_rate, "weight_decay": weight_decay})
        svi = SVI(self.model, self.guide, optim, self.loss)
        losses = []
        for epoch in range(num_epochs):
            for x, t, y in dataloader:
                loss = svi.step(x, t, y, size=len(dataset)) / len(dataset)
                losses.append(loss)
        return losses
