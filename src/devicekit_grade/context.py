"""What one grading run sets up once, before any submission runs: how submissions are sealed off
(`devicekit_grade.sandbox.choose`), a private temporary folder, a snapshot of devicekit, the checks and the
grader (the evaluator loads this copy, never the installed files a kernel might have changed), the
instructor's hidden judges, the labs' exercises (from the evaluator's ``--probe``), and a fingerprint of
every file the evaluator loads, compared before each evaluation (`Context.check_environment`).

`Context.evaluate` runs the evaluator (`devicekit_grade._evaluator`) for one submission: a child forked from
the run's evaluator zygote (one ``python -I -S`` process that loaded a copy of the snapshot, torch, the checks
and the hidden judges before any submission ran), so no evaluator ever saw another submission's data, and
none pays for Python and torch to start again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devicekit.messages import Message
from devicekit_grade import cgroups, sandbox
from devicekit_grade.box import SOCKET_TAIL, preflight
from devicekit_grade.failures import GraderFailure, Told
from devicekit_grade.installed import Needs, kernel_needs, package_folder
from devicekit_grade.released import Released


@dataclass
class Options:
    """How submissions are run. Times are in seconds."""

    cell_timeout: int = 120
    notebook_timeout: int = 900
    kernel: str = "python3"
    max_cell_chars: int = 100_000
    max_notebook_chars: int = 1_000_000
    limits: sandbox.Limits = field(default_factory=sandbox.Limits)
    #: "auto" or "bwrap": bubblewrap (`sandbox.bwrap_prefix`), else refuse unless ``trust``; "none": plain
    #: processes, only with ``trust`` (`sandbox.choose`)
    isolation: str = "auto"
    released: Released = field(default_factory=lambda: Released(None, None))
    #: the instructor's hidden judges: a folder of ``labNN.py`` with ``HIDDEN = {key: judge}``
    hidden: Path | None = None
    #: check modules (``labNN.py``) used instead of the installed devicekit_labs' ones (testing new checks)
    checks: Path | None = None
    #: run submissions without a sandbox where bubblewrap cannot start (the instructor said so)
    trust: bool = False
    #: more folders a sandboxed submission must not see (the inputs, the output folder)
    hide: list[Path] = field(default_factory=list)


class Context:
    """What one grading run sets up once (see the module docstring)."""

    def __init__(self, options: Options) -> None:
        self.options = options
        #: what a submission's kernel loads from: all that a sandbox shows of the instructor's files
        self.needs = kernel_needs()
        self.root = Path(tempfile.mkdtemp(prefix="devicekit-grade-"))
        if len(os.fsencode(self.root)) + SOCKET_TAIL > 107:  # sun_path: 108 bytes with the final NUL
            shutil.rmtree(self.root, ignore_errors=True)
            raise Told(
                Message(
                    f"the temporary folder {self.root.parent} has too long a path for the sockets a notebook "
                    "answers on; set TMPDIR to a shorter folder (TMPDIR=/tmp devicekit-grade ...)",
                    f"临时文件夹 {self.root.parent} 的路径太长，"
                    "notebook 用来回传结果的套接字路径会超出系统允许的长度；"
                    "请把 TMPDIR 设为一个路径更短的文件夹（TMPDIR=/tmp devicekit-grade ...）",
                )
            )
        self._zygote: subprocess.Popen | None = None
        self._control: socket.socket | None = None
        self.isolation = sandbox.Isolation("none")  # until chosen: nothing to release
        # hidden too (each box is shown its own folder again): it holds the evaluator's copy of the hidden
        # judges and the other boxes, which a notebook could read wherever TMPDIR puts it outside the folders
        # a sandbox empties (review47, hole 4)
        try:
            hide = [*_hidden_paths(options, self.needs), os.path.realpath(self.root)]
            chosen = sandbox.choose(options.isolation, trust=options.trust, keep=self.needs.paths, hide=hide)
            self.isolation = dataclasses.replace(chosen, cgroup=cgroups.choose())  # released by `close`
        except BaseException:
            shutil.rmtree(self.root, ignore_errors=True)
            raise
        # the site folders and the folders of distributions their .pth files add (a virtual environment that
        # reuses another one's packages): what the evaluator, without `site`, puts on its path
        self.site = list(self.needs.libraries)
        self.tampered: str = ""
        self._lock = threading.Lock()
        try:
            self.snapshot = snapshot_sources(options.checks)
            self.hidden = _read_hidden(options.hidden)
            preflight(self.isolation, self.root, options.limits)
            probe = self._start_zygote()
        except BaseException:
            self.close()
            raise
        if "labs" not in probe:
            self.close()
            detail = str(probe.get("error", probe))[-1500:]
            raise GraderFailure(
                Message(
                    f"the grader's evaluator does not start: {detail}", f"评分器的评判进程无法启动：{detail}"
                )
            )
        self.labs: dict[str, list[dict[str, Any]]] = probe["labs"]
        self.versions: dict[str, str] = probe["versions"]
        self.fingerprint = _fingerprint(probe["modules"], self.site)
        self.digest = _run_digest(self.snapshot, self.hidden, options)

    def close(self) -> None:
        """Stop the evaluator zygote, remove the run's cgroup (`sandbox.release`) and its folder."""
        sandbox.release(self.isolation)
        if self._control is not None:
            with contextlib.suppress(OSError):
                self._control.close()  # the zygote ends when its end of the socket closes
        if self._zygote is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._zygote.wait(timeout=10)
            if self._zygote.poll() is None:
                self._zygote.kill()
                self._zygote.wait()
        shutil.rmtree(self.root, ignore_errors=True)

    # --- the evaluator: one zygote per run forks a fresh evaluator for each submission ----------------------

    def _start_zygote(self) -> dict[str, Any]:
        """Start the zygote (`devicekit_grade._evaluator.serve_forks`) on a copy of the snapshot; its
        ``--probe`` answer (``{"error": ...}`` when it does not give one)."""
        private = Path(tempfile.mkdtemp(prefix="eval-", dir=self.root))
        for relative, data in self.snapshot.items():
            target = private / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        self._control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        cmd, env = self._boot(private, ["--zygote", str(theirs.fileno())])
        with open(private / "zygote.err", "wb") as err, theirs:
            self._zygote = subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, env=env, cwd=private,
                pass_fds=(theirs.fileno(),),
            )  # fmt: skip
        assert self._zygote.stdout is not None
        out, _ = _read_pipes([self._zygote.stdout.fileno()], timeout=600, first_line=True)
        try:
            return json.loads(out[0])
        except ValueError:
            tail = (private / "zygote.err").read_bytes()
            return _no_json(tail, self._zygote.poll())

    def _boot(self, private: Path, args: list[str]) -> tuple[list[str], dict[str, str]]:
        """The command and environment of the zygote, whose code is the copy in ``private``."""
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

    def check_environment(self) -> str:
        """ "" when nothing the evaluator loads has changed since the start, else the first changed file."""
        if not self.tampered:
            now = _fingerprint(list(self.fingerprint), [])
            for path, stamp in self.fingerprint.items():
                if now.get(path) != stamp:
                    self.tampered = path
                    break
        return self.tampered

    def evaluate(self, args: list[str], timeout: float, listener: int) -> dict[str, Any]:
        """Judge one submission: a fresh child of the zygote runs the evaluator with ``args`` on the listening
        socket ``listener`` (``FD_PLACEHOLDER`` in ``args``); its JSON answer, or ``{"error": ...}``."""
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            with self._lock:
                assert self._control is not None
                request = json.dumps({"args": args}).encode()
                socket.send_fds(self._control, [request], [listener, out_w, err_w])
        except OSError as exc:
            os.close(out_r)
            os.close(err_r)
            return {"error": f"the grader's evaluator zygote is gone ({exc})"}
        finally:
            os.close(out_w)
            os.close(err_w)
        (out, err), finished = _read_pipes([out_r, err_r], timeout)
        lines = out.decode("utf-8", "replace").strip().splitlines()
        if not finished:
            with contextlib.suppress(ValueError, IndexError, OSError):
                os.kill(int(lines[0]), signal.SIGKILL)
            return {"error": f"the grader's evaluator took longer than {timeout:.0f} s"}
        try:
            return json.loads(lines[-1]) if len(lines) > 1 else _no_json(err)
        except ValueError:
            return _no_json(err)


