"""devicekit.simulate: a CPU tensor given to an op whose CUDA kernel, or an op inside it, checks devices.

Each case names what CUDA does (a case recorded on an H200 in ``results/cuda-messages.json``, or the
PyTorch v2.13.0 source that decides it) and asserts the simulated GPU does the same.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn

from devicekit.simulate import is_simulated, simulate

RECORD = json.loads((Path(__file__).resolve().parent.parent / "results" / "cuda-messages.json").read_text())


def recorded(case: str) -> str:
    return RECORD["cases"][case]["message"]


@pytest.mark.parametrize("shape", [(4,), (2, 2), (2, 1, 2)])
def test_embedding_with_cpu_indices_of_any_rank_is_index_selects_error(shape):
    # aten/src/ATen/native/Embedding.cpp (v2.13.0), embedding_symint: indices of 2 or more dimensions are
    # reshaped to 1-D and given to index_select, whose CUDA kernel checks them (recorded for 1-D)
    with simulate():
        emb = nn.Embedding(10, 3).cuda()
        indices = torch.arange(4).reshape(shape)
        with pytest.raises(RuntimeError) as info:
            emb(indices)
        assert str(info.value) == recorded("embedding-cpu-indices")
        out = emb(indices.cuda())
        assert is_simulated(out) and out.shape == (*shape, 3)
        assert torch.equal(out.cpu(), emb.weight.detach().cpu()[indices])


_MASK_TEXT = "expected self and mask to be on the same device, but got mask on {} and self on {}"


@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("mask", [torch.tensor([True, False, True]), torch.tensor(True)])
def test_masked_fill_compares_the_masks_device_itself_even_for_a_0dim_mask(in_place, mask):
    # masked_fill__cuda (aten/src/ATen/native/cuda/Indexing.cu) checks self.device() == mask.device()
    # before its TensorIterator is built; the out-of-place composite clones self and calls it
    with simulate():
        x = torch.ones(3, device="cuda")
        fill = x.masked_fill_ if in_place else x.masked_fill
        with pytest.raises(RuntimeError) as info:
            fill(mask, 0.0)
        assert str(info.value) == _MASK_TEXT.format("cpu", "cuda:0")
        assert torch.equal(x.cpu(), torch.ones(3))  # nothing written
        with pytest.raises(RuntimeError) as info:
            torch.ones(3).masked_fill(mask.cuda(), 0.0)
        assert str(info.value) == _MASK_TEXT.format("cuda:0", "cpu")
        out = x.masked_fill(mask.cuda(), torch.tensor(0.0))  # a 0-dim CPU value is read with item()
        assert is_simulated(out) and out.cpu().tolist() == torch.ones(3).masked_fill(mask, 0.0).tolist()


def test_masked_fill_with_only_the_value_on_the_gpu_is_the_tensor_overloads_error():
    with simulate(), pytest.raises(RuntimeError) as info:
        torch.ones(3).masked_fill(torch.tensor([True, False, True]), torch.tensor(0.0, device="cuda"))
    assert str(info.value) == "masked_fill_: Expected inputs to be on same device"


def test_masked_fill_on_two_simulated_gpus():
    with simulate(gpus=2), pytest.raises(RuntimeError) as info:
        torch.ones(3, device="cuda:0").masked_fill(torch.ones(3, dtype=torch.bool, device="cuda:1"), 0.0)
    assert str(info.value) == _MASK_TEXT.format("cuda:1", "cuda:0")


def _wrapper(key: str) -> str:
    """The CUDA kernel wrapper PyTorch's code generator names for ``key`` (the shipped tables)."""
    from devicekit.simulate._ops import tables

    return tables()["cuda_ops"][key][0]


def _cuda(*shape: int, **kw) -> torch.Tensor:
    return torch.ones(*shape, device="cuda", **kw)


_F = torch.nn.functional
_ARGUMENT_CHECKS = [
    # (what, run, argument named, op whose generated CUDA check names it)
    (
        "embedding_bag 2-D",
        lambda: nn.EmbeddingBag(10, 3).cuda()(torch.tensor([[1, 2]])),
        "indices",
        "_embedding_bag",
    ),
    (
        "embedding_bag offsets",
        lambda: nn.EmbeddingBag(10, 3).cuda()(torch.tensor([1, 2], device="cuda"), torch.tensor([0])),
        "offsets",
        "_embedding_bag",
    ),
    ("one_hot @ gpu", lambda: _F.one_hot(torch.tensor([0, 1]), 3).float() @ _cuda(3, 2), "mat2", "mm"),
    (
        "cross_entropy target",
        lambda: _F.cross_entropy(_cuda(4, 3), torch.tensor([0, 1, 2, 0])),
        "target",
        "nll_loss_forward",
    ),
    ("nll_loss 0-dim target", lambda: _F.nll_loss(_cuda(3), torch.tensor(1)), "target", "nll_loss_forward"),
    (
        "cross_entropy 2-D target",
        lambda: _F.cross_entropy(_cuda(2, 3, 4, 4), torch.zeros(2, 4, 4, dtype=torch.long)),
        "target",
        "nll_loss2d_forward",
    ),
    (
        "layer_norm weight",
        lambda: _F.layer_norm(_cuda(2, 3), (3,), torch.ones(3)),
        "weight",
        "native_layer_norm",
    ),
    (
        "group_norm weight",
        lambda: _F.group_norm(_cuda(2, 4, 3), 2, torch.ones(4)),
        "weight",
        "native_group_norm",
    ),
    (
        "grid_sample grid",
        lambda: _F.grid_sample(_cuda(1, 1, 4, 4), torch.zeros(1, 2, 2, 2), align_corners=False),
        "grid",
        "grid_sampler_2d",
    ),
    (
        "index_add_ index",
        lambda: _cuda(3).index_add_(0, torch.tensor([0, 1]), _cuda(2)),
        "index",
        "index_add_",
    ),
    (
        "scatter_add_ index",
        lambda: _cuda(3).scatter_add_(0, torch.tensor([0, 1]), _cuda(2)),
        "index",
        "scatter_add_",
    ),
    ("bmm", lambda: torch.bmm(_cuda(2, 3, 4), torch.ones(2, 4, 5)), "mat2", "bmm"),
    ("linear without bias", lambda: _F.linear(_cuda(3, 4), torch.ones(2, 4)), "mat2", "mm"),
]


@pytest.mark.parametrize("what, run, argument, key", _ARGUMENT_CHECKS, ids=[c[0] for c in _ARGUMENT_CHECKS])
def test_ops_whose_cuda_kernel_checks_its_arguments_name_the_cpu_one(what, run, argument, key):
    with simulate(), pytest.raises(RuntimeError) as info:
        run()
    text = str(info.value)
    assert text.startswith(f"Expected all tensors to be on the same device, but got {argument} is on ")
    assert text.endswith(f"(when checking argument in method {_wrapper(key)})")
