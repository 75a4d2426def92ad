"""The attributes a `simulate` block replaces, and how they are put back.

Everything is replaced when the outermost block opens and restored when it closes (also by an exception);
nested blocks only change the `_state.Machine` the replacements read. Restoring puts back the very objects
that were there (a module attribute that did not exist is deleted again), so ``torch.cuda.is_available is
original`` holds after the block.

Replaced: ``torch.cuda`` (availability, count, current device, ``set_device`` and the ``torch.cuda.device``
context, names and properties from the profile, ``synchronize``, ``is_bf16_supported``, memory counters,
the per-device default generators so ``torch.cuda.manual_seed`` works), ``torch.accelerator``'s C entry
points (so PyTorch's own ``torch.accelerator`` functions answer for CUDA), ``torch.backends.cudnn``'s
availability, ``torch.Generator`` (``torch.Generator(device="cuda")``), ``threading.Thread.start`` (a thread
started inside the block runs inside it), ``torch.compile`` (it raises, `_compile`), the legacy types
``torch.cuda.FloatTensor`` and kin (`_legacy`), and the serialization hooks (`_serialization`).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

import torch

from . import _compile, _lazyinit, _legacy, _rules, _state, _streams
from .profiles import GpuProfile

__all__ = ["Patches", "SimulatedDeviceProperties", "SimulatedGenerator"]

_MISSING = object()
_FLAG = object()
_ORIGINAL_GENERATOR = torch.Generator
_ORIGINAL_STREAM = torch.Stream
_ORIGINAL_EVENT = torch.Event


class Patches:
    """A set of attribute replacements applied together and undone together, in reverse order."""

    def __init__(self) -> None:
        self._saved: list[tuple[Any, str, Any]] = []

    def set(self, owner: Any, name: str, value: Any) -> None:
        """Replace ``owner.name`` with ``value`` (remember what was there)."""
        before = (
            owner.__dict__.get(name, _MISSING) if isinstance(owner, type) else getattr(owner, name, _MISSING)
        )
        self._saved.append((owner, name, before))
        setattr(owner, name, value)

    def flag(self, getter: Callable[[], Any], setter: Callable[[Any], Any], value: Any) -> None:
        """Set a C++ flag through its setter (remember the getter's value to put back)."""
        self._saved.append((setter, _FLAG, getter()))
        setter(value)

    def undo(self) -> None:
        """Put back every replaced attribute, last replaced first."""
        while self._saved:
            owner, name, before = self._saved.pop()
            if name is _FLAG:
                owner(before)
            elif before is _MISSING:
                try:
                    delattr(owner, name)
                except AttributeError:
                    pass
            else:
                setattr(owner, name, before)


class SimulatedDeviceProperties:
    """What ``torch.cuda.get_device_properties`` returns for a simulated GPU (the profile's figures)."""

    def __init__(self, profile: GpuProfile, index: int) -> None:
        self.name = profile.name
        self.major = profile.major
        self.minor = profile.minor
        self.total_memory = profile.total_memory
        self.multi_processor_count = profile.multi_processor_count
        self.is_integrated = 0
        self.is_multi_gpu_board = 0
        self.warp_size = 32
        self.uuid = f"00000000-0000-0000-0000-{index:012d}"

    def __repr__(self) -> str:
        return (
            f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
            f"total_memory={self.total_memory // (1024 * 1024)}MB, "
            f"multi_processor_count={self.multi_processor_count}, uuid={self.uuid})"
        )


_U64 = 1 << 64


class SimulatedGenerator(_ORIGINAL_GENERATOR):
    """A generator of simulated GPU ``cuda:N``: a CPU generator underneath, ``.device`` says ``cuda:N``.

    Its state reads as a CUDA generator's: 16 bytes, the seed and the Philox offset
    (``aten/src/ATen/cuda/CUDAGeneratorImpl.cpp``, ``get_state``/``set_state``), so code that saves and
    restores ``torch.cuda.get_rng_state()`` (checkpoints, ``fork_rng``, DTensor's random ops, which move
    the offset themselves) works as on a GPU. The values drawn are the CPU generator's: seeded with the
    seed when the offset is 0 (``torch.cuda.manual_seed(s)`` draws what ``torch.manual_seed(s)`` does on
    the CPU), and with a mix of both otherwise. Draws since the last read move the offset by 4 when the
    state is read next, and the CPU generator is seeded again for it, so a state read and set back later
    draws the same values again.
    """

    _dk_index = 0
    _dk_seed = 67280421310721  # a CUDA generator's default seed (c10::detail::default_rng_seed_val)
    _dk_offset = 0
    _dk_synced: torch.Tensor | None = None

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return torch.device("cuda", self._dk_index)

    def _dk_reseed(self) -> None:
        mix = self._dk_seed if not self._dk_offset else (self._dk_seed * 0x9E3779B97F4A7C15 + self._dk_offset)
        _ORIGINAL_GENERATOR.manual_seed(self, mix % _U64)
        self._dk_synced = _ORIGINAL_GENERATOR.get_state(self)

    def _dk_sync(self) -> None:
        if self._dk_synced is None or not torch.equal(_ORIGINAL_GENERATOR.get_state(self), self._dk_synced):
            if self._dk_synced is not None:
                self._dk_offset += 4
            self._dk_reseed()

    def manual_seed(self, seed: int) -> SimulatedGenerator:  # type: ignore[override]
        self._dk_seed, self._dk_offset = int(seed) % _U64, 0
        self._dk_reseed()
        return self

    def seed(self) -> int:  # type: ignore[override]
        self.manual_seed(_ORIGINAL_GENERATOR.seed(self))
        return self._dk_seed

    def initial_seed(self) -> int:  # type: ignore[override]
        return self._dk_seed

    def get_offset(self) -> int:  # type: ignore[override]
        self._dk_sync()
        return self._dk_offset

    def set_offset(self, offset: int) -> SimulatedGenerator:  # type: ignore[override]
        self._dk_sync()
        self._dk_offset = _philox_offset(int(offset))
        self._dk_reseed()
        return self

    def get_state(self) -> torch.Tensor:  # type: ignore[override]
        self._dk_sync()
        offset = self._dk_offset - _U64 if self._dk_offset >= 1 << 63 else self._dk_offset
        seed = self._dk_seed - _U64 if self._dk_seed >= 1 << 63 else self._dk_seed
        return torch.tensor([seed, offset], dtype=torch.int64).view(torch.uint8)

    def set_state(self, new_state: torch.Tensor) -> SimulatedGenerator:  # type: ignore[override]
        if not isinstance(new_state, torch.Tensor):
            return _ORIGINAL_GENERATOR.set_state(self, new_state)  # PyTorch's own TypeError
        problem = None
        if (
            new_state.layout != torch.strided
            or new_state.device.type != "cpu"
            or new_state.dtype != torch.uint8
        ):
            problem = "type"
        elif not new_state.is_contiguous():
            problem = "contiguous"
        elif new_state.numel() not in (8, 16):
            problem = "size"
        if problem is not None:
            exc = _rules.rng_state_error(problem)
            raise exc
        words = new_state.view(torch.int64).tolist()
        self._dk_seed, self._dk_offset = words[0] % _U64, 0  # the seed first, as C++ sets it
        self._dk_reseed()
        self._dk_offset = _philox_offset(words[1] % _U64 if len(words) > 1 else 0)
        self._dk_reseed()
        return self

    def cpu_state(self) -> torch.Tensor:
        """The CPU generator's own state underneath (what the simulated ops draw from)."""
        return _ORIGINAL_GENERATOR.get_state(self)

    def set_cpu_state(self, state: torch.Tensor) -> None:
        """Set the CPU generator underneath (the draws of an op run with it)."""
        _ORIGINAL_GENERATOR.set_state(self, state)


def _philox_offset(offset: int) -> int:
    """``set_philox_offset_per_thread``'s check (``CUDAGeneratorImpl.cpp``)."""
    if offset % 4:
        exc = _rules.rng_state_error("offset")
        raise exc
    return offset


def _new_generator(index: int) -> SimulatedGenerator:
    generator = SimulatedGenerator()
    generator._dk_index = index
    generator.manual_seed(SimulatedGenerator._dk_seed)
    return generator


def _kind_of(*originals: type) -> type:
    """A metaclass for a factory that replaces a torch class while a block is open: ``isinstance`` and
    ``issubclass`` against the factory keep their meaning (they ask ``originals``)."""

    class _Kind(type):
        def __instancecheck__(cls, obj: object) -> bool:
            return isinstance(obj, originals)

        def __subclasscheck__(cls, sub: type) -> bool:
            return issubclass(sub, originals)

    return _Kind


class GeneratorFactory(metaclass=_kind_of(_ORIGINAL_GENERATOR)):
    """``torch.Generator`` inside a block: ``device="cuda"`` gives the simulated GPU's kind of generator."""

    def __new__(cls, device: Any = "cpu") -> Any:  # type: ignore[misc]
        from ._function import resolve

        target = resolve(device)
        if isinstance(target, torch.device) and target.type == "meta" and target.index is not None:
            return _new_generator(target.index)
        return _ORIGINAL_GENERATOR(device=device)


def _on_simulated_gpu(device: Any) -> bool:
    """Whether a device argument of ``torch.Stream``/``torch.Event`` means a simulated GPU: none or an
    index (the current accelerator, CUDA here), or a CUDA device."""
    return device is None or isinstance(device, int) or torch.device(device).type == "cuda"


class StreamFactory(metaclass=_kind_of(_ORIGINAL_STREAM, _streams.SimulatedStream)):
    """``torch.Stream`` inside a block: on the accelerator (no device, an index, ``"cuda"``) a simulated
    GPU's stream, as a CUDA build gives a CUDA stream (``DataParallel`` scatters a CPU batch on these)."""

    def __new__(cls, device: Any = None, *, priority: int = 0) -> Any:  # type: ignore[misc]
        if _on_simulated_gpu(device):
            return _streams.new_stream(device, priority)
        return _ORIGINAL_STREAM(device, priority=priority)


class EventFactory(metaclass=_kind_of(_ORIGINAL_EVENT, _streams.SimulatedEvent)):
    """``torch.Event`` inside a block: on the accelerator, a simulated GPU's event."""

    def __new__(  # type: ignore[misc]
        cls,
        device: Any = None,
        *,
        enable_timing: bool = False,
        blocking: bool = False,
        interprocess: bool = False,
    ) -> Any:
        if _on_simulated_gpu(device):
            return _streams.SimulatedEvent(enable_timing, blocking, interprocess)
        return _ORIGINAL_EVENT(
            device, enable_timing=enable_timing, blocking=blocking, interprocess=interprocess
        )


_BASE_DEVICE = torch._C.TensorBase.device
_BASE_IS_META = torch._C.TensorBase.is_meta
_BASE_IS_CUDA = torch._C.TensorBase.is_cuda


def wrapper_properties() -> dict[str, property]:
    """``device``, ``is_cuda`` and ``is_meta`` for ``torch.Tensor`` while a block is open: another wrapper
    subclass around a simulated tensor (a DTensor, whose C++ constructor takes its device from its local
    tensor) has C++ device ``meta:N``, which reads here as ``cuda:N``, as the simulation's own tensors do
    (``tensor.py``): FSDP2 asks ``param.device.type == "meta"`` to tell parameters not yet given storage,
    and a printed DTensor shows ``cuda:0``. A real meta tensor has no index and stays ``meta``; a plain
    tensor answers from C++ as before."""

    def device(self: torch.Tensor) -> torch.device:
        place = _BASE_DEVICE.__get__(self)
        if place.type == "meta" and place.index is not None:
            return torch.device("cuda", place.index)
        return place

    def is_cuda(self: torch.Tensor) -> bool:
        return _BASE_IS_CUDA.__get__(self) or device(self).type == "cuda"

    def is_meta(self: torch.Tensor) -> bool:
        return _BASE_IS_META.__get__(self) and device(self).type == "meta"

    return {"device": property(device), "is_cuda": property(is_cuda), "is_meta": property(is_meta)}


def _machine() -> _state.Machine:
    machine = _state.active()
    if machine is None:  # a replaced function called after its block: answer as the CPU build does
        exc = _rules.no_gpus_error()
        raise exc
    return machine


def _index(device: Any, optional: bool = True) -> int:
    """A CUDA device argument as an index (PyTorch's own parser), validated against the simulated count."""
    from torch.cuda._utils import _get_device_index

    if device is None and optional:
        return _state.current_index()
    index = _get_device_index(device, optional=optional)
    return index


def _checked(index: int) -> int:
    machine = _machine()
    if machine.count == 0:
        exc = _rules.no_gpus_error()
        raise exc
    if index >= machine.count:
        exc = _rules.invalid_ordinal_error()
        raise exc
    return index


class _Zeros(dict):
    """``torch.cuda.memory_stats()`` of a simulated GPU: a counter it does not keep reads 0."""

    def __missing__(self, key: str) -> int:
        return 0


def cuda_functions(generators: tuple) -> dict[str, Callable[..., Any]]:
    """The replacements for ``torch.cuda`` (name -> function)."""

    def is_available() -> bool:
        machine = _state.active()
        return machine is not None and machine.count > 0

    def device_count() -> int:
        machine = _state.active()
        return 0 if machine is None else machine.count

    def current_device() -> int:
        _checked(0)
        return _state.current_index()

    def set_device(device: Any) -> None:
        index = _index(device, optional=False)
        if index >= 0:
            _state.set_current_index(_checked(index))

    def exchange_device(index: int) -> int:
        if index < 0:
            return -1
        return _state.set_current_index(_checked(index))

    def maybe_exchange_device(index: int) -> int:
        if index < 0:
            return -1
        return _state.set_current_index(index)

    def get_device_properties(device: Any = None) -> SimulatedDeviceProperties:
        index = _index(device)
        machine = _machine()
        if index < 0 or index >= machine.count:
            exc = _rules.invalid_device_id_error()
            raise exc
        return SimulatedDeviceProperties(machine.profile, index)

    def get_device_name(device: Any = None) -> str:
        return get_device_properties(device).name

    def get_device_capability(device: Any = None) -> tuple[int, int]:
        props = get_device_properties(device)
        return props.major, props.minor

    def synchronize(device: Any = None) -> None:
        _checked(max(_index(device), 0))

    def is_bf16_supported(including_emulation: bool = True) -> bool:
        # torch/cuda/__init__.py: capability >= 8.0 is native; with emulation a bf16 tensor can be made
        if not is_available():
            return False
        return including_emulation or _machine().profile.native_bf16

    def memory_allocated(device: Any = None) -> int:
        return _machine().allocated.get(_checked(max(_index(device), 0)), 0)

    def max_memory_allocated(device: Any = None) -> int:
        return _machine().peak.get(_checked(max(_index(device), 0)), 0)

    def reset_peak_memory_stats(device: Any = None) -> None:
        machine = _machine()
        index = _checked(max(_index(device), 0))
        machine.peak[index] = machine.allocated.get(index, 0)

    def memory_stats(device: Any = None) -> dict[str, int]:
        # the counters a simulated GPU keeps; the caching allocator's other counters read 0
        current, peak = memory_allocated(device), max_memory_allocated(device)
        stats = _Zeros({"num_alloc_retries": 0, "num_ooms": 0, "num_sync_all_streams": 0})
        for kind in ("allocated_bytes", "reserved_bytes", "active_bytes", "requested_bytes"):
            stats[f"{kind}.all.current"] = current
            stats[f"{kind}.all.peak"] = peak
        return stats

    def mem_get_info(device: Any = None) -> tuple[int, int]:
        machine = _machine()
        total = machine.profile.total_memory
        return total - memory_allocated(device), total

    def nothing(*args: Any, **kwargs: Any) -> None:
        return None

    return {
        "is_available": is_available,
        "device_count": device_count,
        "current_device": current_device,
        "set_device": set_device,
        "_exchange_device": exchange_device,
        "_maybe_exchange_device": maybe_exchange_device,
        "get_device_properties": get_device_properties,
        "get_device_name": get_device_name,
        "get_device_capability": get_device_capability,
        "synchronize": synchronize,
        "is_bf16_supported": is_bf16_supported,
        "memory_allocated": memory_allocated,
        "max_memory_allocated": max_memory_allocated,
        "memory_reserved": memory_allocated,
        "max_memory_reserved": max_memory_allocated,
        "reset_peak_memory_stats": reset_peak_memory_stats,
        "reset_max_memory_allocated": reset_peak_memory_stats,
        "mem_get_info": mem_get_info,
        "memory_stats": memory_stats,
        "empty_cache": nothing,
        "_lazy_init": _lazyinit.called,
        "init": nothing,
        "is_initialized": lambda: True,
        "_is_in_bad_fork": lambda: _state.forked(),
        "default_generators": generators,
        "current_stream": _streams.current_stream,
        "default_stream": _streams.current_stream,
        "Stream": _streams.new_stream,
        "Event": _streams.SimulatedEvent,
        "stream": _streams.stream,
        "set_stream": lambda stream: _state.set_current_index(stream.device_index),
        "is_current_stream_capturing": lambda: False,
    }


def accelerator_functions() -> dict[str, Callable[..., Any]]:
    """The replacements for ``torch._C``'s accelerator entry points that ``torch.accelerator`` calls."""

    def get_accelerator() -> torch.device:
        return torch.device("cuda")

    def get_index() -> int:
        return _state.current_index()

    def set_index(index: int) -> None:
        if index >= 0:
            _state.set_current_index(_checked(index))

    def exchange(index: int) -> int:
        if index < 0:
            return -1
        return _state.set_current_index(_checked(index))

    def maybe_exchange(index: int) -> int:
        if index < 0:
            return -1
        return _state.set_current_index(index)

    def synchronize(index: int) -> None:
        if index >= 0:
            _checked(index)

    return {
        "_accelerator_getAccelerator": get_accelerator,
        "_get_accelerator": lambda check=False: torch.device("cuda"),  # FSDP2's default mesh asks this one
        "_accelerator_getDeviceIndex": get_index,
        "_accelerator_setDeviceIndex": set_index,
        "_accelerator_exchangeDevice": exchange,
        "_accelerator_maybeExchangeDevice": maybe_exchange,
        "_accelerator_synchronizeDevice": synchronize,
        "_accelerator_getStream": _streams.current_stream,
        "_accelerator_setStream": lambda stream: _state.set_current_index(stream.device_index),
    }


def generators(machine: _state.Machine) -> tuple[SimulatedGenerator, ...]:
    """``torch.cuda.default_generators`` of ``machine``: one generator per visible GPU."""
    return tuple(_new_generator(i) for i in range(machine.count))


def comm_functions() -> dict[str, Callable[..., Any]]:
    """``torch._C``'s multi-GPU copies that ``torch.nn.parallel.comm`` (DataParallel) calls, done as
    copies between simulated GPUs (``torch/csrc/cuda/comm.cpp`` does them with CUDA copies or NCCL)."""

    def cuda(index: int) -> torch.device:
        # meta:N is what the dispatch mode reads as cuda:N; asking C++ for cuda:N directly (these run in
        # autograd's backward, where no function mode rewrites it) would start PyTorch's CUDA init
        return torch.device("meta", index)

    def broadcast(tensor: torch.Tensor, devices: Any) -> list[torch.Tensor]:
        return [tensor if tensor.get_device() == d else tensor.to(cuda(d)) for d in devices]

    def broadcast_coalesced(tensors: Any, devices: Any, buffer_size: int) -> list[list[torch.Tensor]]:
        return [[t if t.get_device() == d else t.to(cuda(d)) for t in tensors] for d in devices]

    def scatter(tensor: torch.Tensor, devices: Any, chunk_sizes: Any, dim: int, streams: Any) -> list:
        if chunk_sizes:
            chunks = tensor.split(list(chunk_sizes), dim)
        else:
            chunks = tensor.chunk(len(devices), dim)
        return [chunk.contiguous().to(cuda(d)) for chunk, d in zip(chunks, devices, strict=False)]

    def gather(tensors: Any, dim: int, destination: Any) -> torch.Tensor:
        target = (
            torch.device("cpu")
            if destination == -1
            else cuda(_state.current_index() if destination is None else destination)
        )
        return torch.cat([t.to(target) for t in tensors], dim)

    return {
        "_broadcast": broadcast,
        "_broadcast_coalesced": broadcast_coalesced,
        "_scatter": scatter,
        "_gather": gather,
    }


def _module_apply(original: Callable[..., Any]) -> Callable[..., Any]:
    """``Module._apply`` that keeps a simulated parameter's identity when it moves back to the CPU.

    On a GPU, ``model.cpu()`` keeps every ``Parameter`` object (CPU and CUDA tensors have compatible
    shallow-copy types, so ``_apply`` assigns ``param.data``: torch/nn/modules/module.py, v2.13.0,
    ``compute_should_use_set_data``), and an optimizer built before the move still updates the model. A
    simulated parameter is a wrapper subclass whose type is not compatible with a CPU tensor's, so
    ``_apply`` would make new Parameter objects. For a module holding simulated parameters, ``_apply``
    runs with PyTorch's own swap path instead (``torch.__future__.set_swap_module_params_on_conversion``,
    the path a move to the GPU takes here already): the objects stay, their contents change.
    """

    def _apply(self: torch.nn.Module, fn: Callable[..., Any], recurse: bool = True) -> Any:
        from .tensor import is_simulated

        get_swap = torch.__future__.get_swap_module_params_on_conversion
        if get_swap() or not any(is_simulated(p) for p in self._parameters.values()):
            return original(self, fn, recurse)
        torch.__future__.set_swap_module_params_on_conversion(True)
        try:
            return original(self, fn, recurse)
        finally:
            torch.__future__.set_swap_module_params_on_conversion(False)

    return _apply


def install(patches: Patches, machine: _state.Machine, thread_start: Callable[..., Any]) -> None:
    """Apply every replacement for ``machine`` to ``patches``."""
    submodules = [m for n, m in list(sys.modules.items()) if n.startswith("torch.cuda.") and m is not None]
    for name, value in cuda_functions(generators(machine)).items():
        original = getattr(torch.cuda, name, _MISSING)
        patches.set(torch.cuda, name, value)
        for module in submodules:  # torch.cuda.random imported device_count itself, and so on
            if original is not _MISSING and getattr(module, name, _MISSING) is original:
                patches.set(module, name, value)
    for name, value in {**accelerator_functions(), **comm_functions()}.items():
        patches.set(torch._C, name, value)
    # torch.backends.cudnn is a PropModule wrapping the real module, whose globals is_acceptable() reads
    cudnn = getattr(torch.backends.cudnn, "m", torch.backends.cudnn)
    patches.set(cudnn, "is_available", lambda: True)
    patches.set(cudnn, "_init", lambda: True)
    limit = [10]  # cuDNN's default benchmark limit (torch.backends.cudnn.benchmark_limit)
    patches.set(torch._C, "_cuda_get_cudnn_benchmark_limit", lambda: limit[0])
    patches.set(torch._C, "_cuda_set_cudnn_benchmark_limit", lambda value: limit.__setitem__(0, value))
    patches.set(torch, "Generator", GeneratorFactory)
    patches.set(torch, "Stream", StreamFactory)
    for name, value in wrapper_properties().items():
        patches.set(torch.Tensor, name, value)
    patches.set(torch, "Event", EventFactory)
    patches.set(torch, "compile", _compile.refuse_compile)  # a clear error, not a crash inside Dynamo
    for name, legacy in _legacy.legacy_types().items():  # torch.cuda.FloatTensor and kin
        patches.set(torch.cuda, name, legacy)
    # DataParallel's backward asks whether NCCL can reduce its gradients; a CUDA build has NCCL, a CPU
    # build warns "PyTorch is not compiled with NCCL support": the simulated GPUs reduce by copies
    patches.set(torch.cuda.nccl, "is_available", lambda tensors: False)
    # torch.tensor(data) made by C++ for a simulated tensor (x[[1, 2]] turns the list into an index
    # tensor on x's device) is built with every mode excluded and then moved: to meta:N it would lose its
    # values. With this flag PyTorch builds it on the CPU and moves it after the modes are back
    # (torch/csrc/utils/tensor_new.cpp, internal_new_from_data: only_lift_cpu_tensors), so the dispatch
    # mode makes it a simulated tensor with its values
    patches.flag(torch._C._only_lift_cpu_tensors, torch._C._set_only_lift_cpu_tensors, True)
    patches.set(threading.Thread, "start", thread_start)
    patches.set(torch.nn.Module, "_apply", _module_apply(torch.nn.Module._apply))
