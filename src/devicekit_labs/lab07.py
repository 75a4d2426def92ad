"""Self-checks for lab 07 (mixed precision: autocast, GradScaler, bf16 and fp16)."""

from __future__ import annotations

import torch
from torch import nn

from devicekit.device import available_devices
from devicekit_labs import Fail, exercise

LAB = "07-amp"


def make_model() -> nn.Module:
    """The lab's small MLP, always with the same initial weights (float32)."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))


def make_batch(device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(7)
    return torch.randn(8, 16, generator=gen).to(device), torch.randn(8, 4, generator=gen).to(device)


def reference_step(model, optimizer, scaler, x, y, dtype) -> torch.Tensor:
    """One correct AMP training step: what the check compares the learner's result with."""
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=dtype):
        loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss


#: How many times the check calls the learner's step, and the reference step, on one model.
STEPS = 2


def _amp_cases() -> list[tuple[torch.device, torch.dtype]]:
    """(device, autocast dtype) pairs to check: bf16 and fp16 on the CPU, and the accelerator's if present."""
    cases = [(torch.device("cpu"), torch.bfloat16), (torch.device("cpu"), torch.float16)]
    for name in available_devices():
        dev = torch.device(name)
        if dev.type == "cuda":
            cases.append((dev, torch.float16))
            if torch.cuda.get_device_properties(dev).major >= 8:
                cases.append((dev, torch.bfloat16))
    return cases


def _linear_dtypes(model: nn.Module) -> tuple[list[torch.dtype], list]:
    seen: list[torch.dtype] = []
    hooks = [
        m.register_forward_hook(lambda _m, _inp, out: seen.append(out.dtype))
        for m in model.modules()
        if isinstance(m, nn.Linear)
    ]
    return seen, hooks


@exercise(
    LAB, "amp-step", 1, "write a mixed-precision training step", "写一个混合精度训练步", target="amp_step"
)
def check_amp_step(amp_step) -> None:
    for device, dtype in _amp_cases():
        model = make_model().to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        # fp16 needs a scaler; a small initial scale keeps this tiny model's first step finite
        scaler = torch.amp.GradScaler(device.type, init_scale=2.0**8, enabled=dtype == torch.float16)
        x, y = make_batch(device)
        before = [p.detach().clone() for p in model.parameters()]
        seen, hooks = _linear_dtypes(model)
        try:
            # two steps: a step that forgets to zero the gradients only shows on the second one
            loss = amp_step(model, optimizer, scaler, x, y, dtype)
            if isinstance(loss, torch.Tensor):
                loss = amp_step(model, optimizer, scaler, x, y, dtype)
        finally:
            for hook in hooks:
                hook.remove()
        label = f"{device.type} with {str(dtype).replace('torch.', '')}"
        if not seen:
            raise Fail(
                f"({label}) the model was never called: run its forward pass inside the step.",
                f"（{label}）模型根本没有被调用：要在训练步里做前向计算。",
            )
        if any(d != dtype for d in seen):
            raise Fail(
                f"({label}) the linear layers computed in {seen[0]}, not {dtype}. Run the forward pass "
                "inside torch.autocast, with the device type of the data and the dtype you were given: "
                "an autocast for another device type leaves this device's math alone.",
                f"（{label}）线性层是用 {seen[0]} 计算的，而不是 {dtype}。前向计算要放在 torch.autocast "
                "里面，device_type 取自数据所在的设备，dtype 用传进来的那个：别的设备类型的 autocast "
                "不会改变这个设备上的运算。",
            )
        wrong = [(n, p.dtype) for n, p in model.named_parameters() if p.dtype != torch.float32]
        if wrong:
            raise Fail(
                f"({label}) after the step, parameter {wrong[0][0]} is {wrong[0][1]}. autocast leaves the "
                "weights in float32 and casts per operation: do not convert the model.",
                f"（{label}）训练步之后，参数 {wrong[0][0]} 变成了 {wrong[0][1]}。autocast 让权重保持 "
                "float32，按运算逐个转换：不要转换模型本身。",
            )
        if not isinstance(loss, torch.Tensor) or loss.dim() != 0 or not torch.isfinite(loss.float()):
            raise Fail(
                f"({label}) return the loss: a finite 0-dim tensor.",
                f"（{label}）请返回损失：一个有限的 0 维张量。",
            )
        if all(torch.equal(a, p.detach()) for a, p in zip(before, model.parameters(), strict=True)):
            raise Fail(
                f"({label}) the weights did not change: the step must update them through the scaler "
                "(scaler.step(optimizer)).",
                f"（{label}）权重没有变化：训练步要通过 scaler 更新权重（scaler.step(optimizer)）。",
            )
        if scaler.is_enabled() and scaler.state_dict()["_growth_tracker"] != STEPS:
            raise Fail(
                f"({label}) the GradScaler did not complete each step: scale the loss before backward, "
                "step the optimizer through the scaler, then update the scaler.",
                f"（{label}）GradScaler 没有完整地走完每一步：反向传播前先缩放损失，通过 scaler 执行优化器"
                "的 step，最后更新 scaler。",
            )
        ref_model = make_model().to(device)
        ref_opt = torch.optim.SGD(ref_model.parameters(), lr=0.1)
        ref_scaler = torch.amp.GradScaler(device.type, init_scale=2.0**8, enabled=scaler.is_enabled())
        for _ in range(STEPS):
            reference_step(ref_model, ref_opt, ref_scaler, *make_batch(device), dtype)
        for (name, got), want in zip(model.named_parameters(), ref_model.parameters(), strict=True):
            if not torch.allclose(got, want, rtol=1e-2, atol=1e-3):
                raise Fail(
                    f"({label}) after two steps, {name} differs from correct mixed-precision steps: zero the "
                    "gradients, compute the loss under autocast, and backpropagate the scaled loss once.",
                    f"（{label}）两步之后，{name} 与两次正确的混合精度训练步的结果不同：先清零梯度，"
                    "在 autocast 下计算损失，再对缩放后的损失做一次反向传播。",
                )


