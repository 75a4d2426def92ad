"""Self-checks for lab 09 (capstone: fix a broken training script).

Exercise 1 checks an audit function against training states with misplaced tensors planted one at a time.
Exercise 2 runs the learner's fixed script for real: trained on the CPU and resumed on the mismatch device
(the GPU, or ``meta`` on a CPU runner) under ``strict_devices()`` for the places (model, loss, optimizer state
and metric state after the resume), and on the runner's own device for the numbers (it trains, and resuming
from the checkpoint continues exactly where an uninterrupted run would be).
"""

from __future__ import annotations

import math
import tempfile
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
from torch import nn

from devicekit.check import check_devices
from devicekit.device import best_device, mismatch_device
from devicekit.errors import DeviceMismatchError
from devicekit.strict import strict_devices
from devicekit_labs import Fail, exercise

LAB = "09-capstone"

#: Steps per phase (before and after the resume) that the script check trains.
STEPS = 3

#: Optimizer state entries PyTorch keeps on the CPU on purpose (Adam's step counter, unless
#: ``capturable`` or ``fused``): not a misplaced tensor.
CPU_STATE_KEYS = frozenset({"step"})


def _tensors_of(obj: Any) -> dict[str, torch.Tensor]:
    """The tensor attributes of a plain object (a metric), by name."""
    return {k: v for k, v in vars(obj).items() if isinstance(v, torch.Tensor)}


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


def _plant(state: dict[str, Any], what: str) -> None:
    """Put one tensor of ``state`` on the CPU (new tensors: data cannot be copied out of ``meta``)."""

    def cpu_like(t: torch.Tensor) -> torch.Tensor:
        return torch.zeros(t.shape, dtype=t.dtype, device="cpu")

    if what == "buffer":
        bn = state["model"][1]
        bn.running_mean = cpu_like(bn.running_mean)
    elif what == "loss weight":
        state["loss_fn"].weight = cpu_like(state["loss_fn"].weight)
    elif what == "optimizer state":
        first = state["model"][0].weight
        slot = state["optimizer"].state[first]
        slot["exp_avg"] = cpu_like(slot["exp_avg"])
    elif what == "metric state":
        state["metric"].hits = cpu_like(state["metric"].hits)
    elif what == "parameter":
        last = state["model"][2]
        last.bias = nn.Parameter(cpu_like(last.bias))
    else:  # pragma: no cover - programming error in this module
        raise ValueError(what)


PLANTS = ("buffer", "loss weight", "optimizer state", "metric state", "parameter")


@exercise(LAB, "audit", 1, "list every misplaced tensor", "列出每一个放错设备的张量", target="misplaced")
def check_audit(misplaced) -> None:
    device = mismatch_device()

    def run(state: dict[str, Any]) -> list[str]:
        found = misplaced(state, device)
        if not isinstance(found, list) or not all(isinstance(name, str) for name in found):
            raise Fail(
                "return a list of strings, one name per misplaced tensor ([] when all is well).",
                "要返回一个字符串列表，每个放错设备的张量一个名字（全部正确时返回 []）。",
            )
        return found

    clean = run(_reference_state(device))
    if clean:
        raise Fail(
            f"on a correct state your audit reports {clean[:3]}. Adam keeps its `step` counter on the CPU "
            "on purpose; skip that entry of the optimizer state.",
            f"对一个完全正确的状态，你的检查函数却报告了 {clean[:3]}。Adam 有意把 `step` 计数器放在 CPU 上；"
            "优化器状态里的这一项要跳过。",
        )
    for what in PLANTS:
        state = _reference_state(device)
        _plant(state, what)
        found = run(state)
        if len(found) != 1:
            raise Fail(
                f"one {what} tensor was put on the CPU and your audit reports {len(found)} tensor(s): "
                f"{found[:3]}. Look at every tensor the state holds: the model's parameters and buffers, "
                "the loss's buffers, the optimizer's per-parameter state and the metric's attributes.",
                f"自测把一个{_ZH_PLANTS[what]}放到了 CPU 上，"
                f"你的检查函数却报告了 {len(found)} 个张量：{found[:3]}。"
                "要查看状态里的每一个张量：模型的参数和缓冲区、损失函数的缓冲区、优化器的逐参数状态，"
                "以及指标对象的属性。",
            )
    state = _reference_state(device)
    for what in PLANTS:
        _plant(state, what)
    found = run(state)
    if len(found) != len(PLANTS):
        raise Fail(
            f"{len(PLANTS)} tensors were put on the CPU at once and your audit reports {len(found)}.",
            f"自测同时把 {len(PLANTS)} 个张量放到了 CPU 上，你的检查函数却报告了 {len(found)} 个。",
        )


