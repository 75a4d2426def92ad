"""The grader wherever the course lives (issue 41), without running a notebook: what a sandbox shows a kernel
(the Python installation, site-packages, the package folders an editable install loads from, never the
checkout around them), the check that a sandbox lets a kernel start, and the grader's own failures told
apart from a notebook's (``grader-error``, exit status 4). The end-to-end run from a fresh clone under a
home folder and under /tmp: ``test_grade_clone.py``."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import pytest

from devicekit.messages import Message
from devicekit_grade import box, cli, context, failures, installed, run, sandbox
from devicekit_grade.box import Execution, grader_failure
from devicekit_grade.failures import GraderError, GraderFailure
from devicekit_grade.records import STATUSES, Grade

BWRAP = pytest.mark.skipif(
    not sandbox.bwrap_works(), reason="bubblewrap is not installed or cannot start here"
)


@pytest.fixture
def public_tmp():
    """A folder that other users can search (pytest's own temporary folders are private to their user; as
    root, a sandbox runs as a user of its own)."""
    folder = Path(tempfile.mkdtemp(prefix="devicekit-grade-test-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


# --- what the kernel loads from -----------------------------------------------------------------------------


def _checkout(root: Path) -> Path:
    """A course checkout in ``root`` as an editable install leaves it: ``src/`` with a package, a module,
    the install's ``*.egg-info`` and a data folder, beside ``solutions/`` and ``grading/hidden/``."""
    checkout = root / "my 课程"
    package = checkout / "src" / "course_pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("VALUE = 42\n", encoding="utf-8")
    (checkout / "src" / "single_module.py").write_text("", encoding="utf-8")
    (checkout / "src" / "course_pkg.egg-info").mkdir()
    (checkout / "src" / "notes").mkdir()
    for secret in ("solutions", "grading/hidden"):
        (checkout / secret).mkdir(parents=True)
        (checkout / secret / "answer.txt").write_text("42", encoding="utf-8")
    return checkout


def test_a_pth_source_folder_is_kept_package_by_package_and_a_folder_of_distributions_whole(tmp_path):
    checkout = _checkout(tmp_path)
    site = tmp_path / "env" / "site-packages"
    site.mkdir(parents=True)
    shared = tmp_path / "other env" / "site-packages"  # another environment's packages, reused
    (shared / "numpy_like").mkdir(parents=True)
    (shared / "numpy_like-1.0.dist-info").mkdir()
    (site / "__editable__.course-0.1.pth").write_text(f"{checkout / 'src'}\n", encoding="utf-8")
    (site / "shared.pth").write_text(f"# reuse\n{shared}\nimport os\n{tmp_path / 'gone'}\n", encoding="utf-8")
    needs = installed.kernel_needs(sites=[str(site)], meta_path=[])
    assert str(site) in needs.trees and str(shared) in needs.trees
    assert needs.libraries == (str(site), str(shared)), (
        "the evaluator's path: the site folder, then the shared"
    )
    src = checkout / "src"
    assert {str(src / "course_pkg"), str(src / "single_module.py")} <= set(needs.packages)
    for never in (checkout, src, src / "notes", src / "course_pkg.egg-info", checkout / "solutions"):
        assert str(never) not in needs.paths, never
    assert not any("solutions" in p or "grading" in p or "gone" in p for p in needs.paths), needs


def test_editable_finders_name_their_package_folders(tmp_path, monkeypatch):
    checkout = _checkout(tmp_path)
    # setuptools' finder: a module with MAPPING and NAMESPACES; the editables library: _redirections
    finder_module = types.ModuleType("__editable___course_0_1_finder")
    finder_module.MAPPING = {"course_pkg": str(checkout / "src" / "course_pkg")}
    finder_module.NAMESPACES = {"course_pkg.data": [str(checkout / "src" / "notes")]}
    monkeypatch.setitem(sys.modules, finder_module.__name__, finder_module)
    setuptools_finder = type("_EditableFinder", (), {"__module__": finder_module.__name__})
    editables_finder = type(
        "RedirectingFinder",
        (),
        {"_redirections": {"single_module": str(checkout / "src" / "single_module.py")}},
    )
    found = installed.finder_paths([setuptools_finder, editables_finder, object])
    src = checkout / "src"
    assert found == [str(src / "course_pkg"), str(src / "notes"), str(src / "single_module.py")]


