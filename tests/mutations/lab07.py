"""Mutation cases for lab 07 (mixed precision). WRONG: (name, answer, hint substring in English), the taught
bug first; RIGHT: (name, answer), different right answers. The step is checked on the CPU and on the second of
two GPUs, real or simulated: a region for the wrong device type, or a batch sent to "cuda", fails there."""

from __future__ import annotations

import torch
from torch import nn

from mutations import untouched

LAB = "07-amp"


# --- amp-step ----------------------------------------------------------------------------------------------


def step_autocast_cpu_hardcoded(model, optimizer, scaler, x, y, dtype):
    """The lesson's headline pitfall: a region for one fixed device type (right on the CPU only)."""
    optimizer.zero_grad()
    with torch.autocast("cpu", dtype=dtype):
        loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss


def step_autocast_cuda_hardcoded(model, optimizer, scaler, x, y, dtype):
    optimizer.zero_grad()
    with torch.autocast("cuda", dtype=dtype):
        loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss


def step_without_autocast(model, optimizer, scaler, x, y, dtype):
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss


def step_default_dtype(model, optimizer, scaler, x, y, dtype):
    """autocast's default dtype instead of the one given: bf16 on the CPU, also when fp16 was asked for."""
    optimizer.zero_grad()
    with torch.autocast(x.device.type):
        loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss


def step_converting_the_model(model, optimizer, scaler, x, y, dtype):
    model.to(dtype)
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=dtype):
        loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss


def step_without_zero_grad(model, optimizer, scaler, x, y, dtype):
    with torch.autocast(x.device.type, dtype=dtype):
        loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss


def step_without_update(model, optimizer, scaler, x, y, dtype):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=dtype):
        loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    return loss


def step_without_scaler(model, optimizer, scaler, x, y, dtype):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=dtype):
        loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


def step_never_stepped(model, optimizer, scaler, x, y, dtype):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=dtype):
        loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    return loss


def step_returning_a_float(model, optimizer, scaler, x, y, dtype):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=dtype):
        loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()


def step_batch_sent_to_cuda(model, optimizer, scaler, x, y, dtype):
    """Sends the batch to "cuda" whenever CUDA is there: cuda:0, wherever the model is (the CPU, cuda:1)."""
    if torch.cuda.is_available():
        x, y = x.to("cuda"), y.to("cuda")
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=dtype):
        loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss


def step_ok(model, optimizer, scaler, x, y, dtype):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=dtype):
        loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss


def step_amp_spelling_zero_at_the_end(model, optimizer, scaler, x, y, dtype):
    with torch.amp.autocast(device_type=x.device.type, dtype=dtype, enabled=True):
        out = model(x)
    loss = nn.functional.mse_loss(out.float(), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    return loss


_history: list[float] = []


def step_logging_and_clipping(model, optimizer, scaler, x, y, dtype):
    """Right on a GPU: `.item()` reads the loss's value, and clipping sees unscaled gradients."""
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(x.device.type, dtype=dtype):
        loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1e3)
    scaler.step(optimizer)
    scaler.update()
    _history.append(loss.item())
    return loss


def step_region_from_the_parameters(model, optimizer, scaler, x, y, dtype):
    """Right too: the region's device type taken from the model's parameters, which are where x is."""
    device_type = next(model.parameters()).device.type
    optimizer.zero_grad()
    with torch.autocast(device_type=device_type, dtype=dtype):
        loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss


def step_region_chosen_by_is_cuda(model, optimizer, scaler, x, y, dtype):
    """Right on a GPU: "cuda" for any CUDA tensor (autocast's device type has no index)."""
    optimizer.zero_grad()
    with torch.autocast("cuda" if x.is_cuda else "cpu", dtype=dtype):
        loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss


# --- choose-amp --------------------------------------------------------------------------------------------


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


def choose_by_is_bf16_supported(device_type, capability):
    """The taught bug: asks the GPU this code runs on, which with emulation says yes on old GPUs too."""
    if device_type == "cuda" and not torch.cuda.is_bf16_supported():
        return torch.float16, True
    return torch.bfloat16, False


def choose_fp16_without_scaler(device_type, capability):
    if device_type == "cuda" and capability < (8, 0):
        return torch.float16, False
    return torch.bfloat16, False


