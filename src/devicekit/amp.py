"""Mixed precision helpers that pick the right ``device_type`` and dtype for a device.

Two facts that trip people up, and the reason these helpers exist:

* **autocast changes dtypes, never devices.** Inside ``torch.autocast`` a matmul may run in
  float16/bfloat16, but every tensor stays on the device it was on. A device mismatch is still a
  device mismatch under autocast.
* **An autocast for the wrong device_type silently does nothing.** ``torch.autocast("cuda")``
  around a model that runs on the CPU (or ``"cpu"`` around a CUDA model) raises no error; the
  region just runs in full precision. Deriving ``device_type`` from the device the model is on
  avoids that.

Only ``torch.amp`` APIs are used (``torch.cuda.amp.*`` is deprecated).
"""

from __future__ import annotations

import contextlib

import torch

from .device import DeviceLike
from .transfer import _as_device

__all__ = ["autocast", "autocast_dtype", "grad_scaler"]


def _autocast_available(device_type: str) -> bool:
    check = getattr(torch.amp, "is_autocast_available", None)  # torch >= 2.4
    if check is not None:
        return bool(check(device_type))
    return device_type in {"cpu", "cuda", "xpu", "mps", "hpu", "xla"}


def autocast_dtype(device: DeviceLike) -> torch.dtype:
    """The low-precision dtype :func:`autocast` uses for ``device`` when none is given.

    * CPU: ``bfloat16`` (CPU autocast is built around bf16; fp16 on CPU is slow or unsupported).
    * CUDA: ``bfloat16`` if ``torch.cuda.is_bf16_supported()`` (Ampere and newer), else ``float16``
      (which then needs a :func:`grad_scaler`).
    * XPU: ``bfloat16`` if ``torch.xpu.is_bf16_supported()``, else ``float16``.
    * MPS: ``float16``.
    * other device types: PyTorch's own default, ``torch.get_autocast_dtype(device_type)``.
    """
    dev = _as_device(device)
    kind = dev.type
    if kind == "cpu":
        return torch.bfloat16
    if kind == "cuda":
        bf16 = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
        return torch.bfloat16 if bf16 else torch.float16
    if kind == "xpu":
        xpu = getattr(torch, "xpu", None)
        supported = getattr(xpu, "is_bf16_supported", None)
        ok = xpu is not None and xpu.is_available() and supported is not None and supported()
        return torch.bfloat16 if ok else torch.float16
    if kind == "mps":
        return torch.float16
    get_default = getattr(torch, "get_autocast_dtype", None)  # torch >= 2.4
    return get_default(kind) if get_default is not None else torch.float16


def autocast(
    device: DeviceLike,
    dtype: torch.dtype | None = None,
    enabled: bool = True,
    cache_enabled: bool | None = None,
) -> torch.autocast | contextlib.nullcontext[None]:
    """``torch.autocast`` with ``device_type`` taken from ``device`` and a dtype it supports.

    ``device`` is where the model and its inputs live (``"cuda:1"`` gives ``device_type="cuda"``;
    the index does not matter to autocast). ``dtype=None`` picks :func:`autocast_dtype`.

    Remember: autocast changes dtypes, never devices; and an autocast whose ``device_type`` does
    not match where the computation runs silently does nothing.

    Meta device: autocast does not exist for it, so ``autocast("meta")`` raises ``ValueError``
    rather than returning something that looks active and does nothing. With ``enabled=False`` a
    ``contextlib.nullcontext()`` is returned instead, so ``autocast(dev, enabled=use_amp)`` works
    for every device.

    Raises:
        ValueError: the device type has no autocast (e.g. ``meta``) and ``enabled`` is True.
    """
    dev = _as_device(device)
    if not _autocast_available(dev.type):
        if not enabled:
            return contextlib.nullcontext()
        raise ValueError(
            f"autocast is not available for device type {dev.type!r} (it exists for cpu, cuda, xpu, "
            f"mps...). Pass enabled=False to get a do-nothing context for this device."
        )
    if dtype is None:
        dtype = autocast_dtype(dev)
    return torch.autocast(device_type=dev.type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


def grad_scaler(
    device: DeviceLike, dtype: torch.dtype | None = None, enabled: bool = True
) -> torch.amp.GradScaler:
    """A ``torch.amp.GradScaler`` for ``device``, enabled only when it is needed.

    Loss scaling protects float16 gradients from underflowing to zero. bfloat16 has float32's
    exponent range and needs no scaling, so the scaler is enabled only when the autocast dtype
    (``dtype``, or :func:`autocast_dtype` of ``device`` when ``None``) is ``float16``. Pass the
    same ``dtype`` you gave :func:`autocast`. A disabled scaler is a transparent pass-through:
    ``scaler.scale(loss)`` returns ``loss`` and ``scaler.step(opt)`` just calls ``opt.step()``,
    so the same training loop works either way.

    For device types without autocast (e.g. ``meta``) a disabled scaler is returned.
    """
    dev = _as_device(device)
    if not _autocast_available(dev.type):
        return torch.amp.GradScaler("cpu", enabled=False)
    if dtype is None:
        dtype = autocast_dtype(dev)
    return torch.amp.GradScaler(dev.type, enabled=enabled and dtype == torch.float16)
