"""Self-checks for lab 11 (sharded training: DeviceMesh, DTensor, FSDP2, distributed checkpoints).

All three checks are two-part (`judged`). Exercise 1 hands the learner models built on ``meta`` and a target
device (the CPU, and the stand-in: the accelerator, else ``meta``) and compares what comes back with the same
model built on that device from the same seed. Exercise 2 asks for the ``map_location`` of several ranks (CPU
and GPU ranks, one on a second machine) and records only the value. Exercise 3 starts two real processes
(``sharded_workers.fsdp_train``: FSDP2 over gloo, or NCCL where there is a GPU per rank) that save a
distributed checkpoint, once per process, then lets the learner resume it into one unsharded model in the
kernel, and compares digests of the parameters and of Adam's state with those the ranks reported at save time.
"""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from devicekit.device import best_device, mismatch_device
from devicekit.distributed import DistInfo, spawn
from devicekit_labs import Fail, failed_call, judged, observe

LAB = "11-sharded"

# --- Exercise 1: materialise a model built on meta ------------------------------------------------------


def build_model() -> nn.Module:
    """The model exercise 1 plants: linear layers and a batch norm (parameters and buffers)."""
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))


#: What `Module.to()` of a meta model raises: the bug lesson 11 teaches.
NO_DATA = "Cannot copy out of meta tensor"


def _tensors(model: nn.Module) -> dict[str, torch.Tensor]:
    return {**dict(model.named_parameters()), **dict(model.named_buffers())}


def _materialise_cases() -> list[str]:
    return ["cpu", str(mismatch_device())]


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
    for name in _materialise_cases():
        device = torch.device(name)
        torch.manual_seed(0)
        with torch.device(device):
            expected = _tensors(build_model())  # kept alive: its memory cannot be what to_empty hands out
        with torch.device("meta"):
            handed = build_model()
        torch.manual_seed(0)
        # Called with meta as the default device: a second whole model built inside lands on meta too, so
        # building one and copying it in (what meta init is there to avoid) fails like .to() does.
        with warnings.catch_warnings(), torch.device("meta"):
            warnings.simplefilter("ignore")
            got = observe(materialize, handed, device)
        entry: dict[str, Any] = {"device": name}
        if "error" in got:
            entry["error"] = got["error"]
            cases.append(entry)
            continue
        value = got["value"]
        entry["returned"] = type(value).__name__
        entry["same_model"] = value is handed
        tensors = _tensors(handed)
        entry["devices"] = {key: str(t.device) for key, t in tensors.items()}
        entry["same_values"] = {
            key: bool(
                "meta" in (t.device.type, expected[key].device.type)  # no values to compare
                or (
                    t.shape == expected[key].shape
                    and torch.equal(t.detach().cpu(), expected[key].detach().cpu())
                )
            )
            for key, t in tensors.items()
        }
        cases.append(entry)
        del expected
    return {"cases": cases}


@probe_materialize.judge
def judge_materialize(seen: dict) -> None:
    for case in seen["cases"]:
        device = case["device"]
        error = case.get("error")
        if error is not None and NO_DATA in error["message"]:
            first = error["message"].splitlines()[0]
            first = first.split("!")[0] + "!" if "!" in first else first[:120]
            raise Fail(
                f"(device {device}) your code raised {error['type']} ({first}): a model built on meta "
                "(and, in this check, one built inside your function) has shapes but no data, so .to() has "
                "nothing to copy. Give the model you were given storage with model.to_empty(device=device), "
                "then initialise it in place.",
                f"（设备 {device}）你的代码抛出了 {error['type']}（{first}）：在 meta 上构建的模型"
                "（在这个自测里，也包括在你的函数里新建的模型）只有形状、没有数据，.to() 没有东西可复制。"
                "请用 model.to_empty(device=device) 为传入的模型分配存储，再原地初始化。",
            )
        failed_call(
            case,
            f"(device {device}) materialize(model, device)",
            f"（设备 {device}）materialize(model, device)",
        )
        if not case["same_model"]:
            raise Fail(
                f"(device {device}) return the model you were given, after giving it storage (got a "
                f"{case['returned']}).",
                f"（设备 {device}）分配存储之后，请返回传入的那个模型本身（你返回的是 {case['returned']}）。",
            )
        moved = [key for key, where in case["devices"].items() if where != device]
        if moved and device != "meta" and all(case["devices"][key] == "meta" for key in moved):
            raise Fail(
                f"(device {device}) every parameter and buffer is still on meta: nothing was materialised. "
                "Call model.to_empty(device=device) first, then reset_parameters().",
                f"（设备 {device}）所有参数和缓冲区都还在 meta 上：什么都没有分配。"
                "请先调用 model.to_empty(device=device)，再调用 reset_parameters()。",
            )
        if moved:
            key = moved[0]
            raise Fail(
                f"(device {device}) {key!r} is on {case['devices'][key]}, not on {device}: give every "
                "parameter "
                "and buffer storage on the device you were given, not on a fixed one.",
                f"（设备 {device}）{key!r} 在 {case['devices'][key]} 上，不在 {device} 上："
                "每个参数和缓冲区都要在传入的设备上分配存储，不要写死设备。",
            )
        wrong = [key for key, same in case["same_values"].items() if not same]
        if wrong:
            key = wrong[0]
            raise Fail(
                f"(device {device}) {key!r} does not hold the values the model's own initialisation gives: "
                "to_empty allocates memory without setting it. After it, call reset_parameters() on every "
                "module that has one (linear layers and the batch norm alike), in model.modules() order.",
                f"（设备 {device}）{key!r} 的数值和模型自己初始化的结果不同：to_empty 只分配内存，"
                "不设置数值；之后请按 model.modules() 的顺序，对每个有 reset_parameters() 的模块调用它"
                "（线性层和 BatchNorm 层都算）。",
            )