def test_this_checkouts_packages_are_kept_without_the_checkout():
    needs = installed.kernel_needs()
    root = Path(__file__).resolve().parents[1]
    for name in installed.GRADER_PACKAGES:
        folder = installed.package_folder(name)
        assert folder is not None and any(
            str(folder) == p or str(folder).startswith(p.rstrip("/") + "/") for p in needs.paths
        ), (name, needs)
    for never in (root, root / "src", root / "solutions", root / "grading", root / "grading" / "hidden"):
        assert str(never) not in needs.paths
    assert sys.prefix in needs.trees


# --- what the sandbox shows -------------------------------------------------------------------------------


def _look(tmp_path: Path, keep: list[str], hide: list[str], *paths: Path) -> list[str]:
    """What ``ls -A`` says of each path inside the sandbox (its entries, or "missing")."""
    box = sandbox.open_box(tmp_path)
    script = (
        'for p in "$@"; do if [ -e "$p" ]; then echo "$(ls -A "$p" | tr "\\n" " ")"; '
        "else echo missing; fi; done"
    )
    cmd = [*sandbox.bwrap_prefix(box, keep, hide), "sh", "-c", script, "sh", *map(str, paths)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [line.strip() for line in done.stdout.splitlines()]


@BWRAP
def test_the_sandbox_shows_the_package_folders_never_the_checkout_around_them(tmp_path):
    checkout = _checkout(tmp_path)  # under /tmp, emptied in the sandbox, like a checkout under /home
    src = checkout / "src"
    keep = [str(src / "course_pkg"), str(src / "single_module.py")]
    seen = _look(tmp_path, keep, [], checkout, src, src / "course_pkg", checkout / "solutions",
                 checkout / "grading")  # fmt: skip
    assert seen == ["src", "course_pkg single_module.py", "__init__.py", "missing", "missing"], seen


@BWRAP
def test_hidden_folders_stay_hidden_around_and_inside_what_is_kept(tmp_path):
    checkout = _checkout(tmp_path)
    src = checkout / "src"
    # the submissions folder is the checkout itself, and a kept folder holds a hidden one
    (src / "course_pkg" / "hidden").mkdir()
    (src / "course_pkg" / "hidden" / "judge.py").write_text("", encoding="utf-8")
    keep, hide = [str(src / "course_pkg")], [str(checkout), str(src / "course_pkg" / "hidden")]
    seen = _look(tmp_path, keep, hide, checkout, src / "course_pkg", src / "course_pkg" / "hidden")
    assert seen == ["src", "__init__.py hidden", ""], seen


@BWRAP
def test_a_hidden_folder_outside_the_emptied_ones_is_emptied_and_what_it_holds_is_shown_again(
    public_tmp, monkeypatch
):
    # /tmp is emptied in every sandbox; pretend it is not, as for a checkout under /srv or /work
    monkeypatch.setattr(sandbox, "EMPTIED", ("/home", "/root", "/run"))
    checkout = _checkout(public_tmp)
    keep, hide = [str(checkout / "src" / "course_pkg")], [str(checkout)]
    seen = _look(public_tmp, keep, hide, checkout, checkout / "src" / "course_pkg", checkout / "solutions")
    assert seen == ["src", "__init__.py", "missing"], seen


@BWRAP
def test_the_runs_own_folder_is_hidden_wherever_the_temporary_folder_is(public_tmp, monkeypatch):
    # TMPDIR outside the emptied folders (/var/tmp, a scratch disk): the run's folder is hidden, so a notebook
    # sees its own box there, not the evaluator's copy of the hidden judges nor another submission's box
    monkeypatch.setattr(sandbox, "EMPTIED", ("/home", "/root", "/run"))
    run = public_tmp / "devicekit-grade-run"
    (run / "eval-x" / "hidden").mkdir(parents=True)
    (run / "eval-x" / "hidden" / "lab01.py").write_text("HIDDEN = {}", encoding="utf-8")
    mine, other = sandbox.open_box(run), sandbox.open_box(run)
    (other.work / "notebook.ipynb").write_text("{}", encoding="utf-8")
    cmd = [*sandbox.bwrap_prefix(mine, [], [str(run)]), "ls", "-A", str(run), str(mine.root)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "eval-x" not in done.stdout and other.root.name not in done.stdout, done.stdout
    assert "work" in done.stdout


# --- the check before anything runs ---------------------------------------------------------------------


def _preflight(tmp_path: Path, needs: installed.Needs, hide: list[str] = ()) -> None:
    """`box.preflight` of a bubblewrap run that shows ``needs`` and hides ``hide``."""
    isolation = sandbox.Isolation("bwrap", tuple(needs.paths), tuple(hide))
    root = tmp_path / "grader"
    root.mkdir(mode=0o711)
    box.preflight(isolation, root, sandbox.Limits())


@BWRAP
def test_the_preflight_passes_where_the_sandbox_shows_what_the_kernel_needs(tmp_path):
    _preflight(tmp_path, installed.kernel_needs())


@BWRAP
def test_the_preflight_stops_the_run_where_the_sandbox_hides_the_course_in_both_languages(tmp_path):
    needs = installed.kernel_needs()
    grader = str(installed.package_folder("devicekit_grade"))
    # the course's packages (and the grader's worker) left out of what the sandbox shows, hidden besides
    # (in this checkout they are not under an emptied folder)
    course = [p for p in needs.packages if Path(p).name in installed.GRADER_PACKAGES]
    without = installed.Needs(needs.trees, tuple(p for p in needs.packages if p not in course))
    with pytest.raises(GraderFailure) as failed:
        _preflight(tmp_path, without, hide=course)
    message = failed.value.message
    assert "devicekit_labs" in message.en and "Nothing was graded" in message.en
    assert str(Path(grader) / "_worker.py") in message.en
    assert "devicekit_labs" in message.zh and "没有评分任何作业" in message.zh
    assert "（bwrap）" in message.zh


# --- the grader's own failures ----------------------------------------------------------------------------


def _execution(*events: dict, log: str = "", stopped: bool = False, answers: dict | None = None) -> Execution:
    return Execution(events=list(events), stopped=stopped, answers=answers or {}, log=log)


def test_a_run_that_ends_before_the_notebooks_first_cell_is_the_graders_failure():
    log = "Traceback (most recent call last):\nFileNotFoundError: [Errno 2] No such file: '/home/x/w.py'\n"
    cases = [
        (_execution(log=log), "worker-ended", "FileNotFoundError"),
        (_execution({"event": "fatal", "message": "RuntimeError: Kernel died before replying"}),
         "kernel-did-not-start", "Kernel died"),
        (_execution({"event": "kernel"}, {"event": "cell", "index": 0},
                    {"event": "error", "index": 0, "ename": "ModuleNotFoundError", "evalue": "no devicekit"}),
         "setup-failed", "ModuleNotFoundError: no devicekit"),
        (_execution({"event": "cell", "index": 0}, {"event": "dead", "index": 0}), "kernel-died-early", ""),
        (_execution({"event": "cell", "index": 0}, stopped=True), "stopped-early", ""),
    ]  # fmt: skip
    for execution, cause, detail in cases:
        failed = grader_failure(execution)
        assert failed is not None and failed.cause == cause, (cause, failed)
        assert detail in failed.detail


def test_a_run_that_reached_the_notebook_is_judged_as_before():
    # a learner's cell started: whatever happened next is the notebook's (kernel-died, timeout, errors)
    assert grader_failure(_execution({"event": "cell", "index": 0}, {"event": "cell", "index": 1})) is None
    died = _execution(
        {"event": "cell", "index": 0}, {"event": "cell", "index": 1}, {"event": "dead", "index": 1}
    )
    assert grader_failure(died) is None
    # a notebook without code cells: the grader's answer cell (index 1) still ran
    assert grader_failure(_execution({"event": "cell", "index": 0}, {"event": "cell", "index": 1})) is None


def test_a_grader_error_row_has_no_score_and_its_cause_in_both_languages():
    failed = GraderError("worker-ended", "FileNotFoundError: [Errno 2] No such file; really")
    grade = Grade(file="subs/a.ipynb", lab="01-devices", status="graded", score=0, max=3)
    run.grader_error(grade, failed)
    assert (grade.status, grade.score) == ("grader-error", None)
    assert grade.reason == (
        "grader error: its worker ended before the notebook's first cell: "
        "FileNotFoundError: [Errno 2] No such file, really"
    )
    assert grade.reason_zh == (
        "评分器出错：运行 notebook 的进程在第一个单元格之前就结束了："
        "FileNotFoundError: [Errno 2] No such file, really"
    )
    ((note,),) = [grade.notes]
    en, zh_note = note.en, note.zh
    assert en.startswith("Not graded: the grader failed, not your notebook (its worker ended")
    assert zh_note.startswith("未评分：出错的是评分器，不是你的 notebook（运行 notebook 的进程")
    assert grade.feedback() == [en]
    for cause in failures.CAUSES:
        reason = GraderError(cause, "detail").reason()
        words = reason.zh.removesuffix("：detail").replace(
            "notebook", ""
        )  # (the course's word in Chinese too)
        assert reason.zh.startswith("评分器出错：") and not re.search(r"[A-Za-z]{3}", words), reason
    with pytest.raises(ValueError) as unknown:  # its str follows the worker's language: read both
        GraderError("no-such-cause")
    assert unknown.value.en.startswith("unknown grader failure 'no-such-cause'"), unknown.value.en
    assert "未知的评分器故障" in unknown.value.zh, unknown.value.zh


class _FakeContext:
    """What `cli.main` reads of a `context.Context`, without starting an evaluator or a kernel."""

    isolation, tampered, digest = sandbox.Isolation("bwrap", False, False), "", "fake"
    labs = {"01-devices": [{"key": "move-batch"}, {"key": "causal-mask"}, {"key": "predict-raises"}]}

    def __init__(self, options: context.Options) -> None:
        self.options = options

    def close(self) -> None:
        pass


def _grade_like(failed: str):
    def grade_submission(sub, ctx) -> Grade:
        grade = Grade(file=sub.shown, lab="01-devices", lang="en", status="graded", score=3, max=3)
        grade.sha256, grade.graded_with = hashlib.sha256(sub.data).hexdigest(), ctx.digest
        if Path(sub.shown).name == failed:
            run.grader_error(grade, GraderError("kernel-did-not-start", "NoSuchKernel: python3"))
        return grade

    return grade_submission


def test_a_grader_error_row_makes_the_exit_status_4_and_is_graded_again_next_time(
    tmp_path, monkeypatch, capsys
):
    from course_tools.submissions import lab_notebook, solved_lab, write

    write(solved_lab("01-devices"), tmp_path / "subs" / "alice.ipynb")
    write(lab_notebook("01-devices"), tmp_path / "subs" / "bob.ipynb")  # other bytes: a cache of its own
    monkeypatch.setattr(cli, "Context", _FakeContext)
    monkeypatch.setattr(cli, "grade_submission", _grade_like("bob.ipynb"))
    args = ["--out", str(tmp_path / "out"), "-q", str(tmp_path / "subs")]
    assert cli.main(args) == cli.GRADER_ERROR == 4
    err = capsys.readouterr().err
    assert "the grader itself failed on 1 file(s)" in err and "评分器自身在 1 个文件上出错" in err
    rows = {
        Path(r["file"]).name: r for r in json.loads((tmp_path / "out" / "grades.json").read_text("utf-8"))
    }
    assert (rows["bob.ipynb"]["status"], rows["bob.ipynb"]["score"]) == ("grader-error", None)
    assert rows["bob.ipynb"]["notes"][0]["zh"].startswith("未评分：出错的是评分器")
    canvas = (tmp_path / "out" / "canvas.csv").read_text("utf-8-sig")
    assert "alice" in canvas and "bob" not in canvas, "a grader error is never exported as a score"
    # the next run into the same folder grades bob again (alice's row comes from the cache)
    graded_again = []
    monkeypatch.setattr(
        cli, "grade_submission", lambda sub, ctx: graded_again.append(sub.shown) or _grade_like("")(sub, ctx)
    )
    assert cli.main(args) == 0
    assert [Path(p).name for p in graded_again] == ["bob.ipynb"]


def test_a_grader_that_cannot_run_notebooks_stops_with_status_4_in_both_languages(
    tmp_path, monkeypatch, capsys
):
    from course_tools.submissions import solved_lab, write

    write(solved_lab("01-devices"), tmp_path / "subs" / "alice.ipynb")

    def cannot(options):
        raise GraderFailure(Message("the kernel cannot find devicekit", "内核找不到 devicekit"))

    monkeypatch.setattr(cli, "Context", cannot)
    assert cli.main(["--out", str(tmp_path / "out"), str(tmp_path / "subs")]) == 4
    err = capsys.readouterr().err
    assert "the kernel cannot find devicekit" in err and "内核找不到 devicekit" in err
    assert not (tmp_path / "out" / "grades.json").exists()


def test_the_help_documents_every_exit_status(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    for status in ("0 every file got a row", "2 the grader could not run", "3 the grading environment",
                   "4 the grader itself failed", "130 interrupted", "4 评分器自身出错"):  # fmt: skip
        assert status in out, status


def test_the_status_is_explained_in_the_report_and_the_guide():
    from devicekit_grade.report import STATUS_HELP

    assert set(STATUS_HELP) == set(STATUSES)
    root = Path(__file__).resolve().parents[1]
    for page, words in (("grading.md", "grader-error"), ("grading.zh.md", "grader-error")):
        text = (root / "docs" / "instructors" / page).read_text(encoding="utf-8")
        assert words in text and "4" in text, page
