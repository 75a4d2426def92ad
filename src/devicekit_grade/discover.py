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

from devicekit.messages import Message
from devicekit_grade.failures import Told

MAX_FILE_BYTES = 256 * 1024 * 1024


class UsageError(Told):
    """The grader cannot run as asked; ``message`` says why and what to do, in both languages."""


@dataclass
class Submission:
    """One file found in the inputs. ``data`` is None for rows that are not graded (see ``status``)."""

    path: Path
    shown: str
    data: bytes | None = None
    status: str = "pending"  # or "ignored", "refused", "error"
    reason: Message | None = None
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
            sub.reason = Message(
                f"a symbolic link (to {target}), not a file: not graded. Submit the file itself.",
                f"这是符号链接（指向 {target}），不是文件：不评分。请提交文件本身。",
            )
            return sub
        if not stat.S_ISREG(info.st_mode):
            sub.status, sub.reason = "ignored", Message("not a regular file", "不是普通文件")
            return sub
        if info.st_size > MAX_FILE_BYTES:
            sub.status = "error"
            size = f"{info.st_size / 2**20:.0f}"
            sub.reason = Message(
                f"the file is {size} MiB, too large to be a lab notebook",
                f"文件有 {size} MiB，太大，不可能是实验 notebook",
            )
            return sub
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as handle:
            sub.data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        why = exc.strerror or str(exc)
        sub.status, sub.reason = "error", Message(f"cannot read the file: {why}", f"无法读取文件：{why}")
    return sub


def find(inputs: list[str], exclude: list[Path]) -> list[Submission]:
    """Every file under ``inputs`` as a `Submission`, in a stable order (``status`` "pending" = grade it)."""
    excluded = [p.resolve() for p in exclude]
    found: list[Submission] = []
    for text in inputs:
        given = Path(text)
        if not given.exists() and not given.is_symlink():
            raise UsageError(Message(f"{text}: no such file or folder", f"{text}：没有这个文件或文件夹"))
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
                    target = os.readlink(sub_dir)
                    row.reason = Message(
                        f"a symbolic link to a folder (to {target}): not followed",
                        f"指向文件夹的符号链接（指向 {target}）：不跟随",
                    )
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
                        Message("in a Jupyter checkpoint folder", "位于 Jupyter 检查点文件夹中")
                        if ".ipynb_checkpoints" in relative.parts
                        else Message(
                            f"hidden ({hidden[0]!r} starts with a dot)", f"隐藏文件（{hidden[0]!r} 以点开头）"
                        )
                    )
                    reason = Message(
                        f"not graded: {why.en}; name it on the command line to grade it",
                        f"不评分：{why.zh}；在命令行里单独指定即可评分",
                    )
                    found.append(Submission(path, shown, status="ignored", reason=reason))
                elif "__pycache__" in relative.parts:
                    reason = Message("Python cache file", "Python 缓存文件")
                    found.append(Submission(path, shown, status="ignored", reason=reason))
                elif path.suffix != ".ipynb":
                    kind = path.suffix or "no extension"
                    kind_zh = path.suffix or "没有扩展名"
                    reason = Message(
                        f"not graded: not an .ipynb file ({kind}); a notebook uploaded under another name "
                        "can be graded by naming it on the command line",
                        f"不评分：不是 .ipynb 文件（{kind_zh}）；"
                        "以其他名字上传的 notebook 可以在命令行里单独指定来评分",
                    )
                    found.append(Submission(path, shown, status="ignored", reason=reason))
                else:
                    sub = _read(path, shown, given)
                    if len(relative.parts) > 1:
                        sub.folder = folder
                    found.append(sub)
    if not any(s.status != "ignored" for s in found):
        raise UsageError(
            Message(
                f"no submissions found in {', '.join(inputs)}: "
                "give notebooks (.ipynb) or folders that hold them",
                f"在 {'、'.join(inputs)} 中没有找到提交的作业：请给出 notebook（.ipynb）或存放它们的文件夹",
            )
        )
    return found
