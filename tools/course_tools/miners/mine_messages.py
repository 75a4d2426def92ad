"""Mine PyTorch's own device-related error and warning texts from its wheels, with provenance.

    pip download torch==2.0.0 --no-deps -d /tmp/wheels        # the oldest wheel the registry serves
    python -m course_tools.miners.mine_messages /tmp/wheels/torch-2.0.0-*.whl torch-2.14.1-*.whl \
        nvidia_nccl_cu13-*.whl --installed --cache /tmp/mine-cache --out course_tools/data/torch_messages.json

Each source is a torch wheel (read as a zip, nothing is installed), another wheel whose shared libraries
torch loads (NCCL words some distributed errors itself), or, with ``--installed``, the torch of this
environment. Two kinds of text are collected:

- **Python**: every string a ``raise X(...)``, ``warnings.warn(...)``, ``assert ..., msg``,
  ``torch._check*(..., lambda: msg)``, ``TORCH_CHECK``-style or logger (``warning``, ``error``, ...) call in
  ``torch/**/*.py`` is given, read by AST (f-string holes become ``{}``), with the file and the enclosing
  function; compiler packages (``_dynamo``, ``_inductor``) only for their device guards;
- **C++**: printable strings of 16+ characters in the shared libraries (``libtorch_cpu.so``,
  ``libtorch_cuda.so``, ``libc10*.so``, ``libnccl.so.2``, ...), with the library's name. C++ format holes
  stay as they are.

Only texts that name a device concept are kept, and each gets one category (``CATEGORIES``, first match
wins), the family ``devicekit.explain`` should give it (``family_of``; ``None``: not claimed) and how likely
a learner meets it (``likely_of``: ``high``, ``medium``, ``low``); a text that matches no category, or
``NOISE``, is not a device message and is dropped. The same text found in several sources is one entry
listing every version that has it, so ``versions`` says which releases print it and ``where`` where each
keeps it. ``--cache`` keeps each source's device-like raw texts, so a second run with other filters takes
seconds; the output is sorted, so two runs write the same bytes. ``course_tools.miners.catalog_coverage``
runs the
list through ``devicekit.explain``.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import re
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

#: (category, pattern) in the order they are tried; the first that matches a text is its category.
CATEGORIES: tuple[tuple[str, str], ...] = (
    ("device-side-assert", r"device-side assert"),
    ("fork", r"re-initialize CUDA in forked subprocess"),
    ("out-of-memory", r"\bout of memory\b|OutOfMemory"),
    (
        "no-kernel-image",
        r"no kernel image is available|not compatible with the current PyTorch installation"
        r"|cuda capability sm_\w+ is not compatible|CUDA capability .{0,40}(?:too old|not supported)"
        r"|found GPU\w* .{0,60} which is of cuda capability",
    ),
    (
        "driver",
        r"driver (?:on your system )?is too old|NVIDIA driver on your system|insufficient for CUDA runtime"
        r"|driver initialization failed|CUDA driver initialization",
    ),
    ("cudnn-cublas", r"CUDNN_STATUS_\w+|CUBLAS_STATUS_\w+|cuDNN error|cuBLAS error"),
    ("illegal-memory", r"illegal memory access"),
    ("could-not-run", r"Could not run '.{0,80}' with arguments from the '"),
    (
        "device-string",
        r"[Ii]nvalid device string|device string: |Expected one of cpu, cuda|Device string must not be empty"
        r"|[Ii]nvalid device type|[Ii]nvalid device index|Device index must not be negative"
        r"|[Ii]nvalid device ordinal|device ordinal",
    ),
    (
        "load-map-location",
        r"deserialize object on (?:a )?CUDA device|map_location|deserializ\w+ .{0,40}device"
        r"|restore data location|restore_location",
    ),
    ("pin-memory", r"\bpin(?:ned)?[ _]memory\b|can be pinned|cannot pin\b|pin_memory"),
    ("optimizer", r"Tensors of the same index must be on the same device|capturable=True"),
    (
        "rnn",
        r"(?:Input|input) and (?:parameter|hidden) tensors are not at the same device"
        r"|tensors are not at the same device, found input tensor",
    ),
    ("meta", r"meta tensor|\bon the meta device\b|Cannot copy out of meta|\bMETA device\b|\bmeta device\b"),
    ("mps", r"\bMPS\b|\bmps\b"),
    (
        "data-parallel",
        r"DataParallel|device_ids\[0\]|\bdevice_ids\b|output_device"
        r"|\b(?:broadcast|scatter|gather|reduce_add)\w*\b.{0,80}\b(?:CUDA|GPU|device)",
    ),
    (
        "distributed",
        r"\bNCCL\b|\bnccl\b|\bgloo\b|\bGloo\b|process group|ProcessGroup|\bcollective\b"
        r"|backend type associated"
        r"|c10d|monitoredBarrier|[Ww]atchdog|(?:recv|send) operation|Duplicate GPU|rendezvous|torchrun"
        r"|terminated with (?:exit code|signal)|ProcessRaisedException|ProcessExitedException|TCPStore"
        r"|Multiple Ranks are using the same GPU|Tensors must be CUDA and dense",
    ),
    (
        "autocast",
        r"autocast|GradScaler|\bamp\b|does not support bfloat16|mat1 and mat2 must have the same dtype"
        r"|expected mat1 and mat2 to have the same dtype",
    ),
    ("generator", r"device type for generator|generator .{0,40}device|Generator .{0,20}device"),
    ("to-numpy", r"to numpy|\.numpy\(\)|convert .{0,30}device type tensor"),
    ("index", r"\bindices should be\b|\bindex\w* .{0,40}(?:on cpu|same device)|lengths' argument should be"),
    ("conv", r"Input type \(.{0,40}\) and weight type|and bias type .{0,40}should be the same"),
    (
        "no-accelerator",
        r"not compiled with (?:CUDA|cuda|MPS|XPU)|Torch not compiled with|not linked with support for"
        r"|No CUDA GPUs are available|torch\.cuda\.is_available\(\) is False|no accelerator|No accelerator"
        r"|Found no NVIDIA driver|not an accelerator|CUDA_HOME|ROCM_HOME|\bnvcc\b|CUDA extensions?\b"
        r"|detected CUDA version|compiled without (?:CUDA|GPU)|built without (?:CUDA|GPU)"
        r"|CUDA is not available"
        r"|no CUDA-capable device|CUDA unavailable",
    ),
    ("xpu", r"\bXPU\b|\bxpu\b"),
    (
        "other",
        r"CUDACachingAllocator|caching allocator|expandable_segments|PYTORCH_CUDA_ALLOC_CONF|[Cc]uDNN version"
        r"|cuDNN .{0,30}(?:version|compatib)|shared CUDA tensors|CUDA IPC|CUDA profiler|cudaHostRegister",
    ),
    (
        "same-device",
        r"same device|on the expected device|different from other tensors|Expected all tensors"
        r"|expected device \S+ but got device|to be on (?:the )?(?:same )?\w* ?device|is on \w+ but expected"
        r"|must be on the same device|on different devices|expected .{0,30} to be on \w+"
        r"|found two different devices",
    ),
)
_CATEGORY_RES = tuple((name, re.compile(pattern)) for name, pattern in CATEGORIES)
#: Categories that are about devices by their nature; every other text must also name a device concept.
_IMPLIED = {
    "device-side-assert",
    "fork",
    "out-of-memory",
    "no-kernel-image",
    "driver",
    "cudnn-cublas",
    "illegal-memory",
    "device-string",
    "meta",
    "pin-memory",
    "optimizer",
    "rnn",
    "conv",
    "other",
}
#: Distributed texts abound (NCCL internals); keep those about devices, backends, hangs and dead workers.
_DISTRIBUTED_DEVICE = re.compile(
    r"\b(?:device\w*|cuda|CUDA|cpu|CPU|GPUs?|gpu)\b|device_ids|backend type|built in|not compiled"
    r"|not available|[Tt]imed out|timeout|monitoredBarrier|[Ww]atchdog|terminated with|Duplicate GPU"
    r"|ProcessExitedException|ProcessRaisedException|failed to pass|same GPU"
)
_DEVICE_WORD = re.compile(
    r"\b(?:device\w*|cuda|CUDA|cpu|CPU|GPUs?|gpu|mps|MPS|meta|xpu|XPU|accelerator|nccl|NCCL"
    r"|gloo|Gloo|backend|host|nvcc)\b|device_ids|CUDA_HOME|ROCM_HOME"
)
_PRINTABLE = re.compile(rb"[\x20-\x7e]{16,600}")
_NOT_A_MESSAGE = re.compile(
    r"^[\w./:-]+$|^\s*(?:#|//|>>>|\.\.\.)|\.(?:cpp|h|cu|py)\b:\d|^[A-Z_]{6,}$"
    r"|INTERNAL ASSERT FAILED|\(Tensor\b|\bTensor\(a|ScalarType\?|Device\? device|-> *\(?Tensor|\bbool\?"
    r"|\((?:bool|int|str|float|Tensor|List\[\w+\]), optional\)|similar to numpy|^aten::|::\w+\("
    r"|Default(?:s)? (?:is|to)\b"
)
#: A compiled library holds docstrings and schemas too: keep only its strings that read like an error.
_ERRORISH = re.compile(
    r"[Ee]xpected|\bmust\b|\bshould\b|[Cc]annot|can't|\bnot\b|[Uu]nable|[Ff]ailed|[Ee]rror|[Ii]nvalid"
    r"|\bonly\b"
    r"|[Uu]nsupported|requires?\b|\bbut (?:got|found)|Attempting|\b[Nn]o\b|deprecated|[Ww]arning|[Tt]ried to"
)
#: Python packages whose messages are about compiler/export internals, not what a learner's code meets...
_INTERNAL_PY = re.compile(
    r"^torch/(?:_inductor|_export|export|onnx|jit|_dynamo|fx|ao|_higher_order_ops"
    r"|utils/(?:benchmark|hipify|_sympy)|_functorch|testing|_numpy)/"
)
#: Every file of torch.distributed is mined (issue 43: FSDP, DTensor, DeviceMesh, tensor parallelism,
#: checkpointing, RPC, pipelining, c10d). Its texts that name a device but none of the backend words of the
#: ``distributed`` category get the category ``distributed-api`` (see `category_of`); these words say that
#: a text is about a device and not about a mesh, a "tensor meta", a rendezvous "backend" or a host name.
_DIST_API_DEVICE = re.compile(
    r"\b(?:cuda|CUDA|cpu|CPU|GPUs?|gpu|accelerators?|xpu|XPU|device_id|device types?|device handle"
    r"|meta device)\b|\bdevices? (?:\{\}|%s|'\{\}')|\bon (?:a )?(?:single )?devices?\b|expected device"
    r"|moved to device|different devices?\b|remote device|target devices|source devices"
)
#: DeviceMesh is a mesh of ranks, not a device: its name is taken out before a text is read for device
#: words, so a mesh-shape check ("device_mesh has dims 2 but expected 1") is no device message while
#: "DeviceMesh only support cpu or cuda device type" is one.
_MESH = re.compile(r"[Dd]evice[ _]?[Mm]esh\w*|\bmesh\w*")
#: ... except torch.compile's device guards and GPU support checks, which a learner's code does meet.
_COMPILER_PY = re.compile(r"^torch/(?:_inductor|_dynamo)/")
_COMPILER_GUARD = re.compile(
    r"(?:GPU|GPUs|CUDA|device|devices|Triton|triton).{0,80}"
    r"(?:not supported|unsupported|requires?|capability|not available|found|too old|mismatch)"
    r"|(?:not supported|unsupported|requires?|capability|not available|too old).{0,80}"
    r"(?:GPU|GPUs|CUDA|device|devices|Triton)"
)
#: Python modules a learner calls directly: their checks are met more often than those of internals. Lesson
#: 11 teaches DeviceMesh, DTensor and FSDP2 (``fully_shard``, ``_composable/fsdp`` before 2.6), so their
#: public entry points count; DTensor's op strategies and redistribution internals do not.
_USER_FACING_PY = re.compile(
    r"^torch/(?:nn/|optim/|amp/|cuda/(?:__init__|amp/|memory|random)|serialization|utils/data/"
    r"|utils/cpp_extension|distributed/(?:distributed_c10d|elastic/|run|launch|fsdp/|_composable/fsdp/"
    r"|_composable/replicate|device_mesh|tensor/_api|tensor/parallel/|_tensor/api|_tensor/device_mesh"
    r"|checkpoint/state_dict)|multiprocessing/|_tensor\.py"
    r"|functional|random|accelerator/|mps/|xpu/__init__|backends/|__init__|storage|_utils|types|_C/)"
)
#: Library strings about internals a learner's code rarely reaches (CUDA graphs, IPC, symmetric memory ...).
_RARE = re.compile(
    r"(?i)graph capture|capturing|cuda graph|\bipc\b|nvshmem|symmetric|mempool|mem pool|stream capture"
    r"|internal|not yet|nyi\b|unimplemented|jiterator|nvrtc|cusparse|cusolver|cufft|magma"
    # allocator plumbing (issue 43): custom allocators, exact-address storages, NCCL's host registration
    r"|allocator registered|exact-address|_resize_with_addr_|cudahostregister"
)
#: Python checks of invariants that torch keeps about objects it builds itself (FSDP's device handle and its
#: reduce events): a learner's code does not reach them, whatever module they sit in.
_PY_INVARIANTS = re.compile(r"device handle|all_reduce_event to be set")
#: The messages a learner meets most (``likely``: ``"high"``): what the course teaches and the atlas leads
#: with, and what a learner's first GPU, AMP or multi-process script runs into.
COMMON = re.compile(
    r"Expected all tensors to be on the same device|on the expected device|Input type \("
    r"|indices should be either"
    r"|device type tensor to numpy|Attempting to deserialize object on|device type for generator"
    r"|Input and (?:parameter|hidden) tensors are not at the same device"
    r"|module must have its parameters and buffers"
    r"|device_ids and output_device arguments only work"
    r"|No backend type associated with device type"
    r"|device-side assert triggered|out of memory|no kernel image is available|not compiled with CUDA"
    r"|re-initialize CUDA in forked subprocess|only dense CPU tensors can be pinned"
    r"|Cannot copy out of meta tensor"
    r"|lengths' argument should be a 1D CPU int64 tensor|found no NVIDIA driver|No CUDA GPUs are available"
    r"|Torch not compiled with CUDA enabled|Invalid device string|Expected one of cpu, cuda"
    r"|mat1 and mat2 must have the same dtype|does not support bfloat16|Placeholder storage has not been"
    r"|found at least two devices|Timed out waiting|monitoredBarrier|Duplicate GPU detected"
    r"|[Ww]atchdog caught collective operation timeout|terminated with exit code|not an accelerator"
    r"|Multiple Ranks are using the same GPU|Tensors must be CUDA and dense"
    r"|CUDA driver initialization failed|invalid device ordinal"
)


#: Texts that pass the category filters but are not messages a learner's code meets, each for a reason:
#: docstrings of exception classes, comments compiled into a library, LLVM's own abort, allocator plug-in
#: hooks, CUDA-graph capture internals, gloo's *network*
#: devices (a network interface, not a torch device), symmetric-memory / NCCL-window internals, and
#: dispatch-key bookkeeping. Dropped before categorising; see course_tools/data/catalog_sources.md.
NOISE = re.compile(
    r"^Exception raised when|^LLVM ERROR|attachOutOfMemoryObserver|This may be benign, for example"
    r"|a RuntimeError; on CUDA it triggers|unsupported gloo device"
    r"|symmetric-window|NCCL window|WindowNCCL|TORCH_SYMMMEM|mem pool creation|Cannot map Backend"
    r"|NCCL device communicator|_autocast_to_reduced_precision|Expected 2-dimensional meta tensor"
    # NCCL's "MPS" is CUDA's Multi-Process Service, not Apple's GPU
    r"|MPS client|MPS server|MPS control daemon|CUDA Dynamic Parallelism"
    # torchelastic's timer, NCCL's RAS and monitoring internals, option docs and message fragments
    r"|Error reaping worker|Error running watchdog|^RAS collective|TORCH_NCCL_ENABLE_MONITORING \("
    r"|^watchdog\. Please"
    # the profiler: tracing tools and their options, not where tensors live
    r"|ProfilerActivity|XPU activities|^ch\. Because a dict|[Pp]rofiling|Profiler was requested"
    r"|profiler output modes"
    r"|Expected device_type to be CUDA, PrivateUse1"
    # build and dispatcher internals: a C comment, two backends in one build, registration bookkeeping
    r"|^/\*.*\*/$|Cannot have both (?:MPS|XPU|xpu)|torch_xla::|Level zero requires XPU"
    r"|NestedTensorImpl storage must"
    r"|dispatch_key=\{\} is not supported|For XPU MX/NVFP4|Device capability of \{\} unspecified"
    r"|Default group size only"
    r"|\{\} instantiation requires the presence of CUDA|NCCL cannot be captured in a graph"
    # issue 43, torch.distributed widened: a performance hint of the RPC optimizer, a teardown log of
    # torchelastic, an info line naming the backend chosen, a deprecated helper, a TCPStore lookup, the
    # teardown of spawn and symmetric-memory internals name a device or a backend but are about none
    r"|without TorchScript support, this might|without a functional optimizer, this might"
    r"|did not exit after .{0,40}abandoning|^Using TorchComms backend"
    r"|_get_pg_default_device` will be deprecated"
    r"|Failed to get timeout rank ID from TCPStore|ProcessExitedException during subprocess termination"
    r"|_low_contention_all_gather"
    # torch.autocast used as a decorator without a function: a usage error, not a device one
    r"|autocast\(\)\(func\) requires a callable"
)

#: Which catalog family each mined text should get from devicekit.explain: the category's family unless
#: an override (first match) says otherwise; ``None`` = the catalog does not claim the text (a limit of
#: an internal API, a performance hint, a usage check): tests/test_catalog_coverage.py asserts the family
#: of every claimed text and leaves the others out.
CATEGORY_FAMILY: dict[str, str | None] = {
    "device-side-assert": "device-side-assert",
    "fork": "cuda-fork",
    "out-of-memory": "out-of-memory",
    "no-kernel-image": "gpu-not-supported",
    "driver": "driver-too-old",
    "cudnn-cublas": "cudnn-cublas",
    "illegal-memory": "illegal-memory-access",
    "could-not-run": "op-not-implemented",
    "load-map-location": "load-map-location",
    "pin-memory": "pin-memory",
    "optimizer": "optimizer-state",
    "rnn": "rnn-device",
    "meta": "meta-no-data",
    "mps": "mps-unsupported",
    "data-parallel": "data-parallel",
    "distributed": "dist-backend",
    "autocast": "amp",
    "generator": "generator-device",
    "to-numpy": "to-numpy",
    "device-string": "device-string",
    "xpu": None,
    "other": None,
    "index": "index-device",
    "conv": "conv-input-weight",
    "no-accelerator": "no-accelerator",
    "same-device": "same-device",
    "distributed-api": None,
}
FAMILY_OVERRIDES: tuple[tuple[str, str | None], ...] = (
    # issue 43: FSDP, init_process_group's device_id, GPU-only features, building extensions, cuDNN versions,
    # sharing CUDA memory between processes
    (
        r"FSDP only supports single device modules|FSDP does not support modules with different device types"
        r"|To support a module with both CPU and GPU params|sync_module_states=True`, which"
        r"|Expects the parameter to already be moved to device|Inconsistent compute device and `device_id`"
        r"|which does not have an explicit index|sharding initialization run on CPU"
        r"|parameter CPU offloading enabled has parameters on"
        r"|materialized on CPU when enabling CPU offloading"
        r"|needs writeback in",
        "fsdp-device",
    ),
    (
        r"SyncBatchNorm expected input tensor to be on GPU|FSDP does not support CPU only execution"
        r"|Subgroups can only be created when CUDA is available|size profiler supports only CUDA device"
        r"|`set_devices` expect a list of CUDA devices",
        "gpu-only",
    ),
    (
        r"CUDA_HOME|ROCM_HOME|CUDA was not found on the system|detected CUDA version|No (?:CUDA"
        r"|ROCm) runtime is found|nvcc not found",
        "extension-build",
    ),
    (r"expandable_segments: memory mapping failed with OOM|\[_use_uvm\] FAILED", "out-of-memory"),
    (
        r"expandable_segments:True cannot be shared|expandable_segments allocation: IPC|IPC for CUDA tensors",
        "cuda-ipc",
    ),
    (r"CUDA IPC channel is not viable", "cuda-ipc"),
    (
        r"cuDNN version (?:incompatibility|mismatch)|[Ff]or cuDNN version below|cuDNN version (?:is )?below"
        r"|cuDNN version does not support|cuDNN cannot be used|cuDNN backend version|with cuDNN version \d",
        "cudnn-version",
    ),
    (
        r"Please use a device_id with index|device_id parameter must be an accelerator with an index"
        r"|barrier\(\): using the device under current context|local_rank \S+ exceeds available GPUs"
        r"|Expected device_id to be int or torch\.device",
        "ddp",
    ),
    (
        r"Backend mismatch for device|Device capability of \S+ unknown|Duplicate device type"
        r"|We detected accelerator|monitored_barrier requires a group|DeviceMesh only support cpu or cuda",
        "dist-backend",
    ),
    (r"device_id \S+ is out of range|does not match the current compilation's accelerator", "no-accelerator"),
    (r"tensor device is \S+ and expected device is", "same-device"),
    (r"If you suspect the watchdog", "dist-timeout"),
    (r"CUDA driver initialization failed|invalid device ordinal", "no-accelerator"),
    (r"User provided device_type of '\w+', but \w+ is not available", "amp"),
    (r"Corresponding input/output tensors to scatter/gather", "data-parallel"),
    (r"only GLOO supports monitored barrier", "dist-backend"),
    (
        r"monitoredBarrier|[Ww]atchdog caught collective|Timed out initializing process group"
        r"|Timed out waiting"
        r"|Some NCCL operations have failed or timed out|timeout watchdog detected operation error",
        "dist-timeout",
    ),
    (r"^process (?:%d|\{\}) terminated with", "dist-spawn"),
    (r"Duplicate GPU detected|Multiple Ranks are using the same GPU", "ddp"),
    (r"Cannot re-initialize XPU in forked", "cuda-fork"),
    (r"is not compatible with devices with SM <", "gpu-not-supported"),
    (r"pinned memory allocator without", "pin-memory"),
    (r"device type not an accelerator", "meta-not-accelerator"),
    (r"without ATen_\w+ library|No XPU are available|compiled without XPU support", "no-accelerator"),
    (
        r"supports tensors on a CPU, CUDA, XPU|only supports CPU, CUDA and XPU device type",
        "op-not-implemented",
    ),
    # not claimed: nvFuser (a compiler backend of 2.0), allocator internals, DTensor/checkpoint/FSDP
    # internals, the XPU device API's own argument checks
    (r"nvFuser", None),
    (
        r"expandable_segments|IPC|caching allocator|Exact-address allocation|cudaHostRegister",
        None,
    ),
    (
        r"CPU process group does not support alltoall|ProcessExitedException during subprocess"
        r"|Failed to get timeout rank ID|FakeTensor does not support meta|for meta device loading",
        None,
    ),
    (r"same device type for RNG forking|must be on the same device as hdl", None),
    (r"XPU call failed lazily|Expected a xpu (?:or cpu )?device|Invalid device, must be xpu", None),
    (r"Found no NVIDIA driver", "no-accelerator"),
    # the template without its two types cannot say device from dtype: the catalog's split rule reads
    # it as the dtype case (a real message always carries the types, see tests/test_explain.py)
    (r"^Input type \(\{\}\) and weight type \(\{\}\)", "dtype-mismatch"),
    (r"'lengths' argument should be|tensor_indices_or_sections to be on cpu", "cpu-required"),
    (
        r"without MPS backend|MPS backend is not available|MPS is not available|MPSDeviceAllocator requires",
        "no-accelerator",
    ),
    (r"without ATen_mps library", "no-accelerator"),
    (
        r"FlexAttention is only supported on|not supported on CPU/MPS|only supports CPU, XPU, CUDA",
        "op-not-implemented",
    ),
    (r"Cannot inplace into non-meta tensor with meta", "same-device"),
    (
        r"you did not set/select the default device|_multigpu will be deprecated|Expecting one tensor only",
        "ddp",
    ),
    (r"Function argument device_ids not supported|device_ids type should be List", "dist-backend"),
    # not claimed: internals of torch.compile / PrimTorch, limits of meta kernels, usage and perf hints
    (
        r"pin_memory without size|PrimTorch does not support pinned|not supported in refs"
        r"|_to_copy decomposition",
        None,
    ),
    (r"non-strided meta tensors|quantized nyi in meta|^meta tensor but got|skip_data context manager", None),
    (r"Cannot have both MPS and", None),
    (r"There is an imbalance between your GPUs", None),
    (r"step\(\) is running without|philox_cuda_state|safetensors file with \w+ map_location", None),
)
_FAMILY_OVERRIDES = tuple((re.compile(pattern), family) for pattern, family in FAMILY_OVERRIDES)


def family_of(text: str, category: str) -> str | None:
    """The catalog family devicekit.explain is expected to give ``text`` (``None``: not claimed)."""
    for pattern, family in _FAMILY_OVERRIDES:
        if pattern.search(text):
            return family
    return CATEGORY_FAMILY.get(category)


def category_of(text: str, compiled: bool = False, where: str = "") -> str | None:
    """The category of a device message, or ``None`` when the text is not one.

    ``compiled``: the text comes from a shared library, where only error-like strings count. ``where``:
    the file it was read from (``torch/...py:function``); compiler and export internals are skipped except
    torch.compile's device guards, and every text of ``torch/nn/parallel`` that names a device is about
    data parallelism. A DeviceMesh is read as what it is, a mesh of ranks (`_MESH` is taken out first), and
    a text of ``torch/distributed`` that names a device but matches no category is ``distributed-api``.
    """
    if _NOT_A_MESSAGE.search(text) or NOISE.search(text) or len(text.split()) < 3:
        return None
    if compiled and not _ERRORISH.search(text) and not COMMON.search(text):
        return None
    if _INTERNAL_PY.match(where) and not (_COMPILER_PY.match(where) and _COMPILER_GUARD.search(text)):
        return None
    probe = _MESH.sub("", text)
    if where.startswith("torch/nn/parallel/") and _DEVICE_WORD.search(probe):
        first = next((name for name, pattern in _CATEGORY_RES if pattern.search(probe)), "data-parallel")
        return first if first not in {"same-device", "distributed", "other"} else "data-parallel"
    for name, pattern in _CATEGORY_RES:
        if not pattern.search(probe):
            continue
        if name == "distributed":
            return name if _DISTRIBUTED_DEVICE.search(probe) else None
        return name if name in _IMPLIED or _DEVICE_WORD.search(probe) else None
    if where.startswith("torch/distributed/") and _DIST_API_DEVICE.search(probe):
        return "distributed-api"
    return None


#: Calls whose arguments are a message a learner reads: warnings, TORCH_CHECK-style checks, and the loggers
#: of torch.distributed / torch.multiprocessing (elastic and c10d report failures through logging).
_MESSAGE_CALLS = {
    "warn",
    "warn_once",
    "TORCH_CHECK",
    "warning",
    "warning_once",
    "error",
    "critical",
    "exception",
}


def likely_of(text: str, where: str) -> str:
    """How likely a learner meets a text: ``"high"`` (``COMMON``), ``"medium"`` (a check of an API a
    learner calls, or a library check about devices), ``"low"`` (internals, rare configurations)."""
    if COMMON.search(text):
        return "high"
    if where.startswith("torch/"):
        return "medium" if _USER_FACING_PY.match(where) and not _PY_INVARIANTS.search(text) else "low"
    return "low" if _RARE.search(text) else "medium"


def _template(node: ast.AST, names: dict[str, str] | None = None) -> str | None:
    """A string expression as text: constants, f-strings (holes as ``{}``), ``+`` and implicit joins.

    ``names``: strings assigned to plain names in the same module (``warn = \"\"\"...\"\"\"`` then
    ``warnings.warn(warn.format(...))``), so a message built that way is found too.
    """
    if isinstance(node, ast.Name) and names:
        return names.get(node.id)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            parts.append(value.value if isinstance(value, ast.Constant) else "{}")
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _template(node.left, names), _template(node.right, names)
        if left is not None or right is not None:
            return (left or "{}") + (right or "{}")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return _template(node.left, names)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return _template(node.func.value, names)
    if isinstance(node, ast.Lambda):
        return _template(node.body, names)
    return None


def _message_nodes(tree: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    """(string node, enclosing function) for every message-carrying call or raise in a module."""
    stack: list[tuple[ast.AST, str]] = [(tree, "<module>")]
    while stack:
        node, where = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            where = node.name if where == "<module>" else f"{where}.{node.name}"
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            for arg in node.exc.args[:1]:
                yield arg, where
        elif isinstance(node, ast.Assert) and node.msg is not None:
            yield node.msg, where
        elif isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in _MESSAGE_CALLS or name.startswith("_check"):
                for arg in node.args:
                    yield arg, where
                for keyword in node.keywords:
                    if keyword.arg in {"message", "msg"}:
                        yield keyword.value, where
        stack.extend((child, where) for child in ast.iter_child_nodes(node))


def python_messages(path: str, source: bytes) -> Iterator[tuple[str, str]]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return
    names = {
        node.targets[0].id: text
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, (ast.Constant, ast.JoinedStr))
        and (text := _template(node.value))
    }
    for node, where in _message_nodes(tree):
        text = _template(node, names)
        if text:
            yield " ".join(text.split()), f"{path}:{where}"


def library_messages(name: str, data: bytes) -> Iterator[tuple[str, str]]:
    for match in _PRINTABLE.finditer(data):
        yield match.group().decode("ascii").strip(), name


#: Before any category is tried, a text is kept (and cached) only when it names something device-like;
#: the categories below decide which of these are device messages.
_RAW_KEEP = re.compile(
    r"(?i)device|cuda|gpu|cpu|\bmps\b|xpu|\bmeta\b|nccl|gloo|backend|accelerator|\bpin|process|\brank"
    r"|map_location|generator|autocast|\bamp\b|dtype|bfloat16|time[d ]?out|barrier|watchdog|driver|memory"
    r"|cudnn|cublas|kernel|compiled|nvcc|cuda_home|rocm|\bhip\b|worker|exit ?code|terminated|collective"
    r"|replica|device_ids|storage|allocat|scatter|gather|broadcast"
)


def _version_of_wheel(path: Path) -> tuple[str, bool]:
    """(label, is torch): ``"2.0.0", True`` for a torch wheel, ``"nvidia_nccl_cu13 2.30.7", False`` else."""
    match = re.match(r"([A-Za-z0-9_.]+)-([^-]+)-", path.name)
    if not match or not path.name.endswith(".whl"):
        raise SystemExit(f"{path}: not a wheel name (<name>-<version>-...whl)")
    if match.group(1) == "torch":
        return match.group(2).split("+")[0], True
    return f"{match.group(1)} {match.group(2)}", False


def _wheel_sources(wheel: Path, is_torch: bool) -> Iterator[tuple[str, str]]:
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            name = info.filename
            if is_torch and name.startswith("torch/") and name.endswith(".py") and "/testing/" not in name:
                yield from python_messages(name, archive.read(info))
            elif (name.startswith("torch/lib/") or not is_torch) and ".so" in Path(name).name:
                yield from library_messages(Path(name).name, archive.read(info))


def _installed_sources() -> tuple[str, Iterator[tuple[str, str]]]:
    import torch

    root = Path(torch.__file__).resolve().parent

    def walk() -> Iterator[tuple[str, str]]:
        for path in sorted(root.rglob("*.py")):
            if "/testing/" not in str(path):
                yield from python_messages("torch/" + str(path.relative_to(root)), path.read_bytes())
        for path in sorted((root / "lib").glob("*.so*")):
            yield from library_messages(path.name, path.read_bytes())

    return torch.__version__.split("+")[0], walk()


def _harvest(label: str, items: Iterator[tuple[str, str]], cache: Path | None) -> list[tuple[str, str]]:
    """The device-like (text, where) pairs of one source, first occurrence of each text; cached by label."""
    path = cache / (re.sub(r"[^\w.]+", "_", label) + ".json") if cache else None
    if path is not None and path.is_file():
        return [tuple(pair) for pair in json.loads(path.read_text(encoding="utf-8"))]
    seen: dict[str, str] = {}
    for text, where in items:
        if text not in seen and _RAW_KEEP.search(text):
            seen[text] = where
    pairs = sorted(seen.items())
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(pairs), encoding="utf-8")
    return pairs


def mine(wheels: list[Path], installed: bool, cache: Path | None = None) -> tuple[list[dict], list[str]]:
    """(entries, labels of the non-torch libraries mined) for the given wheels and the installed torch."""
    found: dict[str, dict] = {}
    runs: list[tuple[str, bool, Iterator[tuple[str, str]]]] = []
    for wheel in wheels:
        label, is_torch = _version_of_wheel(wheel)
        runs.append((label, is_torch, _wheel_sources(wheel, is_torch)))
    if installed:
        version, items = _installed_sources()
        runs.append((version, True, items))
    libraries = sorted(label for label, is_torch, _ in runs if not is_torch)
    for label, is_torch, items in runs:
        print(f"mining {'torch ' if is_torch else ''}{label} ...", file=sys.stderr, flush=True)
        for text, where in _harvest(label if is_torch else label, items, cache):
            entry = _entry(text, where)
            if entry is None:
                continue
            entry = found.setdefault(text, entry)
            if label not in entry["versions"]:
                entry["versions"].append(label)
            entry["where"].setdefault(label, where)
    for entry in found.values():
        entry["versions"].sort(key=_version_key)
        entry["where"] = {v: entry["where"][v] for v in entry["versions"]}
    return sorted(found.values(), key=lambda e: (e["category"], e["text"])), libraries


def _version_key(label: str) -> tuple:
    parts = re.findall(r"\d+", label)
    return (not label[0].isdigit(), label.split(" ")[0] if not label[0].isdigit() else "", *map(int, parts))


def _entry(text: str, where: str) -> dict | None:
    """A fresh list entry for a text found at ``where``, or ``None`` when it is not a device message."""
    python = where.startswith("torch/")
    category = category_of(text, compiled=not python, where=where)
    if category is None:
        return None
    return {
        "text": text,
        "category": category,
        "likely": likely_of(text, where),
        "family": family_of(text, category),
        "versions": [],
        "where": {},
    }


def refilter(entries: list[dict]) -> list[dict]:
    """Entries already mined, categorised again by the current filters (dropped when none applies)."""
    kept = []
    for entry in entries:
        where = next(iter(entry["where"].values()))
        fresh = _entry(entry["text"], where)
        if fresh is None:
            continue
        kept.append(dict(entry, category=fresh["category"], likely=fresh["likely"], family=fresh["family"]))
    return sorted(kept, key=lambda e: (e["category"], e["text"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "wheels",
        nargs="*",
        type=Path,
        help="torch wheels, and other wheels whose shared libraries torch loads",
    )
    parser.add_argument("--installed", action="store_true", help="also mine this environment's torch")
    parser.add_argument("--out", type=Path, default=Path("course_tools/data/torch_messages.json"))
    parser.add_argument(
        "--cache",
        type=Path,
        help="folder for each source's device-like raw texts (a second run with other filters takes seconds)",
    )
    parser.add_argument("--harvest", action="store_true", help="only fill --cache, write nothing else")
    parser.add_argument(
        "--refilter",
        action="store_true",
        help="re-apply NOISE, CATEGORIES and the family map to the texts already in --out (seconds, not "
        "minutes; the same result as a full run as long as the filters only got narrower)",
    )
    args = parser.parse_args(argv)
    if args.refilter:
        data = json.loads(args.out.read_text(encoding="utf-8"))
        entries, libraries = refilter(data["messages"]), data.get("libraries", [])
    elif not args.wheels and not args.installed:
        parser.error("give at least one wheel, or --installed")
    elif args.harvest:
        if args.cache is None:
            parser.error("--harvest needs --cache")
        for wheel in args.wheels:
            label, is_torch = _version_of_wheel(wheel)
            print(f"harvesting {label} ...", file=sys.stderr, flush=True)
            _harvest(label, _wheel_sources(wheel, is_torch), args.cache)
        if args.installed:
            _harvest(*_installed_sources(), args.cache)
        return 0
    else:
        entries, libraries = mine(args.wheels, args.installed, args.cache)
    torch_versions = sorted(
        {v for e in entries for v in e["versions"] if v not in libraries}, key=_version_key
    )
    buffer = io.StringIO()
    json.dump({"sources": torch_versions, "libraries": libraries, "messages": entries}, buffer, indent=1)
    args.out.write_text(buffer.getvalue() + "\n", encoding="utf-8")
    counts: dict[str, int] = {}
    for entry in entries:
        counts[entry["category"]] = counts.get(entry["category"], 0) + 1
    print(
        f"{len(entries)} messages -> {args.out}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
