# Copyright (C) 2019-2021, François-Guillaume Fernandez.

import torch
from torch import Tensor
import torch.nn as nn
from typing import Optional, Union, Any, List
from .. import functional as F

__all__ = ['FocalLoss']


class _Loss(nn.Module):

    def __init__(
        self,
        weight: Optional[Union[float, List[float], Tensor]] = None,
        ignore_index: int = -100,
        reduction: str = 'mean'
    ) -> None:
        super().__init__()
        # Cast class weights if possible
        self.weight: Optional[Tensor]
        if isinstance(weight, (float, int)):
            self.weight = torch.Tensor([weight, 1 - weight])  # type: ignore[assignment]
        elif isinstance(weight, list):
            self.weight = torch.Tensor(weight)  # type: ignore[assignment]
        else:
            self.weight = weight
        self.ignore_index = ignore_index
        # Set the reduction method
        if reduction not in ['none', 'mean', 'sum']:
            raise NotImplementedError("argument reduction received an incorrect input")
        else:
            self.reduction = reduction


class FocalLoss(_Loss):
    """Implementation of Focal Loss as described in
    `"Focal Loss for Dense Object Detection" <https://arxiv.org/pdf/1708.02002.pdf>`_.
    """

    def __init__(self, gamma: float = 2., **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.gamma = gamma

    def forward(self, x: Tensor, target: Tensor) -> Tensor:
        return F.focal_loss(x, target, self.weight, self.ignore_index, self.reduction, self.gamma)
