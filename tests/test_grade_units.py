"""devicekit-grade's parts without a kernel: finding files, comparing with the released labs, LMS names and
rosters, points, the report files, resource limits and process clean-up. Fast; nothing here runs a notebook.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from grade_attacks.classroom import TRUST

from course_tools.paths import LABS as LABS_DIR
from course_tools.paths import SOLUTIONS
from course_tools.submissions import (
    graded_labs,
    lab_notebook,
    solution_notebook,
    solved_lab,
    write,
)
from devicekit.messages import Message
from devicekit_grade import discover, lms, sandbox
from devicekit_grade.records import ExerciseGrade, Grade
from devicekit_grade.released import CHECK_CALL, Released, expected_error_cells, integrity
from devicekit_grade.report import MergeError, atomic_write, load, to_csv, to_html, write_all
from devicekit_grade.scoring import unchecked

LABS = graded_labs()
RELEASED = Released(LABS_DIR, SOLUTIONS)


# --- the released labs --------------------------------------------------------------------------------------


def test_the_course_has_labs_to_grade():
    assert "01-devices" in LABS


@pytest.mark.parametrize("lab", LABS)
def test_a_correct_lab_is_flagged_as_the_solutions_code_and_an_untouched_one_raises_no_flag(lab):
    # the tests' "correct" work is the published solution's code without its markers: flagged as such
    for nb in (solved_lab(lab), solved_lab(lab, "zh")):
        flags, reasons = integrity(nb, lab, RELEASED)
        assert flags == ["published-solution"], reasons
        assert "without its markers" in reasons[0].en and "去掉了标记行" in reasons[0].zh
    flags, reasons = integrity(lab_notebook(lab), lab, RELEASED)
    assert (flags, reasons) == ([], [])


@pytest.mark.parametrize("lab", LABS)
def test_one_policy_for_copies_of_the_published_solution_with_or_without_markers(lab):
    """The solution notebook, its code with the marker lines kept, and without them: the same one flag,
    and nothing that changes a score (`run._grade` keeps the judges' score for every row)."""
    kept = solution_notebook(lab)
    kept.metadata["devicekit"]["role"] = "student"
    copies = {"notebook": solution_notebook(lab), "markers kept": kept, "markers removed": solved_lab(lab)}
    seen = {name: integrity(nb, lab, RELEASED) for name, nb in copies.items()}
    assert {name: flags for name, (flags, _) in seen.items()} == dict.fromkeys(copies, ["published-solution"])
    assert "role: solution" in seen["notebook"][1][0].en
    assert (
        "marker lines kept" in seen["markers kept"][1][0].en
        and "连标记行都在" in seen["markers kept"][1][0].zh
    )


@pytest.mark.parametrize("lab", LABS)
def test_an_edited_check_cell_is_flagged(lab):
    nb = lab_notebook(lab)
    cell = next(c for c in nb.cells if c.cell_type == "code" and CHECK_CALL.search(c.source))
    cell.source = cell.source.replace("check(", "check(  ", 1) + "  # edited"
    assert "check-cell-edited" in integrity(nb, lab, RELEASED)[0]


@pytest.mark.parametrize("lab", LABS)
def test_deliberate_error_cells_are_recognised_without_their_tags(lab):
    tagged = {
        i for i, c in enumerate(lab_notebook(lab).cells) if "raises-exception" in c.metadata.get("tags", [])
    }
    nb = lab_notebook(lab)
    for cell in nb.cells:
        cell.metadata.pop("tags", None)
    assert tagged and expected_error_cells(nb, lab, RELEASED) == tagged


# --- finding the submissions --------------------------------------------------------------------------------


def test_find_reads_every_file_refuses_links_and_lists_the_rest(tmp_path):
    subs = tmp_path / "subs"
    write(lab_notebook("01-devices"), subs / "alice.ipynb")
    (subs / "link.ipynb").symlink_to("alice.ipynb")
    (subs / ".x.ipynb").write_text("{}")
    (subs / "bob.ipynb.txt").write_text("{}")
    (subs / "out").mkdir()
    (subs / "out" / "grades.json").write_text("[]")
    found = {Path(s.shown).name: s for s in discover.find([str(subs)], exclude=[subs / "out"])}
    assert set(found) == {"alice.ipynb", "link.ipynb", ".x.ipynb", "bob.ipynb.txt"}
    assert found["alice.ipynb"].data == (subs / "alice.ipynb").read_bytes()
    assert (found["link.ipynb"].status, found["link.ipynb"].data) == ("refused", None)
    assert "alice.ipynb" in found["link.ipynb"].reason.en and "符号链接" in found["link.ipynb"].reason.zh
    assert found[".x.ipynb"].status == found["bob.ipynb.txt"].status == "ignored"


def test_find_without_submissions_is_a_usage_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(discover.UsageError, match="no submissions found"):
        discover.find([str(tmp_path / "empty")], [])
    with pytest.raises(discover.UsageError, match="no such file"):
        discover.find([str(tmp_path / "missing")], [])


# --- who handed it in, and what it is worth -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("shown", "expected"),
    [
        ("subs/smithjane_12345_67890_01-devices.ipynb", {"canvas": "12345", "name": "smithjane"}),
        ("subs/smithjane_LATE_12345_67891_01-devices-1.ipynb", {"canvas": "12345"}),
        (
            "subs/Jane Smith_4242_assignsubmission_file_/01-devices.ipynb",
            {"moodle": "4242", "name": "Jane Smith"},
        ),
        ("subs/01-devices-alice.zh.ipynb", {"key": "alice"}),
        ("subs/01-devices.ipynb", {"key": ""}),
    ],
)
def test_lms_file_names_name_the_student(shown, expected):
    clues = lms.clues(shown, LABS)
    assert {k: clues[k] for k in expected} == expected


