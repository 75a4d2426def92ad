"""Choosing the device a program runs on, and saying clearly when that choice is impossible.

`DeviceManager` is the one place a lab (or a learner's project) decides where tensors live. The rest of
the code asks it (`dm.device`) instead of sprinkling ``"cuda" if torch.cuda.is_available() else "cpu"``
around, which is how half of all device mismatches start.
"""

from __future__ import annotations

import os

import torch

__all__ = [
    "ENV_VAR",
    "DeviceManager",
    "UnknownDeviceError",
    "available_devices",
    "best_device",
    "mismatch_device",
    "resolve_device",
]

#: Environment variable that overrides the automatic choice, e.g. ``DEVICEKIT_DEVICE=cpu``.
ENV_VAR = "DEVICEKIT_DEVICE"

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


def _gib(n_bytes: int) -> str:
    return f"{n_bytes / 2**30:.1f} GiB"


class DeviceManager:
    """Decides once where this program's tensors live, and moves things there.

    Args:
        device: ``None`` to pick automatically (the ``DEVICEKIT_DEVICE`` environment variable if set, else
            the best available accelerator, else the CPU), or an explicit device (``"cuda:1"``,
            ``torch.device("mps")``, ``0``). An unknown or unavailable device raises `UnknownDeviceError`
            naming the devices this machine does have.
    """

    def __init__(self, device: DeviceLike | None = None) -> None:
        if device is None:
            override = os.environ.get(ENV_VAR)
            if override is not None:
                self._device = resolve_device(override, origin=f"{ENV_VAR}=")
                self.source = f"the {ENV_VAR} environment variable"
            else:
                self._device = best_device()
                self.source = "automatic choice"
        else:
            self._device = resolve_device(device)
            self.source = "explicit argument"

    @property
    def device(self) -> torch.device:
        """The chosen `torch.device`, always with an index for indexed backends (``cuda:0``, not ``cuda``)."""
        return self._device

    @property
    def type(self) -> str:
        """``"cuda"``, ``"mps"``, ``"xpu"``, ``"cpu"`` or ``"meta"``: the string ``torch.autocast`` wants."""
        return self._device.type

    @property
    def is_accelerator(self) -> bool:
        """True when the chosen device is a real accelerator (not the CPU, not ``meta``)."""
        return self._device.type not in ("cpu", "meta")

    def describe(self) -> str:
        """One or two human-readable lines: the device, what hardware it is, and why it was chosen."""
        dev = self._device
        torch_line = f"torch {torch.__version__}"
        if dev.type == "cuda":
            props = torch.cuda.get_device_properties(dev)
            hw = f"{props.name}, {_gib(props.total_memory)}, CUDA {torch.version.cuda}"
        elif dev.type == "mps":
            hw = "Apple GPU (Metal Performance Shaders)"
        elif dev.type == "xpu":
            hw = torch.xpu.get_device_name(dev)
        elif dev.type == "meta":
            hw = "no data: tensors carry only shape, dtype and device"
        else:
            others = [d for d in available_devices() if d not in ("cpu", "meta")]
            hw = "no accelerator found" if not others else f"accelerators present but not chosen: {others}"
        return f"{dev} ({hw}; {torch_line}; {self.source})"

    def __repr__(self) -> str:
        return f"DeviceManager(device={str(self._device)!r})"
