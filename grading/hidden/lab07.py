"""Hidden judges of lab 07 (grading only, never shipped to students): the reference AMP step and the right
choice of dtype and scaler per machine. They read the same observations as the public judges."""

from __future__ import annotations

import torch
from torch import nn

from devicekit_labs import Fail
from devicekit_labs.lab07 import MACHINES, MORE_MACHINES, STEPS, make_batch, make_model
from devicekit_labs.machine import probe_gpus


def reference_step(model, optimizer, scaler, x, y, dtype) -> torch.Tensor:
    """One correct AMP training step: what the learner's two steps are compared with."""
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=dtype):
        loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss


def _available(device: torch.device) -> bool:
    if device.type == "cpu":
        return True
    return device.type == "cuda" and (device.index or 0) < torch.cuda.device_count()


def judge_amp_reference(seen: dict) -> None:
    """After two steps the weights equal two reference steps, on every device the probe ran on: the reference
    runs on the same GPUs, real or simulated (`probe_gpus`, as the probe did)."""
    with probe_gpus():
        _compare_with_reference(seen)


def _compare_with_reference(seen: dict) -> None:
    for case in seen["cases"]:
        device = torch.device(case["device"])
        if "params_after" not in case or not _available(device):
            continue
        dtype = getattr(torch, case["dtype"])
        model = make_model().to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler(device.type, init_scale=2.0**8, enabled=case["scaler_enabled"])
        for _ in range(STEPS):
            reference_step(model, optimizer, scaler, *make_batch(device), dtype)
        label = f"{case['device']} with {case['dtype']}"
        for name, want in model.named_parameters():
            got = case["params_after"].get(name)
            if got is None or not torch.allclose(got, want.detach().cpu(), rtol=1e-2, atol=1e-3):
                raise Fail(
                    f"({label}) after two steps, {name} differs from correct mixed-precision steps: compute "
                    "the "
                    "loss under autocast, backpropagate the scaled loss once, and step through the scaler.",
                    f"（{label}）两步之后，{name} 与两次正确的混合精度训练步的结果不同：在 autocast 下计算损"
                    "失，"
                    "对缩放后的损失做一次反向传播，再通过 scaler 执行 step。",
                )


def _right_choice(device_type: str, capability) -> tuple[str, bool]:
    if device_type == "cuda" and capability[0] < 8:
        return "float16", True
    return "bfloat16", False


def judge_machines(seen: dict) -> None:
    """Each machine gets the right (dtype, use_scaler). Names one machine: never how many are wrong."""
    for name, (device_type, capability) in {**MACHINES, **MORE_MACHINES}.items():
        if tuple(seen["answers"][name]["value"]) != _right_choice(device_type, capability):
            where = f"compute capability {capability[0]}.{capability[1]}" if capability else "a CPU"
            raise Fail(
                f"the {name} ({where}) gets a poor choice. bf16 has float32's exponent range, fp16 does "
                "not; and "
                "bf16 Tensor Core math arrived with one GPU generation, whatever "
                "torch.cuda.is_bf16_supported() "
                "says on older GPUs.",
                f"{name}（{'计算能力 ' + f'{capability[0]}.{capability[1]}' if capability else 'CPU'}）的选"
                "择不合适。"
                "bf16 的指数范围与 float32 相同，fp16 不是；bf16 的 Tensor Core 运算是从某一代 GPU 才开始有"
                "的，"
                "不管较老的 GPU 上 torch.cuda.is_bf16_supported() 怎么说。",
            )


HIDDEN = {"amp-step": judge_amp_reference, "choose-amp": judge_machines}
