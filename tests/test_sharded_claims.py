"""What lesson 11 says about FSDP2's order of ``fully_shard`` calls, executed (review 47, F10).

Layer by layer first, then the root: the other way round, ``fully_shard(layer)`` after ``fully_shard(model)``
raises at once, in torch 2.13 with an unreadable ``TypeError`` (from ``_fsdp_param.py``'s
``_init_sharding_spec_tp`` through ``DeviceMesh._concatenate``). Run in a one-process gloo group.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from devicekit.distributed import setup, teardown

fully_shard = pytest.importorskip("torch.distributed.fsdp").fully_shard


@pytest.fixture
def cpu_mesh():
    from torch.distributed.device_mesh import init_device_mesh

    setup("gloo")
    try:
        yield init_device_mesh("cpu", (1,))
    finally:
        teardown()


def test_layers_then_root_shards(cpu_mesh):
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
    for layer in model:
        fully_shard(layer, mesh=cpu_mesh)
    fully_shard(model, mesh=cpu_mesh)
    assert model(torch.ones(1, 4)).shape == (1, 2)


@pytest.mark.skipif(
    not torch.__version__.startswith("2.13."), reason="the message quoted by lesson 11 is torch 2.13's"
)
def test_root_then_a_layer_fails_at_once_and_obscurely(cpu_mesh):
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
    fully_shard(model, mesh=cpu_mesh)
    with pytest.raises(TypeError, match="^Invariant encountered: value was None when it should not be$"):
        fully_shard(model[0], mesh=cpu_mesh)
