"""The pieces every check shares: a finding, and the context a file is linted in."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from devicekit.lint.index import TreeIndex
from devicekit.lint.names import Names
from devicekit.lint.rules import RULES

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
    """

    path: str
    cell: int | None
    line: int
    col: int
    code: str

    @property
    def scenario(self) -> int:
        """The number of the course scenario the rule belongs to (0 for the style rules)."""
        return RULES[self.code].scenario

    def message(self, lang: str = "en") -> str:
        """The rule's title in `lang` (`en` or `zh`), followed by its fix."""
        rule = RULES[self.code]
        if lang == "zh":
            return f"{rule.title_zh}。修复：{rule.fix_zh}"
        return f"{rule.title_en}. Fix: {rule.fix_en}"


@dataclass
class Context:
    """One parsed file being linted: its tree, what its names mean, and the findings so far."""

    tree: ast.Module
    lines: list[str]
    codes: frozenset[str]
    notebook: bool = False
    names: Names = field(init=False)
    found: dict[tuple[int, int, str], None] = field(default_factory=dict)
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
        self.names = Names(self.tree, [*self.index.imports, *self.index.definitions])

    def wants(self, *codes: str) -> bool:
        """Whether any of these rules is selected (a check skips its work otherwise)."""
        return any(code in self.codes for code in codes)

    def report(self, node: ast.AST, code: str) -> None:
        """Record a finding of `code` at `node`, unless the rule is off or the line says `# noqa`."""
        if code not in self.codes:
            return
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0) + 1
        if self._noqa(line, code):
            return
        self.found[(line, col, code)] = None

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
