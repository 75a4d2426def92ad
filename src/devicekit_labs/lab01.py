"""Self-checks for lab 01 (devices and ``.device``).

Every check is a probe (runs the learner's function on inputs it plants, on the CPU and on two GPUs, real
or simulated: `devicekit_labs.machine.probe_devices`) and a judge (reads what the probe saw, never runs
learner code).
"""

from __future__ import annotations

import torch

from devicekit_labs import Fail, describe_tensor, failed_call, judged, observe
from devicekit_labs.drills import judge_drill, probe_drill
from devicekit_labs.machine import probe_devices

LAB = "01-devices"


def _planted(dtype: str) -> torch.Tensor:
    """The tensor exercise 1 hands to ``move_batch``: 0..5 as (2, 3), in ``dtype``, on the CPU."""
    return torch.arange(6.0, dtype=getattr(torch, dtype)).reshape(2, 3)


def _tensor_or_type(value: object) -> dict:
    described = describe_tensor(value)
    return {"tensor": described} if described is not None else {"type": type(value).__name__}


# --- exercise 1 ---------------------------------------------------------------------------------------------


@judged(LAB, "move-batch", 1, "return the moved tensor", "返回移动后的张量", target="move_batch")
def probe_move_batch(move_batch) -> dict:
    # the GPUs and the CPU as targets and two dtypes, so that an answer that ignores `device`, moves to "cuda"
    # (cuda:0) whatever it is asked, or converts the dtype on the way, fails
    cases = []
    for target in (*probe_devices()[::-1], torch.device("cpu")):
        for dtype in ("float32", "float64"):
            x = _planted(dtype)
            called = observe(move_batch, x, target)
            case = {"target": str(target), "dtype": dtype}
            if "error" in called:
                case["error"] = called["error"]
            else:
                case["result"] = _tensor_or_type(called["value"])
            case["input"] = describe_tensor(x)
            cases.append(case)
    return {"cases": cases}


@probe_move_batch.judge
def judge_move_batch(seen: dict) -> None:
    for case in seen["cases"]:
        target, dtype = case["target"], case["dtype"]
        failed_call(case, f"moving a tensor to {target}", f"把张量移动到 {target} 时")
        result = case["result"]
        if "tensor" not in result:
            if result["type"] == "NoneType":
                raise Fail(
                    "your function returns None. `Tensor.to` does not change the tensor it is called on: "
                    "it returns a new one, and that is what the function must return.",
                    "函数返回了 None。`Tensor.to` 不会修改原张量，而是返回一个新张量——函数要返回的正是它。",
                )
            raise Fail(
                f"expected a tensor back, got {result['type']}.",
                f"应当返回一个张量，实际返回的是 {result['type']}。",
            )
        moved = result["tensor"]
        if moved["device"].startswith("cuda") and target.startswith("cuda") and moved["device"] != target:
            raise Fail(
                f'asked for {target}, the returned tensor is on {moved["device"]}: `.cuda()` and "cuda" '
                "mean the current GPU (cuda:0 unless you changed it), not the device you were given. Pass "
                "`device` itself to `.to()`.",
                f'要求的是 {target}，返回的张量却在 {moved["device"]} 上：`.cuda()` 和 "cuda" 指的是当前 GPU'
                "（没改过就是 cuda:0），不是传进来的那个设备。请把 `device` 本身交给 `.to()`。",
            )
        if moved["device"] != target:
            raise Fail(
                f"the returned tensor is on {moved['device']}, not on {target}. If you wrote `x.to(device)` "
                "as a statement, its result was thrown away: keep the value `.to()` returns.",
                f"返回的张量在 {moved['device']} 上，而不是 {target}。如果你把 `x.to(device)` 单独写成一行，"
                "它的结果就被丢掉了：要用 `.to()` 的返回值。",
            )
        if moved["dtype"] != dtype:
            raise Fail(
                f"for a {dtype} input the returned tensor is {moved['dtype']}: moving a tensor must not "
                "change its dtype. Move the tensor you were given, and give `.to()` the device only.",
                f"输入是 {dtype}，返回的张量却是 {moved['dtype']}：移动张量不应改变它的 dtype。"
                "要移动传进来的那个张量，调用 `.to()` 时只传设备。",
            )
        seen_input = case["input"]
        if seen_input["device"] != "cpu" or moved["shape"] != [2, 3]:
            raise Fail(
                "the input tensor must stay where it was, and the result must keep its shape.",
                "输入张量应当留在原设备上，结果的形状也不应改变。",
            )
        planted = _planted(dtype)
        if not torch.equal(seen_input["values"], planted) or (
            "values" in moved and not torch.equal(moved["values"], planted)
        ):
            raise Fail(
                "the returned tensor is on the right device but holds other values (or the input changed): "
                "move the tensor you were given (its values come along), do not create a new one.",
                "返回的张量设备对了，数值却不一样（或者输入被改动了）：要移动传进来的那个张量"
                "（数值会随之带过去），而不是新建一个。",
            )


# --- exercise 2 ---------------------------------------------------------------------------------------------


#: The inputs of exercise 2: (device, (B, T, C)); two devices each way, two sequence lengths on each.
def _mask_inputs() -> list[tuple[torch.device, tuple[int, int, int]]]:
    gpus = probe_devices()
    cpu = torch.device("cpu")
    return [(cpu, (2, 5, 8)), (gpus[-1], (2, 5, 8)), (cpu, (3, 4, 2)), (gpus[0], (1, 3, 2))]


