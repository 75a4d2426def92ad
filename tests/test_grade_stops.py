"""A kernel that dies or never stops: the exercises before the stopping cell count, the rest are "not
reached". Each case is a run of its own (its time limits are short, unlike the shared class's), so it can
run beside the shared class on another worker; the stuck cell sleeps, so it costs wall time, not CPU.
"""

from __future__ import annotations

import json

import pytest
from grade_attacks.classroom import LAB, insert_after, run_grader

from course_tools.submissions import solved_lab, write

pytestmark = pytest.mark.integration  # the grader runs the notebook in kernels of its own


@pytest.mark.parametrize(
    ("name", "cell", "status"),
    [
        ("dies.ipynb", "import os\nos._exit(1)", "kernel-died"),
        (
            "stuck.ipynb",
            "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "while True:\n    time.sleep(1)",
            "timeout",
        ),
    ],
)
def test_a_run_that_stops_keeps_the_exercises_before(tmp_path, name, cell, status):
    write(insert_after(solved_lab(LAB), '"move-batch"', cell), tmp_path / "subs" / name)
    done = run_grader(tmp_path, "--out", "out", "--timeout", "20", "--notebook-timeout", "90", "subs")
    assert done.returncode == 0, done.stderr[-2000:]
    (r,) = json.loads((tmp_path / "out" / "grades.json").read_text(encoding="utf-8"))
    assert r["status"] == status, r["reason"]
    passed = [e["passed"] for e in r["exercises"]]
    assert passed == [True, False, False]
    assert [e["how"] for e in r["exercises"]][1:] == ["not-reached", "not-reached"]
    assert r["exercises"][0]["how"] == "judged"
    assert "not reached" in r["exercises"][1]["en"] and "no cell that runs" not in r["exercises"][1]["en"]
