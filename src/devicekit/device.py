"""Reading a device: one rule for every entry point, one error, and which devices this machine has.

Every devicekit function that takes a device reads it with `as_device` (the form is
checked, the hardware is not: that is cheap enough for every ``to_device`` call) or
`resolve_device` (the form and the hardware: for ``DeviceManager``, once per
program).  Both raise `UnknownDeviceError`, in the learner's language.

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

from .messages import LocalisedError, Message, join

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

#: What `as_device` accepts, in words (every ``UnknownDeviceError`` about a form ends with it).
VALID_FORMS = Message(
    "a torch.device, a string such as 'cpu', 'cuda', 'cuda:1', 'mps', 'xpu:0' or 'meta', "
    "or an int N for index N of this machine's accelerator",
    "torch.device；'cpu'、'cuda'、'cuda:1'、'mps'、'xpu:0'、'meta' 这样的字符串；"
    "或者整数 N（本机第 N 号加速器）",
)
_MAX_INDEX = 127  # c10::DeviceIndex is an int8_t


class UnknownDeviceError(LocalisedError, ValueError, TypeError):
    """A device that is not a valid device, or (from `resolve_device`) that this machine does not have.

    Its text is in English (`.en`) and Chinese (`.zh`); `str(err)` reads in the learner's language.
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


#: Where a device came from, at the start of every error about it.
DEFAULT_ORIGIN = Message("device ", "")


def _origin(origin: Message | str) -> Message:
    return origin if isinstance(origin, Message) else Message(origin, origin)


def _form_error(device: object, origin: Message | str, reason: Message) -> UnknownDeviceError:
    where = _origin(origin)
    if isinstance(device, (str, int)):
        shown, sep = Message(repr(device), repr(device)), " "
    else:
        name = type(device).__name__
        shown, sep = Message(f"of type {name}", f"{name} 类型的值"), ""
    return UnknownDeviceError(
        Message(
            f"{where.en}{shown.en} {reason.en}. A device is {VALID_FORMS.en}.",
            f"{where.zh}{shown.zh}{sep}{reason.zh}。设备可以是：{VALID_FORMS.zh}。",
        )
    )


def _available_here() -> Message:
    have = available_devices()
    return Message(f"Available here: {', '.join(have)}.", f"本机可用的设备：{join(have).zh}。")


