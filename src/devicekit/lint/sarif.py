"""SARIF 2.1.0 output, the format GitHub code scanning reads.

Every location is a place in the file as it is on disk, because that is what code scanning annotates: in
a notebook, the line and column of the `.ipynb` file's JSON that hold the cell's line (the cell and the
line within it are kept in the result's `properties` and in the location's message).
"""

from __future__ import annotations

from collections.abc import Sequence

from devicekit.lint.core import Finding
from devicekit.lint.engine import LintError
from devicekit.lint.rules import RULES
from devicekit.messages import Message

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFO_URI = "https://github.com/devicekit-course/pytorch-device-course"
#: The course site: GitHub Pages of INFO_URI (`.github/workflows/pages.yml` deploys it), English at the
#: root and Chinese under `zh/`; each rule has an anchor on the lint page (`lint/#dk001`).
SITE_URL = "https://devicekit-course.github.io/pytorch-device-course/"


def help_uri(code: str, lang: str = "en") -> str:
    """The rule's section of the lint page, in the chosen language."""
    return f"{SITE_URL}{'zh/' if lang == 'zh' else ''}lint/#{code.lower()}"


def _version() -> str:
    from devicekit import __version__

    return __version__


def _location(item: Finding | LintError, lang: str) -> dict:
    if item.cell is None:
        line, col = item.line, item.col
    else:
        line, col = item.file_line or 1, item.file_col or 0
    region: dict[str, int] = {"startLine": max(line, 1)}
    if col > 0:
        region["startColumn"] = col
    location: dict = {
        "physicalLocation": {"artifactLocation": {"uri": item.path.replace("\\", "/")}, "region": region}
    }
    if item.cell is not None:
        where = Message(
            f"cell {item.cell}, line {item.line}, column {item.col}",
            f"单元格 {item.cell}，第 {item.line} 行第 {item.col} 列",
        )
        location["message"] = {"text": where.text(lang)}
    return location


def _properties(item: Finding | LintError) -> dict:
    if item.cell is None:
        return {}
    return {"properties": {"cell": item.cell, "lineInCell": item.line, "columnInCell": item.col}}


def to_sarif(findings: Sequence[Finding], errors: Sequence[LintError], lang: str = "en") -> dict:
    """A SARIF 2.1.0 log with one run: the rules, a result per finding, a notification per unlintable file."""
    rules = [
        {
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.title_zh if lang == "zh" else rule.title_en},
            "help": {"text": rule.fix_zh if lang == "zh" else rule.fix_en},
            "helpUri": help_uri(rule.code, lang),
            "properties": {"scenario": rule.scenario, "default": rule.default},
        }
        for rule in RULES.values()
    ]
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    results = [
        {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": "warning",
            "message": {"text": f.message(lang)},
            "locations": [_location(f, lang)],
            **_properties(f),
        }
        for f in findings
    ]
    notifications = [
        {
            "level": "error",
            "message": {"text": f"{e.path}: {e.message.text(lang)}"},
            "locations": [_location(e, lang)],
            **_properties(e),
        }
        for e in errors
    ]
    driver = {
        "name": "devicekit-lint",
        "version": _version(),
        "informationUri": INFO_URI,
        "rules": rules,
    }
    run: dict = {"tool": {"driver": driver}, "results": results}
    if notifications:
        run["invocations"] = [{"executionSuccessful": False, "toolExecutionNotifications": notifications}]
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}