def _read_pipes(fds: list[int], timeout: float, first_line: bool = False) -> tuple[list[bytes], bool]:
    """What was written to each pipe until all are closed (True) or ``timeout`` runs out (False); with
    ``first_line``, only until the first line of the first pipe (which stays open)."""
    deadline = time.monotonic() + timeout
    chunks: dict[int, list[bytes]] = {fd: [] for fd in fds}
    open_fds = list(fds)
    try:
        while open_fds and not (first_line and b"\n" in b"".join(chunks[fds[0]])):
            left = deadline - time.monotonic()
            ready = select.select(open_fds, [], [], left)[0] if left > 0 else []
            if not ready:
                break
            for fd in ready:
                chunk = os.read(fd, 1 << 16)
                if chunk:
                    chunks[fd].append(chunk)
                else:
                    open_fds.remove(fd)
    finally:
        if not first_line:
            for fd in fds:
                os.close(fd)
    data = [b"".join(chunks[fd]) for fd in fds]
    if first_line:
        data[0] = data[0].split(b"\n", 1)[0]
    return [*data[:1], *(d[-4000:] for d in data[1:])], not open_fds


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


def _hidden_paths(options: Options, needs: Needs | None = None) -> list[str]:
    """Folders a sandboxed submission must not see: solutions, hidden judges, submissions, the output. All of
    them, even one that holds the Python installation or a package the kernel imports: the sandbox shows
    those again, and only those (`sandbox.bwrap_prefix`)."""
    folders = [options.released.solutions, options.hidden, *options.hide, *_beside_the_checks(needs)]
    return list(dict.fromkeys(os.path.realpath(f) for f in folders if f is not None))


