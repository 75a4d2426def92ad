"""Grade one submission: copy its folder, add the grader's cells to the copy, execute it, score it.

Execution happens in a subprocess (`devicekit.grade._worker`) that starts a fresh kernel. Two limits apply:
the per-cell timeout, after which nbclient interrupts the kernel (``KeyboardInterrupt``) and the notebook
goes on with the next cell, and the notebook timeout, after which the worker and its kernel are killed.
Either way the checks that had already run still count, because the kernel records them after every cell
(see `devicekit.grade._kernel`).

The score is the number of exercises of the lab whose *last* recorded self-check passed: the same checks,
with the same hints, that the learner runs in the notebook. There are no hidden tests.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import nbformat

from devicekit.exercises import Exercise, exercises_for
from devicekit.grade._kernel import INJECTED
from devicekit.grade.identify import BadSubmission, Identity, identify, load

#: Every status a row can have. ``graded`` rows have a score; the others say why not (or not fully).
STATUSES = ("graded", "invalid-json", "not-a-notebook", "unknown-lab", "kernel-died", "timeout", "error")
MAX_FOLDER_BYTES = 50 * 1024 * 1024


@dataclass
class Options:
    """How submissions are run. Times are in seconds."""

    cell_timeout: int = 60
    notebook_timeout: int = 600
    kernel: str = "python3"
    max_cell_chars: int = 100_000
    max_notebook_chars: int = 1_000_000
    exclude: tuple[Path, ...] = ()


@dataclass
class ExerciseGrade:
    """One exercise of one submission: passed or not, and the feedback line in both languages."""

    number: int
    key: str
    passed: bool
    #: "check": the notebook ran it; "grader-rerun": its check cell was missing and the grader ran it on the
    #: lab's target; "not-reached": the run stopped (kernel died, time limit) before it; "not-run": no result
    #: for another reason, which the feedback line gives.
    how: str
    en: str
    zh: str
    runs: int = 0


@dataclass
class Grade:
    """One row of the grades: a submission, its status, score and feedback."""

    file: str
    lab: str | None = None
    lang: str = "en"
    identified_by: str | None = None
    status: str = "error"
    score: int | None = None
    max: int | None = None
    flags: list[str] = field(default_factory=list)
    reason: str = ""
    exercises: list[ExerciseGrade] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)  # (en, zh) remarks beyond the exercises
    duration_s: float = 0.0

    def feedback(self) -> list[str]:
        """The lines to show the learner, in the submission's language."""
        pick = 1 if self.lang == "zh" else 0
        lines = [(e.en, e.zh)[pick] for e in self.exercises]
        return lines + [note[pick] for note in self.notes]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["notes"] = [{"en": en, "zh": zh} for en, zh in self.notes]
        data["feedback"] = self.feedback()
        return data


# --- where a cell is, in words the learner can find -------------------------------------------------------


def _first_line(source: str) -> str:
    line = next((s.strip() for s in source.splitlines() if s.strip()), "")
    return line if len(line) <= 60 else line[:57] + "..."


class _Cells:
    """Maps cell indices of the prepared copy back to the submission's cells."""

    def __init__(self, nb: nbformat.NotebookNode, exercises: list[Exercise]) -> None:
        self.cells, self.exercises = nb.cells, exercises

    def where(self, index: int) -> tuple[str, str]:
        original = index - 1
        if index < 0:
            return "the start of the notebook", "笔记本开始运行时"
        if index == 0:
            return "the grader's setup cell", "评分程序的准备单元格"
        if original < len(self.cells):
            line = _first_line(self.cells[original].source)
            return f"cell {original + 1} ({line})", f"第 {original + 1} 个单元格（{line}）"
        ex = self.exercises[min(original - len(self.cells), len(self.exercises) - 1)]
        return (
            f"the grader's run of the exercise {ex.number} check",
            f"评分程序对练习 {ex.number} 的补充自测",
        )


