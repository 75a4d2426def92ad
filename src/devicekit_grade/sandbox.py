"""Seal one submission off with bubblewrap: its own throw-away folders, a clean environment, resource
limits, and every process it started killed at the end. One code path, as root or not.

What a submission's processes (worker, kernel, anything they start) get:

* a throw-away root folder holding ``work/`` (the notebook copy and its data files; the kernel's working
  directory), ``home/`` (``HOME``, ``IPYTHONDIR``, Jupyter's folders) and ``tmp/`` (``TMPDIR``). An IPython
  startup file one submission writes dies with its folder.
* an environment built from scratch: no variable of the grader's environment except an allow-list
  (``PATH``, locale, GPU selection), so nothing there names the submissions or the output folder.
* resource limits (`Limits`): address space, CPU time, number of processes, size of a written file; a
  `Watchdog` holds the process limit where ``RLIMIT_NPROC`` does not (root, a user shared by several runs);
  where the run has a cgroup (`devicekit_grade.cgroups`), one per box caps the memory and the number of
  processes of all its processes together (`holds` says which limits hold per box here).
* bubblewrap (`bwrap_prefix`): a read-only system, empty ``/tmp``, ``/home``, ``/root``, ``/run`` and a
  ``/dev/shm`` of its own; no view of the solutions, hidden judges, submissions, roster, ``--checks``,
  output folder or the run's own folder; its own network (a loopback only) and PID, IPC and UTS
  namespaces, so it sees no process of the grader's and, when it ends, the kernel ends every process left
  in it. As root, the sandbox switches to
  `SUBMISSION_UID` first: root inside bubblewrap keeps every capability (it could mount over what is
  hidden), and root without them still owns the machine's device files. A second bubblewrap, as that
  user, then runs the command where it may make no user namespace (`INNER`).

Only with ``--trust-submissions`` (`choose`) may a run go without bubblewrap (``none``): plain processes in
a session of their own, the grader a child subreaper (Linux ``prctl``) so that it still finds and kills
what a notebook detaches (``setsid``, a double fork); the limits still hold.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import itertools
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devicekit.messages import Message
from devicekit_grade import cgroups
from devicekit_grade.failures import Told
from devicekit_grade.installed import inside

PR_SET_CHILD_SUBREAPER = 36
MiB = 1024 * 1024
#: The user a sandbox switches to when the grader runs as root: no login, no files anywhere, the same for
#: every submission (each sees only its own folder and processes, so they need no user apart).
SUBMISSION_UID = 1_990_000_000

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
    processes: int = 512  # processes and threads of a submission (RLIMIT_NPROC, the `Watchdog`, a cgroup)
    file_mb: int = 256  # largest file a process may write (RLIMIT_FSIZE)
    box_memory_mb: int = 8192  # memory of all the box's processes together (a cgroup, where there is one)
    box_disk_mb: int = 2048  # what the box's own folder may hold on disk (the `Watchdog` measures it)


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


def running_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def as_submission() -> list[str] | None:
    """What switches a sandbox to `SUBMISSION_UID` (``setpriv``) when the grader is root, [] otherwise;
    None when that is needed and ``setpriv`` (util-linux) is missing."""
    if not running_as_root():
        return []
    setpriv = shutil.which("setpriv")
    if not setpriv:
        return None
    uid = SUBMISSION_UID
    return [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]


@dataclass
class Box:
    """One submission's throw-away folders."""

    root: Path

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


_BOX_NUMBERS = itertools.count(1)


def open_box(parent: Path) -> Box:
    """A fresh, empty `Box` under ``parent`` (the grader's private temporary folder); `close` it. As root,
    its folders belong to `SUBMISSION_UID`."""
    box = Box(parent / f"b{next(_BOX_NUMBERS)}")  # short: the answer socket's path is at most 107 bytes
    for folder in (box.root, box.work, box.home, box.tmp, box.run):
        folder.mkdir(mode=0o700)
        if running_as_root():
            os.chown(folder, SUBMISSION_UID, SUBMISSION_UID)
    return box


