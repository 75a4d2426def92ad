"""Which devices exist here, which one is best, and a clear error for a device that does not exist.

`devicekit.manager.DeviceManager` builds on these functions; they are public for code that only needs
one answer (``best_device()``) without a manager.
"""

from __future__ import annotations

import torch

__all__ = [
    "DeviceLike",
    "UnknownDeviceError",
    "available_devices",
    "best_device",
    "mismatch_device",
    "resolve_device",
]

DeviceLike = str | int | torch.device


class UnknownDeviceError(ValueError):
    """A device name that PyTorch does not know, or a device this machine does not have."""


def _cuda_count() -> int:
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def _xpu_count() -> int:
    xpu = getattr(torch, "xpu", None)
    return xpu.device_count() if xpu is not None and xpu.is_available() else 0


def available_devices() -> list[str]:
    """Every device this runner can put tensors on, best first, plus ``meta`` (shapes only, no data)."""
    found = [f"cuda:{i}" for i in range(_cuda_count())]
    if _mps_available():
        found.append("mps")
    found += [f"xpu:{i}" for i in range(_xpu_count())]
    return [*found, "cpu", "meta"]


def best_device() -> torch.device:
    """The device a program should use when nobody said otherwise.

    ``torch.accelerator`` (torch >= 2.6) knows every accelerator backend; older releases are asked
    backend by backend in the order cuda, mps, xpu. Falls back to the CPU.
    """
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and accelerator.is_available():
        kind = accelerator.current_accelerator()
        if kind is not None:
            if kind.type == "mps":
                return torch.device("mps")
            return torch.device(kind.type, accelerator.current_device_index())
    if torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    if _mps_available():
        return torch.device("mps")
    if _xpu_count():
        return torch.device("xpu", torch.xpu.current_device())
    return torch.device("cpu")


def _unavailable(device: torch.device, origin: str) -> UnknownDeviceError:
    have = ", ".join(available_devices())
    return UnknownDeviceError(
        f"{origin}{str(device)!r} is not available on this machine. Available here: {have}. "
        f"Pick one of those, or leave the device unset to use the best one."
    )


def resolve_device(device: DeviceLike, *, origin: str = "device ") -> torch.device:
    """Turn ``device`` into a `torch.device` that exists on this machine, or raise `UnknownDeviceError`.

    Accepts what ``torch.device`` accepts (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``, ``"meta"``,
    a `torch.device`) and a bare integer for a CUDA index. ``"cuda"`` without an index means the *current*
    CUDA device, as in PyTorch; it is returned with that index filled in so that equality checks work.
    """
    if isinstance(device, bool) or not isinstance(device, str | int | torch.device):
        raise UnknownDeviceError(
            f"{origin}must be a string such as 'cuda:0', an int or a torch.device, "
            f"not {type(device).__name__}. Available here: {', '.join(available_devices())}."
        )
    if isinstance(device, int):
        device = torch.device("cuda", device) if device >= 0 else device
    if isinstance(device, str):
        text = device.strip()
        try:
            device = torch.device(text)
        except RuntimeError as exc:
            reason = "is empty" if not text else "is not a device name PyTorch knows"
            raise UnknownDeviceError(
                f"{origin}{text!r} {reason}. Available here: {', '.join(available_devices())} "
                f"(forms: 'cpu', 'cuda', 'cuda:1', 'mps', 'xpu:0', 'meta')."
            ) from exc
    if isinstance(device, int):
        raise UnknownDeviceError(f"{origin}index {device} is negative; CUDA indices start at 0.")

    kind, index = device.type, device.index
    if kind in ("cpu", "meta"):
        return torch.device(kind)
    if kind == "cuda":
        count = _cuda_count()
        if count == 0 or (index is not None and index >= count):
            raise _unavailable(device, origin)
        return torch.device("cuda", torch.cuda.current_device() if index is None else index)
    if kind == "mps":
        if not _mps_available() or (index not in (None, 0)):
            raise _unavailable(device, origin)
        return torch.device("mps")
    if kind == "xpu":
        count = _xpu_count()
        if count == 0 or (index is not None and index >= count):
            raise _unavailable(device, origin)
        return torch.device("xpu", torch.xpu.current_device() if index is None else index)
    raise _unavailable(device, origin)


def mismatch_device() -> torch.device:
    """The device a lab puts things on to provoke a *real* device-mismatch error on this runner.

    With an accelerator that is the accelerator itself, and PyTorch's own CUDA/MPS checks fire. On a
    CPU-only runner it is ``meta``: tensors with a shape and a dtype but no data. PyTorch runs the same
    kind of device check for meta and CPU operands and raises its own ``RuntimeError`` (with a different
    wording from CUDA's), so a lab can still show the failure honestly. Meta tensors hold no values:
    anything computed on them has a shape and a device, never numbers.
    """
    best = best_device()
    return best if best.type != "cpu" else torch.device("meta")