def test_a_students_own_folder_names_the_student():
    assert lms.clues("/abs/path/subs/bob/01-devices.ipynb", LABS, folder="bob")["key"] == "bob"
    assert lms.clues("/abs/path/subs/01-devices-bob.ipynb", LABS)["key"] == "bob", "not the input folder"


def _grade(
    file: str, lab: str = "01-devices", score: int = 2, submitted: float = 0.0, folder: str = ""
) -> Grade:
    grade = Grade(file=file, lab=lab, status="graded", score=score, max=3, submitted=submitted, folder=folder)
    grade.exercises = [ExerciseGrade(n, f"k{n}", n <= score, "checked", f"e{n}", f"z{n}") for n in (1, 2, 3)]
    return grade


def test_roster_latest_submission_points_and_weights(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text(
        "id,name,email,lang,canvas_id\ns1,Jane Smith,jane@x.edu,zh,12345\ns2,Bob Li,bob@x.edu,,\n"
    )
    students = lms.read_roster(roster)
    rows = [
        _grade("subs/smithjane_12345_1_01-devices.ipynb", score=1, submitted=1.0),
        _grade("subs/smithjane_LATE_12345_2_01-devices.ipynb", score=3, submitted=2.0),
        _grade("subs/bob/01-devices.ipynb", score=2, folder="bob"),
        _grade("subs/mallory.ipynb", score=3),
    ]
    lms.attribute(rows, students, LABS)
    lms.keep_latest(rows)
    lms.assign_points(rows, lms.parse_weights("1,1,2"), 10)
    assert [r.student for r in rows[:3]] == ["s1", "s1", "s2"]
    assert rows[0].status == "superseded" and rows[1].status == "graded"
    assert rows[1].lang == "zh", "the roster's language wins"
    assert "not-in-roster" in rows[3].flags
    assert (rows[1].points, rows[1].points_possible, rows[1].percent) == (10.0, 10.0, 100.0)
    assert (rows[2].points, rows[2].percent) == (5.0, 50.0), "exercises 1 and 2 of weights 1,1,2"


def test_a_roster_without_ids_is_refused(tmp_path):
    (tmp_path / "r.csv").write_text("name\nJane\n")
    with pytest.raises(lms.RosterError, match="no 'id' column"):
        lms.read_roster(tmp_path / "r.csv")


# --- the report files ---------------------------------------------------------------------------------------


def test_csv_cells_cannot_become_spreadsheet_formulas():
    row = Grade(file='=HYPERLINK("http://x")', status="invalid-json", reasons=[Message("-1", "-1")])
    text = to_csv([row]).decode("utf-8-sig")
    assert "'=HYPERLINK" in text and ",'-1," in text


def test_the_report_escapes_submissions_and_shows_pass_rates():
    rows = [_grade("<script>alert(1)</script>.ipynb", score=1), _grade("b.ipynb", score=3)]
    page = to_html(rows).decode("utf-8")
    assert "<script" not in page.lower() and "&lt;script&gt;" in page
    assert "Content-Security-Policy" in page
    assert "<td>01-devices</td><td>1</td><td>2/2</td><td>100%</td>" in page
    assert "<td>01-devices</td><td>2</td><td>1/2</td><td>50%</td>" in page


def test_outputs_are_written_whole_and_read_back_for_merging(tmp_path):
    rows = [_grade("a.ipynb"), _grade("b.ipynb", score=0)]
    rows[1].lang = "zh"
    lms.attribute(rows, None, LABS)
    lms.assign_points(rows, {}, None)
    write_all(tmp_path, rows)
    assert [g.file for g in load(tmp_path)] == ["a.ipynb", "b.ipynb"]
    assert load(tmp_path)[0].exercises == rows[0].exercises
    assert "得分：0/3" in (tmp_path / "feedback" / "b-01-devices.txt").read_text(encoding="utf-8")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    (tmp_path / "grades.json").write_text("{broken")
    with pytest.raises(MergeError, match="--replace"):
        load(tmp_path)


def test_atomic_write_replaces_whole_files(tmp_path):
    atomic_write(tmp_path / "x", b"old")
    atomic_write(tmp_path / "x", b"new")
    assert (tmp_path / "x").read_bytes() == b"new" and len(list(tmp_path.iterdir())) == 1


# --- limits and clean-up ------------------------------------------------------------------------------------


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="rlimits and /proc: Linux")
def test_limits_apply_to_a_submissions_processes():
    limits = sandbox.Limits(memory_mb=3000, cpu_s=77, processes=300, file_mb=5)
    code = "import resource as r; "
    code += "print([r.getrlimit(x)[0] for x in (r.RLIMIT_AS, r.RLIMIT_CPU, r.RLIMIT_FSIZE)])"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, preexec_fn=sandbox.preexec(limits)
    )
    assert json.loads(done.stdout) == [3000 * 2**20, 77, 5 * 2**20]


