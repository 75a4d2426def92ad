"""Self-checks for lab 09 (capstone: fix a broken training script).

Every probe runs on two GPUs, real or simulated (`devicekit_labs.machine.probe_devices`), with real values.
Exercise 1 checks an audit function against training states with misplaced tensors planted one at a time and
all at once: CPU tensors in a state on a GPU, GPU tensors in a state on the CPU, and tensors on ``cuda:0``
in a state on ``cuda:1`` (an audit that compares device types only misses those). Exercise 2 runs the
learner's fixed script for real, in three phases:

1. trained on the CPU and resumed on the second GPU (``cuda:1``, so a script that writes ``"cuda"`` or
   ``.cuda()`` where it means its ``device`` fails), where CUDA's own checks raise;
2. a checkpoint saved as a GPU run saves it (every storage recorded at a GPU this machine lacks), resumed on
   the CPU;
3. on the first GPU, with the script's bf16 autocast region, the numbers: it trains, and resuming continues
   exactly where an uninterrupted run would be.

Where the state lives is judged by what a GPU refuses and by values, not by a rule of this check: a metric
kept on the host and fed ``.cpu()`` copies is right, and so is an optimizer built before the model's move
(``Module.to`` keeps the parameter objects on CUDA).
"""

from __future__ import annotations

import contextlib
import math
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
from torch import nn

from devicekit.check import KIND_ZH, check_devices
from devicekit.errors import DeviceMismatchError
from devicekit_labs import Fail, failed_call, judged, observe
from devicekit_labs.lab06 import missing_cuda_device, save_as_if_on
from devicekit_labs.machine import probe_devices

LAB = "09-capstone"

#: Steps per phase (before and after the resume) that the script check trains.
STEPS = 3

#: Optimizer state entries PyTorch keeps on the CPU on purpose (Adam's step counter, unless
#: ``capturable`` or ``fused``): not a misplaced tensor.
CPU_STATE_KEYS = frozenset({"step"})


