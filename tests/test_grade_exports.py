"""Exports, merging and the Chinese report of devicekit-grade, on rows built here (nothing is executed):
Canvas IDs, another lab left out, every roster student with a row and a feedback file, --due, --shard and
``devicekit-grade merge``, the cache key, Chinese reasons, titles and numbers."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from course_tools.paths import LABS
from devicekit_grade import cli, integrity, lms, zh
from devicekit_grade.identify import BadSubmission, loads
from devicekit_grade.report import feedback_text, to_canvas, to_html, write_all
from devicekit_grade.run import ExerciseGrade, Grade


def _grade(file: str, lab: str = "01-devices", passed: tuple[bool, ...] = (True, True, False), **kw) -> Grade:
    g = Grade(file=file, lab=lab, status="graded", max=len(passed), score=sum(passed), **kw)
    g.exercises = [
        ExerciseGrade(
            n, f"k{n}", p, "judged", f"{'✓' if p else '✗'} Exercise {n}", f"{'✓' if p else '✗'} 练习 {n}"
        )
        for n, p in enumerate(passed, 1)
    ]
    return g


def _roster(tmp_path: Path) -> list[lms.Student]:
    path = tmp_path / "roster.csv"
    path.write_text(
        "id,name,lang,canvas_id\nalice,Alice A,en,1111\nbob,Bob B,zh,2222\ncarol,Carol C,en,3333\n",
        encoding="utf-8",
    )
    return lms.read_roster(path)


def test_canvas_takes_the_id_from_the_roster_and_leaves_another_lab_out(tmp_path):
    rows = [
        _grade("subs/alice.ipynb"),
        _grade("subs/bob.zh.ipynb"),
        _grade("subs/alice-02.ipynb", lab="02-models"),
    ]
    cli.finish(rows, _roster(tmp_path), ["01-devices", "02-models"], {}, None, None)
    table = list(csv.reader(to_canvas(rows, "Lab 1").decode("utf-8-sig").splitlines()))
    ids = {r[2]: r[1] for r in table[2:]}
    assert ids["alice"] == "1111" and ids["bob"] == "2222"
    assert all("02" not in r[0] for r in table), "the lab-2 row is not in lab 1's column"
    assert cli._lms_notes(rows) and "left out" in cli._lms_notes(rows)[0]


def test_every_roster_student_gets_a_row_and_a_feedback_file(tmp_path):
    bad = Grade(
        file="subs/carol.ipynb", status="invalid-json", reason="not valid JSON (x at line 1, column 2)"
    )
    rows = [_grade("subs/alice.ipynb"), bad]
    cli.finish(rows, _roster(tmp_path), ["01-devices"], {}, None, None)
    missing = {g.student: g for g in rows if g.status == "missing"}
    assert set(missing) == {"bob", "carol"}
    assert missing["bob"].reason == "no submission found" and missing["bob"].points == 0.0
    assert "invalid-json" in missing["carol"].reason
    (tmp_path / "out").mkdir()
    write_all(tmp_path / "out", rows)
    names = {p.name for p in (tmp_path / "out" / "feedback").iterdir()}
    assert {"alice-01-devices.txt", "bob-01-devices.txt", "carol-01-devices.txt"} <= names
    bob = (tmp_path / "out" / "feedback" / "bob-01-devices.txt").read_text(encoding="utf-8")
    assert "得分：0/" in bob and "没有找到提交" in bob
    canvas = (tmp_path / "out" / "canvas.csv").read_text(encoding="utf-8-sig")
    assert "2222" in canvas and "3333" in canvas


def test_due_marks_late_files_and_canvas_late_names(tmp_path):
    due = lms.parse_due("2026-03-01T23:59+00:00")
    rows = [_grade("a.ipynb", submitted=due + 60), _grade("b.ipynb", submitted=due - 60)]
    rows.append(_grade("smith_LATE_123_456_01-devices.ipynb", submitted=due - 60))
    lms.mark_late(rows, due)
    assert ["late" in g.flags for g in rows] == [True, False, True]
    assert "submitted late" in rows[0].reason and "迟交" in zh.reason_zh(rows[0].reason)
    with pytest.raises(ValueError, match="2026-03-01T23:59"):
        lms.parse_due("tomorrow")


def test_shards_split_the_class_and_merge_puts_it_back(tmp_path):
    assert cli._shard("2/3") == (2, 3)
    with pytest.raises(ValueError):
        cli._shard("4/3")
    for k, files in ((1, ["a.ipynb", "c.ipynb"]), (2, ["b.ipynb"])):
        (tmp_path / f"part{k}").mkdir()
        write_all(tmp_path / f"part{k}", [_grade(f) for f in files])
    code = cli.main(
        ["merge", "--out", str(tmp_path / "all"), str(tmp_path / "part1"), str(tmp_path / "part2")]
    )
    assert code == 0
    rows = json.loads((tmp_path / "all" / "grades.json").read_text(encoding="utf-8"))
    assert sorted(r["file"] for r in rows) == ["a.ipynb", "b.ipynb", "c.ipynb"]
    assert cli.main(["merge", "--out", str(tmp_path / "x"), str(tmp_path / "nothing")]) == cli.USAGE_ERROR


def test_a_file_graded_with_the_same_grader_is_taken_from_the_cache():
    from devicekit_grade.discover import Submission

    old = _grade("old/a.ipynb", sha256="", graded_with="abc")
    sub = Submission(Path("a.ipynb"), "subs/a.ipynb", data=b"{}")
    import hashlib

    old.sha256 = hashlib.sha256(b"{}").hexdigest()
    old.flags, old.reason = ["identical-file", "check-cell-deleted"], "identical file to x; no check cell"
    again = cli._from_cache(sub, [old], "abc")
    assert again is not None and again.file == "subs/a.ipynb" and again.score == old.score
    assert again.flags == ["check-cell-deleted"] and again.reason == "no check cell"
    assert cli._from_cache(sub, [old], "another grader") is None


def test_deeply_nested_json_gets_a_clear_status():
    deep = b'{"cells": ' + b"[" * 100_000 + b"]" * 100_000 + b', "nbformat": 4}'
    with pytest.raises(BadSubmission) as bad:
        loads(deep)
    assert bad.value.status == "invalid-json" and "nested too deeply" in bad.value.reason


def test_every_reason_the_grader_writes_has_chinese():
    samples = [
        "error in cell 5 (x = 1): NameError: name 'y' is not defined",
        'cell 20 (check("01-devices", "move-batch", f)) ran longer than 40 s (interrupted)',
        "kernel died in cell 3 (import os)",
        "cell 4 (import signal, time) did not stop when interrupted: stopped there",
        "notebook ran longer than 90 s, stopped in cell 4 (while True:)",
        "the notebook ran longer than 90 s",
        "more than 512 processes: stopped",
        "the code of the published solution, without its markers",
        "no check cell for exercise(s) move-batch (deleted or replaced)",
        "a cell reaches for course or grader files ('__file__')",
        "a cell imports the self-checks' internals ('from devicekit_labs.lab01 import')",
        "identical file to subs/a.ipynb",
        "near identical code to subs/b.ipynb",
        "an older submission by the same student: subs/new.ipynb counts",
        "no submission found",
        "not valid JSON (Expecting value at line 1, column 1)",
        "a symbolic link (to x.ipynb), not a file: not graded. Submit the file itself.",
        "cannot tell which lab this is: no lab metadata",
    ]
    for reason in samples:
        assert not zh.untranslated(reason), reason
        assert re.search(r"[\u4e00-\u9fff]", zh.reason_zh(reason)), reason


def test_the_chinese_report_has_titles_percentages_and_plain_scores(tmp_path):
    titles = zh.lab_titles(LABS, ["01-devices"])
    assert titles["01-devices"][1].startswith("实验 1：")
    g = _grade("bob.zh.ipynb", lang="zh", student_name="Bob")
    g.points, g.points_possible, g.percent = 2.0, 3.0, 66.7
    text = feedback_text(g, titles)
    assert text.splitlines()[0] == f"Bob — {titles['01-devices'][1]}"
    assert "得分：2/3" in text and "2.0" not in text
    page = to_html([g], titles=titles)
    assert "66.7%" in page.decode() and " %" not in page.decode()
    assert titles["01-devices"][1] in page.decode()


def test_normalised_code_ignores_names_comments_and_spacing():
    a = "def f(x, device):\n    # move it\n    y = x.to(device=device)\n    return y\n"
    b = "def g(t, where):  \n    out = t.to(device=where)   # moved\n\n    return out\n"
    assert integrity.digest(integrity.tokens(a)) == integrity.digest(integrity.tokens(b))
    c = "def g(t, where):\n    return t.cpu()\n"
    assert integrity.digest(integrity.tokens(a)) != integrity.digest(integrity.tokens(c))
    sig = integrity.signature(integrity.tokens(a * 3))
    assert integrity.similarity(sig, integrity.signature(integrity.tokens(b * 3))) == 1.0


def test_an_older_file_of_the_same_student_is_superseded_before_anything_runs(tmp_path):
    import os

    from course_tools.submissions import lab_notebook, write
    from devicekit_grade.discover import find

    old, new = tmp_path / "alice-01-devices.ipynb", tmp_path / "alice" / "01-devices.ipynb"
    write(lab_notebook("01-devices"), old)
    write(lab_notebook("01-devices"), new)
    os.utime(old, (1_000_000, 1_000_000))
    subs = find([str(tmp_path)], [])
    rows = cli._superseded(subs, None, ["01-devices"])
    assert [r.file for r in rows.values()] == [str(old)]
    assert rows[next(iter(rows))].status == "superseded" and str(new) in next(iter(rows.values())).reason
