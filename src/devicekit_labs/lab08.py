"""Self-checks for lab 08 (multi-GPU: DataParallel and DDP).

The checks run the learner's code for real: exercise 1 on a table of ``torchrun`` environments; exercise 2
for a CPU rank and for ranks on two GPUs, real or simulated (`devicekit_labs.machine.probe_devices`: local
ranks 0 and 1, and a rank 5 on a second machine), with DDP's construction recorded instead of run (no
process group needed) and the model really moved where the learner moves it; exercise 3 by starting two real
processes (``devicekit_labs.workers.straggler_demo``) with the learner's settings, once per distinct setting.
Those processes run on the CPU with gloo wherever the check runs: a simulation does not follow a process
into its children, so that probe runs outside it (``gpus=0``).
"""

from __future__ import annotations

import contextlib
import math
import tempfile
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from devicekit.distributed import DistInfo, spawn
from devicekit_labs import Fail, failed_call, judged, observe
from devicekit_labs.machine import probe_devices

LAB = "08-multi-gpu"

# --- exercise 1 ------------------------------------------------------------------------------------------

#: (environment torchrun sets, GPUs on the machine): the processes the check asks about.
RANK_PLAN_CASES: list[tuple[dict[str, str], int]] = [
    ({"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "2"}, 2),
    ({"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2"}, 2),
    # Second machine of two, 4 GPUs each: the global rank is 5, the local rank 1.
    ({"RANK": "5", "LOCAL_RANK": "1", "WORLD_SIZE": "8"}, 4),
    ({"RANK": "7", "LOCAL_RANK": "3", "WORLD_SIZE": "8"}, 4),
    ({"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2"}, 0),
    ({}, 0),  # a notebook: no torchrun variables at all
    ({}, 1),
]


def _expected_plan(env: dict[str, str], gpus: int) -> tuple[str, torch.device]:
    """The exercise's stated rule: nccl and the process's own GPU with GPUs, gloo and the CPU without."""
    if gpus == 0:
        return "gloo", torch.device("cpu")
    return "nccl", torch.device("cuda", int(env.get("LOCAL_RANK", 0)))


@judged(
    LAB,
    "rank-plan",
    1,
    "plan each rank's backend and device",
    "为每个 rank 规划后端和设备",
    target="rank_plan",
)
def probe_rank_plan(rank_plan) -> dict:
    if not callable(rank_plan):
        return {"callable": False}
    answers = []
    for env, gpus in RANK_PLAN_CASES:
        got = observe(rank_plan, dict(env), gpus)
        if "error" in got:
            answers.append(got)
            continue
        value = got["value"]
        if not isinstance(value, dict) or set(value) != {"backend", "device"}:
            answers.append({"value": None})
            continue
        device = value["device"]
        try:
            device = str(torch.device(device))
        except (TypeError, RuntimeError):
            device = {"not_a_device": repr(device)[:60]}
        answers.append({"value": {"backend": repr(value["backend"])[:40], "device": device}})
    return {"callable": True, "answers": answers}


@probe_rank_plan.judge
def judge_rank_plan(seen: dict) -> None:
    if not seen["callable"]:
        raise Fail("expected a function rank_plan(env, gpus).", "应当是函数 rank_plan(env, gpus)。")
    for (env, gpus), answer in zip(RANK_PLAN_CASES, seen["answers"], strict=True):
        where_en, where_zh = f"env={env}, {gpus} GPU(s)", f"env={env}、{gpus} 块 GPU 时"
        failed_call(answer, f"for {where_en}", where_zh)
        got = answer["value"]
        if got is None:
            raise Fail(
                'return a dict with exactly two keys: {"backend": ..., "device": ...}.',
                '要返回恰好有两个键的字典：{"backend": ..., "device": ...}。',
            )
        backend, device = _expected_plan(env, gpus)
        if got["backend"] != repr(backend):
            raise Fail(
                f"for {where_en} you chose backend {got['backend']}. With GPUs, each process drives its own "
                "GPU with nccl; gloo is the backend for CPU processes (NCCL only moves CUDA tensors).",
                f"{where_zh}，你选了后端 {got['backend']}。有 GPU 时，每个进程用 nccl 驱动自己的 GPU；"
                "gloo 用于 CPU 进程（NCCL 只能传输 CUDA 张量）。",
            )
        if isinstance(got["device"], dict):
            raise Fail(
                f"for {where_en}, {got['device']['not_a_device']} is not a device.",
                f"{where_zh}，{got['device']['not_a_device']} 不是一个设备。",
            )
        if torch.device(got["device"]) != device:
            raise Fail(
                f"for {where_en} you chose {got['device']}. Which variable numbers the processes on one "
                "machine, "
                "and what is it when torchrun did not run (a notebook)?",
                f"{where_zh}，你选了 {got['device']}。哪个变量给同一台机器上的进程编号？"
                "没有用 torchrun 启动时（比如在 notebook 里）它又该取什么值？",
            )


# --- exercise 2 ------------------------------------------------------------------------------------------


class _HandedModel(nn.Sequential):
    """The model the check hands to ``wrap_model``, a class of its own so that a new model is told apart."""

    def __init__(self) -> None:
        torch.manual_seed(0)
        super().__init__(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))


def _device_ids(ids: object) -> object:
    """DDP's device_ids as plain data: None, or a list of GPU indexes (a str for anything else)."""
    if ids is None:
        return None
    if not isinstance(ids, list | tuple):
        return repr(ids)[:40]
    out: list = []
    for item in ids:
        if isinstance(item, int) and not isinstance(item, bool):
            out.append(item)
        elif isinstance(item, torch.device | str):
            dev = torch.device(item)
            out.append(dev.index if dev.type == "cuda" and dev.index is not None else str(dev))
        else:
            out.append(repr(item)[:20])
    return out


@contextlib.contextmanager
def _recording_ddp(calls: list[dict]) -> Iterator[type]:
    """Inside: constructing a `DistributedDataParallel` records its arguments instead of running DDP.

    The real constructor needs a process group of the rank's world size, which one process cannot make.
    The recorded object is still a `DistributedDataParallel` with ``.module`` and ``.device_ids``.
    """
    from torch.nn.parallel import DistributedDataParallel as DDP

    original = DDP.__init__

    def init(self, module, device_ids=None, output_device=None, *args, **kwargs) -> None:
        nn.Module.__init__(self)
        self.module = module
        self.device_ids = device_ids
        calls.append(
            {
                "module_is_handed_model": isinstance(module, _HandedModel),
                "param_devices": sorted({str(t.device) for t in [*module.parameters(), *module.buffers()]}),
                "device_ids": _device_ids(device_ids),
                "output_device": None if output_device is None else _device_ids([output_device])[0],
            }
        )

    DDP.__init__ = init
    try:
        yield DDP
    finally:
        DDP.__init__ = original


def _wrap_cases() -> list[DistInfo]:
    """The ranks the check wraps a model for: a CPU rank (gloo), a rank on each GPU of this machine (two,
    real or simulated, so a model sent to ``"cuda"`` lands on the wrong one for local rank 1), and rank 5
    of a second machine on its last GPU (global and local rank differ)."""
    gpus = probe_devices()
    cases = [DistInfo(0, 0, 2, "gloo", torch.device("cpu"))]
    cases += [DistInfo(gpu.index, gpu.index, 2, "nccl", gpu) for gpu in gpus]
    last = gpus[-1]
    cases.append(DistInfo(4 + last.index, last.index, 8, "nccl", last))
    return cases


@judged(LAB, "wrap-model", 2, "wrap the model for this rank", "为本 rank 包装模型", target="wrap_model")
def probe_wrap_model(wrap_model) -> dict:
    if not callable(wrap_model):
        return {"callable": False}
    cases = []
    for info in _wrap_cases():
        calls: list[dict] = []
        model = _HandedModel()
        # torch.cuda.device restores the current GPU: an answer that calls set_device leaves nothing behind
        with _recording_ddp(calls) as DDP, torch.cuda.device(torch.cuda.current_device()):
            got = observe(wrap_model, model, info)
        seen: dict = {
            "rank": info.rank,
            "local_rank": info.local_rank,
            "device": str(info.device),
            "calls": calls,
        }
        if "error" in got:
            seen["error"] = got["error"]
        else:
            wrapped = got["value"]
            seen["returned"] = type(wrapped).__name__
            seen["returned_ddp"] = isinstance(wrapped, DDP)
            seen["wraps_given_model"] = getattr(wrapped, "module", None) is model
        cases.append(seen)
    return {"callable": True, "cases": cases}


def _where_model_went(call: dict) -> str:
    """The device(s) the model's parameters and buffers were on when DDP was built."""
    return ", ".join(call["param_devices"])


@probe_wrap_model.judge
def judge_wrap_model(seen: dict) -> None:
    if not seen["callable"]:
        raise Fail("expected a function wrap_model(model, info).", "应当是函数 wrap_model(model, info)。")
    for case in seen["cases"]:
        rank, device = case["rank"], torch.device(case["device"])
        label_en = f"rank {rank} (local rank {case['local_rank']}, device {device})"
        label_zh = f"rank {rank}（LOCAL_RANK={case['local_rank']}，设备 {device}）"
        failed_call(case, f"for {label_en}", f"{label_zh}时")
        if not case["returned_ddp"] or len(case["calls"]) != 1:
            raise Fail(
                f"for {label_en}, expected one DistributedDataParallel back, got {case['returned']}.",
                f"{label_zh}，应当返回一个 DistributedDataParallel，实际返回的是 {case['returned']}。",
            )
        call = case["calls"][0]
        if not case["wraps_given_model"] or not call["module_is_handed_model"]:
            raise Fail(
                "wrap the model you were given (DDP(model, ...)), not a new one.",
                "要包装传入的那个模型（DDP(model, ...)），不要新建一个。",
            )
        went = _where_model_went(call)
        if call["param_devices"] != [str(device)]:
            current_en, current_zh = "", ""
            if went == "cuda:0" and device.type == "cuda":
                current_en = (
                    ' `.cuda()` and "cuda" mean the current GPU (cuda:0 unless set_device changed it).'
                )
                current_zh = '`.cuda()` 和 "cuda" 指的是当前 GPU（没用 set_device 改过就是 cuda:0）。'
            raise Fail(
                f"for {label_en} the model was on {went} when DDP wrapped it. Each process drives its own "
                "device: move the model to the device of the rank info before wrapping it, not to a fixed "
                f"one.{current_en}",
                f"{label_zh}，DDP 包装模型时模型在 {went} 上。每个进程只驱动自己的那个设备：包装之前要把模型"
                f"移到 rank 信息里的设备上，而不是写死的设备。{current_zh}",
            )
        ids = call["device_ids"]
        # no device_ids (None, or [] "for backward compatibility") and no output_device: right for a CPU
        # module, and for a module on one GPU too, where DDP then leaves the inputs where they are;
        # device_ids=[local rank] only for a GPU module (torch/nn/parallel/distributed.py, the device_ids
        # docstring, lines 677-688; __init__, lines 930-948; forward moves inputs only "if
        # self.device_ids", lines 1788-1792; v2.13.0)
        ok = ids in (None, []) and call["output_device"] is None
        if device.type == "cuda" and not ok:
            ok = ids == [case["local_rank"]] and call["output_device"] in (None, case["local_rank"])
        if not ok:
            got = f"device_ids={ids}"
            if call["output_device"] is not None:
                got += f", output_device={call['output_device']}"
            raise Fail(
                f"for {label_en} the DDP got {got}. device_ids, when given, names this rank's one GPU, "
                "numbered on its own machine, and only a GPU module may have it.",
                f"{label_zh}，DDP 拿到的是 {got}。device_ids 如果写了，指的就是本 rank 的那一块 GPU"
                "（按它所在机器上的编号），而且只有 GPU 上的模块才能设置它。",
            )


# --- exercise 3 ------------------------------------------------------------------------------------------

#: Results of straggler runs that ended as expected, by (timeout, probe): a setting is launched once.
_STRAGGLER_RUNS: dict[tuple[float, str], list[dict[str, Any]]] = {}


def _run_straggler(timeout_s: float, probe: str) -> list[dict[str, Any]]:
    from devicekit_labs import workers as dist_workers

    key = (float(timeout_s), probe)
    if key in _STRAGGLER_RUNS:
        return _STRAGGLER_RUNS[key]
    with tempfile.TemporaryDirectory(prefix="lab08-") as folder:
        spawn(dist_workers.straggler_demo, nprocs=2, args=(2, folder, timeout_s, probe))
        results = dist_workers.collect_results(folder)
    waiting = [r for r in results if r.get("called") is not None]
    if len(results) == 2 and len(waiting) == 1 and waiting[0].get("error"):
        _STRAGGLER_RUNS[key] = results
    return results


def _timeout_ok(timeout_s: object) -> bool:
    return (
        isinstance(timeout_s, int | float)
        and not isinstance(timeout_s, bool)
        and math.isfinite(timeout_s)
        and 0.5 <= timeout_s <= 5
    )


@judged(LAB, "fail-fast", 3, "make the hang fail fast", "让卡死尽快报错", target="fail_fast", gpus=0)
def probe_fail_fast(fail_fast) -> dict:
    from devicekit_labs.workers import PROBES

    got = observe(fail_fast) if callable(fail_fast) else {"value": fail_fast}
    if "error" in got:
        return {"settings": got}
    settings = got["value"]
    if not isinstance(settings, dict) or set(settings) != {"timeout_s", "probe"}:
        return {"settings": {"value": None}}
    timeout_s, probe = settings["timeout_s"], settings["probe"]
    plain = {
        "timeout_s": timeout_s if isinstance(timeout_s, int | float) else repr(timeout_s),
        "probe": probe if isinstance(probe, str) else repr(probe),
    }
    seen: dict = {"settings": {"value": plain}}
    if _timeout_ok(timeout_s) and probe in PROBES:
        seen["results"] = [
            {"called": r.get("called"), "error": r.get("error"), "waited_s": r.get("waited_s")}
            for r in _run_straggler(float(timeout_s), probe)
        ]
    return seen


@probe_fail_fast.judge
def judge_fail_fast(seen: dict) -> None:
    failed_call(seen["settings"], "fail_fast()", "fail_fast()")
    settings = seen["settings"]["value"]
    if settings is None:
        raise Fail(
            'return {"timeout_s": seconds, "probe": "all_reduce" or "monitored_barrier"}.',
            '要返回 {"timeout_s": 秒数, "probe": "all_reduce" 或 "monitored_barrier"}。',
        )
    timeout_s, probe = settings["timeout_s"], settings["probe"]
    if (
        isinstance(timeout_s, bool | str)
        or not isinstance(timeout_s, int | float)
        or not math.isfinite(timeout_s)
    ):
        raise Fail("timeout_s must be a number of seconds.", "timeout_s 必须是秒数。")
    if not 0.5 <= timeout_s <= 5:
        raise Fail(
            f"timeout_s={timeout_s}: pick a timeout between 0.5 and 5 seconds for this lab (a real job "
            "needs more "
            "than its slowest step, but far less than the default 30 minutes).",
            f"timeout_s={timeout_s}：本实验请选 0.5 到 5 秒之间的超时（真实任务的超时要比最慢的一步长，"
            "但远小于默认的 30 分钟）。",
        )
    from devicekit_labs.workers import PROBES

    if probe not in PROBES:
        raise Fail(f"probe must be one of {PROBES}.", f"probe 只能是 {PROBES} 之一。")
    results = seen["results"]
    waiting = [r for r in results if r["called"] is not None]
    if len(results) != 2 or len(waiting) != 1 or waiting[0]["error"] is None:
        raise Fail(
            "the run did not end with an error on the waiting rank; run the check again.",
            "这次运行里等待的 rank 没有报错；请再运行一次自测。",
        )
    error = waiting[0]["error"]
    if "Ranks 1" not in error and "Rank 1" not in error:
        raise Fail(
            f"rank 0 failed after {waiting[0]['waited_s']} s, but its error does not say which rank is "
            "missing: "
            f"{error[:90]!r}. One of the two probes names the ranks that never arrived.",
            f"rank 0 在 {waiting[0]['waited_s']} 秒后报错，但报错没有说缺的是哪个 rank：{error[:90]!r}。"
            "两种探测方式中，有一种会点名没有到场的 rank。",
        )