def _give(path: Path) -> None:
    """As root: give everything below ``path`` to `SUBMISSION_UID` (the submission may change its copy)."""
    for dirpath, dirnames, filenames in os.walk(path):
        for name in [*dirnames, *filenames]:
            with contextlib.suppress(OSError):
                os.lchown(os.path.join(dirpath, name), SUBMISSION_UID, SUBMISSION_UID)


def nproc_limit(limits: Limits) -> int:
    """The RLIMIT_NPROC value for a submission: ``limits.processes`` more than the processes and threads
    that its user (`SUBMISSION_UID` as root, else the grader's own) runs now (other submissions, the
    grader, other runs). 0: no limit."""
    if not limits.processes:
        return 0
    user = SUBMISSION_UID if running_as_root() else os.getuid()
    mine = [pid for pid, (_, owner) in _processes().items() if owner == user]
    return limits.processes + sum(_tasks(pid) for pid in mine)


def _tasks(pid: int) -> int:
    """The threads of process ``pid`` (RLIMIT_NPROC counts threads too); 0 when it is gone."""
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


def rlimits(limits: Limits, nproc: int) -> list[tuple[int, int]]:
    """The ``(RLIMIT_*, value)`` pairs every process of a submission gets (no core files; 0 = no limit, left
    out); ``nproc``: the `nproc_limit`."""
    import resource

    pairs = [
        (resource.RLIMIT_AS, limits.memory_mb * MiB),
        (resource.RLIMIT_CPU, limits.cpu_s),
        (resource.RLIMIT_FSIZE, limits.file_mb * MiB),
        (resource.RLIMIT_NPROC, nproc),  # root is exempt: hence `Watchdog` too
    ]
    return [(which, value) for which, value in pairs if value] + [(resource.RLIMIT_CORE, 0)]


def preexec(limits: Limits, group: tuple[Path, ...] = ()):
    """The function run in the forked child before exec: into the box's cgroup ``group`` (if any: then all
    that the child starts is inside it), a new session, then the limits."""
    pairs = rlimits(limits, nproc_limit(limits))

    def apply() -> None:
        import resource

        cgroups.join(group)
        os.setsid()
        for which, value in pairs:
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(which, (value, value))

    return apply


# --- bubblewrap: what the submission can see ------------------------------------------------------------


#: What bubblewrap empties in every sandbox (a fresh tmpfs each): users' files, temporary files, sockets.
EMPTIED = ("/tmp", "/home", "/root", "/run")
#: The size of every tmpfs of a box (MiB), where bubblewrap can set it (`bwrap_sizes`): its ``/dev/shm``
#: holds the shared memory of a lab's worker processes (labs 8 and 11); the emptied and hidden folders hold
#: next to nothing (``TMPDIR`` and ``HOME`` are in the box's folder on disk). Unsized, each is half the
#: machine's memory, which no limit of the box counts (review47).
TMPFS_MB = 512


