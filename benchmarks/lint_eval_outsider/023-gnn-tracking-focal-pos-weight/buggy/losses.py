"""Loss functions for the GNN tracking model, reduced to the edge-weight focal loss."""

from abc import ABC, abstractmethod

import torch
from pytorch_lightning.core.mixins import HyperparametersMixin
from torch import Tensor as T


def binary_focal_loss(*, inpt: T, target: T, alpha: float, gamma: float, pos_weight: T) -> T:
    """Extension of binary cross entropy: focuses on hard-to-classify examples."""
    pt = torch.where(target == 1, inpt, 1 - inpt)
    weight = torch.where(target == 1, pos_weight * alpha, 1 - alpha)
    return (-weight * (1 - pt) ** gamma * torch.log(pt.clamp(min=1e-8))).mean()


class FalsifyLowPtEdgeWeightLoss(torch.nn.Module, ABC, HyperparametersMixin):
    def __init__(self, *, pt_thld: float = 0.0):
        super().__init__()
        self.save_hyperparameters()

    def forward(self, *, w: T, y: T, **kwargs) -> T:
        return self._forward(y=y.float(), w=w)

    @abstractmethod
    def _forward(self, *, w: T, y: T, **kwargs) -> T:
        pass


class EdgeWeightFocalLoss(FalsifyLowPtEdgeWeightLoss):
    def __init__(self, *, alpha=0.25, gamma=2.0, pos_weight=None, **kwargs):
        """Loss function based on focal loss for edge classification."""
        super().__init__(**kwargs)
        if pos_weight is None:
            pos_weight = T([1.0])
        self.save_hyperparameters()

    def _forward(self, *, w: T, y: T, **kwargs) -> T:
        return binary_focal_loss(
            inpt=w,
            target=y,
            alpha=self.hparams.alpha,
            gamma=self.hparams.gamma,
            pos_weight=self.hparams.pos_weight,
        )
