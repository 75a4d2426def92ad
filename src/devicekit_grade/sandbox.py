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
import functools
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devicekit.messages import Message
from devicekit_grade.failures import Told
from devicekit_grade.installed import inside

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


def usable_by_others(paths: list[str], folders: list[str] | tuple[str, ...] = ()) -> str:
    """ "" when another user can run this Python (every folder on the way searchable, files readable)
    and import from ``folders`` (each one, every folder below it listable and every file in it readable),
    else the first path that stops it (e.g. an interpreter installed under ``/root``, or a course checkout
    in a private home folder)."""
    import stat as st

    def private(path: str, mode: int) -> bool:
        need = (st.S_IXOTH | st.S_IROTH) if st.S_ISDIR(mode) else st.S_IROTH
        return mode & need != need

    for given in [*paths, *folders]:
        path = Path(os.path.realpath(given))
        for part in reversed(path.parents):
            try:
                if not os.stat(part).st_mode & st.S_IXOTH:
                    return str(part)
            except OSError:
                continue
        try:
            mode = os.stat(path).st_mode
        except OSError:
            continue
        searchable_only = st.S_ISDIR(mode) and given not in folders
        if (not mode & st.S_IXOTH) if searchable_only else private(str(path), mode):
            return str(path)
    for folder in folders:
        for dirpath, dirnames, filenames in os.walk(folder):
            for name in [*dirnames, *filenames]:
                path = os.path.join(dirpath, name)
                try:
                    mode = os.stat(path).st_mode
                except OSError:
                    continue
                if private(path, mode):
                    return path
    return ""


#: Where grader runs on one machine claim their submission user ids (one lock file per id).
UID_LOCKS = Path(os.environ.get("DEVICEKIT_GRADE_UID_LOCKS", "/tmp/devicekit-grade-uids"))
UID_SPAN = 50_000_000


class UidPool:
    """User ids for submissions when the grader is root: one fresh id per submission, never one that
    another grader run on this machine holds (an exclusive ``flock`` on ``UID_LOCKS/<uid>.lock``, kept
    until `release`), nor one that owns a process. Each run starts at a random offset from ``base``."""

    def __init__(self, base: int, locks: Path | None = None) -> None:
        self._base, self._lock = base, threading.Lock()
        self._next = base + secrets.randbelow(UID_SPAN // 1000) * 1000
        self._locks = locks or UID_LOCKS
        self._held: dict[int, int] = {}

    def take(self) -> int:
        import fcntl

        with self._lock:
            self._locks.mkdir(mode=0o700, parents=True, exist_ok=True)
            owners = {owner for _, owner in _processes().values()}
            for _ in range(10_000):
                uid = self._next
                self._next = self._base + (self._next - self._base + 1) % UID_SPAN
                if uid in owners:
                    continue
                path = self._locks / f"{uid}.lock"
                fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    # the lock of a file its holder removed meanwhile (`release`) locks nothing: another run
                    # may already hold the file now at that path
                    if os.stat(path).st_ino != os.fstat(fd).st_ino:
                        raise FileNotFoundError(path)
                except OSError:
                    os.close(fd)
                    continue
                self._held[uid] = fd
                return uid
            raise RuntimeError("no free user id for a submission")

    def holds(self, uid: int) -> bool:
        return uid in self._held

    def release(self, uid: int) -> None:
        with self._lock:
            fd = self._held.pop(uid, None)
        if fd is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._locks / f"{uid}.lock")
            os.close(fd)


@dataclass
class Box:
    """One submission's throw-away folders, and the user its processes run as (None: the grader's)."""

    root: Path
    uid: int | None
    #: where ``uid`` came from: `close` gives it back
    pool: UidPool | None = field(default=None, repr=False)

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


def nproc_limit(limits: Limits, uid: int | None) -> int:
    """The RLIMIT_NPROC value for a submission: ``limits.processes`` for a user of its own; for the
    grader's own user (which runs other processes too) that many more than the user runs now."""
    if not limits.processes:
        return 0
    if uid is not None:
        return limits.processes
    me = os.getuid()
    return limits.processes + sum(1 for _, owner in _processes().values() if owner == me) + _threads_of(me)


