"""The default device and dtype that code inside a block sets, as on a GPU machine, and undone after it.

* ``torch.set_default_tensor_type(torch.cuda.FloatTensor)`` (deprecated since PyTorch 2.1, still common):
  a CPU build refuses every CUDA tensor type ("type torch.cuda.FloatTensor not available. Torch not
  compiled with CUDA enabled."), a CUDA build makes factories create CUDA tensors of that dtype
  (``torch/csrc/tensor/python_tensor.cpp``, ``set_default_tensor_type``). Inside a block it sets the
  default dtype through PyTorch's own function (given the CPU type of the same dtype, so an integer type is
  refused with PyTorch's own ``TypeError``) and the default device to ``cuda``, so factories make simulated
  tensors and a DataLoader with ``shuffle=True`` raises CUDA's generator error, as on a GPU machine.
  Difference: on CUDA the default tensor type is global to the process; here the device part is the
  calling thread's (``torch.set_default_device`` is thread-local).
* ``torch.set_default_device("cuda")`` and ``with torch.device("cuda"):`` need nothing: PyTorch's
  ``DeviceContext`` passes ``device="cuda"`` to factories and the function mode turns it into a simulated
  GPU. What this module adds is the restore: a default device set inside a block and never reset would
  outlive it, and on a CPU build every factory would then raise "Torch not compiled with CUDA enabled".
  `saved_device` / `restore_device` put back the thread's default device as it was when the block
  opened; the default dtype is put back by the block's patch set (`install`).
"""

from __future__ import annotations

import functools
from typing import Any

import torch
from torch._utils import _import_dotted_name

from . import _state
from ._legacy import LegacyCudaType

__all__ = ["install", "restore_device", "saved_device"]

_ORIGINAL_SET_TENSOR_TYPE = torch.set_default_tensor_type


def _cpu_type(cuda_type: Any) -> Any:
    """The CPU tensor type of a CUDA one's dtype (``torch.cuda.DoubleTensor``: ``torch.DoubleTensor``)."""
    return getattr(torch, cuda_type.__name__)


def set_default_tensor_type(t: Any, *, patches: Any) -> None:
    """``torch.set_default_tensor_type`` while a block is open (see the module docstring)."""
    resolved = _import_dotted_name(t) if isinstance(t, str) else t
    if _state.active() is None:
        _ORIGINAL_SET_TENSOR_TYPE(t)
        return
    patches.flag(torch.get_default_dtype, torch.set_default_dtype, torch.get_default_dtype())
    # a CUDA build's legacy type, or the one a block puts in torch.cuda (_legacy)
    legacy = isinstance(resolved, (type(torch.FloatTensor), LegacyCudaType))
    if getattr(resolved, "is_cuda", False) and legacy:
        _ORIGINAL_SET_TENSOR_TYPE(_cpu_type(resolved))  # PyTorch's own checks, warning and dtype
        torch.set_default_device("cuda")
        return
    _ORIGINAL_SET_TENSOR_TYPE(resolved)
    current = _current_device_context()
    if current is not None and current.device.type == "cuda":
        torch.set_default_device(None)  # a CPU tensor type after a CUDA one: factories make CPU tensors


def install(patches: Any) -> None:
    """Replace ``torch.set_default_tensor_type`` for the blocks' lifetime (the dtype it changes is
    registered with ``patches`` on first use, so it is put back when the outermost block closes)."""
    patches.set(torch, "set_default_tensor_type", functools.partial(set_default_tensor_type, patches=patches))


def _current_device_context() -> Any:
    return getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None)


def saved_device() -> torch.device | None:
    """This thread's default device as ``torch.set_default_device`` set it (`None`: none set)."""
    context = _current_device_context()
    return None if context is None else context.device


def restore_device(saved: torch.device | None) -> None:
    """Put back this thread's default device if code in the block changed it."""
    current = saved_device()
    if current == saved and (current is None or current.index == saved.index):
        return
    torch.set_default_device(saved)
