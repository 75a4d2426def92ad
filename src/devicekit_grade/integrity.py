"""Integrity flags that need more than one cell: normalised code, copies of a classmate's work or of the
published solution, deleted or faked check cells, reads of course files, imports of check internals.

Code is compared *normalised*: comments, blank lines, spacing and string contents do not count, and
every name a learner chose is replaced by one placeholder, so renaming variables or rewording comments
does not hide a copy. Keywords, builtins and attribute names stay (they
are the code's meaning). A flag changes no score: it tells the instructor which files to read.
"""

from __future__ import annotations

import builtins
import hashlib
import io
import keyword
import re
import tokenize
from collections.abc import Iterable, Sequence
from typing import Any

from devicekit.messages import Message

#: A submission's own code shorter than this (in normalised tokens) is never called a copy: a one-line
#: answer such as ``return x.to(device)`` is what everyone writes.
MIN_TOKENS = 25
#: Fraction of equal MinHash slots above which two submissions are near-identical.
NEAR = 0.9
SIGNATURE = 64
_BUILTINS = set(dir(builtins))
_MAGIC = re.compile(r"^\s*[%!]")

#: Code that reaches for the course's files: the solutions, the hidden judges, the installed package's
#: own path, notebooks, another process's view (``/proc``).
READS = re.compile(
    r"\bsolutions\b|grading[/\\.]hidden|\b__file__\b|\b__path__\b|site-packages|importlib\.resources"
    r"|\.ipynb\b|/proc/|\bos\.walk\b|\bglob\.glob\b|\brglob\(|\bos\.listdir\b"
)
#: Imports of the self-checks' own modules (reference answers, helpers of the checks).
INTERNALS = re.compile(
    r"\bfrom\s+devicekit_labs\s*\.\s*\w+\s+import\b|\bimport\s+devicekit_labs\s*\.\s*\w+"
    r"|\bdevicekit_labs\s*\.\s*lab\d\d\b|\bdevicekit\s*\.\s*exercises\b|\b_REGISTRY\b"
)
#: A cell that prints a self-check's verdict itself instead of calling the check.
FAKE_PASS = re.compile(r"""print\(\s*(?:f?["'][^"']*(?:✓|passed|通过))""", re.IGNORECASE)
CHECK_CALL = re.compile(r"""\bcheck\(\s*["']([\w.-]+)["']\s*,\s*["']([\w.-]+)["']""")


def tokens(source: str) -> list[str]:
    """The normalised tokens of ``source`` (IPython magics and shell lines dropped)."""
    text = "\n".join(line for line in source.splitlines() if not _MAGIC.match(line)) + "\n"
    out: list[str] = []
    previous = ""
    try:
        stream = [
            t
            for t in tokenize.generate_tokens(io.StringIO(text).readline)
            if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER)
        ]
        depth = 0
        for number, token in enumerate(stream):
            kind, value = token.type, token.string
            if value in "([{" and kind == tokenize.OP:
                depth += 1
            elif value in ")]}" and kind == tokenize.OP:
                depth -= 1
            following = stream[number + 1].string if number + 1 < len(stream) else ""
            keyword_argument = depth > 0 and following == "="  # an API's parameter name: keep it
            if kind == tokenize.NAME and not keyword.iskeyword(value) and value not in _BUILTINS:
                if previous != "." and not keyword_argument:
                    value = "_"  # any name the learner chose
            elif kind == tokenize.STRING:
                value = "S"
            elif kind == tokenize.NEWLINE:
                value = ";"
            elif kind == tokenize.INDENT:
                value = "{"
            elif kind == tokenize.DEDENT:
                value = "}"
            out.append(value)
            previous = token.string
    except (tokenize.TokenError, IndentationError, SyntaxError):
        out += re.findall(r"\w+|[^\s\w]", text)  # not Python: compare its words as they are
    return out


def digest(token_list: Sequence[str]) -> str:
    return hashlib.sha256(" ".join(token_list).encode("utf-8")).hexdigest()


def signature(token_list: Sequence[str], size: int = SIGNATURE) -> list[int]:
    """A MinHash signature of the 5-token shingles: the share of equal slots estimates their overlap."""
    shingles = {" ".join(token_list[i : i + 5]) for i in range(max(1, len(token_list) - 4))}
    out = []
    for seed in range(size):
        salt = seed.to_bytes(2, "big")
        out.append(
            min(
                int.from_bytes(hashlib.blake2b(salt + s.encode(), digest_size=8).digest(), "big")
                for s in shingles
            )
        )
    return out


def similarity(a: Sequence[int], b: Sequence[int]) -> float:
    if not a or len(a) != len(b):
        return 0.0
    return sum(x == y for x, y in zip(a, b, strict=True)) / len(a)