def _threads_of(uid: int) -> int:
    """Threads beyond the first of ``uid``'s processes (RLIMIT_NPROC counts threads too)."""
    extra = 0
    for pid, (_, owner) in _processes().items():
        if owner != uid:
            continue
        with contextlib.suppress(OSError):
            extra += max(0, len(os.listdir(f"/proc/{pid}/task")) - 1)
    return extra


def rlimits(limits: Limits, nproc: int) -> list[tuple[int, int]]:
    """The ``(RLIMIT_*, value)`` pairs every process of a submission gets (no core files; 0 = no limit, left
    out); ``nproc``: the `nproc_limit`."""
    import resource

    pairs = [
        (resource.RLIMIT_AS, limits.memory_mb * MiB),
        (resource.RLIMIT_CPU, limits.cpu_s),
        (resource.RLIMIT_FSIZE, limits.file_mb * MiB),
    ]
    if nproc:  # counts the processes of the real user (root is exempt: hence `Watchdog` too)
        pairs.append((resource.RLIMIT_NPROC, nproc))
    return [(which, value) for which, value in pairs if value] + [(resource.RLIMIT_CORE, 0)]


def preexec(limits: Limits, uid: int | None, nproc_for: int | None = None):
    """The function run in the forked child before exec: new session, limits, then the submission's user
    (``uid`` None: stay the grader's user, or switch later with ``setpriv`` inside the namespace).
    ``nproc_for``: the user the process limit is for (``uid``, or the one ``setpriv`` switches to)."""
    pairs = rlimits(limits, nproc_limit(limits, uid if uid is not None else nproc_for))

    def apply() -> None:
        import resource

        os.setsid()
        for which, value in pairs:
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


#: What bubblewrap empties in every sandbox (a fresh tmpfs each): users' files, temporary files, sockets.
EMPTIED = ("/tmp", "/home", "/root", "/run")
#: The size of every tmpfs of a box (MiB), where bubblewrap can set it (`bwrap_sizes`): its ``/dev/shm``
#: holds the shared memory of a lab's worker processes (labs 8 and 11); the emptied and hidden folders hold
#: next to nothing (``TMPDIR`` and ``HOME`` are in the box's folder on disk). Unsized, each is half the
#: machine's memory, which no limit of the box counts (review47).
TMPFS_MB = 512


def bwrap_prefix(box: Box, keep: list[str], hide: list[str] = ()) -> list[str]:
    """The command that runs a submission under bubblewrap, or [] when it is not installed.

    The whole file system is read-only; `EMPTIED` (``/tmp``, ``/home``, ``/root``, ``/run``) are empty,
    and so is every folder in ``hide`` (the solutions, the hidden judges, the submissions, the output
    folder); only the submission's own folder is writable, and the submission has its own PID, IPC, UTS
    and network namespaces (a loopback only). ``keep``: what the kernel must see
    (`devicekit_grade.installed.Needs`: the Python installation, site-packages, package folders), shown
    read-only where an emptied or hidden folder covers it, and only itself: keeping
    ``/home/me/course/src/devicekit`` shows neither ``src``'s other entries nor
    ``/home/me/course/solutions``. A hidden folder inside a kept one is emptied again after it.
    As root, ``setpriv`` then switches to the box's user inside the sandbox.
    """
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return []
    # a network namespace of its own (only a loopback): no connection out of the box or to the machine's
    # other services, and no race with other kernels for the ports a Jupyter kernel binds on 127.0.0.1
    cmd = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    cmd += ["--unshare-net"]
    cmd += ["--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--proc", "/proc"]
    # the machine's /dev/shm is writable by every user and outlives the run: a private one, else it is a
    # channel between submissions and a place to leave files (and fill memory) after the run. Its pages are
    # memory that no limit of the box counts: a tmpfs is half the machine's RAM unless sized (`TMPFS_MB`)
    sized = ["--size", str(TMPFS_MB * MiB)] if bwrap_sizes() else []
    cmd += ["--perms", "1777", *sized, "--tmpfs", "/dev/shm"]
    emptied = list(EMPTIED)
    for folder in emptied:
        cmd += [*sized, "--tmpfs", folder]
    hidden = [h for h in dict.fromkeys(os.path.realpath(h) for h in hide) if os.path.isdir(h)]
    for path in hidden:  # what the read-only root would show
        if not inside(path, emptied):
            cmd += [*sized, "--tmpfs", path]
            emptied.append(path)

    def parents(target: str) -> list[str]:  # folders bwrap would otherwise create unreadable (0700)
        out = []
        for parent in reversed(Path(target).parents):
            text = str(parent)
            if any(text.startswith(e.rstrip("/") + "/") for e in emptied):
                out += ["--dir", text]
        return out

    shown = []
    for path in dict.fromkeys(keep):
        if os.path.exists(path) and inside(path, emptied) and not inside(path, shown):
            cmd += [*parents(path), "--ro-bind", path, path]
            shown.append(path)
    for path in hidden:  # a hidden folder that a kept one shows again
        if inside(path, shown):
            cmd += [*sized, "--tmpfs", path]
    cmd += parents(str(box.root))
    cmd += ["--bind", str(box.root), str(box.root)]
    if box.uid is not None and running_as_root():
        setpriv = shutil.which("setpriv")
        if not setpriv:
            return []
        return [*cmd, "--", setpriv, f"--reuid={box.uid}", f"--regid={box.uid}", "--clear-groups", "--"]
    return [*cmd, "--"]