# --- preparing the temporary copy -------------------------------------------------------------------------


def _holds_notebooks(folder: Path) -> bool:
    return any(name.endswith(".ipynb") for _, _, names in os.walk(folder) for name in names)


def copy_folder(src: Path, dest: Path, exclude: tuple[Path, ...] = ()) -> str:
    """Copy what a notebook in ``src`` may read (its data files) to ``dest``; returns a note or "".

    Other notebooks are left out (in a folder of submissions they are the other students' work), so are
    hidden entries, ``__pycache__``, sub-folders that hold notebooks, and the grader's own output folder.
    At most `MAX_FOLDER_BYTES` are copied.
    """
    dest.mkdir(parents=True, exist_ok=True)
    budget, skipped = MAX_FOLDER_BYTES, False
    excluded = {p.resolve() for p in exclude}
    try:
        entries = sorted(src.iterdir())
    except OSError:
        return ""
    for entry in entries:
        if entry.name.startswith(".") or entry.name == "__pycache__" or entry.suffix == ".ipynb":
            continue
        try:
            if entry.resolve() in excluded or entry.is_symlink():
                continue
            if entry.is_dir():
                if _holds_notebooks(entry):
                    continue
                size = sum(f.stat().st_size for f in entry.rglob("*") if f.is_file())
                if size > budget:
                    skipped = True
                    continue
                shutil.copytree(entry, dest / entry.name, symlinks=False, ignore_dangling_symlinks=True)
            elif entry.is_file():
                size = entry.stat().st_size
                if size > budget:
                    skipped = True
                    continue
                shutil.copy2(entry, dest / entry.name)
            else:
                continue
            budget -= size
        except OSError:
            skipped = True
    return (
        "some files next to the notebook were too large or unreadable and were not copied" if skipped else ""
    )


def prepare(
    nb: nbformat.NotebookNode, lab: str, exercises: list[Exercise], results: Path
) -> nbformat.NotebookNode:
    """The copy that is executed: the submission's cells, outputs cleared, plus the grader's cells."""
    ready = copy.deepcopy(nb)
    for cell in ready.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    keys = [e.key for e in exercises]
    helpers = f"{INJECTED}\n__import__('devicekit.grade._kernel', fromlist=['_'])"
    setup = f"{helpers}.install({str(results)!r}, {lab!r}, {keys!r})"
    reruns = [f"{helpers}.rerun({e.key!r}, {target_of(e)!r})" for e in exercises]
    ready.cells = [
        nbformat.v4.new_code_cell(setup, metadata={"devicekit-grade": "setup"}),
        *ready.cells,
        *(nbformat.v4.new_code_cell(source, metadata={"devicekit-grade": "rerun"}) for source in reruns),
    ]
    ready.nbformat, ready.nbformat_minor = 4, max(int(ready.get("nbformat_minor", 5) or 5), 5)
    for number, cell in enumerate(ready.cells):
        cell.setdefault("id", f"devicekit-grade-{number}")
    return ready


def target_of(exercise: Exercise) -> str | None:
    """The notebook variable an exercise's check receives (``Exercise.target``), when the lab declares it."""
    target = getattr(exercise, "target", None)
    return str(target) if target else None


# --- running it --------------------------------------------------------------------------------------------

_WORKER = Path(__file__).with_name("_worker.py")
_RUN_WORKER = "import runpy, sys; runpy.run_path(sys.argv.pop(1), run_name='__main__')"
_RUNNING: dict[int, tuple[subprocess.Popen, Path]] = {}
_RUNNING_LOCK = threading.Lock()


def _events(path: Path) -> list[dict[str, Any]]:
    events = []
    with contextlib.suppress(OSError):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                events.append(json.loads(line))
    return events


def _kill_group(pid: int | None) -> None:
    if not pid or os.name != "posix":
        return
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)