def own_code(cells: Iterable[Any], released: set[str], normalise: Any) -> list[str]:
    """The sources of the code cells the learner wrote or changed (not a released cell as is)."""
    return [c.source for c in cells if c.cell_type == "code" and normalise(c.source) not in released]


def strip_markers(source: str) -> str:
    markers = ("### BEGIN SOLUTION", "### END SOLUTION")
    return "\n".join(line for line in source.splitlines() if line.strip() not in markers)


def solution_regions(source: str) -> str:
    """The code between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` of a solution cell."""
    keep, inside = [], False
    for line in source.splitlines():
        mark = line.strip()
        if mark == "### BEGIN SOLUTION":
            inside = True
        elif mark == "### END SOLUTION":
            inside = False
        elif inside:
            keep.append(line)
    return "\n".join(keep)


def copied_solution(own: Sequence[str], solution_cells: Iterable[str]) -> tuple[int, int]:
    """(tokens copied, tokens in all): how much of the published solution's regions (normalised, each
    distinct region once, both languages together) the learner's cells hold as whole solution cells."""
    mine = {digest(tokens(strip_markers(s))) for s in own}
    regions: dict[str, tuple[int, bool]] = {}
    for cell in solution_cells:
        region = tokens(solution_regions(cell))
        key = digest(region)
        copied = digest(tokens(strip_markers(cell))) in mine
        regions[key] = (len(region), copied or regions.get(key, (0, False))[1])
    return sum(n for n, hit in regions.values() if hit), sum(n for n, _ in regions.values())


def static_flags(
    cells: Sequence[Any], lab: str, own: Sequence[str], released_checks: set[tuple[str, str]]
) -> tuple[list[str], list[Message]]:
    """(flags, reasons) read from the learner's own cells: deleted or faked check cells, reads of course
    files, imports of check internals."""
    flags: list[str] = []
    reasons: list[Message] = []
    calls = {m for c in cells if c.cell_type == "code" for m in CHECK_CALL.findall(c.source)}
    missing = sorted(key for owner, key in released_checks if owner == lab and (owner, key) not in calls)
    if missing:
        flags.append("check-cell-deleted")
        reasons.append(
            Message(
                f"no check cell for exercise(s) {', '.join(missing)} (deleted or replaced)",
                f"练习 {'、'.join(missing)} 没有检查单元格（被删除或替换）",
            )
        )
    fakes = [s for s in own if FAKE_PASS.search(s) and not CHECK_CALL.search(s)]
    if fakes:
        flags.append("check-cell-faked")
        reasons.append(
            Message(
                "a cell prints a check's verdict itself instead of calling check(...)",
                "有单元格自己打印检查结果，而不是调用 check(...)",
            )
        )
    reads = next((m.group(0) for s in own for m in [READS.search(s)] if m), None)
    if reads:
        flags.append("reads-course-files")
        reasons.append(
            Message(
                f"a cell reaches for course or grader files ({reads!r})",
                f"有单元格试图读取课程或评分器的文件（{reads!r}）",
            )
        )
    internal = next((m.group(0) for s in own for m in [INTERNALS.search(s)] if m), None)
    if internal:
        flags.append("imports-check-internals")
        reasons.append(
            Message(
                f"a cell imports the self-checks' internals ({internal!r})",
                f"有单元格导入了自测的内部代码（{internal!r}）",
            )
        )
    return flags, reasons


#: The class flags' words in Chinese (the English is the flag's own words).
SAME_ZH = {
    "identical-file": "与这份文件完全相同",
    "identical-code": "代码与这份相同（忽略命名和注释）",
    "near-identical-code": "代码与这份几乎相同",
}


def class_flags(grades: Sequence[Any]) -> None:
    """Flag identical files and identical or near-identical normalised code between different students of
    the same lab (rows with ``code_hash`` and ``code_sig``, set by the grader)."""
    rows = [g for g in grades if g.status not in ("ignored", "refused") and g.lab]

    def add(g: Any, flag: str, other: Any) -> None:
        if flag not in g.flags:
            g.flags.append(flag)
        note = Message(f"{flag.replace('-', ' ')} to {other.file}", f"{SAME_ZH[flag]}：{other.file}")
        if note not in g.reasons:
            g.reasons.append(note)

    def different(a: Any, b: Any) -> bool:
        if a.student and b.student:
            return a.student != b.student
        return a.file != b.file

    for i, a in enumerate(rows):
        for b in rows[i + 1 :]:
            if a.lab != b.lab or not different(a, b):
                continue
            if a.code_hash and a.sha256 and a.sha256 == b.sha256:
                add(a, "identical-file", b)
                add(b, "identical-file", a)
            elif a.code_hash and a.code_hash == b.code_hash:
                add(a, "identical-code", b)
                add(b, "identical-code", a)
            elif similarity(a.code_sig, b.code_sig) >= NEAR:
                add(a, "near-identical-code", b)
                add(b, "near-identical-code", a)
