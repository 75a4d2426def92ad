"""Issue 42's security review, round 2 (``tests/grade_attacks/REVIEW-stop47.md``): bubblewrap, the grader's
one isolation path, attacked by notebooks a learner could hand in, graded by ``devicekit-grade`` as an
instructor runs it (from a folder outside the checkout, ``-j 2``).

The class (one run, the default isolation: as root, bubblewrap and a user of its own per notebook):

* ``k-kim``: the untouched lab, plus a cell that tries to reach the worker's events pipe (its parent's
  ``/proc/<pid>/fd``, ``ptrace``) and to write a forged "the grader's setup cell failed" event into it;
* ``m-max``: the untouched lab, plus a cell that fills its private ``/dev/shm`` (tmpfs: memory that no
  resource limit counts) with up to 1.5 GB; only where it could write more than 1 GiB, it answers
  exercise 2 right;
* ``n-ned``: the untouched lab, plus a cell that makes a user namespace of its own (uid 0 there) and starts
  700 processes from it;
* ``q-quinn``: the untouched lab, plus a cell that holds memory no per-process limit counts (ten memfds
  written from a helper whose address space is capped, a tmpfs mounted in a user namespace of its own);
  only where it held more than 1 GiB, more than its box may hold, it answers exercise 2 right. The class
  is graded with ``--box-memory-mb 1024`` (a lab-1 box needs less: amy's right answers grade 3/3 with it);
* ``d-dan``: the untouched lab, plus a cell that writes files of 64 MiB into its folder on the machine's disk
  (each under ``--max-file-mb``), up to 1.5 GB; only where it wrote more than 1 GB, it answers exercise 2
  right. The class is graded with ``--box-disk-mb 512``;
* ``o-oli``: the untouched lab, plus a cell that detaches a process into new user and PID namespaces of its
  own (``unshare --user --pid --fork``), which must not outlive the run;
* ``r-rex``: the untouched lab, plus a cell that reads the command line of the box's process 1 (bubblewrap);
* ``p-pat``: a symbolic link to a folder that holds the published solution.

A run by an ordinary user (``nobody``), with ``TMPDIR`` outside ``/tmp``: ``a-amy`` (right answers, then a
pause), ``b-ben``, who reads the grader's run folder (the hidden judges, amy's box), ``c-cat``, who tries
the events pipe as ``k-kim`` does, and ``q-quinn`` again; the grader runs in a cgroup delegated to
``nobody`` (`_delegated_to`: what a systemd user session gives an ordinary user), where this machine lets
root make one. And a box run as ``nobody``: how large each tmpfs it can write is.

And one more run, as root with ``--same-user`` (an option the grader had then: "do not give each notebook a
user of its own"; gone since issue 42's one isolation path): ``s-sam``, the untouched lab, plus a cell that
unmounts the tmpfs bubblewrap put over the checkout's ``solutions/``, runs the published solution's code, and
makes the machine's root file system writable again to leave a file on it.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import tempfile
from pathlib import Path

import nbformat
import pytest

from course_tools.paths import ROOT
from course_tools.submissions import lab_notebook, solution_notebook, solved_lab, write
from devicekit_grade import cgroups, sandbox
from grade_attacks.classroom import OUT, run_grader, wait_until_gone

LAB = "01-devices"

#: Defines a right ``causal_mask`` (exercise 2): the sign that an attack got what it was after.
RIGHT_MASK = """def causal_mask(x):
    n = x.size(1)
    return torch.tril(torch.ones((n, n), device=x.device)).to(torch.bool)"""

#: The worker (the kernel's parent, the box's user too) holds the write end of the grader's events pipe: a
#: forged "error in cell 0" there would make the row the grader's failure (``setup-failed``).
FORGE_EVENTS = """import ctypes, json, os
_forged = (json.dumps({"event": "error", "index": 0, "ename": "FORGED", "evalue": "by the notebook"}) + "\\n")
_got = []
for _pid in {os.getppid(), *(int(p) for p in os.listdir("/proc") if p.isdigit())}:
    if _pid == os.getpid():
        continue
    try:
        _fds = os.listdir(f"/proc/{_pid}/fd")
    except OSError:
        continue
    for _fd in _fds:
        try:
            _w = os.open(f"/proc/{_pid}/fd/{_fd}", os.O_WRONLY | os.O_NONBLOCK)
            os.write(_w, _forged.encode())
            os.close(_w)
            _got.append(f"{_pid}/{_fd}")
        except OSError:
            pass
