"""Issue 42's security review of the simplified grader (``tests/grade_attacks/REVIEW-stop46.md``): the holes
it found, each as an attack a learner could hand in, graded by ``devicekit-grade`` as an instructor runs it.

One run grades a small lab-1 class from a folder outside the course checkout, without ``--solutions``
(as an instructor who keeps submissions elsewhere does), with an instructor's hidden judge:

* ``a-alice``: her own right answers, plus a cell that leaves them in ``/dev/shm``;
* ``b-bob``: the untouched lab, plus a cell that waits for alice's file there and runs it;
* ``c-carl``: the untouched lab, whose kernel answers every probe with an "error" whose ``type`` is a list
  nested 100,000 deep (plain data that ``torch.load(weights_only=True)`` accepts, but ``str()`` cannot print);
* ``g-gus``: the untouched lab, plus issue 22's first attack: find ``solutions/`` from the package's path;
* ``zed/``: the untouched lab in a folder of her own, beside a ``devicekit_grade/`` package that raises;
* ``h-hana``: the untouched lab, plus a cell that reads the roster (``--roster``, kept outside ``/tmp``);
* ``j-jan``: the untouched lab, plus a cell that connects to a server on the grading machine's 127.0.0.1
  (stop 47: a box has a network of its own, a loopback only).

And one unit test: a kernel that trickles its reply one byte at a time must not hold the evaluator past
its time limit (the grader would then kill it and call its own failure: ``grader-error``).
"""

from __future__ import annotations

import json
import secrets
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path

import nbformat
import pytest

from course_tools.submissions import lab_notebook, solved_lab, write
from grade_attacks.classroom import OUT, TRUST, run_grader
from grade_attacks.lab01 import READS_SOLUTIONS

LAB = "01-devices"
HIDDEN_MARK = "HIDDEN-JUDGE-RAN"
#: An instructor's hidden judge that fails every answer of exercise 1: a run that ignores it passes alice.
HIDDEN_JUDGE = f"""from devicekit_labs import Fail


def always_fails(seen):
    raise Fail("{HIDDEN_MARK}", "{HIDDEN_MARK}")


HIDDEN = {{"move-batch": always_fails}}
"""

SHARE = """import inspect, os, pathlib
_src = "\\n".join(inspect.getsource(f) for f in (move_batch, causal_mask, my_predictions))
_p = pathlib.Path({path!r})
_p.write_text("import torch\\n" + _src)
os.chmod(_p, 0o644)"""

TAKE = """import pathlib, time
_p = pathlib.Path({path!r})
for _ in range(60):
    if _p.exists():
        break
    time.sleep(0.5)
exec(_p.read_text(), globals())"""

#: The kernel's end of the answer socket replaced: every probe is answered with crafted ``torch.save`` bytes
#: (torch's own zip archive, its pickle swapped for one that nests a list 100,000 deep).
DEEP_ERROR = """import io, socket, zipfile
import torch
import devicekit_grade._kernel as _k
from devicekit_grade import wire


def _deep_error(n=100_000):
    buffer = io.BytesIO()
    torch.save({"kind": "error"}, buffer)
    archive = zipfile.ZipFile(io.BytesIO(buffer.getvalue()))
    def text(t):
        b = t.encode()
        return b"X" + len(b).to_bytes(4, "little") + b
    pickle = b"\\x80\\x02}(" + text("kind") + text("error") + text("type") + b"]" * n + b"a" * (n - 1)
    pickle += text("message") + text("m") + b"u."
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for info in archive.infolist():
            z.writestr(info.filename, pickle if info.filename.endswith("data.pkl") else archive.read(info))
    return out.getvalue()


def _serve(address, *args, **kwargs):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(address)
    data = _deep_error()
    while True:
        try:
            wire.receive(sock)
        except Exception:
            return
        sock.sendall(wire._HEADER.pack(len(data)) + data)


_k.serve = _serve"""


#: Reads the class roster (names, e-mails); only where it can, it answers exercise 2 right (exercise 1 has the
#: hidden judge that fails everyone).
READS_ROSTER = """try:
    _roster = open({path!r}).read()
    def causal_mask(x):
        n = x.size(1)
        return torch.tril(torch.ones((n, n), device=x.device)).to(torch.bool)
except OSError:
    pass"""

