"""The errors a CUDA GPU raises about devices, with PyTorch's own texts, and the note that says so.

Each function returns the exception PyTorch raises on CUDA (its type and its message, verbatim); the
caller raises it. The message is never changed: that the GPU was simulated is said beside it, in a note
(``BaseException.add_note``) in the reader's language, so ``str(err)`` and ``except RuntimeError`` behave
exactly as on a GPU.

Where each text comes from:

* recorded on an H200 (``results/cuda-messages.json``, by case): the two "Expected all tensors to be on
  the same device" forms (``add-cpu-first``, ``cat``), ``indices should be either on cpu ...``
  (``index-cpu-tensor-cuda-indices``), the generator message (``generator-cpu-for-cuda``), ``cannot pin``
  (``pin-cuda-tensor``), ``.numpy()`` (``to-numpy``), ``'lengths' argument ...``
  (``pack-padded-cuda-lengths``), convolution's ``Input type ... should be the same``
  (``conv-cuda-input-cpu-weight``), the RNNs' ``Input and hidden tensors ...`` (``lstm-cpu-hidden``);
* PyTorch's C++ sources, whose format strings are also in the installed ``libtorch_cpu.so`` (a test reads
  them there): masked_fill's "expected self and mask to be on the same device, but got mask on " and
  "masked_fill_: Expected inputs to be on same device" (``masked_fill__cuda`` in
  ``aten/src/ATen/native/cuda/Indexing.cu``, read from PyTorch's main branch as stored by the course's
  search tool; the CPU build holds the same strings in the quantized kernels of
  ``TensorAdvancedIndexing.cpp``), "Trying to pass too many CPU scalars to non-CPU kernel!"
  (``TensorIterator.cpp``), "No CUDA GPUs are available" (``c10/cuda/CUDAFunctions.cpp``,
  ``device_count_ensure_non_zero``), the bias form of convolution's check (``Convolution.cpp``,
  ``check_input_same_type_as_parameters``),
  ``variable.set_data(tensor)`` (``torch/csrc/autograd/python_variable.cpp``);
* recorded, with this process's numbers (they differ from run to run, the wording does not): CUDA's
  out-of-memory message (``oom``; ``c10/cuda/CUDACachingAllocator.cpp``, ``format_size``);
* not recorded and not in a CPU build: "CUDA error: invalid device ordinal" (``c10/cuda/CUDAException.cpp``
  and ``CUDAMiscFunctions.cpp``, read from PyTorch's main branch as stored by the course's search tool, not
  at the v2.13.0 tag): its first two lines are certain, the lines after them vary between releases.
"""

from __future__ import annotations

import re

import torch

from ..messages import Message

__all__ = [
    "argument_error",
    "generic_error",
    "note",
    "raised_by_simulation",
]

_NOTE = Message(
    "devicekit.simulate: raised by a simulated GPU (its tensors live on the CPU); PyTorch raises this same "
    "error on a real GPU.",
    "devicekit.simulate：这是模拟 GPU 报的错（它的张量其实在 CPU 上）；"
    "在真实 GPU 上，PyTorch 报的是同一个错误。",
)


def raised_by_simulation(exc: BaseException) -> bool:
    """Whether ``exc`` was raised by a simulated GPU (it carries the simulation's note, in either
    language): for tools built on `simulate` (a dry-run command, a pytest plugin) that report device
    errors differently from the script's own."""
    notes = getattr(exc, "__notes__", ())
    return any(n in (_NOTE.en, _NOTE.zh, f"{_NOTE.en}\n{_NOTE.zh}") for n in notes)


def note(exc: BaseException) -> BaseException:
    """``exc`` with the bilingual note that the GPU was simulated (added once)."""
    text = str(_NOTE)
    if text not in getattr(exc, "__notes__", ()):
        exc.add_note(text)
    return exc


def _error(kind: type[BaseException], text: str) -> BaseException:
    return note(kind(text))


def generic_error(common: str, other: str) -> BaseException:
    """TensorIterator's check (``compute_types``): two devices among the operands."""
    return _error(
        RuntimeError,
        "Expected all tensors to be on the same device, but found at least two devices, "
        f"{common} and {other}!",
    )