def as_device(device: DeviceLike, *, origin: Message | str = DEFAULT_ORIGIN) -> torch.device:
    """Read ``device`` into a ``torch.device``: the one reading every devicekit function uses.

    * a ``torch.device`` or a string PyTorch knows (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``,
      ``"xpu:0"``, ``"meta"``); surrounding spaces are ignored;
    * an ``int`` N is index N of this machine's accelerator (``cuda:N``, ``mps:0``, ``xpu:N``), never
      the CPU; ``bool`` is refused (``True`` would silently mean index 1);
    * an index is 0 to 127 (PyTorch keeps it in 8 bits: ``torch.device("cuda", 128)`` is ``cuda:-128``).

    The hardware is not checked, so this is cheap enough for every ``to_device`` call (strings are
    parsed once and cached); `resolve_device` also checks that the device exists here and fills
    in the index tensors will report.  ``origin`` starts the error message (e.g.
    ``"check_devices(device=...): "``), a `Message` or a str used for both languages.

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
    if tp is bool or not isinstance(device, (str, int)):  # torch.device cannot be subclassed: handled above
        raise _form_error(device, origin, Message("is not a device", "不是设备"))
    if isinstance(device, str):  # a str subclass (numpy.str_, a str enum)
        return _parse(str(device), origin)
    index = int(device)
    if not 0 <= index <= _MAX_INDEX:
        raise _form_error(
            device,
            origin,
            Message(
                f"is not an accelerator index (0 to {_MAX_INDEX})",
                f"不是加速器编号（应为 0 到 {_MAX_INDEX}）",
            ),
        )
    kind = _accelerator_type()
    if kind is None:
        where, here = _origin(origin), _available_here()
        err = UnknownDeviceError(
            Message(
                f"{where.en}{index!r} means accelerator index {index}, which is not available on this "
                f"machine: it has no accelerator. {here.en}",
                f"{where.zh or '整数 '}{index!r} 指第 {index} 号加速器，但本机没有加速器。{here.zh}",
            )
        )
        err.lists_available = True  # type: ignore[attr-defined]
        raise err
    return torch.device(kind, index)


def _parse(text: str, origin: Message | str) -> torch.device:
    stripped = text.strip()
    if not stripped:
        raise _form_error(text, origin, Message("is empty", "是空字符串"))
    try:
        dev = torch.device(stripped)
    except (RuntimeError, ValueError) as exc:
        reason = Message("is not a device name PyTorch knows", "不是 PyTorch 认识的设备名")
        raise _form_error(text, origin, reason) from exc
    if dev.index is not None and not 0 <= dev.index <= _MAX_INDEX:
        reason = Message(f"has an index outside 0 to {_MAX_INDEX}", f"的编号不在 0 到 {_MAX_INDEX} 之间")
        raise _form_error(text, origin, reason)
    return dev


def _unavailable(device: torch.device, origin: Message | str) -> UnknownDeviceError:
    where, here = _origin(origin), _available_here()
    err = UnknownDeviceError(
        Message(
            f"{where.en}{str(device)!r} is not available on this machine. {here.en} "
            "Pick one of those, or leave the device unset to use the best one.",
            f"{where.zh}{str(device)!r} 在本机上不可用。{here.zh}请从中选一个，或者不指定设备，"
            "自动选用最合适的那个。",
        )
    )
    err.lists_available = True  # type: ignore[attr-defined]
    return err


def resolve_device(device: DeviceLike, *, origin: Message | str = DEFAULT_ORIGIN) -> torch.device:
    """Turn ``device`` into the `torch.device` tensors will report, on a device this machine has.

    Reads ``device`` with `as_device`, then checks the hardware and fills in the index: ``"cuda"``
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
        if getattr(err, "lists_available", False):
            raise
        here = _available_here()
        raise UnknownDeviceError(Message(f"{err.en} {here.en}", f"{err.zh}{here.zh}")) from err.__cause__
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
    """A second device that provokes a real device-mismatch error here: the accelerator, else ``meta``.

    With an accelerator that is the accelerator itself, and PyTorch's own CUDA/MPS checks fire. On a
    CPU-only machine it is ``meta``: tensors with a shape and a dtype but no data, so anything computed on
    them has a shape and a device, never numbers.

    The course's labs do not stand in for a GPU with ``meta`` any more: they run on a CUDA GPU, a real one
    or, on a machine without one, a simulated one (`devicekit.simulate`, entered by
    ``devicekit_labs.use_gpus``), which raises CUDA's own messages and computes real values. This function
    stays for code that calls it; to see what a GPU would do on a CPU-only machine, use
    ``devicekit.simulate()`` instead.

    Meta is checked less than CUDA (measured with torch 2.13, `tests/test_device.py` runs each case):

    * PyTorch raises its own `RuntimeError` for a meta/CPU mix in element-wise ops (``meta + cpu``), in
      `torch.cat`, in `nn.Linear` with a bias, losses and RNNs; the wording differs from CUDA's
      ("Tensor on device cpu is not on the expected device meta!");
    * it does NOT raise, and returns a tensor on one of the two devices, for `torch.mm` / ``@`` /
      `F.linear` without bias / `F.conv2d` / `F.embedding`, for in-place ops into a meta tensor from a
      CPU tensor (``meta_t.add_(cpu_t)``, ``mul_``), for ``torch.clamp(meta_t, min=torch.tensor(0.5))``
      and ``torch.index_select(meta_t, 0, torch.tensor(1))`` (CUDA raises for both), and for a CPU
      ``generator=`` with ``device="meta"``.

    Run such code inside `strict_devices` to have these mixes raise too.
    """
    best = best_device()
    return best if best.type != "cpu" else torch.device("meta")
