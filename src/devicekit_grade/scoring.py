"""Turn what a run gave (`devicekit_grade.box.Execution`: the worker's events and the evaluator's judged
rows) into a row's status, score, flags, reasons for the instructor and notes for the learner. Every text
is a `devicekit.messages.Message`, written here in both languages; a cell is named as the learner sees it
(`where`).
"""

from __future__ import annotations

from typing import Any

import nbformat

from devicekit.messages import Message
from devicekit_grade.box import Execution
from devicekit_grade.context import Options
from devicekit_grade.failures import GraderError
from devicekit_grade.identify import BadSubmission
from devicekit_grade.records import ExerciseGrade, Grade


def _first_line(source: str) -> str:
    line = next((s.strip() for s in source.splitlines() if s.strip()), "")
    return line if len(line) <= 60 else line[:57] + "..."


def where(nb: nbformat.NotebookNode, index: int) -> Message:
    """The prepared copy's cell ``index`` (0 is the grader's setup cell) in the learner's words."""
    if index <= 0:
        return Message("the grader's setup cell", "评分器的准备单元格")
    if index - 1 < len(nb.cells):
        line = _first_line(nb.cells[index - 1].source)
        return Message(f"cell {index} ({line})", f"第 {index} 个单元格（{line}）")
    return Message("the grader's answer cell", "评分器的收集单元格")


def _said(
    message: Message, *, reason: Message | None = None, notes: list[Message], reasons: list[Message]
) -> None:
    """Tell the learner ``message`` and the instructor ``reason`` (the same words when None)."""
    notes.append(message)
    reasons.append(message if reason is None else reason)


def score(
    grade: Grade, nb: Any, options: Options, first: Execution, second: Execution | None, fatal: int | None
) -> None:
    """Fill in ``grade`` from the run(s) of ``nb``: ``first`` the whole notebook, ``second`` the run up to
    the ``fatal`` cell that stopped it."""
    timeouts = (options.cell_timeout, options.notebook_timeout)
    reasons: list[Message] = []
    answers = (second or first).answers
    if "results" not in answers and not answers.get("tampered"):
        # the evaluator failed (it answers even when no kernel connects): the grader's failure, whatever the
        # notebook did, before anything reads the run's events (which the notebook's user can rewrite)
        raise GraderError("answers", str(answers.get("error", "no reply from the evaluator")))
    status, errors = _cells(grade, nb, first, fatal, timeouts[0], reasons)
    stop = _stopped(grade, nb, first, fatal, timeouts, reasons)
    status = stop or status
    if answers.get("tampered"):
        raise BadSubmission(
            "error",
            Message(
                f"not graded: the grading environment was modified: {answers['tampered']}",
                f"未评分：评分环境被改动了：{answers['tampered']}",
            ),
        )
    for execution in (first, second):
        if execution is not None and execution.copy_note is not None and execution.copy_note not in reasons:
            reasons.append(execution.copy_note)
    if first.over_limit or (second is not None and second.over_limit):
        grade.flags.append("process-limit")
        limit = options.limits.processes
        _said(
            Message(
                f"the notebook started more than {limit} processes and threads: all of them were stopped.",
                f"notebook 启动的进程和线程超过了 {limit} 个：已全部终止。",
            ),
            reason=Message(f"more than {limit} processes: stopped", f"进程超过 {limit} 个：已终止"),
            notes=grade.notes,
            reasons=reasons,
        )
    if first.out_of_memory or (second is not None and second.out_of_memory):
        grade.flags.append("memory-limit")
        limit = options.limits.box_memory_mb
        _said(
            Message(
                f"the notebook's processes used more than {limit} MiB of memory together: the system stopped "
                "the largest of them (usually the kernel).",
                f"notebook 的所有进程合计使用的内存超过了 {limit} MiB："
                "系统终止了其中占用最多的进程（通常是运行 notebook 的 Python 进程）。",
            ),
            reason=Message(f"more than {limit} MiB of memory: stopped", f"内存超过 {limit} MiB：已终止"),
            notes=grade.notes,
            reasons=reasons,
        )
    if first.over_disk or (second is not None and second.over_disk):
        grade.flags.append("disk-limit")
        limit = options.limits.box_disk_mb
        _said(
            Message(
                f"the notebook wrote more than {limit} MiB of files: all its processes were stopped.",
                f"notebook 写入的文件超过了 {limit} MiB：它的所有进程已被终止。",
            ),
            reason=Message(f"more than {limit} MiB on disk: stopped", f"磁盘占用超过 {limit} MiB：已终止"),
            notes=grade.notes,
            reasons=reasons,
        )
    _versions(grade, answers, reasons)
    _exercises(grade, answers["results"], stopped=fatal is not None)
    if any(e.how == "not-run" for e in grade.exercises):
        grade.flags.append("check-not-run")
    if errors:
        grade.flags.append("cell-errors")
    grade.status = status
    grade.score = sum(e.passed for e in grade.exercises)
    grade.reasons += reasons


