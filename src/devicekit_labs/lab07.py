"""Self-checks for lab 07 (mixed precision: autocast, GradScaler, bf16 and fp16).

Exercise 1 runs the learner's step in bf16 and fp16 on the CPU and on the second of two GPUs, real or
simulated (`devicekit_labs.machine`): on the GPU the linear layers' dtypes show whether the region's device
type is the data's, and the weights after two steps are real values the grader compares. Exercise 2 asks
about machines; the public judge checks the rules the lesson states (a scaler exactly for fp16, support that
only grows with the compute capability, no question to the GPU this code runs on), the grader's hidden judge
the choice for each machine.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator

import torch
from torch import nn

from devicekit_labs import Fail, describe_tensor, failed_call, judged, observe
from devicekit_labs.machine import probe_devices

LAB = "07-amp"


def make_model() -> nn.Module:
    """The lab's small MLP, always with the same initial weights (float32)."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))


def make_batch(device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(7)
    return torch.randn(8, 16, generator=gen).to(device), torch.randn(8, 4, generator=gen).to(device)


#: How many times the check calls the learner's step on one model.
STEPS = 2


def _amp_cases() -> list[tuple[torch.device, torch.dtype]]:
    """(device, autocast dtype) pairs to check: bf16 and fp16 on the CPU and on the probe's last GPU (cuda:1
    where there are two), bf16 there only from compute capability 8.0 (native bf16)."""
    cases = [(torch.device("cpu"), torch.bfloat16), (torch.device("cpu"), torch.float16)]
    gpus = probe_devices()
    if gpus:
        gpu = gpus[-1]
        cases.append((gpu, torch.float16))
        if torch.cuda.get_device_capability(gpu)[0] >= 8:
            cases.append((gpu, torch.bfloat16))
    return cases


def _linear_dtypes(model: nn.Module) -> tuple[list[torch.dtype], list]:
    seen: list[torch.dtype] = []
    hooks = [
        m.register_forward_hook(lambda _m, _inp, out: seen.append(out.dtype))
        for m in model.modules()
        if isinstance(m, nn.Linear)
    ]
    return seen, hooks


def _dtype_name(dtype: object) -> str | None:
    return str(dtype).removeprefix("torch.") if isinstance(dtype, torch.dtype) else None


def _new_scaler(device: torch.device, dtype: torch.dtype) -> torch.amp.GradScaler:
    # fp16 needs a scaler; a small initial scale keeps this tiny model's first step finite
    return torch.amp.GradScaler(device.type, init_scale=2.0**8, enabled=dtype == torch.float16)


def _probe_amp_case(amp_step, device: torch.device, dtype: torch.dtype) -> dict:
    seen: dict = {"device": str(device), "dtype": _dtype_name(dtype)}
    model = make_model().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = _new_scaler(device, dtype)
    x, y = make_batch(device)
    before = [p.detach().clone() for p in model.parameters()]
    linear_dtypes, hooks = _linear_dtypes(model)
    try:
        first = observe(amp_step, model, optimizer, scaler, x, y, dtype)
        if "error" in first:
            return {**seen, "error": first["error"]}
        # The same step from the same weights, without the gradients left over from the first step: a step
        # that clears them ends with the same weights on both copies.
        twin = copy.deepcopy(model)
        for p in twin.parameters():
            p.grad = None
        twin_scaler = _new_scaler(device, dtype)
        twin_scaler.load_state_dict(scaler.state_dict())
        twin_step = observe(
            amp_step, twin, torch.optim.SGD(twin.parameters(), lr=0.1), twin_scaler, x, y, dtype
        )
        second = observe(amp_step, model, optimizer, scaler, x, y, dtype)
    finally:
        for hook in hooks:
            hook.remove()
    if "error" in second:
        return {**seen, "error": second["error"]}
    seen["linear_dtypes"] = [_dtype_name(d) for d in linear_dtypes]
    seen["param_dtypes"] = [[n, _dtype_name(p.dtype)] for n, p in model.named_parameters()]
    loss = second["value"]
    seen["loss"] = describe_tensor(loss) if isinstance(loss, torch.Tensor) else {"type": type(loss).__name__}
    seen["scaler_enabled"] = scaler.is_enabled()
    seen["growth_tracker"] = (
        int(scaler.state_dict().get("_growth_tracker", 0)) if scaler.is_enabled() else None
    )
    seen["weights_changed"] = not all(
        torch.equal(a, p.detach()) for a, p in zip(before, model.parameters(), strict=True)
    )
    if "error" in twin_step:
        seen["clears_gradients"] = None
    else:
        seen["clears_gradients"] = all(
            torch.allclose(a, b, rtol=1e-3, atol=1e-5)
            for a, b in zip(model.parameters(), twin.parameters(), strict=True)
        )
    seen["params_after"] = {n: p.detach().to("cpu", copy=True) for n, p in model.named_parameters()}
    return seen


@judged(
    LAB, "amp-step", 1, "write a mixed-precision training step", "写一个混合精度训练步", target="amp_step"
)
def probe_amp_step(amp_step) -> dict:
    if not callable(amp_step):
        return {"callable": False}
    return {
        "callable": True,
        "steps": STEPS,
        "cases": [_probe_amp_case(amp_step, d, t) for d, t in _amp_cases()],
    }


@probe_amp_step.judge
def judge_amp_step(seen: dict) -> None:
    if not seen["callable"]:
        raise Fail(
            "expected a function amp_step(model, optimizer, scaler, x, y, dtype).",
            "应当是函数 amp_step(model, optimizer, scaler, x, y, dtype)。",
        )
    for case in seen["cases"]:
        label = f"{case['device']} with {case['dtype']}"
        failed_call(case, f"({label}) your step", f"（{label}）你的训练步")
        if not case["linear_dtypes"]:
            raise Fail(
                f"({label}) the model was never called: run its forward pass inside the step.",
                f"（{label}）模型根本没有被调用：要在训练步里做前向计算。",
            )
        if any(d != case["dtype"] for d in case["linear_dtypes"]):
            first = next(d for d in case["linear_dtypes"] if d != case["dtype"])
            raise Fail(
                f"({label}) the linear layers computed in {first}, not {case['dtype']}. Run the forward pass "
                "inside torch.autocast, with the device type of the data and the dtype you were given: an "
                "autocast for another device type leaves this device's math alone.",
                f"（{label}）线性层是用 {first} 计算的，而不是 {case['dtype']}。前向计算要放在 "
                "torch.autocast 里面，"
                "device_type 取自数据所在的设备，dtype 用传进来的那个：别的设备类型的 autocast 不会改变这个"
                "设备上的运算。",
            )
        wrong = [(n, d) for n, d in case["param_dtypes"] if d != "float32"]
        if wrong:
            raise Fail(
                f"({label}) after the step, parameter {wrong[0][0]} is {wrong[0][1]}. autocast leaves the "
                "weights in float32 and casts per operation: do not convert the model.",
                f"（{label}）训练步之后，参数 {wrong[0][0]} 变成了 {wrong[0][1]}。autocast 让权重保持 "
                "float32，"
                "按运算逐个转换：不要转换模型本身。",
            )
        _judge_loss(case, label)
        if not case["weights_changed"]:
            raise Fail(
                f"({label}) the weights did not change: the step must update them through the scaler.",
                f"（{label}）权重没有变化：训练步要通过 scaler 更新权重。",
            )
        if case["scaler_enabled"] and case["growth_tracker"] != seen["steps"]:
            raise Fail(
                f"({label}) the GradScaler did not complete each step: scale the loss before backward, step "
                "the "
                "optimizer through the scaler, then update the scaler.",
                f"（{label}）GradScaler 没有完整地走完每一步：反向传播前先缩放损失，通过 scaler 执行优化器的"
                " step，"
                "最后更新 scaler。",
            )
        if case["clears_gradients"] is False:
            raise Fail(
                f"({label}) the second step depends on gradients left over from the first one: the same step "
                "from the same weights ends elsewhere when the model starts without gradients. Gradients "
                "accumulate until something clears them.",
                f"（{label}）第二步的结果受到了第一步遗留梯度的影响：从同样的权重出发、但模型没有旧梯度时，"
                "同一个训练步得到的权重不同。梯度会一直累加，直到有代码把它们清掉。",
            )


def _judge_loss(case: dict, label: str) -> None:
    loss = case["loss"]
    finite = "values" in loss and bool(torch.isfinite(loss["values"].float()).all())
    if "device" not in loss or loss["shape"] != [] or not finite:
        raise Fail(
            f"({label}) return the loss: a finite 0-dim tensor.",
            f"（{label}）请返回损失：一个有限的 0 维张量。",
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
#: More GPUs the check asks about, unnamed in the exercise: rules that hold for all GPUs hold for these too.
MORE_MACHINES = {"P100": ("cuda", (6, 0)), "RTX 4090": ("cuda", (8, 9)), "B200": ("cuda", (10, 0))}


@contextlib.contextmanager
def _recording_gpu_questions(asked: list[str]) -> Iterator[None]:
    """Record calls of `torch.cuda.is_bf16_supported`: it describes the GPU this code runs on."""
    original = torch.cuda.is_bf16_supported

    def is_bf16_supported(including_emulation: bool = True) -> bool:
        asked.append(f"is_bf16_supported(including_emulation={including_emulation})")
        return original(including_emulation)

    torch.cuda.is_bf16_supported = is_bf16_supported
    try:
        yield
    finally:
        torch.cuda.is_bf16_supported = original


@judged(
    LAB,
    "choose-amp",
    2,
    "choose the autocast dtype and the scaler",
    "选择 autocast 的 dtype，以及要不要梯度缩放",
    target="choose_amp",
)
def probe_choose_amp(choose_amp) -> dict:
    if not callable(choose_amp):
        return {"callable": False}
    answers = {}
    asked: list[str] = []
    with _recording_gpu_questions(asked):
        for name, (device_type, capability) in {**MACHINES, **MORE_MACHINES}.items():
            got = observe(choose_amp, device_type, capability)
            if "error" in got:
                answers[name] = got
                continue
            value = got["value"]
            if isinstance(value, tuple) and len(value) == 2:
                answers[name] = {"value": [_dtype_name(value[0]) or repr(value[0]), value[1]]}
            else:
                answers[name] = {"value": repr(value)[:80]}
    return {"callable": True, "answers": answers, "asked": asked}


_DTYPES = ("float16", "bfloat16")


@probe_choose_amp.judge
def judge_choose_amp(seen: dict) -> None:
    if not seen["callable"]:
        raise Fail(
            "expected a function choose_amp(device_type, capability).",
            "应当是函数 choose_amp(device_type, capability)。",
        )
    machines = {**MACHINES, **MORE_MACHINES}
    for name, answer in seen["answers"].items():
        failed_call(answer, f"choose_amp for the {name}", f"choose_amp 作用于 {name} 时")
        value = answer["value"]
        if not isinstance(value, list) or value[0] not in _DTYPES or not isinstance(value[1], bool):
            raise Fail(
                "return a tuple (dtype, use_scaler) with a torch dtype and a bool, e.g. (torch.float16, "
                "True); "
                f"got {value!r} for the {name}.",
                "请返回元组 (dtype, use_scaler)，其中是一个 torch 的 dtype 和一个 bool，例如 "
                "(torch.float16, True)；"
                f"{name} 得到的是 {value!r}。",
            )
    if seen["asked"]:
        raise Fail(
            f"your function asks torch.cuda.{seen['asked'][0]}. That describes the GPU this code runs on, "
            "not "
            "the machine given by the arguments, and with its default it also answers True on GPUs that can "
            "only emulate bf16. Decide from device_type and capability.",
            f"你的函数调用了 torch.cuda.{seen['asked'][0]}。它描述的是运行这段代码的那块 GPU，而不是参数所描"
            "述的"
            "机器；而且按默认参数，它在只能模拟 bf16 的 GPU 上也返回 True。请只根据 device_type 和 "
            "capability 来判断。",
        )
    for name, answer in seen["answers"].items():
        dtype, use_scaler = answer["value"]
        if use_scaler != (dtype == "float16"):
            raise Fail(
                f"for the {name} you chose {dtype} with use_scaler={use_scaler}. What the scaler protects "
                "against "
                "depends on the dtype's exponent range: decide it from the dtype you chose.",
                f"{name} 你选了 {dtype}，use_scaler={use_scaler}。梯度缩放防范的问题取决于 dtype 的指数范围："
                "要根据你选的 dtype 来决定。",
            )
    gpus = sorted((cap, name) for name, (kind, cap) in machines.items() if kind == "cuda")
    for (_, older), (_, newer) in zip(gpus, gpus[1:], strict=False):
        if (
            seen["answers"][older]["value"][0] == "bfloat16"
            and seen["answers"][newer]["value"][0] == "float16"
        ):
            raise Fail(
                f"the {older} gets bf16 from your function, but the newer {newer} gets fp16. A GPU "
                "generation keeps "
                "the number formats of the generations before it.",
                f"你的函数给 {older} 选了 bf16，却给更新的 {newer} 选了 fp16。新一代 GPU 保留了前几代支持的"
                "数值格式。",
            )
