"""Seal one submission off: its own throw-away folders, a clean environment, resource limits, its own user
when the grader runs as root, and every process it started killed at the end.

What a submission's processes (worker, kernel, anything they start) get:

* a throw-away root folder holding ``work/`` (the notebook copy and its data files; the kernel's working
  directory), ``home/`` (``HOME``, ``IPYTHONDIR``, Jupyter's folders) and ``tmp/`` (``TMPDIR``). An IPython
  startup file one submission writes dies with its folder.
* an environment built from scratch: no variable of the grader's environment except an allow-list
  (``PATH``, locale, GPU selection), so nothing there names the submissions or the output folder.
* resource limits (`Limits`): address space, CPU time, number of processes, size of a written file.
* when the grader runs as root, a user id of its own (``uid_base`` + a counter, no login, no files
  anywhere else): it cannot write the grader's files, read the instructor's folders (given normal
  permissions), or see the grader's working directory and environment in ``/proc``; and every process
  of that user is killed at the end.
* otherwise (same user as the grader) the grader is a child subreaper (Linux ``prctl``): processes that
  detach with ``setsid`` or a double fork are re-parented to the worker or the grader instead of init, so
  the grader still finds and kills them.

The limits of this design are documented in the grading guide: without root or ``--sandbox``, a
submission runs as the instructor's user and can read what that user can read.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import shutil
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
PR_SET_DUMPABLE = 4
MiB = 1024 * 1024

#: Environment variables a submission may see, copied from the grader's environment when set.
PASSTHROUGH = (
    "LANG",
    "LC_ALL",
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "LD_LIBRARY_PATH",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
)


def default_memory_mb() -> int:
    """8192 MiB of address space per process; none on a machine with an NVIDIA GPU, where CUDA reserves
    far more address space than it uses and an address-space limit makes it fail to start."""
    return 0 if os.path.exists("/dev/nvidiactl") else 8192


@dataclass(frozen=True)
class Limits:
    """Resource limits for every process of a submission (0 = no limit). Applied with ``setrlimit``."""

    memory_mb: int = field(default_factory=default_memory_mb)  # address space (RLIMIT_AS)
    cpu_s: int = 1800  # CPU seconds per process (RLIMIT_CPU)
    processes: int = 512  # processes and threads of the submission's user (RLIMIT_NPROC; root mode only)
    file_mb: int = 256  # largest file a process may write (RLIMIT_FSIZE)


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def become_subreaper() -> bool:
    """Make this process adopt its orphaned descendants (Linux); returns whether that worked."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return _libc().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def hide_from_proc() -> None:
    """Make this process's ``/proc`` entries (working directory, environment, open files) unreadable to
    other processes of the same user (``PR_SET_DUMPABLE`` 0; Linux, best effort)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            _libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def running_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def usable_by_others(paths: list[str]) -> str:
    """ "" when another user can run this Python (every folder on the way searchable, files readable),
    else the first path that stops it (e.g. an interpreter installed under ``/root``)."""
    import stat as st

    for given in paths:
        path = Path(os.path.realpath(given))
        for part in [*reversed(path.parents), path]:
            try:
                mode = os.stat(part).st_mode
            except OSError:
                continue
            need = st.S_IXOTH if st.S_ISDIR(mode) else st.S_IROTH
            if not mode & need:
                return str(part)
    return ""


class UidPool:
    """User ids for submissions when the grader is root: one fresh id per submission."""

    def __init__(self, base: int) -> None:
        self._next, self._lock = base, threading.Lock()

    def take(self) -> int:
        with self._lock:
            uid, self._next = self._next, self._next + 1
            return uid


@dataclass
class Box:
    """One submission's throw-away folders, and the user its processes run as (None: the grader's)."""

    root: Path
    uid: int | None

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    @property
    def run(self) -> Path:
        return self.root / "run"

    def env(self, extra: dict[str, str]) -> dict[str, str]:
        """The complete environment of the submission's worker and kernel."""
        bin_dir = str(Path(sys.executable).parent)
        env = {k: os.environ[k] for k in PASSTHROUGH if k in os.environ}
        env.setdefault("LANG", "C.UTF-8")
        env.setdefault("OMP_NUM_THREADS", "1")  # a class graded -j N at once must not oversubscribe the CPU
        home = str(self.home)
        env.update(
            PATH=f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
            HOME=home,
            USER="student",
            LOGNAME="student",
            IPYTHONDIR=f"{home}/.ipython",
            JUPYTER_CONFIG_DIR=f"{home}/.jupyter",
            JUPYTER_DATA_DIR=f"{home}/.local/share/jupyter",
            JUPYTER_RUNTIME_DIR=f"{home}/.local/share/jupyter/runtime",
            MPLCONFIGDIR=f"{home}/.config/matplotlib",
            XDG_CACHE_HOME=f"{home}/.cache",
            TMPDIR=str(self.tmp),
            TMP=str(self.tmp),
            TEMP=str(self.tmp),
            PYTHONNOUSERSITE="1",
            PYTHONIOENCODING="utf-8",
            PYTHONDONTWRITEBYTECODE="1",
        )
        env.update(extra)
        return env


