"""The judged path of devicekit-grade, end to end, on lab 1 with its released checks (probe + judge) and
the instructor's hidden judges (``grading/hidden``): a learner's own work, an untouched Chinese lab, and each
attack of issue 22 as a submission (`grade_attacks.lab01`), all in the shared class that one run of the
command grades per test run (`grade_attacks.classroom`, the ``graded_class`` fixture).

Isolation is the grader's default, bubblewrap; where it cannot start, the run passes
``--trust-submissions`` and the tests that need a sandbox are skipped.
"""

from __future__ import annotations

import json

import pytest
from grade_attacks.classroom import OUT, TRUST
from grade_attacks.lab01 import FORGED

pytestmark = pytest.mark.integration  # the grader runs every notebook in kernels of its own


@pytest.fixture
def graded(graded_class):
    """The shared class (`grade_attacks.classroom`), graded once per test run with the hidden judges."""
    return graded_class


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
    r = row(graded, "01-devices-untouched.zh.ipynb")
    assert (r["score"], r["lang"]) == (0, "zh")
    assert all(line.startswith("✗ 练习") for line in r["feedback"][:3]), r["feedback"]


def test_the_hidden_judge_decides_what_the_public_one_cannot(graded):
    # the public judge of exercise 3 checks the format only (no reference answer in the student wheel); the
    # hidden judge knows the truth: right predictions pass it, four wrong booleans do not
    assert passed(row(graded, "dan-renamed.ipynb"))[2] is True
    r = row(graded, "nina-wrong-predictions.ipynb")
    assert passed(r) == [True, True, False], r["feedback"]
    assert "not every prediction holds" in r["exercises"][2]["en"]


def test_identical_and_renamed_copies_are_flagged_on_both_sides(graded):
    assert "identical-file" in row(graded, "alice-mine.ipynb")["flags"]
    assert "identical-file" in row(graded, "carol-twin.ipynb")["flags"]
    renamed = row(graded, "dan-renamed.ipynb")
    assert {"identical-code", "near-identical-code"} & set(renamed["flags"]), renamed["flags"]
    assert "alice-mine.ipynb" in renamed["reason"] or "carol-twin.ipynb" in renamed["reason"]


def test_the_solution_without_its_markers_is_flagged(graded):
    r = row(graded, "erin-copied-solution.ipynb")
    assert "published-solution" in r["flags"] and r["score"] == 3
    assert "without its markers" in r["reason"] and "去掉了标记行" in r["reason_zh"]


def test_reading_the_solutions_through_the_package_path_is_flagged_and_finds_nothing(graded):
    r = row(graded, "frank-reads-solutions.ipynb")
    assert "reads-course-files" in r["flags"]
    if TRUST:
        pytest.skip("no bubblewrap here (--trust-submissions): nothing hides solutions/ from a notebook")
    assert r["score"] == 0, r["feedback"]


def test_forged_result_rows_score_nothing_and_never_reach_the_feedback(graded):
    r = row(graded, "grace-forges-results.ipynb")
    assert r["score"] == 0, r["feedback"]
    assert FORGED not in json.dumps(r, ensure_ascii=False)
    for path in (graded["root"] / OUT).rglob("*"):
        if path.is_file():
            assert FORGED not in path.read_text(encoding="utf-8-sig", errors="replace"), path.name


def test_imports_of_check_internals_are_flagged(graded):
    assert "imports-check-internals" in row(graded, "heidi-imports-internals.ipynb")["flags"]


def test_check_cells_faked_or_deleted_are_flagged_and_change_nothing(graded):
    fake = row(graded, "ivan-fake-checks.ipynb")
    assert {"check-cell-faked", "check-cell-deleted"} <= set(fake["flags"]) and fake["score"] == 0
    deleted = row(graded, "judy-deleted-checks.ipynb")
    assert "check-cell-deleted" in deleted["flags"] and deleted["score"] == 3


def test_the_isolation_of_this_run_is_reported(graded):
    page = (graded["root"] / OUT / "report.html").read_text(encoding="utf-8")
    assert "isolation" in page.lower()
