"""Self-checks for lab 06 (checkpoints across devices), and the checkpoint a GPU run would have written.

The lab needs a checkpoint whose storages claim a CUDA device this machine does not have. `torch.save`
records, for each storage, a tuple ``("storage", storage_type, key, location, numel)`` in the archive's
``data.pkl``; ``location`` is whatever the first registered *tagger* returns (``"cpu"``, ``"cuda:0"``...):
see ``persistent_id`` in ``_save`` and ``location_tag`` in ``torch/serialization.py``
(https://github.com/pytorch/pytorch/blob/v2.13.0/torch/serialization.py). The storage bytes themselves are
always written from host memory. So a tagger registered with `torch.serialization.register_package` that
answers ``"cuda:0"`` for chosen storages makes `torch.save` write the record a save on ``cuda:0`` writes.

The checks run on the CPU and on two GPUs, real or simulated (`devicekit_labs.machine`), with real values on
each: a load onto ``cuda:1`` shows an answer that writes ``"cuda"`` (``cuda:0``), and one more training step
after resuming is compared with a run that never stopped on every device.
"""

from __future__ import annotations

import argparse
import contextvars
import io
import math
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import torch
from torch import nn

from devicekit_labs import Fail, describe_tensor, failed_call, judged, observe
from devicekit_labs.machine import probe_devices

LAB = "06-checkpoints"

# storage id (UntypedStorage._cdata) -> the location torch.save records for it, while save_as_if_on runs
_CLAIMS: contextvars.ContextVar[dict[int, str] | None] = contextvars.ContextVar(
    "devicekit_lab06_claims", default=None
)


def _claimed_location(storage) -> str | None:
    """Tagger for torch.serialization: the claimed location of ``storage``, or None (PyTorch's own then).

    Built afresh for every storage, as PyTorch's own CUDA tagger (``_backend_tag``) builds it: pickle
    memoizes a string object it has seen, so handing back one shared string would write a back-reference
    instead of the location in full, and ``data.pkl`` would differ from a real save's.
    """
    claims = _CLAIMS.get()
    claim = None if claims is None else claims.get(storage._cdata)
    if claim is None:
        return None
    device = torch.device(claim)
    return device.type if device.index is None else device.type + ":" + str(device.index)


def _never_deserialize(storage, location: str) -> None:
    return None  # loading stays PyTorch's own business


# Registered once per process, at import: a lower number runs before PyTorch's own taggers (cpu is 10,
# cuda 20). Once per process even when this file runs twice (the grader executes its own copy over the
# installed one): two entries of the same priority would make PyTorch sort two functions and fail.
if not getattr(torch.serialization, "_devicekit_lab06_tagger", False):
    torch.serialization.register_package(-60, _claimed_location, _never_deserialize)
    torch.serialization._devicekit_lab06_tagger = True


def missing_cuda_device() -> str:
    """The first CUDA device this machine lacks: ``cuda:1`` with one GPU (real or simulated), ``cuda:2`` with
    two (a self-check's probe), ``cuda:0`` without any."""
    return f"cuda:{torch.cuda.device_count()}"


def save_as_if_on(obj: object, f: str | os.PathLike | object, location: str, tensors: Iterable[torch.Tensor]):
    """`torch.save(obj, f)`, recording the storages of ``tensors`` at ``location`` (e.g. ``"cuda:0"``).

    The file is what a save from that device writes: the same bytes, and the location string that the
    CUDA tagger would have returned. Storages not in ``tensors`` keep their real location (``"cpu"``).
    """
    if not isinstance(location, str) or not location:
        raise ValueError(f"location must be a device string such as 'cuda:0', got {location!r}")
    try:
        torch.device(location)
    except RuntimeError as err:
        raise ValueError(f"location must be a device string such as 'cuda:0', got {location!r}") from err
    claims = {t.untyped_storage()._cdata: location for t in tensors}
    token = _CLAIMS.set(claims)
    try:
        torch.save(obj, f)
    finally:
        _CLAIMS.reset(token)


