"""Hidden judges for lab 03 (see ``grading/hidden/__init__.py``)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from devicekit_labs import Fail

#: Exercise 1's answers: "error" (raises), "x" (on x's device) or "cpu". tests/test_lab03.py runs the mixes on
#: a GPU, real or simulated, and compares the answers with what results/cuda-messages.json recorded.
PREDICT_MIXES = {
    "a": "x", "b": "x", "c": "error", "d": "error", "e": "error", "f": "x",
    "g": "error", "h": "x", "i": "x", "j": "cpu", "k": "x", "l": "error",
}  # fmt: skip


def drill_cases(acc: torch.device) -> dict[str, Callable[[], torch.Tensor]]:
    """The twelve mixes of exercise 1, as zero-argument callables, with ``x`` on device ``acc``."""
    x = torch.ones(3, device=acc)
    return {
        "a": lambda: x * 2,
        "b": lambda: x + torch.tensor(2.0),
        "c": lambda: x + torch.tensor([2.0]),
        "d": lambda: torch.cat([x, torch.zeros(3)]),
        "e": lambda: torch.stack([x.sum(), torch.tensor(0.0)]),
        "f": lambda: torch.where(x > 1, x, 0.0),
        "g": lambda: torch.where(torch.tensor([True, False, True]), x, x),
        "h": lambda: x[torch.tensor([0, 2])],
        "i": lambda: x[torch.tensor([True, False, True])],
        "j": lambda: torch.zeros(x.shape),
        "k": lambda: torch.zeros_like(x),
        "l": lambda: x > torch.zeros(3),
    }


def outcome(case: Callable[[], torch.Tensor], acc: torch.device) -> str:
    """What one mix does on device ``acc``: "error", "x" (the output is on ``acc``) or "cpu"."""
    try:
        out = case()
    except RuntimeError:
        return "error"
    if out.device == acc:
        return "x"
    if out.device.type == "cpu":
        return "cpu"
    raise AssertionError(f"unexpected output device {out.device}")


def judge_predict_mixes(seen: dict) -> None:
    predictions = seen.get("predictions") or {}
    if any(predictions.get(k) != v for k, v in PREDICT_MIXES.items()):
        raise Fail("the predictions do not match the answer key.", "预测与答案不一致。")


HIDDEN = {"predict-mixes": judge_predict_mixes}
