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