def make_box(parent: Path, uid: int | None) -> Box:
    """A fresh, empty `Box` under ``parent`` (the grader's private temporary folder)."""
    root = parent / secrets.token_hex(8)
    box = Box(root, uid)
    for folder in (root, box.work, box.home, box.tmp, box.run):
        folder.mkdir(mode=0o700)
    if uid is not None:
        for folder in (root, box.work, box.home, box.tmp, box.run):
            os.chown(folder, uid, uid)
    return box


def chown_tree(path: Path, uid: int) -> None:
    """Give ``path`` and everything below it to ``uid`` (root mode: the copy belongs to the submission)."""
    for dirpath, dirnames, filenames in os.walk(path):
        for name in [*dirnames, *filenames]:
            with contextlib.suppress(OSError):
                os.lchown(os.path.join(dirpath, name), uid, uid)
    with contextlib.suppress(OSError):
        os.lchown(path, uid, uid)


def remove_box(box: Box) -> None:
    shutil.rmtree(box.root, ignore_errors=True)


def preexec(limits: Limits, uid: int | None):
    """The function run in the forked child before exec: new session, limits, then the submission's user
    (``uid`` None: stay the grader's user, or switch later with ``setpriv`` inside the namespace)."""

    def apply() -> None:
        import resource

        os.setsid()
        pairs = [
            (resource.RLIMIT_AS, limits.memory_mb * MiB),
            (resource.RLIMIT_CPU, limits.cpu_s),
            (resource.RLIMIT_FSIZE, limits.file_mb * MiB),
            (resource.RLIMIT_CORE, 0),
        ]
        if uid is not None:  # per user: only meaningful for a user that runs nothing else
            pairs.append((resource.RLIMIT_NPROC, limits.processes))
        for which, value in pairs:
            if value or which == resource.RLIMIT_CORE:
                with contextlib.suppress(ValueError, OSError):
                    resource.setrlimit(which, (value, value))
        if uid is not None:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)

    return apply


# --- namespaces: what the submission can see ------------------------------------------------------------


