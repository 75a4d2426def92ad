from functools import reduce

import torch

from . import aggregation as agg


class TabularModule(torch.nn.Module):
    def __init__(self, aggregation=None):
        super().__init__()
        self.aggregation = aggregation
        self.input_size = None

    def forward(self, x, *args, **kwargs):
        return x

    def build(self, input_size, device=None):
        if device:
            self.to(device)
        self.input_size = input_size

        return self


class MergeTabular(TabularModule):
    def __init__(self, *to_merge, aggregation=None):
        if all(isinstance(x, dict) for x in to_merge):
            self.to_merge = reduce(lambda a, b: dict(a, **b), to_merge)
        else:
            self.to_merge = list(to_merge)
        super().__init__(aggregation)

    @property
    def merge_values(self):
        if isinstance(self.to_merge, dict):
            return list(self.to_merge.values())

        return self.to_merge

    def forward(self, inputs):
        assert isinstance(inputs, dict), "Inputs needs to be a dict"

        outputs = {}
        for layer in self.merge_values:
            outputs.update(layer(inputs))

        return outputs

    def build(self, input_size, device=None):
        super().build(input_size, device)

        for layer in self.merge_values:
            layer.build(input_size, device)

        return self


def merge_tabular(self, other, **kwargs):
    return MergeTabular(self, other)


TabularModule.__add__ = merge_tabular