def _cells(
    grade: Grade, nb: Any, first: Execution, fatal: int | None, cell_timeout: int, reasons: list[Message]
) -> tuple[str, bool]:
    """What the learner's cells did, before the cell that stopped the run: errors the lab did not expect,
    cells interrupted for time, output cut. (status so far, whether a cell raised)."""
    status, errors, truncated = "graded", False, []
    for event in first.events:
        kind, index = event.get("event"), event.get("index", -1)
        index = index if isinstance(index, int) else -1
        if fatal is not None and index >= fatal:
            continue  # the stopping cell is explained by `_stopped`; the cells after it never really ran
        if kind == "error" and not event.get("expected"):
            what = f"{str(event.get('ename'))[:100]}: {str(event.get('evalue'))[:500]}".rstrip(": ")
            if index == 0:  # (a run whose setup cell failed went no further: `box.grader_failure`)
                raise GraderError("setup-failed", what)
            if index > len(nb.cells):  # the answer cell: its exercises are not checked, and this says why
                message = Message(
                    f"the grader's answer cell failed in the kernel: {what}",
                    f"评分器的收集单元格在内核中出错：{what}",
                )
                reason = Message(
                    f"the grader's answer cell failed: {what}", f"评分器的收集单元格出错：{what}"
                )
                _said(message, reason=reason, notes=grade.notes, reasons=reasons)
                continue
            cell = where(nb, index)
            _said(
                Message(f"error in {cell.en}: {what}", f"{cell.zh}出错：{what}"),
                notes=grade.notes,
                reasons=reasons,
            )
            errors = True
        elif kind == "timeout" and 0 < index <= len(nb.cells):
            cell, seconds = where(nb, index), cell_timeout
            status = "timeout"
            grade.notes.append(
                Message(
                    f"{cell.en} ran longer than {seconds} s and was interrupted; the notebook went on "
                    "with the next cell.",
                    f"{cell.zh}运行超过 {seconds} 秒，已被中断；notebook 接着运行了下一个单元格。",
                )
            )
            reasons.insert(
                0,
                Message(
                    f"{cell.en} ran longer than {seconds} s (interrupted)",
                    f"{cell.zh}运行超过 {seconds} 秒（已中断）",
                ),
            )
        elif kind == "truncated":
            truncated.append(index)
    if truncated:
        cell = where(nb, truncated[0])
        grade.flags.append("output-truncated")
        grade.notes.append(
            Message(
                f"{cell.en} printed more output than the grader keeps; the rest was dropped "
                "(the cell still ran).",
                f"{cell.zh}的输出超出评分器保留的上限，多余部分已丢弃（单元格本身照常运行完）。",
            )
        )
        reasons.append(Message(f"output of {cell.en} truncated", f"{cell.zh}的输出被截断"))
    return status, errors


_AFTER = Message(
    "the exercises before that cell count, the cells after it never ran.",
    "此前的练习照常计分，之后的单元格没有运行。",
)


def _stopped(
    grade: Grade,
    nb: Any,
    first: Execution,
    fatal: int | None,
    timeouts: tuple[int, int],
    reasons: list[Message],
) -> str | None:
    """Why the run stopped before its end, if it did: the status it gives ("kernel-died", "timeout"), with
    the learner's note and the instructor's reason; None when the notebook ran to its end."""
    events = first.events
    cell_s, notebook_s = timeouts
    if fatal is not None:
        cell = where(nb, fatal)
        if any(e.get("event") == "dead" for e in events):
            grade.notes.append(
                Message(
                    f"the kernel died while running {cell.en} (os._exit, a crash in compiled code, or out of "
                    "memory); the grader ran the notebook again up to that cell, so " + _AFTER.en,
                    f"运行{cell.zh}时 Python 进程意外退出"
                    "（调用了 os._exit、C/C++ 编写的底层代码崩溃，或内存耗尽）；"
                    "评分器把 notebook 重新运行到这个单元格之前，" + _AFTER.zh,
                )
            )
            reasons.insert(0, Message(f"kernel died in {cell.en}", f"Python 进程在{cell.zh}意外退出"))
            return "kernel-died"
        if any(e.get("event") == "unresponsive" for e in events):
            grade.notes.append(
                Message(
                    f"{cell.en} ran longer than {cell_s} s and was still running {cell_s} s after it was "
                    "interrupted: the notebook was stopped there; " + _AFTER.en,
                    f"{cell.zh}运行超过 {cell_s} 秒，被中断后又过了 {cell_s} 秒仍未停止："
                    "notebook 在此处被终止；" + _AFTER.zh,
                )
            )
            reasons.insert(
                0,
                Message(
                    f"{cell.en} did not stop when interrupted: stopped there",
                    f"{cell.zh}被中断后仍未停止：notebook 已在此处终止",
                ),
            )
            return "timeout"
        grade.notes.append(
            Message(
                f"{cell.en} did not stop when interrupted and the notebook ran past {notebook_s} s: it was "
                "stopped there; " + _AFTER.en,
                f"{cell.zh}被中断后仍未停止，整个 notebook 运行超过 {notebook_s} 秒，在此处被终止；"
                + _AFTER.zh,
            )
        )
        reasons.insert(
            0,
            Message(
                f"notebook ran longer than {notebook_s} s, stopped in {cell.en}",
                f"notebook 运行超过 {notebook_s} 秒，在{cell.zh}被终止",
            ),
        )
        return "timeout"
    if first.stopped:
        reasons.insert(
            0, Message(f"the notebook ran longer than {notebook_s} s", f"notebook 运行超过 {notebook_s} 秒")
        )
        started = [e["index"] for e in events if e.get("event") == "cell" and isinstance(e.get("index"), int)]
        if started:
            cell, count = where(nb, started[-1]), len(nb.cells)
            grade.notes.append(
                Message(
                    f"the notebook ran past {notebook_s} s and was stopped in {cell.en} of {count}: it never "
                    "reached its end, so no answer was collected.",
                    f"notebook 运行超过 {notebook_s} 秒，在{cell.zh}被终止（共 {count} 个单元格）："
                    "它没有运行到结尾，所以没有收集到任何答案。",
                )
            )
        return "timeout"
    if not any(e.get("event") == "done" for e in events) and not first.answers.get("results"):
        fatal_event = next((e for e in events if e.get("event") == "fatal"), None)
        what = str(fatal_event.get("message") if fatal_event else first.log.strip()[-300:])
        raise BadSubmission(
            "error", Message(f"could not execute the notebook: {what}", f"无法运行 notebook：{what}")
        )
    return None


