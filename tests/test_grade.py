"""devicekit-grade end to end: the shared class (`grade_attacks.classroom`, graded once per test run by the
command as an instructor runs it, two notebooks at a time), with every lab's correct submission, the untouched
Chinese notebooks of labs 1 and 5 and, for lab 1, each attack from issue 16 as a submission. Each attack gets
the right grade and leaves the other rows, the submissions and the output folder untouched. (Issue 22's
attacks, in the same class: ``test_grade_judged.py``.)

The grades are the grader's own: its checks run in a process the notebooks never ran in. Limits are
generous (a busy 2-core machine); nothing here looks at a process or file it did not create.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from grade_attacks.classroom import (
    DETACHED_DEADLINE_S,
    LAB,
    LABS,
    OUT,
    ROW_LIMIT_S,
    TRUST,
    UNTOUCHED_LABS,
    processes_with,
    run_grader,
    sha256,
    wait_until_gone,
)

from course_tools.submissions import as_student_work, lab_notebook, solution_notebook, write
from devicekit_grade import sandbox

pytestmark = pytest.mark.integration  # the grader runs every notebook in kernels of its own


@pytest.fixture
def graded(graded_class):
    """The shared class, graded once per test run (``conftest.graded_class``, `grade_attacks.classroom`)."""
    return graded_class


def row(graded, name: str) -> dict:
    assert graded["returncode"] == 0, graded["stderr"][-3000:]
    return graded["rows"][name]


def passed(r: dict) -> list[bool]:
    return [e["passed"] for e in r["exercises"]]


# --- every lab: a correct submission gets full marks, an untouched one zero ---------------------------------


@pytest.mark.parametrize("lab", LABS)
def test_a_correct_submission_gets_full_marks(graded, lab):
    r = row(graded, f"{lab}-correct.ipynb")
    assert (r["status"], r["lab"]) == ("graded", lab), r["reason"]
    # the tests' correct work is the published solution's code without its markers: flagged, not zeroed
    assert "published-solution" in r["flags"]
    assert all(e["how"] == "judged" for e in r["exercises"]), r["feedback"]
    assert r["score"] == r["max"] > 0 and r["percent"] == 100.0, r["feedback"]


@pytest.mark.parametrize("lab", UNTOUCHED_LABS)
def test_an_untouched_lab_gets_zero_with_chinese_feedback(graded, lab):
    r = row(graded, f"{lab}-untouched.zh.ipynb")
    assert (r["status"], r["score"], r["lang"]) == ("graded", 0, "zh"), r["reason"]
    assert all(line.startswith("✗ 练习") for line in r["feedback"][: r["max"]])


# --- the attacks --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "flag"),
    [
        ("edited-checks.ipynb", "check-cell-edited"),
        ("patched-checks.ipynb", "touches-checks"),
        ("fake-results.ipynb", "touches-checks"),
    ],
)
def test_faked_checks_score_nothing_and_are_flagged(graded, name, flag):
    r = row(graded, name)
    assert (r["status"], r["score"]) == ("graded", 0), r["reason"]
    assert flag in r["flags"]


def test_the_published_solution_is_flagged_and_scored_as_its_copies_are(graded):
    """One policy for copies of the published solution: the notebook itself gets the same flag and the
    same score (the judges') as its code without the marker lines (the class's correct submission)."""
    r, copy = row(graded, "published-solution.ipynb"), row(graded, f"{LAB}-correct.ipynb")
    assert "published-solution" in r["flags"] and "published-solution" in copy["flags"]
    assert r["score"] == copy["score"] == r["max"], (r["feedback"], copy["feedback"])
    assert "published solution notebook" in r["reason"] and "公开的参考答案" in r["reason_zh"]


@pytest.mark.parametrize("name", ["ignores-device.ipynb", "empty-tensor.ipynb"])
def test_exercise_one_checks_values_and_two_devices(graded, name):
    r = row(graded, name)
    assert passed(r) == [False, True, True], r["feedback"]


def test_a_snooping_submission_finds_nothing_and_changes_nothing(graded):
    if TRUST:
        pytest.skip("no bubblewrap here (--trust-submissions): the guide documents what a notebook then sees")
    assert row(graded, "snoop.ipynb")["score"] == 0
    for name, digest in graded["protected_before"].items():
        assert sha256(graded["root"] / "subs")[name] == digest, f"{name} was changed"


def test_a_detached_process_does_not_outlive_its_submission(graded):
    assert row(graded, "detached.ipynb")["score"] == 3
    if "bubblewrap" in (graded["root"] / "grades" / "report.html").read_text(encoding="utf-8"):
        pytest.skip(
            "under bubblewrap the notebook's /tmp is its own: its heartbeat file never reaches this test "
            "(the sandbox's PID namespace ends the process; test_grade_units covers kill_tree)"
        )
    assert graded["detached_beat"], "the detached process ran during its submission"
    survivors = graded["detached_survivors"]
    assert not survivors, (
        f"the setsid process survived its submission by {DETACHED_DEADLINE_S} s: {survivors}"
    )


def test_the_survivor_search_finds_a_live_process_and_waits_for_its_end(tmp_path):
    """The search above can fail: it sees a process carrying the marker, and the wait ends when it does."""
    marker = str(tmp_path / "marker")
    child = subprocess.Popen([sys.executable, "-c", "import sys, time; time.sleep(600)", marker])
    try:
        deadline = time.monotonic() + 60
        while child.pid not in processes_with(marker):
            assert time.monotonic() < deadline, "the search does not see a running process"
            time.sleep(0.1)
        child.terminate()
        child.wait(timeout=60)
        assert wait_until_gone(marker, 60) == []
    finally:
        child.kill()
        child.wait()


def test_an_ipython_startup_file_dies_with_its_submission(graded):
    assert row(graded, "startup-file.ipynb")["score"] == 3
    assert not graded["startup_ran"], "a later kernel ran the startup file"
    assert not Path("~/.ipython/profile_default/startup/00-devicekit-grade-test.py").expanduser().exists()


def test_a_submission_that_kills_its_parents_only_ends_itself(graded):
    if TRUST:
        pytest.skip(
            "no bubblewrap here (--trust-submissions): a notebook can signal the grader (see the guide)"
        )
    r = row(graded, "kills-parents.ipynb")
    assert r["status"] in ("graded", "kernel-died"), r["reason"]
    assert len(graded["rows"]) >= len(graded["names"]), "the run went on"


def test_a_kernel_is_the_submissions_own_user_without_privileges_or_a_way_out(graded):
    """What the kernel of ``inspects-its-kernel.ipynb`` saw (raised as its cell's error): as root, the
    submissions' user, with no capability, no root process but the sandbox's first, and its own limits."""
    if TRUST:
        pytest.skip("no bubblewrap here: the class ran with --trust-submissions")
    reason = row(graded, "inspects-its-kernel.ipynb")["reason"]
    start = reason.index("KERNEL-INSPECTION ") + len("KERNEL-INSPECTION ")
    seen, _ = json.JSONDecoder().raw_decode(reason[start:])
    if sandbox.running_as_root():
        assert seen["uid"] == seen["euid"] == sandbox.SUBMISSION_UID
        # the submissions' user may run other processes (the other box of -j 2): the limit counts them too
        assert seen["nproc"] >= sandbox.Limits().processes
    assert int(seen["cap_eff"], 16) == 0 and seen["root_owned"] == [], seen
    assert seen["tmp_is_env"] and seen["fsize"] == sandbox.Limits().file_mb * sandbox.MiB
    assert row(graded, "inspects-its-kernel.ipynb")["score"] == 3


def test_an_error_in_the_graders_answer_cell_is_reported_not_dropped(graded):
    r = row(graded, "breaks-answer-cell.ipynb")
    assert r["score"] == 0 and "check-not-run" in r["flags"], r
    assert "the grader's answer cell failed: OSError: answer cell blocked by the notebook" in r["reason"]
    assert "评分器的收集单元格出错：OSError: answer cell blocked by the notebook" in r["reason_zh"]


def test_overwriting_a_classmates_file_changes_not_their_grade(graded):
    assert row(graded, "zz-classmate.ipynb")["score"] == 3
    assert row(graded, "zz-classmate.ipynb")["status"] == "graded"


def test_a_colab_copy_without_tags_is_not_blamed_for_the_deliberate_error(graded):
    r = row(graded, "colab-no-tags.ipynb")
    assert r["score"] == 3 and "cell-errors" not in r["flags"], r["reason"]


def test_symlinks_are_refused_with_a_reason_and_take_no_ones_place(graded):
    for name in ("aaa.ipynb", "instructor.ipynb", "carol/everything"):
        r = row(graded, name)
        assert (r["status"], r["score"]) == ("refused", None)
        assert "symbolic link" in r["reason"]
    assert row(graded, "zz-classmate.ipynb")["score"] == 3


def test_a_student_folder_is_graded_with_its_data_and_without_its_links(graded):
    r = row(graded, "carol/01-devices.ipynb")
    assert (r["score"], r["student"]) == (3, "carol")


@pytest.mark.parametrize(
    ("name", "words"), [(".hidden.ipynb", "hidden"), ("dave.ipynb.txt", "not an .ipynb")]
)
def test_every_file_has_a_row_with_a_reason(graded, name, words):
    r = row(graded, name)
    assert r["status"] == "ignored" and words in r["reason"]


def test_every_input_file_is_in_the_report(graded):
    subs = graded["root"] / "subs"
    files = {str(p.relative_to(subs)) for p in subs.rglob("*") if p.is_file() or p.is_symlink()}
    files -= {"carol/data.csv"}  # a data file inside a student's folder: copied, not a row
    assert files <= set(graded["rows"]) | {"carol/data.csv"}


def test_the_output_folder_holds_only_the_grader_files(graded):
    out = graded["root"] / "grades"
    names = {p.name for p in out.iterdir()}
    assert names == {"grades.csv", "grades.json", "report.html", "canvas.csv", "moodle.csv", "feedback"}
    assert all(p.suffix == ".txt" for p in (out / "feedback").iterdir())


def test_lms_files_and_bilingual_report(graded):
    out = graded["root"] / "grades"
    canvas = list(csv.reader((out / "canvas.csv").read_text(encoding="utf-8-sig").splitlines()))
    assert canvas[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert canvas[1][0] == "Points Possible"
    moodle = list(csv.DictReader((out / "moodle.csv").read_text(encoding="utf-8-sig").splitlines()))
    assert set(moodle[0]) == {"ID number", "Full name", "Grade", "Feedback"}
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "Pass rate per exercise · 各练习通过率" in page and "<script" not in page.lower()
    feedback = (out / "feedback" / "carol-01-devices.txt").read_text(encoding="utf-8")
    assert "Score: 3/3" in feedback
    zh = next((out / "feedback").glob(f"untouched*{LAB}*.txt"), None) or next(
        p for p in (out / "feedback").iterdir() if "untouched" in p.name
    )
    assert "得分" in zh.read_text(encoding="utf-8")


def test_grading_again_merges_into_the_same_folder(graded, tmp_path):
    root = tmp_path / "class"  # a copy: the shared class stays as the run left it for the other tests
    shutil.copytree(graded["root"] / OUT, root / OUT)
    (root / "subs").mkdir()
    shutil.copy2(graded["root"] / "subs" / "zz-classmate.ipynb", root / "subs")
    before = json.loads((root / "grades" / "grades.json").read_text(encoding="utf-8"))
    done = run_grader(root, "--out", "grades", "--jobs", "1", "subs/zz-classmate.ipynb")
    assert done.returncode == 0, done.stderr[-2000:]
    after = json.loads((root / "grades" / "grades.json").read_text(encoding="utf-8"))
    assert len(after) == len(before), "re-grading one file keeps the class"
    assert "merged with" in done.stdout


def test_a_class_of_submissions_takes_reasonable_time(graded):
    rows = graded["rows"]
    per = graded["took"] / max(1, len(rows))
    print(f"\n{len(rows)} rows in {graded['took']:.0f} s ({per:.1f} s per row, -j 2)")
    assert graded["returncode"] == 0, graded["stderr"][-3000:]
    # what the run produced: one row per entry of the class folder (data files too), and its summary says so
    subs = graded["root"] / "subs"
    entries = {str(p.relative_to(subs)) for p in subs.rglob("*") if p.is_file() or p.is_symlink()}
    assert set(rows) == entries
    summary = next((line for line in graded["stdout"].splitlines() if " row(s): " in line), "")
    total, _, counts = summary.rstrip(".").partition(" row(s): ")
    said = {status: int(n) for status, n in (item.rsplit(" ", 1) for item in counts.split(", ") if item)}
    assert (total, said) == (str(len(rows)), Counter(r["status"] for r in rows.values())), graded["stdout"]
    assert per < ROW_LIMIT_S, f"{per:.0f} s per row"


def test_a_corrupt_grades_file_is_refused_not_overwritten(tmp_path):
    write(lab_notebook(LAB), tmp_path / "subs" / "a.ipynb")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "grades.json").write_text("not json", encoding="utf-8")
    done = run_grader(tmp_path, "--out", "out", "subs", timeout=600)
    assert done.returncode == 2 and "--replace" in done.stderr
    assert (tmp_path / "out" / "grades.json").read_text(encoding="utf-8") == "not json"


def test_published_helpers_build_a_student_copy():
    nb = as_student_work(solution_notebook(LAB))
    assert nb.metadata["devicekit"]["role"] == "student"
    assert not any("### BEGIN SOLUTION" in c.source for c in nb.cells)
