"""Reading a device: one rule for every entry point, one error, and which devices this machine has.

Every devicekit function that takes a device reads it with :func:`as_device` (the form is checked, the
hardware is not: that is cheap enough for every ``to_device`` call) or :func:`resolve_device` (the form and
the hardware: for ``DeviceManager``, once per program).  Both raise :class:`UnknownDeviceError`.

The rules:

* a ``torch.device`` or a string PyTorch knows (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``, ``"xpu:0"``,
  ``"meta"``); surrounding spaces are ignored;
* an ``int`` N means index N of this machine's accelerator (``cuda:N`` on NVIDIA and ROCm, ``mps:0``,
  ``xpu:N``), as ``torch.device(N)`` does since PyTorch 2.5; never the CPU.  ``bool`` is refused (``True``
  would silently mean index 1);
* an index must be 0..127 (PyTorch stores it in 8 bits: ``torch.device("cuda", 128)`` wraps to
  ``cuda:-128``);
* anything else (``None`` where a device is required, ``1.5``, ``"gpu"``, ``-1``, ``2**63``) is an
  ``UnknownDeviceError`` whose message lists the valid forms.
"""

from __future__ import annotations

import functools

import torch

__all__ = [
    "DeviceLike",
    "UnknownDeviceError",
    "VALID_FORMS",
    "as_device",
    "available_devices",
    "best_device",
    "mismatch_device",
    "resolve_device",
]

DeviceLike = str | int | torch.device

#: What :func:`as_device` accepts, in words (every ``UnknownDeviceError`` about a form ends with it).
VALID_FORMS = (
    "a torch.device, a string such as 'cpu', 'cuda', 'cuda:1', 'mps', 'xpu:0' or 'meta', "
    "or an int N for index N of this machine's accelerator"
)
_MAX_INDEX = 127  # c10::DeviceIndex is an int8_t


class UnknownDeviceError(ValueError, TypeError):
    """A device that is not a valid device, or (from `resolve_device`) that this machine does not have.

    A ``ValueError`` (PyTorch raises ``RuntimeError``/``ValueError`` for bad device strings) and, for a
    value of the wrong type such as ``None`` or ``1.5``, also a ``TypeError``: code catching either keeps
    working.
    """


def _cuda_count() -> int:
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def _xpu_count() -> int:
    xpu = getattr(torch, "xpu", None)
    return xpu.device_count() if xpu is not None and xpu.is_available() else 0


@functools.lru_cache(maxsize=1)
def _accelerator_type() -> str | None:
    """The type of this machine's accelerator (``"cuda"``, ``"mps"``, ``"xpu"``...) or ``None``."""
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and accelerator.is_available():
        kind = accelerator.current_accelerator()
        if kind is not None:
            return kind.type
    if torch.cuda.is_available():
        return "cuda"
    if _mps_available():
        return "mps"
    if _xpu_count():
        return "xpu"
    return None


def available_devices() -> list[str]:
    """Every device this runner can put tensors on, best first, plus ``meta`` (shapes only, no data)."""
    found = [f"cuda:{i}" for i in range(_cuda_count())]
    if _mps_available():
        found.append("mps:0")
    found += [f"xpu:{i}" for i in range(_xpu_count())]
    return [*found, "cpu", "meta"]


def best_device() -> torch.device:
    """The device a program should use when nobody said otherwise, with the index tensors will report.

    ``torch.accelerator`` (torch >= 2.6) knows every accelerator backend; older releases are asked
    backend by backend in the order cuda, mps, xpu. Falls back to the CPU.
    """
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and accelerator.is_available():
        kind = accelerator.current_accelerator()
        if kind is not None:
            return torch.device(kind.type, accelerator.current_device_index())
    if torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    if _mps_available():
        return torch.device("mps", 0)
    if _xpu_count():
        return torch.device("xpu", torch.xpu.current_device())
    return torch.device("cpu")


_DEVICE_CACHE: dict[str, torch.device] = {}


def _form_error(device: object, origin: str, reason: str) -> UnknownDeviceError:
    shown = repr(device) if isinstance(device, (str, int)) else f"of type {type(device).__name__}"
    return UnknownDeviceError(f"{origin}{shown} {reason}. A device is {VALID_FORMS}.")