def bwrap_prefix(box: Box, keep: list[str], hide: list[str] = ()) -> list[str]:
    """The command that runs a submission under bubblewrap, or [] when it is not installed (nor, as root,
    ``setpriv``).

    The whole file system is read-only; `EMPTIED` (``/tmp``, ``/home``, ``/root``, ``/run``) are empty,
    and so is every folder in ``hide`` (the solutions, the hidden judges, the submissions, the output
    folder); only the submission's own folder is writable, and the submission has its own PID, IPC, UTS
    and network namespaces (a loopback only). ``keep``: what the kernel must see
    (`devicekit_grade.installed.Needs`: the Python installation, site-packages, package folders), shown
    read-only where an emptied or hidden folder covers it, and only itself: keeping
    ``/home/me/course/src/devicekit`` shows neither ``src``'s other entries nor
    ``/home/me/course/solutions``. A hidden folder inside a kept one is emptied again after it.
    As root, ``setpriv`` then switches to `SUBMISSION_UID` inside the sandbox (`as_submission`).
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
    switch = as_submission()
    return [*cmd, "--", *switch, *no_userns()] if switch is not None else []


#: A second bubblewrap inside the box, started as the box's user, so that nothing in the box can make a
#: user namespace (review47, hole 3: a tmpfs of its own, no --size; mounts): ``--disable-userns`` needs a
#: user namespace made by bubblewrap, and one made by bubblewrap as root would map the box's user to root.
#: It shows the whole box as it is (``--dev-bind / /``).
INNER = ("--unshare-user", "--disable-userns", "--dev-bind", "/", "/", "--")


def no_userns() -> list[str]:
    """The inner bubblewrap (`INNER`) where it works here (`bwrap_disables_userns`), else []."""
    return [shutil.which("bwrap") or "bwrap", *INNER] if bwrap_disables_userns() else []


@functools.cache
def bwrap_works() -> bool:
    """Whether bubblewrap 0.5 or later (``--perms``) starts a sandbox here, switching to `SUBMISSION_UID`
    as root (tried once)."""
    bwrap, switch = shutil.which("bwrap"), as_submission()
    if not bwrap or switch is None:
        return False
    cmd = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-net", "--ro-bind", "/", "/"]
    cmd += ["--dev-bind", "/dev", "/dev", "--proc", "/proc", "--perms", "1777", "--tmpfs", "/dev/shm"]
    cmd += ["--", *switch, "true"]
    try:
        return subprocess.run(cmd, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@functools.cache
def bwrap_disables_userns() -> bool:
    """Whether a box's user can start the inner bubblewrap (`INNER`: 0.8 or later, user namespaces
    allowed) inside a box, where it then makes none (tried once)."""
    bwrap, switch = shutil.which("bwrap"), as_submission()
    if not bwrap or switch is None:
        return False
    cmd = [bwrap, "--die-with-parent", "--unshare-pid", "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev"]
    cmd += ["--proc", "/proc", "--", *switch, bwrap, *INNER]
    cmd += ["sh", "-c", "! unshare --user true 2>/dev/null"] if shutil.which("unshare") else ["true"]
    try:
        return subprocess.run(cmd, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@functools.cache
def bwrap_sizes() -> bool:
    """Whether this bubblewrap can size a tmpfs (``--size``; tried once). The course machine's 0.8.0 can;
    one that rejects the option gets a ``/dev/shm`` of half the machine's memory, as before review47."""
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return False
    cmd = [bwrap, "--die-with-parent", "--unshare-pid", "--ro-bind", "/", "/", "--size", str(MiB)]
    try:
        return (
            subprocess.run([*cmd, "--tmpfs", "/tmp", "true"], capture_output=True, timeout=30).returncode == 0
        )
    except (OSError, subprocess.SubprocessError):
        return False


# --- the grading loop's view: choose once, then open, start and close a box per submission -----------------

