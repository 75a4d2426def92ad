"""Mutation cases for lab 08 (multi-GPU). WRONG: (name, answer, hint substring in English), the taught bug
first; RIGHT: (name, answer), different right answers. Exercise 2 runs on two GPUs, real or simulated: the
answers that send a model to "cuda" (the current GPU, cuda:0) fail for local rank 1. A wrong answer that only
a second GPU reveals has "cuda:1" in its hint (tests/gpu skips it on a machine with one GPU)."""

from __future__ import annotations

import copy

import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from mutations import untouched

LAB = "08-multi-gpu"


# --- rank-plan ---------------------------------------------------------------------------------------------


def plan_by_global_rank(env, gpus):
    """The taught bug: the GPU picked by RANK, which numbers processes across all machines."""
    if gpus == 0:
        return {"backend": "gloo", "device": torch.device("cpu")}
    return {"backend": "nccl", "device": torch.device("cuda", int(env.get("RANK", 0)))}


def plan_always_gpu_zero(env, gpus):
    if gpus == 0:
        return {"backend": "gloo", "device": torch.device("cpu")}
    return {"backend": "nccl", "device": torch.device("cuda", 0)}


def plan_nccl_everywhere(env, gpus):
    device = torch.device("cuda", int(env.get("LOCAL_RANK", 0))) if gpus else torch.device("cpu")
    return {"backend": "nccl", "device": device}


def plan_needs_torchrun(env, gpus):
    local_rank = int(env["LOCAL_RANK"])
    if gpus == 0:
        return {"backend": "gloo", "device": torch.device("cpu")}
    return {"backend": "nccl", "device": torch.device("cuda", local_rank)}


def plan_as_a_tuple(env, gpus):
    if gpus == 0:
        return "gloo", torch.device("cpu")
    return "nccl", torch.device("cuda", int(env.get("LOCAL_RANK", 0)))


def plan_ok(env, gpus):
    local_rank = int(env.get("LOCAL_RANK", 0))
    if gpus == 0:
        return {"backend": "gloo", "device": torch.device("cpu")}
    return {"backend": "nccl", "device": torch.device("cuda", local_rank)}


def plan_with_strings(env, gpus):
    if not gpus:
        return {"device": "cpu", "backend": "gloo"}
    return {"device": f"cuda:{env.get('LOCAL_RANK', '0')}", "backend": "nccl"}


# --- wrap-model --------------------------------------------------------------------------------------------


def wrap_one_gpu_script(model, info):
    """The taught bug: the one-GPU script, every rank on cuda:0."""
    model = model.to("cuda")
    return DDP(model, device_ids=[0])


def wrap_without_moving(model, info):
    ids = [info.local_rank] if info.device.type == "cuda" else None
    return DDP(model, device_ids=ids)


def wrap_fixed_device_ids(model, info):
    model = model.to(info.device)
    return DDP(model, device_ids=[0]) if info.device.type == "cuda" else DDP(model)


def wrap_global_rank_ids(model, info):
    model = model.to(info.device)
    return DDP(model, device_ids=[info.rank]) if info.device.type == "cuda" else DDP(model)


def wrap_ids_on_the_cpu_too(model, info):
    return DDP(model.to(info.device), device_ids=[info.local_rank])


def wrap_one_gpu_script_on_gpu_ranks(model, info):
    """The one-GPU script on GPU ranks, plain DDP on the CPU: right for rank 0, wrong for local rank 1."""
    if info.device.type == "cpu":
        return DDP(model)
    return DDP(model.to("cuda"), device_ids=[0])


def wrap_returns_the_model(model, info):
    return model.to(info.device)


def wrap_a_new_model(model, info):
    fresh = copy.deepcopy(model).to(info.device)
    return DDP(fresh, device_ids=[info.local_rank] if info.device.type == "cuda" else None)


def wrap_ok(model, info):
    model = model.to(info.device)
    if info.device.type == "cuda":
        return DDP(model, device_ids=[info.local_rank])
    return DDP(model)


def wrap_cuda_no_index(model, info):
    """`.cuda()` without an index: the current GPU, cuda:0, for every rank; device_ids are right."""
    if info.device.type != "cuda":
        return DDP(model)
    return DDP(model.cuda(), device_ids=[info.local_rank])


def wrap_to_cuda_string(model, info):
    """`.to("cuda")` when the rank is on a GPU: cuda:0 again, whatever the local rank."""
    model = model.to("cuda" if info.device.type == "cuda" else "cpu")
    return DDP(model, device_ids=[info.local_rank]) if info.device.type == "cuda" else DDP(model)


def wrap_set_device_first(model, info):
    """torch.cuda.set_device(local rank), then `.cuda()`: right on a GPU, as torchrun scripts do it."""
    if info.device.type != "cuda":
        return DDP(model)
    torch.cuda.set_device(info.local_rank)
    return DDP(model.cuda(), device_ids=[torch.cuda.current_device()])


