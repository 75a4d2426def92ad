"""`devicekit-lint PATH...` / `python -m devicekit.lint PATH...`: the command line.

Exit status: 1 when something was found, 0 when not, 2 on a usage error or a file that could not be
linted (the other files are still linted and reported).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence

from devicekit.lint.core import Finding
from devicekit.lint.engine import LintError, lint_paths
from devicekit.lint.rules import RULES, select_codes
from devicekit.lint.sarif import to_sarif
from devicekit.messages import Message

FORMATS = ("text", "json", "sarif")
LANGUAGES = ("en", "zh")


def _split(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [part for value in values for part in value.replace(" ", ",").split(",") if part]


# argparse's own messages (Python 3.10-3.13), and what they say in Chinese.
_ARGPARSE_ZH = [
    (re.compile(r"^argument (?P<arg>.+?): (?P<rest>.+)$", re.S), "参数 {arg}：{rest}"),
    (
        re.compile(r"^invalid choice: (?P<value>.+?) \(choose from (?P<choices>.+)\)$"),
        "无效的选项 {value}（可选：{choices}）",
    ),
    (re.compile(r"^invalid (?P<type>\w+) value: (?P<value>.+)$"), "无效的 {type} 值：{value}"),
    (re.compile(r"^expected one argument$"), "需要一个值"),
    (re.compile(r"^expected at least one argument$"), "至少需要一个值"),
    (re.compile(r"^expected at most one argument$"), "最多只能有一个值"),
    (re.compile(r"^unrecognized arguments: (?P<args>.+)$"), "无法识别的参数：{args}"),
    (re.compile(r"^the following arguments are required: (?P<args>.+)$"), "缺少必需的参数：{args}"),
    (
        re.compile(r"^ambiguous option: (?P<option>\S+) could match (?P<matches>.+)$"),
        "选项 {option} 有歧义，可能是：{matches}",
    ),
    (re.compile(r"^ignored explicit argument (?P<value>.+)$"), "忽略了显式给出的值 {value}"),
]


def _argparse_zh(message: str) -> str:
    """argparse's error `message` in Chinese (an unknown one is quoted as it is)."""
    for pattern, template in _ARGPARSE_ZH:
        match = pattern.match(message)
        if match:
            parts = match.groupdict()
            if "rest" in parts:
                parts["rest"] = _argparse_zh(parts["rest"])
            for key in ("choices", "matches", "args"):  # lists of values: 、 between them
                if key in parts:
                    parts[key] = "、".join(parts[key].split(", "))
            return template.format(**parts)
    return f"命令行参数有误（{message}）"


class _Parser(argparse.ArgumentParser):
    """An argument parser that speaks one language: its help, usage and errors."""

    def __init__(self, lang: str, **kwargs) -> None:
        self.lang = lang
        super().__init__(add_help=False, **kwargs)
        if lang == "zh":
            self._positionals.title = "位置参数"
            self._optionals.title = "选项"

    def _usage_prefix(self) -> str:
        return "用法：" if self.lang == "zh" else "usage: "

    def format_usage(self) -> str:
        formatter = self._get_formatter()
        formatter.add_usage(self.usage, self._actions, self._mutually_exclusive_groups, self._usage_prefix())
        return formatter.format_help()

    def format_help(self) -> str:
        formatter = self._get_formatter()
        formatter.add_usage(self.usage, self._actions, self._mutually_exclusive_groups, self._usage_prefix())
        formatter.add_text(self.description)
        for group in self._action_groups:
            formatter.start_section(group.title)
            formatter.add_text(group.description)
            formatter.add_arguments(group._group_actions)
            formatter.end_section()
        formatter.add_text(self.epilog)
        text = formatter.format_help()
        if self.lang == "zh":  # argparse puts an ASCII colon after each section's title
            for group in self._action_groups:
                text = text.replace(f"\n{group.title}:\n", f"\n{group.title}：\n")
        return text

    def error(self, message: str):  # type: ignore[override]
        self.print_usage(sys.stderr)
        text = _argparse_zh(message) if self.lang == "zh" else message
        self.exit(2, _error_line(Message(text, text)).text(self.lang) + "\n")


def _error_line(message: Message) -> Message:
    return Message(f"devicekit-lint: error: {message.en}", f"devicekit-lint：错误：{message.zh}")


