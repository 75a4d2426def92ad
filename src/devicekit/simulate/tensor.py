"""`SimulatedTensor`: a tensor that says it lives on ``cuda:N`` and keeps its values in a real CPU tensor.

It is a wrapper subclass (``torch.Tensor._make_wrapper_subclass``, as in PyTorch's
``torch/testing/_internal/logging_tensor.py``) around one CPU tensor, ``_dk_inner``. Python code sees a
CUDA tensor: ``.device`` is ``cuda:N``, ``.is_cuda`` is True, ``get_device()`` is N, ``type()`` is
``torch.cuda.FloatTensor``, it prints as ``tensor([...], device='cuda:0')``, ``.numpy()`` raises CUDA's
``TypeError`` and ``.tolist()``/``.item()`` copy to the host as they do on a GPU.

Why C++ sees ``meta:N`` and not ``cuda:N`` (the design first tried, and where it fails): on a CPU build,
autograd cannot hold a tensor whose C++ device is CUDA. Recording a CUDA tensor in the graph asks for a
CUDA device guard (``InputMetadata``: "PyTorch is not linked with support for cuda devices", which aborts
the process), and accumulating its gradient asks ``at::accelerator::getCurrentStream``, which raises
"Cannot access accelerator device when none is available." (``torch/csrc/autograd/input_buffer.cpp``).
``meta`` has a device guard on every build, runs its backward on the CPU queue of the calling thread, and
carries the index: C++ code that builds a new tensor from an input's options (``at::empty({0},
input.options())`` inside a composite op) asks for ``meta:N``, which the dispatch mode turns into a
simulated ``cuda:N`` tensor. So ``.device`` and the other Python-visible attributes are overridden here,
and C++ code that reads a device sees ``meta:N``; the checks PyTorch makes in C++ on devices
(convolution's input/weight types, the RNNs' "Input and hidden tensors are not at the same device") are
made again in Python with the CUDA texts (``_rules``).
"""

from __future__ import annotations

import weakref
from typing import Any

import torch
import torch._tensor_str as _tensor_str

from ..messages import Message, localised
from . import _state

__all__ = ["SimulatedStorage", "SimulatedTensor", "is_simulated", "pinned", "wrap"]

_META = [torch.device("meta", i) for i in range(64)]
_CUDA = [torch.device("cuda", i) for i in range(64)]


