"""What devicekit.amp's docstrings say about torch 2.13, executed (issue 9, item 10)."""

from __future__ import annotations

import warnings

import pytest
import torch

from devicekit.amp import autocast_dtype, grad_scaler


def test_float16_autocast_works_on_the_cpu():
    with torch.autocast("cpu", dtype=torch.float16):
        out = torch.mm(torch.ones(2, 2), torch.ones(2, 2))
    assert out.dtype == torch.float16


@pytest.mark.skipif(torch.cuda.is_available(), reason="the warning is for a build or machine without CUDA")
def test_an_autocast_for_an_absent_backend_warns_and_does_nothing():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.autocast("cuda"):
            out = torch.mm(torch.ones(2, 2), torch.ones(2, 2))
    assert out.dtype == torch.float32
    assert any("Disabling autocast" in str(w.message) for w in caught)


class _Props:
    def __init__(self, major: int) -> None:
        self.major = major


def _gpus(monkeypatch, majors: dict[int, int], current: int = 0) -> list[int]:
    """Pretend CUDA GPUs with these compute-capability majors; returns the indices asked about."""
    asked: list[int] = []

    def props(device):
        index = device.index if isinstance(device, torch.device) else int(device)
        asked.append(index)
        return _Props(majors[index])

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: current)
    monkeypatch.setattr(torch.cuda, "get_device_properties", props)
    return asked


def test_emulated_bf16_is_not_chosen(monkeypatch):
    """A T4 (7.5) emulates bf16: float16 is chosen; an A100 (8.0) gets bfloat16."""
    _gpus(monkeypatch, {0: 7})
    assert autocast_dtype("cuda:0") == torch.float16
    _gpus(monkeypatch, {0: 8})
    assert autocast_dtype("cuda:0") == torch.bfloat16


def test_autocast_dtype_asks_the_gpu_it_is_given_not_the_current_one(monkeypatch):
    """Issue 20 (16): "cuda:1" asked the current GPU (0). Now GPU 1 itself is asked."""
    asked = _gpus(monkeypatch, {0: 7, 1: 8}, current=0)  # a T4 as GPU 0, an A100 as GPU 1
    assert autocast_dtype("cuda:1") == torch.bfloat16
    assert autocast_dtype("cuda:0") == torch.float16
    assert autocast_dtype("cuda") == torch.float16  # no index: the current GPU
    assert asked == [1, 0, 0]
    asked.clear()
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)
    assert autocast_dtype("cuda") == torch.bfloat16 and asked == [1]


def test_rocm_always_has_bf16(monkeypatch):
    _gpus(monkeypatch, {0: 7})
    monkeypatch.setattr(torch.version, "hip", "6.2")
    assert autocast_dtype("cuda:0") == torch.bfloat16


def test_bf16_needs_no_scaler():
    assert autocast_dtype("cpu") == torch.bfloat16
    assert not grad_scaler("cpu").is_enabled()


def test_the_native_check_is_what_torch_does_for_including_emulation_false():
    """devicekit's check mirrors torch's own code for one GPU: ROCm first, then compute capability >= 8,
    of the current device (which is why devicekit asks the properties of the GPU it was given)."""
    import inspect

    source = inspect.getsource(torch.cuda.is_bf16_supported)
    assert "including_emulation" in inspect.signature(torch.cuda.is_bf16_supported).parameters
    assert "torch.version.hip" in source and ".major >= 8" in source
    assert "current_device()" in source


def test_cpu_autocast_defaults_to_bfloat16():
    assert torch.get_autocast_dtype("cpu") == torch.bfloat16
