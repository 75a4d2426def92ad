"""Grade one submission: run it sealed off to collect its answers as data, then judge the data in a
process of the grader's own. One rule: no code from a submission runs in a process that computes, holds
or writes a score.

1. **Run.** The notebook, with its outputs cleared, runs in a fresh kernel inside the submission's own
   `devicekit_grade.sandbox.Box` (``_worker.py`` drives it, one cell at a time, with a per-cell and a
   per-notebook time limit). This run gives the feedback about cells: errors, time limits, a dead kernel.
2. **Answer.** The copy ends with one cell added by the grader: the kernel connects to a socket the grader
   opened and runs each exercise's probe on request (`devicekit_grade._kernel`).
3. **Score.** The evaluator (`devicekit_grade._evaluator`), a fresh ``python -I -S`` process that loads
   devicekit from the copy the grader took when it started, asks the kernel to run each exercise's probe
   (the grader's copy of the lab module, placed in the box) on the lab's ``target``; the observations come
   back as plain data (`torch.save` bytes, loaded with ``weights_only=True``), and the public and hidden
   judges read them. Nothing the notebook does to ``devicekit_labs``, its results list, or its check
   cells changes the judges; a forged answer is only data, judged like any other.
4. **Clean up.** Every process of the submission is killed (its own user in root mode; otherwise the
   worker's descendants, including detached ones, which the worker adopts as a subreaper) and its folder
   removed.

When the kernel dies or is stopped before the end, the notebook runs a second time up to the cell that
stopped it, so the exercises before that cell still count, as they did for the learner.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import re
import secrets
import select
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import nbformat

from devicekit_grade import failures, sandbox
from devicekit_grade._kernel import INJECTED
from devicekit_grade.discover import Submission
from devicekit_grade.failures import GraderError, GraderFailure
from devicekit_grade.identify import BadSubmission, identify, loads
from devicekit_grade.installed import Needs, kernel_needs, package_folder
from devicekit_grade.released import Released, code_fingerprint, expected_error_cells, integrity

#: Every status a row can have. ``graded`` rows have a score; the others say why not (or not fully).
STATUSES = (
    "graded",
    "timeout",
    "kernel-died",
    "invalid-json",
    "not-a-notebook",
    "unknown-lab",
    "refused",
    "ignored",
    "superseded",
    "missing",
    "error",
    failures.STATUS,  # "grader-error": the grader failed, not the notebook (`devicekit_grade.failures`)
)
MAX_FOLDER_BYTES = 50 * 1024 * 1024
#: A cell that only calls self-checks, ``check("01-devices", "move-batch", move_batch)`` (one per line).
SELF_CHECK_CELL = re.compile(
    r"""^(\s*check\(\s*["'][\w.-]+["']\s*,\s*["'][\w.-]+["']\s*,[^\n]*\)\s*(#[^\n]*)?\n?)+\Z"""
)


@dataclass
class Options:
    """How submissions are run. Times are in seconds."""

    cell_timeout: int = 120
    notebook_timeout: int = 900
    kernel: str = "python3"
    max_cell_chars: int = 100_000
    max_notebook_chars: int = 1_000_000
    limits: sandbox.Limits = field(default_factory=sandbox.Limits)
    same_user: bool = False  # as root: run kernels as root too (not recommended)
    #: "auto": a PID namespace of its own when the machine allows (see `sandbox.namespace_prefix`);
    #: "none": plain processes (subreaper only); "bwrap": bubblewrap (``--sandbox``, `sandbox.bwrap_prefix`)
    isolation: str = "auto"
    uid_base: int = 1_990_000_000
    released: Released = field(default_factory=lambda: Released(None, None))
    #: the instructor's hidden judges: a folder of ``labNN.py`` with ``HIDDEN = {key: judge}``
    hidden: Path | None = None
    #: check modules (``labNN.py``) used instead of the installed devicekit_labs' ones (testing new checks)
    checks: Path | None = None
    #: run submissions without a user of their own or a sandbox (the instructor said so)
    trust: bool = False
    #: more folders a sandboxed submission must not see (the inputs, the output folder)
    hide: list[Path] = field(default_factory=list)


@dataclass
class ExerciseGrade:
    """One exercise of one submission: passed or not, and the feedback line in both languages."""

    number: int
    key: str
    passed: bool
    #: "judged": the public (and hidden) judges read the probe's observations; "not-reached": the run
    #: stopped before the answer existed; "not-run": no answer for another reason (the feedback says which)
    how: str
    en: str
    zh: str
    seconds: float = 0.0  # time the grader spent getting and judging this answer


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
    sha256: str = ""
    submitted: float = 0.0  # the file's modification time
    versions: dict[str, str] = field(default_factory=dict)  # devicekit/torch of the grader and the notebook
    student: str = ""
    student_name: str = ""
    folder: str = ""  # the student's own sub-folder of the input folder, when there is one
    points: float | None = None
    points_possible: float | None = None
    percent: float | None = None
    canvas_id: str = ""  # the student's Canvas user id (roster, or the Canvas file name)
    graded_with: str = ""  # fingerprint of the grader, checks and limits that produced this row (cache key)
    code_hash: str = ""  # the learner's own code, normalised (`devicekit_grade.integrity`)
    code_sig: list[int] = field(default_factory=list)

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

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Grade:
        data = dict(data)
        data.pop("feedback", None)
        exercises = [ExerciseGrade(**e) for e in data.pop("exercises", [])]
        notes = [(n["en"], n["zh"]) for n in data.pop("notes", [])]
        known = {f for f in cls.__dataclass_fields__}
        grade = cls(**{k: v for k, v in data.items() if k in known})
        grade.exercises, grade.notes = exercises, notes
        return grade


# --- the grader's own copy of its code and a fingerprint of the environment ---------------------------------


class Context:
    """What one grading run sets up once: a private temporary folder, a snapshot of devicekit and the
    grader (the evaluator loads these, never the installed files a kernel might have changed), the
    labs' exercises and versions (from a probe run of the evaluator), and a fingerprint of every file the
    evaluator loads, compared before each evaluation."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.warnings: list[str] = []
        as_root = sandbox.running_as_root() and not options.same_user
        #: what a submission's kernel loads from: all that a sandbox shows of the instructor's files
        self.needs = kernel_needs()
        private = kernel_private(self.needs) if as_root else ""
        bwrap_ok = options.isolation in ("auto", "bwrap") and sandbox.bwrap_works()
        self.mode, self.as_root = sandbox.choose_isolation(
            options.isolation, as_root, private, bwrap_ok, options.trust
        )
        if self.mode == "none":
            self.warnings.append(
                "--trust-submissions: notebooks run as the grader's own user, without a sandbox; they can "
                "read what this user can read (solutions, hidden checks, other submissions)"
                + ("; as root, the process limit is held by the grader's watchdog only" if as_root else "")
                + " · --trust-submissions：notebook 以评分器自己的用户运行，没有沙箱，能读到这个用户能读的"
                "一切（参考答案、隐藏检查、其他提交）"
                + ("；以 root 运行时，进程数上限只由评分器的监视线程保证" if as_root else "")
                + "。"
            )
        self.root = Path(tempfile.mkdtemp(prefix="devicekit-grade-"))
        os.chmod(self.root, 0o711)  # submissions' users may pass through to their own box, not list it
        self.uids = sandbox.UidPool(options.uid_base)
        self.snapshot = snapshot_sources(options.checks)
        self.hidden = _read_hidden(options.hidden)
        # the site folders and the folders of distributions their .pth files add (a virtual environment that
        # reuses another one's packages): what the evaluator, without `site`, puts on its path
        self.site = list(self.needs.libraries)
        self.tampered: str = ""
        self.lock = threading.Lock()
        self.namespaces = self.mode in ("user", "none") and sandbox.namespaces_work()
        self.hide = _hidden_paths(options)
        if self.mode in ("user", "none") and not self.namespaces:
            self.warnings.append(
                "this machine cannot give each notebook a PID namespace of its own (util-linux unshare, "
                "user namespaces): notebooks can see the grader's processes in /proc · 这台机器无法给每份 "
                "notebook 单独的 PID 命名空间（util-linux 的 unshare、用户命名空间）：notebook 能在 /proc "
                "中看到评分器的进程"
            )
        try:
            preflight(self)
        except BaseException:
            self.close()
            raise
        probe = self.evaluate(["--probe"], timeout=600)
        if "labs" not in probe:
            self.close()
            detail = str(probe.get("error", probe))[-1500:]
            raise GraderFailure(
                f"the grader's evaluator does not start: {detail}",
                f"评分器的评判进程无法启动：{detail}",
            )
        self.labs: dict[str, list[dict[str, Any]]] = probe["labs"]
        self.versions: dict[str, str] = probe["versions"]
        self.fingerprint = _fingerprint(probe["modules"], self.site)
        self.digest = _run_digest(self.snapshot, self.hidden, options)

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    # --- the evaluator: a new ``python -I -S`` process for each submission ---------------------------------

    def _boot(self, private: Path, args: list[str]) -> tuple[list[str], dict[str, str]]:
        """The command and environment of an evaluator process whose code is the copy in ``private``."""
        boot = (
            "import sys; n = sys.argv.index('--'); sys.path[:0] = sys.argv[1:n]; "
            "from devicekit_grade._evaluator import main; raise SystemExit(main(sys.argv[n + 1:]))"
        )
        env = {k: os.environ[k] for k in sandbox.PASSTHROUGH if k in os.environ}
        env.update(PATH=os.environ.get("PATH", "/usr/bin:/bin"), HOME=str(private), PYTHONIOENCODING="utf-8")
        env.update(TMPDIR=str(private), PYTHONDONTWRITEBYTECODE="1")
        env.setdefault("OMP_NUM_THREADS", "1")  # tiny tensors; -j N evaluators must not oversubscribe the CPU
        if self.hidden:
            (private / "hidden").mkdir()
            for name, data in self.hidden.items():
                (private / "hidden" / name).write_bytes(data)
            args = [*args, "--hidden", str(private / "hidden")]
        return [sys.executable, "-I", "-S", "-c", boot, str(private), *self.site, "--", *args], env

    def _private_copy(self) -> Path:
        """A new 0700 folder of the grader's user holding the snapshot of devicekit and the grader."""
        private = Path(tempfile.mkdtemp(prefix="eval-", dir=self.root))
        for relative, data in self.snapshot.items():
            target = private / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        return private

    def check_environment(self) -> str:
        """ "" when nothing the evaluator loads has changed since the start, else the first changed file."""
        if not self.tampered:
            now = _fingerprint(list(self.fingerprint), [])
            for path, stamp in self.fingerprint.items():
                if now.get(path) != stamp:
                    self.tampered = path
                    break
        return self.tampered

    def evaluate(self, args: list[str], timeout: float, fds: tuple[int, ...] = ()) -> dict[str, Any]:
        """Run the evaluator, a new process loading a fresh copy of the snapshot; its JSON answer (or
        ``{"error": ...}``)."""
        private = self._private_copy()
        try:
            cmd, env = self._boot(private, args)
            try:
                done = subprocess.run(
                    cmd, capture_output=True, timeout=timeout, env=env, cwd=private, pass_fds=fds,
                    stdin=subprocess.DEVNULL,
                )  # fmt: skip
            except subprocess.TimeoutExpired:
                return {"error": f"the grader's evaluator took longer than {timeout:.0f} s"}
            lines = done.stdout.decode("utf-8", "replace").strip().splitlines()
            try:
                return json.loads(lines[-1])
            except (IndexError, ValueError):
                return _no_json(done.stderr, done.returncode)
        finally:
            shutil.rmtree(private, ignore_errors=True)


def _no_json(stderr: bytes, code: int | None = None) -> dict[str, Any]:
    tail = stderr.decode("utf-8", "replace").strip()[-600:]
    status = f" (exit {code})" if code is not None else ""
    return {"error": f"the grader's evaluator failed{status}: {tail}"}


def _run_digest(snapshot: dict[str, bytes], hidden: dict[str, bytes], options: Options) -> str:
    """What a row's grade depends on besides the file: the checks, hidden judges, grader and limits."""
    h = hashlib.sha256()
    for name, data in sorted({**snapshot, **{f"hidden/{k}": v for k, v in hidden.items()}}.items()):
        h.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    h.update(f"{options.cell_timeout}/{options.notebook_timeout}/{options.limits}".encode())
    return h.hexdigest()[:20]


def _hidden_paths(options: Options) -> list[str]:
    """Folders a sandboxed submission must not see: solutions, hidden judges, submissions, the output. All of
    them, even one that holds the Python installation or a package the kernel imports: the sandbox shows
    those again, and only those (`sandbox.bwrap_prefix`)."""
    folders = [options.released.solutions, options.hidden, *options.hide]
    return list(dict.fromkeys(os.path.realpath(f) for f in folders if f is not None))


def kernel_private(needs: Needs | None = None) -> str:
    """ "" when another user can run the kernels of this grader as they are installed (its Python, the
    worker, and every package folder of `Needs` readable), else the first path that stops it: a Python
    under ``/root``, or a course checkout in a private home folder. Decides whether ``--isolation user``
    can work here (`sandbox.choose_isolation`)."""
    import nbclient

    needs = kernel_needs() if needs is None else needs
    paths = [sys.executable, sysconfig.get_paths()["stdlib"], nbclient.__file__, str(_WORKER), *needs.trees]
    return sandbox.usable_by_others(paths, needs.packages)


def _read_hidden(folder: Path | None) -> dict[str, bytes]:
    """The hidden judges' files (``labNN.py``), read once at the start: {file name: bytes}."""
    if folder is None:
        return {}
    if not folder.is_dir():
        raise RuntimeError(f"--hidden {folder}: no such folder")
    return {p.name: p.read_bytes() for p in sorted(folder.glob("lab[0-9][0-9].py"))}


def default_hidden(cwd: Path | None = None) -> Path | None:
    """``./grading/hidden`` when the grader runs from a course checkout that has it."""
    folder = (Path.cwd() if cwd is None else cwd) / "grading" / "hidden"
    return folder if folder.is_dir() else None


def snapshot_sources(checks: Path | None = None) -> dict[str, bytes]:
    """{path relative to a ``sys.path`` entry: bytes} of devicekit, devicekit_labs and the grader, read once
    when the run starts; ``checks``' ``labNN.py`` (``--checks``) replace the installed lab modules."""
    files: dict[str, bytes] = {}
    for package in ("devicekit", "devicekit_labs", "devicekit_grade"):
        found = package_folder(package)
        if found is None:
            raise RuntimeError(f"the grader needs the installed package {package}, which is not found")
        folder = found.resolve()
        for path in folder.rglob("*"):
            if (
                path.is_file()
                and "__pycache__" not in path.parts
                and path.suffix in (".py", ".json", ".toml")
            ):
                files[str(Path(package) / path.relative_to(folder))] = path.read_bytes()
    if checks is not None:
        if not checks.is_dir():
            raise RuntimeError(f"--checks {checks}: no such folder")
        for path in sorted(checks.glob("lab[0-9][0-9].py")):
            files[str(Path("devicekit_labs") / path.name)] = path.read_bytes()
    return files


def _fingerprint(modules: list[str], folders: list[str]) -> dict[str, tuple[int, int]]:
    stamps = {}
    for path in [*modules, *folders]:
        if "/eval-" in path:  # the evaluator's own fresh copy
            continue
        try:
            info = os.stat(path)
            stamps[path] = (info.st_size, info.st_mtime_ns)
        except OSError:
            stamps[path] = (-1, -1)
    return stamps


# --- where a cell is, in words the learner can find ---------------------------------------------------------


def _first_line(source: str) -> str:
    line = next((s.strip() for s in source.splitlines() if s.strip()), "")
    return line if len(line) <= 60 else line[:57] + "..."


def where(nb: nbformat.NotebookNode, index: int) -> tuple[str, str]:
    """The prepared copy's cell ``index`` (0 is the grader's setup cell) in the learner's words."""
    if index <= 0:
        return "the grader's setup cell", "评分器的准备单元格"
    if index - 1 < len(nb.cells):
        line = _first_line(nb.cells[index - 1].source)
        return f"cell {index} ({line})", f"第 {index} 个单元格（{line}）"
    return "the grader's answer cell", "评分器的收集单元格"


# --- preparing the copy -------------------------------------------------------------------------------------


def copy_folder(src: Path, dest: Path) -> str:
    """Copy the data files of a student's own folder; returns a note about what was left out, or "".

    Notebooks (other submissions), hidden entries and symbolic links are never copied; at most
    `MAX_FOLDER_BYTES` in all.
    """
    budget, notes = MAX_FOLDER_BYTES, []
    for dirpath, dirnames, filenames in os.walk(src, followlinks=False):
        folder = Path(dirpath)
        dirnames[:] = [d for d in sorted(dirnames) if not d.startswith(".") and not (folder / d).is_symlink()]
        for name in sorted(filenames):
            path = folder / name
            if name.startswith(".") or path.suffix == ".ipynb":
                continue
            relative = path.relative_to(src)
            if path.is_symlink():
                notes.append(f"{relative} is a symbolic link: not copied")
                continue
            try:
                size = path.stat().st_size
                if size > budget:
                    notes.append(f"{relative} not copied: over the {MAX_FOLDER_BYTES // 2**20} MB limit")
                    continue
                (dest / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, dest / relative, follow_symlinks=False)
                budget -= size
            except OSError as exc:
                notes.append(f"{relative} not copied: {exc.strerror or exc}")
    return "; ".join(notes[:5])


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
        nbformat.v4.new_code_cell(f"{kernel}.setup()", metadata={"devicekit-grade": "setup"}),
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


# --- running it ---------------------------------------------------------------------------------------------

_WORKER = Path(__file__).with_name("_worker.py")
_RUN_WORKER = "import runpy, sys; runpy.run_path(sys.argv.pop(1), run_name='__main__')"
_RUNNING: dict[int, tuple[subprocess.Popen, int | None]] = {}
_RUNNING_LOCK = threading.Lock()


def _events(path: Path) -> list[dict[str, Any]]:
    events = []
    with contextlib.suppress(OSError):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines()[:100_000]:
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if isinstance(event, dict):
                    events.append(event)
    return events


def _stop(proc: subprocess.Popen, uid: int | None) -> None:
    """Kill the worker, the kernel and everything they started, detached or not."""
    if uid is not None:
        sandbox.kill_user(uid)
    if os.name == "posix":
        sandbox.kill_tree(proc.pid)
    else:  # pragma: no cover
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=30)


def kill_all() -> None:
    """Kill every submission still running (the grader is being interrupted)."""
    with _RUNNING_LOCK:
        running = list(_RUNNING.values())
    for proc, uid in running:
        _stop(proc, uid)


@dataclass
class Execution:
    events: list[dict[str, Any]]
    stopped: bool  # by the notebook time limit
    answers: dict[str, Any]  # the evaluator's reply
    log: str


def _isolated(ctx: Context, box: sandbox.Box, cmd: list[str]) -> tuple[list[str], int | None]:
    """The command wrapped for the chosen isolation, and the user to switch to before exec (None: the
    wrapper switches, or the grader's own user)."""
    if ctx.mode == "bwrap":
        prefix = sandbox.bwrap_prefix(box, ctx.needs.paths, ctx.hide)
        if not prefix:
            raise RuntimeError("bubblewrap (or setpriv) disappeared during the run")
        # as root, setpriv switches to the box's user inside; otherwise bwrap runs as the grader's user
        return [*prefix, *cmd], None
    if ctx.namespaces:
        return [*sandbox.namespace_prefix(box.uid), *cmd], None
    return cmd, box.uid


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


def preflight(ctx: Context) -> None:
    """Check once, before any submission runs, that a sandbox of this run lets the worker and the kernel
    start: the worker's script and the kernel's packages are there and readable for the submission's user.
    Raises `GraderFailure` (the run stops, nothing is graded) when not; a fraction of a second."""
    uid = ctx.uids.take() if ctx.as_root else None
    box = sandbox.make_box(ctx.root, uid)
    try:
        files = [str(_WORKER)]
        cmd, drop = _isolated(ctx, box, [sys.executable, "-c", _PREFLIGHT, *files])
        try:
            done = subprocess.run(
                cmd, capture_output=True, env=box.env({}), cwd=box.run, stdin=subprocess.DEVNULL, timeout=300,
                preexec_fn=sandbox.preexec(ctx.options.limits, drop, box.uid) if os.name == "posix" else None,
            )  # fmt: skip
            out, err = done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")
        except (OSError, subprocess.SubprocessError) as exc:
            out, err = "", f"{type(exc).__name__}: {exc}"
    finally:
        sandbox.remove_box(box)
        if uid is not None:
            ctx.uids.release(uid)
    try:
        missing = json.loads(out.strip().splitlines()[-1])
    except (IndexError, ValueError):
        detail = " ".join(err.split())[-600:] or "no output"
        raise GraderFailure(
            f"the grader cannot start a notebook's worker in its sandbox ({ctx.mode}): {detail}",
            f"评分器无法在沙箱（{ctx.mode}）中启动运行 notebook 的进程：{detail}",
        ) from None
    if missing:
        names = ", ".join(map(str, missing))
        en = (
            f"the grader cannot run notebooks here: inside its sandbox ({ctx.mode}), as the submissions' "
            f"user, a kernel cannot find or read {names}. Nothing was graded."
        )
        zh = (
            f"评分器无法在这里运行 notebook：在沙箱（{ctx.mode}）中以提交作业所用的用户运行时，"
            f"内核找不到或读不到 {'、'.join(map(str, missing))}。没有评分任何作业。"
        )
        if ctx.mode == "bwrap":
            where, where_zh = "; ".join(ctx.needs.paths), "；".join(ctx.needs.paths)
            en += (
                f" The sandbox shows the kernel where this Python loads from: {where}. Install what is "
                "missing there, or make it readable for other users."
            )
            zh += (
                f"沙箱给内核看的，是这个 Python 加载代码的位置：{where_zh}。"
                "请把缺少的部分安装到这些位置，或让其他用户可以读取。"
            )
        else:
            en += " Make what is missing readable for other users, or grade with --isolation bwrap."
            zh += "请让其他用户可以读取缺少的部分，或者用 --isolation bwrap 评分。"
        raise GraderFailure(en, zh)


def _execute(ctx: Context, ready: Any, box: sandbox.Box, lab: str, lang: str) -> Execution:
    options = ctx.options
    gate = box.root / "gate"
    gate.mkdir(mode=0o755)
    address = str(gate / f"{secrets.token_hex(6)}.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    os.chmod(address, 0o777)
    listener.listen(4)
    notebook = box.work / "notebook.ipynb"
    ready.cells[-1].source = ready.cells[-1].source.replace("__ADDRESS__", address)
    nbformat.write(ready, notebook)
    events = box.run / "events.jsonl"
    log_path = box.run / "worker.log"
    if box.uid is not None:
        sandbox.chown_tree(box.work, box.uid)
    cmd = [
        sys.executable, "-c", _RUN_WORKER, str(_WORKER), str(notebook), str(events),
        "--cell-timeout", str(options.cell_timeout), "--kernel", options.kernel,
        "--setup-timeout", str(max(300, options.cell_timeout)),
        "--max-cell-chars", str(options.max_cell_chars),
        "--max-notebook-chars", str(options.max_notebook_chars),
    ]  # fmt: skip
    env = box.env({"DEVICEKIT_LANG": lang})
    answers: dict[str, Any] = {}
    stopped = False
    with open(log_path, "wb") as log:
        if box.uid is not None:
            os.chown(log_path, box.uid, box.uid)
        cmd, drop = _isolated(ctx, box, cmd)
        with ctx.lock:  # no fork while another thread changes the set of running workers
            proc = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=box.run,
                preexec_fn=sandbox.preexec(options.limits, drop, box.uid) if os.name == "posix" else None,
            )  # fmt: skip
            with _RUNNING_LOCK:
                _RUNNING[proc.pid] = (proc, box.uid)
        watchdog = sandbox.Watchdog(proc.pid, options.limits.processes, box.uid)
        watchdog.start()
        try:
            deadline = time.monotonic() + options.notebook_timeout
            while True:
                ready_fds, _, _ = select.select([listener], [], [], 0.25)
                if ready_fds:
                    break
                if proc.poll() is not None:
                    break
                if time.monotonic() > deadline:
                    stopped = True
                    break
            tampered = ctx.check_environment()
            if tampered:
                answers = {"error": f"the grading environment was modified: {tampered}", "tampered": True}
            else:
                ex_count = len(ctx.labs.get(lab, []))
                args = [
                    "--lab", lab, "--fd", str(listener.fileno()), "--timeout", str(options.cell_timeout + 5),
                    "--connect-timeout", "2" if not ready_fds else "60",
                ]  # fmt: skip
                if box.uid is not None:
                    args += ["--uid", str(box.uid)]
                budget = 120 + ex_count * 4 * options.cell_timeout
                answers = ctx.evaluate(args, timeout=budget, fds=(listener.fileno(),))
            if not stopped and not ready_fds:  # answered: the notebook is done, nothing to wait for
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=max(5.0, deadline - time.monotonic()))
                stopped = proc.poll() is None
        finally:
            watchdog.stop()
            listener.close()
            _stop(proc, box.uid)
            with _RUNNING_LOCK:
                _RUNNING.pop(proc.pid, None)
    if watchdog.tripped:
        answers.setdefault("processes", options.limits.processes)
    tail = ""
    with contextlib.suppress(OSError):
        tail = log_path.read_bytes()[-2000:].decode("utf-8", errors="replace")
    return Execution(_events(events), stopped, answers, tail)


