"""The pieces every check shares: a finding, and the context a file is linted in."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from devicekit.lint.index import TreeIndex
from devicekit.lint.names import Names
from devicekit.lint.rules import RULES
from devicekit.messages import Message

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.I)


@dataclass(frozen=True, order=True)
class Finding:
    """One place where a rule fired.

    Attributes:
        path: the file, as given.
        line: 1-based line (within the cell for a notebook).
        col: 1-based column.
        code: the rule's code, `DKnnn`.
        cell: 1-based index of the notebook cell (among all cells), None for a `.py` file.
        detail: what the analysis knows about this finding (the value, where its device came from), in
            both languages; None when the rule's title says it all.
        file_line: in a notebook, the line of the `.ipynb` file this place is on (None when unknown, and
            for a `.py` file, where it is `line`).
        file_col: in a notebook, the column in the `.ipynb` file.
        fix: the fix for this finding, in both languages, where the rule's usual fix would fail or be
            wrong here (DK004 on a name the base class already declares); None for the rule's own.
    """

    path: str
    cell: int | None
    line: int
    col: int
    code: str
    detail: Message | None = field(default=None, compare=False)
    file_line: int | None = field(default=None, compare=False)
    file_col: int | None = field(default=None, compare=False)
    fix: Message | None = field(default=None, compare=False)

    @property
    def scenario(self) -> int:
        """The number of the course scenario the rule belongs to (0 for the style rules)."""
        return RULES[self.code].scenario

    def message(self, lang: str = "en") -> str:
        """The rule's title in `lang` (`en` or `zh`), what the analysis found (when it says more), and the
        fix."""
        rule = RULES[self.code]
        # the detail is a sentence of its own: a title often has a colon already, and two colons chained
        # in one sentence read badly in both languages
        if lang == "zh":
            detail = f"。{self.detail.zh}" if self.detail is not None else ""
            return f"{rule.title_zh}{detail}。解决方法：{self.fix.zh if self.fix else rule.fix_zh}"
        detail = f". {_sentence(self.detail.en)}" if self.detail is not None else ""
        return f"{rule.title_en}{detail}. Fix: {self.fix.en if self.fix else rule.fix_en}"


def _sentence(text: str) -> str:
    """`text` as the start of a sentence: its first letter in upper case (code in backticks stays as is)."""
    return text[:1].upper() + text[1:] if text[:1].islower() else text


@dataclass
class Context:
    """One parsed file being linted: its tree, what its names mean, and the findings so far."""

    tree: ast.Module
    lines: list[str]
    codes: frozenset[str]
    notebook: bool = False
    path: str = "<string>"
    project: object = None  # devicekit.lint.project.Project: the code base linted with this file
    source: object = None  # its devicekit.lint.project.SourceFile for this file
    names: Names = field(init=False)
    found: dict[tuple[int, int, str], Message | None] = field(default_factory=dict)
    fixes: dict[tuple[int, int, str], Message] = field(default_factory=dict)
    index: TreeIndex = field(init=False)

    def __post_init__(self) -> None:
        self.index = TreeIndex(self.tree)
        self.parents = self.index.parents
        self.calls = self.index.calls
        self.owned = self.index.owned
        self.function_calls = self.index.function_calls
        self.class_nodes = self.index.class_nodes
        self.constants = self.index.constants
        self.definitions = self.index.definitions
        package = getattr(self.source, "package", None)
        if package is None:
            from devicekit.lint.project import module_names

            package = module_names(self.path)[0] if self.path and not self.path.startswith("<") else None
        self.names = Names(self.tree, [*self.index.imports, *self.index.definitions], package=package)

    def wants(self, *codes: str) -> bool:
        """Whether any of these rules is selected (a check skips its work otherwise)."""
        return any(code in self.codes for code in codes)

    def report(
        self, node: ast.AST, code: str, detail: Message | None = None, fix: Message | None = None
    ) -> None:
        """Record a finding of `code` at `node` (with what the analysis knows about it, `detail`, and a
        fix of its own where the rule's would be wrong here, `fix`), unless the rule is off or the line
        says `# noqa`. A second report of the same place keeps the first detail and fix it was given."""
        if code not in self.codes:
            return
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0) + 1
        if self._noqa(line, code):
            return
        key = (line, col, code)
        if self.found.get(key) is None:
            self.found[key] = detail
        if fix is not None:
            self.fixes.setdefault(key, fix)

    def _noqa(self, line: int, code: str) -> bool:
        if not 0 < line <= len(self.lines):
            return False
        text = self.lines[line - 1]
        if "#" not in text:
            return False
        match = _NOQA.search(text)
        if match is None:
            return False
        codes = match.group("codes")
        if codes is None:
            return True
        return code in {c.upper() for c in re.split(r"[,\s]+", codes) if c}
