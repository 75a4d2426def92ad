"""The flake8 plugin: with devicekit installed, `flake8 --select DK` runs devicelint's rules.

The default rules run whenever flake8 selects `DK`; an opt-in rule (`DK9nn`) runs only when `--select`
or `--extend-select` names it or a prefix longer than `DK` (`--extend-select DK9`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from devicekit.lint.engine import lint_tree
from devicekit.lint.rules import DEFAULT_CODES, RULES


class DeviceLintPlugin:
    """flake8 calls it once per file with the parsed tree and the file's lines."""

    name = "devicekit-lint"
    version = "0.1.0"
    codes: frozenset[str] = DEFAULT_CODES

    def __init__(self, tree: ast.Module, lines: list[str] | None = None, filename: str = "") -> None:
        self.tree = tree
        self.lines = [line.rstrip("\n") for line in (lines or [])]
        self.filename = filename

    @classmethod
    def parse_options(cls, options: Any) -> None:
        """Add the opt-in rules that `--select` / `--extend-select` name explicitly."""
        named = [*(getattr(options, "select", None) or []), *(getattr(options, "extend_select", None) or [])]
        prefixes = [str(p).strip().upper() for p in named if len(str(p).strip()) > 2]
        opted = {code for code in RULES if any(code.startswith(p) for p in prefixes if p.startswith("DK"))}
        cls.codes = DEFAULT_CODES | opted

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        """Yield `(line, col, "DKnnn message", type)` per finding, as flake8 expects (col 0-based)."""
        for finding in lint_tree(self.tree, self.lines, self.filename, self.codes):
            yield finding.line, finding.col - 1, f"{finding.code} {finding.message('en')}", type(self)