# --- Exercise 2: where each rank loads a full checkpoint ------------------------------------------------

#: The ranks exercise 2 asks about: a CPU rank (gloo), GPU ranks 0 and 1, rank 5 on a second machine.
RESUME_RANKS = [
    DistInfo(0, 0, 2, "gloo", torch.device("cpu")),
    DistInfo(1, 1, 2, "gloo", torch.device("cpu")),
    DistInfo(0, 0, 2, "nccl", torch.device("cuda", 0)),
    DistInfo(1, 1, 2, "nccl", torch.device("cuda", 1)),
    DistInfo(5, 1, 8, "nccl", torch.device("cuda", 1)),
]
#: Where the file of exercise 2 was saved from: rank 0 of a GPU job.
SAVED_ON = "cuda:0"


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


@judged(
    LAB,
    "map-location",
    2,
    "load a full checkpoint onto each rank's own device",
    "把完整检查点加载到每个 rank 自己的设备上",
    target="map_location_for",
)
def probe_map_location(map_location_for: Callable[[DistInfo], object]) -> dict:
    answers = []
    for info in RESUME_RANKS:
        got = observe(lambda info: _plain_location(map_location_for(info)), info)
        entry: dict[str, Any] = {
            "rank": info.rank,
            "local_rank": info.local_rank,
            "backend": info.backend,
            "device": str(info.device),
        }
        if "error" in got:
            entry["error"] = got["error"]
        else:
            entry["location"] = got["value"]
        answers.append(entry)
    return {"answers": answers}


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