def _versions(grade: Grade, answers: dict[str, Any], reasons: list[Message]) -> None:
    """Record the torch the answers were checked with, and say so when the notebook was last run with
    another minor version."""
    grade.versions.update({f"checked_{k}": v for k, v in answers.get("versions", {}).items()})
    mine, theirs = grade.versions.get("checked_torch", ""), grade.versions.get("notebook_torch", "")
    if mine and theirs and mine.split(".")[:2] != theirs.split(".")[:2]:
        reasons.append(
            Message(
                f"the notebook was last run with torch {theirs}; graded with torch {mine}",
                f"notebook 上次运行用的是 torch {theirs}；评分用的是 torch {mine}",
            )
        )


def _exercises(grade: Grade, results: list[dict[str, Any]], stopped: bool) -> None:
    """One `ExerciseGrade` per row of the evaluator: judged, or why it could not be checked."""
    for row in results:
        number, key, target = int(row["number"]), str(row["key"]), row.get("target")
        if row.get("flag") and row["flag"] not in grade.flags:
            grade.flags.append(str(row["flag"]))
        if row.get("status") == "checked":
            passed, seconds = bool(row["passed"]), float(row.get("seconds") or 0.0)
            grade.exercises.append(
                ExerciseGrade(number, key, passed, "judged", str(row["en"]), str(row["zh"]), seconds)
            )
            continue
        how, message = unchecked(row, target, stopped)
        head = Message(f"✗ Exercise {number}: ", f"✗ 练习 {number}：")
        grade.exercises.append(
            ExerciseGrade(number, key, False, how, (head + message).en, (head + message).zh)
        )


def unchecked(row: dict[str, Any], target: object, stopped: bool) -> tuple[str, Message]:
    """An exercise the evaluator could not check: ``how`` (not-reached, not-run) and why, from its row
    (``status``, ``why``, ``why_zh``); ``stopped``: the run stopped at a fatal cell."""
    why = str(row.get("status"))
    if stopped and why in ("target-missing", "not-evaluated"):
        why = "stopped"
    if why == "stopped":
        return "not-reached", Message(
            f"not reached: the run stopped before the notebook defined `{target}` (see the remark below).",
            f"没有运行到：notebook 在定义 `{target}` 之前就停止了（见下面的说明）。",
        )
    if why == "target-missing":
        return "not-run", Message(
            f"`{target}` is not defined at the end of the notebook: the lab asks for a function or value "
            "with exactly this name. Restore it, then Restart & Run All.",
            f"notebook 运行结束时没有定义 `{target}`：实验要求的函数或变量必须叫这个名字。"
            "请恢复它，然后重启并全部运行。",
        )
    if why == "no-target":
        return "not-run", Message(
            "this exercise names no notebook variable for the grader to check (the lab's `target`): tell "
            "your instructor.",
            "这个练习没有声明评分器要检查的变量（实验的 `target`）：请告诉老师。",
        )
    detail = Message(
        str(row.get("why") or "the kernel did not answer"), str(row.get("why_zh") or "内核没有应答")
    )
    return "not-run", Message(f"could not be checked: {detail.en}.", f"无法检查：{detail.zh}。")
