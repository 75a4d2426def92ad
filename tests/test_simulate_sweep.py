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
