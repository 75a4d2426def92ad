"""devicekit-grade end to end: one realistic class, graded in one run of the command (a subprocess, as an
instructor runs it, two notebooks at a time), with every lab's correct and untouched submission and, for
lab 1, each attack from issue 16 as a submission. Each attack gets the right grade and leaves the other
rows, the submissions and the output folder untouched.

The grades are the grader's own: its checks run in a process the notebooks never ran in. Limits are
generous (a busy 2-core machine); nothing here looks at a process or file it did not create.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import nbformat
import pytest

from course_tools.paths import ROOT, SOLUTIONS
from course_tools.submissions import (
    as_student_work,
    graded_labs,
    lab_notebook,
    solution_notebook,
    solved_lab,
    write,
)
from devicekit_grade import sandbox

pytestmark = pytest.mark.integration  # the grader runs every notebook in kernels of its own

LAB = "01-devices"
LABS = graded_labs()


def _index(nb: nbformat.NotebookNode, text: str) -> int:
    found = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and text in c.source]
    assert found, f"no code cell contains {text!r}"
    return found[0]


def _insert(nb: nbformat.NotebookNode, after: str, source: str) -> nbformat.NotebookNode:
    nb.cells.insert(_index(nb, after) + 1, nbformat.v4.new_code_cell(source))
    return nb


def _replace_function(nb: nbformat.NotebookNode, name: str, body: str) -> nbformat.NotebookNode:
    nb.cells[_index(nb, f"def {name}(")].source = body
    return nb


# --- the attacks (issue 16), each a submission --------------------------------------------------------------

PATCH_CHECKS = """import devicekit_labs as _E
_E._outcome = lambda ex, args, kwargs: (True, "passed.", "通过。")
for _ex in list(_E._REGISTRY.values()):
    object.__setattr__(_ex, "run", lambda *a, **k: None)"""

FAKE_RESULTS = """from devicekit_labs import CheckResult, results
for _n, _k in enumerate(["move-batch", "causal-mask", "predict-raises"], 1):
    results.append(CheckResult("01-devices", _k, _n, True, "✓ passed.", "✓ 通过。"))"""

# Looks for the submissions through the command lines, working directories and environments of its
# ancestors; steals the answers of any solved notebook it finds and damages that file.
SNOOP = """import glob, os, re
_found = []
_pid = os.getpid()
for _ in range(6):
    try:
        _pid = int(re.search(r"PPid:\\s+(\\d+)", open(f"/proc/{_pid}/status").read()).group(1))
    except Exception:
        break
    if _pid <= 1:
        break
    _places = []
    for _what in ("cwd",):
        try:
            _places.append(os.readlink(f"/proc/{_pid}/{_what}"))
        except OSError:
            pass
    for _what in ("cmdline", "environ"):
        try:
            _raw = open(f"/proc/{_pid}/{_what}", "rb").read().decode()
            _places += [p.split("=", 1)[-1] for p in _raw.split("\\0")]
        except OSError:
            pass
    for _place in _places:
        if os.path.isdir(_place):
            _found += glob.glob(os.path.join(_place, "*.ipynb"))
            _found += glob.glob(os.path.join(_place, "*", "*.ipynb"))
for _path in _found:
    try:
        _text = open(_path).read()
        if "def move_batch" in _text and "NotImplementedError" not in _text.split("def move_batch")[1][:300]:
            import json as _json
            for _cell in _json.loads(_text)["cells"]:
                _src = "".join(_cell["source"])
                if _cell["cell_type"] == "code" and _src.lstrip().startswith("def "):
                    exec(_src, globals())
        open(_path, "w").write("overwritten by snoop")
    except Exception:
        pass
print("snoop found", len(_found))"""

# A detached process that keeps touching a file: after the run the file must stop changing.
DETACH = """import subprocess, sys
_beat = "import sys, time\\nwhile True:\\n    open(sys.argv[1], 'w').write(str(time.time()))\\n"
_beat += "    time.sleep(0.5)"
subprocess.Popen(["setsid", sys.executable, "-c", _beat, {victim!r}],
    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)"""

STARTUP = """import os, pathlib
_ipython = pathlib.Path(os.environ.get("IPYTHONDIR", "~/.ipython")).expanduser()
_startup = _ipython / "profile_default" / "startup"
_startup.mkdir(parents=True, exist_ok=True)
(_startup / "00-devicekit-grade-test.py").write_text("open({victim!r}, 'w').write('startup ran')")"""

# Signals its parent and grandparent (the worker and the grader, when they are visible), never anything else.
KILL_PARENTS = """import os, re, signal
_targets, _pid = [], os.getpid()
for _ in range(2):
    try:
        _pid = int(re.search(r"PPid:\\s+(\\d+)", open(f"/proc/{_pid}/status").read()).group(1))
    except Exception:
        break
    if _pid <= 1:
        break
    _targets.append(_pid)