def _reference_state(device: torch.device) -> dict[str, Any]:
    """A correct training state on ``device``: model with a buffer, weighted loss, stepped AdamW, metric."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 3)).to(device)
    loss_fn = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 2.0], device=device))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    loss = loss_fn(model(torch.randn(5, 4, device=device)), torch.tensor([0, 1, 2, 0, 1], device=device))
    loss.backward()
    optimizer.step()
    metric = SimpleNamespace(hits=torch.zeros(3, device=device), seen=torch.zeros(3, device=device))
    return {"model": model, "loss_fn": loss_fn, "optimizer": optimizer, "metric": metric}


def _plant(state: dict[str, Any], what: str, stray: torch.device) -> None:
    """Put one tensor of ``state`` on ``stray``: a copy with its values, as a forgotten move leaves it."""

    def stray_like(t: torch.Tensor) -> torch.Tensor:
        return t.detach().to(stray)

    model, optimizer = state["model"], state["optimizer"]
    if what == "buffer":
        model[1].running_var = stray_like(model[1].running_var)
    elif what == "loss weight":
        state["loss_fn"].weight = stray_like(state["loss_fn"].weight)
    elif what == "optimizer exp_avg":
        slot = optimizer.state[model[0].weight]
        slot["exp_avg"] = stray_like(slot["exp_avg"])
    elif what == "optimizer exp_avg_sq":
        slot = optimizer.state[model[2].bias]
        slot["exp_avg_sq"] = stray_like(slot["exp_avg_sq"])
    elif what == "metric state":
        state["metric"].seen = stray_like(state["metric"].seen)
    elif what == "parameter":
        model[2].weight = nn.Parameter(stray_like(model[2].weight))
    else:  # pragma: no cover - programming error in this module
        raise ValueError(what)


PLANTS = ("buffer", "loss weight", "optimizer exp_avg", "optimizer exp_avg_sq", "metric state", "parameter")

_ZH_PLANTS = {
    "buffer": "缓冲区",
    "loss weight": "损失函数的权重",
    "optimizer exp_avg": "优化器的 exp_avg 状态张量",
    "optimizer exp_avg_sq": "优化器的 exp_avg_sq 状态张量",
    "metric state": "指标状态张量",
    "parameter": "参数",
}


def _audit_configs() -> list[tuple[torch.device, torch.device]]:
    """(the state's device, where the planted strays go): a GPU and the CPU both ways round, then the two
    GPUs (a state on ``cuda:1`` with strays on ``cuda:0``: same device type, another device)."""
    gpus, cpu = probe_devices(), torch.device("cpu")
    configs = [(gpus[-1], cpu), (cpu, gpus[-1])]
    if len(gpus) > 1:
        configs.append((gpus[1], gpus[0]))
    return configs


def _names(got: dict) -> dict:
    if "error" in got:
        return got
    found = got["value"]
    if not isinstance(found, list) or not all(isinstance(name, str) for name in found):
        return {"value": None}
    return {"value": list(found)}


@judged(LAB, "audit", 1, "list every misplaced tensor", "列出每一个放错设备的张量", target="misplaced")
def probe_audit(misplaced) -> dict:
    if not callable(misplaced):
        return {"callable": False}
    configs = []
    for device, stray in _audit_configs():
        seen: dict = {"device": str(device), "stray": str(stray)}
        seen["clean"] = _names(observe(misplaced, _reference_state(device), device))
        seen["one"] = {}
        for what in PLANTS:
            state = _reference_state(device)
            _plant(state, what, stray)
            seen["one"][what] = _names(observe(misplaced, state, device))
        state = _reference_state(device)
        for what in PLANTS:
            _plant(state, what, stray)
        seen["all"] = _names(observe(misplaced, state, device))
        configs.append(seen)
    return {"callable": True, "configs": configs}


def _found(got: dict, what_en: str, what_zh: str) -> list[str]:
    failed_call(got, what_en, what_zh)
    if got["value"] is None:
        raise Fail(
            "return a list of strings, one name per misplaced tensor ([] when all is well).",
            "要返回一个字符串列表，每个放错设备的张量一个名字（全部正确时返回 []）。",
        )
    return got["value"]


@probe_audit.judge
def judge_audit(seen: dict) -> None:
    if not seen["callable"]:
        raise Fail("expected a function misplaced(state, device).", "应当是函数 misplaced(state, device)。")
    for config in seen["configs"]:
        device, stray = config["device"], config["stray"]
        clean = _found(
            config["clean"], f"on a correct state on {device}", f"检查一个全部在 {device} 上的正确状态时"
        )
        if clean:
            raise Fail(
                f"on a correct state (everything on {device}) your audit reports {clean[:3]}. A tensor is "
                "misplaced when its device is not the device you were given; Adam's `step` counter is the "
                "one "
                "entry that stays on the CPU on purpose.",
                f"对一个完全正确的状态（全部在 {device} 上），你的检查函数却报告了 {clean[:3]}。"
                "所谓张量放错了设备，是指它所在的设备不是传进来的那个设备；"
                "Adam 的 `step` 计数器是唯一有意留在 CPU 上的一项。",
            )
        for what in PLANTS:
            found = _found(
                config["one"][what], f"with one {what} on {stray}", f"有一个{_ZH_PLANTS[what]}在 {stray} 上时"
            )
            if not found and device.startswith("cuda") and stray.startswith("cuda"):
                raise Fail(
                    f"in a state on {device}, one {what} tensor was put on {stray} and your audit reports "
                    f"nothing. {stray} and {device} are two different GPUs: an operation that meets both "
                    "raises, as one that meets a GPU and the CPU does. Compare whole devices "
                    "(`tensor.device != device`, index included), not `device.type`.",
                    f"在一个位于 {device} 上的状态里，自测把一个{_ZH_PLANTS[what]}放到了 {stray} 上，你的检"
                    f"查函数却什么也没报告。{stray} 和 {device} 是两块不同的 GPU：一个运算同时遇到这两块上的"
                    "张量会报错，就像同时遇到 GPU 和 CPU 上的张量一样。要比较完整的设备"
                    "（`tensor.device != device`，包括编号），而不只是 `device.type`。",
                )
            if len(found) != 1:
                raise Fail(
                    f"in a state on {device}, one {what} tensor was put on {stray} and your audit reports "
                    f"{len(found)} tensor(s): {found[:3]}. Look at every tensor the state holds: the model's "
                    "parameters and buffers, the loss's buffers, every entry of the optimizer's "
                    "per-parameter "
                    "state and the metric's attributes, and compare each device with the one you were given.",
                    f"在一个位于 {device} 上的状态里，自测把一个{_ZH_PLANTS[what]}放到了 {stray} 上，你的检"
                    "查函数"
                    f"却报告了 {len(found)} 个张量：{found[:3]}。要查看状态里的每一个张量：模型的参数和缓冲"
                    "区、"
                    "损失函数的缓冲区、优化器逐参数状态里的每一项，以及指标对象的属性，并把每个张量的设备与传进来"
                    "的设备比较。",
                )
        found = _found(config["all"], f"with several tensors on {stray}", f"有多个张量在 {stray} 上时")
        if len(found) != len(PLANTS) or len(set(found)) != len(found):
            raise Fail(
                f"{len(PLANTS)} different tensors were put on {stray} at once and your audit reports "
                f"{len(set(found))} different names.",
                f"自测同时把 {len(PLANTS)} 个不同的张量放到了 {stray} 上，你的检查函数报告了"
                f" {len(set(found))} 个"
                "不同的名字。",
            )


# --- exercise 2 ------------------------------------------------------------------------------------------


def _state_tensors(obj: Any, where: str) -> Iterator[tuple[str, torch.Tensor]]:
    if isinstance(obj, torch.Tensor):
        yield where, obj
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield from _state_tensors(value, f"{where}[{key!r}]")
    elif isinstance(obj, list | tuple):
        for index, value in enumerate(obj):
            yield from _state_tensors(value, f"{where}[{index}]")


@contextlib.contextmanager
def _saves_as_on_a_gpu() -> Iterator[str]:
    """Inside: `torch.save` records every storage (but 0-dim counters) at a GPU this machine lacks.

    The file is what the same save on that GPU writes (`devicekit_labs.lab06.save_as_if_on`): loading it
    without ``map_location`` fails here as it fails on a laptop that opens a GPU run's checkpoint.
    """
    original = torch.save
    location = missing_cuda_device()

    def save(obj, f, *args, **kwargs) -> None:
        torch.save = original
        try:
            tensors = [t for _, t in _state_tensors(obj, "checkpoint") if t.dim() > 0]
            save_as_if_on(obj, f, location, tensors)
        finally:
            torch.save = save

    torch.save = save
    try:
        yield location
    finally:
        torch.save = original


def _placement(result: Any, device: torch.device) -> list[dict]:
    """Where one phase's result has tensors off ``device``: findings as plain data, the first one matters.

    The metric is not looked at: where its state lives is the script's choice (on the device, or on the host
    fed ``.cpu()`` copies); a metric that meets the predictions on another device raises on a GPU, and its
    value is compared with an uninterrupted run's.
    """
    if not isinstance(result, dict) or not {"model", "loss_fn", "optimizer", "metric", "losses"} <= set(
        result
    ):
        return [{"kind": "shape"}]
    model, optimizer = result["model"], result["optimizer"]
    findings: list[dict] = []
    try:
        report = check_devices(model, device=device)
    except DeviceMismatchError as err:
        first = err.findings[0]
        findings.append(
            {"kind": "model", "name": first.name, "device": str(first.device), "what": first.kind}
        )
    else:
        if report.warnings:
            findings.append({"kind": "model warning", "text": str(report.warnings[0])})
    for name, buf in result["loss_fn"].named_buffers():
        if buf.device != device:
            findings.append({"kind": "loss", "name": name, "device": str(buf.device)})
    params = list(model.parameters())
    in_optimizer = [p for group in optimizer.param_groups for p in group["params"]]
    if {id(p) for p in params} != {id(p) for p in in_optimizer}:
        findings.append({"kind": "optimizer params", "held": len(in_optimizer), "model": len(params)})
    for param_state in optimizer.state.values():
        for key, value in param_state.items():
            if isinstance(value, torch.Tensor) and key not in CPU_STATE_KEYS and value.device != device:
                findings.append({"kind": "optimizer state", "name": str(key), "device": str(value.device)})
    if any(not isinstance(loss, torch.Tensor) or loss.device != device for loss in result["losses"]):
        findings.append({"kind": "losses"})
    return findings


def _phase(train_and_resume, first: torch.device, second: torch.device, steps: int, path: Path) -> dict:
    """Run ``train_and_resume`` once and record the shape of its result and where the second part lives."""
    got = observe(train_and_resume, first, second, steps, str(path))
    if "error" in got:
        return {"error": got["error"]}
    out = got["value"]
    if not isinstance(out, tuple) or len(out) != 2:
        return {"shape": "not a pair"}
    counts = [len(part["losses"]) if isinstance(part, dict) and "losses" in part else None for part in out]
    return {
        "shape": "ok",
        "steps": steps,
        "loss_counts": counts,
        "first": _placement(out[0], first),
        "second": _placement(out[1], second),
        "result": out,  # removed by the probe before it returns: learner objects never leave the probe
    }


def _numbers(result: dict) -> dict:
    """Plain numbers of a phase on the runner's own device: losses, their dtypes, the metric, the schedule."""
    first, second = result["result"]
    losses = [*first["losses"], *second["losses"]]
    seen: dict = {
        "losses": [float(x) for x in losses],
        "loss_dtypes": sorted({str(x.dtype).removeprefix("torch.") for x in losses}),
        "last_epoch": getattr(second.get("scheduler"), "last_epoch", None),
    }
    seen["accuracy"] = _accuracy(second["metric"])
    return seen


