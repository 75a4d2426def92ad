"""Exports, merging and the Chinese report of devicekit-grade, on rows built here (nothing is executed):
Canvas IDs, another lab left out, every roster student with a row and a feedback file, --due, the cache key,
Chinese reasons, titles and numbers."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from course_tools.paths import LABS
from devicekit.messages import Message
from devicekit_grade import cli, integrity, lms
from devicekit_grade.box import Execution
from devicekit_grade.context import Options
from devicekit_grade.identify import BadSubmission, loads
from devicekit_grade.records import ExerciseGrade, Grade
from devicekit_grade.report import feedback_text, lab_titles, to_canvas, to_html, to_moodle, write_all
from devicekit_grade.scoring import score


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
    assert cli._lms_notes(rows) and "left out" in cli._lms_notes(rows)[0].en


def test_a_notebook_of_another_lab_is_never_in_the_labs_column_even_in_a_tie(tmp_path):
    """A lab-2 notebook left in the lab-1 folder: reported, never in lab 1's Canvas or Moodle column. With as
    many notebooks of each lab, the LMS files stay empty until --lab names the assignment's lab."""

    def rows() -> list[Grade]:
        return [_grade("subs/carol_01-devices.ipynb", lab="02-models"), _grade("subs/alice.ipynb")]

    tie = rows()
    cli.finish(tie, _roster(tmp_path), ["01-devices", "02-models"], {}, None, None)
    assert [r for r in csv.reader(to_canvas(tie, "Lab 1").decode("utf-8-sig").splitlines())][2:] == []
    (note,) = cli._lms_notes(tie)
    assert "--lab" in note.en and "--lab" in note.zh and "empty" in note.en
    named = rows()
    cli.finish(named, _roster(tmp_path), ["01-devices", "02-models"], {}, None, None, "01-devices")
    table = list(csv.reader(to_canvas(named, "Lab 1", "01-devices").decode("utf-8-sig").splitlines()))
    points = {r[2]: r[5] for r in table[2:]}
    assert points == {"alice": "2", "bob": "0", "carol": "0"}, "carol's lab-2 notebook is not her lab-1 grade"
    assert all(g.lab == "01-devices" for g in named if g.status == "missing")
    (note,) = cli._lms_notes(named, "01-devices")
    assert "carol_01-devices.ipynb" in note.en and "carol_01-devices.ipynb" in note.zh
    moodle = list(csv.reader(to_moodle(named, "01-devices").decode("utf-8-sig").splitlines()))
    assert {r[0]: r[2] for r in moodle[1:]} == points


def test_every_roster_student_gets_a_row_and_a_feedback_file(tmp_path):
    bad = Grade(file="subs/carol.ipynb", status="invalid-json")
    bad.reasons = [Message("not valid JSON (x at line 1, column 2)", "不是有效的 JSON（第 1 行第 2 列：x）")]
    rows = [_grade("subs/alice.ipynb"), bad]
    cli.finish(rows, _roster(tmp_path), ["01-devices"], {}, None, None)
    missing = {g.student: g for g in rows if g.status == "missing"}
    assert set(missing) == {"bob", "carol"}
    assert missing["bob"].reason == "no submission found for this lab" and missing["bob"].points == 0.0
    assert "invalid-json" in missing["carol"].reason and "不是有效的 JSON（" in missing["carol"].reason_zh
    (tmp_path / "out").mkdir()
    write_all(tmp_path / "out", rows)
    names = {p.name for p in (tmp_path / "out" / "feedback").iterdir()}
    assert {"alice-01-devices.txt", "bob-01-devices.txt", "carol-01-devices.txt"} <= names
    bob = (tmp_path / "out" / "feedback" / "bob-01-devices.txt").read_text(encoding="utf-8")
    assert "得分：0/3" in bob and "没有找到这个实验的提交" in bob and "None" not in bob
    assert "no submission" not in bob
    moodle = to_moodle(rows).decode("utf-8-sig")
    assert "没有找到这个实验的提交" in moodle, "bob reads Chinese: his Moodle feedback is in Chinese"
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "None" not in page and "0/3" in page
    canvas = (tmp_path / "out" / "canvas.csv").read_text(encoding="utf-8-sig")
    assert "2222" in canvas and "3333" in canvas


def test_due_marks_late_files_and_canvas_late_names(tmp_path):
    due = lms.parse_due("2026-03-01T23:59+00:00")
    rows = [_grade("a.ipynb", submitted=due + 60), _grade("b.ipynb", submitted=due - 60)]
    rows.append(_grade("smith_LATE_123_456_01-devices.ipynb", submitted=due - 60))
    lms.mark_late(rows, due)
    assert ["late" in g.flags for g in rows] == [True, False, True]
    assert "submitted late" in rows[0].reason and "迟交" in rows[0].reason_zh
    with pytest.raises(lms.OptionError, match="2026-03-01T23:59") as bad:
        lms.parse_due("tomorrow")
    assert "应是日期和时间" in bad.value.message.zh


