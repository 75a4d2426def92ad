"""The simulated machine: how many GPUs, which profile, each thread's current device, memory in use.

One `Machine` is in force while a `simulate` block is open (the innermost block's, when blocks nest). The
current device is per thread, as CUDA's is (``cudaSetDevice`` sets it for the calling host thread; a new
thread starts on device 0). Memory is counted per simulated device as CUDA's caching allocator counts
``torch.cuda.memory_allocated``: the bytes of live storages, each rounded up to a multiple of 512 bytes
(``kMinBlockSize`` in ``c10/cuda/CUDACachingAllocator.cpp``); a storage is counted from the moment a
simulated tensor first holds it until Python frees it.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch

from .profiles import GpuProfile

__all__ = ["Machine", "active", "current_index", "set_current_index"]

_BLOCK = 512


@dataclass
class Machine:
    """What one `simulate` block makes this process look like.

    Attributes:
        gpus: GPUs the block asked for (physical, before ``CUDA_VISIBLE_DEVICES``).
        profile: the GPU model every simulated device reports.
        visible: device indices the process sees, after ``CUDA_VISIBLE_DEVICES`` (``cuda:0`` is the first).
        allocated: bytes in live storages, per visible index.
        peak: the most ``allocated`` reached since the block started or the last reset, per index.
    """

    gpus: int
    profile: GpuProfile
    visible: tuple[int, ...]
    allocated: dict[int, int] = field(default_factory=dict)
    peak: dict[int, int] = field(default_factory=dict)

    @property
    def count(self) -> int:
        """``torch.cuda.device_count()`` inside the block."""
        return len(self.visible)


_machines: list[Machine] = []
_tls = threading.local()


def visible_indices(gpus: int, environ: dict[str, str] | None = None) -> tuple[int, ...]:
    """The physical GPUs ``CUDA_VISIBLE_DEVICES`` leaves visible, in the order the process numbers them.

    PyTorch's own parser reads the variable (``torch.cuda._parse_visible_devices``: ``""`` and ``"-1"`` hide
    every GPU, a repeated ordinal gives none, a negative one ends the list); as the CUDA runtime does, the
    list stops at the first ordinal the machine does not have. ``GPU-``/``MIG-`` UUIDs match no simulated
    GPU (they have none), so such a list hides them all.
    """
    env = os.environ if environ is None else environ
    if "CUDA_VISIBLE_DEVICES" not in env:
        return tuple(range(gpus))
    saved = os.environ.get("CUDA_VISIBLE_DEVICES")
    os.environ["CUDA_VISIBLE_DEVICES"] = env["CUDA_VISIBLE_DEVICES"]
    try:
        parsed = torch.cuda._parse_visible_devices()
    finally:
        if saved is None:
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = saved
    out: list[int] = []
    for item in parsed:
        if not isinstance(item, int) or item >= gpus:
            break
        out.append(item)
    return tuple(out)


def push(machine: Machine) -> None:
    """Put ``machine`` in force (a block opens)."""
    _machines.append(machine)


def pop(machine: Machine) -> None:
    """Take ``machine`` out of force (its block closes)."""
    if machine in _machines:
        _machines.remove(machine)


def forget_machines() -> None:
    """No machine simulated any more, and not forked from one that was
    (`_context.leave_all_in_forked_child`)."""
    global _forked
    _machines.clear()
    _forked = False


def active() -> Machine | None:
    """The machine in force, or `None` outside every block."""
    return _machines[-1] if _machines else None


def current_index() -> int:
    """This thread's current simulated device (``torch.cuda.current_device()``)."""
    return getattr(_tls, "index", 0)


def set_current_index(index: int) -> int:
    """Make ``index`` this thread's current device; return the previous one."""
    previous = getattr(_tls, "index", 0)
    _tls.index = index
    return previous


# id(storage) -> (weak reference to it, machine, device index, bytes counted); the weak reference's
# callback takes the entry out and the bytes off when Python frees the storage
_live: dict[int, tuple[weakref.ref, Machine, int, int]] = {}
_keys: dict[weakref.ref, int] = {}


def _release(ref: weakref.ref) -> None:
    key = _keys.pop(ref, None)
    entry = _live.pop(key, None) if key is not None else None
    if entry is not None:
        _, machine, index, nbytes = entry
        machine.allocated[index] = machine.allocated.get(index, 0) - nbytes


def track(storage: torch.UntypedStorage, index: int) -> None:
    """Count ``storage`` (a simulated tensor's CPU storage) as allocated on simulated device ``index``."""
    key = id(storage)
    if key in _live:
        return
    machine = active()
    if machine is None:
        return
    nbytes = storage.nbytes()
    rounded = 0 if nbytes == 0 else -(-nbytes // _BLOCK) * _BLOCK
    ref = weakref.ref(storage, _release)
    _live[key] = (ref, machine, index, rounded)
    _keys[ref] = key
    allocated = machine.allocated
    total = allocated.get(index, 0) + rounded
    allocated[index] = total
    if total > machine.peak.get(index, 0):
        machine.peak[index] = total


_forked = False


def forked() -> bool:
    """Whether this process was forked from one with a simulation open (CUDA cannot be used in it)."""
    return _forked


def _after_fork_in_child() -> None:
    global _forked
    if _machines:
        _forked = True


os.register_at_fork(after_in_child=_after_fork_in_child)


@contextlib.contextmanager
def simulated_generator(index: int) -> Iterator[None]:
    """While a call runs with a simulated GPU's generator, `generator_index` answers its index."""
    previous = getattr(_tls, "generator", None)
    _tls.generator = index
    try:
        yield
    finally:
        _tls.generator = previous


def generator_index() -> int | None:
    """The simulated GPU whose generator the running call was given, or `None`."""
    return getattr(_tls, "generator", None)
