"""pytest plugin for ``scripts/gpu-check`` (loaded with ``-p gpu_check_report``): one outcome per test.

Why a plugin and not pytest's output: gpu-check must say per lab notebook and per catalog family whether
it passed, failed or was skipped (and why), in a file, whatever pytest prints. The plugin collects every
call-phase report (setup failures and skips count too) and writes ``{nodeid: {"outcome", "reason",
"seconds"}}`` as JSON to the path in ``GPU_CHECK_REPORT`` when the session ends. Under xdist only the
controller writes, since it receives every worker's reports.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

_RESULTS: dict[str, dict] = {}


def _reason(report) -> str:
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    if report.failed:
        text = getattr(report, "longreprtext", "") or str(report.longrepr)
        return text.strip().splitlines()[-1][:500] if text.strip() else "failed"
    return ""


def pytest_runtest_logreport(report):
    """Keep the decisive phase: the call, or a setup that failed or skipped, or a failing teardown."""
    if report.passed and report.when != "call":
        return
    earlier = _RESULTS.get(report.nodeid)
    if report.when == "teardown" and earlier is not None and earlier["outcome"] != "passed":
        return  # the test already failed or skipped; its teardown error adds nothing
    _RESULTS[report.nodeid] = {
        "outcome": "error" if report.failed and report.when != "call" else report.outcome,
        "reason": _reason(report),
        "seconds": round(getattr(report, "duration", 0.0), 3),
    }
    if report.failed:  # nbval's whole text: the stored output against this machine's, cell by cell
        text = getattr(report, "longreprtext", "") or str(report.longrepr)
        _RESULTS[report.nodeid]["detail"] = text.strip()[:4000]


def pytest_sessionfinish(session):
    path = os.environ.get("GPU_CHECK_REPORT")
    if not path or hasattr(session.config, "workerinput"):  # xdist workers: the controller writes
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(_RESULTS, indent=1, sort_keys=True), encoding="utf-8")
