"""Streams and events of simulated GPUs: every op already finished, so they only keep the bookkeeping.

``torch.cuda.current_stream()``, ``torch.cuda.Stream()``, ``torch.cuda.Event()``, ``torch.cuda.stream(s)``
and ``torch.accelerator.current_stream()`` give these objects inside a block. ``query()`` is always True,
``synchronize()``/``wait_stream()``/``wait_event()`` return at once, ``is_capturing()`` is False (no CUDA
graphs) and ``Event.elapsed_time`` measures host time between two ``record()`` calls. What this cannot
show is said in the package docstring: a race that needs a real asynchronous stream never happens here.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import torch

from . import _state

__all__ = ["SimulatedEvent", "SimulatedStream", "current_stream", "stream"]


class SimulatedStream:
    """A CUDA stream of a simulated GPU (work submitted to it has already run)."""

    device_type = 1  # c10::DeviceType::CUDA, as torch.Stream reports it

    def __init__(self, device: Any = None, priority: int = 0, stream_id: int = 0, **kwargs: Any) -> None:
        index = _index(device)
        self.device_index = index
        self.priority = priority
        self.stream_id = stream_id
        self.cuda_stream = stream_id

    @property
    def device(self) -> torch.device:
        return torch.device("cuda", self.device_index)

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def wait_stream(self, stream: Any) -> None:
        return None

    def wait_event(self, event: Any) -> None:
        return None

    def record_event(self, event: Any = None) -> SimulatedEvent:
        event = SimulatedEvent() if event is None else event
        event.record(self)
        return event

    def is_capturing(self) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, SimulatedStream)
            and other.device_index == self.device_index
            and other.stream_id == self.stream_id
        )

    def __hash__(self) -> int:
        return hash((self.device_index, self.stream_id))

    def __enter__(self) -> SimulatedStream:
        self._previous = _state.set_current_index(self.device_index)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        _state.set_current_index(self._previous)

    def __repr__(self) -> str:
        return f"<torch.cuda.Stream device=cuda:{self.device_index} cuda_stream={hex(self.stream_id)}>"


class SimulatedEvent:
    """A CUDA event of a simulated GPU; ``elapsed_time`` is host time between the two records (ms)."""

    def __init__(
        self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ) -> None:
        self.enable_timing = enable_timing
        self._time: float | None = None

    def record(self, stream: Any = None) -> None:
        self._time = time.perf_counter()

    def wait(self, stream: Any = None) -> None:
        return None

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def elapsed_time(self, end_event: SimulatedEvent) -> float:
        if self._time is None or end_event._time is None:
            return 0.0
        return (end_event._time - self._time) * 1000.0


_next_id = [1]


def _index(device: Any) -> int:
    if device is None:
        return _state.current_index()
    if isinstance(device, int):
        return device
    device = torch.device(device)
    return _state.current_index() if device.index is None else device.index


def current_stream(device: Any = None) -> SimulatedStream:
    """The current (default) stream of a simulated GPU."""
    return SimulatedStream(_index(device))


def new_stream(device: Any = None, priority: int = 0, **kwargs: Any) -> SimulatedStream:
    """``torch.cuda.Stream(...)``: a new stream id on a simulated GPU."""
    _next_id[0] += 1
    return SimulatedStream(_index(device), priority, _next_id[0])


@contextlib.contextmanager
def stream(s: Any) -> Iterator[Any]:
    """``torch.cuda.stream(s)``: make ``s``'s device current for the block (streams need nothing else)."""
    if s is None:
        yield s
        return
    previous = _state.set_current_index(s.device_index)
    try:
        yield s
    finally:
        _state.set_current_index(previous)
