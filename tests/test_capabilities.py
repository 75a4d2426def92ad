"""devicekit.capabilities: bf16 means native bf16, defined once (gpu-check, routing and amp agree)."""

from __future__ import annotations

import pytest
import torch

from devicekit import capabilities as caps


def test_cpu_runner_offers_cpu_and_bf16_but_not_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    found = caps.capabilities()
    assert found.cpu and found.bf16 and not found.cuda and found.gpu_count == 0
    assert found.satisfies(["cpu", "bf16"]) and not found.satisfies(["cuda"])


def test_a_gpu_that_only_emulates_bf16_has_no_bf16(monkeypatch):
    """A T4 (compute capability 7.5): is_bf16_supported() with emulation says True; the course says no."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda index=None: (7, 5))
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: including_emulation)
    found = caps.capabilities()
    assert found.cuda and not found.bf16
    assert not found.satisfies(["cuda", "bf16"])


def test_bf16_asks_the_gpu_it_names_not_the_current_one(monkeypatch):
    """GPU 0 is an A100 (8.0), GPU 1 a T4 (7.5): asking about index 1 must not answer for GPU 0."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda index=None: {0: (8, 0), 1: (7, 5)}[index])
    assert caps.native_bf16(0) and not caps.native_bf16(1)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert not caps.capabilities().bf16, "every visible GPU must have native bf16"


def test_unknown_needs_are_an_error_not_a_silent_false():
    with pytest.raises(ValueError) as info:
        caps.capabilities().satisfies(["tpu"])
    assert "unknown needs" in info.value.en and "未知的运行条件" in info.value.zh
