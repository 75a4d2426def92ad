"""Self-checks for lab 11 (sharded training: DeviceMesh, DTensor, FSDP2, distributed checkpoints).

All three checks are two-part (`judged`). Exercise 1 hands the learner models built on ``meta`` (a stack of
linear layers and a batch norm, and `sharded_workers.TinyBlock`: embedding, attention, layer norm, a parameter
and a non-persistent buffer of its own, with ``init_weights()``) and a target device (the CPU, and ``cuda:1``,
real or simulated: `machine.probe_devices`, so an answer that drops the index lands on ``cuda:0`` and shows);
uninitialised memory reads NaN during the call (``fill_uninitialized_memory``), and what comes back is
compared with the same model built on that device.
Exercise 2 loads a full checkpoint into a model sharded with FSDP2 on a one-process CPU mesh in the kernel,
and also tells the learner's function it is a rank of a GPU job: there DCP's loading and a ``torch.load``
onto a GPU are recorded, not run (a ``torch.load`` onto the CPU runs), so the check sees where each rank
would put the whole checkpoint, also when it moves a CPU read to its GPU (the devices of the state dict it
hands to DCP, and the most bytes its GPU held at once). Exercise 3 starts two
real processes (``sharded_workers.fsdp_train``: FSDP2 over gloo, or NCCL where there is a GPU per rank) that
save a distributed checkpoint, once per process (forked from the kernel where that is safe:
`ranks.start_ranks`), then lets the learner resume it into unsharded models in the kernel, on ``cuda:1``
(real or simulated; a fresh Adam with another learning rate, and one that has stepped), and compares digests
of the parameters and of Adam's state, and the learning rate, with those the ranks reported at save time.

Exercise 2's sharded model and both exercises' worker processes stay on the CPU with gloo on a machine
without GPUs: DTensor and FSDP2 do not run on simulated tensors, spawned processes start without the
simulation (`devicekit.simulate`'s docstring), and forked ones leave it first.
"""

from __future__ import annotations

import contextlib
import tempfile
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn

from devicekit.distributed import DistInfo
from devicekit_labs import Fail, failed_call, judged, observe
from devicekit_labs.machine import probe_devices
from devicekit_labs.ranks import start_ranks

LAB = "11-sharded"

# --- Exercise 1: materialise a model built on meta ------------------------------------------------------


def build_model() -> nn.Module:
    """The first model exercise 1 plants: linear layers and a batch norm (parameters and buffers)."""
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))


def _planted(kind: str) -> nn.Module:
    from devicekit_labs.sharded_workers import TinyBlock

    return build_model() if kind == "stack" else TinyBlock()


#: The models exercise 1 plants: the stack has no init_weights (each module's reset_parameters() is its
#: initialisation), the block has one (attention, a parameter and a buffer of its own need it).
PLANTED = ("stack", "block")

#: What `Module.to()` of a meta model raises: the bug lesson 11 teaches.
NO_DATA = "Cannot copy out of meta tensor"


def _tensors(model: nn.Module) -> dict[str, torch.Tensor]:
    return {**dict(model.named_parameters()), **dict(model.named_buffers())}


def _owner(model: nn.Module, key: str) -> nn.Module:
    """The module that holds the tensor named ``key`` itself (``attn.in_proj_weight``: the attention)."""
    path = key.rsplit(".", 1)[0] if "." in key else ""
    return model.get_submodule(path)


def _materialise_cases() -> list[str]:
    """The target devices: the CPU and the second GPU (``cuda:1``, so a dropped index shows)."""
    return ["cpu", str(probe_devices()[-1])]


@contextlib.contextmanager
def _nan_for_uninitialised() -> Iterator[None]:
    """Memory that nobody sets reads NaN (integers: their largest value) instead of whatever it held.

    `torch.utils.deterministic.fill_uninitialized_memory` does this while deterministic algorithms are on
    (``warn_only``: an operation without a deterministic version only warns). Restored afterwards.
    """
    enabled = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    fill = torch.utils.deterministic.fill_uninitialized_memory
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(enabled, warn_only=warn_only)
        torch.utils.deterministic.fill_uninitialized_memory = fill


def _never_set(t: torch.Tensor) -> bool:
    """Still the value `_nan_for_uninitialised` fills new memory with (somewhere, for a float tensor)."""
    t = t.detach().cpu()
    if t.is_floating_point():
        return bool(t.isnan().any())
    return t.numel() > 0 and bool((t == torch.iinfo(t.dtype).max).all())


def _value_rule(t: torch.Tensor, refs: list[torch.Tensor]) -> str:
    """How the check compares ``t`` with the model built on the device from seeds 0 and 1.

    ``same``: the same values from both seeds (ones, zeros, a computed buffer): ``t`` must equal them.
    ``drawn``: random values; ``t`` must be drawn too, from a comparable range: not one value repeated, and
    no larger than 1.5 times the largest the two references drew (a different order of initialisation draws
    other numbers from the same distributions, which is right).
    """
    a, b = (r.detach().cpu() for r in refs)
    if torch.equal(a, b):
        return "ok" if torch.equal(t, a) else "wrong"
    flat = t.reshape(-1).double()
    bound = 1.5 * max(a.abs().max().item(), b.abs().max().item())
    if flat.numel() > 1 and bool((flat == flat[0]).all()):
        return "wrong"
    return "ok" if flat.abs().max().item() <= bound else "wrong"