def _kill(proc: subprocess.Popen, events: Path) -> None:
    """Kill a worker's process group and its kernel's (the kernel runs in a session of its own)."""
    kernels = [e.get("pid") for e in _events(events) if e.get("event") == "kernel"]
    if os.name == "posix":
        _kill_group(proc.pid)
    else:  # pragma: no cover
        proc.kill()
    for pid in kernels:
        _kill_group(pid)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)


def kill_all() -> None:
    """Kill every worker and kernel still running (the grader is being interrupted)."""
    with _RUNNING_LOCK:
        running = list(_RUNNING.values())
    for proc, events in running:
        _kill(proc, events)


def _execute(notebook: Path, events: Path, lang: str, options: Options) -> tuple[bool, str]:
    """Run the worker on ``notebook``. Returns (stopped for the notebook timeout, the worker's log tail)."""
    # Run _worker.py by path rather than with -m: -m would import the devicekit package, and with it torch
    # (over a second per submission), in a process that only needs nbclient.
    cmd = [
        sys.executable, "-c", _RUN_WORKER, str(_WORKER), str(notebook), str(events),
        "--cell-timeout", str(options.cell_timeout), "--kernel", options.kernel,
        "--max-cell-chars", str(options.max_cell_chars),
        "--max-notebook-chars", str(options.max_notebook_chars),
    ]  # fmt: skip
    env = {**os.environ, "DEVICEKIT_LANG": lang, "PYTHONIOENCODING": "utf-8"}
    log_path = events.with_name("worker.log")
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
            cwd=events.parent, start_new_session=(os.name == "posix"),
        )  # fmt: skip
        with _RUNNING_LOCK:
            _RUNNING[proc.pid] = (proc, events)
        try:
            proc.wait(timeout=options.notebook_timeout)
            stopped = False
        except subprocess.TimeoutExpired:
            stopped = True
        finally:
            # Always: a stopped or crashed worker leaves its kernel running, and a kernel that was shut down
            # or died may leave processes the notebook started in its process group.
            _kill(proc, events)
            with _RUNNING_LOCK:
                _RUNNING.pop(proc.pid, None)
    with contextlib.suppress(OSError):
        tail = log_path.read_bytes()[-2000:].decode("utf-8", errors="replace")
        return stopped, tail
    return stopped, ""


def grade_file(path: Path, display: str, options: Options | None = None) -> Grade:
    """Grade the submission in ``path`` (never modified). ``display`` is the name shown in the grades."""
    options = options or Options()
    started = time.monotonic()
    grade = Grade(file=display)
    try:
        _grade(path, grade, options)
    except BadSubmission as bad:
        grade.status, grade.reason = bad.status, bad.reason
    except Exception as exc:  # the grader's own failure for this one file: a row, and on to the next
        grade.status, grade.reason = (
            "error",
            f"the grader failed on this file: {type(exc).__name__}: {exc}"[:500],
        )
    grade.duration_s = round(time.monotonic() - started, 2)
    return grade


def _grade(path: Path, grade: Grade, options: Options) -> None:
    nb = load(path)
    identity: Identity = identify(nb, path)
    grade.lang, grade.lab, grade.identified_by = identity.lang, identity.lab, identity.identified_by
    if identity.lab is None:
        raise BadSubmission("unknown-lab", f"cannot tell which lab this is: {identity.detail}")
    exercises = exercises_for(identity.lab)
    grade.max = len(exercises)
    with tempfile.TemporaryDirectory(prefix="devicekit-grade-") as tmp:
        work, private = Path(tmp) / "work", Path(tmp) / "grader"
        private.mkdir()
        copy_note = copy_folder(path.parent, work, options.exclude)
        results, events = private / "results.json", private / "events.jsonl"
        notebook = work / path.name
        nbformat.write(prepare(nb, identity.lab, exercises, results), notebook)
        stopped, log_tail = _execute(notebook, events, identity.lang, options)
        _score(grade, nb, exercises, results, _events(events), stopped, log_tail, options)
        if copy_note:
            grade.reason = "; ".join(filter(None, [grade.reason, copy_note]))


