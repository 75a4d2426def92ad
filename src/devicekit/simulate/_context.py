"""`simulate`: the context manager (and decorator) that opens and closes a simulated-GPU block."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from ..messages import Message, localised
from . import _defaults, _distributed, _lazyinit, _patches, _serialization, _state
from ._dispatch import SimulateDispatchMode
from ._function import SimulateFunctionMode
from .profiles import PROFILES, GpuProfile

__all__ = ["simulate"]

_MAX_GPUS = 64
_lock = threading.RLock()
_installed: list[_patches.Patches] = []  # the one live patch set while any block is open
_open = 0  # blocks open, all threads together
_tls = threading.local()
_ORIGINAL_START = threading.Thread.start


def _thread_start(self: threading.Thread) -> None:
    """``threading.Thread.start`` inside a block: the new thread runs inside the simulation too."""
    run = self.run

    def run_simulated() -> None:
        with _modes_in_this_thread():
            run()

    self.run = run_simulated  # type: ignore[method-assign]
    _ORIGINAL_START(self)


@contextlib.contextmanager
def _modes_in_this_thread() -> Iterator[None]:
    """Push the function and dispatch modes in this thread (once per thread, however deep the nesting)."""
    depth = getattr(_tls, "depth", 0)
    if depth or _state.active() is None:
        _tls.depth = depth + 1
        try:
            yield
        finally:
            _tls.depth -= 1
        return
    default_device = _defaults.saved_device()
    function_mode, dispatch_mode = SimulateFunctionMode(), SimulateDispatchMode()
    function_mode.__enter__()
    dispatch_mode.__enter__()
    _tls.depth = 1
    device = _state.set_current_index(0)  # each block starts on cuda:0, as a fresh process does
    try:
        yield
    finally:
        _tls.depth = 0
        _state.set_current_index(device)
        try:
            _defaults.restore_device(default_device)  # a set_default_device("cuda") left in the block
        finally:
            _leave(dispatch_mode)
            _leave(function_mode)


def _leave(mode: TorchFunctionMode | TorchDispatchMode) -> None:
    """Take ``mode`` off its stack even when modes pushed inside the block sit above it (a mode the
    block's code entered and never left): those stay, in their order. A default device set inside the
    block is not one of them: `_defaults.restore_device` has put back the one the block started with."""
    from torch.utils import _python_dispatch

    if isinstance(mode, TorchDispatchMode):
        stack = _python_dispatch._get_current_dispatch_mode_stack()
        pop, push = _python_dispatch._pop_mode, _python_dispatch._push_mode
    else:
        stack = torch.overrides._get_current_function_mode_stack()
        pop, push = torch._C._pop_torch_function_stack, torch._C._push_on_torch_function_stack
    if mode not in stack:
        return
    above = []
    while stack and stack[-1] is not mode:
        above.append(pop())
        stack = stack[:-1]
    mode.__exit__(None, None, None)
    for other in reversed(above):
        push(other)


def _error(kind: type[Exception], en: str, zh: str) -> Exception:
    return localised(kind, Message(en, zh))


def _profile(name: Any) -> GpuProfile:
    known = ", ".join(PROFILES)
    if isinstance(name, GpuProfile):
        return name
    if isinstance(name, str):
        for key, profile in PROFILES.items():
            if name.strip().lower().replace(" ", "") == key.lower().replace(" ", ""):
                return profile
    exc = _error(
        ValueError,
        f"simulate(profile={name!r}): unknown GPU profile; known profiles: {known}.",
        f"simulate(profile={name!r})：没有这个 GPU 型号；可选的型号有：{'、'.join(PROFILES)}。",
    )
    raise exc


class simulate(contextlib.ContextDecorator):  # noqa: N801 - used like a function: with simulate(): ...
    """Make this CPU machine behave like ``gpus`` CUDA GPUs for everything about devices.

    Inside ``with devicekit.simulate(gpus=2, profile="A100"):`` (or a function decorated with it),
    ``torch.cuda.is_available()`` is True, ``device="cuda"`` makes tensors on simulated GPUs whose values
    are computed for real on the CPU, and every op applies CUDA's device rules and raises PyTorch's CUDA
    error texts. See the `devicekit.simulate` package docstring for everything it covers and what it
    cannot simulate.

    Args:
        gpus: how many GPUs the machine has (a positive int, at most 64). ``CUDA_VISIBLE_DEVICES``, read
            when the block opens, narrows or hides them as it does on a real machine.
        profile: the GPU model each one reports: ``"H200"``, ``"H100"``, ``"A100"``, ``"V100"``, ``"T4"``
            or ``"RTX 4090"`` (`devicekit.simulate.PROFILES`).
        force: simulate even on a machine whose torch sees real GPUs (refused otherwise: simulated and
            real CUDA tensors must not meet).

    Raises:
        TypeError, ValueError: bad arguments (nothing is changed).
        RuntimeError: real GPUs are present and ``force`` is False (nothing is changed).
    """

    def __init__(self, gpus: int = 1, profile: str = "H200", force: bool = False) -> None:
        if isinstance(gpus, bool) or not isinstance(gpus, int):
            exc = _error(
                TypeError,
                f"simulate(gpus={gpus!r}): gpus must be a positive int (how many GPUs to simulate).",
                f"simulate(gpus={gpus!r})：gpus 必须是正整数（要模拟几块 GPU）。",
            )
            raise exc
        if not 1 <= gpus <= _MAX_GPUS:
            exc = _error(
                ValueError,
                f"simulate(gpus={gpus}): gpus must be between 1 and {_MAX_GPUS}.",
                f"simulate(gpus={gpus})：gpus 必须在 1 到 {_MAX_GPUS} 之间。",
            )
            raise exc
        if not isinstance(force, bool):
            exc = _error(
                TypeError,
                f"simulate(force={force!r}): force must be True or False.",
                f"simulate(force={force!r})：force 只能是 True 或 False。",
            )
            raise exc
        self.gpus = gpus
        self.profile = _profile(profile)
        self.force = force
        self._machines: list[_state.Machine] = []
        self._modes: list[contextlib.AbstractContextManager] = []
        self._generators: list[Any] = []

    def __repr__(self) -> str:
        return f"simulate(gpus={self.gpus}, profile={self.profile.key!r})"

    def __enter__(self) -> simulate:
        global _open
        with _lock:
            if _state.active() is None and not self.force and torch.cuda.is_available():
                real = torch.cuda.device_count()
                exc = _error(
                    RuntimeError,
                    f"simulate(): this machine has {real} real GPU(s); simulated GPUs would meet real CUDA "
                    "tensors. Run without simulate(), or pass force=True to simulate anyway.",
                    f"simulate()：这台机器有 {real} 块真实 GPU，模拟 GPU 会和真实的 CUDA 张量混在一起。"
                    "请不用 simulate() 直接运行，或者传入 force=True 坚持模拟。",
                )
                raise exc
            machine = _state.Machine(self.gpus, self.profile, _state.visible_indices(self.gpus))
            if not _installed:
                patches = _patches.Patches()
                try:
                    _state.push(machine)
                    _patches.install(patches, machine, _thread_start)
                    _serialization.install(patches)
                    _defaults.install(patches)
                    _distributed.install(patches)
                except BaseException:
                    patches.undo()
                    _state.pop(machine)
                    raise
                _installed.append(patches)
                self._generators.append(None)
            else:
                _state.push(machine)
                self._generators.append(torch.cuda.default_generators)
                torch.cuda.default_generators = _patches.generators(machine)
            _open += 1
        modes = _modes_in_this_thread()
        modes.__enter__()
        self._machines.append(machine)
        self._modes.append(modes)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        global _open
        machine = self._machines.pop()
        modes = self._modes.pop()
        outer_generators = self._generators.pop()
        try:
            modes.__exit__(*exc_info)
        finally:
            with _lock:
                _state.pop(machine)
                _open -= 1
                if _open == 0 and _installed:
                    try:
                        _distributed.close()  # an NCCL group left open in the block
                    finally:
                        _installed.pop().undo()
                    _lazyinit.reset()
                elif outer_generators is not None:
                    torch.cuda.default_generators = outer_generators


def leave_all_in_forked_child() -> None:
    """End every simulation this process inherited from the process that forked it, at once: this thread's
    modes, the patches, the simulated machines, CUDA's lazy-init flag.

    For a helper process forked from a simulating one that must see the machine as it is (the CPU and
    gloo): the ranks a self-check starts, `devicekit_labs.ranks`. The blocks' own ``__exit__`` never runs
    there (such a child ends with ``os._exit``), and it takes no lock: another thread of the parent may have
    held ``_lock`` at the fork, and the child has no other thread. Not for a process with threads of its own
    inside a block.
    """
    global _open
    from torch.utils import _python_dispatch

    for mode in list(_python_dispatch._get_current_dispatch_mode_stack()):
        if isinstance(mode, SimulateDispatchMode):
            _leave(mode)
    for mode in list(torch.overrides._get_current_function_mode_stack()):
        if isinstance(mode, SimulateFunctionMode):
            _leave(mode)
    _tls.depth = 0
    while _installed:
        _installed.pop().undo()
    _lazyinit.reset()
    _state.forget_machines()
    _open = 0