def bwrap_works() -> bool:
    """Whether bubblewrap is installed and can start a sandbox here (tried once)."""
    bwrap = shutil.which("bwrap")
    return bool(bwrap) and _starts(
        (bwrap, "--die-with-parent", "--unshare-pid", "--unshare-net")
        + ("--ro-bind", "/", "/", "--proc", "/proc")
    )


def bwrap_sizes() -> bool:
    """Whether this bubblewrap can size a tmpfs (``--size``; tried once). The course machine's 0.8.0 can;
    one that rejects the option gets a ``/dev/shm`` of half the machine's memory, as before review47."""
    bwrap = shutil.which("bwrap")
    sized = ("--ro-bind", "/", "/", "--size", str(MiB), "--tmpfs", "/tmp")
    return bool(bwrap) and _starts((bwrap, "--die-with-parent", "--unshare-pid", *sized))


#: What the grader says when it cannot seal submissions off ({why}: which way is closed).
REFUSAL = Message(
    "devicekit-grade will not run submissions here: it can give them neither a user of their own ({why}) "
    "nor a sandbox (bubblewrap is not installed or cannot start). A notebook could then read the "
    "solutions and the hidden checks, and write the grader's files. Do one of these:\n"
    "  * install bubblewrap: `sudo apt install bubblewrap` (Debian/Ubuntu), `sudo dnf install bubblewrap` "
    "(Fedora);\n"
    "  * grade in the container of grading/Dockerfile (see docs/instructors/grading.md);\n"
    "  * run the grader as root with a Python that other users can read (not under /root);\n"
    "  * or, if you trust every submission, pass --trust-submissions.",
    "devicekit-grade 拒绝在这里运行提交的作业：既无法给每份作业一个单独的用户（{why}），"
    "也无法使用沙箱（没有安装 bubblewrap，或它无法启动）。这样 notebook 就能读到参考答案和隐藏检查，"
    "还能改写评分器的文件。请任选一种做法：\n"
    "  * 安装 bubblewrap：`sudo apt install bubblewrap`（Debian/Ubuntu）、`sudo dnf install bubblewrap`"
    "（Fedora）；\n"
    "  * 在 grading/Dockerfile 构建的容器里评分（见 docs/instructors/grading.zh.md）；\n"
    "  * 以 root 运行评分器，并使用其他用户可读的 Python（不要装在 /root 下）；\n"
    "  * 如果你信任每一份提交，加上 --trust-submissions。",
)