def _score(
    grade: Grade,
    nb: nbformat.NotebookNode,
    exercises: list[Exercise],
    results_path: Path,
    events: list[dict[str, Any]],
    stopped: bool,
    log_tail: str,
    options: Options,
) -> None:
    cells = _Cells(nb, exercises)
    reasons: list[str] = []
    truncated: list[int] = []
    status = "graded"
    last_cell = max((e["index"] for e in events if e.get("event") == "cell"), default=-1)
    for event in events:
        kind, index = event.get("event"), event.get("index", -1)
        if kind == "error" and not event.get("expected"):
            en, zh = cells.where(index)
            what = f"{event.get('ename')}: {event.get('evalue')}".rstrip(": ")
            if index == 0:
                grade.status, grade.reason = "error", f"the grader's setup cell failed in the kernel: {what}"
                return
            grade.notes.append((f"error in {en}: {what}", f"{zh}出错：{what}"))
            reasons.append(f"error in {en}: {what}")
        elif kind == "timeout":
            en, zh = cells.where(index)
            if index == 0:
                grade.status = "error"
                grade.reason = (
                    "the grader's setup cell (importing devicekit and torch) ran out of time: overloaded?"
                )
                return
            status = "timeout"
            grade.notes.append(
                (
                    f"{en} ran longer than {options.cell_timeout} s and was interrupted; "
                    "the cells after it still ran.",
                    f"{zh}运行超过 {options.cell_timeout} 秒，已被中断；之后的单元格照常运行。",
                )
            )
            reasons.insert(0, f"{en} ran longer than {options.cell_timeout} s (interrupted)")
        elif kind == "truncated":
            truncated.append(index)
    if truncated:
        en, zh = cells.where(truncated[0])
        more_en = f" (and {len(truncated) - 1} more cells)" if len(truncated) > 1 else ""
        more_zh = f"（另有 {len(truncated) - 1} 个单元格）" if len(truncated) > 1 else ""
        grade.flags.append("output-truncated")
        grade.notes.append(
            (
                f"{en}{more_en} printed more output than the grader keeps; "
                "the rest was dropped (the cell still ran).",
                f"{zh}{more_zh}的输出超出评分程序保留的上限，多余部分已丢弃（单元格本身照常运行完）。",
            )
        )
        reasons.append(f"output of {en}{more_en} truncated")
    dead = next((e for e in events if e.get("event") == "dead"), None)
    fatal = next((e for e in events if e.get("event") == "fatal"), None)
    finished = any(e.get("event") == "done" for e in events)
    stopped_early = False
    if dead is not None:
        en, zh = cells.where(dead.get("index", last_cell))
        status, stopped_early = "kernel-died", True
        grade.notes.append(
            (
                f"the kernel died while running {en} (os._exit, a crash in native code, or out of memory); "
                "checks that ran before it count, later cells never ran.",
                f"运行{zh}时内核退出了（os._exit、本地代码崩溃或内存耗尽）；此前运行过的自测照常计分，之后的单元格没有运行。",
            )
        )
        reasons.insert(0, f"kernel died in {en}")
    elif stopped:
        en, zh = cells.where(last_cell)
        status, stopped_early = "timeout", True
        grade.notes.append(
            (
                f"the notebook ran longer than {options.notebook_timeout} s in total and was stopped "
                f"during {en}; checks that ran before it count.",
                f"整个笔记本运行超过 {options.notebook_timeout} 秒，在{zh}处被终止；"
                "此前运行过的自测照常计分。",
            )
        )
        reasons.insert(0, f"notebook ran longer than {options.notebook_timeout} s, stopped in {en}")
    elif fatal is not None or not finished:
        message = (
            fatal.get("message") if fatal else f"the worker stopped unexpectedly: {log_tail.strip()[-300:]}"
        )
        grade.status, grade.reason = "error", f"could not execute the notebook: {message}"
        return
    if stopped_early and last_cell <= 0:
        grade.status = "error"
        grade.reason = (
            "the notebook limit was reached while the grader was still starting the kernel and importing "
            "torch: the machine is overloaded or --notebook-timeout is too small; grade this file again"
        )
        return
    if not results_path.exists():
        grade.status = "error"
        grade.reason = (
            "the grader's setup cell never recorded anything (is devicekit installed in the kernel?)"
        )
        return
    data = json.loads(results_path.read_text(encoding="utf-8"))
    _exercise_grades(grade, exercises, data, stopped_early)
    if any(e.how == "grader-rerun" for e in grade.exercises):
        grade.flags.append("check-rerun")
    if any(e.how == "not-run" for e in grade.exercises):
        grade.flags.append("check-not-run")
    if any(kind.startswith("error in") for kind in reasons):
        grade.flags.append("cell-errors")
    grade.status = status
    grade.score = sum(e.passed for e in grade.exercises)
    grade.reason = "; ".join(reasons)