@pytest.mark.integration
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc: Linux")
def test_kill_tree_kills_detached_descendants(tmp_path):
    # A child that starts a grandchild in a session of its own, then exits: the grandchild is adopted by the
    # child subreaper (a helper process started here), where kill_tree finds it.
    marker = tmp_path / "grandchild.pid"
    helper = (
        "import os, subprocess, sys, time\n"
        "from devicekit_grade import sandbox\n"
        "sandbox.become_subreaper()\n"
        'code = \'import os, subprocess, sys; p = subprocess.Popen([sys.executable, "-c", '
        '"import time; time.sleep(300)"], start_new_session=True); '
        'open(sys.argv[1], "w").write(str(p.pid))\'\n'
        f"subprocess.run([sys.executable, '-c', code, {str(marker)!r}])\n"
        "time.sleep(300)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    proc = subprocess.Popen([sys.executable, "-c", helper], env=env)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists() or not marker.read_text():
            assert time.monotonic() < deadline, "the helper did not start its grandchild"
            time.sleep(0.2)
        grandchild = int(marker.read_text())
        assert grandchild in sandbox.descendants(proc.pid), "adopted by the subreaper"
        sandbox.kill_tree(proc.pid)
        proc.wait(timeout=60)
        deadline = time.monotonic() + 60
        while (
            grandchild in sandbox.descendants(proc.pid)
            or Path(f"/proc/{grandchild}/cmdline").exists()
            and (b"time.sleep(300)" in Path(f"/proc/{grandchild}/cmdline").read_bytes())
        ):
            assert time.monotonic() < deadline, "the detached grandchild survived"
            time.sleep(0.2)
    finally:
        proc.kill()


def test_the_runtime_library_knows_nothing_of_grading():
    src = Path(__file__).resolve().parents[1] / "src" / "devicekit"
    assert not (src / "grade").exists()
    offenders = [p.name for p in src.rglob("*.py") if "devicekit_grade" in p.read_text(encoding="utf-8")]
    assert offenders == []


def test_the_console_script_belongs_to_the_grade_extra():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["devicekit-grade"] == "devicekit_grade:console"
    assert {"nbformat", "nbclient", "ipykernel"} <= {
        r.split(">")[0].split("=")[0] for r in project["optional-dependencies"]["grade"]
    }


def test_lab_csv_headers_are_stable():
    text = to_csv([_grade("a.ipynb")]).decode("utf-8-sig")
    header = next(csv.reader(text.splitlines()))
    assert header[:6] == ["file", "student", "student_name", "lab", "lang", "identified_by"]
    assert header[-3:] == ["feedback", "reason", "sha256"]


@pytest.mark.integration  # a whole grading run: the evaluator imports torch in its own process
def test_the_grading_process_itself_never_imports_torch_or_the_checks(tmp_path):
    """torch's import is about three seconds of CPU per run; only the evaluator and the kernels need it.
    Of devicekit the grader's own process loads its two-language texts only (`devicekit.messages`, which
    imports no torch), never the checks."""
    (tmp_path / "broken.ipynb").write_text("{not json", encoding="utf-8")
    script = (
        "import json, sys\n"
        "from devicekit_grade import cli\n"
        f"code = cli.main(['--out', 'out', '-q', *{TRUST!r}, 'broken.ipynb'])\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('torch', 'devicekit', 'devicekit_labs')]\n"
        "print(json.dumps([code, sorted(loaded)]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert json.loads(done.stdout.splitlines()[-1]) == [
        0,
        ["devicekit", "devicekit.lang", "devicekit.messages"],
    ], done.stderr[-2000:]
    rows = json.loads((tmp_path / "out" / "grades.json").read_text(encoding="utf-8"))
    assert [(r["file"], r["status"]) for r in rows] == [("broken.ipynb", "invalid-json")]


def test_lab_titles_come_from_the_installed_manifest_without_the_notebooks():
    from devicekit_grade.report import lab_titles

    titles = lab_titles(None, ["01-devices", "09-capstone", "99-unknown"])
    assert titles["01-devices"] == ("Lab 1 · Devices and `.device`", "实验 1：设备与 `.device`")
    assert titles["09-capstone"][1].startswith("实验 9：") and "99-unknown" not in titles


def test_sandbox_without_bubblewrap_says_what_to_do(monkeypatch):
    from devicekit_grade import context

    monkeypatch.setattr(sandbox, "bwrap_works", lambda: False)
    with pytest.raises(RuntimeError, match="apt install bubblewrap") as refused:
        context.Context(context.Options(isolation="bwrap"))
    assert "bubblewrap" in refused.value.message.zh


def test_the_runs_own_folder_is_hidden_from_notebooks_and_removed_when_the_grader_refuses(monkeypatch):
    # it holds every box and the evaluator's copy of the hidden judges: hidden wherever TMPDIR is
    from devicekit_grade import context

    seen = {}

    def refuse(requested, *, trust, keep, hide):
        seen["hide"] = hide
        raise sandbox.Refused(Message("no bubblewrap in this test", "本测试中没有 bubblewrap"))

    monkeypatch.setattr(sandbox, "choose", refuse)
    with pytest.raises(sandbox.Refused):
        context.Context(context.Options(isolation="bwrap"))
    root = Path(seen["hide"][-1])
    assert root.name.startswith("devicekit-grade-") and not root.exists()


def test_checks_given_with_dash_dash_checks_replace_the_installed_ones(tmp_path):
    """``--checks DIR``: an instructor trying new checks; the grader's snapshot (what the kernel's probes
    and the evaluator's judges load) takes DIR's ``labNN.py`` instead of the installed one, the rest as is."""
    from devicekit_grade.context import snapshot_sources

    (tmp_path / "lab01.py").write_text("# new checks for lab 1\n", encoding="utf-8")
    (tmp_path / "notes.py").write_text("# not a lab module\n", encoding="utf-8")
    installed, replaced = snapshot_sources(), snapshot_sources(tmp_path)
    assert replaced["devicekit_labs/lab01.py"] == b"# new checks for lab 1\n"
    assert installed["devicekit_labs/lab01.py"] != replaced["devicekit_labs/lab01.py"]
    assert "devicekit_labs/notes.py" not in replaced
    assert {k: v for k, v in replaced.items() if k != "devicekit_labs/lab01.py"} == {
        k: v for k, v in installed.items() if k != "devicekit_labs/lab01.py"
    }
    with pytest.raises(RuntimeError, match="no such folder"):
        snapshot_sources(tmp_path / "missing")


@pytest.mark.integration  # starts the evaluator zygote: a Python that imports torch
def test_an_evaluator_without_a_kernel_says_why_in_both_languages(tmp_path):
    """Each evaluation is a child forked from the run's zygote (the one way the evaluator starts): when no
    kernel connects, every exercise is "not-evaluated", and the learner reads why in both languages; when
    the zygote is gone, the evaluation is the grader's error, never a score."""
    import socket

    from devicekit_grade import context
    from devicekit_grade._evaluator import FD_PLACEHOLDER
    from devicekit_grade.released import Released

    ctx = context.Context(context.Options(released=Released(None, None), trust=True, isolation="none"))
    try:
        assert ctx.labs, "the zygote answered --probe"
        args = ["--lab", "01-devices", "--fd", FD_PLACEHOLDER, "--connect-timeout", "0.01"]
        for _ in range(2):  # a second child from the same zygote answers the same way
            listener = socket.socket(socket.AF_UNIX)
            listener.bind(str(tmp_path / f"s{_}"))
            listener.listen(1)
            answer = ctx.evaluate(args, timeout=300, listener=listener.fileno())
            listener.close()
            assert [r["status"] for r in answer["results"]] == ["not-evaluated"] * 3, answer
            how, why = unchecked(answer["results"][0], "move_batch", stopped=False)
            assert how == "not-run" and "never reached the end" in why.en
            assert why.zh == "无法检查：notebook 没有运行到最后，所以收集不到它的答案。"
        assert ctx._zygote is not None
        ctx._zygote.kill()
        ctx._zygote.wait()
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(tmp_path / "gone"))
        answer = ctx.evaluate(args, timeout=30, listener=listener.fileno())
        listener.close()
        assert "results" not in answer and "zygote is gone" in answer["error"], answer
    finally:
        ctx.close()


