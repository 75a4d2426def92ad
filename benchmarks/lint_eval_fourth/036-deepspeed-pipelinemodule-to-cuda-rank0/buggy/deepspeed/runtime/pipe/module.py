import os

import torch.distributed as dist
import torch.nn as nn

from .topology import PipeDataParallelTopology, PipelineParallelGrid


class PipelineModule(nn.Module):
    def __init__(self, layers, num_stages=None, topology=None, loss_fn=None, partition_method='parameters'):
        super().__init__()
        self.loss_fn = loss_fn

        self.world_group = dist.new_group(ranks=range(dist.get_world_size()))
        self.global_rank = dist.get_rank(group=self.world_group)
        self.world_size = dist.get_world_size(group=self.world_group)

        if topology is None:
            dp = self.world_size // num_stages
            topology = PipeDataParallelTopology(num_pp=num_stages, num_dp=dp)
        self._topo = topology
        self._grid = PipelineParallelGrid(process_group=self.world_group, topology=self._topo)
        self.stage_id = self._topo.get_coord(self.global_rank).pipe

        self._layer_specs = list(layers)
        self._local_start = 0
        self._local_stop = None
        self._partition_layers(method=partition_method)

        self.forward_funcs = []
        self._build()
        self.to('cuda')

    def _build(self):
        for local_idx, layer in enumerate(self._layer_specs[self._local_start:self._local_stop]):
            layer_idx = local_idx + self._local_start
            module = layer.build()
            self.forward_funcs.append(module)
            self.add_module(str(layer_idx), module)

    def _partition_layers(self, method='uniform'):
        num_stages = self._topo.get_dim('pipe')
        per_stage = len(self._layer_specs) // num_stages
        self._local_start = self.stage_id * per_stage
        self._local_stop = self._local_start + per_stage

    def forward(self, forward_input):
        x = forward_input
        for layer in self.forward_funcs:
            x = layer(x)
        return x