_traced = ctypes.CDLL(None, use_errno=True).ptrace(16, os.getppid(), 0, 0) == 0  # PTRACE_ATTACH
try:
    _tty = os.open("/dev/tty", os.O_RDWR)
except OSError as _e:
    _tty = _e.strerror
if _got or _traced:
    RIGHT
raise RuntimeError(f"EVENTS-FORGED {_got} ptrace={_traced} tty={_tty}")"""

#: How much of the machine's memory a notebook can hold through its /dev/shm (a tmpfs), 64 MiB at a time.
FILL_SHM = """_filled = 0
try:
    for _i in range(24):
        with open(f"/dev/shm/fill-{_i}", "wb") as _f:
            _f.write(b"\\1" * (64 << 20))
        _filled += 64 << 20
except OSError:
    pass
if _filled > 1 << 30:
    RIGHT
raise RuntimeError(f"SHM-FILLED {_filled >> 20} MiB")"""

#: 700 processes started from a user namespace of the notebook's own (uid 0 and every capability there):
#: RLIMIT_NPROC and the grader's watchdog must still hold (a small helper, not the kernel, forks).
FORK_IN_USERNS = """import subprocess, sys
_helper = '''
import ctypes, os, time
print(ctypes.CDLL(None, use_errno=True).unshare(0x10000000), flush=True)
n = 0
for _ in range(700):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    n += 1
print(n, flush=True)
time.sleep(60)
'''
_p = subprocess.Popen([sys.executable, "-S", "-c", _helper], stdout=subprocess.PIPE, text=True)
_unshared, _started = _p.stdout.readline().strip(), _p.stdout.readline().strip()
raise RuntimeError(f"FORKED unshare={_unshared} started={_started}")"""

#: A process in user and PID namespaces of its own, in a new session: it must not outlive the run.
DETACH_IN_NAMESPACES = """import subprocess
subprocess.Popen(["unshare", "--user", "--pid", "--fork", "sh", "-c", "sleep 300; : {marker}"],
    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)"""

#: Memory that no per-process limit counts: a helper whose own address space is limited to 64 MiB more
#: than it uses writes 1280 MiB into ten memfds, more than the box may hold (1 GiB), and keeps them (shared
#: memory: written, not mapped, so RLIMIT_AS never sees it); then a tmpfs mounted in a user namespace of
#: the notebook's own (no --size there). Its disk: ``FILL_DISK``.
BEYOND_LIMITS = """import subprocess, sys
_helper = '''
import os, resource
used = int(open("/proc/self/status").read().split("VmSize:")[1].split()[0]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (used + (64 << 20), used + (64 << 20)))
chunk = bytes([1]) * (16 << 20)
held, fds = 0, []
try:
    for _ in range(10):  # 128 MiB each: RLIMIT_FSIZE (256 MiB) holds for one memfd, not for ten
        fds.append(os.memfd_create("held"))
        for _ in range(8):
            os.write(fds[-1], chunk)
            held += len(chunk)
except OSError:
    pass
print(held >> 20, flush=True)
os.read(0, 1)
'''
_p = subprocess.Popen([sys.executable, "-S", "-c", _helper], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
_held = int(_p.stdout.readline())
_mount = "mount -t tmpfs none /mnt && df -m /mnt | tail -1"
_tmpfs = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", _mount],
    capture_output=True, text=True).stdout.split()
if _held > 1024:
    RIGHT