#: What each isolation mode gives a submission: the report's note.
MODES = {
    "user": Message(
        "Isolation: a user of its own per notebook (and its own PID namespace where the machine allows): it "
        "cannot write the grader's files or read files other users cannot read.",
        "隔离方式：每份 notebook 使用单独的用户（机器允许时还有独立的 PID 命名空间）：它不能改写评分器的"
        "文件，也读不到其他用户读不到的文件。",
    ),
    "bwrap": Message(
        "Isolation: bubblewrap per notebook: read-only system, empty /tmp, /home, /root, no view of the "
        "solutions, hidden checks, submissions or output folder, its own PID namespace, no network"
        " (as root: and a user of its own).",
        "隔离方式：每份 notebook 运行在 bubblewrap 沙箱中：系统只读，/tmp、/home、/root 为空，"
        "看不到参考答案、隐藏检查、其他提交和输出目录，有独立的 PID 命名空间，不能联网"
        "（以 root 运行时还使用单独的用户）。",
    ),
    "none": Message(
        "Isolation: none (--trust-submissions): notebooks ran as the grader's own user and could read "
        "what it can read; the resource limits still held.",
        "隔离方式：无（--trust-submissions）：notebook 以评分器自己的用户运行，能读到评分器能读的文件；"
        "资源限制仍然有效。",
    ),
}


class Refused(RuntimeError):
    """No isolation is available and the instructor did not pass ``--trust-submissions``."""

    def __init__(self, why_en: str, why_zh: str) -> None:
        self.message = Message(REFUSAL.en.format(why=why_en), REFUSAL.zh.format(why=why_zh))
        self.en, self.zh = self.message.en, self.message.zh
        super().__init__(self.en + "\n\n" + self.zh)


class NoSandbox(Told, RuntimeError):
    """``--isolation bwrap`` (``--sandbox``) was asked for and bubblewrap cannot start here."""


def choose_isolation(
    requested: str, as_root: bool, python_private: str, bwrap_ok: bool, trust: bool
) -> tuple[str, bool]:
    """(mode, a user per submission) for ``requested`` (``auto``, ``user``, ``bwrap``, ``none``).

    ``auto``: a user of its own when the grader is root and other users can run its Python; else
    bubblewrap (as root: bubblewrap *and* a user of its own inside); else `Refused`, unless ``trust``.
    """
    if requested == "none":
        if not trust:
            raise Refused("--isolation none was asked for", "指定了 --isolation none")
        return "none", False
    if requested in ("auto", "user") and as_root and not python_private:
        return "user", True
    if requested in ("auto", "bwrap") and bwrap_ok:
        return "bwrap", as_root
    if requested == "bwrap":
        raise NoSandbox(
            Message(
                "--sandbox needs bubblewrap (bwrap), which is not installed or cannot start here: "
                "`sudo apt install bubblewrap` (Debian/Ubuntu), or grade in a container (see the grading "
                "guide)",
                "--sandbox 需要 bubblewrap（bwrap），但这里没有安装或无法启动：请运行 "
                "`sudo apt install bubblewrap`（Debian/Ubuntu），或在容器里评分（见评分指南）",
            )
        )
    if trust:
        return "none", False
    if not as_root:
        why = ("the grader is not root", "评分器不是以 root 运行的")
    elif python_private:
        why = (f"{python_private} is private: other users cannot run this Python or read the packages "
               "its kernels import",
               f"{python_private} 是私有的：其他用户无法运行这个 Python，或读不到内核要导入的包")  # fmt: skip
    else:
        why = ("--isolation user needs root", "--isolation user 需要 root")
    raise Refused(*why)


class Watchdog(threading.Thread):
    """Counts a submission's processes and threads every half second and kills them all when there are
    more than ``limit`` (root is exempt from RLIMIT_NPROC, and the grader's own user runs other processes:
    this holds the limit in every mode). ``tripped`` says whether it had to."""

    def __init__(self, pid: int, limit: int, uid: int | None = None) -> None:
        super().__init__(daemon=True)
        self.pid, self.limit, self.uid = pid, limit, uid
        self.tripped = False
        self._stop_event = threading.Event()

    def count(self) -> int:
        pids = descendants(self.pid)
        if self.uid is not None:
            pids = list({*pids, *(p for p, (_, owner) in _processes().items() if owner == self.uid)})
        total = 0
        for pid in pids:
            try:
                total += len(os.listdir(f"/proc/{pid}/task"))
            except OSError:
                continue
        return total

    def run(self) -> None:
        while not self._stop_event.wait(0.5):
            if self.limit and self.count() > self.limit:
                self.tripped = True
                if self.uid is not None and running_as_root():
                    kill_user(self.uid)
                kill_tree(self.pid)
                return

    def stop(self) -> None:
        self._stop_event.set()