def as_device(device: DeviceLike, *, origin: str = "device ") -> torch.device:
    """Read ``device`` into a ``torch.device``: the one reading every devicekit function uses.

    * a ``torch.device`` or a string PyTorch knows (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``,
      ``"xpu:0"``, ``"meta"``); surrounding spaces are ignored;
    * an ``int`` N is index N of this machine's accelerator (``cuda:N``, ``mps:0``, ``xpu:N``), never
      the CPU; ``bool`` is refused (``True`` would silently mean index 1);
    * an index is 0 to 127 (PyTorch keeps it in 8 bits: ``torch.device("cuda", 128)`` is ``cuda:-128``).

    The hardware is not checked, so this is cheap enough for every ``to_device`` call (strings are
    parsed once and cached); :func:`resolve_device` also checks that the device exists here and fills
    in the index tensors will report.  ``origin`` starts the error message (e.g.
    ``"check_devices(device=...): "``).

    Raises:
        UnknownDeviceError: anything else (``None``, ``1.5``, ``"gpu"``, ``-1``, ``2**63``); the message
            lists the valid forms.
    """
    tp = type(device)
    if tp is torch.device:
        return device  # type: ignore[return-value]
    if tp is str:
        dev = _DEVICE_CACHE.get(device)  # type: ignore[arg-type]
        if dev is None:
            dev = _parse(device, origin)  # type: ignore[arg-type]
            if len(_DEVICE_CACHE) < 64:
                _DEVICE_CACHE[device] = dev  # type: ignore[index]
        return dev
    if tp is bool or not isinstance(device, (str, int, torch.device)):
        raise _form_error(device, origin, "is not a device")
    if isinstance(device, torch.device):
        return device
    if isinstance(device, str):
        return _parse(str(device), origin)
    index = int(device)
    if not 0 <= index <= _MAX_INDEX:
        raise _form_error(device, origin, f"is not an accelerator index (0 to {_MAX_INDEX})")
    kind = _accelerator_type()
    if kind is None:
        raise UnknownDeviceError(
            f"{origin}{index!r} means accelerator index {index}, which is not available on this machine: "
            f"it has no accelerator. Available here: {', '.join(available_devices())}."
        )
    return torch.device(kind, index)


def _parse(text: str, origin: str) -> torch.device:
    stripped = text.strip()
    if not stripped:
        raise _form_error(text, origin, "is empty")
    try:
        dev = torch.device(stripped)
    except (RuntimeError, ValueError) as exc:
        raise _form_error(text, origin, "is not a device name PyTorch knows") from exc
    if dev.index is not None and not 0 <= dev.index <= _MAX_INDEX:
        raise _form_error(text, origin, f"has an index outside 0 to {_MAX_INDEX}")
    return dev


def _unavailable(device: torch.device, origin: str) -> UnknownDeviceError:
    have = ", ".join(available_devices())
    return UnknownDeviceError(
        f"{origin}{str(device)!r} is not available on this machine. Available here: {have}. "
        f"Pick one of those, or leave the device unset to use the best one."
    )


def resolve_device(device: DeviceLike, *, origin: str = "device ") -> torch.device:
    """Turn ``device`` into the `torch.device` tensors will report, on a device this machine has.

    Reads ``device`` with :func:`as_device`, then checks the hardware and fills in the index: ``"cuda"``
    becomes ``cuda:N`` for the current CUDA device, ``"mps"`` becomes ``mps:0``, ``"xpu"`` ``xpu:N``, so
    that ``tensor.device == resolve_device(...)`` holds for tensors created there.  (``torch.device("cuda")``
    and ``torch.device("cuda:0")`` name the same GPU but do not compare equal: one has no index.)

    Raises:
        UnknownDeviceError: an invalid form, or a device this machine does not have; the message lists
            the devices it does have.
    """
    try:
        dev = as_device(device, origin=origin)
    except UnknownDeviceError as err:
        if "Available here" in str(err):
            raise
        raise UnknownDeviceError(
            f"{err} Available here: {', '.join(available_devices())}."
        ) from err.__cause__
    kind, index = dev.type, dev.index
    if kind in ("cpu", "meta"):
        return torch.device(kind)
    if kind == "cuda":
        count = _cuda_count()
        if count == 0 or (index is not None and index >= count):
            raise _unavailable(dev, origin)
        return torch.device("cuda", torch.cuda.current_device() if index is None else index)
    if kind == "mps":
        if not _mps_available() or index not in (None, 0):
            raise _unavailable(dev, origin)
        return torch.device("mps", 0)
    if kind == "xpu":
        count = _xpu_count()
        if count == 0 or (index is not None and index >= count):
            raise _unavailable(dev, origin)
        return torch.device("xpu", torch.xpu.current_device() if index is None else index)
    raise _unavailable(dev, origin)


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