def _accuracy(metric: Any) -> dict:
    got = observe(metric.compute)
    if "error" in got:
        return got
    value = got["value"]
    return {"value": value if isinstance(value, float) else repr(value)[:40]}


def _public(phase: dict) -> dict:
    return {k: v for k, v in phase.items() if k != "result"}


@judged(LAB, "fixed-script", 2, "fix the training script", "修好训练脚本", target="train_and_resume")
def probe_fixed_script(train_and_resume) -> dict:
    if not callable(train_and_resume):
        return {"callable": False}
    gpus, cpu = probe_devices(), torch.device("cpu")
    home, other = gpus[0], gpus[-1]
    seen: dict = {"callable": True, "home": str(home), "other": str(other)}
    with tempfile.TemporaryDirectory(prefix="lab09-") as tmp:
        folder = Path(tmp)
        # 1. Where everything is: trained on the CPU, resumed on the second GPU, where CUDA's checks raise.
        moved = _phase(train_and_resume, cpu, other, 2, folder / "moved.pt")
        if moved.get("shape") == "ok":
            metric = moved["result"][1]["metric"]
            computed = observe(metric.compute)
            moved["compute"] = computed if "error" in computed else {"value": None}
        seen["moved"] = _public(moved)
        # 2. A checkpoint from a GPU run, resumed on the CPU (a laptop without that GPU).
        with _saves_as_on_a_gpu() as location:
            seen["from_gpu"] = {
                "location": location,
                **_public(_phase(train_and_resume, cpu, cpu, 1, folder / "gpu.pt")),
            }
        # 3. The numbers, on the first GPU (the script's bf16 autocast region included): it learns, and the
        #    resume loses nothing.
        resumed = _phase(train_and_resume, home, home, STEPS, folder / "home.pt")
        seen["resumed"] = _public(resumed)
        if resumed.get("shape") == "ok":
            seen["resumed"]["numbers"] = _numbers(resumed)
            straight = _phase(train_and_resume, home, home, 2 * STEPS, folder / "straight.pt")
            seen["straight"] = _public(straight)
            if straight.get("shape") == "ok":
                first, _ = straight["result"]
                seen["straight"]["numbers"] = {
                    "losses": [float(x) for x in first["losses"]],
                    "last_epoch": getattr(first.get("scheduler"), "last_epoch", None),
                    "accuracy": _accuracy(first["metric"]),
                }
    return seen


