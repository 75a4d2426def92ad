"""``DeviceLoader``: iterate a DataLoader and get batches that are already on the device.

On CPU, MPS, XPU and meta it is a thin wrapper: each batch goes through `to_device`.

On CUDA it also overlaps the host->device copy of batch *n+1* with the compute on batch *n*:
the next batch is pinned (unless the DataLoader already uses ``pin_memory=True``) and copied
asynchronously on a side CUDA stream while the training step runs on the current stream.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator
from typing import Any

import torch

from .device import DeviceLike, as_device
from .transfer import to_device, to_device_pinned
from .traversal import iter_tensors, skip_set

__all__ = ["DeviceLoader"]


class DeviceLoader:
    """Wrap an iterable of batches (usually a ``DataLoader``) so that it yields on-device batches.

    ``len(loader)`` is the wrapped loader's length, and any other attribute (``dataset``,
    ``batch_size``, ``sampler``...) is read from the wrapped loader, so the wrapper can replace it.

    Args:
        dataloader: anything iterable that yields batches (tensors or nestings of containers).
        device: where batches should end up.
        non_blocking: passed to `to_device`; ``None`` uses its direction-aware default
            (asynchronous only for CPU -> CUDA/XPU).
        skip_keys: mapping keys (at any depth) whose values stay where they are, as in
            `to_device`; e.g. ``"lengths"``, which ``pack_padded_sequence`` needs on the CPU.

    CUDA notes: prefetching pins batches in the main process if the DataLoader does not;
    ``DataLoader(..., pin_memory=True)`` does it in a background thread and is cheaper. Batches
    are moved with the walk of `to_device`, so the prefetch is exactly as complete as
    ``to_device`` is (objects with their own ``.to()`` are moved by that method).
    """

    def __init__(
        self,
        dataloader: Iterable[Any],
        device: DeviceLike,
        non_blocking: bool | None = None,
        skip_keys: Iterable[Hashable] | str = (),
    ) -> None:
        self.dataloader = dataloader
        self.device = as_device(device)
        self.non_blocking = non_blocking
        self.skip_keys = skip_set(skip_keys)  # a bad value fails here, not at the first batch

    def __len__(self) -> int:
        return len(self.dataloader)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[Any]:
        if self.device.type == "cuda" and torch.cuda.is_available():
            already_pinned = bool(getattr(self.dataloader, "pin_memory", False))
            return _CudaPrefetcher(
                self.dataloader, self.device, self.non_blocking, pin=not already_pinned, skip=self.skip_keys
            )
        return self._plain_iter()

    def _plain_iter(self) -> Iterator[Any]:
        device, non_blocking, skip = self.device, self.non_blocking, self.skip_keys
        for batch in self.dataloader:
            yield to_device(batch, device, non_blocking=non_blocking, skip_keys=skip)

    def __getattr__(self, name: str) -> Any:
        # Only called for attributes not found normally; guard against recursion while unpickling
        # (when self.dataloader does not exist yet).
        if name == "dataloader":
            raise AttributeError(name)
        return getattr(self.dataloader, name)

    def __repr__(self) -> str:
        return f"DeviceLoader({self.dataloader!r}, device={str(self.device)!r})"


_END: Any = object()


class _CudaPrefetcher:
    """One pass over ``iterable`` with the next batch copied ahead on a side CUDA stream.

    Stream semantics, step by step:

    1. ``load()``: take the next host batch, pin it, and issue its copies under
       ``torch.cuda.stream(side)``. The new device tensors are *allocated* on the side stream.
    2. Before handing the batch out, ``current.wait_stream(side)`` makes the consumer's stream wait
       for those copies (a GPU-side wait; the host does not block).
    3. ``tensor.record_stream(current)`` on every moved tensor tells the caching allocator that
       the current stream uses the memory too. Without it, when the consumer drops the batch the
       block would return to the side stream's pool and could be overwritten by the next
       prefetch while kernels on the current stream are still reading it.
    4. Only then the next batch is started, so its copy overlaps with the consumer's compute.

    The pinned host buffers may be freed right after the copy is issued: the caching host
    allocator records an event on the copy stream and does not reuse them until it has passed.
    """

    def __init__(
        self,
        iterable: Iterable[Any],
        device: torch.device,
        non_blocking: bool | None,
        pin: bool,
        skip: frozenset = frozenset(),
    ):
        if device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        self.device = device
        self.non_blocking = non_blocking
        self.pin = pin
        self.skip = skip
        self.iterator = iter(iterable)
        self.side = torch.cuda.Stream(device=device)
        self.next_batch: Any = self._load()

    def _load(self) -> Any:
        try:
            batch = next(self.iterator)
        except StopIteration:
            return _END
        with torch.cuda.stream(self.side):
            if self.pin:
                return to_device_pinned(batch, self.device, self.non_blocking, self.skip)
            return to_device(batch, self.device, non_blocking=self.non_blocking, skip_keys=self.skip)

    def __iter__(self) -> _CudaPrefetcher:
        return self

    def __next__(self) -> Any:
        batch = self.next_batch
        if batch is _END:
            raise StopIteration
        from .simulate.tensor import is_simulated

        current = torch.cuda.current_stream(self.device)
        current.wait_stream(self.side)
        for _, t in iter_tensors(batch):
            # a simulated GPU's copy has already finished, and its stream is no torch.Stream to record
            if t.is_cuda and not is_simulated(t):
                t.record_stream(current)
        self.next_batch = self._load()
        return batch