#: What the grader says when it cannot seal submissions off ({why}: what is missing).
REFUSAL = Message(
    "devicekit-grade will not run submissions here: {why}. Without bubblewrap a notebook could read the "
    "solutions, the hidden checks and the other submissions, and write the grader's files. Do one of "
    "these:\n"
    "  * install bubblewrap 0.5 or later: `sudo apt install bubblewrap` (Debian/Ubuntu), "
    "`sudo dnf install bubblewrap` (Fedora);\n"
    "  * grade in the container of grading/Dockerfile (see docs/instructors/grading.md);\n"
    "  * or, if you trust every submission, pass --trust-submissions (without --sandbox or --isolation "
    "bwrap, which insist on bubblewrap).",
    "devicekit-grade 拒绝在这里运行提交的作业：{why}。没有 bubblewrap，notebook 就能读到参考答案、"
    "隐藏检查和其他提交，还能改写评分器的文件。请任选一种做法：\n"
    "  * 安装 0.5 或更新版本的 bubblewrap：`sudo apt install bubblewrap`（Debian/Ubuntu）、"
    "`sudo dnf install bubblewrap`（Fedora）；\n"
    "  * 在 grading/Dockerfile 构建的容器里评分（见 docs/instructors/grading.zh.md）；\n"
    "  * 如果你信任每一份提交，加上 --trust-submissions（同时不要用 --sandbox 或 --isolation bwrap，"
    "它们只接受 bubblewrap）。",
)
#: What each isolation mode gives a submission: the report's note.
MODES = {
    "bwrap": Message(
        "Isolation: bubblewrap per notebook: read-only system, empty /tmp, /home, /root, no view of the "
        "solutions, hidden checks, submissions or output folder, its own PID namespace, no network"
        " (as root: and a user without privileges).",
        "隔离方式：每个 notebook 运行在 bubblewrap 沙箱中：系统只读，/tmp、/home、/root 为空，"
        "看不到参考答案、隐藏检查、其他提交和输出目录，有独立的 PID 命名空间，不能联网"
        "（以 root 运行时还会切换到一个没有特权的用户）。",
    ),
    "none": Message(
        "Isolation: none (--trust-submissions): notebooks ran as the grader's own user and could read "
        "what it can read; the resource limits still held.",
        "隔离方式：无（--trust-submissions）：notebook 以评分器自己的用户运行，能读到评分器能读的文件；"
        "资源限制仍然有效。",
    ),
}


class Refused(Told, RuntimeError):
    """Bubblewrap cannot be used, and the instructor did not pass ``--trust-submissions`` (or asked for
    ``--isolation bwrap``, or for ``none`` without it): `REFUSAL`."""

    def __init__(self, why: Message) -> None:
        super().__init__(Message(REFUSAL.en.format(why=why.en), REFUSAL.zh.format(why=why.zh)))


@dataclass(frozen=True)
class Isolation:
    """How this run seals every submission off, chosen once (`choose`)."""

    mode: str  # "bwrap" or "none"
    keep: tuple[str, ...] = ()  # what a bubblewrap sandbox shows of the instructor's files
    hide: tuple[str, ...] = ()  # folders it empties: solutions, hidden judges, submissions, the output, …
    warnings: tuple[Message, ...] = ()
    #: the run's cgroup (`devicekit_grade.cgroups.choose`, made by the run), or why it has none
    cgroup: cgroups.Run | Message | None = None


def release(isolation: Isolation) -> None:
    """Remove the run's cgroup and every box cgroup left in it (the run is over, or interrupted)."""
    if isinstance(isolation.cgroup, cgroups.Run):
        cgroups.close(isolation.cgroup)


def choose(requested: str, *, trust: bool, keep: list[str], hide: list[str]) -> Isolation:
    """The `Isolation` for ``requested`` (``auto``, ``bwrap``, ``none``): bubblewrap when it works here;
    without it (or for ``none``) nothing, only with ``trust``. Raises `Refused`."""
    if requested == "none" and not trust:
        raise Refused(
            Message(
                "--isolation none was asked for without --trust-submissions",
                "指定了 --isolation none，却没有加 --trust-submissions",
            )
        )
    if requested != "none" and bwrap_works():
        return Isolation("bwrap", tuple(keep), tuple(hide))
    root = running_as_root()
    if requested == "bwrap" or not trust:
        raise Refused(
            Message(
                "bubblewrap (bwrap) is not installed or cannot start"
                + (" (as root it also needs setpriv, from util-linux)" if root else ""),
                "没有安装 bubblewrap（bwrap），或它无法启动"
                + ("（以 root 运行时还需要 util-linux 的 setpriv）" if root else ""),
            )
        )
    warning = Message(
        "--trust-submissions: notebooks run as the grader's own user, without a sandbox; they can read "
        "what this user can read (solutions, hidden checks, other submissions)"
        + ("; as root, the process limit is held by the grader's watchdog only" if root else ""),
        "--trust-submissions：notebook 以评分器自己的用户运行，没有沙箱，能读到这个用户能读的一切"
        "（参考答案、隐藏检查、其他提交）"
        + ("；以 root 运行时，进程数上限只由评分器的监视线程保证" if root else ""),
    )
    return Isolation("none", warnings=(warning,))


