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


def test_emulated_bf16_is_not_chosen(monkeypatch):
    """A T4: is_bf16_supported() says True (emulation), including_emulation=False says False."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: including_emulation)
    assert autocast_dtype("cuda:0") == torch.float16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: True)  # an A100
    assert autocast_dtype("cuda:0") == torch.bfloat16


def test_bf16_needs_no_scaler():
    assert autocast_dtype("cpu") == torch.bfloat16
    assert not grad_scaler("cpu").is_enabled()


def test_without_the_keyword_the_hardware_decides(monkeypatch):
    """A torch whose is_bf16_supported() has no including_emulation (and may count emulation): ask the
    compute capability, as including_emulation=False does in torch 2.13."""

    def no_keyword():  # emulation counted, as PyTorch PR #115924 made it before the keyword existed
        return True

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", no_keyword)
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (7, 5))  # a T4
    assert autocast_dtype("cuda:0") == torch.float16
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (8, 0))  # an A100
    assert autocast_dtype("cuda:0") == torch.bfloat16


def test_the_native_check_is_what_torch_does_for_including_emulation_false():
    """devicekit's fallback mirrors torch's own code: ROCm first, then compute capability >= 8."""
    import inspect

    source = inspect.getsource(torch.cuda.is_bf16_supported)
    assert "including_emulation" in inspect.signature(torch.cuda.is_bf16_supported).parameters
    assert "torch.version.hip" in source and ".major >= 8" in source


def test_cpu_autocast_defaults_to_bfloat16():
    assert torch.get_autocast_dtype("cpu") == torch.bfloat16
