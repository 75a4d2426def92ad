"""A kernel that dies or never stops: the exercises before the stopping cell count, the rest are "not
reached"; an answer that never returns costs its own exercise and at most its time limit. The cases share
one run of their own (its time limits are short, unlike the shared class's), two notebooks at a time, so it
can run beside the shared class on another worker; what hangs sleeps, so it costs wall time, not CPU.
"""

from __future__ import annotations

import json

import pytest
from grade_attacks.classroom import LAB, insert_after, run_grader
from grade_attacks.lab01 import HANG, MINE, with_answers

from course_tools.submissions import solved_lab, write

pytestmark = pytest.mark.integration  # the grader runs the notebook in kernels of its own

#: ``--timeout`` of the run: a cell, or one probe of a learner's answer, may take this long.
STOP_TIMEOUT = 10
NOTEBOOK_TIMEOUT = 300
STOPPING_CELLS = {
    "dies.ipynb": ("import os\nos._exit(1)", "kernel-died"),
    # the interrupt ends the kernel: reported as its death, not as a cell that ignored the interrupt
    "dies-when-interrupted.ipynb": (
        "import os, signal, time\nsignal.signal(signal.SIGINT, lambda *_: os._exit(1))\nwhile True:\n"
        "    time.sleep(1)",
        "kernel-died",
    ),
    "stuck.ipynb": (
        "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    time.sleep(1)",
        "timeout",
    ),
}


@pytest.fixture(scope="module")
def stopped(tmp_path_factory) -> dict[str, dict]:
    """One run over the stopping notebooks, a hanging answer and a normal one: {file name: row}."""
    root = tmp_path_factory.mktemp("stops")
    for name, (cell, _) in STOPPING_CELLS.items():
        write(insert_after(solved_lab(LAB), '"move-batch"', cell), root / "subs" / name)
    write(with_answers({**MINE, "def move_batch(": HANG}), root / "subs" / "mallory-hangs.ipynb")
    write(with_answers(MINE), root / "subs" / "alice-mine.ipynb")
    # The notebook's limit is long: the stuck notebook must stop on its own, a cell time limit after the
    # interrupt it ignores, not by this limit (then its row would say so, and the test below fails).
    options = ["--jobs", "2", "--timeout", str(STOP_TIMEOUT), "--notebook-timeout", str(NOTEBOOK_TIMEOUT)]
    done = run_grader(root, "--out", "out", *options, "subs")
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads((root / "out" / "grades.json").read_text(encoding="utf-8"))
    return {r["file"].removeprefix("subs/"): r for r in rows}


@pytest.mark.parametrize("name", sorted(STOPPING_CELLS))
def test_a_run_that_stops_keeps_the_exercises_before(stopped, name):
    r = stopped[name]
    assert r["status"] == STOPPING_CELLS[name][1], r["reason"]
    passed = [e["passed"] for e in r["exercises"]]
    assert passed == [True, False, False]
    assert [e["how"] for e in r["exercises"]][1:] == ["not-reached", "not-reached"]
    assert r["exercises"][0]["how"] == "judged"
    assert "not reached" in r["exercises"][1]["en"] and "no cell that runs" not in r["exercises"][1]["en"]


def test_a_hang_inside_a_graded_function_costs_at_most_its_timeout(stopped):
    """Issue 22: an endless loop inside a graded function used to cost ~3.7 x ``--timeout``."""
    hang, normal = stopped["mallory-hangs.ipynb"], stopped["alice-mine.ipynb"]
    assert [e["passed"] for e in hang["exercises"]] == [False, True, True], "it costs its own exercise only"
    assert "did not finish within" in hang["exercises"][0]["en"]
    cost = hang["exercises"][0]["seconds"]  # measured by the evaluator, whatever the machine's load
    assert STOP_TIMEOUT <= cost <= 1.2 * STOP_TIMEOUT, f"the hang cost {cost:.0f} s"
    assert normal["exercises"][0]["seconds"] < STOP_TIMEOUT and normal["score"] == normal["max"]


def test_a_cell_that_ignores_its_interrupt_stops_the_run_there_not_at_the_notebook_limit(stopped):
    """A kernel still busy a cell time limit after its interrupt would keep every later cell waiting until
    the notebook's own limit (10 x ``--timeout`` by default): the run stops at that cell instead."""
    r = stopped["stuck.ipynb"]
    assert "did not stop when interrupted: stopped there" in r["reason"], r["reason"]
    assert f"{NOTEBOOK_TIMEOUT} s" not in r["reason"]
    (note,) = r["notes"]
    assert "was still running 10 s after it was interrupted" in note["en"], note
    assert "被中断后又过了 10 秒仍未停止" in note["zh"] and "此前的练习照常计分" in note["zh"], note
    # two runs (the second up to the stuck cell): each far below the notebook limit
    assert r["duration_s"] < NOTEBOOK_TIMEOUT / 2, r["duration_s"]