def holds(isolation: Isolation, limits: Limits) -> Message:
    """What holds per box and what per process on this machine (printed before grading, and in the report):
    the run's cgroup or why it has none, and whether a box can make user namespaces."""
    mb = {k: f"{v} MiB" if v else "-" for k, v in (("a", limits.memory_mb), ("b", limits.box_memory_mb))}
    each = Message(
        f"per process: address space {mb['a']}, CPU {limits.cpu_s} s, largest file {limits.file_mb} MiB",
        f"每个进程：地址空间 {mb['a']}，CPU 时间 {limits.cpu_s} 秒，单个文件最大 {limits.file_mb} MiB",
    )
    run = isolation.cgroup
    if isinstance(run, cgroups.Run):
        said = Message(
            f"Limits per notebook, all its processes together ({cgroups.describe(run).en}): memory {mb['b']} "
            f"(shared memory, memfds and tmpfs included, no swap beyond it), {limits.processes} processes "
            f"and threads; {each.en}.",
            f"每个 notebook（其所有进程合计，{cgroups.describe(run).zh}）：内存 {mb['b']}"
            "（含共享内存、memfd 和 tmpfs，不能借助交换空间超出），"
            f"进程和线程 {limits.processes} 个；{each.zh}。",
        )
    else:
        why = run if isinstance(run, Message) else Message("not tried", "未尝试")
        said = Message(
            f"No cgroup per notebook here ({why.en}): the limits hold per process only ({each.en}; "
            "processes by RLIMIT_NPROC and the watchdog), so a notebook's processes together, and its shared "
            "memory, may hold more memory. For limits per notebook, run the grader as root or in a systemd "
            "user session (see the grading guide).",
            f"这里没有给每个 notebook 建立 cgroup（{why.zh}）：限制只对单个进程有效（{each.zh}；"
            "进程数由 RLIMIT_NPROC 和监视线程限制），因此一个 notebook 的所有进程合计、以及它的共享内存，"
            "可以占用更多内存。要按 notebook 限制，请以 root 运行评分器，或在 systemd 用户会话中运行"
            "（见评分指南）。",
        )
    if limits.box_disk_mb:
        said += Message(
            f" Files a notebook writes: {limits.box_disk_mb} MiB in all on disk (checked every half second).",
            f"notebook 写入的文件：在磁盘上合计最多 {limits.box_disk_mb} MiB（每半秒检查一次）。",
        )
    if isolation.mode != "bwrap":
        return said
    if bwrap_disables_userns():
        return said + Message(
            " A notebook cannot make user namespaces (bubblewrap --disable-userns).",
            "notebook 不能创建用户命名空间（bubblewrap --disable-userns）。",
        )
    return said + Message(
        " A notebook can make user namespaces of its own, and mount a tmpfs there that no limit counts: this "
        "bubblewrap cannot stop it (--disable-userns needs bubblewrap 0.8 and user namespaces for the "
        "notebook's user).",
        "notebook 可以创建自己的用户命名空间，并在其中挂载不受任何限制的 tmpfs：这里的 bubblewrap 无法阻止"
        "（--disable-userns 需要 bubblewrap 0.8，并且 notebook 所用的用户可以创建用户命名空间）。",
    )