@probe_map_location.judge
def judge_map_location(seen: dict) -> None:
    for answer in seen["answers"]:
        label = f"rank {answer['rank']} (local rank {answer['local_rank']}, {answer['backend']})"
        label_zh = f"rank {answer['rank']}（local rank {answer['local_rank']}，{answer['backend']}）"
        failed_call(answer, f"for {label}", f"为 {label_zh} 求 map_location 时")
        location = answer["location"]
        lands = _lands_on(location)
        if location["kind"] == "dict-not-str":
            raise Fail(
                f"for {label} the dict maps to something that is not a string ({location['repr']}): "
                "torch.load hands a dict's values to its default restore, which needs a string, and raises "
                "TypeError. Write both keys and values as strings ({'cuda:0': str(info.device)}), or return "
                "info.device itself.",
                f"为 {label_zh}给出的字典里有不是字符串的键或值（{location['repr']}）：torch.load 会把"
                "字典的值交给默认的恢复函数，而它只接受字符串，于是抛出 TypeError。请把键和值都写成字符串"
                "（{'cuda:0': str(info.device)}），或者直接返回 info.device。",
            )
        if location["kind"] == "function-bad":
            raise Fail(
                f"for {label} your map_location function returned a {location['repr']}: torch.load calls it "
                "as fn(storage, location) and needs a storage back (storage.to(device=...), or None for "
                "the default).",
                f"为 {label_zh}写的 map_location 函数返回了 {location['repr']}：torch.load 以 "
                "fn(storage, location) 调用它，需要拿回一个存储（storage.to(device=...)，或者返回 None "
                "表示用默认位置）。",
            )
        if lands is None:
            raise Fail(
                f"for {label} the answer ({location.get('repr')}) is not a map_location the check can read: "
                "return a device, a string naming one, a dict of strings, or a function of (storage, "
                "location).",
                f"{label_zh}，返回值（{location.get('repr')}）不是自测能读懂的 map_location："
                "请返回一个设备、表示设备的字符串、由字符串组成的字典，或者一个以 (storage, location) "
                "为参数的函数。",
            )
        want = torch.device(answer["device"])
        got = torch.device(lands)
        same = got.type == want.type and (got.index or 0) == (want.index or 0)
        if same:
            continue
        if location["kind"] == "none":
            raise Fail(
                f"for {label}, without map_location every tensor goes back to where it was saved, "
                f"{SAVED_ON}: "
                f"this rank's copy would land on {SAVED_ON}, not on {want}.",
                f"{label_zh}，不写 map_location 时每个张量都回到保存时的设备 {SAVED_ON}：这个 rank "
                "的那份会落到 "
                f"{SAVED_ON} 上，而不是 {want}。",
            )
        if location["kind"] == "dict-key-not-str":
            raise Fail(
                f"for {label} the dict's key {location['repr']} is not a string: torch.load looks the saved "
                f"location up as the string '{SAVED_ON}', so it never matches and the tensors stay on "
                f"{SAVED_ON}. Write the key as a string: {{'{SAVED_ON}': str(info.device)}}.",
                f"为 {label_zh}给出的字典的键 {location['repr']} 不是字符串：torch.load 用字符串 "
                f"'{SAVED_ON}' 查找保存时的位置，这个键永远对不上，张量仍会留在 {SAVED_ON} 上。"
                f"请把键写成字符串：{{'{SAVED_ON}': str(info.device)}}。",
            )
        if got.type == "cuda" and got.index is None:
            raise Fail(
                f"for {label} the tensors would land on 'cuda', the current GPU: that is cuda:0 unless "
                f"torch.cuda.set_device(local_rank) ran in this process, and this rank computes on {want}. "
                "Name the index: return info.device.",
                f"为 {label_zh}给出的 'cuda' 指当前 GPU：除非这个进程里调用过 "
                f"torch.cuda.set_device(local_rank)，否则就是 cuda:0，而这个 rank 在 {want} 上计算。"
                "请写明编号：返回 info.device。",
            )
        raise Fail(
            f"for {label} the tensors would land on {got}, but this rank computes on {want}. Each rank loads "
            "onto its own device: info.device (its local rank's GPU, or the CPU with gloo).",
            f"{label_zh}，张量会落到 {got} 上，而这个 rank 在 {want} 上计算。每个 rank 都加载到自己的设备上："
            "也就是 `info.device`（local rank 对应的 GPU，用 gloo 时是 CPU）。",
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
        spawn(sw.fsdp_train, nprocs=2, args=(2, folder, 3, folder))
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


@judged(
    LAB,
    "resume",
    3,
    "resume a sharded checkpoint in one process",
    "在一个进程里恢复分片检查点",
    target="resume",
)
def probe_resume(resume: Callable[[nn.Module, torch.optim.Optimizer, str], object]) -> dict:
    from devicekit_labs import sharded_workers as sw

    saved = saved_checkpoint()
    device = best_device()
    model = sw.make_model().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = observe(_resume_catching_base(resume), model, optimizer, saved["dcp"])
    seen: dict[str, Any] = {
        "device": str(device),
        "saved": {k: saved[k] for k in ("digest", "optim_digest", "optim_step", "world_size")},
    }
    if "error" in got:
        seen["error"] = got["error"]
        return seen
    params = list(model.parameters())
    moments = _moments(model, optimizer)
    step = optimizer.state.get(params[0], {}).get("step")
    seen.update(
        devices=sorted({str(p.device) for p in params}),
        digest=sw.state_digest(params),
        optim_digest=None if moments is None else sw.state_digest(moments),
        optim_step=None if step is None else float(step),
    )
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
    failed_call(seen, "resume(model, optimizer, checkpoint_dir)", "resume(model, optimizer, checkpoint_dir)")
    device = seen["device"]
    if seen["devices"] != [device]:
        raise Fail(
            f"after resume the parameters are on {', '.join(seen['devices'])}, but the model was on "
            f"{device}: "
            "load into the model's own tensors, where they are (dcp.load fills them in place).",
            f"恢复之后参数在 {'、'.join(seen['devices'])} 上，而模型原本在 {device} 上："
            "应加载进模型自己的张量，让它们留在原来的设备上（dcp.load 会原地填充它们）。",
        )
    if seen["digest"] != seen["saved"]["digest"]:
        raise Fail(
            "the model's parameters are not the checkpoint's: dcp.load fills the tensors of the state "
            "dict you "
            "give it, in place. Give it the model's own state dict (get_state_dict(model, optimizer)), "
            "then hand "
            "the loaded state back with set_state_dict.",
            "模型的参数不是检查点里的：dcp.load 原地填充你交给它的状态字典里的张量。"
            "请交给它模型自己的状态字典"
            "（get_state_dict(model, optimizer)），加载后再用 set_state_dict 交还给模型。",
        )
    if (
        seen["optim_digest"] != seen["saved"]["optim_digest"]
        or seen["optim_step"] != seen["saved"]["optim_step"]
    ):
        raise Fail(
            f"the model was restored, but the optimizer was not (Adam's step is {seen['optim_step']}, the "
            f"checkpoint's {seen['saved']['optim_step']}). optimizer.state_dict() numbers the parameters and "
            "matches nothing in a DCP checkpoint; get_state_dict(model, optimizer) names them, and "
            "set_state_dict puts the loaded state into the optimizer.",
            f"模型恢复了，优化器却没有（Adam 的 step 是 {seen['optim_step']}，检查点里是 "
            f"{seen['saved']['optim_step']}）。optimizer.state_dict() 用数字给参数编号，和 DCP 检查点里的键"
            "对不上；get_state_dict(model, optimizer) 用参数名，set_state_dict 再把加载的状态放进优化器。",
        )
