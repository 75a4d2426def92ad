"""Hidden judges for lab 04 (see ``grading/hidden/__init__.py``)."""

from __future__ import annotations

from devicekit_labs import Fail

#: Exercise 3: whether each snippet has a bug (True) or is correct (False). The reasons are in the lesson
#: (PyTorch's tutorial on non_blocking and pin_memory): a device->host copy with non_blocking=True may not
#: have arrived when the host reads it, and a pinned source must not be changed until the asynchronous copy
#: that reads it has finished. The snippets need a GPU and their failures are races: no test runs them.
NON_BLOCKING_TRUTH = {"a": False, "b": True, "c": False, "d": True, "e": False}


def judge_non_blocking(seen: dict) -> None:
    answers = seen.get("predictions") or {}
    if any(answers.get(k) is not v for k, v in NON_BLOCKING_TRUTH.items()):
        raise Fail("the answers do not match the answer key.", "答案与答案表不一致。")


HIDDEN = {"non-blocking": judge_non_blocking}
