"""Grade one submission: run it sealed off to collect its answers as data, then judge the data in a
process of the grader's own. One rule: no code from a submission runs in a process that computes, holds
or writes a score.

One submission's way through the grader, each module once:

1. `devicekit_grade.identify`: which lab, which language (its bytes were read by
   `devicekit_grade.discover` before anything ran);
2. `devicekit_grade.released`: integrity flags against the released labs and the published solution;
3. `devicekit_grade.box`: the notebook runs in a box of its own (`devicekit_grade.sandbox`), and the
   evaluator (`devicekit_grade.context.Context.evaluate`) judges what its probes observed; when the kernel
   died or was stopped, the notebook runs a second time up to the cell that stopped it, so the exercises
   before that cell still count, as they did for the learner;
4. `devicekit_grade.scoring`: status, score, reasons and notes, in both languages
   (`devicekit_grade.records.Grade`).
"""

from __future__ import annotations

import hashlib
import time

from devicekit.messages import Message
from devicekit_grade import failures
from devicekit_grade.box import fatal_cell, grader_failure, run_notebook
from devicekit_grade.context import Context
from devicekit_grade.discover import Submission
from devicekit_grade.failures import GraderError
from devicekit_grade.identify import BadSubmission, identify, loads
from devicekit_grade.records import Grade
from devicekit_grade.released import code_fingerprint, expected_error_cells, integrity
from devicekit_grade.scoring import score


def grade_submission(sub: Submission, ctx: Context) -> Grade:
    """Grade one submission (its bytes were read when it was found); never raises."""
    started = time.monotonic()
    grade = Grade(file=sub.shown, submitted=sub.mtime, folder=sub.folder.name if sub.folder else "")
    grade.graded_with = ctx.digest
    if sub.data is not None:
        grade.sha256 = hashlib.sha256(sub.data).hexdigest()
    if sub.status != "pending":
        grade.status, grade.reasons = sub.status, [sub.reason] if sub.reason else []
        return grade
    try:
        if ctx.tampered:
            raise BadSubmission(
                "error",
                Message(
                    f"not graded: the grading environment was modified during this run ({ctx.tampered}); "
                    "reinstall it and grade again",
                    f"未评分：本次运行期间评分环境被改动了（{ctx.tampered}）；请重新安装后再评分",
                ),
            )
        _grade(sub, grade, ctx)
    except BadSubmission as bad:
        grade.status, grade.reasons = bad.status, [*grade.reasons, bad.reason]
    except RecursionError:
        grade.status = "not-a-notebook"
        grade.reasons = [
            Message(
                "a notebook nested too deeply to handle (cells or outputs inside each other)",
                "notebook 嵌套层数过深，无法处理（单元格或输出层层嵌套）",
            )
        ]
    except GraderError as failed:
        grader_error(grade, failed)
    except Exception as exc:  # the grader's own failure for this one file: a row, and on to the next
        grader_error(grade, GraderError("crashed", f"{type(exc).__name__}: {exc}"))
    grade.duration_s = round(time.monotonic() - started, 2)
    return grade


def grader_error(grade: Grade, failed: GraderError) -> None:
    """Make ``grade`` the row of a submission the grader failed on: no score, the cause in both languages."""
    grade.status, grade.reasons = failures.STATUS, [failed.reason()]
    grade.score, grade.exercises, grade.flags = None, [], []
    grade.notes = [failed.note()]


def _grade(sub: Submission, grade: Grade, ctx: Context) -> None:
    assert sub.data is not None
    nb = loads(sub.data)
    identity = identify(nb, sub.path, list(ctx.labs))
    grade.lang, grade.lab, grade.identified_by = identity.lang, identity.lab, identity.identified_by
    if identity.lab is None:
        detail = identity.detail or Message("", "")
        raise BadSubmission(
            "unknown-lab",
            Message(f"cannot tell which lab this is: {detail.en}", f"无法判断是哪个实验：{detail.zh}"),
        )
    lab, released = identity.lab, ctx.options.released
    grade.max = len(ctx.labs[lab])
    grade.versions = {f"grader_{k}": v for k, v in ctx.versions.items()}
    meta = nb.metadata.get("devicekit")
    executed = meta.get("executed", {}) if isinstance(meta, dict) else {}
    if isinstance(executed, dict) and executed.get("torch"):
        grade.versions["notebook_torch"] = str(executed.get("torch"))[:40]
    flags, reasons = integrity(nb, lab, released)
    grade.code_hash, grade.code_sig = code_fingerprint(nb, lab, released)
    expected = expected_error_cells(nb, lab, released)
    first = run_notebook(ctx, sub.folder, nb, lab, identity.lang, expected, None)
    failed = grader_failure(first)
    if failed is not None:
        raise failed
    fatal = fatal_cell(first)
    fatal = fatal if fatal is not None and 0 < fatal <= len(nb.cells) else None
    second = None
    if fatal is not None:
        second = run_notebook(ctx, sub.folder, nb, lab, identity.lang, expected, fatal - 1)
        failed = grader_failure(second)  # (its answer cell, at least, is after the setup cell)
        if failed is not None:
            raise failed
    grade.reasons = reasons
    score(grade, nb, ctx.options, first, second, fatal)
    grade.flags = flags + [f for f in grade.flags if f not in flags]
