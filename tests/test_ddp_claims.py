"""What lesson 8 says about DDP's buffer broadcast before a forward, executed (review 47, F3).

DDP broadcasts rank 0's buffers before a forward only while ``require_forward_param_sync`` is set
(``will_sync_module_buffers``, torch/nn/parallel/distributed.py lines 2375-2387, v2.13.0); ``_post_forward``
sets it after a forward with gradients on outside ``no_sync()``, and clears it otherwise (lines 1828-1841).
So the forward after a ``torch.no_grad()`` or a ``no_sync()`` forward broadcasts nothing. Watched with the
page's spy on ``torch.distributed._broadcast_coalesced`` in a one-process gloo group.
"""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from devicekit.distributed import setup, teardown


@pytest.fixture
def broadcasts():
    """Shapes of the tensors of each `_broadcast_coalesced` call, in a one-process gloo group."""
    seen: list[list[tuple[int, ...]]] = []
    real = dist._broadcast_coalesced

    def spy(group, tensors, *args, **kwargs):
        seen.append([tuple(t.shape) for t in tensors])
        return real(group, tensors, *args, **kwargs)

    dist._broadcast_coalesced = spy
    setup("gloo")
    try:
        yield seen
    finally:
        dist._broadcast_coalesced = real
        teardown()


def _forward(ddp: DDP, seen: list, how: str) -> list:
    """Run one forward (with gradients, under no_grad, or inside no_sync) and return what it broadcast."""
    seen.clear()
    x = torch.randn(5, 4)
    if how == "no_grad":
        with torch.no_grad():
            ddp(x)
    elif how == "no_sync":
        with ddp.no_sync():
            ddp(x).sum().backward()
    else:
        ddp(x).sum().backward()
    return list(seen)


def test_ddp_skips_the_buffer_broadcast_after_a_no_grad_or_no_sync_forward(broadcasts):
    ddp = DDP(nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3)))
    buffers = [[(3,), (3,), ()]]  # running_mean, running_var, num_batches_tracked
    assert _forward(ddp, broadcasts, "grad") == buffers
    assert _forward(ddp, broadcasts, "no_grad") == buffers  # the previous forward was a training one
    assert _forward(ddp, broadcasts, "grad") == []  # after a no_grad forward: nothing
    assert _forward(ddp, broadcasts, "no_sync") == buffers
    assert _forward(ddp, broadcasts, "grad") == []  # after a no_sync forward: nothing
    assert _forward(ddp, broadcasts, "grad") == buffers  # after a training forward: again