#: Why an exercise has no recorded check, for the learner (en, zh).
NOT_RUN = {
    "attempted": (
        "check cell not run to the end: it raised an error or was interrupted before the check recorded "
        "a result.",
        "自测单元格没有运行完：在自测记录结果之前就出错或被中断了。",
    ),
    "stopped": (
        "not reached: the run stopped before this check.",
        "没有运行到：在这项自测之前运行就停止了。",
    ),
    "unfinished": (
        "check cell not run; the grader ran the check on `{target}`, but it did not finish (error or time "
        "limit).",
        "自测单元格没有运行；评分程序对 `{target}` 运行了自测，但没有完成（出错或超时）。",
    ),
    "target-missing": (
        "check cell not run, and `{target}` is not defined in the notebook, so the grader could not run it "
        "either.",
        "自测单元格没有运行，笔记本里也没有定义 `{target}`，评分程序无法代为运行。",
    ),
    "missing": (
        "check cell not run: the notebook has no cell that runs this check. Put the check cell back (copy it "
        "from the lab) and run it.",
        "自测单元格没有运行：笔记本里没有运行这项自测的单元格。请从实验中把自测单元格复制回来并运行。",
    ),
}


def _exercise_grades(
    grade: Grade, exercises: list[Exercise], data: dict[str, Any], stopped_early: bool
) -> None:
    last, runs = data.get("last", {}), data.get("runs", {})
    attempted, rerun = set(data.get("attempted", [])), data.get("rerun", {})
    for ex in exercises:
        head_en, head_zh = (
            f"✗ Exercise {ex.number} ({ex.title_en}): ",
            f"✗ 练习 {ex.number}（{ex.title_zh}）：",
        )
        target = target_of(ex)
        result = last.get(ex.key)
        if result is not None:
            how = "grader-rerun" if rerun.get(ex.key) == "ran" else "check"
            en, zh = result["en"], result["zh"]
            if how == "grader-rerun":
                en += f" (check cell not run: the grader ran this check on `{target}`.)"
                zh += f"（自测单元格没有运行：评分程序对 `{target}` 运行了这项自测。）"
            grade.exercises.append(
                ExerciseGrade(ex.number, ex.key, bool(result["passed"]), how, en, zh, runs.get(ex.key, 1))
            )
            continue
        if ex.key in attempted:
            why = "attempted"
        elif stopped_early:
            why = "stopped"
        else:
            why = {"started": "unfinished", "target-missing": "target-missing"}.get(
                rerun.get(ex.key), "missing"
            )
        en, zh = (text.format(target=target) for text in NOT_RUN[why])
        how = "not-reached" if why == "stopped" else "not-run"
        grade.exercises.append(ExerciseGrade(ex.number, ex.key, False, how, head_en + en, head_zh + zh, 0))
