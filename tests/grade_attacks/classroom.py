"""The class every end-to-end grader test reads: one realistic class folder, graded in ONE run of
``devicekit-grade`` (a subprocess, as an instructor runs it, two notebooks at a time) per test run, shared by
``test_grade.py`` and ``test_grade_judged.py`` through the ``graded_class`` fixture (``conftest.py``).

The class: every lab's correct submission, the untouched Chinese notebooks of labs 1 and 5 (`UNTOUCHED_LABS`);
for lab 1, each attack of issues 16 and 22 as a submission (this module and `grade_attacks.lab01`), broken and
odd files, a student's own folder. Graded with the released labs and solutions and the instructor's hidden
judges (``grading/hidden``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from course_tools.paths import ROOT, SOLUTIONS
from course_tools.submissions import graded_labs, lab_notebook, solution_notebook, solved_lab, write
from devicekit_grade import sandbox
from grade_attacks.lab01 import CLASS as JUDGED_CLASS

LAB = "01-devices"
LABS = graded_labs()
#: ``--timeout`` of the shared run: a cell, or one probe of a learner's answer, may take this long. Generous
#: for a busy 2-core machine (lab 11's cells start process groups). The hanging answer has a run of its own,
#: with a short limit (test_grade_stops.py).
GRADE_TIMEOUT = 60
#: The untouched (Chinese) notebooks in the class: lab 1 (functions to write) and lab 5 (a class whose
#: ``__init__`` is the stub). Every exercise of every lab rejects its untouched stub in
#: test_mutations.py::test_an_untouched_exercise_never_passes, and the grader treats an untouched notebook
#: the same whatever its lab (each costs a kernel and torch's import, ~6 s of a busy machine's time); every
#: lab's *correct* notebook is in the class, so every lab's probes and judges run end to end.
UNTOUCHED_LABS = [lab for lab in LABS if lab in ("01-devices", "05-debugging")]
OUT = "grades"


def index_of(nb: nbformat.NotebookNode, text: str) -> int:
    found = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and text in c.source]
    assert found, f"no code cell contains {text!r}"
    return found[0]


def insert_after(nb: nbformat.NotebookNode, after: str, source: str) -> nbformat.NotebookNode:
    nb.cells.insert(index_of(nb, after) + 1, nbformat.v4.new_code_cell(source))
    return nb


def replace_function(nb: nbformat.NotebookNode, name: str, body: str) -> nbformat.NotebookNode:
    nb.cells[index_of(nb, f"def {name}(")].source = body
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

#: What the kernel sees of itself and around it (its user, capabilities, the processes and sockets it can
#: reach), raised as the error of its cell so that it reaches the row's reason: test_grade.py reads it.
INSPECT = """import json, os, resource, sys, tempfile
_status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
def _real_uid(pid):
    try:
        return int(open(f"/proc/{pid}/status").read().split("Uid:")[1].split()[0])
    except (OSError, IndexError, ValueError):
        return None
_root_owned = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != 1 and _real_uid(p) == 0]
_links = []
for _fd in os.listdir("/proc/self/fd"):
    try:
        _links.append(os.readlink(f"/proc/self/fd/{_fd}"))
    except OSError:
        pass
_inodes = {l[8:-1] for l in _links if l.startswith("socket:[")}
_types = [l.split()[4] for l in open("/proc/net/unix").read().splitlines()[1:] if l.split()[6] in _inodes]
_gate = os.path.join(os.path.dirname(os.getcwd()), "gate")
raise RuntimeError("KERNEL-INSPECTION " + json.dumps({
    "uid": os.getuid(), "euid": os.geteuid(), "cap_eff": _status["CapEff"].strip(),
    "no_new_privs": _status["NoNewPrivs"].strip(), "ppid": os.getppid(), "root_owned": _root_owned,
    "unix_types": sorted(set(_types)), "gate": sorted(os.listdir(_gate)),
    "tmp_is_env": tempfile.gettempdir() == os.environ.get("TMPDIR"),
    "nproc": resource.getrlimit(resource.RLIMIT_NPROC)[0],
    "fsize": resource.getrlimit(resource.RLIMIT_FSIZE)[0],
}, separators=(",", ":")))"""


# the grader's answer cell connects to the evaluator with socket.socket.connect: a notebook that breaks it
BREAK_ANSWER_CELL = """import socket
def _refuse(self, address):
    raise OSError("answer cell blocked by the notebook")
