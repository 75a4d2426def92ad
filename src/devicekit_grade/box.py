"""Run one submission in a box of its own and collect its answers as data: the grading loop.

1. **Prepare.** A copy of the notebook, outputs cleared, its own self-check cells commented out (the
   grader judges the answers itself), the grader's setup cell first and its answer cell last (`prepare`).
2. **Run.** The copy runs in a fresh kernel inside the submission's `devicekit_grade.sandbox` box
   (``_worker.py`` drives it one cell at a time, with a per-cell and a per-notebook time limit), and its
   events (cells started, errors, time-outs, a dead kernel) are read back (`Execution`).
3. **Answer.** The answer cell connects to a socket the grader opened; the evaluator (a fresh child of the
   run's evaluator zygote, `devicekit_grade.context.Context.evaluate`) asks it to run each exercise's probe
   and judges the observations, plain data, in its own process.
4. **Close.** Every process of the box is killed, its folders removed (`devicekit_grade.sandbox.close`).

`fatal_cell` says where a run stopped (the caller runs the notebook again up to there), `grader_failure`
whether the grader failed before the notebook's first cell.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import select
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import nbformat

from devicekit.messages import Message
from devicekit_grade import sandbox
from devicekit_grade._evaluator import FD_PLACEHOLDER
from devicekit_grade._kernel import INJECTED
from devicekit_grade.failures import GraderError, GraderFailure

if TYPE_CHECKING:
    from devicekit_grade.context import Context

MAX_FOLDER_BYTES = 50 * 1024 * 1024
#: A cell that only calls self-checks, ``check("01-devices", "move-batch", move_batch)`` (one per line).
SELF_CHECK_CELL = re.compile(
    r"""^(\s*check\(\s*["'][\w.-]+["']\s*,\s*["'][\w.-]+["']\s*,[^\n]*\)\s*(#[^\n]*)?\n?)+\Z"""
)
WORKER = Path(__file__).with_name("_worker.py")
_RUN_WORKER = "import runpy, sys; runpy.run_path(sys.argv.pop(1), run_name='__main__')"


@dataclass
class Execution:
    """What one run of a notebook gave: the worker's events, whether it was stopped for time, the
    evaluator's answers, the end of the worker's log, and what of the student's folder was not copied."""

    events: list[dict[str, Any]]
    stopped: bool  # by the notebook time limit
    answers: dict[str, Any]  # the evaluator's reply
    log: str
    copy_note: Message | None = None
    over_limit: bool = False  # stopped by the watchdog for too many processes
    over_disk: bool = False  # stopped by the watchdog for writing more than the box's disk limit
    out_of_memory: bool = False  # a process of the box was killed for going over the box's memory cap


def run_notebook(
    ctx: Context, folder: Path | None, nb: Any, lab: str, lang: str, expected: set[int], upto: int | None
) -> Execution:
    """Run ``nb`` (with the data files of the student's own ``folder``) in a new box and judge its answers;
    ``upto``: only the learner's cells before that index of the prepared copy (the second run)."""
    box = sandbox.open_box(ctx.root)
    running = None
    try:
        note = copy_folder(folder, box.work) if folder is not None else None
        address = str(_gate(box) / SOCKET)
        ready = prepare(
            nb, expected, address, upto, lab, _place_probes(ctx, box, lab), ctx.options.cell_timeout
        )
        nbformat.write(ready, box.work / "notebook.ipynb")
        # the log is read back through the grader's own handle: the box owns run/ and could put a link to
        # any file in the log's place once its worker is running
        with _listening(address) as listener, open(box.run / "worker.log", "w+b") as log:
            events = _EventPipe()
            command, env = _worker_command(ctx, box, events.writer), box.env({"DEVICEKIT_LANG": lang})
            try:
                running = sandbox.start(
                    ctx.isolation, box, command, env, ctx.options.limits, log, keep=(events.writer,)
                )
            finally:
                events.started()
            try:
                stopped, answers = _answer(ctx, running.proc, listener, lab)
            finally:
                sandbox.stop(running)
            tail = _tail(log)
        tripped, oom = running.watchdog.tripped, running.out_of_memory
        return Execution(
            events.read(), stopped, answers, tail, note,
            over_limit=tripped == "processes", out_of_memory=oom, over_disk=tripped == "disk",
        )  # fmt: skip
    finally:
        sandbox.close(box, running)


#: The answer socket's name in its box's gate folder (a Unix socket's path has at most 107 bytes).
SOCKET = "a.sock"
#: What a box's socket path adds to the run's folder: "/b<number>/gate/a.sock", numbers up to 10**6.
SOCKET_TAIL = len("/b1000000/gate/") + len(SOCKET)


def _gate(box: sandbox.Box) -> Path:
    """The box's folder for the answer socket (the kernel connects there; nothing else is in it)."""
    gate = box.root / "gate"
    gate.mkdir(mode=0o755)
    return gate


@contextlib.contextmanager
def _listening(address: str) -> Any:
    """A listening Unix socket at ``address`` that any user may connect to (only the box's own sandbox
    sees it)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(address)
        os.chmod(address, 0o777)
        listener.listen(4)
        yield listener
    finally:
        listener.close()


def _worker_command(ctx: Context, box: sandbox.Box, events: int) -> list[str]:
    options = ctx.options
    return [
        sys.executable, "-c", _RUN_WORKER, str(WORKER), str(box.work / "notebook.ipynb"),
        str(events), "--cell-timeout", str(options.cell_timeout),
        "--kernel", options.kernel, "--setup-timeout", str(max(300, options.cell_timeout)),
        "--max-cell-chars", str(options.max_cell_chars),
        "--max-notebook-chars", str(options.max_notebook_chars),
    ]  # fmt: skip


def _answer(
    ctx: Context, proc: subprocess.Popen, listener: socket.socket, lab: str
) -> tuple[bool, dict[str, Any]]:
    """Wait for the notebook's answer cell (or its end, or its time limit), then let the evaluator collect
    and judge its answers: (stopped for time, the evaluator's reply)."""
    options = ctx.options
    deadline = time.monotonic() + options.notebook_timeout
    stopped = False
    while True:
        ready = bool(select.select([listener], [], [], 0.25)[0])
        if ready or proc.poll() is not None:
            break
        if time.monotonic() > deadline:
            stopped = True
            break
    tampered = ctx.check_environment()
    if tampered:
        return stopped, {"tampered": tampered}
    args = [
        "--lab", lab, "--fd", FD_PLACEHOLDER, "--timeout", str(options.cell_timeout + 5),
        "--connect-timeout", "60" if ready else "2",
    ]  # fmt: skip
    budget = 120 + len(ctx.labs.get(lab, [])) * 4 * options.cell_timeout
    answers = ctx.evaluate(args, timeout=budget, listener=listener.fileno())
    if not stopped and not ready:  # answered: the notebook is done, nothing to wait for
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=max(5.0, deadline - time.monotonic()))
        stopped = proc.poll() is None
    return stopped, answers


class _EventPipe:
    """The worker's events (cells started, errors, time-outs, a dead kernel) on a pipe the grader made and
    reads as they come: nothing in the box can rewrite what was already sent, as it could a file there (the
    worker and the kernel share the box's user; review42, hole 8). The worker inherits the write end; the
    kernel it starts does not (the worker's Jupyter client closes other descriptors)."""

    LIMIT = 16 << 20  # bytes kept; what follows is read and dropped, so a writer never blocks

    def __init__(self) -> None:
        self._reader, self.writer = os.pipe()
        self._data = bytearray()
        self._thread = threading.Thread(target=self._collect, daemon=True)

    def started(self) -> None:
        """The worker holds its copy of the write end (or never started): close ours, start reading."""
        os.close(self.writer)
        self._thread.start()

    def _collect(self) -> None:
        with contextlib.suppress(OSError):
            while chunk := os.read(self._reader, 1 << 16):
                if len(self._data) < self.LIMIT:
                    self._data += chunk[: self.LIMIT - len(self._data)]
        os.close(self._reader)

    def read(self) -> list[dict[str, Any]]:
        """The events sent, once every process of the box has ended (so the pipe is closed)."""
        self._thread.join(timeout=30)
        events = []
        for line in bytes(self._data).decode("utf-8", errors="replace").splitlines()[:100_000]:
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if isinstance(event, dict):
                    events.append(event)
        return events


def _tail(log: Any) -> str:
    """The last 2,000 bytes the worker wrote to ``log`` (a file object the grader opened)."""
    with contextlib.suppress(OSError):
        log.seek(max(0, os.fstat(log.fileno()).st_size - 2000))
        return log.read().decode("utf-8", errors="replace")
    return ""


def _place_probes(ctx: Context, box: sandbox.Box, lab: str) -> str:
    """Put the grader's copy of ``lab``'s check module in the box (read-only): the kernel runs its probes,
    the evaluator its judges, so both are the same version. Returns its path ("" when there is none)."""
    name = f"lab{lab[:2]}.py"
    data = ctx.snapshot.get(str(Path("devicekit_labs") / name))
    if data is None:
        return ""
    folder = box.root / "probes"
    folder.mkdir(mode=0o755)
    path = folder / name
    path.write_bytes(data)
    os.chmod(path, 0o444)
    return str(path)


def copy_folder(src: Path, dest: Path) -> Message | None:
    """Copy the data files of a student's own folder; returns what was left out, or None.

    Notebooks (other submissions), hidden entries and symbolic links are never copied; at most
    `MAX_FOLDER_BYTES` in all.
    """
    budget, notes = MAX_FOLDER_BYTES, []
    limit = MAX_FOLDER_BYTES // 2**20
    for dirpath, dirnames, filenames in os.walk(src, followlinks=False):
        folder = Path(dirpath)
        dirnames[:] = [d for d in sorted(dirnames) if not d.startswith(".") and not (folder / d).is_symlink()]
        for name in sorted(filenames):
            path = folder / name
            if name.startswith(".") or path.suffix == ".ipynb":
                continue
            relative = path.relative_to(src)
            if path.is_symlink():
                notes.append(
                    Message(f"{relative} is a symbolic link: not copied", f"{relative} 是符号链接：没有复制")
                )
                continue
            try:
                size = path.stat().st_size
                if size > budget:
                    notes.append(
                        Message(
                            f"{relative} not copied: over the {limit} MB limit",
                            f"{relative} 没有复制：超过 {limit} MB 的上限",
                        )
                    )
                    continue
                (dest / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, dest / relative, follow_symlinks=False)
                budget -= size
            except OSError as exc:
                why = exc.strerror or str(exc)
                notes.append(Message(f"{relative} not copied: {why}", f"{relative} 没有复制：{why}"))
    if not notes:
        return None
    return Message("; ".join(n.en for n in notes[:5]), "；".join(n.zh for n in notes[:5]))


def prepare(
    nb: nbformat.NotebookNode,
    expected: set[int],
    address: str,
    upto: int | None,
    lab: str = "",
    probes: str = "",
    timeout: float = 0,
) -> Any:
    """The copy that runs: outputs cleared, the grader's setup cell first and its answer cell last.
    ``upto``: keep only the learner's cells before that index (the second run after a fatal cell)."""
    ready = copy.deepcopy(nb)
    for index, cell in enumerate(ready.cells):
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            if SELF_CHECK_CELL.match(cell.source):
                # the grader judges the answers itself: the notebook's own self-checks would only run the
                # learner's code once more (and a hanging answer would hang here first)
                cell.source = "# devicekit-grade: the self-check is run by the grader\n" + "\n".join(
                    "# " + line for line in cell.source.splitlines()
                )
            if index in expected:
                cell.metadata["devicekit-grade-expected"] = True
    cells = ready.cells if upto is None else ready.cells[:upto]
    kernel = f"{INJECTED}\n__import__('devicekit_grade._kernel', fromlist=['_'])"
    ready.cells = [
        nbformat.v4.new_code_cell(_SETUP, metadata={"devicekit-grade": "setup"}),
        *cells,
        nbformat.v4.new_code_cell(
            f"{kernel}.serve({address!r}, {lab!r}, {probes!r}, {timeout!r})",
            metadata={"devicekit-grade": "serve"},
        ),
    ]
    ready.nbformat, ready.nbformat_minor = 4, max(int(ready.get("nbformat_minor", 5) or 5), 5)
    for number, cell in enumerate(ready.cells):
        cell["id"] = f"devicekit-grade-{number}"
    return ready


#: The grader's setup cell. The kernel's working folder (first on its path) holds the learner's own files:
#: a ``devicekit_grade/`` there would run in this cell, before the notebook's first cell, and make its
#: failure the grader's (``grader-error``, never a score). So the grader's module is imported without that
#: folder on the path; the learner's cells get the path back as it was.
_SETUP = f"""{INJECTED}
import os as _dk_os, sys as _dk_sys
_dk_path = list(_dk_sys.path)
_dk_sys.path[:] = [p for p in _dk_path if p not in ("", ".") and _dk_os.path.abspath(p) != _dk_os.getcwd()]
try:
    __import__("devicekit_grade._kernel", fromlist=["_"]).setup()
finally:
    _dk_sys.path[:] = _dk_path
    del _dk_os, _dk_sys, _dk_path"""


def fatal_cell(execution: Execution) -> int | None:
    """The prepared-copy index of the cell that stopped the run: the cell where the kernel died or that it
    was still busy with a cell time limit after its interrupt (the worker stopped there), or, when the run
    was stopped for time, the first interrupted cell after which the kernel never finished another cell
    (every later cell timed out too, waiting for a kernel that ignored the interrupt)."""
    events = execution.events
    dead = next((e for e in events if e.get("event") in ("dead", "unresponsive")), None)
    cells = [e["index"] for e in events if e.get("event") == "cell" and isinstance(e.get("index"), int)]
    if dead is not None:
        index = dead.get("index", -1)
        return index if isinstance(index, int) and index > 0 else (cells[-1] if cells else None)
    if not execution.stopped or not cells or cells[-1] <= 0:
        return None
    timeouts = {e.get("index") for e in events if e.get("event") == "timeout"}
    if not timeouts:
        # no cell was stuck: the notebook was still making progress (many or slow cells) when its time was
        # up; running it again up to there would take as long again and tell nothing more
        return None
    for first in sorted(t for t in timeouts if isinstance(t, int) and t > 0):
        later = [c for c in cells if c > first]
        if all(c in timeouts for c in later[:-1]):
            return first
    return cells[-1]


def grader_failure(execution: Execution) -> GraderError | None:
    """Why a run failed before the notebook's first cell (index 1 of the prepared copy), or None when a cell
    of the notebook (or the grader's answer cell after them) started. Nothing of the learner's had run yet,
    so whatever stopped it is the grader's failure, never the learner's score."""
    events = execution.events
    started = [e.get("index") for e in events if e.get("event") == "cell"]
    if any(isinstance(i, int) and i >= 1 for i in started):
        return None
    setup_error = next((e for e in events if e.get("event") == "error" and e.get("index") == 0), None)
    if setup_error is not None:
        what = f"{str(setup_error.get('ename'))[:100]}: {str(setup_error.get('evalue'))[:300]}".rstrip(": ")
        return GraderError("setup-failed", what)
    if any(e.get("event") == "dead" for e in events):
        return GraderError("kernel-died-early", _log_line(execution.log))
    fatal = next((e for e in events if e.get("event") == "fatal"), None)
    if fatal is not None:
        return GraderError("kernel-did-not-start", str(fatal.get("message", "")))
    if execution.stopped:
        return GraderError("stopped-early", _log_line(execution.log))
    return GraderError("worker-ended", _log_line(execution.log) or "no output")


def _log_line(log: str) -> str:
    """The last line of a worker's log that says something (an exception's last line, as a rule)."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    return lines[-1] if lines else ""


#: Run once per grading run inside a sandbox like a submission's, as its user: which of the files and
#: modules the worker and the kernel need it cannot read or find (printed as a JSON list). ``find_spec``
#: imports nothing (torch's import alone takes seconds).
_PREFLIGHT = """
import importlib.util, json, os, sys
missing = [path for path in sys.argv[1:] if not os.access(path, os.R_OK)]
for name in ("nbclient", "ipykernel_launcher", "torch", "devicekit", "devicekit_labs", "devicekit_grade"):
    try:
        spec = importlib.util.find_spec(name)
    except Exception:
        spec = None
    origin = getattr(spec, "origin", None)  # None: only an empty folder of that name (a namespace)
    if not origin or (os.path.isabs(origin) and not os.access(origin, os.R_OK)):
        missing.append(name)
print(json.dumps(missing))
"""


def preflight(isolation: sandbox.Isolation, root: Path, limits: sandbox.Limits) -> None:
    """Check once, before any submission runs, that a sandbox of this run lets the worker and the kernel
    start: the worker's script and the kernel's packages are there and readable for the submission's user.
    Raises `GraderFailure` (the run stops, nothing is graded) when not; a fraction of a second."""
    box = sandbox.open_box(root)
    running = None
    out, err = "", ""
    try:
        with open(box.run / "preflight.out", "wb") as output:
            try:
                command = [sys.executable, "-c", _PREFLIGHT, str(WORKER)]
                running = sandbox.start(isolation, box, command, box.env({}), limits, output)
                running.proc.wait(timeout=300)
            except (OSError, subprocess.SubprocessError) as exc:
                err = f"{type(exc).__name__}: {exc}"
        out = (box.run / "preflight.out").read_bytes().decode("utf-8", "replace")
    finally:
        sandbox.close(box, running)
    missing = _json_list(out)
    if missing is None:
        detail = " ".join((err or out).split())[-600:] or "no output"
        raise GraderFailure(
            Message(
                f"the grader cannot start a notebook's worker in its sandbox ({isolation.mode}): {detail}",
                f"评分器无法在沙箱（{isolation.mode}）中启动运行 notebook 的进程：{detail}",
            )
        ) from None
    if missing:
        raise GraderFailure(_cannot_read(isolation, [str(m) for m in missing]))


def _json_list(output: str) -> list | None:
    """The last line of ``output`` that is a JSON list (the preflight's answer; warnings may follow it)."""
    for line in reversed(output.strip().splitlines()):
        with contextlib.suppress(ValueError):
            value = json.loads(line)
            if isinstance(value, list):
                return value
    return None


def _cannot_read(isolation: sandbox.Isolation, missing: list[str]) -> Message:
    """What the preflight says when the kernel cannot find or read ``missing``: where the sandbox looks, and
    what to do."""
    mode = isolation.mode
    message = Message(
        f"the grader cannot run notebooks here: inside its sandbox ({mode}), as the submissions' user, a "
        f"kernel cannot find or read {', '.join(missing)}. Nothing was graded.",
        f"评分器无法在这里运行 notebook：在沙箱（{mode}）中以提交作业所用的用户运行时，"
        f"内核找不到或读不到 {'、'.join(missing)}。没有评分任何作业。",
    )
    if mode != "bwrap":
        return message
    return message + Message(
        f" The sandbox shows the kernel where this Python loads from: {'; '.join(isolation.keep)}. "
        "Install what is missing there, or make it readable for other users.",
        f"沙箱给内核看的，是这个 Python 加载代码的位置：{'；'.join(isolation.keep)}。"
        "请把缺少的部分安装到这些位置，或让其他用户可以读取。",
    )