# --- the training run of the lab ------------------------------------------------------------------------


def make_model() -> nn.Module:
    """The lab's small model, always with the same initial weights."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))


def make_optimizer(model: nn.Module) -> torch.optim.Optimizer:
    return torch.optim.Adam(model.parameters(), lr=0.01)


def make_scheduler(optimizer: torch.optim.Optimizer) -> torch.optim.lr_scheduler.LRScheduler:
    """A warm-up: the learning rate grows from 1/4 to all of it over three steps."""
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / 4))


def batches(
    start: int, count: int, device: torch.device | str
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Batches number ``start`` .. ``start + count - 1`` of the lab's data: the same numbers on every run."""
    for number in range(start, start + count):
        gen = torch.Generator().manual_seed(1000 + number)
        x = torch.randn(16, 4, generator=gen)
        y = torch.randn(16, 2, generator=gen)
        yield x.to(device), y.to(device)


def train(model, optimizer, scheduler, start: int, count: int) -> int:
    """Run ``count`` training steps from batch ``start`` on the model's device; returns the next batch."""
    device = next(model.parameters()).device
    for x, y in batches(start, count, device):
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        scheduler.step()
    return start + count


def gpu_run_checkpoint(path: str | os.PathLike, steps: int = 3) -> dict:
    """Train ``steps`` steps and save a checkpoint to ``path`` as a run on a GPU would have saved it.

    Everything that lives on the GPU during such a run (parameters, buffers, and the optimizer state next
    to each parameter) is recorded at `missing_cuda_device`; Adam's ``step`` counters stay ``"cpu"``, as
    they do on a GPU (non-fused, non-capturable Adam keeps them on the CPU:
    https://github.com/pytorch/pytorch/blob/v2.13.0/torch/optim/adam.py, ``_init_group``).
    Returns the checkpoint as it is in memory here (on the CPU).
    """
    model = make_model()
    optimizer = make_optimizer(model)
    scheduler = make_scheduler(optimizer)
    next_batch = train(model, optimizer, scheduler, 0, steps)
    checkpoint = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "next_batch": next_batch,
    }
    on_gpu = list(checkpoint["model"].values()) + [
        value
        for state in checkpoint["optimizer"]["state"].values()
        for key, value in state.items()
        if key != "step" and isinstance(value, torch.Tensor)
    ]
    save_as_if_on(checkpoint, path, missing_cuda_device(), on_gpu)
    return checkpoint


# --- checks --------------------------------------------------------------------------------------------


def _target_devices() -> list[torch.device]:
    """Where the checks load to: the CPU and the probe's GPUs (cuda:0 and cuda:1, real or simulated)."""
    return [torch.device("cpu"), *probe_devices()]


def _tensors(obj: object, where: str = "checkpoint") -> Iterator[tuple[str, torch.Tensor]]:
    if isinstance(obj, torch.Tensor):
        yield where, obj
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield from _tensors(value, f"{where}[{key!r}]")
    elif isinstance(obj, (list, tuple)):
        for index, value in enumerate(obj):
            yield from _tensors(value, f"{where}[{index}]")


def _same_device(a: torch.device, b: torch.device) -> bool:
    return a.type == b.type and (a.index or 0) == (b.index or 0)


def _described(obj: object) -> list[list]:
    """``[[where, describe_tensor(t)], ...]`` for every tensor of a loaded checkpoint, values included."""
    return [[where, describe_tensor(t)] for where, t in _tensors(obj)]


def _checkpoint_in_memory() -> dict:
    """The checkpoint the checks plant, as it is in memory (on the CPU): the judge's own copy."""
    return gpu_run_checkpoint(io.BytesIO())


# --- exercise 1 ------------------------------------------------------------------------------------------


