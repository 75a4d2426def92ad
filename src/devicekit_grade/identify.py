"""Read a submission and work out which lab it is and which language its learner reads.

A submission is identified, in this order, by

1. ``metadata.devicekit.lab``, written into each lab by ``course_tools.generate.labs``
   (``identified_by = "metadata"``).
   When the metadata names a lab this devicekit has no checks for, the submission is ``unknown-lab``: the
   grader does not guess past an explicit answer.
2. the lab ids in its own check calls, ``check("01-devices", ...)`` (``"check calls"``): these calls decide
   the score anyway, so they are the best evidence once the metadata is lost (a learner who copied the
   cells into a new notebook, or a tool that dropped the metadata);
3. its file name: ``01-devices*.ipynb``, ``alice_01_devices.ipynb``, ``lab01.ipynb`` (``"file name"``).

The language is Chinese when the file name ends in ``.zh.ipynb`` (as `devicekit.lang` decides for the
learner), else the one in the metadata, else Chinese when the markdown is mostly Chinese, else English.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

from devicekit.lang import language_of_path
from devicekit.messages import Message
from devicekit_grade.installed import labs_manifest

CHECK_CALL = re.compile(r"""\b(?:check|run)\(\s*["']([\w.-]+)["']""")
CJK = re.compile(r"[\u4e00-\u9fff]")


class BadSubmission(Exception):
    """A file that cannot be graded at all. ``status`` is the row's status, ``reason`` says why."""

    def __init__(self, status: str, reason: Message) -> None:
        super().__init__(reason.en)
        self.status, self.reason = status, reason


@dataclass(frozen=True)
class Identity:
    """Which lab a submission is, how that was found out, and the learner's language."""

    lab: str | None
    lang: str
    identified_by: str | None
    detail: Message | None = None


def known_labs() -> list[str]:
    """The lab ids with self-checks, from the course manifest (read as a file: nothing is imported)."""
    return [lab["id"] for lab in labs_manifest() if lab.get("exercises")]


def loads(raw: bytes) -> nbformat.NotebookNode:
    """The notebook in the bytes ``raw`` (read by `devicekit_grade.discover`), or `BadSubmission`."""
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise BadSubmission(
            "invalid-json",
            Message(
                "the file is not text (not UTF-8): not a saved notebook",
                "文件不是文本（不是 UTF-8）：不是保存的 notebook",
            ),
        ) from None
    except json.JSONDecodeError as exc:
        raise BadSubmission(
            "invalid-json",
            Message(
                f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})",
                f"不是有效的 JSON（第 {exc.lineno} 行第 {exc.colno} 列：{exc.msg}）",
            ),
        ) from None
    except RecursionError:
        raise BadSubmission(
            "invalid-json",
            Message(
                "JSON nested too deeply to be a notebook (lists or objects inside each other)",
                "JSON 嵌套层数过深，不可能是 notebook（列表或对象层层嵌套）",
            ),
        ) from None
    has_cells = isinstance(data, dict) and isinstance(data.get("cells", data.get("worksheets")), list)
    if not has_cells or "nbformat" not in data:
        kind = type(data).__name__ if not isinstance(data, dict) else "object"
        raise BadSubmission(
            "not-a-notebook",
            Message(
                f"valid JSON ({kind}) but not a notebook: no 'cells' and 'nbformat'",
                f"是 JSON（{kind}），但不是 notebook：没有 cells 和 nbformat",
            ),
        )
    try:
        nb = nbformat.reads(json.dumps(data), as_version=4)
    except RecursionError:
        raise BadSubmission(
            "not-a-notebook",
            Message(
                "a notebook whose JSON is nested too deeply to read",
                "notebook 的 JSON 嵌套层数过深，无法读取",
            ),
        ) from None
    except Exception as exc:
        raise BadSubmission("not-a-notebook", _unreadable(exc)) from None
    try:
        for cell in nb.cells:
            if cell.get("cell_type") not in ("code", "markdown", "raw") or not isinstance(
                cell.get("source"), str
            ):
                raise ValueError(f"a cell of type {cell.get('cell_type')!r} with no text source")
    except Exception as exc:
        raise BadSubmission("not-a-notebook", _unreadable(exc)) from None
    return nb


def _unreadable(exc: Exception) -> Message:
    what = str(exc)[:250]
    return Message(
        f"valid JSON but not a readable notebook: {what}", f"是 JSON，但不是可读的 notebook：{what}"
    )


def _by_file_name(name: str, labs: list[str]) -> str | None:
    flat = re.sub(r"[\s_]+", "-", name.lower())
    for lab in sorted(labs, key=len, reverse=True):
        if re.search(r"(?<![0-9a-z])" + re.escape(lab.lower()) + r"(?![0-9a-z])", flat):
            return lab
    numbered = [lab for lab in labs if re.match(r"\d+-", lab)]
    for lab in numbered:
        number = int(lab.split("-", 1)[0])
        if re.search(rf"(?<![0-9a-z])lab-?0*{number}(?!\d)", flat):
            return lab
    return None


def _by_check_calls(nb: nbformat.NotebookNode, labs: list[str]) -> str | None:
    named = {m for c in nb.cells if c.cell_type == "code" for m in CHECK_CALL.findall(c.source)}
    found = sorted(named & set(labs))
    return found[0] if len(found) == 1 else None


def language(nb: nbformat.NotebookNode, path: Path) -> str:
    """``"zh"`` or ``"en"``: the language the grader's feedback for this submission is written in."""
    if language_of_path(str(path)) == "zh":
        return "zh"
    meta: Any = nb.metadata.get("devicekit", {})
    if isinstance(meta, dict) and meta.get("lang") in ("en", "zh"):
        return str(meta["lang"])
    text = "".join(c.source for c in nb.cells if c.cell_type == "markdown")
    return "zh" if len(CJK.findall(text)) > len(text) / 10 > 0 else "en"


def identify(nb: nbformat.NotebookNode, path: Path, labs: list[str] | None = None) -> Identity:
    """Which lab ``nb`` (read from ``path``) is; ``lab`` is None when nothing identifies a known lab."""
    labs, lang = labs if labs is not None else known_labs(), language(nb, path)
    meta: Any = nb.metadata.get("devicekit", {})
    claimed = meta.get("lab") if isinstance(meta, dict) else None
    if claimed:
        if claimed in labs:
            return Identity(str(claimed), lang, "metadata")
        named = repr(str(claimed)[:80])
        return Identity(
            None,
            lang,
            None,
            Message(
                f"its metadata names lab {named}, which has no checks in this devicekit (labs with checks: "
                f"{', '.join(labs)}); is the grader's devicekit up to date?",
                f"它的元数据写的是实验 {named}，而这个版本的 devicekit 没有这个实验的检查（有检查的实验："
                f"{'、'.join(labs)}）；评分器的 devicekit 是最新的吗？",
            ),
        )
    lab = _by_check_calls(nb, labs)
    if lab:
        return Identity(lab, lang, "check calls")
    lab = _by_file_name(path.name, labs)
    if lab:
        return Identity(lab, lang, "file name")
    return Identity(
        None,
        lang,
        None,
        Message(
            "no lab metadata, no check(...) call naming a known lab, and a file name that names "
            f"none ({', '.join(labs)})",
            f"没有实验元数据，没有 check(...) 调用写明已知的实验，文件名也没有写（{'、'.join(labs)}）",
        ),
    )
