"""``torch.autocast("cuda")`` on simulated GPUs: CUDA's cast policy, applied above autograd.

On a GPU, autocast is a dispatch key (``AutocastCUDA``) that only tensors whose C++ device is CUDA carry;
a simulated tensor's C++ device is ``meta``, so the simulation applies the policy itself, in its function
mode, from CUDA's own op lists (``ATen/autocast_mode.h`` of the installed torch, copied into
``tables.json``): ``lower_precision_fp`` ops cast their floating simulated tensors to the autocast dtype,
``fp32`` ops to float32, ``fp32_set_opt_dtype`` ops (``sum``, ``softmax``, ``cumsum`` ...) get
``dtype=torch.float32`` when their first tensor is a simulated float tensor and no dtype was given,
``promote`` ops cast to the widest floating type among them, and ``binary_cross_entropy`` raises CUDA's
"unsafe to autocast" error. The casts are ordinary ``.to(dtype)`` calls, so autograd records them as
CUDA's do (``ToCopyBackward0``) and gradients come back in each parameter's dtype.

What differs from CUDA (also in the package docstring):

* the policy is applied to the functions Python code calls (``F.linear``, ``torch.mm``, ``x @ w``,
  ``F.softmax``, ``F.mse_loss``, ...). CUDA also applies it to the ops that C++ composite functions call
  inside themselves; here that is done for ``F.cross_entropy`` (its ``log_softmax``/``nll_loss`` run in
  float32) and ``F.multi_head_attention_forward`` (its projections and attention in the autocast dtype),
  and for no other composite: a composite not listed runs its inner ops in the dtypes it was given;
* no cast cache: a weight used twice in one region is cast twice (CUDA caches the cast of leaf tensors
  that require grad until the region ends); values are the same;
* autocast only ever touches simulated tensors, as CUDA's touches only CUDA tensors (a CPU tensor inside
  ``torch.autocast("cuda")`` keeps float32, as recorded in ``results/cuda-messages.json``,
  ``autocast-cuda-on-cpu-math``).
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from ._ops import tables
from .tensor import SimulatedTensor

__all__ = ["call", "enabled"]

_BANNED = (
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
    "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
    "safe to autocast."
)
# Python-visible names that are not ATen names, and composites whose inner ops CUDA would cast.
_ALIASES = {"__matmul__": "matmul", "__rmatmul__": "matmul"}
# cross_entropy: its log_softmax is fp32_set_opt_dtype and its nll_loss fp32 on CUDA, so its input is
# computed in float32; casting the input first gives the same result
_COMPOSITES = {"cross_entropy": "fp32", "multi_head_attention_forward": "lower_precision_fp", "norm": "fp32"}


@functools.lru_cache(maxsize=1)
def _policies() -> dict[str, str]:
    out: dict[str, str] = {}
    for policy, names in tables()["autocast"].items():
        for name in names:
            out.setdefault(name.split(".", 1)[0], policy)
    out.update(_COMPOSITES)
    return out


def enabled() -> bool:
    """Whether ``torch.autocast("cuda")`` is on in this thread."""
    return torch.is_autocast_enabled("cuda")


def _eligible(value: Any) -> bool:
    return type(value) is SimulatedTensor and value.is_floating_point() and value.dtype != torch.float64


def _cast(value: Any, dtype: torch.dtype) -> Any:
    if _eligible(value) and value.dtype != dtype:
        return value.to(dtype)
    if isinstance(value, (list, tuple)) and any(_eligible(v) for v in value):
        return type(value)(_cast(v, dtype) for v in value)
    return value


def _flat(args: tuple, kwargs: dict) -> list[Any]:
    found: list[Any] = []
    for value in (*args, *kwargs.values()):
        if isinstance(value, (list, tuple)):
            found.extend(value)
        else:
            found.append(value)
    return found


def call(func: Any, name: str, args: tuple, kwargs: dict) -> Any:
    """Call ``func`` under CUDA's autocast policy for ``name`` (no policy: as it is)."""
    name = _ALIASES.get(name, name)
    if name == "binary_cross_entropy" and any(type(v) is SimulatedTensor for v in _flat(args, kwargs)):
        from ._rules import note

        exc = note(RuntimeError(_BANNED))
        raise exc
    policy = _policies().get(name)
    if policy is None:
        return func(*args, **kwargs)
    if policy == "lower_precision_fp":
        dtype = torch.get_autocast_dtype("cuda")
    elif policy == "fp32":
        dtype = torch.float32
    elif policy == "fp32_set_opt_dtype":
        first = next((v for v in _flat(args, kwargs) if isinstance(v, torch.Tensor)), None)
        if _eligible(first) and kwargs.get("dtype") is None:
            kwargs = dict(kwargs)
            kwargs["dtype"] = torch.float32
        return func(*args, **kwargs)
    else:  # promote: the widest floating type among the eligible tensors
        dtypes = [v.dtype for v in _flat(args, kwargs) if _eligible(v)]
        if not dtypes:
            return func(*args, **kwargs)
        dtype = torch.float32 if torch.float32 in dtypes else dtypes[0]
    args = tuple(_cast(a, dtype) for a in args)
    kwargs = {k: _cast(v, dtype) for k, v in kwargs.items()}
    return func(*args, **kwargs)