def _finding_fail(finding: dict, device: str, phase_en: str, phase_zh: str) -> Fail:
    kind = finding["kind"]
    if kind == "shape":
        return Fail(
            "train_and_resume must return the two dicts train() returns (keep the script's return values).",
            "train_and_resume 要返回 train() 返回的那两个字典（保持脚本原有的返回值）。",
        )
    if kind == "model":
        return Fail(
            f"{phase_en}: the model holds {finding['name']} on {finding['device']}, not on {device} "
            f"({finding['what']}).",
            f"{phase_zh}：模型里的{KIND_ZH.get(finding['what'], finding['what'])} {finding['name']} 在"
            f" {finding['device']} 上，而不是在 {device} 上。",
        )
    if kind == "model warning":
        return Fail(
            f"{phase_en}: {finding['text']}",
            f"{phase_zh}：模型里有 model.to() 不会移动的张量或子模块：{finding['text']}",
        )
    if kind == "optimizer params":
        return Fail(
            f"{phase_en}: the optimizer does not update the model's parameters (it holds {finding['held']} "
            f"tensors, the model has {finding['model']}). Build the optimizer from the parameters of the "
            "model "
            "you train, after the model is where it belongs.",
            f"{phase_zh}：优化器更新的不是模型的参数（它持有 {finding['held']} 个张量，模型有"
            f" {finding['model']} 个）。"
            "要在模型到达它该在的设备之后，用这个模型的参数构造优化器。",
        )
    if kind == "losses":
        return Fail(
            f"{phase_en}: the losses must be the tensors the script computed, on {device}.",
            f"{phase_zh}：losses 必须是脚本算出的张量，并且在 {device} 上。",
        )
    what_en, what_zh = {
        # The zh name is followed by 在: a Latin name takes a space before it, 状态 none.
        "loss": (f"the loss's {finding['name']}", f"损失函数的 {finding['name']} "),
        "optimizer state": (
            f"the optimizer's {finding['name']!r} state",
            f"优化器的 {finding['name']!r} 状态",
        ),
    }[kind]
    return Fail(
        f"{phase_en}, {what_en} is on {finding['device']}, not on {device}.",
        f"{phase_zh}，{what_zh}在 {finding['device']} 上，而不是在 {device} 上。",
    )


