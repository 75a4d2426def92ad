"""What an adversarial review of `devicekit.simulate()` found (issue 38), each shown fixed.

Each test runs the reviewer's call inside a block and checks what PyTorch does on CUDA, as the source
cited beside each test says.
"""

from __future__ import annotations

import pytest
import torch

import devicekit
from devicekit.simulate import is_simulated


def test_new_tensor_takes_self_device_and_dtype() -> None:
    """``new_tensor`` takes self's device and dtype unless given (``torch/csrc/utils/tensor_new.cpp``)."""
    with devicekit.simulate():
        x = torch.ones(3, device="cuda")
        y = x.new_tensor([1.0, 2.0, 3.0])
        assert is_simulated(y) and y.device == torch.device("cuda", 0)
        assert (x + y).tolist() == [2.0, 3.0, 4.0]
        h = x.half().new_tensor([1, 2])
        assert h.dtype == torch.float16 and h.tolist() == [1.0, 2.0]
        assert x.new_tensor([1, 2], dtype=torch.int64).dtype == torch.int64
        c = x.new_tensor([1, 2], device="cpu")
        assert not is_simulated(c) and c.device.type == "cpu" and c.dtype == torch.float32
        g = x.new_tensor([1.0], requires_grad=True)
        assert g.requires_grad and is_simulated(g)


def test_tensor_from_list_of_simulated_scalars() -> None:
    """``torch.tensor([cuda 0-dim, ...])`` reads each element's value and builds a CPU tensor
    (``internal_new_from_data`` in ``torch/csrc/utils/tensor_new.cpp``)."""
    with devicekit.simulate():
        x = torch.ones(3, device="cuda")
        for build in (torch.tensor, torch.as_tensor):
            t = build([x.sum(), x.mean()])
            assert not is_simulated(t) and t.device.type == "cpu" and t.tolist() == [3.0, 1.0]
        moved = torch.tensor([[x.sum()]], device="cuda")
        assert is_simulated(moved) and moved.tolist() == [[3.0]]
        assert torch.stack([x.sum(), x.mean()]).device == torch.device("cuda", 0)
        with pytest.warns(UserWarning):
            same = torch.tensor(x)
        assert is_simulated(same) and same.tolist() == [1.0, 1.0, 1.0]