@judged(
    LAB,
    "materialize",
    1,
    "give a model built on meta storage and values on a device",
    "在指定设备上为 meta 上构建的模型分配存储并初始化",
    target="materialize",
)
def probe_materialize(materialize: Callable[[nn.Module, torch.device], nn.Module]) -> dict:
    cases = []
    for kind in PLANTED:
        for name in _materialise_cases():
            device = torch.device(name)
            references = []
            for seed in (0, 1):
                torch.manual_seed(seed)
                with torch.device(device):
                    references.append(_tensors(_planted(kind)))  # kept alive: not memory to_empty reuses
            with torch.device("meta"):
                handed = _planted(kind)
            torch.manual_seed(0)
            # Called with meta as the default device: a second whole model built inside lands on meta too,
            # so building one and copying it in (what meta init is there to avoid) fails like .to() does.
            with warnings.catch_warnings(), torch.device("meta"), _nan_for_uninitialised():
                warnings.simplefilter("ignore")
                got = observe(materialize, handed, device)
            entry: dict[str, Any] = {"model": kind, "device": name}
            if "error" in got:
                entry["error"] = got["error"]
                cases.append(entry)
                continue
            value = got["value"]
            entry["returned"] = type(value).__name__
            entry["same_model"] = value is handed
            tensors = _tensors(handed)
            entry["devices"] = {key: str(t.device) for key, t in tensors.items()}
            has_values = {key: t.device.type != "meta" for key, t in tensors.items()}  # left on meta: none
            entry["never_set"] = {
                key: {
                    "owner": type(_owner(handed, key)).__name__,
                    "owner_is_model": _owner(handed, key) is handed,
                    "owner_resets": hasattr(_owner(handed, key), "reset_parameters"),
                }
                for key, t in tensors.items()
                if has_values[key] and _never_set(t)
            }
            entry["values"] = {
                key: _value_rule(t.detach().cpu(), [r[key] for r in references])
                for key, t in tensors.items()
                if has_values[key] and key not in entry["never_set"] and t.shape == references[0][key].shape
            }
            cases.append(entry)
            del references
    return {"cases": cases}


@probe_materialize.judge
def judge_materialize(seen: dict) -> None:
    for case in seen["cases"]:
        device = case["device"]
        label = f"{case['model']}, device {device}"
        label_zh = f"{'线性层加 BatchNorm' if case['model'] == 'stack' else 'TinyBlock'}，设备 {device}"
        error = case.get("error")
        if error is not None and NO_DATA in error["message"]:
            first = error["message"].splitlines()[0]
            first = first.split("!")[0] + "!" if "!" in first else first[:120]
            raise Fail(
                f"({label}) your code raised {error['type']} ({first}): a model built on meta "
                "(and, in this check, one built inside your function) has shapes but no data, so .to() has "
                "nothing to copy. Give the model you were given storage with model.to_empty(device=device), "
                "then initialise it in place.",
                f"（{label_zh}）你的代码抛出了 {error['type']}（{first}）：在 meta 上构建的模型"
                "（在这个自测里，也包括在你的函数里新建的模型）只有形状、没有数据，.to() 没有东西可复制。"
                "请用 model.to_empty(device=device) 为传入的模型分配存储，再原地初始化。",
            )
        failed_call(
            case, f"({label}) materialize(model, device)", f"（{label_zh}）materialize(model, device)"
        )
        if not case["same_model"]:
            raise Fail(
                f"({label}) return the model you were given, after giving it storage (got a "
                f"{case['returned']}).",
                f"（{label_zh}）分配存储之后，请返回传入的那个模型本身（你返回的是 {case['returned']}）。",
            )
        moved = [key for key, where in case["devices"].items() if where != device]
        if moved and all(case["devices"][key] == "meta" for key in moved):
            raise Fail(
                f"({label}) every parameter and buffer is still on meta: nothing was materialised. "
                "Call model.to_empty(device=device) first, then set the values.",
                f"（{label_zh}）所有参数和缓冲区都还在 meta 上：什么都没有分配。"
                "请先调用 model.to_empty(device=device)，再为各个数值赋值。",
            )
        if moved and device.startswith("cuda:") and case["devices"][moved[0]].startswith("cuda"):
            key = moved[0]
            raise Fail(
                f'({label}) {key!r} is on {case["devices"][key]}, not on {device}: "cuda" (or device.type) '
                "means the current GPU, cuda:0 unless you changed it, not the GPU you were given. Pass the "
                "device itself: model.to_empty(device=device).",
                f'（{label_zh}）{key!r} 在 {case["devices"][key]} 上，不在 {device} 上："cuda"（或 '
                "device.type）指的是当前 GPU（没改过就是 cuda:0），不是传进来的那块 GPU。"
                "请直接传设备本身：model.to_empty(device=device)。",
            )
        if moved:
            key = moved[0]
            raise Fail(
                f"({label}) {key!r} is on {case['devices'][key]}, not on {device}: give every parameter "
                "and buffer storage on the device you were given, not on a fixed one.",
                f"（{label_zh}）{key!r} 在 {case['devices'][key]} 上，不在 {device} 上："
                "每个参数和缓冲区都要在传入的设备上分配存储，不要写死设备。",
            )
        _judge_never_set(case, label, label_zh)
        wrong = [key for key, rule in case["values"].items() if rule != "ok"]
        if wrong:
            key = wrong[0]
            raise Fail(
                f"({label}) {key!r} does not hold the values the model's own initialisation gives: "
                "to_empty allocates memory without setting it, and the values must then come from the "
                "model's init_weights() where it has one, else from each module's reset_parameters().",
                f"（{label_zh}）{key!r} 的数值和模型自己初始化的结果不同：to_empty 只分配内存，"
                "不设置数值；之后的数值应当来自模型的 init_weights()（模型有这个方法时），"
                "否则来自各个模块的 reset_parameters()。",
            )


