"""Synchronized BatchNorm, reduced to the model converter."""

import torch
from torch.nn.modules.batchnorm import _BatchNorm
from torch.nn.parallel import DataParallel


class SynchronizedBatchNorm2d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError("expected 4D input (got {}D input)".format(input.dim()))


class DataParallelWithCallback(DataParallel):
    """Data Parallel with a replication callback."""


def convert_model(module):
    """Traverse the input module and its children and replace every BatchNorm2d with SynchronizedBatchNorm2d."""
    if isinstance(module, torch.nn.DataParallel):
        mod = module.module
        mod = convert_model(mod)
        mod = DataParallelWithCallback(mod, device_ids=module.device_ids)
        return mod

    mod = module
    if isinstance(module, torch.nn.modules.batchnorm.BatchNorm2d):
        mod = SynchronizedBatchNorm2d(module.num_features, module.eps, module.momentum, module.affine)
        mod.running_mean = module.running_mean
        mod.running_var = module.running_var
        if module.affine:
            mod.weight.data = module.weight.data.clone().detach()
            mod.bias.data = module.bias.data.clone().detach()

    for name, child in module.named_children():
        mod.add_module(name, convert_model(child))
    return mod
