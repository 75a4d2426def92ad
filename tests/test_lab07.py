"""Lab 07 self-checks: a correct AMP step and dtype choice pass; typical wrong ones fail with a hint."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

from devicekit_labs import Fail, run

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
    ("amp-step", step_cuda_autocast_everywhere, "computed in float32"),
    ("amp-step", step_without_scaler, "GradScaler did not complete"),
    ("amp-step", step_converting_the_model, "do not convert the model"),
    ("amp-step", step_without_zero_grad, "left over from the first one"),
    ("amp-step", step_without_update, "weights did not change"),
    ("amp-step", _stub, "not done yet"),
    ("choose-amp", choose_ok, None),
    ("choose-amp", lambda device_type, capability: ("bf16", False), "return a tuple"),
    ("choose-amp", _stub, "not done yet"),
]


@pytest.mark.parametrize(("key", "answer", "hint"), CASES, ids=lambda c: getattr(c, "__name__", str(c)))
def test_checks(key, answer, hint):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecation warnings of the answers
        result = run(LAB, key, answer)
    assert result.passed is (hint is None), result.en
    if hint:
        assert hint in result.en
        assert any("\u4e00" <= ch <= "\u9fff" for ch in result.zh)


def test_fp16_autocast_works_on_the_cpu():
    # lesson 7 says so; the check's fp16 case depends on it
    with torch.autocast("cpu", dtype=torch.float16):
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.float16


# --- the hidden tier: what only the grader checks, over the same observations ------------------------------


def _hidden():
    import importlib.util

    from course_tools.paths import ROOT

    spec = importlib.util.spec_from_file_location("hidden_lab07", ROOT / "grading" / "hidden" / "lab07.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.HIDDEN


def _observed(key, answer):
    """The probe's observations after a trip through bytes, as the grader's judge process receives them."""
    import io

    from devicekit_labs import exercises_for

    (ex,) = [e for e in exercises_for(LAB) if e.key == key]
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.save(ex.probe(answer), buffer)
    buffer.seek(0)
    return ex, torch.load(buffer, weights_only=True)


def step_with_l1_loss(model, optimizer, scaler, x, y, dtype):
    """Every property the public judge reads holds, but the loss is not the mean-squared error asked for."""
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=dtype):
        loss = nn.functional.l1_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss


def step_l1_loss_on_a_gpu(model, optimizer, scaler, x, y, dtype):
    """Right on the CPU; on a GPU the loss is not the mean-squared error: only the GPU values show it."""
    loss_fn = nn.functional.l1_loss if x.is_cuda else nn.functional.mse_loss
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=dtype):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss


@pytest.mark.parametrize(
    ("key", "answer", "hint"),
    [
        ("amp-step", step_l1_loss_on_a_gpu, "(cuda:1 with float16) after two steps"),
        ("choose-amp", lambda device_type, capability: (torch.bfloat16, False), "V100"),
        ("choose-amp", lambda device_type, capability: (torch.float16, True), "A100"),
        (
            "choose-amp",
            lambda t, c: (torch.float16, True) if t == "cuda" and c < (7, 0) else (torch.bfloat16, False),
            "V100",
        ),
        ("amp-step", step_with_l1_loss, "after two steps"),
    ],
)
def test_the_hidden_judges_reject_what_the_public_one_cannot_tell(key, answer, hint):
    """The public judge holds no answer table and no reference step: these pass it, the grader's fail."""
    ex, seen = _observed(key, answer)
    ex.judge(seen)  # passes the public judge
    with pytest.raises(Fail) as caught:
        _hidden()[key](seen)
    assert hint in caught.value.en and any("\u4e00" <= ch <= "\u9fff" for ch in caught.value.zh)
    assert " of 6" not in caught.value.en and " of 9" not in caught.value.en  # one machine, never a count


@pytest.mark.parametrize(("key", "answer"), [("amp-step", step_ok), ("choose-amp", choose_ok)])
def test_right_answers_pass_public_and_hidden_judges_after_a_trip_through_bytes(key, answer):
    ex, seen = _observed(key, answer)
    ex.judge(seen)
    _hidden()[key](seen)


def test_no_reference_answer_ships_in_the_public_module():
    import devicekit_labs.lab07 as public

    assert not hasattr(public, "reference_step") and not hasattr(public, "_right_choice")
