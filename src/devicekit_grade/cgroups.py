"""A cgroup per box, so that a box's limits hold for all its processes together (review47, hole 3).

An rlimit holds per process: a notebook's helper could hold memory in memfds that no address-space limit
sees, and 512 processes of 8 GiB each. A cgroup charges every page its processes touch (anonymous memory,
memfd and shared memory, tmpfs files, page cache) and counts their tasks, whatever they do. So each box
gets one, and the box's first process joins it before it executes bubblewrap (`join`, in the launcher):
nothing of the box ever runs outside it.

Where (`choose`), made once per run:

* cgroup v2 (``/sys/fs/cgroup/cgroup.controllers``): a folder beside the grader's own cgroup, in the
  closest folder above it that this user may write (as root the parent of its cgroup; as an ordinary user
  the systemd user slice delegated to them); a v2 cgroup with processes cannot hand controllers to its
  children, hence beside, not below;
* cgroup v1 (``/sys/fs/cgroup/memory`` and ``/sys/fs/cgroup/pids``): a folder below the grader's own cgroup
  of each, where this user may write (root, or a subtree delegated to them);
* else none: the run grades with the per-process limits only, and says why (`choose` returns a `Message`).

A box's cgroup is emptied (v2 ``cgroup.kill``, v1 its tasks killed until none is left) and removed after
the box (`remove`), and the run's folder with whatever box is left in it when the run ends (`close`),
also when it was interrupted.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from devicekit.messages import Message

FS = Path("/sys/fs/cgroup")
#: The controllers a box's cgroup needs: its memory and its number of tasks.
NEEDED = ("memory", "pids")
#: The files that cap swap, present only where the kernel accounts for it.
SWAP = ("memory.swap.max", "memory.memsw.limit_in_bytes")
_NAMES = itertools.count(1)


@dataclass(frozen=True)
class Run:
    """The run's cgroup folders: one (v2), or one per controller, memory then pids (v1)."""

    version: int
    folders: tuple[Path, ...]


def _own(proc_self_cgroup: str) -> dict[str, str]:
    """{controller: the grader's cgroup path} from ``/proc/self/cgroup`` text ("" for v2's line)."""
    own = {}
    for line in proc_self_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for controller in parts[1].split(",") if parts[1] else [""]:
                own[controller] = parts[2]
    return own


def _writable(folder: Path, *files: str) -> bool:
    """Whether this user may make cgroups in ``folder`` and move processes there (and write ``files``)."""
    return all(os.access(folder / f, os.W_OK) for f in ("", "cgroup.procs", *files))


def _new(parent: Path) -> Path:
    """A new folder for this run below ``parent`` (``OSError`` when it cannot be made), after removing the
    empty ones of runs whose grader is gone (killed with SIGKILL, it removed nothing)."""
    for old in parent.glob("devicekit-grade-*"):
        pid = old.name.split("-")[2]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            for empty in sorted(old.rglob("*"), key=lambda p: -len(p.parts)) + [old]:
                with contextlib.suppress(OSError):  # a cgroup with processes (or a file) stays
                    empty.rmdir()
    folder = parent / f"devicekit-grade-{os.getpid()}-{next(_NAMES)}"
    folder.mkdir()
    return folder


def _enabled(folder: Path) -> set[str]:
    """The controllers ``folder`` gives its children (its ``cgroup.subtree_control``)."""
    return {c.lstrip("+") for c in (folder / "cgroup.subtree_control").read_text().split()}


def choose(fs: Path = FS, proc_self_cgroup: str | None = None) -> Run | Message:
    """The run's cgroup, made now (see the module docstring), or why there is none here."""
    if proc_self_cgroup is None:
        try:
            proc_self_cgroup = Path("/proc/self/cgroup").read_text()
        except OSError:
            proc_self_cgroup = ""
    own = _own(proc_self_cgroup)
    try:
        if (fs / "cgroup.controllers").exists():
            return _v2(fs, own.get("", "/"))
        if all((fs / c).is_dir() and c in own for c in NEEDED):
            return _v1(fs, own)
    except OSError as exc:
        why = exc.strerror or str(exc)
        return Message(f"no cgroup could be made ({why})", f"无法创建 cgroup（{why}）")
    return Message(
        f"{fs} has neither a cgroup v2 hierarchy nor v1 hierarchies of memory and pids",
        f"{fs} 下既没有 cgroup v2 层级，也没有 memory 和 pids 的 cgroup v1 层级",
    )