_ZH_PLANTS = {
    "buffer": "缓冲区",
    "loss weight": "损失函数的权重",
    "optimizer state": "优化器状态张量",
    "metric state": "指标状态张量",
    "parameter": "参数",
}


def _where_fail(what_en: str, what_zh: str, found: Any, device: torch.device) -> Fail:
    return Fail(
        f"after the resume, {what_en} is on {found}, not on {device}.",
        f"恢复训练之后，{what_zh} 在 {found} 上，而不是 {device}。",
    )


def _audit_result(result: Any, device: torch.device, phase_en: str, phase_zh: str) -> None:
    """Everything in one phase's result on ``device``; Fail names the first thing that is not."""
    if not isinstance(result, dict) or not {"model", "loss_fn", "optimizer", "metric", "losses"} <= set(
        result
    ):
        raise Fail(
            "train_and_resume must return the two dicts train() returns (keep the script's return values).",
            "train_and_resume 要返回 train() 返回的那两个 dict（保持脚本原有的返回值）。",
        )
    model, optimizer = result["model"], result["optimizer"]
    try:
        report = check_devices(model, device=device)
    except DeviceMismatchError as err:
        first = err.findings[0]
        raise Fail(
            f"{phase_en}: the model holds {first.name} on {first.device}, not on {device} ({first.kind}).",
            f"{phase_zh}：模型里的 {first.name} 在 {first.device} 上，而不是 {device}（{first.kind}）。",
        ) from None
    if report.warnings:
        raise Fail(
            f"{phase_en}: {report.warnings[0]}",
            f"{phase_zh}：模型里有 model.to() 不会移动的张量或子模块：{report.warnings[0]}",
        )
    for name, buf in result["loss_fn"].named_buffers():
        if buf.device != device:
            raise _where_fail(f"the loss's {name}", f"损失函数的 {name}", buf.device, device)
    params = list(model.parameters())
    in_optimizer = [p for group in optimizer.param_groups for p in group["params"]]
    if {id(p) for p in params} != {id(p) for p in in_optimizer}:
        raise Fail(
            f"{phase_en}: the optimizer does not update the model's parameters (it holds "
            f"{len(in_optimizer)} tensors, the model has {len(params)}). Build the optimizer from the "
            "parameters of the model you train, after the model is where it belongs.",
            f"{phase_zh}：优化器更新的不是模型的参数（它持有 {len(in_optimizer)} 个张量，模型有 "
            f"{len(params)} 个）。要在模型到达它该在的设备之后，用这个模型的参数构造优化器。",
        )
    for param_state in optimizer.state.values():
        for key, value in param_state.items():
            if isinstance(value, torch.Tensor) and key not in CPU_STATE_KEYS and value.device != device:
                raise _where_fail(
                    f"the optimizer's {key!r} state", f"优化器的 {key!r} 状态", value.device, device
                )
    for name, value in _tensors_of(result["metric"]).items():
        if value.device != device:
            raise _where_fail(f"the metric's {name!r}", f"指标对象的 {name!r}", value.device, device)
    for loss in result["losses"]:
        if not isinstance(loss, torch.Tensor) or loss.device != device:
            raise Fail(
                f"{phase_en}: the losses must be the tensors the script computed, on {device}.",
                f"{phase_zh}：losses 必须是脚本算出的张量，并且在 {device} 上。",
            )