def test_a_file_graded_with_the_same_grader_is_taken_from_the_cache():
    from devicekit_grade.discover import Submission

    old = _grade("old/a.ipynb", sha256="", graded_with="abc")
    sub = Submission(Path("a.ipynb"), "subs/a.ipynb", data=b"{}")
    import hashlib

    old.sha256 = hashlib.sha256(b"{}").hexdigest()
    old.flags = ["identical-file", "check-cell-deleted"]
    old.reasons = [
        Message("identical file to x", "与这份文件完全相同：x"),
        Message("no check cell", "没有检查单元格"),
    ]
    again = cli._from_cache(sub, [old], "abc")
    assert again is not None and again.file == "subs/a.ipynb" and again.score == old.score
    assert again.flags == ["check-cell-deleted"] and again.reasons == [
        Message("no check cell", "没有检查单元格")
    ]
    assert cli._from_cache(sub, [old], "another grader") is None


def test_deeply_nested_json_gets_a_clear_status():
    deep = b'{"cells": ' + b"[" * 100_000 + b"]" * 100_000 + b', "nbformat": 4}'
    with pytest.raises(BadSubmission) as bad:
        loads(deep)
    assert bad.value.status == "invalid-json" and "nested too deeply" in bad.value.reason.en


#: English words of the grader's reasons that must never be left in a Chinese text (file names, code and
#: exception texts are quoted as they are, and are not made of these words).
ENGLISH = re.compile(
    r"\b(the|not|cell|error in|submission|found|graded|ran|longer|stopped|copied|file|lab)\b"
)


def _cjk_only(text: str) -> bool:
    text = re.sub(r"`[^`]*`|\([^)]*\)|（[^）]*）|'[^']*'|[\w./-]*/[\w./-]*|[\w.-]+\.ipynb", "", text)
    return bool(re.search(r"[\u4e00-\u9fff]", text)) and not ENGLISH.search(text)


def _run(*events: dict, stopped: bool = False) -> Execution:
    rows = [{"key": "k", "number": 1, "target": "f", "status": "not-evaluated", "why": "x", "why_zh": "x"}]
    return Execution(list(events), stopped, {"results": rows}, log="", over_limit=True, out_of_memory=True)


def test_every_reason_and_note_the_grader_writes_is_in_chinese_too(tmp_path):
    """Reasons and notes made where the grader finds them (discover, identify, lms, integrity, scoring):
    each is a `Message` whose Chinese has no English words left."""
    from devicekit_grade.discover import find

    (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
    (tmp_path / ".hidden.ipynb").write_text("{}", encoding="utf-8")
    (tmp_path / "a.ipynb").write_text("{}", encoding="utf-8")
    (tmp_path / "link.ipynb").symlink_to("a.ipynb")
    messages = [s.reason for s in find([str(tmp_path)], []) if s.reason is not None]
    for raw in (b"{", b"[1]", b"\xff", b'{"cells": [{"cell_type": "code"}], "nbformat": 4}'):
        with pytest.raises(BadSubmission) as bad:
            loads(raw)
        messages.append(bad.value.reason)
    rows = [_grade("subs/a.ipynb", submitted=2e9), _grade("subs/a2.ipynb", submitted=1e9, sha256="s")]
    rows[0].sha256, rows[0].code_hash = "s", "h"
    rows[1].code_hash = "h"
    rows[1].student, rows[0].student = "x", "y"
    integrity.class_flags(rows)
    lms.mark_late(rows, 1.5e9)
    roster = [lms.Student("z", "Zed", lang="zh")]
    rows += lms.missing_rows(rows, roster, ["01-devices"])
    older = [_grade("subs/b.ipynb", submitted=1.0), _grade("subs/b2.ipynb", submitted=2.0)]
    older[0].student = older[1].student = "b"
    lms.keep_latest(older)
    g = Grade(file="c.ipynb", lab="01-devices", lang="zh")
    cells = [
        {
            "cell_type": "code",
            "id": f"c{n}",
            "source": "x = 1",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
        }
        for n in range(3)
    ]
    nb = loads(json.dumps({"cells": cells, "nbformat": 4, "nbformat_minor": 5, "metadata": {}}).encode())
    first = _run(
        {"event": "cell", "index": 1}, {"event": "error", "index": 1, "ename": "NameError", "evalue": "y"},
        {"event": "timeout", "index": 2}, {"event": "truncated", "index": 2}, {"event": "cell", "index": 3},
        {"event": "dead", "index": 3},
    )  # fmt: skip
    score(g, nb, Options(), first, _run(), 3)
    for row in [*rows, *older, g]:
        messages += row.reasons + row.notes
    assert len(messages) > 20
    for message in messages:
        assert isinstance(message, Message) and _cjk_only(message.zh), message
    died = next(n for n in g.notes if "os._exit" in n.en)
    assert "本地" not in died.zh and "C/C++" in died.zh, died.zh


def test_the_grader_writes_every_text_in_one_way():
    """No re-parsing of English reasons (the old ``zh.py``), no "en · zh" strings, no (en, zh) tuples of
    reasons: every reason and note is a `Message` made where the grader finds it."""
    import devicekit_grade

    folder = Path(devicekit_grade.__file__).parent
    assert not (folder / "zh.py").exists()
    for path in folder.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        lines = [
            line
            for line in text.splitlines()
            if " · " in line and not re.search(r"<(th|h\d)>|title = ", line)
        ]
        assert not lines, (path.name, lines)  # (the report's headings are labels in both languages)
        assert "untranslated(" not in text and "TEMPLATES" not in text and "reason_zh(g" not in text, (
            path.name
        )


def test_the_chinese_report_has_titles_percentages_and_plain_scores(tmp_path):
    titles = lab_titles(LABS, ["01-devices"])
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
    row = next(iter(rows.values()))
    assert row.status == "superseded" and str(new) in row.reason and str(new) in row.reason_zh
