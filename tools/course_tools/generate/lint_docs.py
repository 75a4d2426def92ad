"""The rules part of the devicelint pages (`docs/lint.md`, `docs/lint.zh.md`), generated from the registry.

`devicekit.lint.rules.RULES` is the one source of every rule's code, scenario, title, fix and examples.
This module lays them out between the markers `<!-- rules:start -->` and `<!-- rules:end -->` of each
page: a table, then one section per rule (anchor `#dkNNN`) with the example the rule reports and its
fixed twin. The tests check the pages are up to date and lint every example as it appears on the page.

Rewrite the pages: `python -m course_tools.generate.lint_docs`; only check them: add `--check`.
"""

from __future__ import annotations

import argparse
import re
import sys

from course_tools.paths import ROOT
from devicekit.lint.rules import RULES, Rule

PAGES = {"en": ROOT / "docs" / "lint.md", "zh": ROOT / "docs" / "lint.zh.md"}
START, END = "<!-- rules:start -->", "<!-- rules:end -->"
_MARKED = re.compile(re.escape(START) + r".*?" + re.escape(END), re.S)

TEXT = {
    "en": {
        "table": "| Rule | Scenario | Runs | What it finds |\n|---|---|---|---|",
        "on": "by default",
        "opt-in": "when selected",
        "style": "style",
        "fix": "Fix",
        "bad": "Reported:",
        "good": "Not reported:",
        "fixable": "`--fix` rewrites it.",
        "scenario": "Scenario {n}",
    },
    "zh": {
        "table": "| 规则 | 场景 | 何时运行 | 检查什么 |\n|---|---|---|---|",
        "on": "默认",
        "opt-in": "可选（需用 --select 开启）",
        "style": "风格",
        "fix": "解决方法",
        "bad": "会报告：",
        "good": "不会报告：",
        "fixable": "`--fix` 可自动改写。",
        "scenario": "场景 {n}",
    },
}


def _title(rule: Rule, lang: str) -> str:
    return rule.title_zh if lang == "zh" else rule.title_en


def _fix(rule: Rule, lang: str) -> str:
    return rule.fix_zh if lang == "zh" else rule.fix_en


def _scenario(rule: Rule, lang: str) -> str:
    text = TEXT[lang]
    return text["style"] if rule.scenario == 0 else text["scenario"].format(n=rule.scenario)


def rules_markdown(lang: str) -> str:
    """The generated part of the page in `lang` (`en` or `zh`), markers included.

    Raises:
        ValueError: `lang` is neither `en` nor `zh`.
    """
    if lang not in TEXT:
        raise ValueError(f"unknown language {lang!r}: use 'en' or 'zh'")
    text = TEXT[lang]
    rows = [text["table"]]
    for rule in RULES.values():
        runs = text["on"] if rule.default else text["opt-in"]
        scenario = "–" if rule.scenario == 0 else str(rule.scenario)
        rows.append(f"| [{rule.code}](#{rule.code.lower()}) | {scenario} | {runs} | {_title(rule, lang)} |")
    parts = [START, "", *rows, ""]
    for rule in RULES.values():
        runs = text["on"] if rule.default else text["opt-in"]
        parts += [
            f"### {rule.code} · `{rule.name}` {{ #{rule.code.lower()} }}",
            "",
            f"{_scenario(rule, lang)} · {runs}",
            "",
            f"{_title(rule, lang)}{'。' if lang == 'zh' else '.'}",
            "",
            f"**{text['fix']}**{'：' if lang == 'zh' else ': '}{_fix(rule, lang)}"
            + ((f"。{text['fixable']}" if lang == "zh" else f". {text['fixable']}") if rule.fixable else ""),
            "",
            text["bad"],
            "",
            "```python",
            rule.bad.rstrip("\n"),
            "```",
            "",
            text["good"],
            "",
            "```python",
            rule.good.rstrip("\n"),
            "```",
            "",
        ]
    parts.append(END)
    return "\n".join(parts)


def render(page: str, lang: str) -> str:
    """`page` with its generated part replaced by the current one.

    Raises:
        ValueError: the page has no `<!-- rules:start -->` ... `<!-- rules:end -->` block.
    """
    if not _MARKED.search(page):
        raise ValueError(f"the {lang} lint page has no {START} ... {END} block")
    generated = rules_markdown(lang)
    return _MARKED.sub(lambda _: generated, page, count=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if a page is out of date, change nothing"
    )
    args = parser.parse_args(argv)
    stale = []
    for lang, path in PAGES.items():
        page = path.read_text(encoding="utf-8")
        fresh = render(page, lang)
        if fresh != page:
            stale.append(path)
            if not args.check:
                path.write_text(fresh, encoding="utf-8")
    for path in stale:
        print(f"{'out of date' if args.check else 'updated'}: {path.relative_to(ROOT)}")
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