@judged(
    LAB,
    "load-for-device",
    1,
    "load a checkpoint onto this machine's device",
    "把检查点加载到本机的设备上",
    target="load_for_device",
)
def probe_load_for_device(load_for_device) -> dict:
    if not callable(load_for_device):
        return {"callable": False}
    loads = []
    with tempfile.TemporaryDirectory() as tmp:
        gpu_file, cpu_file = Path(tmp) / "gpu_run.pt", Path(tmp) / "cpu_run.pt"
        saved = gpu_run_checkpoint(gpu_file)
        torch.save(saved, cpu_file)  # the other way round: a CPU run's file, loaded onto the second GPU
        gpu = missing_cuda_device()
        cases = [(gpu_file, device, f"saved on {gpu}", f"在 {gpu} 上保存") for device in _target_devices()]
        cases.append((cpu_file, _target_devices()[-1], "saved on the CPU", "在 CPU 上保存"))
        for file, device, origin, origin_zh in cases:
            got = observe(load_for_device, str(file), device)
            seen: dict = {"device": str(device), "origin": origin, "origin_zh": origin_zh}
            if "error" in got:
                seen["error"] = got["error"]
            elif isinstance(got["value"], dict):
                seen["keys"] = sorted(map(str, got["value"]))
                seen["tensors"] = _described(got["value"])
            else:
                seen["type"] = type(got["value"]).__name__
            loads.append(seen)
        unsafe = Path(tmp) / "with_an_object.pt"
        torch.save({"args": argparse.Namespace(lr=0.01)}, unsafe)
        got = observe(load_for_device, str(unsafe), torch.device("cpu"))
    refused = "error" in got and got["error"]["type"] == "UnpicklingError"
    return {"callable": True, "loads": loads, "refused_object": refused}


def _same_place(got: str, want: str) -> bool:
    return _same_device(torch.device(got), torch.device(want))


@probe_load_for_device.judge
def judge_load_for_device(seen: dict) -> None:
    if not seen["callable"]:
        raise Fail(
            "expected a function load_for_device(path, device).", "应当是函数 load_for_device(path, device)。"
        )
    saved = _checkpoint_in_memory()
    want_keys = sorted(saved)
    saved_tensors = list(_tensors(saved))
    for load in seen["loads"]:
        device, origin = load["device"], load["origin"]
        failed_call(
            load,
            f"loading a checkpoint {origin} with device={device}",
            f"device={device} 时加载一个{load['origin_zh']}的检查点",
        )
        if load.get("keys") != want_keys:
            got = load.get("keys", load.get("type"))
            raise Fail(
                f"expected the checkpoint dict with the keys {want_keys}, got {got}.",
                f"应当返回检查点字典，键为 {want_keys}，实际得到的是 {got}。",
            )
        for where, tensor in load["tensors"]:
            landed = tensor["device"]
            if landed.startswith("cuda") and device.startswith("cuda") and landed != device:
                raise Fail(
                    f'for device={device}, {where} came back on {landed}: "cuda" and .cuda() mean the '
                    "current GPU (cuda:0 unless you changed it), not the device you were given. Pass "
                    "`device` itself to map_location.",
                    f'device={device} 时，{where} 加载后在 {landed} 上："cuda" 和 .cuda() 指的是当前 GPU'
                    "（没改过就是 cuda:0），不是传进来的那个设备。请把 `device` 本身交给 map_location。",
                )
            if not _same_place(tensor["device"], device):
                raise Fail(
                    f"for a checkpoint {origin} and device={device}, {where} came back "
                    f"on {tensor['device']}. "
                    "Every tensor of the checkpoint must end up on the device you were given, the ones the "
                    "file "
                    "records on the CPU too.",
                    f"对一个{load['origin_zh']}的检查点、device={device} 时，{where} 加载后在 "
                    f"{tensor['device']} 上。检查点里的每个张量都要放到给定的设备上，文件里记录在 CPU 上的那"
                    "些也一样。",
                )
        if len(load["tensors"]) != len(saved_tensors):
            raise Fail(
                "the loaded checkpoint does not hold the saved tensors.",
                "加载出的检查点里没有保存时的那些张量。",
            )
        for (where, got), (_, want) in zip(load["tensors"], saved_tensors, strict=True):
            if got["dtype"] != str(want.dtype).removeprefix("torch.") or not torch.equal(got["values"], want):
                raise Fail(
                    f"for device={device}, {where} does not hold the saved values.",
                    f"device={device} 时，{where} 的值与保存时不同。",
                )
    if not seen["refused_object"]:
        raise Fail(
            "your function also loaded a file holding an arbitrary Python object (an argparse.Namespace). "
            "Keep "
            "torch.load's safe default: a checkpoint you did not write yourself can run code when it is "
            "unpickled without it.",
            "你的函数把一个含任意 Python 对象（argparse.Namespace）的文件也加载了。请保留 torch.load 的"
            "安全默认值：没有这层保护时，反序列化一个不是你自己保存的检查点可能执行任意代码。",
        )


