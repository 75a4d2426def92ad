import numpy as np
import torch
import torch.nn as nn
import tree  # pip install dm_tree
from gym.spaces import Box, Discrete, MultiDiscrete

from ray.rllib.models.catalog import ModelCatalog
from ray.rllib.models.torch.torch_modelv2 import TorchModelV2
from ray.rllib.utils.spaces.space_utils import flatten_space
from ray.rllib.utils.torch_utils import one_hot


class ComplexInputNetwork(TorchModelV2, nn.Module):
    """TorchModelV2 concat'ing CNN outputs to flat input(s), followed by FC(s)."""

    def __init__(self, obs_space, action_space, num_outputs, model_config, name):
        nn.Module.__init__(self)
        TorchModelV2.__init__(self, obs_space, action_space, num_outputs, model_config, name)
        self.flattened_input_space = flatten_space(obs_space)

        # Build the CNN(s) given obs_space's image components.
        self.cnns = {}
        self.one_hot = {}
        self.flatten_dims = {}
        self.flatten = {}
        concat_size = 0
        for i, component in enumerate(self.flattened_input_space):
            if len(component.shape) == 3:
                self.cnns[i] = ModelCatalog.get_model_v2(
                    component, action_space, num_outputs=None, model_config={}, framework="torch", name=f"cnn_{i}"
                )
                concat_size += self.cnns[i].num_outputs
                self.add_module("cnn_{}".format(i), self.cnns[i])
            # Discrete|MultiDiscrete inputs -> One-hot encode.
            elif isinstance(component, (Discrete, MultiDiscrete)):
                size = component.n if isinstance(component, Discrete) else sum(component.nvec)
                self.one_hot[i] = ModelCatalog.get_model_v2(
                    Box(-1.0, 1.0, (size,), np.float32), action_space, None, {}, framework="torch", name=f"one_hot_{i}"
                )
                concat_size += self.one_hot[i].num_outputs
                self.add_module("one_hot_{}".format(i), self.one_hot[i])
            # Everything else (1D Box).
            else:
                size = int(np.prod(component.shape))
                self.flatten[i] = ModelCatalog.get_model_v2(
                    Box(-1.0, 1.0, (size,), np.float32), action_space, None, {}, framework="torch", name=f"flatten_{i}"
                )
                self.flatten_dims[i] = size
                concat_size += self.flatten[i].num_outputs
                self.add_module("flatten_{}".format(i), self.flatten[i])
        self.num_outputs = concat_size

    def forward(self, input_dict, state, seq_lens):
        outs = []
        for i, component in enumerate(tree.flatten(input_dict["obs"])):
            if i in self.cnns:
                cnn_out, _ = self.cnns[i]({"obs": component})
                outs.append(cnn_out)
            elif i in self.one_hot:
                one_hot_out, _ = self.one_hot[i]({"obs": one_hot(component, self.flattened_input_space[i])})
                outs.append(one_hot_out)
            else:
                nn_out, _ = self.flatten[i]({"obs": torch.reshape(component, [-1, self.flatten_dims[i]])})
                outs.append(nn_out)
        return torch.cat(outs, dim=1), []