class SimulatedTensor(torch.Tensor):
    """A tensor on simulated GPU ``cuda:N`` whose values live in a CPU tensor (see the module docstring).

    Made by `devicekit.simulate` only; use `is_simulated` to tell one apart from a real tensor.
    """

    _dk_inner: torch.Tensor
    _dk_index: int

    @staticmethod
    def __new__(cls, inner: torch.Tensor, index: int) -> SimulatedTensor:
        if inner.layout != torch.strided:
            # autograd aborts the process (a C++ exception in a noexcept path) on a wrapper around a
            # sparse compressed tensor: refuse every sparse layout with a clear error instead
            exc = localised(
                NotImplementedError,
                Message(
                    f"devicekit.simulate: {inner.layout} tensors are not simulated; only dense (strided) "
                    "tensors can live on a simulated GPU.",
                    f"devicekit.simulate：不模拟 {inner.layout} 张量；"
                    "只有稠密（strided）张量能放在模拟 GPU 上。",
                ),
            )
            raise exc
        out = torch.Tensor._make_wrapper_subclass(
            cls,
            inner.size(),
            strides=inner.stride(),
            storage_offset=inner.storage_offset(),
            dtype=inner.dtype,
            layout=inner.layout,
            device=_META[index],
            requires_grad=False,
        )
        out._dk_inner = inner
        out._dk_index = index
        if inner.is_conj():  # lazy conjugation and negation are bits of the C++ tensor: mirror them
            torch._C._set_conj(out, True)
        if inner.is_neg():
            torch._C._set_neg(out, True)
        return out

    # Subclass-level __torch_function__ is off: the simulation's TorchFunctionMode sees every call.
    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        from ._dispatch import foreign, handle

        if foreign(types):
            return NotImplemented
        with torch._C.DisableTorchFunction():
            return handle(func, args, kwargs or {})

    # --- what Python code reads ------------------------------------------------------------------
    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return _CUDA[self._dk_index]

    @property
    def is_cuda(self) -> bool:  # type: ignore[override]
        return True

    @property
    def is_cpu(self) -> bool:  # type: ignore[override]
        return False

    @property
    def is_meta(self) -> bool:  # type: ignore[override]
        return False

    def get_device(self) -> int:  # type: ignore[override]
        return self._dk_index

    @property
    def data(self) -> torch.Tensor:  # type: ignore[override]
        return torch.Tensor.data.__get__(self)

    @data.setter
    def data(self, value: torch.Tensor) -> None:
        # PyTorch's setter swaps the C++ tensor (set_data); the CPU tensor that holds the values and the
        # device index must follow, or the simulated tensor would keep computing with the old ones
        torch.Tensor.data.__set__(self, value)
        if isinstance(value, SimulatedTensor):
            self._dk_inner = value._dk_inner
            self._dk_index = value._dk_index

    def data_ptr(self) -> int:  # type: ignore[override]
        # the CPU address stands in for the device address: equal for aliases, distinct otherwise
        return self._dk_inner.data_ptr()

    def type(self, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:  # type: ignore[override]
        if dtype is None:
            return _cuda_type_name(self.dtype)
        if isinstance(dtype, str):
            dtype = _dtype_of_type_name(dtype)
        elif not isinstance(dtype, torch.dtype):  # a tensor type such as torch.cuda.HalfTensor
            dtype = dtype.dtype
        return self.to(dtype=dtype, non_blocking=non_blocking)

    def untyped_storage(self) -> torch.UntypedStorage:  # type: ignore[override]
        # the storage of a wrapper subclass is a data-less meta:N storage; its Python object (one per
        # storage, kept by PyTorch) is given the class that says cuda:N, as x.untyped_storage().device and
        # x.storage().device (built from this) do on a GPU
        storage = torch.Tensor.untyped_storage(self)
        if type(storage) is torch.UntypedStorage:
            storage.__class__ = SimulatedStorage
        return storage

    def numpy(self, *, force: bool = False) -> Any:  # type: ignore[override]
        from ._rules import numpy_error

        if force:  # PyTorch's documented meaning: t.detach().cpu().resolve_conj().resolve_neg().numpy()
            return self.detach().cpu().resolve_conj().resolve_neg().numpy()
        exc = numpy_error(self.device)
        raise exc

    def tolist(self) -> Any:  # type: ignore[override]
        # through a copy to the host, as PyTorch's own tolist of a GPU tensor (tensor_to_list in
        # torch/csrc/utils/tensor_list.cpp: data.toBackend(Backend::CPU)), so a dispatch mode that watches
        # device-to-host copies (a lab's check, a profiler) sees this one as it would on a GPU
        return self.cpu().tolist()

    def record_stream(self, stream: Any) -> None:  # type: ignore[override]
        # the caching allocator's note that another stream uses this memory (devicekit's DeviceLoader makes
        # it for every prefetched batch): a simulated GPU's work has finished when it returns and its memory
        # is the CPU's, so there is nothing to keep alive; any other argument gets PyTorch's own error
        from ._streams import SimulatedStream

        if not isinstance(stream, SimulatedStream):
            torch.Tensor.record_stream(self, stream)

    def __format__(self, format_spec: str) -> str:
        if self.dim() == 0:
            return self.item().__format__(format_spec)
        return object.__format__(self, format_spec)

    def __repr__(self, *, tensor_contents: Any = None) -> str:  # type: ignore[override]
        inner = self._dk_inner.detach()
        if tensor_contents is None:
            tensor_contents = "[]" if inner.numel() == 0 else _tensor_str._tensor_str(inner, len("tensor("))
        cls = type(self)
        # _str_intern prefixes the class name and wraps non-plain parameters as Parameter(...); a CUDA
        # tensor prints as tensor(...), a CUDA parameter as "Parameter containing:\ntensor(...)"
        saved = cls.__name__
        cls.__name__ = "tensor"
        try:
            text = _tensor_str._str(self, tensor_contents=tensor_contents)
        finally:
            cls.__name__ = saved
        if getattr(self, "_is_param", False):
            if text.startswith("Parameter(") and text.endswith(")"):
                text = text[len("Parameter(") : -1]
            text = "Parameter containing:\n" + text
        return text

    def __reduce_ex__(self, protocol: int) -> Any:
        from ._serialization import reduce_simulated

        return reduce_simulated(self)

    def __deepcopy__(self, memo: dict) -> SimulatedTensor:
        if id(self) in memo:
            return memo[id(self)]
        if not self.is_leaf:
            return torch.Tensor.__deepcopy__(self, memo)  # PyTorch's own error for non-leaves
        with torch.no_grad():
            new = wrap(self._dk_inner.clone(), self._dk_index)
        new.requires_grad_(self.requires_grad)
        for key, value in self.__dict__.items():
            if key not in ("_dk_inner", "_dk_index"):
                setattr(new, key, value)
        if self.grad is not None:
            new.grad = self.grad.__deepcopy__(memo)
        memo[id(self)] = new
        return new

    # --- Module._apply keeps parameter identity through torch.utils.swap_tensors, as it does for
    # traceable wrapper subclasses (torch/nn/modules/module.py, _apply: p_should_use_swap_tensors) ---
    def __tensor_flatten__(self) -> tuple[list[str], Any]:
        return ["_dk_inner"], self._dk_index

    @staticmethod
    def __tensor_unflatten__(inner: dict, index: Any, outer_size: Any, outer_stride: Any) -> SimulatedTensor:
        return wrap(inner["_dk_inner"], index)


class SimulatedStorage(torch.UntypedStorage):
    """The storage object of a simulated tensor: C++ holds a data-less ``meta:N`` storage, Python code sees
    ``.device`` ``cuda:N`` (and ``.is_cuda``, which reads it). Its bytes live in the CPU tensor
    (``_dk_inner.untyped_storage()``); reading this storage's data is not simulated."""

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return _CUDA[torch.UntypedStorage.device.__get__(self).index or 0]


def _cuda_type_name(dtype: torch.dtype) -> str:
    """``torch.cuda.FloatTensor`` for float32: the CPU type name PyTorch gives, in the cuda namespace (the
    device is named: under a default device ``cuda`` a bare factory would make a simulated tensor)."""
    return torch.empty((), dtype=dtype, device="cpu").type().replace("torch.", "torch.cuda.", 1)


def _dtype_of_type_name(name: str) -> torch.dtype:
    return torch.empty((), dtype=torch.float32).type(name.replace("torch.cuda.", "torch.", 1)).dtype


def wrap(inner: torch.Tensor, index: int) -> SimulatedTensor:
    """A simulated ``cuda:index`` tensor holding ``inner`` (a CPU tensor that does not require grad)."""
    out = SimulatedTensor(inner, index)
    _state.track(inner.untyped_storage(), index)
    return out


def is_simulated(tensor: object) -> bool:
    """Whether ``tensor`` is a tensor on a simulated GPU (made inside `devicekit.simulate`)."""
    return isinstance(tensor, SimulatedTensor)


# Pinned host memory: the storages `pin_memory()` returned inside a block (tensor.is_pinned() answers
# True for them and their views). Held weakly: a storage leaves the set when Python frees it.
pinned: weakref.WeakSet = weakref.WeakSet()