#: Connects to a TCP server of the grading machine; only where it can, it answers exercise 2 right.
CONNECTS = """import socket
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=5).sendall(b"out of the box")
    def causal_mask(x):
        n = x.size(1)
        return torch.tril(torch.ones((n, n), device=x.device)).to(torch.bool)
except OSError:
    pass"""

#: A package in a student's own folder, copied with the notebook into the kernel's working folder.
SHADOW = "raise ImportError('the learner shadows the grader')\n"


def _with_cell(nb: nbformat.NotebookNode, source: str) -> nbformat.NotebookNode:
    nb.cells.append(nbformat.v4.new_code_cell(source))
    return nb


@pytest.fixture(scope="module")
def review():
    """The class above, graded once (``-j 2``, so alice and bob may also run at the same time)."""
    root = Path(tempfile.mkdtemp(prefix="devicekit-review42-"))
    shared = f"/dev/shm/devicekit-review42-{secrets.token_hex(4)}.py"
    subs, hidden = root / "subs", root / "hidden"
    hidden.mkdir()
    (hidden / "lab01.py").write_text(HIDDEN_JUDGE, encoding="utf-8")
    write(_with_cell(solved_lab(LAB), SHARE.format(path=shared)), subs / "a-alice_01-devices.ipynb")
    write(_with_cell(lab_notebook(LAB), TAKE.format(path=shared)), subs / "b-bob_01-devices.ipynb")
    write(_with_cell(lab_notebook(LAB), DEEP_ERROR), subs / "c-carl_01-devices.ipynb")
    write(_with_cell(lab_notebook(LAB), READS_SOLUTIONS), subs / "g-gus_01-devices.ipynb")
    write(lab_notebook(LAB), subs / "zed" / f"{LAB}.ipynb")  # a folder of her own, with a "data" package
    (subs / "zed" / "devicekit_grade").mkdir()
    (subs / "zed" / "devicekit_grade" / "__init__.py").write_text(SHADOW, encoding="utf-8")
    # the roster where bubblewrap's emptied folders (/tmp, /home, …) do not cover it
    private = Path(
        tempfile.mkdtemp(prefix="devicekit-review42-", dir="/var/tmp" if Path("/var/tmp").is_dir() else None)
    )
    roster = private / "roster.csv"
    roster.write_text("id,name,email\nhana,Hana Secret,hana@example.edu\n", encoding="utf-8")
    roster.chmod(0o644)
    private.chmod(0o755)
    write(
        _with_cell(lab_notebook(LAB), READS_ROSTER.format(path=str(roster))), subs / "h-hana_01-devices.ipynb"
    )
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.5)
    reached: list[bytes] = []
    listening = threading.Event()
    listening.set()

    def accept() -> None:
        while listening.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                reached.append(conn.recv(100))

    threading.Thread(target=accept, daemon=True).start()
    write(
        _with_cell(lab_notebook(LAB), CONNECTS.format(port=server.getsockname()[1])),
        subs / "j-jan_01-devices.ipynb",
    )
    args = ("--out", OUT, "--jobs", "2", "--hidden", "hidden", "--roster", str(roster), "--timeout", "60")
    try:
        done = run_grader(root, *args, "subs")
    finally:
        shutil.rmtree(private, ignore_errors=True)
        listening.clear()
        server.close()
    left = Path(shared).exists()
    Path(shared).unlink(missing_ok=True)
    rows = json.loads((root / OUT / "grades.json").read_text(encoding="utf-8"))
    yield {
        "rows": {r["file"].removeprefix("subs/"): r for r in rows},
        "left_in_shm": left,
        "reached": reached,
        "returncode": done.returncode,
        "stderr": done.stderr[-3000:],
    }


def _row(review: dict, name: str) -> dict:
    return review["rows"][f"{name}_01-devices.ipynb"]


@pytest.mark.integration
def test_a_package_in_the_students_folder_cannot_make_the_graders_setup_fail(review):
    # the student's files sit in the kernel's working folder, first on its path: before the fix, the
    # grader's setup cell imported her devicekit_grade, failed, and the row was grader-error (exit 4)
    r = review["rows"][f"zed/{LAB}.ipynb"]
    assert (r["status"], r["score"]) == ("graded", 0), (r["status"], r["reason"])
    assert review["returncode"] == 0, review["stderr"]


@pytest.mark.integration
def test_the_instructors_hidden_judges_run_in_every_forked_evaluator(review):
    # since the zygote (072bd0c) only the zygote's --probe loaded them; each child judged without them
    r = _row(review, "a-alice")
    assert [e["passed"] for e in r["exercises"]] == [False, True, True], r["feedback"]
    assert HIDDEN_MARK in r["exercises"][0]["en"]


