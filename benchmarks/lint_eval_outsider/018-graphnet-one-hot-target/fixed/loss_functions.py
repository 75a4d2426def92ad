"""Collection of loss functions."""

from abc import abstractmethod
from typing import Any, Dict, List, Union

import numpy as np
import torch
from torch import Tensor, nn
from torch.nn.functional import one_hot


class LossFunction(nn.Module):
    """Base class for loss functions in graphnet."""

    def forward(self, prediction: Tensor, target: Tensor) -> Tensor:
        elements = self._forward(prediction, target)
        return torch.mean(elements, dim=-1)

    @abstractmethod
    def _forward(self, prediction: Tensor, target: Tensor) -> Tensor:
        """Syntax like `.forward`, for implentation in inheriting classes."""


class CrossEntropyLoss(LossFunction):
    """Compute negative log likelihood loss for classification tasks."""

    def __init__(self, options: Union[int, List[Any], Dict[Any, int]], *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._options = options

    def _forward(self, prediction: Tensor, target: Tensor) -> Tensor:
        if isinstance(self._options, int):
            nb_classes = self._options
            target_integer = target
        elif isinstance(self._options, list):
            nb_classes = len(self._options)
            # list of classes; (1,12,13,..,N) -> (0,1,2,..,N)
            target_integer = torch.tensor([self._options.index(value) for value in target])
        elif isinstance(self._options, dict):
            nb_classes = len(np.unique(list(self._options.values())))
            # encodes the target according dict rules; (1,-1,12,-12,..,N,-N) -> (0,1,..,N)
            target_integer = torch.tensor([self._options[int(value)] for value in target])
        else:
            raise TypeError(f"Type {type(self._options)} not supported")

        device = prediction.device
        target_new: Tensor = one_hot(target_integer, nb_classes).to(device)
        loss = nn.CrossEntropyLoss(reduction="none")
        return loss(prediction.float(), target_new.float())