def grade_submission(sub: Submission, ctx: Context) -> Grade:
    """Grade one submission (its bytes were read when it was found); never raises."""
    started = time.monotonic()
    grade = Grade(file=sub.shown, submitted=sub.mtime, folder=sub.folder.name if sub.folder else "")
    grade.graded_with = ctx.digest
    if sub.data is not None:
        grade.sha256 = hashlib.sha256(sub.data).hexdigest()
    if sub.status != "pending":
        grade.status, grade.reason = sub.status, sub.reason
        return grade
    try:
        if ctx.tampered:
            raise BadSubmission(
                "error",
                f"not graded: the grading environment was modified during this run ({ctx.tampered}); "
                "reinstall it and grade again",
            )
        _grade(sub, grade, ctx)
    except BadSubmission as bad:
        grade.status, grade.reason = bad.status, bad.reason
    except RecursionError:
        grade.status = "not-a-notebook"
        grade.reason = "a notebook nested too deeply to handle (cells or outputs inside each other)"
    except GraderError as failed:
        _grader_error(grade, failed)
    except Exception as exc:  # the grader's own failure for this one file: a row, and on to the next
        _grader_error(grade, GraderError("crashed", f"{type(exc).__name__}: {exc}"))
    grade.duration_s = round(time.monotonic() - started, 2)
    return grade


