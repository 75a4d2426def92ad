"""Self-checks for lab 01 (devices and ``.device``)."""

from __future__ import annotations

import torch

from devicekit.device import mismatch_device
from devicekit.exercises import Fail, exercise

LAB = "01-devices"


@exercise(LAB, "move-batch", 1, "return the moved tensor", "返回搬运后的张量", target="move_batch")
def check_move_batch(move_batch) -> None:
    target = mismatch_device()
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


@exercise(
    LAB,
    "causal-mask",
    2,
    "create the mask on the input's device",
    "在输入所在的设备上创建掩码",
    target="causal_mask",
)
def check_causal_mask(causal_mask) -> None:
    for device in (torch.device("cpu"), mismatch_device()):
        x = torch.zeros(2, 5, 8, device=device)
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
        if mask.shape != (5, 5) or mask.dtype != torch.bool:
            raise Fail(
                f"expected a (5, 5) bool mask for an input of shape (2, 5, 8), got {tuple(mask.shape)} "
                f"{mask.dtype}.",
                "输入形状为 (2, 5, 8) 时应得到 (5, 5) 的 bool 掩码，"
                f"实际是 {tuple(mask.shape)} {mask.dtype}。",
            )
        if device.type == "cpu" and not torch.equal(mask, torch.ones(5, 5, dtype=torch.bool).tril()):
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


@exercise(
    LAB, "predict-raises", 3, "predict which mixes raise", "预测哪些组合会报错", target="my_predictions"
)
def check_predictions(predictions) -> None:
    if callable(predictions):
        predictions = predictions()
    if not isinstance(predictions, dict) or set(predictions) != {"a", "b", "c", "d"}:
        raise Fail(
            "expected a dict with the keys 'a', 'b', 'c', 'd' and True (raises) or False (works) as values.",
            "应当是一个字典，键为 'a'、'b'、'c'、'd'，值为 True（会报错）或 False（能运行）。",
        )
    truth = {key: _raises(case) for key, case in mix_cases(mismatch_device()).items()}
    wrong = sum(bool(predictions[k]) != truth[k] for k in truth)
    if wrong:
        verb = "is" if wrong == 1 else "are"
        raise Fail(
            f"{wrong} of the 4 predictions {verb} wrong. Hint: a 0-dim CPU tensor and a Python number can be "
            "combined with a tensor on any device; any other CPU tensor cannot.",
            f"4 个预测中有 {wrong} 个不对。提示：0 维的 CPU 张量和 Python 数字可以与任何设备上的张量一起"
            "运算；其他 CPU 张量都不行。",
        )