# --- exercise 2 ------------------------------------------------------------------------------------------


def _resume_observation(restored: object, device: torch.device, next_batch: int) -> dict:
    if not isinstance(restored, tuple) or len(restored) != 3:
        return {"shape": "not a tuple of three"}
    model, optimizer, scheduler = restored
    if not isinstance(model, nn.Module) or not isinstance(optimizer, torch.optim.Optimizer):
        return {"shape": "not (module, optimizer, scheduler)"}
    params = list(model.parameters())
    in_optimizer = [p for group in optimizer.param_groups for p in group["params"]]
    seen: dict = {
        "shape": "ok",
        "places": [[name, str(t.device)] for name, t in [*model.named_parameters(), *model.named_buffers()]],
        # identity, as booleans: the optimizer updates exactly the model's parameter objects
        "optimizer_holds_model_params": {id(p) for p in in_optimizer} == {id(p) for p in params},
        "state": [
            {
                "param_device": str(p.device),
                "exp_avg_device": (
                    str(optimizer.state[p]["exp_avg"].device)
                    if "exp_avg" in optimizer.state.get(p, {})
                    else None
                ),
            }
            for p in params
        ],
        "step_devices": [
            str(st["step"].device)
            for st in optimizer.state.values()
            if isinstance(st.get("step"), torch.Tensor)
        ],
        "last_epoch": getattr(scheduler, "last_epoch", None),
        "has_scheduler": scheduler is not None,
        "lr": float(optimizer.param_groups[0]["lr"]),
    }
    stepped = observe(train, model, optimizer, scheduler, next_batch, 1)
    if "error" in stepped:
        seen["one_more_step"] = stepped
    else:  # the values, on every device (copied to the CPU: plain data for the judge)
        state = model.state_dict().items()
        seen["one_more_step"] = {"value": {k: v.detach().to("cpu", copy=True) for k, v in state}}
    return seen


@judged(
    LAB,
    "resume",
    2,
    "resume model, optimizer and scheduler on another device",
    "在另一个设备上恢复模型、优化器和调度器",
    target="resume",
)
def probe_resume(resume) -> dict:
    if not callable(resume):
        return {"callable": False}
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "gpu_run.pt"
        saved = gpu_run_checkpoint(path)
        for device in _target_devices():
            restored = observe(resume, str(path), device)
            if "error" in restored:
                runs.append({"device": str(device), "error": restored["error"]})
            else:
                seen = _resume_observation(restored["value"], device, saved["next_batch"])
                runs.append({"device": str(device), **seen})
    return {"callable": True, "runs": runs}


