"""`devicekit-lint --fix`: rewrite the findings whose fix is certain, keeping the rest of the file as it is.

Fixed: DK002 (`x.to(dev)` as a statement becomes `x = x.to(dev)`) and DK008 (`torch.load(p)` gets
`map_location="cpu"`). The rewriting uses libcst (`pip install "devicekit[lint-fix]"`), which keeps
comments, blank lines and formatting. Only `.py` files are rewritten; notebooks are left alone.
"""

from __future__ import annotations

from collections.abc import Iterable

from devicekit.lint.engine import iter_files, lint_source
from devicekit.lint.rules import RULES
from devicekit.messages import Message, localised

FIXABLE: frozenset[str] = frozenset(code for code, rule in RULES.items() if rule.fixable)


class FixUnavailableError(RuntimeError):
    """`--fix` was asked for but libcst is not installed."""


def _libcst():
    try:
        import libcst
        import libcst.metadata
    except ImportError:
        raise localised(
            FixUnavailableError,
            Message(
                '--fix needs libcst, which is not installed: pip install "devicekit[lint-fix]" '
                "(or libcst>=1.1)",
                '--fix 需要 libcst，但它没有安装：pip install "devicekit[lint-fix]"（或 libcst>=1.1）',
            ),
        ) from None
    return libcst


def fix_source(source: str, codes: Iterable[str] | None = None) -> tuple[str, int]:
    """The source with the certain fixes applied, and how many were applied.

    Args:
        source: Python code.
        codes: the rules to fix (default: every fixable rule); others are ignored.

    Raises:
        FixUnavailableError: libcst is missing.
        SyntaxError: the source does not parse.
    """
    cst = _libcst()
    wanted = FIXABLE & (frozenset(codes) if codes is not None else FIXABLE)
    targets = {(f.line, f.col - 1): f.code for f in lint_source(source, codes=wanted)}
    if not targets:
        return source, 0
    wrapper = cst.metadata.MetadataWrapper(cst.parse_module(source))
    positions = wrapper.resolve(cst.metadata.PositionProvider)
    applied = 0

    def target_of(node) -> str | None:
        start = positions[node].start
        return targets.get((start.line, start.column))

    class Fixer(cst.CSTTransformer):
        def leave_Expr(self, original, updated):  # libcst's method names
            nonlocal applied
            call = original.value
            if isinstance(call, cst.Call) and target_of(call) == "DK002":
                receiver = updated.value.func.value
                applied += 1
                return cst.Assign(targets=[cst.AssignTarget(target=receiver)], value=updated.value)
            return updated

        def leave_Call(self, original, updated):
            nonlocal applied
            if target_of(original) == "DK008":
                applied += 1
                argument = cst.Arg(
                    keyword=cst.Name("map_location"),
                    value=cst.SimpleString('"cpu"'),
                    equal=cst.AssignEqual(
                        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
                    ),
                )
                args = list(updated.args)
                if args and isinstance(args[-1].comma, cst.Comma):
                    # a trailing comma, often before a closing bracket on its own line: keep that layout
                    argument = argument.with_changes(comma=args[-1].comma)
                    comma = args[-1].comma.with_changes(whitespace_after=updated.whitespace_before_args)
                    args[-1] = args[-1].with_changes(comma=comma)
                return updated.with_changes(args=[*args, argument])
            return updated

    fixed = wrapper.module.visit(Fixer())
    return fixed.code, applied


def fix_paths(paths: Iterable[str], codes: Iterable[str] | None = None) -> dict[str, int]:
    """Fix the `.py` files named by `paths` in place; returns {path: fixes applied} for the changed ones.

    Files that do not parse are left for the linter to report.

    Raises:
        FixUnavailableError: libcst is missing.
    """
    _libcst()
    changed: dict[str, int] = {}
    for path in iter_files(paths):
        if not path.endswith(".py"):
            continue
        try:
            with open(path, encoding="utf-8") as handle:
                source = handle.read()
            fixed, count = fix_source(source, codes)
        except (OSError, UnicodeDecodeError, SyntaxError):
            continue
        if count:
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(fixed)
            changed[path] = count
    return changed