@pytest.mark.integration
def test_a_kernel_that_the_evaluator_cannot_print_scores_nothing_and_is_not_an_error(review):
    r = _row(review, "c-carl")
    assert (r["status"], r["score"]) == ("graded", 0), (r["status"], r["reason"])
    assert all(e["how"] == "judged" and not e["passed"] for e in r["exercises"]), r["feedback"]


@pytest.mark.integration
def test_dev_shm_is_no_channel_between_submissions_and_nothing_is_left_there(review):
    if TRUST:
        pytest.skip("no bubblewrap here (--trust-submissions): /dev/shm is shared (see the review)")
    assert _row(review, "b-bob")["score"] == 0, _row(review, "b-bob")["feedback"]
    assert not review["left_in_shm"], "a submission left a file in the machine's /dev/shm"


@pytest.mark.integration
def test_the_checkouts_solutions_stay_hidden_when_the_grader_runs_elsewhere(review):
    if TRUST:
        pytest.skip("no bubblewrap here (--trust-submissions): nothing hides solutions/ from a notebook")
    r = _row(review, "g-gus")
    assert r["score"] == 0, r["feedback"]


@pytest.mark.integration
def test_the_roster_stays_hidden_from_notebooks(review):
    if TRUST:
        pytest.skip("no bubblewrap here (--trust-submissions): nothing hides the roster from a notebook")
    r = _row(review, "h-hana")
    assert r["exercises"][1]["passed"] is False, "the notebook read the roster"


@pytest.mark.integration
def test_a_notebook_cannot_reach_the_grading_machines_network(review):
    if TRUST:
        pytest.skip("no bubblewrap here (--trust-submissions): the machine's network is the notebooks' too")
    assert not review["reached"], "a notebook connected to a server on the grading machine"
    r = _row(review, "j-jan")
    assert (r["status"], r["exercises"][1]["passed"]) == ("graded", False), (r["status"], r["feedback"])


#: Empties the worker's event log (the worker runs as the kernel's user, its log is the kernel's to write),
#: then ends the kernel: the grader reads "no cell of the notebook started" and calls it its own failure.
ERASE_EVENTS = """import os
open("../run/events.jsonl", "w").close()
os._exit(1)"""


@pytest.mark.integration
def test_a_notebook_cannot_make_its_row_the_graders_failure_by_erasing_the_event_log(tmp_path):
    """Hole 8 (REVIEW-stop46.md): the worker's events were a file in the box, which the kernel's user could
    empty before it exited, so "nothing of the learner's ran" made its crash a grader-error. They now come
    on a pipe the grader reads as they are sent (`box._EventPipe`): the row is the notebook's own."""
    nb = lab_notebook(LAB)
    nb.cells.insert(3, nbformat.v4.new_code_cell(ERASE_EVENTS))
    write(nb, tmp_path / "subs" / "i-ivy_01-devices.ipynb")
    done = run_grader(tmp_path, "--out", OUT, "--timeout", "60", "subs")
    rows = json.loads((tmp_path / OUT / "grades.json").read_text(encoding="utf-8"))
    assert rows[0]["status"] == "kernel-died", (rows[0]["status"], rows[0]["reason"])
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_trickled_reply_cannot_hold_the_evaluator_past_its_time_limit():
    """One byte every 0.2 s of a message whose header promises 100: each ``recv`` is quick, the message
    never ends. The channel gives up after its limit (1 s) for the message, not per byte."""
    from devicekit_grade import wire
    from devicekit_grade._evaluator import Channel, KernelGone

    wire.decode(wire.encode({}))  # torch imported before the clock starts
    ours, theirs = socket.socketpair()
    stop = threading.Event()

    def trickle() -> None:
        wire.receive(theirs)
        theirs.sendall(wire._HEADER.pack(100))
        while not stop.wait(0.2):
            theirs.sendall(b"x")

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    ours.settimeout(1.0)
    started = time.monotonic()
    try:
        with pytest.raises(KernelGone) as gone:
            Channel(ours, 1.0).probe("move-batch", "move_batch")
        assert time.monotonic() - started < 5
        assert "did not answer within 1 s" in gone.value.message.en
        assert gone.value.message.zh == "notebook 的代码在 1 秒内没有应答"
    finally:
        stop.set()
        thread.join(5)
        ours.close()
        theirs.close()
