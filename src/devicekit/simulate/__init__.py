"""``devicekit.simulate()``: a simulated CUDA GPU on a CPU-only machine, with real values.

Inside ``with devicekit.simulate(gpus=2, profile="A100"):`` this machine behaves, for everything about
devices, like one with two A100s, and every value is computed for real on the CPU::

    import torch, devicekit

    with devicekit.simulate():
        model = torch.nn.Linear(4, 2).cuda()          # parameters on cuda:0, same Parameter objects
        x = torch.ones(3, 4)                          # forgot .cuda()
        model(x)   # RuntimeError: Expected all tensors to be on the same device, but got mat1 is on cpu,
                   # different from other tensors on cuda:0 (when checking argument in method
                   # wrapper_CUDA_addmm)

Each error is the exception PyTorch raises on CUDA (its type, its message verbatim); a note beside the
message (``BaseException.add_note``) says, in the reader's language, that the GPU was simulated
(`raised_by_simulation` tells such an error apart). Public API: `simulate`, `is_simulated`,
`raised_by_simulation`, `PROFILES`; ``devicekit.simulate(...)`` and ``devicekit.is_simulated(...)`` work
without importing this package first.

How it works (modules of this package):

* ``tensor``: `SimulatedTensor`, a wrapper subclass holding a CPU tensor; Python sees ``cuda:N``, C++ sees
  ``meta:N`` (why: ``tensor.py``'s docstring: autograd cannot hold a C++ CUDA tensor on a CPU build).
* ``_function``: a `TorchFunctionMode` turns ``device="cuda"`` into ``meta:N`` before C++ sees it (so the
  CPU build's one-way lazy CUDA initialisation never runs), answers ``pin_memory``/``is_pinned``, checks
  the RNNs' arguments and applies CUDA's autocast policy (``_amp``).
* ``_dispatch``: a `TorchDispatchMode` (and the subclass's ``__torch_dispatch__``) applies CUDA's device
  rules to every ATen op (``_ops``, ``_rules``: TensorIterator's check with its one 0-dim CPU scalar, the
  generated argument checks named ``wrapper_CUDA_<op>`` as PyTorch's code generator names them, index
  tensors, generators, ``lengths``) and runs the op on the CPU tensors. It shares its device model with
  `devicekit.strict_devices` (`devicekit.device_rules`).
* ``_defaults``: a default device or CUDA tensor type set inside a block, and its undoing at the end.
* ``_distributed``: ``init_process_group("nccl")`` on gloo, NCCL's rule that every tensor is on a GPU.
* ``_patches``, ``_serialization``: what is replaced while a block is open (``torch.cuda``,
  ``torch.accelerator``, ``torch.Generator``, ``threading.Thread.start``, ``torch.save``/``torch.load``
  hooks), all restored when the outermost block closes, also by an exception.

Covered: ``torch.cuda.is_available/device_count/current_device/set_device/device(...)/get_device_name/
get_device_capability/get_device_properties/synchronize/is_bf16_supported/memory_allocated/
max_memory_allocated/mem_get_info/manual_seed``, the ``torch.accelerator`` API, ``Tensor.cuda``/``.to``/
``.cpu``, ``Module.cuda``/``.to`` keeping parameter identity (an optimizer built before the move still
updates the model), ``device="cuda"`` in factories, ``torch.device("cuda")`` meaning the current device,
``torch.set_default_device("cuda")``, ``with torch.device("cuda"):`` and the deprecated
``torch.set_default_tensor_type(torch.cuda.FloatTensor)`` (``_defaults``; each undone when the block
closes),
``pin_memory()``/``is_pinned()``/``non_blocking=True``, the legacy types ``torch.cuda.FloatTensor`` and kin
(``_legacy``), ``torch.save``/``torch.load`` with ``cuda:N``
locations and every kind of ``map_location``, ``torch.autocast("cuda")`` and ``torch.amp.GradScaler("cuda")``,
``CUDA_VISIBLE_DEVICES``, threads started inside the block (DataLoader's pin-memory thread), DataLoader
workers started by fork (they make CPU tensors; CUDA inside them raises CUDA's "Cannot re-initialize CUDA
in forked subprocess").

What it cannot simulate (it runs CPU kernels on CPU memory; only the device bookkeeping is CUDA's):

* timing: nothing about speed, occupancy or overlap is measured; a simulated op costs a CPU op plus
  tens of microseconds of Python (``benchmarks/bench_simulate.py``);
* asynchrony: every op and copy completes before it returns. ``non_blocking=True`` copies, streams and
  events are synchronous, so a race between a non-blocking device-to-host copy and its use (reading a
  pinned buffer before ``synchronize()``) gives the right value here and garbage on a GPU;
* kernel numerics: CPU kernels, not CUDA's: no TF32 (``torch.backends.cuda.matmul.allow_tf32`` changes
  nothing), no cuDNN algorithm choice or nondeterminism, different reduction orders, float16 and bfloat16
  arithmetic as the CPU does it, random numbers from CPU generators (``torch.cuda.manual_seed`` seeds
  per-device CPU generators: reproducible, never the GPU's Philox streams; ``torch.cuda.get_rng_state``
  has CUDA's 16-byte layout, seed and offset, but the offset moves by 4 per read after draws, not by what
  each CUDA kernel takes); ops without a ``generator`` argument (dropout)
  draw from the CPU's default generator;
* memory: a factory (``torch.empty(..., device="cuda")``) or a copy to a simulated GPU that does not
  fit the profile's ``total_memory`` raises CUDA's ``torch.OutOfMemoryError`` (with this process's
  numbers); the results of other ops are never checked, so a model whose activations would not fit on the
  GPU still runs. ``memory_allocated`` counts live storages rounded to 512 bytes; ``memory_reserved``
  equals it (no caching allocator, no fragmentation, no CUDA context);
* sparse layouts (COO, CSR, ...): moving one to a simulated GPU raises a clear ``NotImplementedError``;
* CUDA graphs, custom CUDA/Triton kernels, ``torch.compile`` (Dynamo cannot trace the simulated tensors:
  inside a block it raises a clear bilingual ``RuntimeError``, ``_compile``), real streams and events
  (``torch.cuda.Stream``/``Event`` are synchronous stand-ins, ``_streams``), NCCL across processes
  (``torch.distributed`` with ``nccl`` runs in one process, on gloo: ``_distributed``), IPC of CUDA tensors
  between processes, spawned DataLoader workers (a spawned process starts without the simulation);
* device checks made inside C++ composite functions: they see ``meta:N``. The ones PyTorch makes about
  devices in the ops the course meets are made again in Python with CUDA's text (convolution's
  input/weight types, the RNNs' hidden state and parameters); an op with no CUDA kernel of its own is
  re-run op by op on a device mismatch so its inner ops raise; any other C++ check would name
  ``meta:N`` where CUDA names ``cuda:N``;
* autocast: see ``_amp`` (the policy is applied to the functions Python code calls, not inside C++
  composites, with the exceptions listed there, the RNNs among them; no cast cache);
* code that runs where no function mode is in force names a CUDA device to C++ directly: autograd's
  engine runs custom ``Function.backward`` code and hooks without the thread's function modes (it keeps
  the dispatch modes), and a Python-level torch function (``F.multi_head_attention_forward``) runs its
  body without them. The result is still right (the dispatch mode turns ``cuda:N`` into a simulated
  tensor), but autocast is not applied there and PyTorch's one-way lazy CUDA initialisation runs; on
  Linux ``_lazyinit`` sets its flag back when the block closes, elsewhere ``torch.zeros(1,
  device="cuda")`` after the block then raises ``NotImplementedError`` ("Could not run ... 'CUDA'
  backend") instead of ``AssertionError: Torch not compiled with CUDA enabled``;
* threads started before the block, and tensors kept after it: a simulated tensor used after its block
  still computes, but ``torch.cuda`` no longer answers for it.
"""

from __future__ import annotations

import sys
import types

from ._context import simulate
from ._rules import raised_by_simulation
from .profiles import PROFILES, GpuProfile
from .tensor import SimulatedTensor, is_simulated

__all__ = ["PROFILES", "GpuProfile", "SimulatedTensor", "is_simulated", "raised_by_simulation", "simulate"]


class _CallablePackage(types.ModuleType):
    """This package, callable: ``devicekit.simulate(gpus=2)`` is ``devicekit.simulate.simulate(gpus=2)``
    (importing the submodule binds ``devicekit.simulate`` to the package, so the package must answer)."""

    def __call__(self, gpus: int = 1, profile: str = "H200", force: bool = False) -> simulate:
        return simulate(gpus=gpus, profile=profile, force=force)


sys.modules[__name__].__class__ = _CallablePackage