def wrap_cuda_method(model, info):
    """`.cuda(local_rank)` and an explicit output_device: the GPU of this rank, named twice."""
    if info.device.type != "cuda":
        return DDP(model.cpu())
    model.cuda(info.local_rank)
    return DDP(model, device_ids=[info.local_rank], output_device=info.local_rank)


def wrap_no_device_ids(model, info):
    """No device_ids on any rank: documented for a module on one GPU, where DDP then leaves the inputs where
    they are (torch/nn/parallel/distributed.py, lines 677-688, v2.13.0; review 47, F2)."""
    return DDP(model.to(info.device))


def wrap_device_in_ids(model, info):
    model.to(device=info.device)
    return DDP(model, device_ids=[info.device] if info.device.type == "cuda" else None)


# --- fail-fast ---------------------------------------------------------------------------------------------


def fail_fast_default_timeout():
    """The taught bug: NCCL's default, 30 minutes, the hang that costs GPU-hours."""
    return {"timeout_s": 1800, "probe": "monitored_barrier"}


def fail_fast_all_reduce():
    return {"timeout_s": 2.0, "probe": "all_reduce"}


def fail_fast_too_short():
    return {"timeout_s": 0.1, "probe": "monitored_barrier"}


def fail_fast_text_timeout():
    return {"timeout_s": "2", "probe": "monitored_barrier"}


def fail_fast_plain_barrier():
    return {"timeout_s": 2, "probe": "barrier"}


def fail_fast_wrong_keys():
    return {"timeout": 2, "probe": "monitored_barrier"}


def fail_fast_ok():
    return {"timeout_s": 2.0, "probe": "monitored_barrier"}


def fail_fast_int_seconds():
    """An int and a computed value: the same setting as fail_fast_ok, so the check reuses that launch."""
    settings = dict(probe="monitored_barrier")
    settings["timeout_s"] = 4 // 2
    return settings


WRONG = {
    "rank-plan": [
        ("GPU picked by RANK", plan_by_global_rank, "Which variable numbers the processes on one machine"),
        ("every rank on cuda:0", plan_always_gpu_zero, "Which variable numbers the processes on one machine"),
        ("nccl without GPUs", plan_nccl_everywhere, "gloo is the backend for CPU"),
        ("needs torchrun's variables", plan_needs_torchrun, "KeyError"),
        ("a tuple, not a dict", plan_as_a_tuple, "exactly two keys"),
        ("untouched stub", untouched, "not done yet"),
    ],
    "wrap-model": [
        ("the one-GPU script", wrap_one_gpu_script, "move the model to the device of the rank info"),
        ("model never moved", wrap_without_moving, "move the model to the device of the rank info"),
        (
            "device_ids=[0] on every rank",
            wrap_fixed_device_ids,
            "(local rank 1, device cuda:1) the DDP got device_ids=[0]",
        ),
        ("device_ids from the global rank", wrap_global_rank_ids, "numbered on its own machine"),
        ("device_ids for a CPU module", wrap_ids_on_the_cpu_too, "only a GPU module may have it"),
        ("returns the model unwrapped", wrap_returns_the_model, "expected one DistributedDataParallel"),
        ("wraps a new model", wrap_a_new_model, "wrap the model you were given"),
        (".cuda() without an index", wrap_cuda_no_index, "device cuda:1) the model was on cuda:0"),
        ('.to("cuda") for a GPU rank', wrap_to_cuda_string, "device cuda:1) the model was on cuda:0"),
        (
            "the one-GPU script on GPU ranks only",
            wrap_one_gpu_script_on_gpu_ranks,
            "for rank 1 (local rank 1, device cuda:1)",
        ),
        ("untouched stub", untouched, "not done yet"),
    ],
    "fail-fast": [
        ("the 30-minute default", fail_fast_default_timeout, "between 0.5 and 5 seconds"),
        ("all_reduce never names the rank", fail_fast_all_reduce, "does not say which rank"),
        ("too short a timeout", fail_fast_too_short, "between 0.5 and 5 seconds"),
        ("timeout as text", fail_fast_text_timeout, "number of seconds"),
        ("a probe that does not exist", fail_fast_plain_barrier, "probe must be one of"),
        ("wrong keys", fail_fast_wrong_keys, "timeout_s"),
        ("untouched stub", untouched, "not done yet"),
    ],
}

RIGHT = {
    "rank-plan": [
        ("torch.device objects", plan_ok),
        ("device strings, keys in another order", plan_with_strings),
    ],
    "wrap-model": [
        ("model.to(info.device)", wrap_ok),
        ("model.cuda(local_rank) with output_device", wrap_cuda_method),
        ("device_ids as torch.device", wrap_device_in_ids),
        ("torch.cuda.set_device, then .cuda()", wrap_set_device_first),
        ("no device_ids, a module on one GPU", wrap_no_device_ids),
    ],
    "fail-fast": [("monitored_barrier, 2.0 s", fail_fast_ok), ("the same as an int", fail_fast_int_seconds)],
}
