"""Mutation cases for lab 01 (devices and ``.device``); format in ``tests/mutations/__init__.py``."""

from __future__ import annotations

import torch

from mutations import untouched

LAB = "01-devices"


# --- exercise 1: move-batch ---------------------------------------------------------------------------------


def move_statement(x, device):
    x.to(device)  # the taught bug: the moved tensor is thrown away
    return x


def move_half(x, device):
    return x.to(device, dtype=torch.float16)


def move_float(x, device):
    return x.to(device).float()


def move_new_tensor(x, device):
    return torch.zeros_like(x, device=device)


def move_returns_nothing(x, device):
    x = x.to(device)


def move_list(x, device):
    return x.to(device).tolist() if device.type == "cpu" else [x.to(device)]


def move_to(x, device):
    return x.to(device)


def move_kwargs_copy(x, device):
    return x.to(device=device, copy=True, non_blocking=True)


def move_as_tensor(x, device):
    return torch.as_tensor(x, device=device)


def move_cuda(x, device):
    return x.cuda() if device.type == "cuda" else x.to(device)  # drops the index: always cuda:0


def move_cuda_index(x, device):
    return x.cuda(device.index) if device.type == "cuda" else x.cpu()


# --- exercise 2: causal-mask --------------------------------------------------------------------------------


def mask_on_cpu(x):
    steps = x.shape[-2]
    return torch.ones(steps, steps, dtype=torch.bool).tril()  # the taught bug: no device


def mask_fixed_size(x):
    return torch.ones(5, 5, dtype=torch.bool, device=x.device).tril()


def mask_on_cuda(x):
    steps = x.shape[-2]
    device = "cuda" if x.is_cuda else "cpu"  # "cuda" means the current GPU, cuda:0, not x's
    return torch.ones(steps, steps, dtype=torch.bool, device=device).tril()


def mask_upper(x):
    steps = x.shape[-2]
    return torch.ones(steps, steps, dtype=torch.bool, device=x.device).triu()


def mask_float(x):
    steps = x.shape[-2]
    return torch.ones(steps, steps, device=x.device).tril()


def mask_wrong_dim(x):
    steps = x.shape[-1]
    return torch.ones(steps, steps, dtype=torch.bool, device=x.device).tril()


def mask_strict_lower(x):
    steps = x.shape[-2]
    return torch.ones(steps, steps, dtype=torch.bool, device=x.device).tril(-1)


def mask_raises(x):
    return 1 / 0  # any error of the learner's own: the feedback names it


def mask_ones(x):
    steps = x.shape[-2]
    return torch.ones(steps, steps, dtype=torch.bool, device=x.device).tril()


def mask_compare(x):
    positions = torch.arange(x.size(1), device=x.device)
    return positions[:, None] >= positions[None, :]


def mask_new_ones(x):
    steps = x.shape[-2]
    return torch.tril(x.new_ones(steps, steps)).bool()


# --- exercise 3: predict-raises (True = raises) -------------------------------------------------------------

RIGHT_PREDICTIONS = {"a": False, "b": True, "c": False, "d": True}


def flip(**changes):
    return lambda: {**RIGHT_PREDICTIONS, **changes}


WRONG = {
    "move-batch": [
        ("x.to(device) as a statement", move_statement, "its result was thrown away"),
        ("x.to(device, dtype=torch.float16)", move_half, "must not change its dtype"),
        ("x.to(device).float()", move_float, "must not change its dtype"),
        ("a new tensor of zeros", move_new_tensor, "holds other values"),
        ("returns nothing", move_returns_nothing, "returns None"),
        ("returns a list", move_list, "expected a tensor back"),
        ("x.cuda() for any GPU", move_cuda, "cuda:1"),
        ("untouched stub", untouched, "not done yet"),
    ],
    "causal-mask": [
        ("factory without device", mask_on_cpu, "take the device from the input"),
        ("hard-coded size 5", mask_fixed_size, "(4, 4) bool mask"),
        ("upper triangle", mask_upper, "wrong values"),
        ("float mask", mask_float, "bool mask"),
        ("T taken from the channels", mask_wrong_dim, "second-to-last"),
        ("diagonal excluded", mask_strict_lower, "diagonal included"),
        ('device="cuda" for an input on a GPU', mask_on_cuda, "cuda:1"),
        ("raises an error of its own", mask_raises, "ZeroDivisionError"),
    ],
    "predict-raises": [
        # the taught bug first: a 0-dim CPU tensor believed to raise (it is exempt in element-wise ops)
        ("0-dim CPU tensor predicted to raise", flip(a=True), "0-dim CPU tensor"),
        ("1-element CPU tensor predicted to work", flip(b=False), "shape (1,)"),
        ("Python number predicted to raise", flip(c=True), "Python number has no device"),
        ("torch.cat predicted to work", flip(d=False), "torch.cat"),
        ("all wrong", lambda: {k: not v for k, v in RIGHT_PREDICTIONS.items()}, "not every prediction"),
        ("strings instead of booleans", lambda: dict.fromkeys("abcd", "raises"), "must be True or False"),
        ("a key missing", lambda: {"a": False, "b": True, "c": False}, "exactly the keys"),
        ("untouched stub", untouched, "not done yet"),
    ],
}

RIGHT = {
    "move-batch": [
        ("x.to(device)", move_to),
        ("to(device=..., copy=True, non_blocking=True)", move_kwargs_copy),
        ("torch.as_tensor(x, device=device)", move_as_tensor),
        ("x.cuda(device.index) or x.cpu()", move_cuda_index),
    ],
    "causal-mask": [
        ("torch.ones(..., device=x.device).tril()", mask_ones),
        ("arange comparison", mask_compare),
        ("x.new_ones(...).tril().bool()", mask_new_ones),
    ],
    "predict-raises": [
        ("a function", lambda: dict(RIGHT_PREDICTIONS)),
        ("the dict itself", dict(RIGHT_PREDICTIONS)),
    ],
}
