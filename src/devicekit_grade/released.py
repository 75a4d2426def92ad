"""What the instructor released: the student labs (``labs/``) and the published solutions
(``solutions/``). The grader compares a submission with them to

* flag check cells that differ from the released ones (``check-cell-edited``) and cells that reach into
  the self-check machinery (``touches-checks``): neither changes the score, which the grader computes
  itself, but both are worth a look;
* recognise a copy of the published solution (``published-solution``, `published`: one policy with or
  without its marker lines);
* recognise the lab's deliberate error cells by their source, for copies whose cell tags were lost.

When the folders are not available (a grader installed without the course repository), these flags are
simply not computed; the score does not depend on them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from devicekit.messages import Message

CHECK_CALL = re.compile(r"""\bcheck\(\s*["']([\w.-]+)["']""")
TOUCHES = re.compile(
    r"devicekit_labs|devicekit\.exercises|\bCheckResult\b|_REGISTRY|\bresults\s*\.\s*(append|extend|insert|clear)\b"
    r"|sys\.modules|__code__|importlib\.reload"
)
BEGIN = "### BEGIN SOLUTION"


def normalise(source: str) -> str:
    """Cell source compared loosely: line endings, trailing spaces and blank lines do not matter."""
    lines = [line.rstrip() for line in source.replace("\r\n", "\n").split("\n")]
    return "\n".join(line for line in lines if line)


def notebook_cells(path: Path) -> list[dict[str, Any]]:
    """The cells of the notebook at ``path``, read as JSON: ``type``, ``source`` (one str), ``tags``; []
    when it cannot be read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    cells = []
    for cell in data.get("cells", []):
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        cells.append(
            {
                "type": cell.get("cell_type"),
                "source": source,
                "tags": cell.get("metadata", {}).get("tags", []),
            }
        )
    return cells


@dataclass
class LabRelease:
    """The released cells of one lab, both languages together."""

    cells: set[str] = field(default_factory=set)  # every released code cell, normalised
    check_cells: set[str] = field(default_factory=set)
    expected_errors: set[str] = field(default_factory=set)
    solution_cells: set[str] = field(default_factory=set)  # published solution cells with their markers


class Released:
    """The released labs and solutions under ``labs`` and ``solutions`` (either may be None)."""

    def __init__(self, labs: Path | None, solutions: Path | None) -> None:
        self.labs, self.solutions = labs, solutions

    @property
    def available(self) -> bool:
        return self.labs is not None and self.labs.is_dir()

    @cache  # noqa: B019  (one Released per grading run)
    def lab(self, lab: str) -> LabRelease:
        release = LabRelease()
        for folder, is_solution in ((self.labs, False), (self.solutions, True)):
            if folder is None:
                continue
            for path in sorted(folder.glob(f"{lab}*.ipynb")):
                for cell in notebook_cells(path):
                    if cell["type"] != "code":
                        continue
                    text = normalise(cell["source"])
                    if is_solution:
                        if BEGIN in cell["source"]:
                            release.solution_cells.add(text)
                        continue
                    release.cells.add(text)
                    if CHECK_CALL.search(cell["source"]):
                        release.check_cells.add(text)
                    if "raises-exception" in cell["tags"]:
                        release.expected_errors.add(text)
        return release


def integrity(nb: Any, lab: str, released: Released) -> tuple[list[str], list[Message]]:
    """(flags, reasons) for a submission of ``lab``: a copy of the published solution (`published`),
    edited check cells, cells that reach into the self-checks, and (`devicekit_grade.integrity`) deleted or
    faked check cells, reads of course files and imports of check internals. No flag changes the score."""
    from devicekit_grade import integrity as more

    flags: list[str] = []
    reasons: list[Message] = []
    copy = published(nb, lab, released)
    if copy is not None:
        flags.append("published-solution")
        reasons.append(copy)
    if not released.available:
        return flags, reasons
    release = released.lab(lab)
    code = [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    edited = [
        i
        for i, c in code
        if CHECK_CALL.search(c.source)
        and normalise(c.source) not in release.check_cells
        and release.check_cells
    ]
    if edited:
        flags.append("check-cell-edited")
        reasons.append(
            Message(
                f"check cell {edited[0] + 1} differs from the released lab (the score does not use it)",
                f"第 {edited[0] + 1} 个单元格是检查单元格，与发布的实验不同（得分不依赖它）",
            )
        )
    touching = [i for i, c in code if TOUCHES.search(c.source) and normalise(c.source) not in release.cells]
    if touching:
        flags.append("touches-checks")
        reasons.append(
            Message(
                f"cell {touching[0] + 1} reaches into the self-checks (the score does not use them)",
                f"第 {touching[0] + 1} 个单元格动了自测代码（得分不依赖自测）",
            )
        )
    own = more.own_code(nb.cells, release.cells, normalise)
    checks = {m for cell in release.check_cells for m in more.CHECK_CALL.findall(cell)}
    extra, why = more.static_flags(nb.cells, lab, own, checks)
    flags += [f for f in extra if f not in flags]
    reasons += why
    return flags, reasons


def published(nb: Any, lab: str, released: Released) -> Message | None:
    """Why ``nb`` is a copy of the published solution, or None. One policy, whatever the copy kept: the
    solution notebook itself (its metadata says ``role: solution``), or at least 60 % of the solution's
    code up to names, comments and its ``### BEGIN SOLUTION`` marker lines (kept or removed): the flag
    ``published-solution``, and the score the judges give, as for any other notebook. The instructor reads
    the flagged rows and decides (a short lab's canonical answer is what an honest learner writes too)."""
    from devicekit_grade import integrity as more

    meta = nb.metadata.get("devicekit", {})
    if isinstance(meta, dict) and meta.get("role") == "solution":
        return Message(
            "the published solution notebook (its metadata says role: solution)",
            "提交的是公开的参考答案 notebook（元数据写着 role: solution）",
        )
    if not released.available:
        return None
    release = released.lab(lab)
    code = [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    verbatim = [i for i, c in code if BEGIN in c.source and normalise(c.source) in release.solution_cells]
    own = more.own_code(nb.cells, release.cells, normalise)
    copied, total = more.copied_solution(own, release.solution_cells)
    if copied < max(more.MIN_TOKENS, 0.6 * total):  # a copy: 60 % of the solution's code, and not tiny
        if not verbatim:
            return None
        return Message(
            f"cell {verbatim[0] + 1} is the published solution's cell, ### BEGIN SOLUTION marker included",
            f"第 {verbatim[0] + 1} 个单元格就是参考答案的单元格（连 ### BEGIN SOLUTION 标记都在）",
        )
    share = round(100 * copied / max(total, 1))
    markers = any(BEGIN in c.source for c in nb.cells if c.cell_type == "code")
    kept = (
        Message("its marker lines kept", "连标记行都在")
        if markers
        else Message("without its markers", "去掉了标记行")
    )
    return Message(
        f"{share} % of the published solution's code, up to names and comments ({kept.en})",
        f"忽略命名和注释后，与公开参考答案的代码有 {share}% 相同（{kept.zh}）",
    )


def code_fingerprint(nb: Any, lab: str, released: Released) -> tuple[str, list[int]]:
    """(normalised hash, MinHash signature) of the learner's own code, ("", []) when there is too little
    of it to call anything a copy."""
    from devicekit_grade import integrity as more

    if not released.available:
        return "", []  # without the released lab, its own scaffolding would make every copy look alike
    known = released.lab(lab).cells
    token_list = more.tokens("\n".join(more.own_code(nb.cells, known, normalise)))
    if len(token_list) < more.MIN_TOKENS:
        return "", []
    return more.digest(token_list), more.signature(token_list)


def expected_error_cells(nb: Any, lab: str, released: Released) -> set[int]:
    """Indices of the submission's code cells that are the lab's deliberate errors, tagged or not."""
    known = released.lab(lab).expected_errors if released.available else set()
    return {
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code"
        and ("raises-exception" in c.metadata.get("tags", []) or normalise(c.source) in known)
    }


def default_folders() -> tuple[Path | None, Path | None]:
    """``labs/`` and ``solutions/`` in the folder the grader runs from, when they are there.

    The grader never looks next to its own installed files: an instructor passes ``--labs`` and
    ``--solutions``, or runs it from the course checkout.
    """
    labs, solutions = Path("labs").absolute(), Path("solutions").absolute()
    return (labs if labs.is_dir() else None), (solutions if solutions.is_dir() else None)
