"""devicekit-grade: every kind of submission gets a row with the right status, score and feedback, the
submissions are never modified, and the outputs are complete, atomic and safe to open.

The submissions are built here from labs/ and solutions/ (no fixture notebooks are committed), graded in
one run of the command (in-process, two notebooks at a time) and checked row by row.
"""

from __future__ import annotations

import copy
import csv
import hashlib
import json
import re
from pathlib import Path

import nbformat
import pytest

from _paths import LABS, SOLUTIONS
from devicekit.grade import cli, run
from devicekit.grade.cli import main
from devicekit.grade.report import atomic_write

LAB = "01-devices"
CELL_TIMEOUT = 5
TARGETS = {"move-batch": "move_batch", "causal-mask": "causal_mask", "predict-raises": "my_predictions"}


# --- building submissions --------------------------------------------------------------------------------


def lab_notebook(lang: str = "en") -> nbformat.NotebookNode:
    return nbformat.read(LABS / f"{LAB}{'.zh' if lang == 'zh' else ''}.ipynb", as_version=4)


def solution_notebook(lang: str = "en") -> nbformat.NotebookNode:
    return nbformat.read(SOLUTIONS / f"{LAB}{'.zh' if lang == 'zh' else ''}.ipynb", as_version=4)


def _index(nb: nbformat.NotebookNode, text: str) -> int:
    found = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and text in c.source]
    assert len(found) == 1, f"{text!r} is in {len(found)} code cells"
    return found[0]


def solve(nb: nbformat.NotebookNode, function: str) -> nbformat.NotebookNode:
    """Fill in one stub the way a learner does: replace the cell's source by the solution's code."""
    answer = solution_notebook().cells[_index(solution_notebook(), f"def {function}(")].source
    answer = "\n".join(line for line in answer.splitlines() if "### " not in line)
    nb.cells[_index(nb, f"def {function}(")].source = answer
    return nb


def insert(
    nb: nbformat.NotebookNode, after: str, source: str, cell_type: str = "code"
) -> nbformat.NotebookNode:
    """Add a cell after the code cell containing ``after``."""
    new = nbformat.v4.new_code_cell(source) if cell_type == "code" else nbformat.v4.new_markdown_cell(source)
    nb.cells.insert(_index(nb, after) + 1, new)
    return nb


def drop(nb: nbformat.NotebookNode, text: str) -> nbformat.NotebookNode:
    """Delete the code cell containing ``text`` (a learner who deleted a check cell)."""
    del nb.cells[_index(nb, text)]
    return nb