def _judge_never_set(case: dict, label: str, label_zh: str) -> None:
    """Fail on the first tensor nobody set, saying why the loop the learner likely wrote missed it."""
    if not case["never_set"]:
        return
    # the most instructive first: attention's projection, then a tensor of the model's own, then the rest
    key, owner = min(
        case["never_set"].items(),
        key=lambda item: (item[1]["owner"] != "MultiheadAttention", not item[1]["owner_is_model"]),
    )
    head = (
        f"({label}) {key!r} was never set: it still holds the memory to_empty handed out (NaN in this "
        "check). "
    )
    head_zh = f"（{label_zh}）{key!r} 从没有被赋值：它还是 to_empty 分配时的内存（在这个自测里是 NaN）。"
    if owner["owner"] == "MultiheadAttention":
        raise Fail(
            head + "nn.MultiheadAttention has no reset_parameters(): it initialises in_proj in "
            "_reset_parameters(). A model that holds one defines init_weights(), which sets every value: "
            "call it after to_empty.",
            head_zh + "nn.MultiheadAttention 没有 reset_parameters()：它在 _reset_parameters() 里初始化 "
            "in_proj。包含它的模型应当定义 init_weights()，为所有数值赋值：to_empty 之后调用它。",
        )
    if owner["owner_is_model"] or not owner["owner_resets"]:
        raise Fail(
            head + f"It belongs to the {owner['owner']} itself, and no reset_parameters() covers it (a "
            "parameter or buffer a model creates in its own __init__, such as inv_freq). The model's "
            "init_weights() sets it: call it after to_empty.",
            head_zh + f"它属于 {owner['owner']} 本身，没有哪个 reset_parameters() 管得到它（模型在自己的 "
            "__init__ 里创建的参数或缓冲区，比如 inv_freq）。模型的 init_weights() 会为它赋值："
            "to_empty 之后调用它。",
        )
    raise Fail(
        head + f"Its {owner['owner']} has a reset_parameters() that was not called. Call it for every module "
        "that has one (the batch norm too), or the model's init_weights() where it has one.",
        head_zh + f"它所在的 {owner['owner']} 有 reset_parameters()，却没有被调用。请对每个有这个方法的模块"
        "调用它（BatchNorm 层也算），模型有 init_weights() 时则调用 init_weights()。",
    )


# --- Exercise 2: a full checkpoint into a sharded model ---------------------------------------------------

#: The ranks of a GPU job that exercise 2 also tells the learner's function it is (what it would load is
#: recorded, not run: `_recording`): GPU ranks 0 and 1, and rank 5, on a second machine. The kernel itself
#: is rank 0 of a one-process gloo group, on the CPU.
GPU_RANKS = [
    DistInfo(0, 0, 2, "nccl", torch.device("cuda", 0)),
    DistInfo(1, 1, 2, "nccl", torch.device("cuda", 1)),
    DistInfo(5, 1, 8, "nccl", torch.device("cuda", 1)),
]
#: The bytes of one allocation on a GPU: the CUDA caching allocator rounds each up to 512 (``kMinBlockSize``,
#: c10/cuda/CUDACachingAllocator.cpp, v2.13.0), and a simulated GPU counts its tensors the same way.
GPU_BLOCK = 512


