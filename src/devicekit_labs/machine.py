"""The labs' GPUs: this machine's own CUDA GPUs, or simulated ones (`devicekit.simulate`) where it has none.

Every lab is the GPU lab. Its setup cell calls `use_gpus`: on a machine with a CUDA GPU nothing changes; on a
machine without one (a laptop, a CPU notebook platform, CI) the rest of the notebook runs inside
``devicekit.simulate(gpus=...)``, so ``dm.device`` is ``cuda:0``, errors carry CUDA's own messages and values
are computed for real on the CPU. The self-checks' probes run under `probe_gpus` (two GPUs, so an exercise
about ``cuda:1`` is checked with a second device), in the notebook and in the grader's kernel alike: a grade
on a CPU machine means what it would on a machine with two GPUs. On a machine with one real GPU the probes
run on it alone (simulated and real CUDA tensors must not meet), so an answer that only a second GPU tells
apart (``x.cuda()`` for ``x.to(device)``) passes there.

Why the notebook enters the simulation without a ``with`` block: each cell is a separate execution, and a
``with`` cannot span cells. The simulation's modes live on the kernel's main thread, where IPython runs every
cell, and stay until the kernel stops. Calling `use_gpus` again (re-running the setup cell) first leaves the
simulation the previous call entered.
"""

from __future__ import annotations

import atexit
import contextlib
from collections.abc import Callable, Iterator
from functools import wraps
from typing import Any, TypeVar

from devicekit.messages import Message

__all__ = ["gpus_line", "probe_gpus", "simulating", "use_gpus", "with_probe_gpus"]

F = TypeVar("F", bound=Callable[..., Any])

#: The simulation the setup cell entered, left again by the next `use_gpus` call.
_entered: list[Any] = []


def simulating() -> int:
    """How many simulated GPUs this thread computes on now (0: none, the GPUs are real or absent)."""
    from devicekit.simulate import _state

    machine = _state.active()
    return machine.count if machine is not None else 0


def _real_gpus() -> int:
    import torch

    if simulating():
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def gpus_line(gpus: int, simulated: bool) -> Message:
    """The setup cell's one line: which GPUs the notebook computes on."""
    import torch

    if simulated:
        name = torch.cuda.get_device_name(0)
        return Message(
            f"GPUs for this lab: {gpus} simulated {name} (this machine has no CUDA GPU; devicekit.simulate "
            "checks every operation with CUDA's device rules and raises CUDA's messages, and computes every "
            "value on the CPU).",
            f"本实验使用的 GPU：{gpus} 块模拟的 {name}（这台机器没有 CUDA GPU；devicekit.simulate 按 CUDA "
            "的设备规则检查每个运算，报错信息用 CUDA 的原文，所有数值都在 CPU 上真实算出）。",
        )
    count = torch.cuda.device_count()
    names = ", ".join(sorted({torch.cuda.get_device_name(i) for i in range(count)}))
    return Message(
        f"GPUs for this lab: {count} real ({names}); nothing is simulated.",
        f"本实验使用的 GPU：{count} 块真实 GPU（{names}），不做任何模拟。",
    )


def _leave_entered() -> None:
    """Leave the simulation `use_gpus` entered (a re-run setup cell, or the kernel's exit)."""
    while _entered:
        _entered.pop().__exit__(None, None, None)


atexit.register(_leave_entered)  # before interpreter shutdown tears down what leaving it needs


def use_gpus(gpus: int = 1) -> Message:
    """Make the rest of this notebook run on ``gpus`` CUDA GPUs: the real ones, or simulated ones.

    With a real CUDA GPU nothing changes (a lab that wants two and finds one says so in its own cells).
    Without one, `devicekit.simulate` is entered for the rest of the kernel's life. Returns the line the
    setup cell prints.
    """
    from devicekit.simulate import simulate

    _leave_entered()  # the setup cell ran again: leave the simulation it entered last time
    if _real_gpus():
        return gpus_line(gpus, simulated=False)
    block = simulate(gpus=gpus)
    block.__enter__()
    _entered.append(block)
    return gpus_line(gpus, simulated=True)


@contextlib.contextmanager
def probe_gpus(gpus: int = 2) -> Iterator[None]:
    """A block in which a self-check's probe runs: on real GPUs when the machine has them, else on
    ``gpus`` simulated GPUs (inside the notebook's own simulation when it already has that many)."""
    if _real_gpus() or simulating() >= gpus:
        yield
        return
    from devicekit.simulate import simulate

    with simulate(gpus=gpus):
        yield


def with_probe_gpus(probe: F, gpus: int = 2) -> F:
    """``probe``, run inside `probe_gpus` each time it is called."""

    @wraps(probe)
    def run(*args: Any, **kwargs: Any) -> Any:
        with probe_gpus(gpus):
            return probe(*args, **kwargs)

    return run  # type: ignore[return-value]


def probe_devices() -> list[Any]:
    """The GPUs a probe plants tensors on: ``cuda:0`` and, where there is one, ``cuda:1`` (always under a
    simulation, whose probes get two), so an answer that hard-codes ``"cuda"`` or ``cuda:0`` fails."""
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return [torch.device("cuda", i) for i in range(min(count, 2))]