@functools.cache
def _starts(cmd: tuple[str, ...]) -> bool:
    """Whether ``cmd`` (a wrapper around ``true``) runs and succeeds here; tried once per command."""
    try:
        return bool(cmd) and subprocess.run([*cmd, "true"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def namespaces_work() -> bool:
    """Whether `namespace_prefix` works here (tried once)."""
    return _starts(tuple(namespace_prefix(None)))


# --- finding and killing processes ----------------------------------------------------------------------


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, real uid) of a process, or None when it is gone. The uid is read from ``status``, not
    taken from the owner of ``/proc/<pid>``, which is root for a process that made itself non-dumpable
    (every grading kernel does)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            fields = dict(line.split(b":", 1) for line in handle.read().splitlines() if b":" in line)
        return int(fields[b"PPid"]), int(fields[b"Uid"].split()[0])
    except (OSError, ValueError, KeyError, IndexError):
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


def _kill_all_of(find: Callable[[], list[int]], rounds: int = 50) -> None:
    """SIGKILL the processes ``find()`` lists, again until none is left (a fork bomb keeps forking): all of
    them are stopped first, since stopped processes cannot fork while the rest are killed."""
    for _ in range(rounds):
        alive = find()
        if not alive:
            return
        for pid in alive:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGSTOP)
        for pid in alive:
            _kill(pid)
        for pid in alive:  # collect the exit status of this process's own children (adopted orphans)
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
        time.sleep(0.02)


def kill_tree(pid: int) -> None:
    """SIGKILL ``pid`` and all its descendants, detached or not."""
    _kill_all_of(lambda: descendants(pid))
    _kill(pid)


def kill_user(uid: int) -> None:
    """SIGKILL every process of ``uid`` (root mode; the user belongs to one submission only)."""
    if uid == 0 or not running_as_root():
        raise ValueError("kill_user is for a submission's own user, as root")
    _kill_all_of(lambda: [pid for pid, (_, owner) in _processes().items() if owner == uid])


# --- the grading loop's view: choose once, then open, start and close a box per submission -----------------


@dataclass(frozen=True)
class Isolation:
    """How this run seals every submission off, chosen once (`choose`)."""

    mode: str  # "user", "bwrap" or "none"
    as_root: bool  # a user of its own per submission
    namespaces: bool  # a PID namespace of its own ("user" and "none" modes; bubblewrap always has one)
    keep: tuple[str, ...] = ()  # what a bubblewrap sandbox shows of the instructor's files
    hide: tuple[str, ...] = ()  # folders it empties: solutions, hidden judges, submissions, the output
    warnings: tuple[Message, ...] = ()


def choose(
    requested: str,
    *,
    trust: bool,
    same_user: bool,
    keep: list[str],
    hide: list[str],
    private: Callable[[], str],
) -> Isolation:
    """The `Isolation` for ``requested`` (``auto``, ``user``, ``bwrap``, ``none``) on this machine
    (`choose_isolation`); ``private()``: the first path that other users cannot read, "" when none
    (asked only as root). Raises `Refused` or `NoSandbox`."""
    as_root = running_as_root() and not same_user
    bwrap_ok = requested in ("auto", "bwrap") and bwrap_works()
    mode, per_user = choose_isolation(requested, as_root, private() if as_root else "", bwrap_ok, trust)
    namespaces = mode in ("user", "none") and namespaces_work()
    warnings = []
    if mode == "none":
        warnings.append(
            Message(
                "--trust-submissions: notebooks run as the grader's own user, without a sandbox; they can "
                "read what this user can read (solutions, hidden checks, other submissions)"
                + ("; as root, the process limit is held by the grader's watchdog only" if as_root else ""),
                "--trust-submissions：notebook 以评分器自己的用户运行，没有沙箱，能读到这个用户能读的一切"
                "（参考答案、隐藏检查、其他提交）"
                + ("；以 root 运行时，进程数上限只由评分器的监视线程保证" if as_root else ""),
            )
        )
    if mode in ("user", "none") and not namespaces:
        warnings.append(
            Message(
                "this machine cannot give each notebook a PID namespace of its own (util-linux unshare, user "
                "namespaces): notebooks can see the grader's processes in /proc",
                "这台机器无法给每份 notebook 单独的 PID 命名空间（util-linux 的 unshare、用户命名空间）："
                "notebook 能在 /proc 中看到评分器的进程",
            )
        )
    return Isolation(mode, per_user, namespaces, tuple(keep), tuple(hide), tuple(warnings))