class Watchdog(threading.Thread):
    """Every half second, counts a submission's processes and threads and measures its folder on disk, and
    kills them all when there are more than ``limit`` processes (root is exempt from RLIMIT_NPROC, and the
    user a submission runs as may run other processes: this holds the limit in every case) or the folder
    holds more than ``disk`` bytes, with the files its processes keep open after removing them (RLIMIT_FSIZE
    caps one file, not how many; review47, hole 3; review48, hole 1). ``tripped``
    says which limit it had to hold: ``"processes"``, ``"disk"`` or ``None``."""

    def __init__(self, pid: int, limit: int, folder: Path | None = None, disk: int = 0) -> None:
        super().__init__(daemon=True)
        self.pid, self.limit, self.folder, self.disk = pid, limit, folder, disk
        self.tripped: str | None = None
        self._stop_event = threading.Event()

    def count(self) -> int:
        return sum(_tasks(pid) for pid in descendants(self.pid))

    def used(self, folder: Path) -> int:
        """Bytes on disk below ``folder``, plus the files on its file system that the box's processes keep
        open after removing them (still allocated, but out of the folder's walk; review48, hole 1)."""
        walked = on_disk(folder, self.disk)
        if walked > self.disk:
            return walked
        try:
            device = os.stat(folder).st_dev
        except OSError:  # the folder is gone: the box is ending
            return walked
        return walked + unlinked_open([self.pid, *descendants(self.pid)], device, self.disk)

    def run(self) -> None:
        while not self._stop_event.wait(0.5):
            if self.limit and self.count() > self.limit:
                self.tripped = "processes"
            elif self.disk and self.folder is not None and self.used(self.folder) > self.disk:
                self.tripped = "disk"
            if self.tripped:
                kill_tree(self.pid)
                return

    def stop(self) -> None:
        self._stop_event.set()


#: A box's folder with more entries than this counts as over its disk limit: walking it would take long.
MAX_ENTRIES = 100_000


def on_disk(folder: Path, limit: int) -> int:
    """Bytes the files below ``folder`` take on disk (allocated blocks: a sparse file counts what it holds;
    links are not followed), counting up to just past ``limit``; past `MAX_ENTRIES` entries, or where a folder
    cannot be listed, ``limit + 1``."""
    total, entries, stack = 0, 0, [str(folder)]
    while stack and total <= limit:
        try:
            with os.scandir(stack.pop()) as found:
                for entry in found:
                    entries += 1
                    if entries > MAX_ENTRIES:
                        return limit + 1
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    else:
                        with contextlib.suppress(OSError):
                            total += entry.stat(follow_symlinks=False).st_blocks * 512
        except PermissionError:  # a folder the box made unlistable (only its user's own, not root's: the
            return limit + 1  # grader as an ordinary user could not see what it holds; review48)
        except OSError:
            continue  # a folder removed meanwhile: what is left still counts
    return total


def unlinked_open(pids: Iterable[int], device: int, limit: int = 1 << 62) -> int:
    """Bytes on disk of the regular files on ``device`` that ``pids`` hold open and that no folder names any
    more (``st_nlink`` 0): a box can keep them as long as it lives, unseen by `on_disk`. Processes whose
    descriptors this user may not read count nothing. Past `MAX_ENTRIES` descriptors, ``limit + 1``: a box
    holding that many would make each half-second look slow (review48)."""
    seen: set[int] = set()
    total = descriptors = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in os.scandir(f"/proc/{pid}/fd"):
                descriptors += 1
                if descriptors > MAX_ENTRIES:
                    return limit + 1
                with contextlib.suppress(OSError):
                    st = os.stat(fd.path)  # the open file itself, through the link
                    if (
                        st.st_nlink == 0
                        and st.st_dev == device
                        and stat.S_ISREG(st.st_mode)
                        and st.st_ino not in seen
                    ):
                        seen.add(st.st_ino)
                        total += st.st_blocks * 512
    return total


@dataclass
class Running:
    """A process started in a box (`start`), the watchdog that counts its processes, and the box's cgroup."""

    proc: subprocess.Popen
    watchdog: Watchdog  # ``tripped``: the limit it had to hold by stopping them (processes or disk)
    group: tuple[Path, ...] = ()  # the box's cgroup (`devicekit_grade.cgroups`), () where there is none
    out_of_memory: bool = False  # `stop` found that the kernel killed a process of it over its memory cap


