"""Failures of the grader itself, told apart from a notebook's own: they are never a score.

A submission whose run failed before any of its cells ran (its kernel did not start, the grader's worker
ended, the grader's setup cell failed), or whose answers could not be collected for a reason that is not
the notebook's (the evaluator failed), gets the status ``grader-error``: no score, the cause in both
languages, never exported to an LMS, never taken from the cache; and the run's exit status is
`GRADER_ERROR`. When the grader cannot run notebooks at all (its sandbox hides what the kernel needs, its
evaluator does not start), the run stops before grading anything (`GraderFailure`), with the same status.
"""

from __future__ import annotations

from devicekit.messages import Message, localised


class Told(Exception):
    """An error the grader tells the instructor in both languages: ``message`` says why (and what to do);
    ``str()`` is the English, whatever the language (logs, ``pytest.raises(match=...)``)."""

    def __init__(self, message: Message) -> None:
        self.message = message
        super().__init__(message.en)


#: The exit status of a run in which the grader itself failed (see the module docstring).
GRADER_ERROR = 4
#: The status of a row whose submission the grader failed to run or to check.
STATUS = "grader-error"

#: Each way the grader can fail on a submission: its cause in both languages.
CAUSES: dict[str, Message] = {
    "kernel-did-not-start": Message("the kernel did not start", "内核没有启动"),
    "worker-ended": Message(
        "its worker ended before the notebook's first cell",
        "运行 notebook 的进程在第一个单元格之前就结束了",
    ),
    "kernel-died-early": Message(
        "the kernel ended before the notebook's first cell",
        "内核在 notebook 的第一个单元格之前就退出了",
    ),
    "setup-failed": Message("the grader's setup cell failed in the kernel", "评分器的准备单元格在内核中出错"),
    "stopped-early": Message(
        "the run was stopped before the notebook's first cell",
        "notebook 的第一个单元格还没开始，运行就被终止了",
    ),
    "answers": Message(
        "the answers could not be collected, for a reason that is not the notebook's",
        "收集不到答案，原因不在 notebook",
    ),
    "crashed": Message("the grader failed on this file", "评分器处理这个文件时出错"),
}


def _detail(text: str) -> str:
    """A technical detail (an exception, a log's last line) as one part of a row's reason: one line, no
    "; " (the reason's separator), at most 400 characters."""
    flat = " ".join(str(text).split()).replace("; ", ", ")
    return flat if len(flat) <= 400 else flat[:399] + "…"


class GraderError(Exception):
    """The grader failed on one submission: ``cause`` is a key of `CAUSES`, ``detail`` what it saw."""

    def __init__(self, cause: str, detail: str = "") -> None:
        if cause not in CAUSES:
            known = ", ".join(CAUSES)
            raise localised(
                ValueError,
                Message(
                    f"unknown grader failure {cause!r}: one of {known}",
                    f"未知的评分器故障 {cause!r}：应为 {'、'.join(CAUSES)} 之一",
                ),
            )
        self.cause, self.detail = cause, _detail(detail)
        super().__init__(self.reason().en)

    def reason(self) -> Message:
        """The row's reason: the cause, then what the grader saw (a technical detail, as it was)."""
        cause = CAUSES[self.cause]
        return Message(
            f"grader error: {cause.en}" + (f": {self.detail}" if self.detail else ""),
            f"评分器出错：{cause.zh}" + (f"：{self.detail}" if self.detail else ""),
        )

    def note(self) -> Message:
        """The learner's feedback line."""
        cause = CAUSES[self.cause]
        return Message(
            f"Not graded: the grader failed, not your notebook ({cause.en}). Your instructor will grade it "
            "again.",
            f"未评分：出错的是评分器，不是你的 notebook（{cause.zh}）。老师会重新评分。",
        )


class GraderFailure(RuntimeError):
    """The grader cannot run notebooks here at all: the run stops before grading anything. ``message``
    says why and what to do."""

    def __init__(self, message: Message) -> None:
        self.message = message
        super().__init__(f"{message.en}\n\n{message.zh}")
