"""The judged path of devicekit-grade, end to end, with lab 1's checks in the two-part API
(``tests/grade_attacks/checks/lab01.py``, passed with ``--checks``) and its hidden judge
(``tests/grade_attacks/hidden/lab01.py``, ``--hidden``): a learner's own work, an untouched Chinese lab,
and each attack of issue 22 as a submission (``tests/grade_attacks/lab01.py``), graded in ONE run of the
command shared by every test here (module fixture).

Isolation is the grader's default: on this machine that is whatever `sandbox.choose_isolation` picks; where
it would refuse, the run passes ``--trust-submissions`` and the tests that need a sandbox are skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from grade_attacks.lab01 import CLASS, FORGED

from course_tools.paths import LABS, ROOT, SOLUTIONS
from course_tools.submissions import write
from devicekit_grade import sandbox

ATTACKS = Path(__file__).with_name("grade_attacks")
TIMEOUT = 40


def _mode() -> str:
    import nbclient

    as_root = sandbox.running_as_root()
    private = sandbox.usable_by_others([sys.executable, nbclient.__file__]) if as_root else ""
    try:
        return sandbox.choose_isolation("auto", as_root, private, sandbox.bwrap_works(), False)[0]
    except sandbox.Refused:
        return "refused"


MODE = _mode()


def run_grader(cwd: Path, *args: str, timeout: float = 1800) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-m", "devicekit_grade", *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("judged")
    for name, make in CLASS.items():
        write(make(), root / "subs" / name)
    args = ["--out", "out", "-j", "2", "--timeout", str(TIMEOUT), "--labs", str(LABS)]
    args += ["--solutions", str(SOLUTIONS), "--checks", str(ATTACKS / "checks")]
    args += ["--hidden", str(ATTACKS / "hidden")]
    if MODE == "refused":
        args.append("--trust-submissions")
    started = time.monotonic()
    done = run_grader(root, *args, "subs")
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads((root / "out" / "grades.json").read_text(encoding="utf-8"))
    return {"root": root, "done": done, "took": took, "rows": {Path(r["file"]).name: r for r in rows}}


def row(graded, name: str) -> dict:
    return graded["rows"][name]


def passed(r: dict) -> list[bool]:
    return [e["passed"] for e in r["exercises"]]


def test_a_learners_own_work_is_judged_from_data_with_full_marks_and_no_flag(graded):
    r = row(graded, "alice-mine.ipynb")
    assert (r["status"], r["score"], r["max"]) == ("graded", 3, 3), r["reason"]
    assert [e["how"] for e in r["exercises"]] == ["judged"] * 3
    # carol handed in the same file, judy the same code: those flags are right; no other flag
    assert not set(r["flags"]) - {"identical-file", "identical-code"}, r["flags"]


def test_an_untouched_lab_scores_zero_in_chinese(graded):
    r = row(graded, "bob-untouched.zh.ipynb")
    assert (r["score"], r["lang"]) == (0, "zh")
    assert all(line.startswith("✗ 练习") for line in r["feedback"][:3]), r["feedback"]


def test_the_hidden_judge_decides_what_the_public_one_cannot(graded):
    # the public judge of exercise 3 checks the format only (no reference answer in the student wheel); the
    # hidden judge knows the truth: right predictions pass it, four wrong booleans do not
    assert passed(row(graded, "dan-renamed.ipynb"))[2] is True
    r = row(graded, "nina-wrong-predictions.ipynb")
    assert passed(r) == [True, True, False], r["feedback"]
    assert "at least one prediction is wrong" in r["exercises"][2]["en"]


def test_identical_and_renamed_copies_are_flagged_on_both_sides(graded):
    assert "identical-file" in row(graded, "alice-mine.ipynb")["flags"]
    assert "identical-file" in row(graded, "carol-twin.ipynb")["flags"]
    renamed = row(graded, "dan-renamed.ipynb")
    assert {"identical-code", "near-identical-code"} & set(renamed["flags"]), renamed["flags"]
    assert "alice-mine.ipynb" in renamed["reason"] or "carol-twin.ipynb" in renamed["reason"]


def test_the_solution_without_its_markers_is_flagged(graded):
    r = row(graded, "erin-copied-solution.ipynb")
    assert "solution-copy" in r["flags"] and r["score"] == 3


def test_reading_the_solutions_through_the_package_path_is_flagged_and_finds_nothing(graded):
    r = row(graded, "frank-reads-solutions.ipynb")
    assert "reads-course-files" in r["flags"]
    if MODE in ("refused", "none", "user"):
        pytest.skip(f"isolation {MODE!r} does not hide solutions/ from a notebook (see the grading guide)")
    assert r["score"] == 0, r["feedback"]


def test_forged_result_rows_score_nothing_and_never_reach_the_feedback(graded):
    r = row(graded, "grace-forges-results.ipynb")
    assert r["score"] == 0, r["feedback"]
    assert FORGED not in json.dumps(r, ensure_ascii=False)
    for path in (graded["root"] / "out").rglob("*"):
        if path.is_file():
            assert FORGED not in path.read_text(encoding="utf-8-sig", errors="replace"), path.name


def test_imports_of_check_internals_are_flagged(graded):
    assert "imports-check-internals" in row(graded, "heidi-imports-internals.ipynb")["flags"]


def test_check_cells_faked_or_deleted_are_flagged_and_change_nothing(graded):
    fake = row(graded, "ivan-fake-checks.ipynb")
    assert {"check-cell-faked", "check-cell-deleted"} <= set(fake["flags"]) and fake["score"] == 0
    deleted = row(graded, "judy-deleted-checks.ipynb")
    assert "check-cell-deleted" in deleted["flags"] and deleted["score"] == 3


def test_a_hang_inside_a_graded_function_costs_at_most_its_timeout(graded):
    hang, normal = row(graded, "mallory-hangs.ipynb"), row(graded, "alice-mine.ipynb")
    assert passed(hang)[0] is False
    assert "did not finish within" in hang["exercises"][0]["en"]
    assert passed(hang)[1:] == [True, True], "one hanging answer costs its own exercise only"
    cost = hang["exercises"][0]["seconds"]  # measured by the evaluator, whatever the machine's load
    assert TIMEOUT <= cost <= 1.2 * TIMEOUT, f"the hang cost {cost:.0f} s (--timeout {TIMEOUT})"
    assert normal["exercises"][0]["seconds"] < TIMEOUT


def test_the_isolation_of_this_run_is_reported(graded):
    page = (graded["root"] / "out" / "report.html").read_text(encoding="utf-8")
    assert "isolation" in page.lower()