def _v2(fs: Path, own: str) -> Run | Message:
    mine = Path(own.lstrip("/"))
    above = [fs / p for p in mine.parents] if mine.parts else [fs]
    parent = next((p for p in above if _writable(p, "cgroup.subtree_control")), None)
    if parent is None:
        return Message(
            f"cgroup v2: this user may write no cgroup above its own ({own})",
            f"cgroup v2：当前用户无权写入自身 cgroup（{own}）之上的任何 cgroup",
        )
    enable = " ".join(f"+{c}" for c in NEEDED)
    if not set(NEEDED) <= _enabled(parent):
        (parent / "cgroup.subtree_control").write_text(enable)  # EBUSY where it holds processes
        if not set(NEEDED) <= _enabled(parent):
            raise OSError(f"{parent} gives its children no {' and '.join(NEEDED)} controller")
    folder = _new(parent)
    try:
        (folder / "cgroup.subtree_control").write_text(enable)
    except OSError:
        _rmdir(folder)
        raise
    return Run(2, (folder,))


def _v1(fs: Path, own: dict[str, str]) -> Run | Message:
    parents = [fs / c / own[c].lstrip("/") for c in NEEDED]
    if not all(_writable(p) for p in parents):
        where = ", ".join(map(str, parents))
        return Message(
            f"cgroup v1: this user may not write the grader's own cgroups ({where})",
            f"cgroup v1：当前用户无权写入评分器自身所在的 cgroup（{where}）",
        )
    folders: list[Path] = []
    try:
        for parent in parents:
            folders.append(_new(parent))
    except OSError:
        for folder in folders:
            _rmdir(folder)
        raise
    return Run(1, tuple(folders))


def describe(run: Run) -> Message:
    """Where the run's cgroups are, for the preflight's line."""
    where = [str(f) for f in run.folders]
    return Message(f"cgroup v{run.version}: {', '.join(where)}", f"cgroup v{run.version}：{'、'.join(where)}")


# --- one box ------------------------------------------------------------------------------------------------


def open_box(run: Run, memory: int, tasks: int) -> tuple[Path, ...]:
    """A new cgroup (one folder per `Run` folder) capped at ``memory`` bytes, swap included, and ``tasks``
    processes and threads (0: no cap). ``OSError`` when it cannot be made (none is left behind)."""
    name = f"b{next(_NAMES)}"
    made: list[Path] = []
    try:
        for parent in run.folders:
            made.append(parent / name)
            made[-1].mkdir()
        mem, pids = made[0], made[-1]
        settings: list[tuple[Path, int]] = []
        if memory and run.version == 2:
            settings += [(mem / "memory.max", memory), (mem / "memory.swap.max", 0)]
        elif memory:  # v1: memory+swap may only be set after memory, and not below it
            settings += [
                (mem / "memory.limit_in_bytes", memory),
                (mem / "memory.memsw.limit_in_bytes", memory),
            ]
        if tasks:
            settings.append((pids / "pids.max", tasks))
        for path, value in settings:
            if path.name in SWAP and not path.exists():
                continue  # no swap accounting here: nothing to cap
            path.write_text(str(value))
    except OSError as exc:
        remove(made)
        raise OSError(f"cannot make a cgroup for the box: {exc}") from None
    return tuple(made)


def join(folders: tuple[Path, ...]) -> None:
    """Move the calling process into the box's cgroup (run in the launcher, before it executes the box's
    first program: everything it starts is inside)."""
    for folder in folders:
        fd = os.open(folder / "cgroup.procs", os.O_WRONLY)
        try:
            os.write(fd, b"0")
        finally:
            os.close(fd)


def out_of_memory(folders: tuple[Path, ...]) -> bool:
    """Whether the kernel killed a process of the box for going over its memory cap."""
    for folder in folders:
        for file in ("memory.events", "memory.oom_control"):  # v2, v1
            with contextlib.suppress(OSError, ValueError):
                for line in (folder / file).read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "oom_kill" and int(value) > 0:
                        return True
    return False


def _pids(folder: Path) -> list[int]:
    with contextlib.suppress(OSError, ValueError):
        return [int(p) for p in (folder / "cgroup.procs").read_text().split()]
    return []


def remove(folders: tuple[Path, ...] | list[Path]) -> None:
    """Kill every process in the box's cgroup, again until none is left, then remove it."""
    for folder in folders:
        if (folder / "cgroup.kill").exists():  # v2 (Linux 5.14): all at once, forks included
            with contextlib.suppress(OSError):
                (folder / "cgroup.kill").write_text("1")
        for _ in range(100):
            pids = _pids(folder)
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.02)
        _rmdir(folder)


def _rmdir(folder: Path) -> None:
    """Remove an empty cgroup; its last processes may take a moment to leave it (EBUSY)."""
    for _ in range(100):
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                return
            time.sleep(0.02)


def close(run: Run) -> None:
    """Empty and remove every box cgroup left in the run's folders, then the folders."""
    for folder in run.folders:
        with contextlib.suppress(OSError):  # the deepest first: a cgroup with children cannot be removed
            remove(sorted((p for p in folder.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)))
        _rmdir(folder)
