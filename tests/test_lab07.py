"""Lab 07 self-checks: a correct AMP step and dtype choice pass; typical wrong ones fail with a hint."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

from devicekit_labs import run

LAB = "07-amp"


def _stub(*args):
    raise NotImplementedError


def step_ok(model, optimizer, scaler, x, y, dtype):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=dtype):
        loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss


def step_ok_loss_outside(model, optimizer, scaler, x, y, dtype):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=dtype):
        out = model(x)
    loss = nn.functional.mse_loss(out.float(), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss


def step_cuda_autocast_everywhere(model, optimizer, scaler, x, y, dtype):
    optimizer.zero_grad()
    with torch.autocast("cuda", dtype=dtype):
        loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss


def step_without_scaler(model, optimizer, scaler, x, y, dtype):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=dtype):
        loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


def step_without_zero_grad(model, optimizer, scaler, x, y, dtype):
    with torch.autocast(x.device.type, dtype=dtype):
        loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss


def step_converting_the_model(model, optimizer, scaler, x, y, dtype):
    model.to(dtype)
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x.to(dtype)), y.to(dtype))
    loss.backward()
    optimizer.step()
    return loss


def step_without_update(model, optimizer, scaler, x, y, dtype):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=dtype):
        loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    return loss


def choose_ok(device_type, capability):
    if device_type == "cuda" and capability < (8, 0):
        return torch.float16, True
    return torch.bfloat16, False


CASES = [
    ("amp-step", step_ok, None),
    ("amp-step", step_ok_loss_outside, None),
    ("amp-step", step_cuda_autocast_everywhere, "computed in torch.float32"),
    ("amp-step", step_without_scaler, "GradScaler did not complete"),
    ("amp-step", step_converting_the_model, "do not convert the model"),
    ("amp-step", step_without_zero_grad, "after two steps"),
    ("amp-step", step_without_update, "weights did not change"),
    ("amp-step", _stub, "not done yet"),
    ("choose-amp", choose_ok, None),
    ("choose-amp", lambda device_type, capability: (torch.bfloat16, False), "2 of 6 machines"),
    ("choose-amp", lambda device_type, capability: (torch.float16, True), "4 of 6 machines"),
    ("choose-amp", lambda device_type, capability: ("bf16", False), "return a tuple"),
    ("choose-amp", _stub, "not done yet"),
]


@pytest.mark.parametrize(("key", "answer", "hint"), CASES, ids=lambda c: getattr(c, "__name__", str(c)))
def test_checks(key, answer, hint):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cuda-autocast answer warns on a CPU-only machine
        result = run(LAB, key, answer)
    assert result.passed is (hint is None), result.en
    if hint:
        assert hint in result.en
        assert any("\u4e00" <= ch <= "\u9fff" for ch in result.zh)


def test_fp16_autocast_works_on_the_cpu():
    # lesson 7 says so; the check's fp16 case depends on it
    with torch.autocast("cpu", dtype=torch.float16):
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.float16
