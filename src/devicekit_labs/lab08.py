"""Self-checks for lab 08 (multi-GPU: DataParallel and DDP).

The checks run the learner's code for real: exercise 1 on a table of ``torchrun`` environments,
exercise 2 by building a real ``DistributedDataParallel`` in a one-process ``gloo`` group, exercise 3
by starting two real processes (``devicekit_labs.workers.straggler_demo``) with the learner's settings.
"""

from __future__ import annotations

import math
import tempfile
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from devicekit.distributed import DistInfo, setup, spawn, teardown
from devicekit_labs import Fail, exercise

LAB = "08-multi-gpu"

#: (environment, visible GPUs) -> the backend and device a correct per-rank plan returns.
RANK_PLAN_CASES: list[tuple[dict[str, str], int, str, torch.device]] = [
    ({"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "2"}, 2, "nccl", torch.device("cuda", 0)),
    ({"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2"}, 2, "nccl", torch.device("cuda", 1)),
    # Second machine of two, 4 GPUs each: the global rank is 5, the GPU is picked by the local rank.
    ({"RANK": "5", "LOCAL_RANK": "1", "WORLD_SIZE": "8"}, 4, "nccl", torch.device("cuda", 1)),
    ({"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2"}, 0, "gloo", torch.device("cpu")),
    ({}, 0, "gloo", torch.device("cpu")),  # a notebook: no torchrun variables at all
    ({}, 1, "nccl", torch.device("cuda", 0)),
]


@exercise(
    LAB,
    "rank-plan",
    1,
    "plan each rank's backend and device",
    "为每个 rank 规划后端和设备",
    target="rank_plan",
)
def check_rank_plan(rank_plan) -> None:
    for env, gpus, backend, device in RANK_PLAN_CASES:
        got = rank_plan(dict(env), gpus)
        if not isinstance(got, dict) or set(got) != {"backend", "device"}:
            raise Fail(
                'return a dict with exactly two keys: {"backend": ..., "device": ...}.',
                '要返回恰好有两个键的 dict：{"backend": ..., "device": ...}。',
            )
        where = f"env={env}, {gpus} GPU(s)"
        if got["backend"] != backend:
            raise Fail(
                f"for {where} you chose backend {got['backend']!r}. NCCL only moves CUDA tensors; gloo is "
                "the backend for CPU processes.",
                f"env={env}、{gpus} 块 GPU 时你选了后端 {got['backend']!r}。"
                "NCCL 只能传输 CUDA 张量；CPU 进程用 gloo。",
            )
        try:
            got_device = torch.device(got["device"])
        except (TypeError, RuntimeError):
            raise Fail(
                f"for {where}, {got['device']!r} is not a device.",
                f"env={env}、{gpus} 块 GPU 时，{got['device']!r} 不是一个设备。",
            ) from None
        if got_device != device:
            raise Fail(
                f"for {where} you chose {got_device}. Which variable numbers the processes on one machine, "
                "and what is it when torchrun did not run (a notebook)?",
                f"env={env}、{gpus} 块 GPU 时你选了 {got_device}。"
                "哪个变量给同一台机器上的进程编号？"
                "没有用 torchrun 启动时（比如在 notebook 里）它又该取什么值？",
            )


def _params_on(module: nn.Module) -> set[torch.device]:
    return {t.device for t in [*module.parameters(), *module.buffers()]}


@exercise(LAB, "wrap-model", 2, "wrap the model for this rank", "为本 rank 包装模型", target="wrap_model")
def check_wrap_model(wrap_model) -> None:
    from torch.nn.parallel import DistributedDataParallel as DDP

    was_initialized = dist.is_initialized()
    info = setup("gloo") if not was_initialized else None
    try:
        infos: list[DistInfo] = [info or setup()]
        if torch.cuda.is_available():  # on a GPU runner the CUDA branch runs for real as well
            cpu = infos[0]
            # gloo also all-reduces CUDA tensors, so the same one-process group serves both cases.
            infos.append(DistInfo(cpu.rank, 0, cpu.world_size, "nccl", torch.device("cuda", 0)))
        for rank_info in infos:
            torch.manual_seed(0)
            model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))
            wrapped = wrap_model(model, rank_info)
            if not isinstance(wrapped, DDP):
                raise Fail(
                    f"expected a DistributedDataParallel back, got {type(wrapped).__name__}.",
                    f"应当返回 DistributedDataParallel，实际返回的是 {type(wrapped).__name__}。",
                )
            if wrapped.module is not model:
                raise Fail(
                    "wrap the model you were given (DDP(model, ...)), not a new one.",
                    "要包装传入的那个模型（DDP(model, ...)），不要新建一个。",
                )
            if _params_on(model) != {rank_info.device}:
                raise Fail(
                    f"this rank's device is {rank_info.device}, but the parameters and buffers are on "
                    f"{sorted(map(str, _params_on(model)))}. Use the device of the rank info, not a fixed "
                    "one.",
                    f"这个 rank 的设备是 {rank_info.device}，参数和缓冲区却在 "
                    f"{sorted(map(str, _params_on(model)))} 上。设备要取自 rank 信息，不要写死。",
                )
            want_ids = [rank_info.local_rank] if rank_info.device.type == "cuda" else None
            if wrapped.device_ids != want_ids:
                raise Fail(
                    f"on {rank_info.device} the DDP has device_ids={wrapped.device_ids}. device_ids names "
                    "this rank's one GPU, and only a GPU module may have it.",
                    f"在 {rank_info.device} 上 DDP 的 device_ids={wrapped.device_ids}。device_ids 指的是"
                    "本 rank 的那一块 GPU，只有 GPU 上的模块才能设置它。",
                )
            out = wrapped(torch.randn(3, 4, device=rank_info.device))
            if out.shape != (3, 2) or out.device != rank_info.device:
                raise Fail(
                    "the wrapped model does not compute a (3, 2) output on this rank's device.",
                    "包装后的模型没有在本 rank 的设备上算出 (3, 2) 的输出。",
                )
    finally:
        if not was_initialized:
            teardown()