raise RuntimeError(f"BEYOND-LIMITS memfd={_held} MiB nested-tmpfs={_tmpfs[1:2]} MiB")"""


#: Disk that RLIMIT_FSIZE does not cap: many files, each under the per-file limit (review47, hole 3's last
#: part), written at about 640 MB a second so that the watchdog, which looks every half second, can see it.
FILL_DISK = """import os, time
_wrote = 0
try:
    for _i in range(24):
        with open(f"disk-{_i}", "wb") as _f:
            _f.write(bytes([1]) * (64 << 20))
            _f.flush()
            os.fsync(_f.fileno())  # on disk, and out of the page cache: no memory limit sees it
            os.posix_fadvise(_f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        _wrote += 64
        time.sleep(0.1)
except OSError:
    pass
if _wrote > 1024:
    RIGHT
raise RuntimeError(f"DISK-FILLED {_wrote} MiB")"""


#: Reads the grader's run folder (the parent of its own box): the evaluator's copy of the hidden judges and
#: another box's notebook (a classmate graded at the same time), whose ``causal_mask`` it runs.
READS_RUN_FOLDER = """import glob, json, os, pathlib, time
_box = pathlib.Path(os.getcwd()).parent
_run = _box.parent
_hidden, _took = [], False
for _ in range(60):
    _hidden = [open(h).read()[:60] for h in glob.glob(str(_run / "eval-*" / "hidden" / "*.py"))]
    for _nb in glob.glob(str(_run / "*" / "work" / "notebook.ipynb")):
        if pathlib.Path(_nb).parent.parent == _box:
            continue
        for _cell in json.loads(pathlib.Path(_nb).read_text())["cells"]:
            _src = "".join(_cell["source"])
            if _cell["cell_type"] == "code" and "def causal_mask(" in _src:
                try:
                    exec(_src, globals())
                    _took = True
                except Exception:
                    pass
    if _took:
        break
    time.sleep(0.5)
raise RuntimeError(f"RUN-FOLDER hidden={_hidden} took={_took}")"""


#: What the sandbox's process 1 (bubblewrap, started by the grader) says on its command line: every folder it
#: hides and shows, by name (world-readable, like every ``/proc/<pid>/cmdline``).
READS_SANDBOX_COMMAND = """_argv = open("/proc/1/cmdline", "rb").read().decode().split("\\0")
_hidden = [_argv[i + 1] for i, a in enumerate(_argv[:-1]) if a == "--tmpfs"]
raise RuntimeError(f"SANDBOX-COMMAND {_argv[0].rsplit('/', 1)[-1]} hides {_hidden}")"""


#: As root with every capability (``--same-user``): undo what hides the solutions, run them, and make the
#: machine's root file system writable again.
SAME_USER_ESCAPE = """import ctypes, json, pathlib
import devicekit_labs
_libc = ctypes.CDLL(None, use_errno=True)
for _up in pathlib.Path(devicekit_labs.__file__).resolve().parents:
    _nb = _up / "solutions" / "01-devices.ipynb"
    if (_up / "solutions").is_dir():
        _libc.umount2(str(_up / "solutions").encode(), 2)  # MNT_DETACH: the tmpfs bubblewrap put there
    if _nb.exists():
        for _cell in json.loads(_nb.read_text())["cells"]:
            _src = "".join(_cell["source"])
            if _cell["cell_type"] == "code" and "### BEGIN SOLUTION" in _src:
                exec(_src, globals())
        break
_libc.mount(None, b"/", None, 0x20 | 0x1000, None)  # MS_REMOUNT | MS_BIND, without MS_RDONLY
try:
    pathlib.Path({marker!r}).write_text("written from inside the sandbox")
except OSError:
    pass"""


def _with_cell(nb: nbformat.NotebookNode, source: str) -> nbformat.NotebookNode:
    nb.cells.append(nbformat.v4.new_code_cell(source))
    return nb


def _chown_tree(path: Path, uid: int) -> None:
    """Give ``path`` and everything below it to ``uid`` (as root)."""
    for folder, _, files in os.walk(path):
        for name in [folder, *(os.path.join(folder, f) for f in files)]:
            os.lchown(name, uid, uid)


def _indented(source: str) -> str:
    return source.replace("\n", "\n    ")


def _bwrap_as_root() -> str:
    """Empty when this machine grades with bubblewrap as root (this review's subject), else why not."""
    if not sandbox.running_as_root():
        return "the grader is not root here"
    if not sandbox.bwrap_works():
        return "bubblewrap cannot start here"
    return ""


def _rows(root: Path) -> dict[str, dict]:
    rows = json.loads((root / OUT / "grades.json").read_text(encoding="utf-8"))
    return {r["file"].removeprefix("subs/"): r for r in rows}


@pytest.fixture(scope="module")
def review():
    """The class above, graded once (``-j 2``)."""
    why = _bwrap_as_root()
    if why:
        pytest.skip(why)
    # outside /tmp: the class folder is hidden by a tmpfs of its own, as one in /srv or /data would be
    root = Path(tempfile.mkdtemp(prefix="devicekit-review47-", dir="/var/tmp"))
    subs = root / "subs"
    marker = f"devicekit-review47-{secrets.token_hex(4)}"
    right = _indented(RIGHT_MASK)
    write(
        _with_cell(lab_notebook(LAB), FORGE_EVENTS.replace("RIGHT", right)), subs / "k-kim_01-devices.ipynb"
    )
    write(_with_cell(lab_notebook(LAB), FILL_SHM.replace("RIGHT", right)), subs / "m-max_01-devices.ipynb")
    write(_with_cell(lab_notebook(LAB), FORK_IN_USERNS), subs / "n-ned_01-devices.ipynb")
    write(_with_cell(lab_notebook(LAB), READS_SANDBOX_COMMAND), subs / "r-rex_01-devices.ipynb")
    beyond = BEYOND_LIMITS.replace("RIGHT", right)
    write(_with_cell(lab_notebook(LAB), beyond), subs / "q-quinn_01-devices.ipynb")
    write(_with_cell(lab_notebook(LAB), FILL_DISK.replace("RIGHT", right)), subs / "d-dan_01-devices.ipynb")
    write(
        _with_cell(lab_notebook(LAB), DETACH_IN_NAMESPACES.format(marker=marker)),
        subs / "o-oli_01-devices.ipynb",
    )
    elsewhere = root / "elsewhere"
    write(solution_notebook(LAB), elsewhere / f"{LAB}.ipynb")
    os.symlink(elsewhere, subs / "p-pat")
    done = run_grader(
        root,
        "--out",
        OUT,
        "--jobs",
        "2",
        "--timeout",
        "60",
        "--box-memory-mb",
        "1024",
        "--box-disk-mb",
        "512",
        "subs",
    )
    left = wait_until_gone(marker, 60)
    yield {
        "per_box": "Limits per notebook" in done.stderr,
        "rows": _rows(root),
        "returncode": done.returncode,
        "stderr": done.stderr[-3000:],
        "left": left,
        "subs": str(subs),
    }
    shutil.rmtree(root, ignore_errors=True)


def _row(review: dict, name: str) -> dict:
    return review["rows"][f"{name}_01-devices.ipynb"]


def _said(row: dict, mark: str) -> str:
    """The reason that carries an attack's own report (``mark …``), for the assertion messages."""
    return next((r for r in row["reason"].split("; ") if mark in r), row["reason"])


@pytest.mark.integration
def test_a_notebook_cannot_write_into_the_workers_events_pipe(review):
    # the worker is the box's user too, but makes itself non-dumpable: its /proc/<pid>/fd and ptrace are
    # closed to the kernel, so no forged "error in the grader's setup cell" reaches the grader
    r = _row(review, "k-kim")
    assert r["status"] == "graded", (r["status"], r["reason"])
    assert r["exercises"][1]["passed"] is False, _said(r, "EVENTS-FORGED")
    assert "EVENTS-FORGED [] ptrace=False" in r["reason"], r["reason"]


@pytest.mark.integration
def test_a_notebook_cannot_read_the_names_of_the_folders_it_cannot_see(review):
    """Hole 5 (low, fixed in stop 47): bubblewrap is process 1 of the box, and its command line
    (world-readable) listed every hidden folder by its path: the submissions folder, ``--out``, the
    roster's folder, the hidden judges, the run folder. Names only, never their files. Bubblewrap now gets
    its options from a descriptor (``bwrap --args FD``): its command line names none of them."""
    r = _row(review, "r-rex")
    said = _said(r, "SANDBOX-COMMAND")
    assert "SANDBOX-COMMAND" in said and review["subs"] not in said, said


@pytest.mark.integration
def test_a_notebook_cannot_hold_the_machines_memory_through_dev_shm(review):
    r = _row(review, "m-max")
    assert r["exercises"][1]["passed"] is False, _said(r, "SHM-FILLED")


def _holds_no_memory_beyond_the_cap(result: dict, row: dict | None) -> None:
    """q-quinn's row where the grader had a cgroup per box: killed over the cap (``memory-limit``), and its
    exercise 2 (answered only where it held more than 1 GiB) not passed."""
    if not result["per_box"]:
        pytest.skip("the grader could make no cgroup per box here (it said so): limits are per process only")
    assert row is not None, result["stderr"]
    assert row["exercises"][1]["passed"] is False, _said(row, "BEYOND-LIMITS")
    # over the cap, the kernel either kills the box's largest process or fails the write (ENOMEM)
    held = re.search(r"BEYOND-LIMITS memfd=(\d+) MiB nested-tmpfs=\[\]", row["reason"])
    assert "memory-limit" in row["flags"] or (held and int(held[1]) <= 1024), (row["flags"], row["reason"])


@pytest.mark.integration
def test_a_notebook_holds_no_memory_beyond_its_limits(review):
    """Hole 3 (fixed in box48): the limits were per process (RLIMIT_AS, RLIMIT_FSIZE), not per box: memory
    written to a memfd was counted by none of them (768 MiB held), nor a tmpfs the notebook mounted in a user
    namespace of its own. Now each box has a cgroup (memory with swap, pids) that its first process joins
    before bubblewrap starts, and bubblewrap's ``--disable-userns`` stops nested user namespaces. Its files
    on disk: `test_a_notebook_cannot_fill_the_machines_disk`."""
    _holds_no_memory_beyond_the_cap(review, _row(review, "q-quinn"))


@pytest.mark.integration
def test_a_notebook_cannot_fill_the_machines_disk(review):
    """Hole 3's last part: RLIMIT_FSIZE caps one file, not how many; the watchdog measures the box's folder
    and stops the box past ``--box-disk-mb`` (flag ``disk-limit``), with or without a cgroup."""
    r = _row(review, "d-dan")
    assert r["exercises"][1]["passed"] is False, _said(r, "DISK-FILLED")
    assert "disk-limit" in r["flags"], (r["flags"], r["reason"])


@pytest.mark.integration
def test_the_process_limit_holds_in_a_user_namespace_of_the_notebooks_own(review):
    r = _row(review, "n-ned")
    said = _said(r, "FORKED")
    assert "process-limit" in r["flags"] or "started=700" not in said, said


@pytest.mark.integration
def test_a_process_in_namespaces_of_its_own_does_not_outlive_the_run(review):
    assert not review["left"], f"still running after the grader ended: {review['left']}"


@pytest.mark.integration
def test_a_symbolic_link_to_a_folder_is_not_followed(review):
    r = review["rows"]["p-pat"]
    assert r["status"] == "refused" and r["score"] is None, r
    assert review["returncode"] == 0, review["stderr"]


@pytest.fixture(scope="module")
def same_user():
    """``s-sam`` graded as root with ``--same-user``: the notebook runs as root inside bubblewrap."""
    why = _bwrap_as_root()
    if why:
        pytest.skip(why)
    root = Path(tempfile.mkdtemp(prefix="devicekit-review47-"))
    marker = Path("/var/tmp") / f"devicekit-review47-{secrets.token_hex(4)}"
    nb = _with_cell(lab_notebook(LAB), SAME_USER_ESCAPE.format(marker=str(marker)))
    write(nb, root / "subs" / "s-sam_01-devices.ipynb")
    done = run_grader(root, "--out", OUT, "--same-user", "--timeout", "60", "subs")
    escaped = marker.exists()
    marker.unlink(missing_ok=True)
    graded = (root / OUT / "grades.json").exists()
    yield {
        "rows": _rows(root) if graded else {},
        "escaped": escaped,
        "returncode": done.returncode,
        "stderr": done.stderr[-3000:],
    }
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.integration
def test_same_user_never_runs_a_notebook_as_root_in_the_sandbox(same_user):
    """Hole 1: as root, ``--same-user`` ran the notebook as root inside bubblewrap with every capability: it
    unmounted the tmpfs over ``solutions/`` (``graded 3/3``, no flag) and wrote on the machine's ``/``. The
    option is gone (issue 42): the command line refuses it (exit 2) and nothing runs; as root, every sandbox
    switches to `sandbox.SUBMISSION_UID`."""
    assert not same_user["escaped"], "a notebook wrote on the machine's root file system"
    assert same_user["rows"] == {}, same_user["rows"]
    assert same_user["returncode"] == 2 and "--same-user" in same_user["stderr"], same_user["stderr"]


#: Which of the box's tmpfs mounts its user can write, and their sizes in MiB (a JSON object).
TMPFS_SIZES = """import json, os
sizes = {}
for line in open("/proc/self/mounts"):
    kind, where = line.split()[2], line.split()[1]
    if kind == "tmpfs" and os.access(where, os.W_OK):
        stat = os.statvfs(where)
        sizes[where] = stat.f_blocks * stat.f_frsize >> 20
print(json.dumps(sizes))"""


@pytest.mark.integration
def test_every_writable_tmpfs_of_a_box_is_sized_for_an_ordinary_user_too(monkeypatch):
    """Hole 2, as an ordinary user (bubblewrap in a user namespace of its own): there ``/tmp``, ``/home``,
    ``/root``, ``/run``, ``/dev/shm`` and every hidden folder are tmpfs mounts the notebook can write, each
    half the machine's memory (12 GB each on the course machine) before the fix. Run here as ``nobody``
    (``setpriv``, as root) with the system Python, which needs nothing under the private ``/root``."""
    import subprocess

    if not (sandbox.running_as_root() and shutil.which("setpriv") and Path("/usr/bin/python3").exists()):
        pytest.skip("needs root (to become an ordinary user), setpriv and /usr/bin/python3")
    if not sandbox.bwrap_sizes():
        pytest.skip("this bubblewrap cannot size a tmpfs (--size): the grading guide says so")
    nobody = 65534
    # nobody must reach the box's folder; outside /tmp, so that the hidden folder gets a tmpfs of its own
    top = Path(tempfile.mkdtemp(prefix="devicekit-review47-", dir="/var/tmp"))
    try:
        top.chmod(0o711)
        # the grader's own user: no setpriv inside; the whole bubblewrap runs as nobody
        monkeypatch.setattr(sandbox, "running_as_root", lambda: False)
        box = sandbox.open_box(top)
        _chown_tree(box.root, nobody)
        hidden = top / "hidden"
        hidden.mkdir(mode=0o755)
        prefix = sandbox.bwrap_prefix(box, ["/usr"], [str(hidden)])
        as_nobody = ["setpriv", f"--reuid={nobody}", f"--regid={nobody}", "--clear-groups", "--"]
        done = subprocess.run(
            [*as_nobody, *prefix, "/usr/bin/python3", "-c", TMPFS_SIZES],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        shutil.rmtree(top, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    sizes = json.loads(done.stdout)
    assert {"/tmp", "/dev/shm", str(hidden)} <= set(sizes), sizes
    assert max(sizes.values()) <= sandbox.TMPFS_MB, sizes


#: The instructor's hidden judge for the ordinary-user run: its text must not reach a notebook.
HIDDEN_JUDGE = """from devicekit_labs import Fail

SECRET = "REVIEW47-HIDDEN-JUDGE"


def never(seen):
    raise Fail(SECRET, SECRET)


HIDDEN = {"predict-raises": never}
"""


@pytest.fixture(scope="module")
def ordinary_user():
    """The grader run by an ordinary user (``nobody``, through ``setpriv``) with the system Python's
    ``.venv-user`` (``make setup VENV=.venv-user PYTHON=/usr/bin/python3``), ``TMPDIR`` outside ``/tmp`` (a
    scratch folder, as many shared machines set it), ``-j 2``: ``a-amy`` (her right answers, then 30 s of
    sleep) and ``b-ben`` (the untouched lab plus `READS_RUN_FOLDER`), with a hidden judge."""
    python = ROOT / ".venv-user" / "bin" / "python"
    if not (sandbox.running_as_root() and shutil.which("setpriv") and python.exists()):
        pytest.skip(
            "needs root (to become an ordinary user), setpriv and .venv-user, a virtual environment that "
            "nobody can run (make setup VENV=.venv-user PYTHON=/usr/bin/python3)"
        )
    import subprocess

    nobody = 65534
    # short: the answer socket's path under TMPDIR must fit in AF_UNIX's 108 bytes
    top = Path(tempfile.mkdtemp(prefix="r47-", dir="/var/tmp"))
    try:
        write(
            _with_cell(solved_lab(LAB), "import time\ntime.sleep(30)"),
            top / "subs" / "a-amy_01-devices.ipynb",
        )
        write(_with_cell(lab_notebook(LAB), READS_RUN_FOLDER), top / "subs" / "b-ben_01-devices.ipynb")
        forge = FORGE_EVENTS.replace("RIGHT", _indented(RIGHT_MASK))
        write(_with_cell(lab_notebook(LAB), forge), top / "subs" / "c-cat_01-devices.ipynb")
        beyond = BEYOND_LIMITS.replace("RIGHT", _indented(RIGHT_MASK))
        write(_with_cell(lab_notebook(LAB), beyond), top / "subs" / "q-quinn_01-devices.ipynb")
        (top / "hidden").mkdir()
        (top / "hidden" / "lab01.py").write_text(HIDDEN_JUDGE, encoding="utf-8")
        (top / "s").mkdir()
        _chown_tree(top, nobody)
        top.chmod(0o755)
        env = {
            "PATH": f"{python.parent}:/usr/bin:/bin",
            "HOME": str(top),
            "TMPDIR": str(top / "s"),
            "LANG": "C.UTF-8",
            "PYTHONPATH": f"{ROOT / 'src'}:{ROOT / 'tools'}",
        }
        as_nobody = ["setpriv", f"--reuid={nobody}", f"--regid={nobody}", "--clear-groups", "--"]
        args = ["--out", OUT, "--jobs", "2", "--hidden", "hidden", "--timeout", "60", "subs"]
        args[-1:-1] = ["--box-memory-mb", "1024"]
        delegated = _delegated_to(nobody)
        done = subprocess.run(
            [*as_nobody, str(python), "-m", "devicekit_grade", *args],
            cwd=top,
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
            preexec_fn=(lambda: cgroups.join(delegated[1])) if delegated else None,
        )
        if delegated:
            cgroups.close(delegated[0])
        graded = (top / OUT / "grades.json").exists()
        yield {
            "per_box": "Limits per notebook" in done.stderr,
            "rows": _rows(top) if graded else {},
            "returncode": done.returncode,
            "stderr": done.stderr[-3000:],
        }
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _delegated_to(uid: int) -> tuple[cgroups.Run, tuple[Path, ...]] | None:
    """As root: a cgroup subtree given to ``uid`` (what systemd gives a user session: ``Delegate=yes``), and
    the cgroups the grader starts in there (v1: its top; v2: a leaf below it, since a v2 cgroup with
    processes has no controllers below it); None where root can make none here."""
    run = cgroups.choose()
    if not isinstance(run, cgroups.Run):
        return None
    start = run.folders if run.version == 1 else (run.folders[0] / "grader",)
    for folder in start:
        folder.mkdir(exist_ok=True)
    for folder in run.folders:
        _chown_tree(folder, uid)
    return run, start


@pytest.mark.integration
def test_an_ordinary_users_notebook_holds_no_memory_beyond_its_limits(ordinary_user):
    """Hole 3 as an ordinary user, whose grader has a delegated cgroup (``Delegate=yes``): the same cap."""
    _holds_no_memory_beyond_the_cap(ordinary_user, ordinary_user["rows"].get("q-quinn_01-devices.ipynb"))


@pytest.mark.integration
def test_an_ordinary_users_notebook_cannot_read_the_graders_run_folder(ordinary_user):
    """Hole 4: run by an ordinary user, bubblewrap runs the notebook as that same user, and the grader's run
    folder (``TMPDIR/devicekit-grade-*``: the evaluator's copy of the hidden judges, every other box) was
    shown read-only wherever TMPDIR is not under a folder the sandbox empties: ben read the hidden judge and
    ran amy's ``causal_mask`` (exercise 2 passed). The run folder is now hidden in every box."""
    row = ordinary_user["rows"].get("b-ben_01-devices.ipynb")
    assert row is not None, ordinary_user["stderr"]
    said = _said(row, "RUN-FOLDER")
    assert "REVIEW47-HIDDEN-JUDGE" not in said, said
    assert row["exercises"][1]["passed"] is False, said


@pytest.mark.integration
def test_an_ordinary_users_notebook_cannot_write_into_the_workers_events_pipe(ordinary_user):
    # the kernel runs as the grader's own user here, in bubblewrap's user namespace, as the worker does
    row = ordinary_user["rows"].get("c-cat_01-devices.ipynb")
    assert row is not None, ordinary_user["stderr"]
    # what it could open and write are bubblewrap's own descriptors 0-2 (process 1 runs as this user here):
    # /dev/null and the worker's log, the box's own file, which the kernel can write anyway
    # (its forged "error in cell 0" would have made the row the grader's failure: setup-failed)
    assert row["status"] == "graded", (row["status"], row["reason"])
    assert "ptrace=False" in row["reason"], row["reason"]


@pytest.mark.integration
def test_the_solutions_of_every_checkout_a_kernel_loads_from_are_hidden(tmp_path):
    """Hole 6: a kernel does not get the grader's ``PYTHONPATH``: with ``PYTHONPATH=src`` of one checkout and
    a virtual environment installed editable from another, it loads ``devicekit_labs`` from the other, whose
    ``solutions/`` stayed readable (review42's ``g-gus`` scored 2/3 that way). Every checkout whose course
    packages a sandbox shows now has its ``solutions/`` and ``grading/hidden/`` hidden; run in a real box."""
    import subprocess

    from devicekit_grade.context import _beside_the_checks
    from devicekit_grade.installed import Needs

    if not sandbox.bwrap_works():
        pytest.skip("bubblewrap cannot start here")
    # outside /tmp, which every box empties anyway
    other = Path(tempfile.mkdtemp(prefix="devicekit-review47-", dir="/var/tmp")) / "other-checkout"
    (other / "src" / "devicekit_labs").mkdir(parents=True)
    (other / "solutions").mkdir()
    (other / "solutions" / "01-devices.ipynb").write_text("the published solution", encoding="utf-8")
    (other / "grading" / "hidden").mkdir(parents=True)
    package = str(other / "src" / "devicekit_labs")
    hidden = [str(p) for p in _beside_the_checks(Needs(trees=(), packages=(package,)))]
    assert {str(other / "solutions"), str(other / "grading" / "hidden")} <= set(hidden), hidden
    other.parent.chmod(0o755)  # as root the box's user must reach the package, as a kernel's must
    box = sandbox.open_box(tmp_path)
    prefix = sandbox.bwrap_prefix(box, ["/usr", "/bin", "/lib", "/lib64", package], hidden)
    try:
        shown = subprocess.run(
            [*prefix, "sh", "-c", f"ls -d {package} && ls {other / 'solutions'}"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        shutil.rmtree(other.parent, ignore_errors=True)
    assert shown.returncode == 0, shown.stderr
    assert "01-devices.ipynb" not in shown.stdout, shown.stdout
