"""Hidden judges of lab 1 for the grader's tests (the instructor's tier: never in the student wheel)."""

from __future__ import annotations

import torch

from devicekit.device import mismatch_device
from devicekit_labs import Fail

LAB = "01-devices"


def _raises(fn) -> bool:
    try:
        fn()
    except RuntimeError:
        return True
    return False


def judge_predictions(seen: dict) -> None:
    x = torch.ones(3, device=mismatch_device())
    truth = {
        "a": _raises(lambda: torch.tensor(2.0) + x),
        "b": _raises(lambda: torch.tensor([2.0]) + x),
        "c": _raises(lambda: x * 3),
        "d": _raises(lambda: torch.cat([x, torch.zeros(2)])),
    }
    if seen["answer"] != truth:
        raise Fail(
            "at least one prediction is wrong. A Python number or a 0-dim CPU tensor mixes with a tensor on "
            "any device; any other CPU tensor does not.",
            "至少有一个预测不对。Python 数字和 0 维 CPU 张量可以与任何设备上的张量运算；其他 CPU 张量不行。",
        )


HIDDEN = {"predict-raises": judge_predictions}
