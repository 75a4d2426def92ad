"""SARIF 2.1.0 output, the format GitHub code scanning reads."""

from __future__ import annotations

from collections.abc import Sequence

from devicekit.lint.core import Finding
from devicekit.lint.engine import LintError
from devicekit.lint.rules import RULES

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFO_URI = "https://github.com/devicekit-course/pytorch-device-course"


def _location(path: str, line: int, col: int, cell: int | None) -> dict:
    region: dict[str, int] = {"startLine": max(line, 1)}
    if col > 0:
        region["startColumn"] = col
    location: dict = {
        "physicalLocation": {"artifactLocation": {"uri": path.replace("\\", "/")}, "region": region}
    }
    if cell is not None:
        location["message"] = {"text": f"cell {cell}"}
    return location


def to_sarif(findings: Sequence[Finding], errors: Sequence[LintError], lang: str = "en") -> dict:
    """A SARIF 2.1.0 log with one run: the rules, a result per finding, a notification per unlintable file."""
    rules = [
        {
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.title_zh if lang == "zh" else rule.title_en},
            "help": {"text": rule.fix_zh if lang == "zh" else rule.fix_en},
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
            "locations": [_location(f.path, f.line, f.col, f.cell)],
        }
        for f in findings
    ]
    notifications = [
        {
            "level": "error",
            "message": {"text": f"{e.path}: {e.message}"},
            "locations": [_location(e.path, e.line, e.col, e.cell)],
        }
        for e in errors
    ]
    run: dict = {
        "tool": {"driver": {"name": "devicekit-lint", "informationUri": INFO_URI, "rules": rules}},
        "results": results,
    }
    if notifications:
        run["invocations"] = [{"executionSuccessful": False, "toolExecutionNotifications": notifications}]
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}