def _run_straggler(timeout_s: float, probe: str) -> list[dict[str, Any]]:
    from devicekit_labs import workers as dist_workers

    with tempfile.TemporaryDirectory(prefix="lab08-") as folder:
        spawn(dist_workers.straggler_demo, nprocs=2, args=(2, folder, timeout_s, probe))
        return dist_workers.collect_results(folder)


@exercise(LAB, "fail-fast", 3, "make the hang fail fast", "让卡死尽快报错", target="fail_fast")
def check_fail_fast(fail_fast) -> None:
    from devicekit_labs.workers import PROBES

    settings = fail_fast()
    if not isinstance(settings, dict) or set(settings) != {"timeout_s", "probe"}:
        raise Fail(
            'return {"timeout_s": seconds, "probe": "all_reduce" or "monitored_barrier"}.',
            '要返回 {"timeout_s": 秒数, "probe": "all_reduce" 或 "monitored_barrier"}。',
        )
    timeout_s, probe = settings["timeout_s"], settings["probe"]
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or not math.isfinite(timeout_s):
        raise Fail("timeout_s must be a number of seconds.", "timeout_s 必须是秒数。")
    if not 0.5 <= timeout_s <= 5:
        raise Fail(
            f"timeout_s={timeout_s}: pick a timeout between 0.5 and 5 seconds for this lab (a real job "
            "needs more than its slowest step, but far less than the default 30 minutes).",
            f"timeout_s={timeout_s}：本实验请选 0.5 到 5 秒之间的超时（真实任务要比最慢的一步长，但远小于"
            "默认的 30 分钟）。",
        )
    if probe not in PROBES:
        raise Fail(f"probe must be one of {PROBES}.", f"probe 只能是 {PROBES} 之一。")
    results = _run_straggler(float(timeout_s), probe)
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
            f"missing: {error[:90]!r}. One of the two probes names the ranks that never arrived.",
            f"rank 0 在 {waiting[0]['waited_s']} 秒后报错，但报错没有说缺的是哪个 rank：{error[:90]!r}。"
            "两种探测方式中，有一种会点名没有到场的 rank。",
        )
