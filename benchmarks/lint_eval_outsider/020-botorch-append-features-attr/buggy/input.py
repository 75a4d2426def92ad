"""Input transformations, reduced to the AppendFeatures transform."""

import torch
from torch import Tensor
from torch.nn import Module


class InputTransform:
    """Abstract base class for input transforms."""

    def forward(self, X: Tensor) -> Tensor:
        return self.transform(X)


class AppendFeatures(InputTransform, Module):
    r"""A transform that appends the input with a given set of features."""

    def __init__(self, feature_set: Tensor, transform_on_train: bool = False, transform_on_eval: bool = True):
        r"""Append `feature_set` (an `n_f x d_f`-dim tensor) to each input."""
        super().__init__()
        if feature_set.dim() != 2:
            raise ValueError("`feature_set` must be an `n_f x d_f`-dim tensor!")
        self.feature_set = feature_set
        self.transform_on_train = transform_on_train
        self.transform_on_eval = transform_on_eval

    def transform(self, X: Tensor) -> Tensor:
        r"""Transform the inputs by appending `feature_set` to each input."""
        expanded_X = X.unsqueeze(dim=-2).expand(*X.shape[:-1], self.feature_set.shape[0], -1)
        expanded_features = self.feature_set.expand(*expanded_X.shape[:-1], -1)
        appended_X = torch.cat([expanded_X, expanded_features], dim=-1)
        return appended_X.view(*X.shape[:-2], -1, appended_X.shape[-1])


transform = AppendFeatures(feature_set=torch.rand(10, 1)).to("cuda")
X = torch.rand(4, 3, 2, device="cuda")
print(transform(X).shape)