#: Machines the choice exercise asks about: (device type, CUDA compute capability or None).
MACHINES = {
    "V100": ("cuda", (7, 0)),
    "T4": ("cuda", (7, 5)),
    "A100": ("cuda", (8, 0)),
    "RTX 3090": ("cuda", (8, 6)),
    "H100": ("cuda", (9, 0)),
    "laptop CPU": ("cpu", None),
}


def _right_choice(device_type: str, capability) -> tuple[torch.dtype, bool]:
    if device_type == "cuda" and capability[0] < 8:
        return torch.float16, True
    return torch.bfloat16, False


@exercise(
    LAB,
    "choose-amp",
    2,
    "choose the autocast dtype and the scaler",
    "选择 autocast 的 dtype，以及要不要梯度缩放",
    target="choose_amp",
)
def check_choose_amp(choose_amp) -> None:
    wrong = []
    for name, (device_type, capability) in MACHINES.items():
        answer = choose_amp(device_type, capability)
        if (
            not isinstance(answer, tuple)
            or len(answer) != 2
            or not isinstance(answer[0], torch.dtype)
            or not isinstance(answer[1], bool)
        ):
            raise Fail(
                f"return a tuple (dtype, use_scaler), e.g. (torch.float16, True); got {answer!r} for {name}.",
                f"请返回元组 (dtype, use_scaler)，例如 (torch.float16, True)；{name} 得到的是 {answer!r}。",
            )
        if answer != _right_choice(device_type, capability):
            wrong.append(name)
    if wrong:
        raise Fail(
            f"{len(wrong)} of {len(MACHINES)} machines get a poor choice: {', '.join(wrong)}. Hint: bf16 has "
            "float32's exponent range, fp16 does not; and bf16 Tensor Core math arrived with compute "
            "capability 8.0, whatever torch.cuda.is_bf16_supported() says on older GPUs.",
            f"{len(MACHINES)} 台机器中有 {len(wrong)} 台的选择不合适：{'、'.join(wrong)}。"
            "提示：bf16 的指数范围与 float32 相同，fp16 不是；"
            "bf16 的 Tensor Core 运算从计算能力 8.0 才开始支持，"
            "不管较老的 GPU 上 torch.cuda.is_bf16_supported() 怎么说。",
        )