@judged(
    LAB,
    "causal-mask",
    2,
    "create the mask on the input's device",
    "在输入所在的设备上创建掩码",
    target="causal_mask",
)
def probe_causal_mask(causal_mask) -> dict:
    cases = []
    for device, shape in _mask_inputs():
        x = torch.zeros(*shape, device=device)
        called = observe(causal_mask, x)
        case: dict = {"device": str(device), "shape": list(shape)}
        if "error" in called:
            case["error"] = called["error"]
        else:
            case["result"] = _tensor_or_type(called["value"])
        cases.append(case)
    return {"cases": cases}


@probe_causal_mask.judge
def judge_causal_mask(seen: dict) -> None:
    for case in seen["cases"]:
        device, shape = case["device"], tuple(case["shape"])
        failed_call(case, f"for an input on {device}", f"输入在 {device} 上时")
        if "tensor" not in case["result"]:
            got = case["result"]["type"]
            raise Fail(f"expected a tensor back, got {got}.", f"应当返回一个张量，实际返回的是 {got}。")
        mask = case["result"]["tensor"]
        if mask["device"].startswith("cuda") and device.startswith("cuda") and mask["device"] != device:
            raise Fail(
                f'for an input on {device} the mask was created on {mask["device"]}: "cuda" means the '
                "current GPU (cuda:0 unless you changed it), not the input's. Take the device from the "
                "input: device=x.device.",
                f'输入在 {device} 上，掩码却创建在了 {mask["device"]} 上："cuda" 指的是当前 GPU'
                "（没改过就是 cuda:0），不是输入所在的那块。设备应当取自输入：device=x.device。",
            )
        if mask["device"] != device:
            raise Fail(
                f"for an input on {device} the mask was created on {mask['device']}. Factory functions such "
                "as torch.ones/torch.tril put new tensors on the CPU unless they are told otherwise: "
                "take the device from the input.",
                f"输入在 {device} 上，掩码却创建在了 {mask['device']} 上。torch.ones、torch.tril 这类工厂"
                "函数不指定设备时会把新张量放在 CPU 上：设备应当取自输入张量。",
            )
        steps = shape[-2]
        if mask["shape"] != [steps, steps] or mask["dtype"] != "bool":
            raise Fail(
                f"expected a ({steps}, {steps}) bool mask for an input of shape {shape}, got "
                f"{tuple(mask['shape'])} {mask['dtype']}. T is the input's second-to-last size.",
                f"输入形状为 {shape} 时应得到 ({steps}, {steps}) 的 bool 掩码，"
                f"实际是 {tuple(mask['shape'])} {mask['dtype']}。T 是输入倒数第二维的大小。",
            )
        if "values" in mask:
            rows = torch.arange(steps).unsqueeze(1)
            if not torch.equal(mask["values"], rows >= rows.T):
                raise Fail(
                    "the mask has the right device and shape but the wrong values: position i may see "
                    "positions 0..i (lower triangle, diagonal included).",
                    "掩码的设备和形状都对，但取值不对：位置 i 只能看到 0..i（下三角，含对角线）。",
                )


# --- exercise 3 ---------------------------------------------------------------------------------------------

#: The answer format of exercise 3, shown in the stub and in every format error.
PREDICTIONS_FORMAT = (
    '{"a": True or False, "b": ..., "c": ..., "d": ...}  # True = raises RuntimeError, False = works'
)
_PREDICTIONS_FORMAT_ZH = f"{PREDICTIONS_FORMAT}（True 表示会报 RuntimeError，False 表示能正常运行）"

#: One digest per letter (see `devicekit_labs.drills`); the answers themselves live in the grader's tier.
_DIGESTS = {
    "a": "7b305def5c9638e1",
    "b": "f3d81dd6b583d23b",
    "c": "588ca46e3c1e5fa0",
    "d": "fcfbf7770cd0d36f",
}

#: The rule that decides each letter, in words that do not name the letter.
_RULES = {
    "a": (
        "a 0-dim CPU tensor (shape (), no dimensions at all) in an element-wise operation is treated like a "
        "Python number and may meet a tensor on any device.",
        "在逐元素运算里，0 维的 CPU 张量（形状为 ()，没有任何维度）被当作 Python 数字对待，"
        "可以和任何设备上的张量一起运算。",
    ),
    "b": (
        "a CPU tensor that holds one element but has one dimension (shape (1,)) is an ordinary tensor, not a "
        "scalar: an operation refuses it next to a tensor on another device.",
        "只有一个元素、但有一个维度（形状为 (1,)）的 CPU 张量是普通张量，不算标量：它和另一个设备上的张量"
        "一起运算时会被拒绝。",
    ),
    "c": (
        "a Python number has no device at all: it combines with a tensor on any device.",
        "Python 数字根本没有设备：它可以和任何设备上的张量一起运算。",
    ),
    "d": (
        "joining tensors (torch.cat) is not an element-wise operation and makes no scalar exception: every "
        "tensor it joins must be on one device.",
        "拼接张量（torch.cat）不是逐元素运算，没有标量例外：参与拼接的每个张量都必须在同一个设备上。",
    ),
}


@judged(LAB, "predict-raises", 3, "predict which mixes raise", "预测哪些组合会报错", target="my_predictions")
def probe_predictions(predictions) -> dict:
    return probe_drill(predictions)


@probe_predictions.judge
def judge_predictions(seen: dict) -> None:
    judge_drill(
        seen,
        lab=LAB,
        key="predict-raises",
        letters="abcd",
        allowed=(True, False),
        digests=_DIGESTS,
        rules=_RULES,
        format_en=PREDICTIONS_FORMAT,
        format_zh=_PREDICTIONS_FORMAT_ZH,
    )
