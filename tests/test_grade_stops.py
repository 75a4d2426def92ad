"""A kernel that dies or never stops: the exercises before the stopping cell count, the rest are "not
reached"; an answer that never returns costs its own exercise and at most its time limit. Each case is a run
of its own (its time limits are short, unlike the shared class's), so it can run beside the shared class on
another worker; what hangs sleeps, so it costs wall time, not CPU.
"""

from __future__ import annotations

import json

import pytest
from grade_attacks.classroom import LAB, insert_after, run_grader
from grade_attacks.lab01 import HANG, MINE, with_answers

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
    # The stuck cell's limit, then the notebook's: time for lab 1's cells before it on a busy machine (a few
    # seconds each), its own 10 s, and later cells waiting on a kernel that ignores the interrupt.
    done = run_grader(tmp_path, "--out", "out", "--timeout", "10", "--notebook-timeout", "45", "subs")
    assert done.returncode == 0, done.stderr[-2000:]
    (r,) = json.loads((tmp_path / "out" / "grades.json").read_text(encoding="utf-8"))
    assert r["status"] == status, r["reason"]
    passed = [e["passed"] for e in r["exercises"]]
    assert passed == [True, False, False]
    assert [e["how"] for e in r["exercises"]][1:] == ["not-reached", "not-reached"]
    assert r["exercises"][0]["how"] == "judged"
    assert "not reached" in r["exercises"][1]["en"] and "no cell that runs" not in r["exercises"][1]["en"]


#: ``--timeout`` of the hang's run: one probe of a learner's answer may take this long.
HANG_TIMEOUT = 10


def test_a_hang_inside_a_graded_function_costs_at_most_its_timeout(tmp_path):
    """Issue 22: an endless loop inside a graded function used to cost ~3.7 x ``--timeout``."""
    write(with_answers({**MINE, "def move_batch(": HANG}), tmp_path / "subs" / "mallory-hangs.ipynb")
    write(with_answers(MINE), tmp_path / "subs" / "alice-mine.ipynb")
    done = run_grader(tmp_path, "--out", "out", "--jobs", "2", "--timeout", str(HANG_TIMEOUT), "subs")
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {r["file"]: r for r in json.loads((tmp_path / "out" / "grades.json").read_text(encoding="utf-8"))}
    hang, normal = rows["subs/mallory-hangs.ipynb"], rows["subs/alice-mine.ipynb"]
    assert [e["passed"] for e in hang["exercises"]] == [False, True, True], "it costs its own exercise only"
    assert "did not finish within" in hang["exercises"][0]["en"]
    cost = hang["exercises"][0]["seconds"]  # measured by the evaluator, whatever the machine's load
    assert HANG_TIMEOUT <= cost <= 1.2 * HANG_TIMEOUT, f"the hang cost {cost:.0f} s"
    assert normal["exercises"][0]["seconds"] < HANG_TIMEOUT and normal["score"] == normal["max"]