for _sig in (signal.SIGTERM, signal.SIGKILL):
    for _target in _targets:
        try:
            os.kill(_target, _sig)
        except OSError:
            pass"""

OVERWRITE = "open({path!r}, 'w').write('not a notebook any more')"


def _colab_copy(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    for cell in nb.cells:
        cell.metadata.pop("tags", None)
    return nb


def build_class(root: Path) -> dict[str, str]:
    """Write the class into ``root/subs``; returns {file name: expectation key}."""
    subs = root / "subs"
    subs.mkdir(parents=True)
    victims = root / "victims"
    victims.mkdir()
    notebooks: dict[str, nbformat.NotebookNode] = {}
    for lab in LABS:
        notebooks[f"{lab}-correct.ipynb"] = solved_lab(lab)
        notebooks[f"{lab}-untouched.zh.ipynb"] = lab_notebook(lab, "zh")
    edited = lab_notebook(LAB)
    for key, fn in (
        ("move-batch", "lambda x, d: x.to(d)"),
        ("causal-mask", "lambda x: x"),
        ("predict-raises", "{}"),
    ):
        edited.cells[_index(edited, f'"{key}"')].source = f'check("{LAB}", "{key}", {fn})'
    notebooks["edited-checks.ipynb"] = edited
    notebooks["patched-checks.ipynb"] = _insert(
        lab_notebook(LAB), "from devicekit_labs import check", PATCH_CHECKS
    )
    notebooks["fake-results.ipynb"] = _insert(lab_notebook(LAB), '"predict-raises"', FAKE_RESULTS)
    notebooks["published-solution.ipynb"] = solution_notebook(LAB)
    notebooks["ignores-device.ipynb"] = _replace_function(
        solved_lab(LAB), "move_batch", "def move_batch(x, device):\n    return x.to(other)"
    )
    notebooks["empty-tensor.ipynb"] = _replace_function(
        solved_lab(LAB),
        "move_batch",
        "def move_batch(x, device):\n    return torch.empty(x.shape, device=device)",
    )
    notebooks["snoop.ipynb"] = _insert(lab_notebook(LAB), '"predict-raises"', SNOOP)
    notebooks["detached.ipynb"] = _insert(
        solved_lab(LAB), '"move-batch"', DETACH.format(victim=str(victims / "detached"))
    )
    notebooks["startup-file.ipynb"] = _insert(
        solved_lab(LAB), '"move-batch"', STARTUP.format(victim=str(victims / "startup"))
    )
    if sandbox.namespaces_work():  # without them, a notebook running as the grader's user can signal it
        notebooks["kills-parents.ipynb"] = _insert(solved_lab(LAB), '"move-batch"', KILL_PARENTS)
    notebooks["overwriter.ipynb"] = _insert(
        lab_notebook(LAB), '"move-batch"', OVERWRITE.format(path=str(subs / "zz-classmate.ipynb"))
    )
    notebooks["zz-classmate.ipynb"] = solved_lab(LAB)
    notebooks["colab-no-tags.ipynb"] = _colab_copy(solved_lab(LAB))
    for name, nb in notebooks.items():
        write(nb, subs / name)
    (subs / "aaa.ipynb").symlink_to("zz-classmate.ipynb")
    (subs / "instructor.ipynb").symlink_to(SOLUTIONS / f"{LAB}.ipynb")
    write(solved_lab(LAB), subs / ".hidden.ipynb")
    (subs / "dave.ipynb.txt").write_text(nbformat.writes(solved_lab(LAB)), encoding="utf-8")
    carol = subs / "carol"
    write(solved_lab(LAB), carol / f"{LAB}.ipynb")
    (carol / "data.csv").write_text("1,2\n", encoding="utf-8")
    (carol / "everything").symlink_to("/")
    return {name: name for name in notebooks}


def sha256(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def _needs_trust() -> list[str]:
    """``--trust-submissions`` where this machine offers neither a user per notebook nor bubblewrap."""
    import nbclient

    as_root = sandbox.running_as_root()
    private = sandbox.usable_by_others([sys.executable, nbclient.__file__]) if as_root else ""
    try:
        sandbox.choose_isolation("auto", as_root, private, sandbox.bwrap_works(), False)
    except sandbox.Refused:
        return ["--trust-submissions"]
    return []


TRUST = _needs_trust()


def run_grader(cwd: Path, *args: str, timeout: float = 3600) -> subprocess.CompletedProcess:
    """``devicekit-grade`` as an instructor runs it: from a shell whose working directory holds the class."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    if args and args[0] != "merge":
        args = (*args[:-1], *TRUST, args[-1])
    script = '"$0" -m devicekit_grade "$@"; status=$?; exit $status'
    return subprocess.run(
        ["sh", "-c", script, sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    names = build_class(root)
    protected = {k: v for k, v in sha256(root / "subs").items() if not k.startswith(("overwriter", "zz-"))}
    started = time.monotonic()
    released = ["--labs", str(ROOT / "labs"), "--solutions", str(SOLUTIONS)]
    done = run_grader(root, "--out", "grades", "--jobs", "2", *released, "subs")
    took = time.monotonic() - started
    rows = (
        json.loads((root / "grades" / "grades.json").read_text(encoding="utf-8"))
        if done.returncode == 0
        else []
    )
    # The detached process of detached.ipynb names its heartbeat file on its command line; that path is this
    # run's own, so whatever process still carries it was started by this test's submission.
    survivors = _wait_until_gone(str(root / "victims" / "detached"), DETACHED_DEADLINE_S)
    return {
        "root": root,
        "names": names,
        "done": done,
        "took": took,
        "protected_before": protected,
        "rows": {r["file"].removeprefix("subs/"): r for r in rows},
        "detached_survivors": survivors,
    }


#: How long the grader may take to end a submission's detached processes after the run (busy machine).
DETACHED_DEADLINE_S = 60
#: The most a row may take on average: one lab notebook, run twice (the grader's run and its checks), on a
#: busy 2-core machine with two submissions at a time.
ROW_LIMIT_S = 120


def _processes_with(marker: str) -> list[int]:
    """The live processes whose command line contains ``marker`` (Linux: /proc; elsewhere: ps)."""
    proc = Path("/proc")
    if proc.is_dir() and (proc / "self" / "cmdline").exists():
        found = []
        for entry in proc.iterdir():
            if entry.name.isdigit():
                try:
                    if marker.encode() in (entry / "cmdline").read_bytes():
                        found.append(int(entry.name))
                except OSError:  # ended meanwhile, or not ours to read
                    pass
        return found
    listing = subprocess.run(["ps", "-axo", "pid=,command="], capture_output=True, text=True).stdout
    return [int(line.split(None, 1)[0]) for line in listing.splitlines() if marker in line]


def _wait_until_gone(marker: str, deadline_s: float) -> list[int]:
    """Wait until no process carries ``marker``; returns the ones still alive at the deadline, ended then."""
    deadline = time.monotonic() + deadline_s
    while (alive := _processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in alive:  # started by this test's own submission: do not leave it running
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return alive


def row(graded, name: str) -> dict:
    assert graded["done"].returncode == 0, graded["done"].stderr[-3000:]
    return graded["rows"][name]


def passed(r: dict) -> list[bool]:
    return [e["passed"] for e in r["exercises"]]


# --- every lab: a correct submission gets full marks, an untouched one zero ---------------------------------


@pytest.mark.parametrize("lab", LABS)
def test_a_correct_submission_gets_full_marks(graded, lab):
    r = row(graded, f"{lab}-correct.ipynb")
    assert (r["status"], r["lab"]) == ("graded", lab), r["reason"]
    assert "published-solution" not in r["flags"]
    # while a lab still has legacy one-piece checks, an exercise whose check needs the learner's object is
    # not scored (no replay: learner code never runs where a score is computed) and says so
    unscored = [e for e in r["exercises"] if not e["passed"]]
    for e in unscored:
        assert e["how"] == "not-run" and "legacy one-piece check" in e["en"], e["en"]
    assert r["score"] == r["max"] - len(unscored) and r["max"] > 0, r["feedback"]
    if not unscored:
        assert r["percent"] == 100.0


@pytest.mark.parametrize("lab", LABS)
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


def test_the_published_solution_scores_zero_and_is_named(graded):
    r = row(graded, "published-solution.ipynb")
    assert r["score"] == 0 and "published-solution" in r["flags"]
    assert "published solution" in r["reason"]


@pytest.mark.parametrize("name", ["ignores-device.ipynb", "empty-tensor.ipynb"])
def test_exercise_one_checks_values_and_two_devices(graded, name):
    r = row(graded, name)
    assert passed(r) == [False, True, True], r["feedback"]


def test_a_snooping_submission_finds_nothing_and_changes_nothing(graded):
    if not sandbox.namespaces_work():
        pytest.skip("no PID namespaces here: the guide documents what a notebook can then see")
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
    beat = graded["root"] / "victims" / "detached"
    assert beat.exists(), "the detached process ran during its submission"
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
        while child.pid not in _processes_with(marker):
            assert time.monotonic() < deadline, "the search does not see a running process"
            time.sleep(0.1)
        child.terminate()
        child.wait(timeout=60)
        assert _wait_until_gone(marker, 60) == []
    finally:
        child.kill()
        child.wait()


def test_an_ipython_startup_file_dies_with_its_submission(graded):
    assert row(graded, "startup-file.ipynb")["score"] == 3
    assert not (graded["root"] / "victims" / "startup").exists(), "a later kernel ran the startup file"
    assert not Path("~/.ipython/profile_default/startup/00-devicekit-grade-test.py").expanduser().exists()


def test_a_submission_that_kills_its_parents_only_ends_itself(graded):
    if not sandbox.namespaces_work():
        pytest.skip(
            "no PID namespaces here: a notebook running as the grader's user can signal it (see the guide)"
        )
    r = row(graded, "kills-parents.ipynb")
    assert r["status"] in ("graded", "kernel-died"), r["reason"]
    assert len(graded["rows"]) >= len(graded["names"]), "the run went on"


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
    root = graded["root"]
    before = json.loads((root / "grades" / "grades.json").read_text(encoding="utf-8"))
    done = run_grader(root, "--out", "grades", "--jobs", "1", "subs/zz-classmate.ipynb")
    assert done.returncode == 0, done.stderr[-2000:]
    after = json.loads((root / "grades" / "grades.json").read_text(encoding="utf-8"))
    assert len(after) == len(before), "re-grading one file keeps the class"
    assert "merged with" in done.stdout


def test_a_class_of_submissions_takes_reasonable_time(graded):
    done, rows = graded["done"], graded["rows"]
    per = graded["took"] / max(1, len(rows))
    print(f"\n{len(rows)} rows in {graded['took']:.0f} s ({per:.1f} s per row, -j 2)")
    assert done.returncode == 0, done.stderr[-3000:]
    # what the run produced: one row per entry of the class folder (data files too), and its summary says so
    subs = graded["root"] / "subs"
    entries = {str(p.relative_to(subs)) for p in subs.rglob("*") if p.is_file() or p.is_symlink()}
    assert set(rows) == entries
    summary = next((line for line in done.stdout.splitlines() if " row(s): " in line), "")
    total, _, counts = summary.rstrip(".").partition(" row(s): ")
    said = {status: int(n) for status, n in (item.rsplit(" ", 1) for item in counts.split(", ") if item)}
    assert (total, said) == (str(len(rows)), Counter(r["status"] for r in rows.values())), done.stdout
    assert per < ROW_LIMIT_S, f"{per:.0f} s per row"


# --- a kernel that dies or hangs: the exercises before count, the rest are "not reached" --------------------


@pytest.mark.parametrize(
    ("name", "cell", "status"),
    [
        ("dies.ipynb", "import os\nos._exit(1)", "kernel-died"),
        (
            "stuck.ipynb",
            "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass",
            "timeout",
        ),
    ],
)
def test_a_run_that_stops_keeps_the_exercises_before(tmp_path, name, cell, status):
    write(_insert(solved_lab(LAB), '"move-batch"', cell), tmp_path / "subs" / name)
    done = run_grader(tmp_path, "--out", "out", "--timeout", "20", "--notebook-timeout", "90", "subs")
    assert done.returncode == 0, done.stderr[-2000:]
    (r,) = json.loads((tmp_path / "out" / "grades.json").read_text(encoding="utf-8"))
    assert r["status"] == status, r["reason"]
    assert passed(r) == [True, False, False]
    assert [e["how"] for e in r["exercises"]][1:] == ["not-reached", "not-reached"]
    assert r["exercises"][0]["how"] in ("judged", "legacy")
    assert "not reached" in r["exercises"][1]["en"] and "no cell that runs" not in r["exercises"][1]["en"]


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
