"""The grader works wherever the course lives (issue 41): a fresh clone of this checkout's HEAD, under a home
folder and under /tmp, in paths with a space and Chinese characters, installed there editable as
``make setup`` does, grades a small class under bubblewrap, which empties ``/home`` and ``/tmp`` in every
sandbox: the correct notebook gets full marks, the broken one its own errors, and the sandbox shows the
clone's packages, never its ``solutions/`` or ``grading/hidden/``.

Cheap on purpose: the clone's virtual environment reuses the packages already installed here through a
``.pth`` file, so only the course itself is installed (``pip install --no-deps -e``), in seconds. What it
clones is the last commit, not the working tree's uncommitted changes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import pytest
from grade_attacks.classroom import insert_after

from course_tools.paths import ROOT
from course_tools.submissions import lab_notebook, solved_lab, write
from devicekit_grade import sandbox

pytestmark = pytest.mark.integration  # clones, installs and grades: about 20 s a place on 2 cores

LAB = "01-devices"
#: What the broken notebook's extra cell reports of the sandbox: whether each of these paths of the clone
#: exists there (raised as its error, so that it reaches the row's reason).
LOOK = """import json, os
_seen = {{p: os.path.exists(os.path.join({clone!r}, p)) for p in {paths!r}}}
raise RuntimeError("SEEN " + json.dumps(_seen))"""
PATHS = ["src/devicekit/__init__.py", "src/devicekit_grade/_worker.py", "solutions", "grading/hidden",
         "README.md", "src/devicekit.egg-info"]  # fmt: skip


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def _place(kind: str) -> Path:
    """A fresh folder for the clone: a home folder of its own under /home, or a folder under /tmp; skips
    where it cannot be made."""
    if kind == "home":
        home = Path.home()
        if os.access("/home", os.W_OK):  # root (CI): a home folder of its own
            base = Path(tempfile.mkdtemp(prefix="devicekit-grade-home-", dir="/home"))
        elif str(home).startswith("/home/") and os.access(home, os.W_OK):  # a user: inside their own
            base = Path(tempfile.mkdtemp(prefix="devicekit-grade-", dir=home))
        else:
            pytest.skip("neither /home nor a home folder under /home is writable here")
    else:
        base = Path(tempfile.mkdtemp(prefix="devicekit-grade-", dir="/tmp"))
    base.chmod(0o755)
    return base


def _install(clone: Path) -> Path:
    """A virtual environment in ``clone/.venv`` with the course installed editable (``-e . -e tools``, as
    ``make setup`` does) and everything else taken from this Python's site-packages through a ``.pth``
    file; returns its Python."""
    venv = clone / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    shared = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    (Path(site) / "devicekit-test-shared.pth").write_text("\n".join(shared) + "\n", encoding="utf-8")
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
               "--no-build-isolation", "--no-index", "-e", str(clone), "-e", f"{clone}/tools"]  # fmt: skip
    done = subprocess.run(install, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return python


@pytest.fixture(scope="module", params=["home", "tmp"])
def graded_clone(request) -> dict:
    if not sandbox.bwrap_works():
        pytest.skip("bubblewrap is not installed or cannot start here: the case is about its sandbox")
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout to clone")
    started = time.monotonic()
    base = _place(request.param)
    try:
        clone = base / "我的 课程" / "course checkout"
        clone.parent.mkdir()
        head = _git("rev-parse", "HEAD", cwd=ROOT)
        _git("clone", "--quiet", str(ROOT), str(clone), cwd=base)
        if _git("rev-parse", "HEAD", cwd=clone) != head:
            _git("checkout", "--quiet", "--detach", head, cwd=clone)
        python = _install(clone)
        subs = clone / "subs"
        write(solved_lab(LAB), subs / "alice.ipynb")
        look = LOOK.format(clone=str(clone), paths=PATHS)
        write(insert_after(lab_notebook(LAB), '"predict-raises"', look), subs / "bob-broken.ipynb")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
        env["HOME"] = str(base)
        grade = [str(python.parent / "devicekit-grade"), "--out", "grades", "--sandbox", "--timeout", "60",
                 "subs"]  # fmt: skip
        done = subprocess.run(grade, cwd=clone, env=env, capture_output=True, text=True, timeout=1200)
        rows = {}
        if (clone / "grades" / "grades.json").exists():
            rows = json.loads((clone / "grades" / "grades.json").read_text(encoding="utf-8"))
            rows = {Path(r["file"]).name: r for r in rows}
        return {
            "place": request.param, "clone": clone, "returncode": done.returncode, "stderr": done.stderr,
            "rows": rows, "seconds": time.monotonic() - started,
        }  # fmt: skip
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_the_clone_is_where_it_should_be(graded_clone):
    clone = str(graded_clone["clone"])
    assert " " in clone and "课程" in clone
    assert clone.startswith("/home/" if graded_clone["place"] == "home" else "/tmp/")


def test_a_correct_notebook_gets_full_marks_from_a_clone_anywhere(graded_clone):
    assert graded_clone["returncode"] == 0, graded_clone["stderr"][-3000:]
    alice = graded_clone["rows"]["alice.ipynb"]
    assert (alice["status"], alice["score"], alice["max"]) == ("graded", 3, 3), (
        alice["reason"],
        alice["feedback"],
    )
    assert [e["how"] for e in alice["exercises"]] == ["judged"] * 3


def test_the_broken_notebook_gets_its_own_errors_and_sees_only_the_packages(graded_clone):
    bob = graded_clone["rows"]["bob-broken.ipynb"]
    assert (bob["status"], bob["score"]) == ("graded", 0), bob["reason"]
    # judged, and failed: its stubs raise NotImplementedError (not "never reached the end of its run")
    assert [(e["passed"], e["how"]) for e in bob["exercises"]] == [(False, "judged")] * 3, bob["feedback"]
    seen = json.loads(bob["reason"].split("RuntimeError: SEEN ", 1)[1].split("; ")[0])
    assert seen == {
        "src/devicekit/__init__.py": True,
        "src/devicekit_grade/_worker.py": True,
        "solutions": False,
        "grading/hidden": False,
        "README.md": False,
        "src/devicekit.egg-info": False,
    }, seen
    print(f"{graded_clone['place']}: cloned, installed and graded in {graded_clone['seconds']:.0f} s")
