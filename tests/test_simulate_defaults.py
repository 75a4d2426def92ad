"""devicekit.simulate: default tensor types and default devices set inside a block, and their restore.

The DataLoader text is the case recorded on an H200 (``randperm-default-device-cuda`` in
``results/cuda-messages.json``).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import torch

from devicekit.simulate import is_simulated, simulate

RECORD = json.loads((Path(__file__).resolve().parent.parent / "results" / "cuda-messages.json").read_text())
GENERATOR_ERROR = RECORD["cases"]["randperm-default-device-cuda"]["message"]


def _shuffled_batch() -> torch.Tensor:
    loader = torch.utils.data.DataLoader(list(range(8)), batch_size=2, shuffle=True)
    return next(iter(loader))


def _assert_plain_cpu_defaults() -> None:
    assert torch.get_default_dtype() == torch.float32
    assert torch.get_default_device() == torch.device("cpu")
    x = torch.ones(2)
    assert (
        not is_simulated(x) and x.device.type == "cpu" and torch.tensor([1.0]).type() == "torch.FloatTensor"
    )
    assert torch.set_default_tensor_type is torch.__dict__["set_default_tensor_type"]
    assert _shuffled_batch().shape == (2,)


@pytest.mark.parametrize("cuda_type", [torch.cuda.FloatTensor, "torch.cuda.FloatTensor"])
def test_set_default_tensor_type_cuda_makes_factories_simulated_and_the_dataloader_fails_as_on_a_gpu(
    cuda_type,
):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's deprecation warning for set_default_tensor_type
        with simulate():
            torch.set_default_tensor_type(cuda_type)
            x = torch.ones(2)
            assert is_simulated(x) and x.device == torch.device("cuda", 0)
            assert torch.tensor([1.0]).type() == "torch.cuda.FloatTensor"
            assert torch.get_default_device() == torch.device("cuda", 0)
            with pytest.raises(RuntimeError) as info:
                _shuffled_batch()
            assert str(info.value) == GENERATOR_ERROR
    _assert_plain_cpu_defaults()


def test_a_cuda_double_type_sets_the_dtype_and_a_cpu_type_after_it_goes_back_to_the_cpu():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with simulate():
            torch.set_default_tensor_type(torch.cuda.DoubleTensor)
            assert torch.get_default_dtype() == torch.float64
            assert torch.ones(1).type() == "torch.cuda.DoubleTensor"
            torch.set_default_tensor_type(torch.FloatTensor)
            assert torch.ones(1).type() == "torch.FloatTensor" and not is_simulated(torch.ones(1))
            torch.set_default_tensor_type("torch.cuda.DoubleTensor")  # left set: the block undoes it
    _assert_plain_cpu_defaults()


def test_an_integer_cuda_type_is_refused_with_pytorchs_own_error_and_changes_nothing():
    with pytest.raises(TypeError) as on_cpu:
        torch.set_default_tensor_type(torch.LongTensor)
    with simulate():
        with pytest.raises(TypeError) as inside:
            torch.set_default_tensor_type(torch.cuda.LongTensor)
        assert (
            str(inside.value)
            == str(on_cpu.value)
            == "only floating-point types are supported as the default type"
        )
        assert not is_simulated(torch.ones(1)) and torch.get_default_dtype() == torch.float32
    _assert_plain_cpu_defaults()


def test_with_torch_device_cuda_inside_a_block():
    with simulate():
        with torch.device("cuda"):
            assert is_simulated(torch.zeros(2)) and torch.randn(2).device == torch.device("cuda", 0)
            data = torch.tensor([1.0, 2.0])  # built from data: on the default device too, with its values
            assert (
                is_simulated(data) and data.tolist() == [1.0, 2.0] and data.type() == "torch.cuda.FloatTensor"
            )
            with pytest.raises(RuntimeError) as info:
                _shuffled_batch()
            assert str(info.value) == GENERATOR_ERROR
        assert not is_simulated(torch.zeros(2))
    _assert_plain_cpu_defaults()


@pytest.mark.parametrize("fail", [False, True])
def test_a_default_device_left_set_in_the_block_is_undone_also_by_an_exception(fail):
    with pytest.raises(KeyError) if fail else warnings.catch_warnings():
        with simulate():
            torch.set_default_device("cuda")
            assert is_simulated(torch.ones(1))
            if fail:
                raise KeyError("boom")
    _assert_plain_cpu_defaults()


def test_a_default_device_set_before_the_block_is_the_one_put_back():
    torch.set_default_device("meta")
    try:
        with simulate():
            torch.set_default_device("cuda:0")
            assert is_simulated(torch.ones(1))
        assert torch.get_default_device() == torch.device("meta") and torch.ones(1).is_meta
    finally:
        torch.set_default_device(None)
    _assert_plain_cpu_defaults()
