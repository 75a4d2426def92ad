"""``torch.save`` and ``torch.load`` across simulated GPUs, as on a machine with that many real ones.

Saving: a simulated tensor pickles exactly as a CUDA tensor does (``torch._utils._rebuild_tensor_v2`` of
its storage; a parameter through ``_rebuild_parameter``), and its storage's location is tagged
``cuda:N`` by a tagger registered with ``torch.serialization.register_package`` for the block. The file is
one a GPU machine would write.

Loading inside a block: a deserializer registered the same way takes every ``cuda...`` location, checks it
with PyTorch's own ``torch.serialization._validate_device`` (which reads the replaced ``torch.cuda``, so a
checkpoint saved on ``cuda:1`` raises "Attempting to deserialize object on CUDA device 1 but
torch.cuda.device_count() is 1 ..." when one GPU is simulated), and marks the CPU storage for simulated GPU
N; ``torch._utils._rebuild_tensor`` (replaced for the block) then wraps the tensor built on it. A
``map_location`` that calls ``storage.to(device)`` or ``storage.cuda()`` gets a marked copy the same way.
Outside every block nothing is registered or replaced: a CUDA checkpoint fails with PyTorch's own
"Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False" error.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import Any

import torch

from .tensor import SimulatedTensor, wrap

__all__ = ["install", "reduce_simulated"]

# storage -> "cuda:N" while a simulated tensor's storage is being saved
_locations: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# storage -> N for storages loaded (or mapped) onto simulated GPU N
_loaded: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_PRIORITY = 1  # before every built-in tagger (cpu is 10, cuda 20)


def reduce_simulated(tensor: SimulatedTensor) -> tuple[Any, tuple]:
    """``__reduce_ex__`` of a simulated tensor: what PyTorch writes for a CUDA tensor."""
    if getattr(tensor, "_is_param", False):
        with torch.no_grad():
            data = tensor.detach()
        return (torch._utils._rebuild_parameter, (data, tensor.requires_grad, OrderedDict()))
    inner = tensor._dk_inner
    storage = inner.untyped_storage()
    _locations[storage] = f"cuda:{tensor._dk_index}"
    typed = torch.storage.TypedStorage(wrap_storage=storage, dtype=inner.dtype, _internal=True)
    args = (
        typed,
        inner.storage_offset(),
        tuple(inner.size()),
        inner.stride(),
        tensor.requires_grad,
        OrderedDict(),
    )
    return (torch._utils._rebuild_tensor_v2, args)


def _tagger(storage: Any) -> str | None:
    try:
        return _locations.get(storage)
    except TypeError:  # not weak-referenceable: not one of ours
        return None


def _mark(storage: torch.UntypedStorage, index: int) -> torch.UntypedStorage:
    _loaded[storage] = index
    return storage


def _deserializer(storage: Any, location: str) -> Any:
    if not location.startswith("cuda"):
        return None
    device = torch.serialization._validate_device(location, "cuda")
    index = device.index if device.index is not None else torch.cuda.current_device()
    return _mark(storage, index)


def _storage_to(original: Any) -> Any:
    def to(self: Any, *args: Any, **kwargs: Any) -> Any:
        if args:  # the storage's to() takes the device by keyword only: PyTorch's own TypeError
            return original(self, *args, **kwargs)
        device = kwargs.get("device")
        if device is not None and str(device).startswith("cuda"):
            from ._function import resolve

            target = resolve(torch.device(device) if isinstance(device, str) else device)
            return _mark(self.clone(), target.index)
        return original(self, *args, **kwargs)

    return to


def _storage_cuda(self: Any, device: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
    from ._function import resolve

    target = resolve(
        torch.device("cuda")
        if device is None
        else torch.device("cuda", device)
        if isinstance(device, int)
        else device
    )
    return _mark(self.clone(), target.index)


def _rebuild_tensor(original: Any) -> Any:
    def rebuild(storage: Any, storage_offset: int, size: Any, stride: Any) -> Any:
        tensor = original(storage, storage_offset, size, stride)
        untyped = getattr(storage, "_untyped_storage", storage)
        try:
            index = _loaded.get(untyped)
        except TypeError:
            index = None
        return tensor if index is None else wrap(tensor, index)

    return rebuild


def install(patches: Any) -> None:
    """Register the tagger and deserializer and replace the rebuild and storage-move functions."""
    registry = torch.serialization._package_registry
    patches.set(
        torch.serialization, "_package_registry", sorted([*registry, (_PRIORITY, _tagger, _deserializer)])
    )
    patches.set(torch._utils, "_rebuild_tensor", _rebuild_tensor(torch._utils._rebuild_tensor))
    patches.set(torch.UntypedStorage, "to", _storage_to(torch.UntypedStorage.to))
    patches.set(torch.UntypedStorage, "cuda", _storage_cuda)