def _grader_error(grade: Grade, failed: GraderError) -> None:
    """Make ``grade`` the row of a submission the grader failed on: no score, the cause in both languages."""
    grade.status, grade.reason = failures.STATUS, failed.reason()
    grade.score, grade.exercises, grade.flags = None, [], []
    grade.notes = [failed.note()]


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


def _grade(sub: Submission, grade: Grade, ctx: Context) -> None:
    assert sub.data is not None
    nb = loads(sub.data)
    identity = identify(nb, sub.path, list(ctx.labs))
    grade.lang, grade.lab, grade.identified_by = identity.lang, identity.lab, identity.identified_by
    if identity.lab is None:
        raise BadSubmission("unknown-lab", f"cannot tell which lab this is: {identity.detail}")
    lab = identity.lab
    grade.max = len(ctx.labs[lab])
    grade.versions = {f"grader_{k}": v for k, v in ctx.versions.items()}
    executed = (
        nb.metadata.get("devicekit", {}).get("executed", {})
        if isinstance(nb.metadata.get("devicekit"), dict)
        else {}
    )
    if isinstance(executed, dict) and executed.get("torch"):
        grade.versions["notebook_torch"] = str(executed.get("torch"))[:40]
    flags, reasons, published = integrity(nb, lab, ctx.options.released)
    grade.code_hash, grade.code_sig = code_fingerprint(nb, lab, ctx.options.released)
    expected = expected_error_cells(nb, lab, ctx.options.released)
    first = _run_once(ctx, sub, nb, lab, identity.lang, expected, None)
    failed = grader_failure(first)
    if failed is not None:
        raise failed
    fatal = fatal_cell(first)
    fatal = fatal if fatal is not None and 0 < fatal <= len(nb.cells) else None
    second = None
    if fatal is not None:
        second = _run_once(ctx, sub, nb, lab, identity.lang, expected, fatal - 1)
        failed = grader_failure(second)  # (its answer cell, at least, is after the setup cell)
        if failed is not None:
            raise failed
    _score(grade, nb, ctx, first, second, fatal)
    grade.flags = flags + [f for f in grade.flags if f not in flags]
    if published:
        grade.score = 0
        grade.notes.append(
            (
                "0 points: this is the published solution, not your own work.",
                "0 分：提交的是公开的参考答案，而不是你自己的作业。",
            )
        )
    grade.reason = "; ".join(filter(None, [*reasons, grade.reason]))