def open_box(isolation: Isolation, parent: Path, uids: UidPool) -> Box:
    """A fresh `Box` under ``parent``, with a user of its own when the isolation gives one; `close` it."""
    uid = uids.take() if isolation.as_root else None
    box = make_box(parent, uid)
    box.pool = uids if uid is not None else None
    return box


def wrap(isolation: Isolation, box: Box, cmd: list[str]) -> tuple[list[str], int | None]:
    """``cmd`` wrapped for the isolation, and the user to switch to before exec (None: the wrapper switches,
    or the grader's own user)."""
    if isolation.mode == "bwrap":
        prefix = bwrap_prefix(box, list(isolation.keep), list(isolation.hide))
        if not prefix:
            raise RuntimeError("bubblewrap (or setpriv) disappeared during the run")
        return [*prefix, *cmd], None  # as root, setpriv switches to the box's user inside
    if isolation.namespaces:
        return [*namespace_prefix(box.uid), *cmd], None
    return cmd, box.uid


@dataclass
class Running:
    """A process started in a box (`start`), and the watchdog that counts its processes."""

    proc: subprocess.Popen
    watchdog: Watchdog  # ``tripped``: it stopped them for starting more processes than the limit allows


_RUNNING: dict[int, tuple[subprocess.Popen, int | None]] = {}
_RUNNING_LOCK = threading.Lock()
_START_LOCK = threading.Lock()


def start(
    isolation: Isolation,
    box: Box,
    cmd: list[str],
    env: dict[str, str],
    limits: Limits,
    output: Any,
    keep: tuple[int, ...] = (),
) -> Running:
    """Start ``cmd`` in ``box``: wrapped for the isolation, in a new session, with the limits and the box's
    user, its output to the file object ``output``, the descriptors ``keep`` inherited, watched by a
    `Watchdog`. `close` ends it."""
    if box.uid is not None:
        chown_tree(box.work, box.uid)
    cmd, drop = wrap(isolation, box, cmd)
    with _START_LOCK:  # no fork while another thread changes the set of running processes
        proc = subprocess.Popen(
            cmd, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=box.run,
            preexec_fn=preexec(limits, drop, box.uid), pass_fds=keep,
        )  # fmt: skip
        with _RUNNING_LOCK:
            _RUNNING[proc.pid] = (proc, box.uid)
    watchdog = Watchdog(proc.pid, limits.processes, box.uid)
    watchdog.start()
    return Running(proc, watchdog)


def _stop(proc: subprocess.Popen, uid: int | None) -> None:
    """Kill a started process and everything it started, detached or not."""
    if uid is not None:
        kill_user(uid)
    kill_tree(proc.pid)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=30)


def stop(box: Box, running: Running) -> None:
    """End what runs in ``box``: its watchdog, and every process it started, detached or not. The box's
    folders stay until `close` (the caller reads what the run wrote there)."""
    running.watchdog.stop()
    _stop(running.proc, box.uid)
    with _RUNNING_LOCK:
        _RUNNING.pop(running.proc.pid, None)


def close(box: Box, running: Running | None = None) -> None:
    """`stop` what still runs in ``box``, remove its folders and give its user back."""
    try:
        if running is not None and running.proc.pid in _RUNNING:
            stop(box, running)
    finally:
        shutil.rmtree(box.root, ignore_errors=True)
        if box.uid is not None and box.pool is not None:
            box.pool.release(box.uid)


def kill_all() -> None:
    """Kill every submission still running (the grader is being interrupted)."""
    with _RUNNING_LOCK:
        running = list(_RUNNING.values())
    for proc, uid in running:
        _stop(proc, uid)