def _judge_dropped_index(phase: dict, home: str, other: str) -> None:
    """An error that names the first GPU while the script was resuming on the second one: a device written
    as ``"cuda"`` or ``.cuda()``, which mean the current GPU (``cuda:0``), not the ``device`` argument."""
    error = phase.get("error")
    if error is None or home == other or home not in error["message"] or other not in error["message"]:
        return
    raise Fail(
        f"resuming on {other}, your code raised {error['type']}: {error['message']}. Something went to "
        f'{home} although the script was given {other}: `.cuda()`, `"cuda"` and `torch.device("cuda")` '
        "mean the current GPU (cuda:0 unless you changed it), not the device the function was given. Pass "
        "`device` itself to `.to()` and to factories.",
        f"在 {other} 上恢复时，你的代码抛出了 {error['type']}：{error.get('message_zh', error['message'])}。"
        f'脚本拿到的设备是 {other}，却有张量去了 {home}：`.cuda()`、`"cuda"` 和 `torch.device("cuda")` '
        "指的是当前 GPU（没改过就是 cuda:0），不是传给函数的那个设备。请把 `device` 本身交给 `.to()` "
        "和各个工厂函数。",
    )


def _judge_phase(phase: dict, first: str, second: str, what_en: str, what_zh: str) -> None:
    failed_call(phase, what_en, what_zh)
    if phase["shape"] != "ok":
        raise Fail(
            "train_and_resume must return (first, second), the results before and after the resume.",
            "train_and_resume 要返回 (first, second)，即恢复之前和之后的结果。",
        )
    for count in phase["loss_counts"]:
        if count is not None and count != phase["steps"]:
            raise Fail(
                f"each phase must train {phase['steps']} steps; one returned {count} losses.",
                f"每个阶段要训练 {phase['steps']} 步；其中一个阶段返回了 {count} 个损失。",
            )
    if phase["first"]:
        raise _finding_fail(phase["first"][0], first, "before the resume", "恢复之前")
    if phase["second"]:
        raise _finding_fail(phase["second"][0], second, "after the resume", "恢复之后")