#: The course's packages: a folder the sandbox shows with one of these names is a checkout's ``src/<name>``.
COURSE_PACKAGES = ("devicekit", "devicekit_labs", "devicekit_grade")


def _beside_the_checks(needs: Needs | None = None) -> list[Path]:
    """The ``solutions/`` and ``grading/hidden/`` of every course checkout a kernel can load the course from
    (an editable install, ``<checkout>/src/devicekit_labs``): hidden whether or not this run was told about
    them, since a notebook finds them from ``devicekit_labs.__file__`` wherever the grader runs from. That
    is the checkout the grader loads its checks from, and any other whose packages the sandbox shows
    (``needs``): a kernel does not get the grader's ``PYTHONPATH``, so with ``PYTHONPATH=src`` of one
    checkout and a virtual environment installed from another, it loads the other (review47)."""
    folders = [package_folder("devicekit_labs")]
    if needs is not None:
        folders += [Path(p) for p in needs.packages if Path(p).name in COURSE_PACKAGES]
    found: list[Path] = []
    for folder in folders:
        if folder is None:
            continue
        checkout = folder.resolve().parent.parent
        found += [p for p in (checkout / "solutions", checkout / "grading" / "hidden") if p.is_dir()]
    return list(dict.fromkeys(found))


def _read_hidden(folder: Path | None) -> dict[str, bytes]:
    """The hidden judges' files (``labNN.py``), read once at the start: {file name: bytes}."""
    if folder is None:
        return {}
    if not folder.is_dir():
        raise RuntimeError(f"--hidden {folder}: no such folder")
    return {p.name: p.read_bytes() for p in sorted(folder.glob("lab[0-9][0-9].py"))}


def default_hidden() -> Path | None:
    """``./grading/hidden`` when the grader runs from a course checkout that has it."""
    folder = Path("grading", "hidden").absolute()
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
        if "/eval-" in path:  # the zygote's own copy, in the run's private folder
            continue
        try:
            info = os.stat(path)
            stamps[path] = (info.st_size, info.st_mtime_ns)
        except OSError:
            stamps[path] = (-1, -1)
    return stamps