def argument_error(arg: str, device: str, common: str, wrapper: str) -> BaseException:
    """The generated device check of a CUDA kernel wrapper (``check_and_update_common_device``)."""
    return _error(
        RuntimeError,
        f"Expected all tensors to be on the same device, but got {arg} is on {device}, different from other "
        f"tensors on {common} (when checking argument in method {wrapper})",
    )


def mask_device_error(mask: str, self_device: str) -> BaseException:
    """``masked_fill__cuda`` (``aten/src/ATen/native/cuda/Indexing.cu``): the mask is not on ``self``'s
    device, a 0-dim CPU mask included (the kernel compares the devices itself; it is no TensorIterator)."""
    return _error(
        RuntimeError,
        f"expected self and mask to be on the same device, but got mask on {mask} and self on {self_device}",
    )


def masked_fill_cpu_self_error() -> BaseException:
    """``masked_fill__cuda``'s Tensor-value overload, reached through a value on a GPU with ``self`` on
    the CPU."""
    return _error(RuntimeError, "masked_fill_: Expected inputs to be on same device")


def no_backend_error(device_type: str) -> BaseException:
    """A collective of an NCCL process group on a tensor of another device type (``ProcessGroup::getBackend``
    in ``torch/csrc/distributed/c10d/ProcessGroup.hpp``; recorded case ``nccl-cpu-tensor``)."""
    return _error(RuntimeError, f"No backend type associated with device type {device_type}")


def too_many_scalars_error() -> BaseException:
    """TensorIterator: more than one 0-dim CPU tensor for a kernel on another device."""
    return _error(RuntimeError, "Trying to pass too many CPU scalars to non-CPU kernel!")


def indices_error(indexed: str) -> BaseException:
    """Advanced indexing with indices on a GPU the indexed tensor is not on."""
    return _error(
        RuntimeError,
        f"indices should be either on cpu or on the same device as the indexed tensor ({indexed})",
    )


def generator_error(expected: str, found: str) -> BaseException:
    """``at::check_generator``: a generator of another device type than the kernel's."""
    return _error(RuntimeError, f"Expected a '{expected}' device type for generator but found '{found}'")


def pin_error(type_name: str) -> BaseException:
    """``pin_memory()`` of a tensor that is not a dense CPU tensor."""
    return _error(RuntimeError, f"cannot pin '{type_name}' only dense CPU tensors can be pinned")


def numpy_error(device: torch.device) -> BaseException:
    """``.numpy()`` of a GPU tensor."""
    return _error(
        TypeError,
        f"can't convert {device} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host "
        "memory first.",
    )


_SCALAR_NAMES = {
    torch.float32: "Float",
    torch.float64: "Double",
    torch.float16: "Half",
    torch.bfloat16: "BFloat16",
    torch.int64: "Long",
    torch.int32: "Int",
    torch.int16: "Short",
    torch.int8: "Char",
    torch.uint8: "Byte",
    torch.bool: "Bool",
}


def lengths_error(lengths: torch.Tensor) -> BaseException:
    """``pack_padded_sequence``'s ``lengths`` must be a 1-D CPU int64 tensor."""
    kind = _SCALAR_NAMES.get(lengths.dtype, str(lengths.dtype).replace("torch.", ""))
    return _error(
        RuntimeError,
        "'lengths' argument should be a 1D CPU int64 tensor, but got "
        f"{lengths.dim()}D {lengths.device} {kind} tensor",
    )


def conv_type_error(input_type: str, other: str, other_type: str) -> BaseException:
    """Convolution's ``check_input_same_type_as_parameters`` (``other`` is ``weight`` or ``bias``)."""
    return _error(
        RuntimeError, f"Input type ({input_type}) and {other} type ({other_type}) should be the same"
    )


def rnn_error(what: str, input_device: str, other_device: str) -> BaseException:
    """The RNNs' ``check_attributes``: the input and a hidden state or a parameter on different devices."""
    return _error(
        RuntimeError,
        f"Input and {what} tensors are not at the same device, found input tensor at {input_device} "
        f"and {what} tensor at {other_device}",
    )