def _run_once(
    ctx: Context, sub: Submission, nb: Any, lab: str, lang: str, expected: set[int], upto: int | None
) -> Execution:
    uid = ctx.uids.take() if ctx.as_root else None
    box = sandbox.make_box(ctx.root, uid)
    try:
        note = copy_folder(sub.folder, box.work) if sub.folder is not None else ""
        probes = _place_probes(ctx, box, lab)
        ready = prepare(nb, expected, "__ADDRESS__", upto, lab, probes, ctx.options.cell_timeout)
        execution = _execute(ctx, ready, box, lab, lang)
        if note:
            execution.log = note + "\n" + execution.log
            execution.answers.setdefault("copy_note", note)
        return execution
    finally:
        sandbox.remove_box(box)
        if uid is not None:
            ctx.uids.release(uid)


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


#: Why an exercise has no result, for the learner (en, zh).
NOT_RUN = {
    "stopped": (
        "not reached: the run stopped before the notebook defined `{target}` (see the remark below).",
        "没有运行到：notebook 在定义 `{target}` 之前就停止了（见下面的说明）。",
    ),
    "target-missing": (
        "`{target}` is not defined at the end of the notebook: the lab asks for a function or value with "
        "exactly this name. Restore it, then Restart & Run All.",
        "notebook 运行结束时没有定义 `{target}`：实验要求的函数或变量必须叫这个名字。"
        "请恢复它，然后重启并全部运行。",
    ),
    "not-evaluated": (
        "could not be checked: {why}.",
        "无法检查：{why}。",
    ),
    "no-target": (
        "this exercise names no notebook variable for the grader to check (the lab's `target`): "
        "tell your instructor.",
        "这个练习没有声明评分器要检查的变量（实验的 `target`）：请告诉老师。",
    ),
}