def _whole_copy_bytes(state_dict: dict) -> int:
    """What a whole copy of ``state_dict`` takes on a GPU, one allocation per tensor (`GPU_BLOCK`)."""
    sizes = [t.nbytes for t in state_dict.values() if torch.is_tensor(t)]
    return sum(-(-n // GPU_BLOCK) * GPU_BLOCK for n in sizes)


@contextlib.contextmanager
def _gpu_peak(device: torch.device, out: dict) -> Iterator[None]:
    """Store in ``out["gpu_peak_bytes"]`` the most bytes allocated on ``device`` at once during the block,
    above what was there before it; nothing where the probe's machine has no such GPU (one real GPU)."""
    if device.index not in [gpu.index for gpu in probe_devices()]:
        yield
        return
    before = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    try:
        yield
    finally:
        out["gpu_peak_bytes"] = torch.cuda.max_memory_allocated(device) - before


#: Where the file of exercise 2 was saved from: rank 0 of a GPU job.
SAVED_ON = "cuda:0"
#: What DTensor's dispatcher says when a plain tensor meets a DTensor (lesson 11).
MIXED = "got mixed torch.Tensor and DTensor"


class StorageStandIn:
    """What a map_location function is called with, in this check: it records where it is sent.

    `torch.load` calls such a function as ``fn(storage, location)`` with the storage read onto the CPU and the
    location it was saved from, and uses what it returns (``None``: the default, back to that location)
    (`torch/serialization.py`, `_get_restore_location`, v2.13.0). A CPU-only build cannot make CUDA storage,
    so this stand-in answers `to`, `cuda` and `cpu` with the signatures of `torch.UntypedStorage`'s
    (``to(*, device, non_blocking=False)``: keyword only, as there) and keeps only the device asked for.
    """

    def __init__(self, device: str = "cpu") -> None:
        self.device = torch.device(device)

    def to(self, *, device: object, non_blocking: bool = False) -> StorageStandIn:
        return StorageStandIn(str(torch.device(device)))

    def cuda(self, device: object = None, non_blocking: bool = False) -> StorageStandIn:
        if device is None:
            return StorageStandIn("cuda")
        index = device if isinstance(device, int) else torch.device(device).index
        return StorageStandIn(f"cuda:{index}" if index is not None else "cuda")

    def cpu(self) -> StorageStandIn:
        return StorageStandIn("cpu")

    def size(self) -> int:
        return 4

    def nbytes(self) -> int:
        return 4


def _restore_stand_in(storage: object, location: str) -> object:
    """`torch.serialization.default_restore_location` for the stand-in: the storage, sent to ``location``
    (a CPU-only build cannot restore onto CUDA, which is what a GPU machine would do)."""
    if isinstance(storage, StorageStandIn):
        return StorageStandIn(str(torch.device(location)))
    return _DEFAULT_RESTORE(storage, location)


_DEFAULT_RESTORE = torch.serialization.default_restore_location


def _plain_location(value: object) -> dict:
    """A map_location as plain data: a device string, a dict of strings, a function's answer, None, or what
    it was. `torch.load` accepts a device, a string, a dict of strings to strings, or a function."""
    if value is None:
        return {"kind": "none"}
    if isinstance(value, torch.device | str):
        try:
            return {"kind": "device", "device": str(torch.device(value))}
        except (RuntimeError, TypeError):
            return {"kind": "other", "repr": repr(value)[:60]}
    if isinstance(value, dict):
        odd = [(k, v) for k, v in value.items() if not isinstance(v, str)]
        if odd:
            # torch.load passes a dict's value to default_restore_location, which needs a string:
            # {"cuda:0": torch.device("cpu")} raises TypeError (torch/serialization.py, v2.13.0)
            key, val = odd[0]
            return {"kind": "dict-not-str", "repr": f"{key!r}: {val!r}"[:80]}
        # torch.load looks the saved location up as a string: a key that is not one never matches
        keys = [k for k in value if not isinstance(k, str)]
        plain = {k: v for k, v in value.items() if isinstance(k, str)}
        if keys and SAVED_ON not in plain:
            return {"kind": "dict-key-not-str", "repr": repr(keys[0])[:60]}
        return {"kind": "dict", "map": plain}
    if callable(value):
        # an error here is the learner's, and is reported; torch.serialization.default_restore_location,
        # which a right answer may call, answers for the stand-in storage as it would for a real one
        original = torch.serialization.default_restore_location
        torch.serialization.default_restore_location = _restore_stand_in
        try:
            restored = value(StorageStandIn(), SAVED_ON)
        finally:
            torch.serialization.default_restore_location = original
        if restored is None:
            return {"kind": "function", "device": SAVED_ON}
        if isinstance(restored, StorageStandIn):
            return {"kind": "function", "device": str(restored.device)}
        return {"kind": "function-bad", "repr": type(restored).__name__}
    return {"kind": "other", "repr": type(value).__name__}


def _lands_on(location: dict) -> str | None:
    """Where a tensor saved on `SAVED_ON` lands with this map_location (None: not a device)."""
    if location["kind"] == "none":
        return SAVED_ON
    if location["kind"] in ("device", "function"):
        return location["device"]
    if location["kind"] == "dict-key-not-str":
        return SAVED_ON
    if location["kind"] == "dict":
        target = location["map"].get(SAVED_ON, SAVED_ON)
        try:
            return str(torch.device(target))
        except (RuntimeError, TypeError):
            return None
    return None


class _Recorded(BaseException):
    """Raised by the check's recorders to stop a rank whose loading is only recorded (a BaseException, so
    that the learner's own ``except Exception`` does not swallow it)."""


@contextlib.contextmanager
def _recording(calls: list[dict], stop: bool) -> Iterator[None]:
    """Record each ``torch.load`` and each DCP model load (``set_model_state_dict``, ``set_state_dict``).

    ``torch.load``: where its ``map_location`` sends a storage saved on `SAVED_ON` (as `_plain_location`
    sees it), and ``mmap``. DCP: the options, how many entries the state dict had, and the devices of its
    tensors (a CPU read moved whole onto the rank's GPU afterwards shows there). Without ``stop`` each call
    goes on for real. With ``stop`` (a GPU rank of `GPU_RANKS`, which one process cannot be): a
    ``torch.load`` that reads onto the CPU goes on, onto the CPU, so that what the answer does with the
    tensors next is seen; one that would read onto a GPU, and any DCP load, are recorded and the rank stops
    there (`_Recorded`).
    """
    import torch.distributed.checkpoint.state_dict as dsd

    real_load, real_dcp = torch.load, dsd._load_model_state_dict

    def load(f, map_location=None, *args, **kwargs):
        calls.append(
            {
                "call": "torch.load",
                "location": _plain_location(map_location),
                "mmap": bool(kwargs.get("mmap")),
            }
        )
        if stop:
            if _lands_on(calls[-1]["location"]) != "cpu":
                raise _Recorded
            # the file was saved on the CPU; where the answer's map_location sends cuda:0 is recorded
            return real_load(f, "cpu", *args, **kwargs)
        return real_load(f, map_location, *args, **kwargs)

    def dcp_load(model, state_dict, info):
        calls.append(
            {
                "call": "set_model_state_dict",
                "full_state_dict": bool(info.full_state_dict),
                "broadcast_from_rank0": bool(info.broadcast_from_rank0),
                "entries": len(state_dict),
                "devices": sorted({str(v.device) for v in state_dict.values() if torch.is_tensor(v)}),
            }
        )
        if stop:
            raise _Recorded
        return real_dcp(model, state_dict, info)

    torch.load = torch.serialization.load = load
    dsd._load_model_state_dict = dcp_load
    try:
        yield
    finally:
        torch.load = torch.serialization.load = real_load
        dsd._load_model_state_dict = real_dcp


@contextlib.contextmanager
def _one_process_group() -> Iterator[DistInfo]:
    """The kernel's process group: the one that exists, else a one-process gloo group, torn down after."""
    import torch.distributed as dist

    from devicekit.distributed import setup, teardown

    created = not dist.is_initialized()
    info = setup("gloo" if created else None)
    try:
        yield info
    finally:
        if created:
            teardown()


def _sharded_model(mesh, device: torch.device) -> nn.Module:
    """The lab's model, built on meta, sharded with FSDP2 layer by layer, given storage and seed-0 values."""
    from torch.distributed.fsdp import fully_shard

    from devicekit_labs import sharded_workers as sw

    with torch.device("meta"):
        model = sw.make_model()
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    model.to_empty(device=device)
    torch.manual_seed(0)
    for module in model.modules():
        if hasattr(module, "reset_parameters"):
            module.reset_parameters()
    return model


def _rank_entry(info: DistInfo) -> dict[str, Any]:
    return {
        "rank": info.rank,
        "local_rank": info.local_rank,
        "backend": info.backend,
        "device": str(info.device),
    }


@judged(
    LAB,
    "load-full",
    2,
    "load a full checkpoint into a sharded model",
    "把完整检查点加载进分片模型",
    target="load_full",
)
def probe_load_full(load_full: Callable[[nn.Module, str, DistInfo], object]) -> dict:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor

    from devicekit_labs import sharded_workers as sw

    seen: dict[str, Any] = {}
    with warnings.catch_warnings(), tempfile.TemporaryDirectory(prefix="lab11-full-") as folder:
        warnings.simplefilter("ignore")
        path = f"{folder}/full.pt"
        torch.manual_seed(7)
        source = sw.make_model()  # other values than the seed-0 model the rank starts from
        torch.save(source.state_dict(), path)
        seen["want"] = sw.state_digest(list(source.parameters()))
        seen["whole_bytes"] = _whole_copy_bytes(source.state_dict())
        with _one_process_group() as info:
            mesh = init_device_mesh(info.device.type, (info.world_size,))
            model = _sharded_model(mesh, info.device)
            calls: list[dict] = []
            with _recording(calls, stop=False):
                got = observe(load_full, model, path, info)
            real = {**_rank_entry(info), "calls": calls}
            if "error" in got:
                real["error"] = got["error"]
            else:
                params = list(model.parameters())
                real["local_devices"] = sorted(
                    {str((p.to_local() if isinstance(p, DTensor) else p).device) for p in params}
                )
                real["digest"] = sw.state_digest(params)
            seen["real"] = real
            recorded = []
            for rank in GPU_RANKS:
                model = _sharded_model(mesh, info.device)
                calls = []

                def until_recorded(*args, _fn=load_full):
                    try:
                        return _fn(*args)
                    except _Recorded:
                        return None

                peak: dict[str, int] = {}
                with _recording(calls, stop=True), _gpu_peak(rank.device, peak):
                    got = observe(until_recorded, model, path, rank)
                entry = {**_rank_entry(rank), "calls": calls, **peak}
                if "error" in got:
                    entry["error"] = got["error"]
                recorded.append(entry)
            seen["recorded"] = recorded
    return seen


def _where_label(entry: dict) -> tuple[str, str]:
    return (
        f"rank {entry['rank']} (local rank {entry['local_rank']}, {entry['backend']}, {entry['device']})",
        f"rank {entry['rank']}（LOCAL_RANK={entry['local_rank']}，{entry['backend']}，{entry['device']}）",
    )


@probe_load_full.judge
def judge_load_full(seen: dict) -> None:
    real = seen["real"]
    label, label_zh = _where_label(real)
    error = real.get("error")
    if error is not None and MIXED in error["message"]:
        raise Fail(
            f"({label}) {error['type']}: ...{MIXED}...: load_state_dict copies the file's plain tensors into "
            "the model's DTensors, which DTensor refuses. A full state dict goes into a sharded model "
            "through "
            "set_model_state_dict(model, state_dict, options=StateDictOptions(full_state_dict=True)), which "
            "keeps each rank's shard of every tensor.",
            f"（{label_zh}）{error['type']}：……{MIXED}……：load_state_dict 把文件里的普通张量复制进模型的 "
            "DTensor，DTensor 拒绝这样做。完整的状态字典要通过 set_model_state_dict(model, state_dict, "
            "options=StateDictOptions(full_state_dict=True)) 加载进分片模型，它让每个 rank 只保留每个张量中"
            "属于自己的分片。",
        )
    failed_call(
        real, f"({label}) load_full(model, path, info)", f"（{label_zh}）load_full(model, path, info)"
    )
    for entry in [real, *seen["recorded"]]:
        _judge_where_loaded(entry)
        _judge_state_dict_devices(entry)
        _judge_gpu_peak(entry, seen["whole_bytes"])
    if real["local_devices"] != [real["device"]]:
        raise Fail(
            f"({label}) this rank's shards are on {', '.join(real['local_devices'])}, not on its device "
            f"{real['device']}: load into the model where it is.",
            f"（{label_zh}）本 rank 的分片在 {'、'.join(real['local_devices'])} 上，不在它的设备 "
            f"{real['device']} 上：请加载到模型原来所在的设备上。",
        )
    if real["digest"] != seen["want"]:
        raise Fail(
            f"({label}) the model does not hold the checkpoint's values. set_model_state_dict(model, "
            "state_dict, options=StateDictOptions(full_state_dict=True)) loads them; with "
            "broadcast_from_rank0=True too, rank 0 must pass the whole state dict.",
            f"（{label_zh}）模型里不是检查点的数值。set_model_state_dict(model, state_dict, "
            "options=StateDictOptions(full_state_dict=True)) 会加载它们；同时设置 broadcast_from_rank0=True "
            "时，rank 0 必须传入完整的状态字典。",
        )
    for entry in seen["recorded"]:
        _judge_recorded_rank(entry)


def _judge_where_loaded(entry: dict) -> None:
    """Each torch.load must leave a storage saved on cuda:0 on the CPU: never a whole copy on a GPU."""
    label, label_zh = _where_label(entry)
    for call in entry["calls"]:
        if call["call"] != "torch.load":
            continue
        location = call["location"]
        if location["kind"] in ("dict-not-str", "function-bad"):
            raise Fail(
                f"({label}) torch.load cannot use this map_location ({location['repr']}): a dict maps "
                'strings to strings, a function returns a storage. Simplest: map_location="cpu".',
                f"（{label_zh}）torch.load 用不了这个 map_location（{location['repr']}）：字典要从字符串"
                '映射到字符串，函数要返回一个存储。最简单的写法：map_location="cpu"。',
            )
        lands = _lands_on(location)
        if lands == "cpu":
            continue
        if location["kind"] == "dict-key-not-str":
            raise Fail(
                f"({label}) the map_location dict's key {location['repr']} is not a string: torch.load looks "
                f"the saved location up as the string '{SAVED_ON}', so it never matches and every tensor "
                "stays "
                f'on {SAVED_ON}. Simplest: map_location="cpu".',
                f"（{label_zh}）map_location 字典的键 {location['repr']} 不是字符串：torch.load 用字符串 "
                f"'{SAVED_ON}' 查找保存时的位置，这个键永远对不上，每个张量都留在 {SAVED_ON} 上。"
                '最简单的写法：map_location="cpu"。',
            )
        if lands is None:
            raise Fail(
                f"({label}) torch.load got a map_location the check cannot read ({location.get('repr')}): "
                'pass map_location="cpu".',
                f"（{label_zh}）torch.load 收到了一个自测无法解析的 map_location（{location.get('repr')}）："
                '请传 map_location="cpu"。',
            )
        if location["kind"] == "none":
            raise Fail(
                f"({label}) without map_location every tensor goes back to where rank 0 saved it, "
                f"{SAVED_ON}: "
                f"every rank would put a whole copy of the model on {SAVED_ON}. Read it onto the CPU: "
                'torch.load(path, map_location="cpu", mmap=True).',
                f"（{label_zh}）不写 map_location 时，每个张量都回到 rank 0 保存它时所在的 {SAVED_ON}："
                f"每个 rank 都会在 {SAVED_ON} 上放一份完整的模型。请读到 CPU 上："
                'torch.load(path, map_location="cpu", mmap=True)。',
            )
        raise Fail(
            f"({label}) torch.load would put the whole checkpoint on {lands}: with every rank doing so, each "
            "GPU holds a whole copy of the model, which is what FSDP exists to avoid. Read it onto the CPU "
            '(map_location="cpu", mmap=True); set_model_state_dict then keeps only this rank\'s shard, on '
            "its device.",
            f"（{label_zh}）torch.load 会把整个检查点放到 {lands} 上：每个 rank 都这样做，每块 GPU 上就各有"
            '一份完整的模型，而这正是 FSDP 要避免的。请读到 CPU 上（map_location="cpu", mmap=True）；'
            "之后 set_model_state_dict 只在本 rank 的设备上保留它自己的分片。",
        )


def _judge_state_dict_devices(entry: dict) -> None:
    """The state dict handed to DCP must be on the CPU: a whole checkpoint on a GPU is a whole copy there,
    however it got there (``.to(info.device)`` of each value after a CPU read, a plain model moved whole)."""
    label, label_zh = _where_label(entry)
    for call in entry["calls"]:
        on_gpu = [d for d in call.get("devices", []) if torch.device(d).type == "cuda"]
        if call["call"] != "set_model_state_dict" or not on_gpu:
            continue
        device = ", ".join(on_gpu)
        raise Fail(
            f"({label}) your function put the whole checkpoint on {device} before loading it: with every "
            "rank doing so, each GPU holds a whole copy of the model, which is what FSDP exists to avoid. "
            "Pass the CPU state dict to set_model_state_dict as it is: it keeps only this rank's shard, on "
            "the device of the model's parameters.",
            f"（{label_zh}）你的函数在加载之前，把整个检查点放到了 {'、'.join(on_gpu)} 上："
            "每个 rank 都这样做，每块 GPU 上就各有一份完整的模型，而这正是 FSDP 要避免的。"
            "请把 CPU 上的状态字典原样交给 set_model_state_dict：它只在模型参数所在的设备上保留本 rank 的"
            "分片。",
        )


def _judge_gpu_peak(entry: dict, whole: int) -> None:
    """A recorded GPU rank must never hold as much as the whole checkpoint on its GPU at once, however it
    got there (a dict moved whole and sharded by hand, a plain model moved whole); one tensor at a time is
    what DCP's broadcast_from_rank0 does too."""
    peak = entry.get("gpu_peak_bytes")
    if peak is None or peak < whole:
        return
    label, label_zh = _where_label(entry)
    device = entry["device"]
    raise Fail(
        f"({label}) while your function ran, {device} held {peak} bytes at its peak, at least as much as "
        f"the whole checkpoint ({whole} bytes in the GPU's {GPU_BLOCK}-byte blocks): with every rank "
        "doing so, each GPU holds a whole copy of the model, which is what FSDP exists to avoid. Keep the "
        "full state dict on the CPU and let set_model_state_dict keep only this rank's shard, on the device "
        "of the model's parameters.",
        f"（{label_zh}）你的函数运行期间，{device} 上的显存占用最高达到 {peak} 字节，不少于整个检查点的大小"
        f"（按 GPU 每次分配以 {GPU_BLOCK} 字节为单位计算，整个检查点占 {whole} 字节）：每个 rank 都这样做，"
        "每块 GPU 上就各有一份完整的模型，而这正是 FSDP 要避免的。请把完整的状态字典留在 CPU 上，"
        "让 set_model_state_dict 只在模型参数所在的设备上保留本 rank 的分片。",
    )


def _judge_recorded_rank(entry: dict) -> None:
    """A GPU rank whose loading was recorded: it reads the file, or receives rank 0's broadcast."""
    label, label_zh = _where_label(entry)
    error = entry.get("error")
    if error is not None and "state_dict is empty" in error["message"]:
        said = error["message"].split(".rank")[0]
        raise Fail(
            f"({label}) {error['type']}: {said}. This rank passed an empty state dict without "
            "broadcast_from_rank0=True, so DCP has nothing to load and refuses. Either every rank reads the "
            "file (onto the CPU), or rank 0 alone does and every rank passes broadcast_from_rank0=True.",
            f"（{label_zh}）{error['type']}：{said}。这个 rank 传入的是空的状态字典，却没有设置 "
            "broadcast_from_rank0=True，DCP 没有东西可加载，于是拒绝。要么每个 rank 都读文件（读到 CPU 上），"
            "要么只由 rank 0 读，并且每个 rank 都设置 broadcast_from_rank0=True。",
        )
    failed_call(
        entry, f"({label}) load_full(model, path, info)", f"（{label_zh}）load_full(model, path, info)"
    )
    calls = entry["calls"]
    if not calls:
        raise Fail(
            f"({label}) your function neither read the file (torch.load) nor asked DCP for rank 0's tensors "
            "(set_model_state_dict): this rank's shards would keep their old values.",
            f"（{label_zh}）你的函数既没有读文件（torch.load），也没有向 DCP 要 rank 0 的张量"
            "（set_model_state_dict）：这个 rank 的分片会保留原来的数值。",
        )


# --- Exercise 3: resume a checkpoint saved by two ranks, in one process ---------------------------------

#: The checkpoint two FSDP2 ranks saved in this process, and what they reported: made once per process.
_SAVED: dict[str, Any] = {}
#: Its folder, removed when the process ends (a ``TemporaryDirectory``'s finalizer), not left in ``/tmp``.
_SAVED_FOLDER: list[tempfile.TemporaryDirectory] = []


def saved_checkpoint() -> dict[str, Any]:
    """Start two ranks that train with FSDP2 and save a DCP checkpoint; their report (cached)."""
    from devicekit_labs import sharded_workers as sw

    if not _SAVED:
        _SAVED_FOLDER[:] = [tempfile.TemporaryDirectory(prefix="lab11-check-")]
        folder = _SAVED_FOLDER[0].name
        start_ranks(sw.fsdp_train, 2, (2, folder, 3, folder))  # forked from here where that is safe
        ranks = sw.collect_results(folder)
        if len(ranks) != 2 or ranks[0]["digest"] != ranks[1]["digest"]:
            raise RuntimeError(f"the two ranks did not save one checkpoint: {ranks}")
        _SAVED.update(ranks[0], dcp=f"{folder}/dcp")
    return _SAVED


def _moments(model: nn.Module, optimizer: torch.optim.Optimizer) -> list[torch.Tensor] | None:
    out = []
    for p in model.parameters():
        state = optimizer.state.get(p, {})
        if "exp_avg" not in state or "exp_avg_sq" not in state:
            return None
        out += [state["exp_avg"], state["exp_avg_sq"]]
    return out


#: The learning rate the check's optimizers start with; the checkpoint's (`fsdp_train`) is 0.05.
PLANTED_LR = 0.001


@judged(
    LAB,
    "resume",
    3,
    "resume a sharded checkpoint in one process",
    "在一个进程里恢复分片检查点",
    target="resume",
)
def probe_resume(resume: Callable[[nn.Module, torch.optim.Optimizer, str], object]) -> dict:
    """Resume into a fresh Adam, and into one that has stepped once, both with `PLANTED_LR`.

    A fresh Adam has no state yet, so a numbered ``optimizer.state_dict()`` handed to ``dcp.load`` matches
    nothing and loads no moments; a stepped one has state, and there it raises ``CheckpointException``. The
    learning rate differs from the checkpoint's, so an answer that restores the tensors but not the
    optimizer's hyper-parameters shows.
    """
    from devicekit_labs import sharded_workers as sw

    saved = saved_checkpoint()
    device = probe_devices()[-1]  # cuda:1: an answer that moves the model elsewhere shows
    seen: dict[str, Any] = {
        "device": str(device),
        "saved": {k: saved[k] for k in ("digest", "optim_digest", "optim_step", "world_size", "lr")},
        "cases": [],
    }
    for case in ("fresh", "stepped"):
        model = sw.make_model().to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=PLANTED_LR)
        if case == "stepped":
            model(torch.ones(2, 4, device=device)).sum().backward()
            optimizer.step()
            optimizer.zero_grad()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = observe(_resume_catching_base(resume), model, optimizer, saved["dcp"])
        entry: dict[str, Any] = {"case": case}
        if "error" in got:
            entry["error"] = got["error"]
            seen["cases"].append(entry)
            continue
        params = list(model.parameters())
        moments = _moments(model, optimizer)
        step = optimizer.state.get(params[0], {}).get("step")
        entry.update(
            devices=sorted({str(p.device) for p in params}),
            digest=sw.state_digest(params),
            optim_digest=None if moments is None else sw.state_digest(moments),
            optim_step=None if step is None else float(step),
            lr=float(optimizer.param_groups[0]["lr"]),
        )
        seen["cases"].append(entry)
    return seen


class _CheckpointFailed(RuntimeError):
    """DCP's CheckpointException is a BaseException; the check turns it into an error it can report."""


_CheckpointFailed.__name__ = _CheckpointFailed.__qualname__ = "CheckpointException"  # what the learner met


def _resume_catching_base(resume: Callable) -> Callable:
    from torch.distributed.checkpoint.api import CheckpointException

    def run(*args):
        try:
            return resume(*args)
        except CheckpointException as exc:
            last = str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else ""
            raise _CheckpointFailed(last) from None

    return run


@probe_resume.judge
def judge_resume(seen: dict) -> None:
    device = seen["device"]
    saved = seen["saved"]
    for case in seen["cases"]:
        label = "a fresh Adam" if case["case"] == "fresh" else "an Adam that has stepped once"
        label_zh = "新建的 Adam" if case["case"] == "fresh" else "已经走过一步（step()）的 Adam"
        error = case.get("error")
        if error is not None and error["type"] == "CheckpointException" and "Missing key" in error["message"]:
            raise Fail(
                f"({label}) CheckpointException: {error['message']} The optimizer's own state_dict() keys "
                "its state by numbers (optim.state.0.step), the checkpoint by parameter names, so DCP finds "
                "nothing to read. get_state_dict(model, optimizer) names them, and set_state_dict puts the "
                "loaded state back.",
                f"（{label_zh}）CheckpointException：{error['message']} 优化器自己的 state_dict() 以数字为键"
                "（optim.state.0.step），检查点以参数名为键，DCP 找不到可读的内容。"
                "get_state_dict(model, optimizer) 用参数名，set_state_dict 再把加载的状态放回去。",
            )
        failed_call(
            case,
            f"({label}) resume(model, optimizer, checkpoint_dir)",
            f"（{label_zh}）resume(model, optimizer, checkpoint_dir)",
        )
        if case["devices"] != [device]:
            raise Fail(
                f"({label}) after resume the parameters are on {', '.join(case['devices'])}, but the model "
                "was "
                f"on {device}: load into the model's own tensors, where they are (dcp.load fills them in "
                "place).",
                f"（{label_zh}）恢复之后参数在 {'、'.join(case['devices'])} 上，而模型原本在 {device} 上："
                "应加载进模型自己的张量，让它们留在原来的设备上（dcp.load 会原地填充它们）。",
            )
        if case["digest"] != saved["digest"]:
            raise Fail(
                f"({label}) the model's parameters are not the checkpoint's: dcp.load fills the tensors of "
                "the "
                "state dict you give it, in place. Give it the model's own state dict (get_state_dict(model, "
                "optimizer)), then hand the loaded state back with set_state_dict.",
                f"（{label_zh}）模型的参数不是检查点里的：dcp.load 原地填充你交给它的状态字典里的张量。"
                "请交给它模型自己的状态字典（get_state_dict(model, optimizer)），加载后再用 set_state_dict "
                "交还给模型。",
            )
        if case["optim_digest"] != saved["optim_digest"] or case["optim_step"] != saved["optim_step"]:
            raise Fail(
                f"({label}) the model was restored, but the optimizer was not (Adam's step is "
                f"{case['optim_step']}, the checkpoint's {saved['optim_step']}). optimizer.state_dict() "
                "numbers the parameters and matches nothing in a DCP checkpoint; get_state_dict(model, "
                "optimizer) names them, and set_state_dict puts the loaded state into the optimizer.",
                f"（{label_zh}）模型恢复了，优化器却没有（Adam 的 step 是 {case['optim_step']}，检查点里是 "
                f"{saved['optim_step']}）。optimizer.state_dict() 用数字给参数编号，"
                "和 DCP 检查点里的键对不上；"
                "get_state_dict(model, optimizer) 用参数名，set_state_dict 再把加载的状态放进优化器。",
            )
        if case["lr"] != saved["lr"]:
            raise Fail(
                f"({label}) Adam's moments were restored, but its learning rate is {case['lr']}, the "
                f"checkpoint's {saved['lr']}: the hyper-parameters are in the state dict's param_groups, "
                "which dcp.load updates in the dict you give it, not in the optimizer. set_state_dict (or "
                "set_optimizer_state_dict) hands them to the optimizer.",
                f"（{label_zh}）Adam 的矩估计恢复了，学习率却是 {case['lr']}，检查点里是 {saved['lr']}："
                "超参数在状态字典的 param_groups 里，dcp.load 只更新你交给它的那个字典，不更新优化器。"
                "set_state_dict（或 set_optimizer_state_dict）才会把它们交给优化器。",
            )