def _run(
    train_and_resume, devices: tuple[torch.device, torch.device], steps: int, path: Path
) -> tuple[Any, Any]:
    out = train_and_resume(devices[0], devices[1], steps, str(path))
    if not isinstance(out, tuple) or len(out) != 2:
        raise Fail(
            "train_and_resume must return (first, second), the results before and after the resume.",
            "train_and_resume 要返回 (first, second)，即恢复之前和之后的结果。",
        )
    for part in out:
        if isinstance(part, dict) and len(part.get("losses", ())) != steps:
            raise Fail(
                f"each phase must train {steps} steps; one returned {len(part['losses'])} losses.",
                f"每个阶段要训练 {steps} 步；其中一个阶段返回了 {len(part['losses'])} 个损失。",
            )
    return out


@exercise(LAB, "fixed-script", 2, "fix the training script", "修好训练脚本", target="train_and_resume")
def check_fixed_script(train_and_resume) -> None:
    home, other = best_device(), mismatch_device()
    cpu = torch.device("cpu")
    with tempfile.TemporaryDirectory(prefix="lab09-") as tmp:
        folder = Path(tmp)
        # 1. Where everything is: trained on the CPU, resumed on the device that makes mixes visible
        #    (the GPU, or meta on a CPU runner), every operation checked by strict_devices().
        with strict_devices(), warnings.catch_warnings():
            if other.type == "meta":  # load_state_dict: "copying ... to a meta parameter ... is a no-op"
                warnings.simplefilter("ignore", UserWarning)
            first, second = _run(train_and_resume, (cpu, other), 2, folder / "moved.pt")
        _audit_result(first, cpu, "before the resume", "恢复之前")
        _audit_result(second, other, "after the resume", "恢复之后")
        if other.type == "meta":
            try:
                second["metric"].compute()
            except TypeError as err:  # what NumPy conversion of a non-CPU tensor raises
                raise Fail(
                    f"metric.compute() raised TypeError: {err}",
                    f"metric.compute() 抛出了 TypeError：{err}",
                ) from None
            except (NotImplementedError, RuntimeError):
                pass  # reading numbers out of meta is impossible; the code did move them to the CPU first

        # 2. The numbers, on this runner's own device: it learns, and the resume loses nothing.
        first, second = _run(train_and_resume, (home, home), STEPS, folder / "home.pt")
        _audit_result(second, home, "after the resume", "恢复之后")
        losses = [float(x) for x in [*first["losses"], *second["losses"]]]
        if not all(math.isfinite(x) for x in losses):
            raise Fail("the loss is not finite.", "损失不是有限值。")
        accuracy = second["metric"].compute()
        if not isinstance(accuracy, float) or not 0.0 <= accuracy <= 1.0:
            raise Fail(
                f"metric.compute() must return a float between 0 and 1, got {accuracy!r}.",
                f"metric.compute() 应当返回 0 到 1 之间的 float，实际是 {accuracy!r}。",
            )
        straight, _ = _run(train_and_resume, (home, home), 2 * STEPS, folder / "straight.pt")
        expected = [float(x) for x in straight["losses"]]
        if any(abs(a - b) > 1e-4 * max(1.0, abs(b)) for a, b in zip(losses, expected, strict=True)):
            raise Fail(
                "training, saving, resuming and training on does not give the losses of one uninterrupted "
                "run: the resume does not restore everything (model, optimizer, scheduler) where it was.",
                "训练、保存、恢复、再训练，得到的损失与一次不间断训练的不一致：恢复没有把模型、优化器、"
                "学习率调度器全部还原。",
            )
        # With StepLR(step_size=10) a lost scheduler state changes no loss within these steps: check it.
        resumed_schedule, straight_schedule = second.get("scheduler"), straight.get("scheduler")
        if getattr(resumed_schedule, "last_epoch", None) != getattr(straight_schedule, "last_epoch", None):
            raise Fail(
                "after the resume the learning-rate scheduler does not continue from the step it had "
                "reached: restore its state from the checkpoint as well.",
                "恢复之后，学习率调度器没有从它已经走到的那一步接着走：也要从检查点还原它的状态。",
            )
        if abs(accuracy - straight["metric"].compute()) > 1e-6:
            raise Fail(
                "after the resume the metric does not count the batches seen before it: restore its state.",
                "恢复之后，指标没有算上恢复之前见过的批次：要还原它的状态。",
            )