def unchecked(row: dict[str, Any], target: object, stopped: bool) -> tuple[str, str, str]:
    """An exercise the evaluator could not check: ``how`` (not-reached, not-run) and why, in English and
    Chinese, from its row (``status``, ``why``, ``why_zh``); ``stopped``: the run stopped at a fatal cell."""
    why = str(row.get("status"))
    if stopped and why in ("target-missing", "not-evaluated"):
        why = "stopped"
    texts = NOT_RUN.get(why, NOT_RUN["not-evaluated"])
    detail = str(row.get("why") or "the kernel did not answer")
    detail_zh = str(row.get("why_zh") or ("内核没有应答" if not row.get("why") else detail))
    en, zh = texts[0].format(target=target, why=detail), texts[1].format(target=target, why=detail_zh)
    return ("not-reached" if why == "stopped" else "not-run"), en, zh


def _score(
    grade: Grade, nb: Any, ctx: Context, first: Execution, second: Execution | None, fatal: int | None
) -> None:
    options = ctx.options
    reasons: list[str] = []
    truncated: list[int] = []
    status = "graded"
    events = first.events
    for event in events:
        kind, index = event.get("event"), event.get("index", -1)
        index = index if isinstance(index, int) else -1
        if fatal is not None and index >= fatal:
            continue  # the stopping cell is explained below; the cells after it never really ran
        if kind == "error" and not event.get("expected"):
            en, zh = where(nb, index)
            what = f"{str(event.get('ename'))[:100]}: {str(event.get('evalue'))[:500]}".rstrip(": ")
            if index == 0:  # (a run whose setup cell failed went no further: `grader_failure`)
                raise GraderError("setup-failed", what)
            if index > len(nb.cells):  # the answer cell: its exercises are not checked, and this says why
                grade.notes.append(
                    (
                        f"the grader's answer cell failed in the kernel: {what}",
                        f"评分器的收集单元格在内核中出错：{what}",
                    )
                )
                reasons.append(f"the grader's answer cell failed: {what}")
                continue
            grade.notes.append((f"error in {en}: {what}", f"{zh}出错：{what}"))
            reasons.append(f"error in {en}: {what}")
        elif kind == "timeout" and 0 < index <= len(nb.cells):
            en, zh = where(nb, index)
            status = "timeout"
            grade.notes.append(
                (
                    f"{en} ran longer than {options.cell_timeout} s and was interrupted; "
                    "the notebook went on with the next cell.",
                    f"{zh}运行超过 {options.cell_timeout} 秒，已被中断；notebook 接着运行了下一个单元格。",
                )
            )
            reasons.insert(0, f"{en} ran longer than {options.cell_timeout} s (interrupted)")
        elif kind == "truncated":
            truncated.append(index)
    if truncated:
        en, zh = where(nb, truncated[0])
        grade.flags.append("output-truncated")
        grade.notes.append(
            (
                f"{en} printed more output than the grader keeps; the rest was dropped (the cell still ran).",
                f"{zh}的输出超出评分器保留的上限，多余部分已丢弃（单元格本身照常运行完）。",
            )
        )
        reasons.append(f"output of {en} truncated")
    died = any(e.get("event") == "dead" for e in events)
    if fatal is not None:
        en, zh = where(nb, fatal)
        if died:
            status = "kernel-died"
            grade.notes.append(
                (
                    f"the kernel died while running {en} (os._exit, a crash in native code, or out of "
                    "memory); the grader ran the notebook again up to that cell, so the exercises before it "
                    "count; "
                    "the cells after it never ran.",
                    f"运行{zh}时内核退出了（os._exit、本地代码崩溃或内存耗尽）；"
                    "评分器把 notebook 重新运行到这个单元格之前，"
                    "此前的练习照常计分，之后的单元格没有运行。",
                )
            )
            reasons.insert(0, f"kernel died in {en}")
        elif any(e.get("event") == "unresponsive" for e in events):
            status = "timeout"
            grade.notes.append(
                (
                    f"{en} ran longer than {options.cell_timeout} s and was still running "
                    f"{options.cell_timeout} s after it was interrupted: the notebook was stopped there; the "
                    "exercises before that cell count, the cells after it never ran.",
                    f"{zh}运行超过 {options.cell_timeout} 秒，被中断后又过了 {options.cell_timeout} 秒"
                    "仍未停止：notebook 在此处被终止；此前的练习照常计分，之后的单元格没有运行。",
                )
            )
            reasons.insert(0, f"{en} did not stop when interrupted: stopped there")
        else:
            status = "timeout"
            grade.notes.append(
                (
                    f"{en} did not stop when interrupted and the notebook ran past "
                    f"{options.notebook_timeout} s: it was stopped there; the exercises before that cell "
                    "count, the cells after it never ran.",
                    f"{zh}被中断后仍未停止，整个 notebook 运行超过 {options.notebook_timeout} 秒，"
                    "在此处被终止；"
                    "此前的练习照常计分，之后的单元格没有运行。",
                )
            )
            reasons.insert(0, f"notebook ran longer than {options.notebook_timeout} s, stopped in {en}")
    elif first.stopped:
        status = "timeout"
        reasons.insert(0, f"the notebook ran longer than {options.notebook_timeout} s")
        started = [e["index"] for e in events if e.get("event") == "cell" and isinstance(e.get("index"), int)]
        if started:
            en, zh = where(nb, started[-1])
            grade.notes.append(
                (
                    f"the notebook ran past {options.notebook_timeout} s and was stopped in {en} of "
                    f"{len(nb.cells)}: it never reached its end, so no answer was collected.",
                    f"notebook 运行超过 {options.notebook_timeout} 秒，在{zh}被终止"
                    f"（共 {len(nb.cells)} 个单元格）：它没有运行到结尾，所以没有收集到任何答案。",
                )
            )
    elif not any(e.get("event") == "done" for e in events) and not first.answers.get("results"):
        fatal_event = next((e for e in events if e.get("event") == "fatal"), None)
        message = fatal_event.get("message") if fatal_event else first.log.strip()[-300:]
        raise BadSubmission("error", f"could not execute the notebook: {message}")
    answers = (second or first).answers
    if answers.get("tampered"):
        raise BadSubmission("error", f"not graded: {answers['error']}")
    if "results" not in answers:  # the evaluator failed: the answers are data, whatever the notebook did
        raise GraderError("answers", str(answers.get("error", "no reply from the evaluator")))
    if answers.get("copy_note"):
        reasons.append(str(answers["copy_note"]))
    if first.answers.get("processes") or answers.get("processes"):
        limit = first.answers.get("processes") or answers.get("processes")
        grade.flags.append("process-limit")
        grade.notes.append(
            (
                f"the notebook started more than {limit} processes and threads: all of them were stopped.",
                f"notebook 启动的进程和线程超过了 {limit} 个：已全部终止。",
            )
        )
        reasons.append(f"more than {limit} processes: stopped")
    grade.versions.update({f"checked_{k}": v for k, v in answers.get("versions", {}).items()})
    mine, theirs = grade.versions.get("checked_torch", ""), grade.versions.get("notebook_torch", "")
    if mine and theirs and mine.split(".")[:2] != theirs.split(".")[:2]:
        reasons.append(f"the notebook was last run with torch {theirs}; graded with torch {mine}")
    for row in answers["results"]:
        number, key, target = int(row["number"]), str(row["key"]), row.get("target")
        head_en, head_zh = f"✗ Exercise {number}: ", f"✗ 练习 {number}："
        if row.get("flag") and row["flag"] not in grade.flags:
            grade.flags.append(str(row["flag"]))
        if row.get("status") == "checked":
            en, zh = str(row["en"]), str(row["zh"])
            seconds = float(row.get("seconds") or 0.0)
            grade.exercises.append(ExerciseGrade(number, key, bool(row["passed"]), "judged", en, zh, seconds))
            continue
        how, en, zh = unchecked(row, target, stopped=fatal is not None)
        grade.exercises.append(ExerciseGrade(number, key, False, how, head_en + en, head_zh + zh))
    if any(e.how == "not-run" for e in grade.exercises):
        grade.flags.append("check-not-run")
    if any(r.startswith("error in") for r in reasons):
        grade.flags.append("cell-errors")
    grade.status = status
    grade.score = sum(e.passed for e in grade.exercises)
    grade.reason = "; ".join(reasons)
