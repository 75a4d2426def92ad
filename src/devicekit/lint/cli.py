"""`devicekit-lint PATH...` / `python -m devicekit.lint PATH...`: the command line.

Exit status: 1 when something was found, 0 when not, 2 on a usage error or a file that could not be
linted (the other files are still linted and reported).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from devicekit.lint.core import Finding
from devicekit.lint.engine import LintError, lint_paths
from devicekit.lint.rules import RULES, select_codes
from devicekit.lint.sarif import to_sarif
from devicekit.messages import Message

FORMATS = ("text", "json", "sarif")


def _split(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [part for value in values for part in value.replace(" ", ",").split(",") if part]


def parser() -> argparse.ArgumentParser:
    """The argument parser of `devicekit-lint`."""
    p = argparse.ArgumentParser(
        prog="devicekit-lint",
        description="Find device bugs in PyTorch code before it runs (.py files, notebooks, folders).",
    )
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or folders (.py and .ipynb)")
    p.add_argument(
        "--select",
        action="append",
        metavar="CODES",
        help="rules to run, comma-separated codes or prefixes (DK0, DK901); default: the default rules",
    )
    p.add_argument("--ignore", action="append", metavar="CODES", help="rules to skip")
    p.add_argument("--format", choices=FORMATS, default="text", help="output format (default: text)")
    p.add_argument(
        "--lang",
        choices=("en", "zh"),
        default=None,
        help="language of the messages (default: DEVICEKIT_LANG, else English)",
    )
    p.add_argument(
        "--fix", action="store_true", help="rewrite the findings whose fix is certain (needs libcst)"
    )
    p.add_argument("--list-rules", action="store_true", help="print the rules and exit")
    return p


def _language(choice: str | None) -> str:
    if choice:
        return choice
    from devicekit.lang import current_language

    return current_language() or "en"


def location(path: str, cell: int | None, line: int, col: int) -> str:
    """`path:LINE:COL`, or `path:cell N:LINE:COL` in a notebook."""
    return f"{path}:cell {cell}:{line}:{col}" if cell is not None else f"{path}:{line}:{col}"


def format_text(findings: Sequence[Finding], errors: Sequence[LintError], lang: str) -> str:
    """flake8-style lines: `PATH:LINE:COL: DKnnn message`; files that could not be linted as `E999`."""
    lines = [f"{location(e.path, e.cell, e.line, e.col)}: E999 {e.message}" for e in errors]
    lines += [f"{location(f.path, f.cell, f.line, f.col)}: {f.code} {f.message(lang)}" for f in findings]
    return "\n".join(lines)


def format_json(findings: Sequence[Finding], errors: Sequence[LintError], lang: str) -> str:
    """A JSON array of `{path, line, col, code, message, scenario}` (plus `cell` in a notebook)."""
    items: list[dict[str, object]] = []
    for e in errors:
        items.append(
            {
                "path": e.path,
                "line": e.line,
                "col": e.col,
                "code": "E999",
                "message": e.message,
                "scenario": None,
                "cell": e.cell,
            }
        )
    for f in findings:
        items.append(
            {
                "path": f.path,
                "line": f.line,
                "col": f.col,
                "code": f.code,
                "message": f.message(lang),
                "scenario": f.scenario,
                "cell": f.cell,
            }
        )
    return json.dumps(items, ensure_ascii=False, indent=2)


def list_rules(lang: str) -> str:
    """One line per rule: code, scenario, default or opt-in, title."""
    rows = []
    for rule in RULES.values():
        status = (
            ("on" if rule.default else "opt-in") if lang == "en" else ("默认" if rule.default else "可选")
        )
        title = rule.title_zh if lang == "zh" else rule.title_en
        rows.append(f"{rule.code}  {rule.scenario or '-':>2}  {status:6}  {title}")
    return "\n".join(rows)


def _error(exc: Exception) -> Message:
    return Message(f"devicekit-lint: error: {exc}", f"devicekit-lint：错误：{exc}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    p = parser()
    args = p.parse_args(argv)
    lang = _language(args.lang)
    if args.list_rules:
        print(list_rules(lang))
        return 0
    if not args.paths:
        p.print_usage(sys.stderr)
        print(
            Message(
                "devicekit-lint: error: give at least one file or folder",
                "devicekit-lint：错误：请至少给出一个文件或文件夹",
            ).text(lang),
            file=sys.stderr,
        )
        return 2
    try:
        codes = select_codes(_split(args.select), _split(args.ignore))
    except ValueError as exc:
        print(
            Message(f"devicekit-lint: error: {exc}", f"devicekit-lint：错误：{exc}").text(lang),
            file=sys.stderr,
        )
        return 2
    if args.fix:
        from devicekit.lint.fix import FixUnavailableError, fix_paths

        try:
            changed = fix_paths(args.paths, codes)
        except FixUnavailableError as exc:
            print(
                Message(f"devicekit-lint: error: {exc}", f"devicekit-lint：错误：{exc}").text(lang),
                file=sys.stderr,
            )
            return 2
        for path, count in changed.items():
            print(
                Message(f"fixed {count} in {path}", f"{path}：修复了 {count} 处").text(lang), file=sys.stderr
            )
    findings, errors = lint_paths(args.paths, codes)
    if args.format == "json":
        print(format_json(findings, errors, lang))
    elif args.format == "sarif":
        print(json.dumps(to_sarif(findings, errors, lang), ensure_ascii=False, indent=2))
    else:
        text = format_text(findings, errors, lang)
        if text:
            print(text)
    if errors:
        return 2
    return 1 if findings else 0


def console() -> None:
    """Entry point of the `devicekit-lint` console script."""
    sys.exit(main())