@probe_fixed_script.judge
def judge_fixed_script(seen: dict) -> None:
    if not seen["callable"]:
        raise Fail(
            "expected the function train_and_resume(first_device, second_device, steps, checkpoint).",
            "应当是函数 train_and_resume(first_device, second_device, steps, checkpoint)。",
        )
    home, other = seen["home"], seen["other"]
    moved = seen["moved"]
    _judge_dropped_index(moved, home, other)
    _judge_phase(
        moved,
        "cpu",
        other,
        f"training on the CPU, then resuming on {other}",
        f"先在 CPU 上训练、再在 {other} 上恢复时",
    )
    compute = moved["compute"]
    if "error" in compute and compute["error"]["type"] == "TypeError":  # NumPy given a tensor not on the CPU
        said = compute["error"]["message"].rstrip(". ")
        raise Fail(
            f"after the resume on {other}, metric.compute() raised TypeError: {said}. "
            "NumPy reads only CPU tensors: call .cpu() before .numpy(), or keep the metric on the host.",
            f"在 {other} 上恢复之后，metric.compute() 抛出了 TypeError：{said}。"
            "NumPy 只能读 CPU 上的张量：先 .cpu() 再 .numpy()，或者把指标留在主机上。",
        )
    failed_call(
        compute,
        f"metric.compute() after the resume on {other}",
        f"在 {other} 上恢复之后调用 metric.compute() 时",
    )
    gpu = seen["from_gpu"]
    _judge_phase(
        gpu,
        "cpu",
        "cpu",
        f"resuming on the CPU a checkpoint saved on a GPU (the file records {gpu['location']})",
        f"在 CPU 上恢复一个在 GPU 上保存的检查点（文件里记录的是 {gpu['location']}）时",
    )
    resumed = seen["resumed"]
    _judge_phase(resumed, home, home, f"training and resuming on {home}", f"在 {home} 上训练并恢复时")
    numbers = resumed["numbers"]
    _judge_loss_dtypes(numbers["loss_dtypes"])
    losses = numbers["losses"]
    if not all(math.isfinite(x) for x in losses):
        raise Fail("the loss is not finite.", "损失不是有限值。")
    failed_call(numbers["accuracy"], "metric.compute()", "metric.compute()")
    accuracy = numbers["accuracy"]["value"]
    if not isinstance(accuracy, float) or not 0.0 <= accuracy <= 1.0:
        raise Fail(
            f"metric.compute() must return a float between 0 and 1, got {accuracy!r}.",
            f"metric.compute() 应当返回 0 到 1 之间的浮点数，实际是 {accuracy!r}。",
        )
    straight = seen["straight"]
    failed_call(straight, f"one uninterrupted run on {home}", f"在 {home} 上不间断训练时")
    expected = straight["numbers"]["losses"]
    if len(expected) != len(losses) or any(
        abs(a - b) > 1e-4 * max(1.0, abs(b)) for a, b in zip(losses, expected, strict=True)
    ):
        raise Fail(
            "training, saving, resuming and training on does not give the losses of one uninterrupted run: "
            "the "
            "resume does not restore everything (model, optimizer, scheduler) where it was.",
            "训练、保存、恢复、再训练，得到的损失与一次不间断训练的不一致：恢复没有把模型、优化器、学习率调度器全部还原。",
        )
    # With StepLR(step_size=10) a lost scheduler state changes no loss within these steps: check it.
    if numbers["last_epoch"] != straight["numbers"]["last_epoch"]:
        raise Fail(
            "after the resume the learning-rate scheduler does not continue from the step it had reached: "
            "restore its state from the checkpoint as well.",
            "恢复之后，学习率调度器没有从它已经走到的那一步接着走：也要从检查点还原它的状态。",
        )
    straight_accuracy = straight["numbers"]["accuracy"].get("value")
    if not isinstance(straight_accuracy, float) or abs(accuracy - straight_accuracy) > 1e-6:
        raise Fail(
            "after the resume the metric does not count the batches seen before it: restore its state.",
            "恢复之后，指标没有算上恢复之前见过的批次：要还原它的状态。",
        )


def _judge_loss_dtypes(dtypes: list[str]) -> None:
    if dtypes != ["float32"]:
        raise Fail(
            f"the loss came out in {', '.join(dtypes)}: outside the autocast region, compute it from float32 "
            "logits, so that it (and its gradient) keeps float32's precision.",
            f"损失是 {', '.join(dtypes)} 类型：在 autocast 区域之外，要用 float32 的 logits 来计算损失，"
            "这样损失（以及它的梯度）才能保持 float32 的精度。",
        )
