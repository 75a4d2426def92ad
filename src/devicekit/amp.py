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
from .messages import Message, localised

__all__ = ["autocast", "autocast_dtype", "grad_scaler"]


def _autocast_available(device_type: str) -> bool:
    check = getattr(torch.amp, "is_autocast_available", None)  # torch >= 2.4
    if check is not None:
        return bool(check(device_type))
    return device_type in {"cpu", "cuda", "xpu", "mps", "hpu", "xla"}


def _native_cuda_bf16(index: int | None = None) -> bool:
    """bf16 in hardware on CUDA GPU ``index`` (the current GPU when None), emulation not counted.

    The same test as ``torch.cuda.is_bf16_supported(including_emulation=False)`` in torch 2.13 (ROCm:
    yes; CUDA: compute capability 8.0 or newer), but for the GPU asked about: ``is_bf16_supported``
    only asks the *current* GPU and has no device argument, so ``"cuda:1"`` would get GPU 0's answer.
    """
    if torch.version.hip:
        return True
    device = torch.cuda.current_device() if index is None else index
    return torch.cuda.get_device_properties(device).major >= 8


def autocast_dtype(device: DeviceLike) -> torch.dtype:
    """The low-precision dtype `autocast` uses for ``device`` when none is given.

    * CPU: ``bfloat16`` (CPU autocast's default; float16 autocast on the CPU also works in torch 2.13, but
      most CPUs have no fast float16 kernels).
    * CUDA: ``bfloat16`` if the GPU supports it natively
      (``torch.cuda.is_bf16_supported(including_emulation=False)``: in torch 2.13, compute capability
      8.0+, Ampere and newer, or any ROCm build) — asked of the GPU ``device`` names (``"cuda:1"`` asks
      GPU 1, a bare ``"cuda"`` the current GPU) — else ``float16`` (which then needs a
      `grad_scaler`). The plain ``is_bf16_supported()``
      (``including_emulation=True``) also says
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
        bf16 = torch.cuda.is_available() and _native_cuda_bf16(dev.index)
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
    the index does not matter to autocast). ``dtype=None`` picks `autocast_dtype`.

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
        raise localised(
            ValueError,
            Message(
                f"autocast is not available for device type {dev.type!r} (it exists for cpu, cuda, xpu, "
                f"mps...). Pass enabled=False to get a do-nothing context for this device.",
                f"设备类型 {dev.type!r} 没有 autocast（cpu、cuda、xpu、mps 等才有）。"
                "传 enabled=False 可以得到一个对这个设备什么也不做的上下文。",
            ),
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
    (``dtype``, or `autocast_dtype` of ``device`` when ``None``) is
    ``float16``. Pass the
    same ``dtype`` you gave `autocast`. A disabled scaler is a transparent pass-through:
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