def choose_without_device_guard(device_type, capability):
    if capability < (8, 0):
        return torch.float16, True
    return torch.bfloat16, False


def choose_bf16_with_scaler(device_type, capability):
    if device_type == "cuda" and capability < (8, 0):
        return torch.float16, True
    return torch.bfloat16, True


def choose_by_minor_version(device_type, capability):
    if device_type == "cuda" and capability[1] != 0:
        return torch.float16, True
    return torch.bfloat16, False


def choose_names(device_type, capability):
    if device_type == "cuda" and capability < (8, 0):
        return "float16", True
    return "bfloat16", False


def choose_bf16_everywhere(device_type, capability):
    return torch.bfloat16, False


def choose_fp16_everywhere(device_type, capability):
    return torch.float16, True


def choose_fp16_below_volta(device_type, capability):
    """fp16 only before compute capability 7.0: the V100 (7.0) gets bf16, which it cannot run natively."""
    if device_type == "cuda" and capability < (7, 0):
        return torch.float16, True
    return torch.bfloat16, False


def choose_ok(device_type, capability):
    if device_type == "cuda" and capability < (8, 0):
        return torch.float16, True
    return torch.bfloat16, False


def choose_by_major(device_type, capability):
    if device_type == "cpu":
        return torch.bfloat16, False
    major, _minor = capability
    dtype = torch.bfloat16 if major >= 8 else torch.float16
    return dtype, dtype is torch.float16


WRONG = {
    "amp-step": [
        ("autocast('cpu') hard-coded", step_autocast_cpu_hardcoded, "device type"),
        ("autocast('cuda') hard-coded", step_autocast_cuda_hardcoded, "computed in float32"),
        ("no autocast at all", step_without_autocast, "computed in float32"),
        ("autocast's default dtype", step_default_dtype, "the dtype you were given"),
        ("model converted to the low dtype", step_converting_the_model, "do not convert the model"),
        ("gradients never cleared", step_without_zero_grad, "left over from the first one"),
        ("scaler never updated", step_without_update, "since the last update()"),
        ("returns loss.item()", step_returning_a_float, "return the loss"),
        ('the batch sent to "cuda"', step_batch_sent_to_cuda, "Expected all tensors to be on the same"),
        ("no GradScaler", step_without_scaler, "the GradScaler did not complete each step"),
        ("optimizer never stepped", step_never_stepped, "the weights did not change"),
        ("untouched stub", untouched, "not done yet"),
    ],
    "choose-amp": [
        ("asks torch.cuda.is_bf16_supported()", choose_by_is_bf16_supported, "is_bf16_supported"),
        ("fp16 without a scaler", choose_fp16_without_scaler, "exponent range"),
        ("compares None with a tuple", choose_without_device_guard, "TypeError"),
        ("bf16 with a scaler", choose_bf16_with_scaler, "exponent range"),
        ("decides by the minor version", choose_by_minor_version, "newer"),
        ("dtype names instead of dtypes", choose_names, "return a tuple (dtype, use_scaler)"),
        ("untouched stub", untouched, "not done yet"),
    ],
}

RIGHT = {
    "amp-step": [
        ("the lesson's step", step_ok),
        ("torch.amp spelling, loss outside, zero_grad at the end", step_amp_spelling_zero_at_the_end),
        ("logs loss.item(), clips unscaled gradients", step_logging_and_clipping),
        ("region from the parameters' device type", step_region_from_the_parameters),
        ('"cuda" if x.is_cuda else "cpu"', step_region_chosen_by_is_cuda),
    ],
    "choose-amp": [
        ("capability compared as a tuple", choose_ok),
        ("major version, CPU first", choose_by_major),
    ],
}

#: Wrong answers that the public judge cannot tell from right ones (it holds no answer table and no reference
#: step): only the grader's hidden judge (grading/hidden/lab07.py) rejects them, with this hint.
HIDDEN_WRONG = {
    "amp-step": [
        ("L1 loss on a GPU only", step_l1_loss_on_a_gpu, "(cuda:1 with float16) after two steps"),
        ("L1 loss", step_with_l1_loss, "after two steps"),
    ],
    "choose-amp": [
        ("bf16 everywhere", choose_bf16_everywhere, "V100"),
        ("fp16 everywhere", choose_fp16_everywhere, "A100"),
        ("fp16 only below capability 7.0", choose_fp16_below_volta, "V100"),
    ],
}
