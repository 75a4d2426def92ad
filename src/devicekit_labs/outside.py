"""Run a piece of a lab outside the simulated GPU: what `devicekit.simulate` cannot simulate.

Labs enter `devicekit.simulate` for the whole notebook (`machine.use_gpus`), and the self-checks' probes
run inside it too (`machine.probe_gpus`). ``torch.compile`` cannot run there: Dynamo cannot trace the
simulated tensors, so inside a block it raises (`devicekit.simulate._compile`). Lab 10 still has to compile
code for the CPU, in the notebook and in its probes; `outside_simulation` lets it: for the length of a
``with`` block this thread leaves every open simulation (the machine, its modes, every patched attribute),
and returns to it exactly as it was afterwards, also after an exception. On a machine with real GPUs, or
with no simulation open, it changes nothing.

Why not leave the notebook's block and enter a new one: a probe runs inside ``with simulate(...)`` blocks
it does not own (`probe_gpus`), and a new block would be a new machine (its memory counters, its current
device). Pausing keeps both.

The pause reaches into `devicekit.simulate`'s private state (its machine stack, its one live `Patches`,
its two modes on this thread); `tests/test_outside.py` holds it to what it promises. It belongs in
`devicekit.simulate` as a public ``paused()`` once another user needs it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

__all__ = ["compile_device", "outside_simulation"]


def _simulation() -> tuple[Any, Any, Any] | None:
    """devicekit.simulate's private modules (state, context, patches), or None when nothing is open."""
    from devicekit.simulate import _context, _patches, _state

    if _state.active() is None or not _context._installed:
        return None
    return _state, _context, _patches


def _swap_patches(patches: Any, patches_module: Any) -> None:
    """Exchange every attribute `patches` replaced with what it saved; twice gives back the first state."""
    getters = {
        torch._C._set_only_lift_cpu_tensors: torch._C._only_lift_cpu_tensors,
        torch.set_default_dtype: torch.get_default_dtype,
    }
    missing, flag = patches_module._MISSING, patches_module._FLAG
    swapped = []
    for owner, name, saved in patches._saved:
        if name is flag:
            getter = getters.get(owner)
            if getter is None:  # a flag this module does not know how to read: leave it as it is
                swapped.append((owner, name, saved))
                continue
            now = getter()
            owner(saved)
            swapped.append((owner, name, now))
            continue
        now = owner.__dict__.get(name, missing) if isinstance(owner, type) else getattr(owner, name, missing)
        if saved is missing:
            with contextlib.suppress(AttributeError):
                delattr(owner, name)
        else:
            setattr(owner, name, saved)
        swapped.append((owner, name, now))
    patches._saved[:] = swapped


def _pop_modes(kinds: tuple[type, ...]) -> tuple[list[Any], list[Any]]:
    """Take this thread's modes of ``kinds`` off both mode stacks; return the stacks as they were."""
    from torch.utils import _python_dispatch

    function_stack = list(torch.overrides._get_current_function_mode_stack())
    dispatch_stack = list(_python_dispatch._get_current_dispatch_mode_stack())
    for _ in function_stack:
        torch._C._pop_torch_function_stack()
    for _ in dispatch_stack:
        _python_dispatch._pop_mode()
    for mode in function_stack:
        if not isinstance(mode, kinds):
            torch._C._push_on_torch_function_stack(mode)
    for mode in dispatch_stack:
        if not isinstance(mode, kinds):
            _python_dispatch._push_mode(mode)
    return function_stack, dispatch_stack


def _push_modes(function_stack: list[Any], dispatch_stack: list[Any]) -> None:
    """Put both mode stacks back as `_pop_modes` found them (modes left on them since are dropped)."""
    from torch.utils import _python_dispatch

    for _ in torch.overrides._get_current_function_mode_stack():
        torch._C._pop_torch_function_stack()
    for _ in _python_dispatch._get_current_dispatch_mode_stack():
        _python_dispatch._pop_mode()
    for mode in function_stack:
        torch._C._push_on_torch_function_stack(mode)
    for mode in dispatch_stack:
        _python_dispatch._push_mode(mode)


@contextlib.contextmanager
def outside_simulation() -> Iterator[bool]:
    """A block this thread runs outside every open `devicekit.simulate` block; yields whether it left one.

    Inside, ``torch.cuda.is_available()`` is what this machine says (False without a GPU), ``torch.compile``
    works, and tensors are plain CPU (or meta) tensors; a simulated tensor made before must not be used
    there. Afterwards the simulation is back as it was: the same machine, modes and replaced attributes.
    The replaced attributes and the machine are the process's, not the thread's: while the block runs,
    another thread of the simulation (a DataLoader's pin-memory thread) sees no simulation either, so run
    it where no such thread is working (a notebook cell, a self-check's probe).
    """
    found = _simulation()
    if found is None:
        yield False
        return
    state, context, patches_module = found
    from devicekit.simulate._dispatch import SimulateDispatchMode
    from devicekit.simulate._function import SimulateFunctionMode

    with context._lock:
        machines = list(state._machines)
        state._machines.clear()
        patches = context._installed[0]
        _swap_patches(patches, patches_module)
    stacks = _pop_modes((SimulateFunctionMode, SimulateDispatchMode))
    try:
        yield True
    finally:
        _push_modes(*stacks)
        with context._lock:
            _swap_patches(patches, patches_module)
            state._machines[:] = machines


def compile_device(device: torch.device | str) -> torch.device:
    """The device a lab compiles for in place of ``device``: ``device`` itself when it is a real one;
    ``meta`` for a simulated GPU (``cuda:N`` under `devicekit.simulate`), the one device besides the CPU
    that Dynamo can trace on a machine without a GPU (call it inside `outside_simulation`)."""
    device = torch.device(device)
    if device.type == "cuda" and not _real_cuda():
        return torch.device("meta")
    return device


def _real_cuda() -> bool:
    """Whether this machine's torch sees a real CUDA GPU (asked outside any simulation)."""
    with outside_simulation():
        return torch.cuda.is_available()