@probe_resume.judge
def judge_resume(seen: dict) -> None:
    if not seen["callable"]:
        raise Fail("expected a function resume(path, device).", "应当是函数 resume(path, device)。")
    saved = _checkpoint_in_memory()
    saved_lr = saved["optimizer"]["param_groups"][0]["lr"]
    reference = None
    for run in seen["runs"]:
        device = run["device"]
        failed_call(run, f"resume(path, {device!r})", f"resume(path, {device!r})")
        if run["shape"] != "ok":
            raise Fail(
                "expected a tuple (model, optimizer, scheduler): a module, an optimizer, a scheduler.",
                "应当返回 (model, optimizer, scheduler)：一个 nn.Module、一个优化器和一个调度器。",
            )
        for name, where in run["places"]:
            if not _same_place(where, device):
                raise Fail(
                    f"for device={device}, the model's {name} is on {where}.",
                    f"device={device} 时，模型的 {name} 在 {where} 上。",
                )
        if not run["optimizer_holds_model_params"]:
            raise Fail(
                f"for device={device}, the optimizer updates tensors that are not the parameters of the "
                "model "
                "you return: build it from that model's parameters.",
                f"device={device} 时，优化器更新的张量并不是你返回的那个模型的参数：要用这个模型的参数来创建"
                "优化器。",
            )
        for state in run["state"]:
            if state["exp_avg_device"] is None:
                raise Fail(
                    "the optimizer has no state: its state_dict from the checkpoint was not loaded.",
                    "优化器没有状态：检查点里的优化器 state_dict 没有被加载。",
                )
            if not _same_place(state["exp_avg_device"], state["param_device"]):
                raise Fail(
                    f"for device={device}, the optimizer state of a parameter on {state['param_device']} is "
                    "on "
                    f"{state['exp_avg_device']}. Optimizer.load_state_dict puts the state next to the "
                    "parameters "
                    "as they are when it runs.",
                    f"device={device} 时，参数在 {state['param_device']} 上，它的优化器状态却在 "
                    f"{state['exp_avg_device']} 上。Optimizer.load_state_dict 会把状态放到调用它那一刻参数所"
                    "在的设备上。",
                )
        off_cpu = [where for where in run["step_devices"] if torch.device(where).type != "cpu"]
        if off_cpu:
            raise Fail(
                f"for device={device}, Adam's step counters ended up on {off_cpu[0]}. Adam (not fused, not "
                "capturable) keeps them on the CPU and reads them with .item() every step: on a GPU that "
                "waits for the GPU each time. Optimizer.load_state_dict leaves them where the checkpoint put "
                "them.",
                f"device={device} 时，Adam 的 step 计数器被放到了 {off_cpu[0]} 上。Adam（非 fused、非 "
                "capturable）"
                "把它们放在 CPU 上，每一步都用 .item() 读取：放在 GPU 上时每次读取都要等 GPU。"
                "Optimizer.load_state_dict 不会移动它们，它们留在检查点加载时所在的地方。",
            )
        if not run["has_scheduler"] or run["last_epoch"] != saved["scheduler"]["last_epoch"]:
            raise Fail(
                "the scheduler does not continue where the run stopped: restore its state_dict too.",
                "调度器没有从中断处继续：它的 state_dict 也要恢复。",
            )
        if not math.isclose(run["lr"], saved_lr):
            raise Fail(
                f"the learning rate after resuming is {run['lr']:g}, the run stopped at {saved_lr:g}. "
                "Creating a "
                "scheduler sets the learning rate: create it before you load the optimizer's state.",
                f"恢复后的学习率是 {run['lr']:g}，而训练中断时是 {saved_lr:g}。创建调度器时会设置学习率："
                "要在加载优化器状态之前创建调度器。",
            )
        failed_call(run["one_more_step"], "one training step after resuming", "恢复后训练一步时")
        if reference is None:  # the run that never stopped: one more step after the checkpoint, on the CPU
            reference = make_model()
            ref_opt = make_optimizer(reference)
            train(reference, ref_opt, make_scheduler(ref_opt), 0, saved["next_batch"] + 1)
        got = run["one_more_step"]["value"]
        # a real GPU's kernels round differently from the CPU's: a looser tolerance there
        atol = 1e-6 if torch.device(device).type == "cpu" else 1e-5
        for name, want in reference.state_dict().items():
            if name not in got or not torch.allclose(got[name], want, atol=atol):
                raise Fail(
                    f"for device={device}, one training step after resuming, {name} differs from the run "
                    "that never stopped: restore the model's weights and the optimizer's state from the "
                    "checkpoint.",
                    f"device={device} 时，恢复后训练一步，{name} 与从未中断的那次训练不一致：模型权重和优化器"
                    "状态都要从检查点恢复。",
                )
