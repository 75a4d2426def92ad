"""Find the submissions, read them before any submitted code runs, and account for every other file.

Every file under the inputs ends up in the report: a notebook to grade, or an ``ignored`` / ``refused``
row with the reason. Symbolic links are refused (never followed, never merged with the file they point
to): a link named ``aaa.ipynb`` pointing at ``alice.ipynb`` must not take Alice's place, and one pointing
outside the folder must not get the instructor's solution graded. Notebooks are read into memory here, at
the start, so a submission that overwrites a classmate's file during the run changes nothing.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

MAX_FILE_BYTES = 256 * 1024 * 1024


class UsageError(Exception):
    """The grader cannot run as asked; the message says why and what to do."""


@dataclass
class Submission:
    """One file found in the inputs. ``data`` is None for rows that are not graded (see ``status``)."""

    path: Path
    shown: str
    data: bytes | None = None
    status: str = "pending"  # or "ignored", "refused", "error"
    reason: str = ""
    mtime: float = 0.0
    #: the student's own sub-folder (``submissions/alice/``), whose data files the notebook may read
    folder: Path | None = None
    top: Path | None = field(default=None, repr=False)


def _read(path: Path, shown: str, top: Path | None) -> Submission:
    sub = Submission(path, shown, top=top)
    try:
        info = os.lstat(path)
        sub.mtime = info.st_mtime
        if stat.S_ISLNK(info.st_mode):
            target = os.readlink(path)
            sub.status = "refused"
            sub.reason = f"a symbolic link (to {target}), not a file: not graded. Submit the file itself."
            return sub
        if not stat.S_ISREG(info.st_mode):
            sub.status, sub.reason = "ignored", "not a regular file"
            return sub
        if info.st_size > MAX_FILE_BYTES:
            sub.status = "error"
            sub.reason = f"the file is {info.st_size / 2**20:.0f} MiB, too large to be a lab notebook"
            return sub
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as handle:
            sub.data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        sub.status, sub.reason = "error", f"cannot read the file: {exc.strerror or exc}"
    return sub


def find(inputs: list[str], exclude: list[Path]) -> list[Submission]:
    """Every file under ``inputs`` as a `Submission`, in a stable order (``status`` "pending" = grade it)."""
    excluded = [p.resolve() for p in exclude]
    found: list[Submission] = []
    for text in inputs:
        given = Path(text)
        if not given.exists() and not given.is_symlink():
            raise UsageError(f"{text}: no such file or folder")
        if given.is_symlink() or not given.is_dir():
            found.append(_read(given, text, None))  # named on the command line: graded whatever its name
            continue
        for dirpath, dirnames, filenames in os.walk(given, followlinks=False):
            folder = Path(dirpath)
            if any(folder.resolve() == out or folder.resolve().is_relative_to(out) for out in excluded):
                dirnames[:] = []
                continue
            dirnames.sort()
            for name in list(dirnames):
                sub_dir = folder / name
                if sub_dir.is_symlink():
                    dirnames.remove(name)
                    row = Submission(sub_dir, str(sub_dir), status="refused")
                    row.reason = f"a symbolic link to a folder (to {os.readlink(sub_dir)}): not followed"
                    found.append(row)
            for name in sorted(filenames):
                path = folder / name
                shown = str(path)
                relative = path.relative_to(given)
                hidden = [p for p in relative.parts if p.startswith(".")]
                if path.is_symlink():
                    found.append(_read(path, shown, given))
                elif hidden:
                    why = (
                        "in a Jupyter checkpoint folder"
                        if ".ipynb_checkpoints" in relative.parts
                        else f"hidden ({hidden[0]!r} starts with a dot)"
                    )
                    found.append(
                        Submission(
                            path,
                            shown,
                            status="ignored",
                            reason=f"not graded: {why}; name it on the command line to grade it",
                        )  # fmt: skip
                    )
                elif "__pycache__" in relative.parts:
                    found.append(Submission(path, shown, status="ignored", reason="Python cache file"))
                elif path.suffix != ".ipynb":
                    found.append(
                        Submission(
                            path,
                            shown,
                            status="ignored",
                            reason=(
                                f"not graded: not an .ipynb file ({path.suffix or 'no extension'}); a "
                                "notebook"
                                " "
                                "uploaded under another name can be graded by naming it on the command line"
                            ),
                        )  # fmt: skip
                    )
                else:
                    sub = _read(path, shown, given)
                    if len(relative.parts) > 1:
                        sub.folder = folder
                    found.append(sub)
    if not any(s.status != "ignored" for s in found):
        raise UsageError(
            "no submissions found in "
            + ", ".join(inputs)
            + ": give notebooks (.ipynb) or folders that hold them"
        )
    return found
