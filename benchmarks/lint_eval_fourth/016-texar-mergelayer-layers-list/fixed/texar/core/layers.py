from typing import List, Optional, Union

import torch
from torch import nn

from texar.core.layers_utils import get_layer


class MergeLayer(nn.Module):
    r"""A layer that consists of multiple layers in parallel. Input is fed to
    each of the parallel layers, and the outputs are merged with a
    specified mode.
    """

    def __init__(self, layers: Optional[List[nn.Module]] = None,
                 mode: str = 'concat', dim: int = 2):
        super().__init__()
        self._mode = mode
        self._dim = dim

        self._layers: Optional[nn.ModuleList] = None
        if layers is not None:
            if len(layers) == 0:
                raise ValueError(
                    "'layers' must be either None or a non-empty list.")
            self._layers = nn.ModuleList()
            for layer in layers:
                if isinstance(layer, nn.Module):
                    self._layers.append(layer)
                else:
                    self._layers.append(get_layer(hparams=layer))

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if self._layers is None:
            layer_outputs: Union[torch.Tensor, List[torch.Tensor]] = input
        else:
            layer_outputs = []
            for layer in self._layers:
                layer_output = layer(input)
                layer_outputs.append(layer_output)

        if self._mode == 'concat':
            outputs = torch.cat(tensors=layer_outputs, dim=self._dim)
        elif self._mode == 'elemwise_sum':
            outputs = layer_outputs[0]
            for i in range(1, len(layer_outputs)):
                outputs = torch.add(outputs, layer_outputs[i])
        elif self._mode == 'mean':
            _concat = torch.cat(tensors=layer_outputs, dim=self._dim)
            outputs = torch.mean(_concat, dim=self._dim)
        else:
            raise ValueError("Unknown merge mode: '%s'" % self._mode)

        return outputs

    @property
    def layers(self) -> Optional[nn.ModuleList]:
        r"""The list of parallel layers."""
        return self._layers
