"""Self-checks for lab 01 (devices and ``.device``)."""

from __future__ import annotations

import torch

from devicekit.device import mismatch_device
from devicekit_labs import Fail, exercise

LAB = "01-devices"


@exercise(LAB, "move-batch", 1, "return the moved tensor", "返回移动后的张量", target="move_batch")
def check_move_batch(move_batch) -> None:
    # two targets: the accelerator (or meta) and the CPU, so an answer that ignores `device` fails on any
    # machine; values are compared wherever the result holds any (meta tensors hold none)
    for target in (mismatch_device(), torch.device("cpu")):
        _check_move_to(move_batch, target)


def _check_move_to(move_batch, target: torch.device) -> None:
    x = torch.arange(6.0).reshape(2, 3)
    moved = move_batch(x, target)
    if moved is None:
        raise Fail(
            "your function returns None. `Tensor.to` does not change the tensor it is called on: "
            "it returns a new one, and that is what the function must return.",
            "函数返回了 None。`Tensor.to` 不会修改原张量，而是返回一个新张量——函数要返回的正是它。",
        )
    if not isinstance(moved, torch.Tensor):
        raise Fail(
            f"expected a tensor back, got {type(moved).__name__}.",
            f"应当返回一个张量，实际返回的是 {type(moved).__name__}。",
        )
    if moved.device != target:
        raise Fail(
            f"the returned tensor is on {moved.device}, not on {target}. If you wrote `x.to(device)` as a "
            "statement, its result was thrown away: keep the value `.to()` returns.",
            f"返回的张量在 {moved.device} 上，而不是 {target}。如果你把 `x.to(device)` 单独写成一行，"
            "它的结果就被丢掉了：要用 `.to()` 的返回值。",
        )
    if x.device.type != "cpu" or moved.shape != x.shape:
        raise Fail(
            "the input tensor must stay where it was, and the result must keep its shape.",
            "输入张量应当留在原设备上，结果的形状也不应改变。",
        )
    if target.type != "meta" and not torch.equal(moved.cpu(), torch.arange(6.0).reshape(2, 3)):
        raise Fail(
            "the returned tensor is on the right device but holds other values: move the tensor you were "
            "given (its values come along), do not create a new one.",
            "返回的张量设备对了，数值却不一样：要移动传进来的那个张量（数值会随之带过去），而不是新建一个。",
        )


@exercise(
    LAB,
    "causal-mask",
    2,
    "create the mask on the input's device",
    "在输入所在的设备上创建掩码",
    target="causal_mask",
)
def check_causal_mask(causal_mask) -> None:
    # two devices, and two sequence lengths so that a hard-coded size fails; values compared on the CPU
    for device, (batch, steps, channels) in (
        (torch.device("cpu"), (2, 5, 8)),
        (mismatch_device(), (2, 5, 8)),
        (torch.device("cpu"), (3, 4, 2)),
    ):
        x = torch.zeros(batch, steps, channels, device=device)
        mask = causal_mask(x)
        if not isinstance(mask, torch.Tensor):
            raise Fail(
                f"expected a tensor back, got {type(mask).__name__}.",
                f"应当返回一个张量，实际返回的是 {type(mask).__name__}。",
            )
        if mask.device != x.device:
            raise Fail(
                f"for an input on {x.device} the mask was created on {mask.device}. Factory functions such "
                "as torch.ones/torch.tril put new tensors on the CPU unless you pass device=...: "
                "take the device from the input.",
                f"输入在 {x.device} 上，掩码却创建在了 {mask.device} 上。torch.ones、torch.tril 这类工厂"
                "函数不传 device=... 时会把新张量放在 CPU 上：设备应当取自输入张量。",
            )
        shape = (batch, steps, channels)
        if mask.shape != (steps, steps) or mask.dtype != torch.bool:
            raise Fail(
                f"expected a ({steps}, {steps}) bool mask for an input of shape {shape}, got "
                f"{tuple(mask.shape)} {mask.dtype}. T is x.shape[-2].",
                f"输入形状为 {shape} 时应得到 ({steps}, {steps}) 的 bool 掩码，"
                f"实际是 {tuple(mask.shape)} {mask.dtype}。T 是 x.shape[-2]。",
            )
        expected = torch.ones(steps, steps, dtype=torch.bool).tril()
        if device.type == "cpu" and not torch.equal(mask, expected):
            raise Fail(
                "the mask has the right device and shape but the wrong values: position i may see "
                "positions 0..i (lower triangle, diagonal included).",
                "掩码的设备和形状都对，但取值不对：位置 i 只能看到 0..i（下三角，含对角线）。",
            )


def _raises(fn) -> bool:
    try:
        fn()
    except RuntimeError:
        return True
    return False


def mix_cases(acc: torch.device) -> dict[str, object]:
    """The four operand mixes of exercise 3, as zero-argument callables on device ``acc``."""
    x = torch.ones(3, device=acc)
    return {
        "a": lambda: torch.tensor(2.0) + x,
        "b": lambda: torch.tensor([2.0]) + x,
        "c": lambda: x * 3,
        "d": lambda: torch.cat([x, torch.zeros(2)]),
    }


#: The answer format of exercise 3, shown in the stub and in every format error.
PREDICTIONS_FORMAT = (
    '{"a": True or False, "b": ..., "c": ..., "d": ...}  # True = raises RuntimeError, False = works'
)


@exercise(
    LAB, "predict-raises", 3, "predict which mixes raise", "预测哪些组合会报错", target="my_predictions"
)
def check_predictions(predictions) -> None:
    if callable(predictions):
        predictions = predictions()
    if not isinstance(predictions, dict) or set(predictions) != {"a", "b", "c", "d"}:
        got = sorted(map(repr, predictions)) if isinstance(predictions, dict) else type(predictions).__name__
        raise Fail(
            f"expected a dict with exactly the keys 'a', 'b', 'c', 'd', got {got}. Return it in this format: "
            f"{PREDICTIONS_FORMAT}",
            f"应当返回一个字典，键恰好是 'a'、'b'、'c'、'd'，实际得到的是 {got}。请按这个格式返回："
            f"{PREDICTIONS_FORMAT}（True 表示会报 RuntimeError，False 表示能正常运行）",
        )
    not_bool = sorted(key for key, value in predictions.items() if not isinstance(value, bool))
    if not_bool:
        shown = ", ".join(f"{key!r}: {predictions[key]!r}" for key in not_bool)
        raise Fail(
            f"each value must be True or False, not {shown}. Return it in this format: {PREDICTIONS_FORMAT}",
            f"每个值都必须是 True 或 False，而不是 {shown}。请按这个格式返回：{PREDICTIONS_FORMAT}"
            "（True 表示会报 RuntimeError，False 表示能正常运行）",
        )
    truth = {key: _raises(case) for key, case in mix_cases(mismatch_device()).items()}
    wrong = sum(predictions[k] != truth[k] for k in truth)
    if wrong:
        verb = "is" if wrong == 1 else "are"
        raise Fail(
            f"{wrong} of the 4 predictions {verb} wrong. Hint: a Python number, or a 0-dim CPU tensor in "
            "an element-wise operation, can be combined with a tensor on any device; any other CPU tensor "
            "cannot.",
            f"4 个预测中有 {wrong} 个不对。提示：在逐元素运算中，Python 数字和 0 维的 CPU 张量可以与"
            "任何设备上的张量一起运算；其他 CPU 张量都不行。",
        )