def without_metadata(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb.metadata.pop("devicekit", None)
    return nb


def check_cell(key: str) -> str:
    return f'check("{LAB}", "{key}"'


XSS = "<script>alert(1)</script>"
# A cell that leaves a process behind, then kills the kernel.
DEATH = """import os, subprocess, sys
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
os._exit(1)"""


def build_submissions(folder: Path) -> dict[str, str]:
    """Write one submission of each kind into ``folder``. Returns {file name: what it is}."""
    folder.mkdir(parents=True, exist_ok=True)
    no_checks = without_metadata(solution_notebook())
    no_checks.cells = [c for c in no_checks.cells if not (c.cell_type == "code" and "check(" in c.source)]
    del no_checks.cells[_index(no_checks, "def my_predictions(")]
    notebooks = {
        "complete.ipynb": solution_notebook(),
        "untouched.ipynb": lab_notebook(),
        # no metadata: identified by its check calls
        "partial.ipynb": without_metadata(solve(lab_notebook(), "move_batch")),
        "partial.zh.ipynb": solve(lab_notebook("zh"), "causal_mask"),
        "kernel-death.ipynb": insert(solution_notebook(), check_cell("move-batch"), DEATH),
        "endless-loop.ipynb": insert(solution_notebook(), check_cell("move-batch"), "while True:\n    pass"),
        "exception.ipynb": insert(
            insert(
                insert(lab_notebook(), "def causal_mask(", f"# {XSS}", cell_type="markdown"),
                "def my_predictions(",
                "print('x' * 50_000_000)",
            ),
            check_cell("move-batch"),
            f"raise ValueError({XSS!r})",
        ),
        # no metadata and no check cell left: identified by its file name; the grader runs the checks on
        # the lab's targets (move_batch, causal_mask), one of which (my_predictions) is gone
        "01-devices-bob.ipynb": no_checks,
        "other-lab.ipynb": solution_notebook(),
        "notes.ipynb": without_metadata(lab_notebook()),
    }
    notebooks["other-lab.ipynb"].metadata["devicekit"]["lab"] = "99-quantum"
    notes = notebooks["notes.ipynb"]
    notes.cells = [c for c in notes.cells if not (c.cell_type == "code" and "check(" in c.source)]
    for name, nb in notebooks.items():
        nbformat.write(nb, folder / name)
    (folder / "truncated-upload.ipynb").write_text(nbformat.writes(lab_notebook())[:5000], encoding="utf-8")
    (folder / "not-a-notebook.ipynb").write_text(json.dumps({"cells": "no", "answer": 42}), encoding="utf-8")
    (folder / "binary.ipynb").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    return {name: name for name in sorted(p.name for p in folder.iterdir())}


def sha256(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


# --- one grading run, shared by the tests below -------------------------------------------------------


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("grade")
    subs, out = root / "submissions", root / "grades"
    build_submissions(subs)
    (subs / "data.txt").write_text("a data file next to the notebooks\n", encoding="utf-8")
    before = sha256(subs)
    code = main(["--out", str(out), "--timeout", str(CELL_TIMEOUT), "--jobs", "2", "--quiet", str(subs)])
    rows = json.loads((out / "grades.json").read_text(encoding="utf-8"))
    return {
        "code": code,
        "subs": subs,
        "out": out,
        "before": before,
        "after": sha256(subs),
        "rows": {Path(r["file"]).name: r for r in rows},
    }


def test_exit_code_is_zero_although_some_submissions_are_bad(graded):
    assert graded["code"] == 0
    assert {r["status"] for r in graded["rows"].values()} >= {"graded", "invalid-json", "unknown-lab"}


def test_submissions_are_never_modified(graded):
    assert graded["after"] == graded["before"]


def test_every_submission_has_a_row(graded):
    names = {p.name for p in graded["subs"].glob("*.ipynb")}
    assert set(graded["rows"]) == names


def test_the_solution_scores_full_marks(graded):
    row = graded["rows"]["complete.ipynb"]
    assert (row["status"], row["score"], row["max"], row["identified_by"]) == ("graded", 3, 3, "metadata")
    assert all(line.startswith("✓") for line in row["feedback"])
    assert row["reason"] == "" and row["flags"] == []


def test_the_untouched_lab_scores_zero_with_not_done_yet(graded):
    row = graded["rows"]["untouched.ipynb"]
    assert (row["status"], row["score"], row["max"]) == ("graded", 0, 3)
    assert all("not done yet" in line for line in row["feedback"])


def test_a_partial_submission_scores_one(graded):
    row = graded["rows"]["partial.ipynb"]
    assert (row["status"], row["score"]) == ("graded", 1)
    assert [e["passed"] for e in row["exercises"]] == [True, False, False]


def test_a_chinese_submission_gets_chinese_feedback(graded):
    row = graded["rows"]["partial.zh.ipynb"]
    assert (row["lang"], row["score"]) == ("zh", 1)
    assert [e["passed"] for e in row["exercises"]] == [False, True, False]
    assert row["feedback"][1].startswith("✓ 练习 2")
    assert "还没有完成" in row["feedback"][0]


def test_kernel_death_keeps_the_checks_that_ran(graded):
    row = graded["rows"]["kernel-death.ipynb"]
    assert row["status"] == "kernel-died"
    assert "kernel died in cell 18" in row["reason"]
    assert [e["passed"] for e in row["exercises"]] == [True, False, False]
    assert "not reached" in row["exercises"][1]["en"] and row["exercises"][1]["how"] == "not-reached"
    assert "check-not-run" not in row["flags"]


def test_an_endless_loop_is_interrupted_and_the_rest_still_runs(graded):
    row = graded["rows"]["endless-loop.ipynb"]
    assert row["status"] == "timeout"
    assert f"ran longer than {CELL_TIMEOUT} s" in row["reason"]
    assert row["score"] == 3, "cells after the interrupted one still ran"
    assert row["duration_s"] < 10 * CELL_TIMEOUT


def test_a_notebook_that_runs_too_long_in_total_is_stopped(tmp_path):
    # Each cell stays under the per-cell limit; together they pass the notebook limit.
    nb = solution_notebook()
    for _ in range(12):
        insert(nb, check_cell("move-batch"), "import time\ntime.sleep(2)")
    nbformat.write(nb, tmp_path / "slow.ipynb")
    options = run.Options(cell_timeout=60, notebook_timeout=15)
    grade = run.grade_file(tmp_path / "slow.ipynb", "slow.ipynb", options)
    assert grade.status == "timeout", grade.reason
    assert "notebook ran longer than 15 s, stopped in" in grade.reason
    assert not grade.exercises[2].passed and "not reached" in grade.exercises[2].en
    assert grade.duration_s < 30


def test_an_exception_is_reported_and_scoring_goes_on(graded):
    row = graded["rows"]["exception.ipynb"]
    assert (row["status"], row["score"]) == ("graded", 0)
    assert "cell-errors" in row["flags"]
    assert "error in cell 18" in row["reason"] and "ValueError" in row["reason"]
    assert any(line.startswith("error in cell 18") for line in row["feedback"])


def test_enormous_output_is_truncated_and_still_graded(graded):
    row = graded["rows"]["exception.ipynb"]
    assert "output-truncated" in row["flags"]
    assert "output of cell 25 (print('x' * 50_000_000)) truncated" in row["reason"]
    assert all("not done yet" in e["en"] for e in row["exercises"]), "the checks after it still ran"


def test_a_deleted_check_is_run_by_the_grader_on_the_labs_target(graded):
    row = graded["rows"]["01-devices-bob.ipynb"]
    assert (row["status"], row["score"], row["identified_by"]) == ("graded", 2, "file name")
    assert [e["how"] for e in row["exercises"]] == ["grader-rerun", "grader-rerun", "not-run"]
    assert "check cell not run: the grader ran this check on `move_batch`" in row["feedback"][0]
    assert "`my_predictions` is not defined" in row["feedback"][2]
    assert {"check-rerun", "check-not-run"} <= set(row["flags"])


def test_identification_falls_back_to_check_calls(graded):
    assert graded["rows"]["partial.ipynb"]["identified_by"] == "check calls"


@pytest.mark.parametrize(
    ("name", "status", "words"),
    [
        ("truncated-upload.ipynb", "invalid-json", "not valid JSON"),
        ("binary.ipynb", "invalid-json", "not text"),
        ("not-a-notebook.ipynb", "not-a-notebook", "not a notebook"),
        ("other-lab.ipynb", "unknown-lab", "99-quantum"),
        ("notes.ipynb", "unknown-lab", "cannot tell which lab"),
    ],
)
def test_bad_submissions_get_a_status_and_a_reason(graded, name, status, words):
    row = graded["rows"][name]
    assert row["status"] == status
    assert words in row["reason"]
    assert row["score"] is None


def test_csv_has_one_row_per_submission_with_the_documented_columns(graded):
    text = (graded["out"] / "grades.csv").read_text(encoding="utf-8-sig")
    rows = list(csv.DictReader(text.splitlines()))
    fixed = ["file", "lab", "lang", "identified_by", "status", "flags", "score", "max"]
    assert list(rows[0]) == [*fixed, "ex1", "ex2", "ex3", "reason"]
    by_name = {Path(r["file"]).name: r for r in rows}
    assert set(by_name) == set(graded["rows"])
    partial = [by_name["partial.ipynb"][k] for k in ("score", "max", "ex1", "ex2", "ex3")]
    assert partial == ["1", "3", "pass", "fail", "fail"]


def test_outputs_leave_no_temporary_files(graded):
    assert sorted(p.name for p in graded["out"].iterdir()) == ["grades.csv", "grades.json", "report.html"]


def test_the_report_escapes_everything_from_submissions(graded):
    page = (graded["out"] / "report.html").read_text(encoding="utf-8")
    assert "<script" not in page.lower()
    assert html_escaped(XSS) in page, "the exception text is shown, escaped"
    assert "Content-Security-Policy" in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page), "no external assets"
    assert "no hidden tests" in page


def html_escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# --- the re-run of a deleted check, and what the command does without submissions ------------------------


@pytest.mark.parametrize(
    ("recorded", "words"),
    [
        ({"rerun": {"causal-mask": "no-target"}}, "the notebook has no cell that runs this check"),
        ({"rerun": {"causal-mask": "started"}}, "but it did not finish"),
        ({"attempted": ["causal-mask"]}, "check cell not run to the end"),
    ],
)
def test_checks_without_a_result_count_as_failed_with_a_reason(recorded, words, monkeypatch):
    from devicekit.exercises import exercises_for

    monkeypatch.setattr(run, "target_of", lambda ex: None)
    grade = run.Grade(file="x.ipynb")
    run._exercise_grades(grade, exercises_for(LAB), recorded, stopped_early=False)
    assert [e.passed for e in grade.exercises] == [False, False, False]
    assert words in grade.exercises[1].en
    assert grade.exercises[1].zh.startswith("✗ 练习 2")


def test_no_inputs_is_an_error_with_a_clear_message(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["--out", str(tmp_path / "out"), str(tmp_path / "empty")]) == 2
    assert "no submissions found" in capsys.readouterr().err
    assert main(["--out", str(tmp_path / "out"), str(tmp_path / "missing")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_an_unwritable_out_is_an_error(tmp_path, capsys):
    nbformat.write(lab_notebook(), tmp_path / "lab.ipynb")
    (tmp_path / "a-file").write_text("x")
    assert main(["--out", str(tmp_path / "a-file" / "grades"), str(tmp_path / "lab.ipynb")]) == 2
    assert "cannot write there" in capsys.readouterr().err


def test_the_out_folder_inside_the_submissions_is_not_graded(tmp_path):
    nbformat.write(lab_notebook(), tmp_path / "lab.ipynb")
    (tmp_path / "grades").mkdir()
    nbformat.write(lab_notebook(), tmp_path / "grades" / "old.ipynb")
    (tmp_path / ".ipynb_checkpoints").mkdir()
    nbformat.write(lab_notebook(), tmp_path / ".ipynb_checkpoints" / "lab-checkpoint.ipynb")
    (tmp_path / "alice.ipynb.txt").write_text("{}")
    ignored: list[str] = []
    found = cli.find_submissions([str(tmp_path)], exclude=[tmp_path / "grades"], ignored=ignored)
    assert [p.name for p, _ in found] == ["lab.ipynb"]
    assert ignored == [str(tmp_path / "alice.ipynb.txt")]
    named = cli.find_submissions([str(tmp_path / "alice.ipynb.txt")])
    assert [p.name for p, _ in named] == ["alice.ipynb.txt"], "a file named on the command line is graded"


def test_atomic_write_replaces_whole_files(tmp_path):
    target = tmp_path / "grades.csv"
    atomic_write(target, b"old\n")
    atomic_write(target, b"new\n")
    assert target.read_bytes() == b"new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["grades.csv"]


def test_csv_cells_cannot_become_spreadsheet_formulas():
    from devicekit.grade.report import to_csv

    grade = run.Grade(file='=HYPERLINK("http://x")', status="invalid-json", reason="-1")
    text = to_csv([grade]).decode("utf-8-sig")
    assert "'=HYPERLINK" in text and ",'-1" in text


def test_no_worker_or_kernel_is_left_running(graded):
    # Killed on time-out and kernel death, shut down otherwise: no process still works in a grading copy.
    proc = Path("/proc")
    if not proc.is_dir():
        pytest.skip("needs /proc")
    assert not run._RUNNING
    left = []
    for entry in proc.iterdir():
        try:
            if entry.name.isdigit() and "devicekit-grade-" in str((entry / "cwd").readlink()):
                left.append(entry.name)
        except OSError:
            continue
    assert not left, f"processes still running in a grading copy: {left}"


def test_submission_copy_leaves_out_other_notebooks(tmp_path):
    src = tmp_path / "src"
    (src / "data").mkdir(parents=True)
    (src / "data" / "x.csv").write_text("1,2\n")
    (src / "bob").mkdir()
    nbformat.write(lab_notebook(), src / "bob" / "bob.ipynb")
    nbformat.write(lab_notebook(), src / "alice.ipynb")
    (src / "notes.txt").write_text("hi")
    run.copy_folder(src, tmp_path / "dest")
    copied = sorted(str(p.relative_to(tmp_path / "dest")) for p in (tmp_path / "dest").rglob("*"))
    assert copied == ["data", "data/x.csv", "notes.txt"]


def test_prepare_adds_cells_only_to_the_copy():
    nb = lab_notebook()
    original = copy.deepcopy(nb)
    from devicekit.exercises import exercises_for

    ready = run.prepare(nb, LAB, exercises_for(LAB), Path("/tmp/results.json"))
    assert nb == original
    assert len(ready.cells) == len(nb.cells) + 1 + len(exercises_for(LAB))
