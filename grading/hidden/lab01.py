"""Hidden judges for lab 01 (see ``grading/hidden/__init__.py``)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from devicekit_labs import Fail

#: Exercise 3's answers (True = raises RuntimeError), as PyTorch decides them on a GPU and on meta
#: (tests/test_exercises.py runs the four mixes; results/cuda-messages.json recorded b and d on CUDA).
PREDICT_RAISES = {"a": False, "b": True, "c": False, "d": True}


def mix_cases(acc: torch.device) -> dict[str, Callable[[], torch.Tensor]]:
    """The four operand mixes of exercise 3, as zero-argument callables on device ``acc``."""
    x = torch.ones(3, device=acc)
    return {
        "a": lambda: torch.tensor(2.0) + x,
        "b": lambda: torch.tensor([2.0]) + x,
        "c": lambda: x * 3,
        "d": lambda: torch.cat([x, torch.zeros(2)]),
    }


def judge_predict_raises(seen: dict) -> None:
    predictions = seen.get("predictions") or {}
    if any(predictions.get(k) is not v for k, v in PREDICT_RAISES.items()):
        raise Fail("the predictions do not match the answer key.", "预测与答案不一致。")


HIDDEN = {"predict-raises": judge_predict_raises}