def test_the_cell_that_stopped_a_run_is_where_the_kernel_died_or_ignored_its_interrupt():
    from devicekit_grade.box import Execution, fatal_cell

    def run(*events: dict, stopped: bool = False) -> Execution:
        cells = [{"event": "cell", "index": i} for i in range(4)]
        return Execution(events=cells + list(events), stopped=stopped, answers={}, log="")

    assert fatal_cell(run()) is None  # it ran to its end
    assert fatal_cell(run({"event": "timeout", "index": 2})) is None  # interrupted, and it went on
    assert fatal_cell(run({"event": "timeout", "index": 2}, {"event": "unresponsive", "index": 2})) == 2
    assert fatal_cell(run({"event": "dead", "index": 3})) == 3
    # stopped by the notebook's limit: the first interrupted cell after which no cell finished
    stuck = run({"event": "timeout", "index": 2}, {"event": "timeout", "index": 3}, stopped=True)
    assert fatal_cell(stuck) == 2


def test_the_kernel_answers_probes_only_and_as_data():
    """The one request a grading kernel answers is ``probe``: the legacy operations that handed the
    evaluator callable stand-ins of the learner's objects (``get``, ``call``, ``getattr``, ``iter``) are gone,
    a name the notebook lacks is ``missing``, a probe that fails or answers with something that is not plain
    data is an ``error`` (type and message), and one past its time limit a ``ProbeTimeout``."""
    from devicekit_grade._kernel import answer

    def slow(fn):
        time.sleep(5)

    probes = {"ok": lambda fn: {"value": fn(2)}, "raises": lambda fn: fn(None), "object": lambda fn: fn}
    probes["slow"] = slow
    namespace = {"double": lambda x: 2 * x}

    def probe(key: str, name: str = "double", timeout: float = 0) -> dict:
        return answer({"op": "probe", "key": key, "name": name}, namespace, probes, timeout)

    assert probe("ok") == {"kind": "observations", "value": {"value": 4}}
    assert probe("ok", "absent") == {"kind": "missing"}
    assert probe("raises")["type"] == "TypeError"
    assert probe("object")["type"] == "ProbeError"
    late = probe("slow", timeout=0.2)
    assert late["type"] == "ProbeTimeout" and "0 s" in late["message"], late
    for op in ("get", "call", "getattr", "iter", "next"):
        reply = answer({"op": op, "name": "double", "id": 1}, namespace, probes, 0)
        assert reply["kind"] == "error" and "unknown request" in reply["message"], reply


