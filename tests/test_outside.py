"""`devicekit_labs.outside`: a block outside the simulated GPU, and the simulation back as it was after it."""

from __future__ import annotations

import pytest
import torch

import devicekit
from devicekit_labs.outside import compile_device, outside_simulation

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="simulates GPUs: needs a machine with none")


def _state() -> tuple:
    """What a pause must give back: the patched attributes, the mode stacks, the machine."""
    from torch.utils import _python_dispatch

    from devicekit.simulate import _state

    return (
        torch.compile,
        torch.cuda.is_available,
        torch.cuda.device_count,
        torch._C._only_lift_cpu_tensors(),
        list(torch.overrides._get_current_function_mode_stack()),
        list(_python_dispatch._get_current_dispatch_mode_stack()),
        _state.active(),
    )


def test_outside_every_simulation_torch_compile_runs_and_the_simulation_comes_back_whole():
    with devicekit.simulate(gpus=1), devicekit.simulate(gpus=2):
        before = _state()
        model = torch.nn.Linear(2, 2).to("cuda:1")
        with outside_simulation() as left:
            assert left is True
            assert not torch.cuda.is_available()
            assert torch.ones(1).device.type == "cpu" and not devicekit.is_simulated(torch.ones(1))
            compiled = torch.compile(lambda x: x * 2 + 1, backend="aot_eager")
            assert compiled(torch.ones(3)).tolist() == [3.0, 3.0, 3.0]
        assert _state() == before
        assert torch.cuda.device_count() == 2
        assert model(torch.ones(1, 2, device="cuda:1")).device == torch.device("cuda:1")
        with pytest.raises(RuntimeError, match="torch.compile is not simulated|不模拟 torch.compile"):
            torch.compile(lambda x: x)
        assert torch.cuda.device_count() == 2  # the inner block's machine, not the outer one's
    assert torch.compile is not before[0] and not torch.cuda.is_available()


def test_an_exception_inside_the_block_still_brings_the_simulation_back():
    with devicekit.simulate(gpus=2):
        before = _state()
        with pytest.raises(ValueError, match="inside"), outside_simulation():
            raise ValueError("inside")
        assert _state() == before


def test_without_a_simulation_it_changes_nothing():
    before = (torch.compile, torch.cuda.is_available)
    with outside_simulation() as left:
        assert left is False
        assert (torch.compile, torch.cuda.is_available) == before


def test_compile_device_is_meta_for_a_simulated_gpu_and_the_device_itself_otherwise():
    with devicekit.simulate(gpus=2):
        assert compile_device("cuda:1") == torch.device("meta")
        assert compile_device(torch.device("cpu")) == torch.device("cpu")
    assert compile_device("cpu") == torch.device("cpu")