_RUNNING: dict[int, subprocess.Popen] = {}
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
    """Start ``cmd`` in ``box``: in a cgroup of its own where the run has one, under bubblewrap (unless the
    isolation is none), in a new session, with the limits, its output to the file object ``output``, the
    descriptors ``keep`` inherited, watched by a `Watchdog`. `close` ends it."""
    if running_as_root():
        _give(box.work)
    options = None
    if isolation.mode == "bwrap":
        prefix = bwrap_prefix(box, list(isolation.keep), list(isolation.hide))
        if not prefix:
            raise RuntimeError("bubblewrap (or setpriv) disappeared during the run")
        # bubblewrap's options (every hidden folder's name) come from a descriptor, not its command line,
        # which is the box's process 1 and readable in its /proc (review47, hole 5)
        end = prefix.index("--")
        options = os.memfd_create("devicekit-grade-bwrap-args")
        os.write(options, b"".join(arg.encode() + b"\0" for arg in prefix[1:end]))
        os.lseek(options, 0, os.SEEK_SET)
        cmd = [prefix[0], "--args", str(options), *prefix[end:], *cmd]
        keep = (*keep, options)
    group: tuple[Path, ...] = ()
    try:
        if isinstance(isolation.cgroup, cgroups.Run):
            group = cgroups.open_box(isolation.cgroup, limits.box_memory_mb * MiB, limits.processes)
        with _START_LOCK:  # no fork while another thread changes the set of running processes
            proc = subprocess.Popen(
                cmd, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=box.run,
                preexec_fn=preexec(limits, group), pass_fds=keep,
            )  # fmt: skip
            with _RUNNING_LOCK:
                _RUNNING[proc.pid] = proc
    except BaseException:
        cgroups.remove(group)
        raise
    finally:
        if options is not None:
            os.close(options)
    watchdog = Watchdog(proc.pid, limits.processes, box.root, limits.box_disk_mb * MiB)
    watchdog.start()
    return Running(proc, watchdog, group)


def _stop(proc: subprocess.Popen) -> None:
    """Kill a started process and everything it started, detached or not."""
    kill_tree(proc.pid)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=30)


def stop(running: Running) -> None:
    """End a started process: its watchdog, and every process it started, detached or not. The box's
    folders stay until `close` (the caller reads what the run wrote there)."""
    running.watchdog.stop()
    _stop(running.proc)
    running.out_of_memory = running.out_of_memory or cgroups.out_of_memory(running.group)
    cgroups.remove(running.group)  # anything of the box that left its process tree
    with _RUNNING_LOCK:
        _RUNNING.pop(running.proc.pid, None)


def close(box: Box, running: Running | None = None) -> None:
    """`stop` what still runs in ``box`` and remove its folders."""
    try:
        if running is not None and running.proc.pid in _RUNNING:
            stop(running)
    finally:
        shutil.rmtree(box.root, ignore_errors=True)


def kill_all() -> None:
    """Kill every submission still running (the grader is being interrupted)."""
    with _RUNNING_LOCK:
        running = list(_RUNNING.values())
    for proc in running:
        _stop(proc)


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
    """{pid: (parent pid, real uid)} of every process (Linux ``/proc``; empty elsewhere)."""
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
    children: dict[int, list[int]] = {}
    for child, (parent, _) in _processes().items():
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


def kill_tree(pid: int, rounds: int = 50) -> None:
    """SIGKILL ``pid`` and all its descendants, detached or not, again until none is left (a fork bomb keeps
    forking): all of them are stopped first, since stopped processes cannot fork while the rest are killed."""
    for _ in range(rounds):
        alive = descendants(pid)
        if not alive:
            break
        for child in alive:
            with contextlib.suppress(OSError):
                os.kill(child, signal.SIGSTOP)
        for child in alive:
            _kill(child)
        for child in alive:  # collect the exit status of this process's own children (adopted orphans)
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(child, os.WNOHANG)
        time.sleep(0.02)
    _kill(pid)