def test_the_evaluator_reads_a_forged_kernel_reply_as_data_and_caps_its_text():
    """A kernel that answers with whatever it likes (a huge exception name, observations no judge accepts,
    a legacy handle) gets a failed or not-evaluated exercise, with bounded text: never a pass or a crash."""
    import socket
    import threading

    from devicekit_grade import _evaluator, wire

    replies = [
        {"kind": "error", "type": "E" * 100_000, "message": "m" * 100_000},
        {"kind": "observations", "value": {"nested": "not what the judge expects"}},
        {"kind": "handle", "id": 1, "type": "function", "callable": True},  # the legacy channel: gone
    ]
    ours, theirs = socket.socketpair()

    def kernel() -> None:
        for reply in replies:
            wire.receive(theirs)
            wire.send(theirs, reply)
        theirs.close()

    thread = threading.Thread(target=kernel, daemon=True)
    thread.start()
    ours.settimeout(30)
    rows = _evaluator.evaluate("01-devices", _evaluator.Channel(ours, 30), Message("", ""), {})
    thread.join(30)
    assert [r.get("passed") for r in rows] == [False, False, None], rows
    assert len(rows[0]["en"]) < 600 and len(rows[0]["zh"]) < 600, len(rows[0]["en"])
    assert rows[2]["status"] == "not-evaluated" and "does not understand" in rows[2]["why"], rows[2]
    assert "无法理解" in rows[2]["why_zh"]


