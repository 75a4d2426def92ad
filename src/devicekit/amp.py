"""Mixed precision helpers that pick the right ``device_type`` and dtype for a device.

Two facts that trip people up, and the reason these helpers exist:

* **autocast changes dtypes, never devices.** Inside ``torch.autocast`` a matmul may run in
  float16/bfloat16, but every tensor stays on the device it was on. A device mismatch is still a
  device mismatch under autocast.
* **An autocast for the wrong device_type does nothing to your model.** ``torch.autocast("cuda")``
  around a model that runs on the CPU (or ``"cpu"`` around a CUDA model) raises no error; the
  region just runs in full precision. When that backend is absent (``"cuda"`` on a CPU-only
  build) PyTorch at least warns ("CUDA is not available ... Disabling autocast"); when it is
  present but unused, nothing is said. Deriving ``device_type`` from the device the model is on
  avoids both.

Only ``torch.amp`` APIs are used (``torch.cuda.amp.*`` is deprecated).
"""

from __future__ import annotations

import contextlib

import torch

from .device import DeviceLike, as_device

__all__ = ["autocast", "autocast_dtype", "grad_scaler"]


def _autocast_available(device_type: str) -> bool:
    check = getattr(torch.amp, "is_autocast_available", None)  # torch >= 2.4
    if check is not None:
        return bool(check(device_type))
    return device_type in {"cpu", "cuda", "xpu", "mps", "hpu", "xla"}


def _native_cuda_bf16() -> bool:
    """bf16 in hardware on the current CUDA GPU; ``is_bf16_supported`` alone also counts emulation."""
    try:
        return bool(torch.cuda.is_bf16_supported(including_emulation=False))
    except TypeError:
        # a torch without the keyword (the first release that has it is not pinned). Its plain
        # is_bf16_supported() may already count emulation (PyTorch PR #115924 added the bf16-tensor probe
        # before the keyword existed), so ask the hardware directly, as including_emulation=False does:
        # ROCm counts as bf16-capable, CUDA needs compute capability 8.0 (Ampere) or newer.
        if torch.version.hip:
            return True
        return torch.cuda.get_device_capability()[0] >= 8


def autocast_dtype(device: DeviceLike) -> torch.dtype:
    """The low-precision dtype :func:`autocast` uses for ``device`` when none is given.

    * CPU: ``bfloat16`` (CPU autocast's default; float16 autocast on the CPU also works in torch 2.13, but
      most CPUs have no fast float16 kernels).
    * CUDA: ``bfloat16`` if the GPU supports it natively
      (``torch.cuda.is_bf16_supported(including_emulation=False)``: in torch 2.13, compute capability
      8.0+, Ampere and newer, or any ROCm build), else ``float16`` (which then needs a
      :func:`grad_scaler`). The plain ``is_bf16_supported()`` (``including_emulation=True``) also says
      True when a bf16 tensor can merely be created on an older GPU (a T4), where bf16 is emulated and
      float16 with a scaler is the better choice.
    * XPU: ``bfloat16`` if ``torch.xpu.is_bf16_supported()``, else ``float16``.
    * MPS: ``float16``.
    * other device types: PyTorch's own default, ``torch.get_autocast_dtype(device_type)``.
    """
    dev = as_device(device)
    kind = dev.type
    if kind == "cpu":
        return torch.bfloat16
    if kind == "cuda":
        bf16 = torch.cuda.is_available() and _native_cuda_bf16()
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
    dev = as_device(device)
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
    dev = as_device(device)
    if not _autocast_available(dev.type):
        return torch.amp.GradScaler("cpu", enabled=False)
    if dtype is None:
        dtype = autocast_dtype(dev)
    return torch.amp.GradScaler(dev.type, enabled=enabled and dtype == torch.float16)