def namespace_prefix(uid: int | None) -> list[str]:
    """The ``unshare`` command that puts a submission in a PID namespace of its own, or [] when this
    machine cannot (no util-linux ``unshare``, user namespaces disabled).

    In its own PID namespace a submission sees only its own processes in ``/proc``: not the grader, not
    the instructor's shell, so no command line or working directory there names the submissions folder;
    and when the worker (process 1 of the namespace) ends, the kernel ends every process left in it,
    detached or not. In root mode ``setpriv`` then switches to the submission's user inside.
    """
    unshare = shutil.which("unshare")
    if not unshare or not sys.platform.startswith("linux"):
        return []
    base = [unshare, "--pid", "--fork", "--mount-proc", "--kill-child"]
    if not running_as_root():
        base[1:1] = ["--user", "--map-current-user"]
    if uid is not None:
        setpriv = shutil.which("setpriv")
        if not setpriv:
            return []
        base += [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
    return base


def bwrap_prefix(box: Box, keep: list[str]) -> list[str]:
    """``--sandbox``: the command that runs a submission under bubblewrap, or [] when it is not installed.

    The whole file system is read-only, ``/tmp``, ``/home``, ``/root`` and ``/run`` are empty, only the
    submission's own folder is writable, and the submission has its own PID, IPC and UTS namespaces.
    ``keep``: folders under those empty ones that must stay visible (the Python installation).
    """
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return []
    cmd = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    cmd += ["--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--proc", "/proc"]
    for hidden in ("/tmp", "/home", "/root", "/run"):
        cmd += ["--tmpfs", hidden]
    for path in dict.fromkeys(keep):
        cmd += ["--ro-bind-try", path, path]
    cmd += ["--bind", str(box.root), str(box.root)]
    return [*cmd, "--"]


_NAMESPACES: dict[bool, bool] = {}


def namespaces_work() -> bool:
    """Whether `namespace_prefix` works here (tried once)."""
    key = running_as_root()
    if key not in _NAMESPACES:
        import subprocess

        prefix = namespace_prefix(None)
        ok = False
        if prefix:
            try:
                ok = subprocess.run([*prefix, "true"], capture_output=True, timeout=30).returncode == 0
            except (OSError, subprocess.SubprocessError):
                ok = False
        _NAMESPACES[key] = ok
    return _NAMESPACES[key]


# --- finding and killing processes ----------------------------------------------------------------------


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, uid) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
        ppid = int(data[data.rindex(b")") + 2 :].split()[1])
        return ppid, os.stat(f"/proc/{pid}").st_uid
    except (OSError, ValueError, IndexError):
        return None


def _processes() -> dict[int, tuple[int, int]]:
    table = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                info = _stat(int(entry.name))
                if info is not None:
                    table[int(entry.name)] = info
    return table


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (Linux ``/proc``; empty elsewhere)."""
    table = _processes()
    children: dict[int, list[int]] = {}
    for child, (parent, _) in table.items():
        children.setdefault(parent, []).append(child)
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _kill(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)


def _reap(pids: list[int]) -> None:
    """Collect the exit status of killed processes that are this process's own children (adopted orphans)."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def kill_tree(pid: int, rounds: int = 50) -> int:
    """SIGKILL ``pid`` and all its descendants, again until none is left (a fork bomb keeps forking).
    Returns how many processes were killed."""
    killed: set[int] = set()
    for _ in range(rounds):
        tree = descendants(pid)
        alive = [p for p in tree if p not in killed or _stat(p) is not None]
        if not alive:
            break
        for p in alive:
            with contextlib.suppress(OSError):
                os.kill(p, signal.SIGSTOP)  # stopped processes cannot fork while the rest are killed
        for p in alive:
            _kill(p)
            killed.add(p)
        _reap(alive)
        time.sleep(0.02)
    _kill(pid)
    return len(killed)


def kill_user(uid: int, rounds: int = 50) -> None:
    """SIGKILL every process of ``uid`` (root mode; the user belongs to one submission only)."""
    if uid == 0 or not running_as_root():
        raise ValueError("kill_user is for a submission's own user, as root")
    for _ in range(rounds):
        mine = [pid for pid, (_, owner) in _processes().items() if owner == uid]
        if not mine:
            return
        for pid in mine:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGSTOP)
        for pid in mine:
            _kill(pid)
        _reap(mine)
        time.sleep(0.02)


def kill_adopted(keep: set[int]) -> None:
    """Kill this process's children that it did not start itself (orphans adopted as subreaper)."""
    me = os.getpid()
    for pid, (parent, _) in _processes().items():
        if parent == me and pid not in keep:
            kill_tree(pid)
            _reap([pid])