def invalid_ordinal_error() -> BaseException:
    """A device index past the GPUs this process sees (``cudaSetDevice`` fails)."""
    text = (
        "CUDA error: invalid device ordinal\n"
        "GPU device may be out of range, do you have enough GPUs?\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
        "might be incorrect.\n"
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
    )
    return _error(torch.AcceleratorError, text)


def no_gpus_error() -> BaseException:
    """CUDA asked for while ``CUDA_VISIBLE_DEVICES`` hides every GPU."""
    return _error(RuntimeError, "No CUDA GPUs are available")


def rng_state_error(problem: str) -> BaseException:
    """``set_state`` of a CUDA generator given a state it refuses
    (``aten/src/ATen/cuda/CUDAGeneratorImpl.cpp`` and ``detail::check_rng_state``): ``problem`` is
    ``"type"``, ``"contiguous"``, ``"size"`` or ``"offset"``."""
    if problem == "type":
        return _error(TypeError, "RNG state must be a torch.ByteTensor")
    text = {
        "contiguous": "RNG state must be contiguous",
        "size": "RNG state is wrong size",
        "offset": "offset must be a multiple of 4",
    }[problem]
    return _error(RuntimeError, text)


def set_data_error() -> BaseException:
    """``param.data = t`` with ``t`` on another device type."""
    return _error(
        RuntimeError,
        "Attempted to call `variable.set_data(tensor)`, but `variable` and `tensor` have incompatible tensor "
        "type.",
    )


def invalid_device_id_error() -> BaseException:
    """``torch.cuda.get_device_properties`` (and the name/capability getters) of a device past the count
    (``torch/cuda/__init__.py``)."""
    return _error(AssertionError, "Invalid device id")


def bad_fork_error() -> BaseException:
    """CUDA used in a process forked after CUDA started (``torch/cuda/__init__.py``, ``_lazy_init``)."""
    return _error(
        RuntimeError,
        "Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use the "
        "'spawn' start method",
    )


def format_size(size: int) -> str:
    """``format_size`` of ``c10/cuda/CUDACachingAllocator.cpp``: bytes, KiB, MiB or GiB with 2 decimals."""
    if size <= 1024:
        return f"{size} bytes"
    if size <= 1048576:
        return f"{size / 1024.0:.2f} KiB"
    if size <= 1073741824:
        return f"{size / 1048576.0:.2f} MiB"
    return f"{size / 1073741824.0:.2f} GiB"


def oom_error(size: int, index: int, total: int, allocated: int) -> BaseException:
    """CUDA's caching allocator when an allocation does not fit (a simulated GPU has no other memory user:
    what the process holds is what PyTorch allocated, and nothing is reserved but unallocated)."""
    free = total - allocated
    return _error(
        torch.OutOfMemoryError,
        f"CUDA out of memory. Tried to allocate {format_size(size)}. GPU {index} has a total capacity of "
        f"{format_size(total)} of which {format_size(free)} is free. Including non-PyTorch memory, this "
        f"process has {format_size(allocated)} memory in use. Of the allocated memory "
        f"{format_size(allocated)} is allocated by PyTorch, and {format_size(0)} is reserved by PyTorch but "
        "unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for "
        "Memory Management  (https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-"
        "with-pytorch-cuda-alloc-conf)",
    )


_META_N = re.compile(r"\bmeta:(\d+)")
_META_TYPE = re.compile(r"\bmeta DeviceType\b")  # checkDeviceType's words (aten/src/ATen/TensorUtils.cpp)


def with_cuda_names(exc: BaseException) -> BaseException | None:
    """A C++ check that read a simulated tensor's C++ device wrote ``meta:N``; CUDA writes ``cuda:N``.

    Returns the same kind of exception with ``cuda:N`` in place of ``meta:N`` (and the note), or `None`
    when the text names no indexed meta device (a real meta device has no index) or the exception cannot
    be rebuilt from its text."""
    text = str(exc.args[0]) if len(exc.args) == 1 else ""
    if not text or not (_META_N.search(text) or _META_TYPE.search(text)):
        return None
    try:
        renamed = type(exc)(_META_TYPE.sub("cuda DeviceType", _META_N.sub(r"cuda:\1", text)))
    except Exception:  # noqa: BLE001 - an exception type that takes other arguments: leave it
        return None
    return note(renamed)