def parser(lang: str = "en") -> argparse.ArgumentParser:
    """The argument parser of `devicekit-lint`, whose help, usage and errors are in `lang`."""

    def say(en: str, zh: str) -> str:
        return Message(en, zh).text(lang)

    p = _Parser(
        lang,
        prog="devicekit-lint",
        description=say(
            "Find device bugs in PyTorch code before it runs (.py files, notebooks, folders).",
            "在 PyTorch 代码运行之前找出设备问题（.py 文件、notebook、文件夹）。",
        ),
    )
    p.add_argument("-h", "--help", action="help", help=say("show this help and exit", "显示本帮助并退出"))
    p.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help=say("files or folders (.py and .ipynb)", "文件或文件夹（.py 和 .ipynb）"),
    )
    p.add_argument(
        "--select",
        action="append",
        metavar="CODES",
        help=say(
            "rules to run, comma-separated codes or prefixes (DK0, DK901); default: the default rules",
            "要运行的规则，用逗号分隔的编号或前缀（DK0、DK901）；默认：默认规则",
        ),
    )
    p.add_argument("--ignore", action="append", metavar="CODES", help=say("rules to skip", "要跳过的规则"))
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help=say("output format (default: text)", "输出格式（默认：text）"),
    )
    p.add_argument(
        "--lang",
        choices=LANGUAGES,
        default=None,
        help=say(
            "language of the messages (default: DEVICEKIT_LANG, else English)",
            "输出说明的语言（默认看 DEVICEKIT_LANG，否则用英文）",
        ),
    )
    p.add_argument(
        "--fix",
        action="store_true",
        help=say(
            "rewrite the findings whose fix is certain (needs libcst)",
            "改写解决方法确定的问题（需要 libcst）",
        ),
    )
    p.add_argument(
        "--list-rules", action="store_true", help=say("print the rules and exit", "列出规则并退出")
    )
    return p


def _language(argv: Sequence[str]) -> str:
    """The language asked for: `--lang` (read before the rest, so that help and errors use it too), else
    `DEVICEKIT_LANG`, else English."""
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        value = None
        if arg == "--lang" and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith("--lang="):
            value = arg.split("=", 1)[1]
        if value in LANGUAGES:
            return value
    from devicekit.lang import current_language

    return current_language() or "en"


def location(item: Finding | LintError, lang: str) -> tuple[str, str]:
    """`PATH:LINE:COL` as every `file:line:col` parser reads it, and the words that go before the message.

    In a notebook, LINE and COL are the place in the `.ipynb` file itself (where its JSON holds that line
    of the cell; line 1, column 1 when that cannot be known), and the words name the cell and the line in
    it: `lab.ipynb:57:6: DK002 (cell 4, line 2) ...`.
    """
    if item.cell is None:
        return f"{item.path}:{item.line}:{item.col}", ""
    where = Message(
        f"(cell {item.cell}, line {item.line}) ", f"（单元格 {item.cell}，第 {item.line} 行）"
    ).text(lang)
    return f"{item.path}:{item.file_line or 1}:{item.file_col or 1}", where


def format_text(findings: Sequence[Finding], errors: Sequence[LintError], lang: str) -> str:
    """flake8-style lines: `PATH:LINE:COL: DKnnn message`; files that could not be linted as `E999`."""
    lines = []
    for e in errors:
        place, where = location(e, lang)
        lines.append(f"{place}: E999 {where}{e.message.text(lang)}")
    for f in findings:
        place, where = location(f, lang)
        lines.append(f"{place}: {f.code} {where}{f.message(lang)}")
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
                "message": e.message.text(lang),
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
    import json  # imported when asked for: the text output, the usual one, starts without it

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
    """`devicekit-lint: error: ...` for one of devicekit's bilingual exceptions."""
    return _error_line(Message(getattr(exc, "en", str(exc)), getattr(exc, "zh", str(exc))))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    lang = _language(argv)
    p = parser(lang)
    args = p.parse_args(argv)
    if args.list_rules:
        print(list_rules(lang))
        return 0
    if not args.paths:
        p.print_usage(sys.stderr)
        print(
            _error_line(Message("give at least one file or folder", "请至少给出一个文件或文件夹")).text(lang),
            file=sys.stderr,
        )
        return 2
    try:
        codes = select_codes(_split(args.select), _split(args.ignore))
    except ValueError as exc:
        print(_error(exc).text(lang), file=sys.stderr)
        return 2
    if args.fix:
        from devicekit.lint.fix import FixUnavailableError, fix_paths

        try:
            changed = fix_paths(args.paths, codes)
        except FixUnavailableError as exc:
            print(_error(exc).text(lang), file=sys.stderr)
            return 2
        for path, count in changed.items():
            print(
                Message(f"fixed {count} in {path}", f"{path}：修复了 {count} 处").text(lang), file=sys.stderr
            )
    findings, errors = lint_paths(args.paths, codes)
    if args.format == "json":
        print(format_json(findings, errors, lang))
    elif args.format == "sarif":
        import json

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