def test_an_evaluator_that_failed_is_the_graders_error_whatever_the_events_say():
    """The evaluator answers even when no kernel connects, so a reply without ``results`` is its own failure
    (a crash, a time limit): the grader's error, never the notebook's ``error`` row, even when the run's
    events (a file the notebook's user can rewrite) say the notebook never reached its end (review42, open 5).
    """
    import nbformat

    from devicekit_grade.box import Execution
    from devicekit_grade.context import Options
    from devicekit_grade.failures import GraderError
    from devicekit_grade.records import Grade
    from devicekit_grade.scoring import score

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    events = [{"event": "cell", "index": 0}, {"event": "cell", "index": 1}]  # no "done": it never finished
    answers = {"error": "the evaluator failed (exit -11)"}
    crashed = Execution(events=events, stopped=False, answers=answers, log="")
    with pytest.raises(GraderError) as raised:
        score(Grade(file="a.ipynb"), nb, Options(), crashed, None, None)
    assert "exit -11" in str(raised.value)


def test_the_console_script_without_the_grade_extra_says_so_in_both_languages(monkeypatch, capsys):
    """``devicekit-grade`` without its extra: exit 2 and the install command, in English and Chinese."""
    import devicekit_grade

    monkeypatch.setattr(devicekit_grade, "REQUIRES", ("nbformat", "no_such_module_for_devicekit"))
    assert devicekit_grade.console() == 2
    command, name = '`pip install "devicekit[grade]"`', "no_such_module_for_devicekit"
    assert capsys.readouterr().err.splitlines() == [
        f"devicekit-grade needs {name}: install the grader with {command}",
        f"devicekit-grade 需要 {name}：请用 {command} 安装评分器",
    ]


def test_the_workers_log_is_read_through_the_graders_own_handle(tmp_path):
    """The box owns its run folder: a notebook can put a link to any file in the log's place while its
    worker runs (slim47's review). The tail comes from the file the grader opened, whatever the path is
    now."""
    from devicekit_grade.box import _tail

    secret = tmp_path / "secret"
    secret.write_text("root's file\n", encoding="utf-8")
    path = tmp_path / "worker.log"
    with open(path, "w+b") as log:
        log.write(b"x" * 3000 + b"Traceback: the worker's own last line\n")
        log.flush()
        path.unlink()
        path.symlink_to(secret)
        tail = _tail(log)
    assert tail.endswith("the worker's own last line\n") and len(tail.encode()) == 2000
    assert "root's file" not in tail


def test_a_temporary_folder_too_long_for_the_answer_sockets_is_a_clear_usage_error(tmp_path):
    """A notebook answers on a Unix socket under the run's temporary folder, whose path has at most 107
    bytes: a long TMPDIR (a cluster's scratch folder) made every row a grader-error (review47). The grader
    now says so before grading, in both languages, and leaves nothing behind."""
    deep = tmp_path / ("t" * 60) / ("u" * 40)
    deep.mkdir(parents=True)
    (tmp_path / "broken.ipynb").write_text("{not json", encoding="utf-8")
    env = {**os.environ, "TMPDIR": str(deep)}
    done = subprocess.run(
        [sys.executable, "-m", "devicekit_grade", "--out", "out", "-q", *TRUST, "broken.ipynb"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    assert "set TMPDIR to a shorter folder" in done.stderr and "请把 TMPDIR 设为" in done.stderr
    assert list(deep.iterdir()) == []