socket.socket.connect = _refuse"""


def colab_copy(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    for cell in nb.cells:
        cell.metadata.pop("tags", None)
    return nb


def build_class(root: Path, victims: Path) -> dict[str, str]:
    """Write the class into ``root/subs``; returns {file name: expectation key}. The detached and startup-file
    submissions write into ``victims``."""
    subs = root / "subs"
    subs.mkdir(parents=True)
    notebooks: dict[str, nbformat.NotebookNode] = {}
    for lab in LABS:
        notebooks[f"{lab}-correct.ipynb"] = solved_lab(lab)
    for lab in UNTOUCHED_LABS:
        notebooks[f"{lab}-untouched.zh.ipynb"] = lab_notebook(lab, "zh")
    edited = lab_notebook(LAB)
    for key, fn in (
        ("move-batch", "lambda x, d: x.to(d)"),
        ("causal-mask", "lambda x: x"),
        ("predict-raises", "{}"),
    ):
        edited.cells[index_of(edited, f'"{key}"')].source = f'check("{LAB}", "{key}", {fn})'
    notebooks["edited-checks.ipynb"] = edited
    notebooks["patched-checks.ipynb"] = insert_after(
        lab_notebook(LAB), "from devicekit_labs import check", PATCH_CHECKS
    )
    notebooks["fake-results.ipynb"] = insert_after(lab_notebook(LAB), '"predict-raises"', FAKE_RESULTS)
    notebooks["published-solution.ipynb"] = solution_notebook(LAB)
    notebooks["ignores-device.ipynb"] = replace_function(
        solved_lab(LAB), "move_batch", "def move_batch(x, device):\n    return x.to(other)"
    )
    notebooks["empty-tensor.ipynb"] = replace_function(
        solved_lab(LAB),
        "move_batch",
        "def move_batch(x, device):\n    return torch.empty(x.shape, device=device)",
    )
    notebooks["snoop.ipynb"] = insert_after(lab_notebook(LAB), '"predict-raises"', SNOOP)
    notebooks["detached.ipynb"] = insert_after(
        solved_lab(LAB), '"move-batch"', DETACH.format(victim=str(victims / "detached"))
    )
    notebooks["startup-file.ipynb"] = insert_after(
        solved_lab(LAB), '"move-batch"', STARTUP.format(victim=str(victims / "startup"))
    )
    if sandbox.bwrap_works():  # without a sandbox, a notebook running as the grader's user can signal it
        notebooks["kills-parents.ipynb"] = insert_after(solved_lab(LAB), '"move-batch"', KILL_PARENTS)
    notebooks["overwriter.ipynb"] = insert_after(
        lab_notebook(LAB), '"move-batch"', OVERWRITE.format(path=str(subs / "zz-classmate.ipynb"))
    )
    notebooks["zz-classmate.ipynb"] = solved_lab(LAB)
    notebooks["inspects-its-kernel.ipynb"] = insert_after(solved_lab(LAB), '"move-batch"', INSPECT)
    notebooks["colab-no-tags.ipynb"] = colab_copy(solved_lab(LAB))
    notebooks["breaks-answer-cell.ipynb"] = insert_after(
        solved_lab(LAB), '"predict-raises"', BREAK_ANSWER_CELL
    )
    for name, make in JUDGED_CLASS.items():  # issue 22's attacks and a learner's own work (lab 1)
        notebooks[name] = make()
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


#: ``--trust-submissions`` where bubblewrap cannot start on this machine (the grader would refuse).
TRUST = [] if sandbox.bwrap_works() else ["--trust-submissions"]


def run_grader(cwd: Path, *args: str, timeout: float = 3600) -> subprocess.CompletedProcess:
    """``devicekit-grade`` as an instructor runs it: from a shell whose working directory holds the class."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    if args:
        args = (*args[:-1], *TRUST, args[-1])
    script = '"$0" -m devicekit_grade "$@"; status=$?; exit $status'
    return subprocess.run(
        ["sh", "-c", script, sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip


#: How long the grader may take to end a submission's detached processes after the run (busy machine).
DETACHED_DEADLINE_S = 60
#: The most a row may take on average: one lab notebook, run twice (the grader's run and its checks), on a
#: busy 2-core machine with two submissions at a time.
ROW_LIMIT_S = 120


def processes_with(marker: str) -> list[int]:
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


def wait_until_gone(marker: str, deadline_s: float) -> list[int]:
    """Wait until no process carries ``marker``; returns the ones still alive at the deadline, ended then."""
    deadline = time.monotonic() + deadline_s
    while (alive := processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in alive:  # started by this test's own submission: do not leave it running
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return alive


def grade_class(root: Path) -> None:
    """Build the class in ``root``, grade it once, and record what the tests read in ``root/run.json``."""
    # A folder that a notebook running as a user of its own (bubblewrap as root) could write to as well: the
    # test's tmp folder is private to the user running the tests.
    victims = Path(tempfile.mkdtemp(prefix="devicekit-grade-victims-"))
    victims.chmod(0o777)
    names = build_class(root, victims)
    protected = {k: v for k, v in sha256(root / "subs").items() if not k.startswith(("overwriter", "zz-"))}
    started = time.monotonic()
    released = ["--labs", str(ROOT / "labs"), "--solutions", str(SOLUTIONS)]
    hidden = ["--hidden", str(ROOT / "grading" / "hidden")]
    timeout = ["--timeout", str(GRADE_TIMEOUT)]
    done = run_grader(root, "--out", OUT, "--jobs", "2", *released, *hidden, *timeout, "subs")
    took = time.monotonic() - started
    grades = root / OUT / "grades.json"
    rows = json.loads(grades.read_text(encoding="utf-8")) if done.returncode == 0 else []
    # The detached process of detached.ipynb names its heartbeat file on its command line; that path is this
    # run's own, so whatever process still carries it was started by this test's submission.
    survivors = wait_until_gone(str(victims / "detached"), DETACHED_DEADLINE_S)
    record = {
        "names": names,
        "returncode": done.returncode,
        "stdout": done.stdout,
        "stderr": done.stderr[-5000:],
        "took": took,
        "protected_before": protected,
        "rows": {r["file"].removeprefix("subs/"): r for r in rows},
        "detached_survivors": survivors,
        # what the two submissions left in their folder, which is removed here (it is outside the test's tmp)
        "detached_beat": (victims / "detached").exists(),
        "startup_ran": (victims / "startup").exists(),
    }
    shutil.rmtree(victims, ignore_errors=True)
    (root / "run.json").write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
