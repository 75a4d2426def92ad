"""A cgroup per box (review47, hole 3): which one the grader picks (v2 as root or in a delegated subtree,
v1, none) in fake ``/sys/fs/cgroup`` trees, the limits it writes, and, where this machine lets the grader
make one, that a box's cgroup caps its memory and is emptied and removed after it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from devicekit.messages import Message
from devicekit_grade import cgroups, sandbox


def _v2_tree(fs: Path, own: str, enabled: str = "cpu memory pids") -> Path:
    """A fake cgroup v2 mount at ``fs`` with the grader's own cgroup at ``own``; returns its parent."""
    (fs / "cgroup.controllers").parent.mkdir(parents=True, exist_ok=True)
    (fs / "cgroup.controllers").write_text("cpu io memory pids\n")
    folder = fs
    for part in Path(own.lstrip("/")).parts:
        for name in ("cgroup.procs", "cgroup.subtree_control"):
            (folder / name).write_text(enabled if name.endswith("control") else "")
        folder = folder / part
        folder.mkdir()
    (folder / "cgroup.procs").write_text(f"{os.getpid()}\n")
    return folder.parent


def test_v2_puts_the_runs_cgroup_beside_the_graders_own(tmp_path):
    own = "/user.slice/user-1000.slice/user@1000.service/app.slice/term.scope"
    parent = _v2_tree(tmp_path, own)
    run = cgroups.choose(tmp_path, f"0::{own}\n")
    assert isinstance(run, cgroups.Run) and run.version == 2, run
    (folder,) = run.folders
    # beside its own cgroup (a v2 cgroup with processes cannot hand controllers to its children)
    assert folder.parent == parent and folder.name.startswith(f"devicekit-grade-{os.getpid()}-")
    assert (folder / "cgroup.subtree_control").read_text() == "+memory +pids"
    group = cgroups.open_box(run, 300 << 20, 64)
    assert (group[0] / "memory.max").read_text() == str(300 << 20)
    assert (group[0] / "pids.max").read_text() == "64"
    assert not (group[0] / "memory.swap.max").exists()  # no swap accounting in this tree: nothing written


def test_the_empty_folders_of_a_grader_that_is_gone_are_removed(tmp_path):
    """A grader killed with SIGKILL removes nothing: the next run removes its empty folders, never those of a
    live grader."""
    parent = _v2_tree(tmp_path, "/grader.scope")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    stale = parent / f"devicekit-grade-{int(gone.stdout)}-7"
    (stale / "b9").mkdir(parents=True)
    live = parent / f"devicekit-grade-{os.getpid()}-999"
    live.mkdir()
    run = cgroups.choose(tmp_path, "0::/grader.scope\n")
    assert isinstance(run, cgroups.Run) and not stale.exists() and live.is_dir()


def test_v2_enables_the_controllers_where_the_parent_does_not_yet(tmp_path):
    parent = _v2_tree(tmp_path, "/grader.scope", enabled="")
    run = cgroups.choose(tmp_path, "0::/grader.scope\n")
    assert isinstance(run, cgroups.Run) and run.folders[0].parent == parent == tmp_path
    assert (parent / "cgroup.subtree_control").read_text() == "+memory +pids"


def test_v2_without_a_folder_this_user_may_write_has_none_and_says_why(tmp_path, monkeypatch):
    own = "/user.slice/user-1000.slice/session-2.scope"
    _v2_tree(tmp_path, own)
    monkeypatch.setattr(cgroups.os, "access", lambda path, mode: False)  # an ssh session: root's folders
    why = cgroups.choose(tmp_path, f"0::{own}\n")
    assert isinstance(why, Message), why
    assert "cgroup v2" in why.en and own in why.en and "cgroup v2" in why.zh and "（" in why.zh
    assert not list(tmp_path.rglob("devicekit-grade-*"))  # nothing made


def test_v1_puts_a_cgroup_below_the_graders_own_in_memory_and_pids(tmp_path):
    text = "4:memory:/process_api/abc\n8:pids:/\n1:cpu,cpuacct:/\n0::/\n"
    for folder in (tmp_path / "memory" / "process_api" / "abc", tmp_path / "pids"):
        folder.mkdir(parents=True)
        (folder / "cgroup.procs").write_text("")
    run = cgroups.choose(tmp_path, text)
    assert isinstance(run, cgroups.Run) and run.version == 1, run
    memory, pids = run.folders
    assert memory.parent == tmp_path / "memory" / "process_api" / "abc" and pids.parent == tmp_path / "pids"
    group = cgroups.open_box(run, 100 << 20, 32)
    assert group[0].parent == memory and group[1].parent == pids
    assert (group[0] / "memory.limit_in_bytes").read_text() == str(100 << 20)
    assert (group[1] / "pids.max").read_text() == "32"


def test_v1_needs_its_own_cgroups_writable_and_none_is_said(tmp_path, monkeypatch):
    for folder in (tmp_path / "memory", tmp_path / "pids"):
        folder.mkdir()
        (folder / "cgroup.procs").write_text("")
    monkeypatch.setattr(cgroups.os, "access", lambda path, mode: False)  # an ordinary user, no delegation
    why = cgroups.choose(tmp_path, "4:memory:/\n8:pids:/\n")
    assert isinstance(why, Message) and "cgroup v1" in why.en and "cgroup v1" in why.zh
    nothing = cgroups.choose(tmp_path / "empty", "")
    assert isinstance(nothing, Message) and "neither" in nothing.en and "既没有" in nothing.zh


def test_without_a_cgroup_the_preflight_says_limits_are_per_process_only():
    iso = sandbox.Isolation("none", cgroup=Message("cgroup v1: no", "cgroup v1：不行"))
    said = sandbox.holds(iso, sandbox.Limits(memory_mb=8192, box_memory_mb=8192))
    assert "per process only" in said.en and "cgroup v1: no" in said.en and "root" in said.en
    assert "只对单个进程有效" in said.zh and "cgroup v1：不行" in said.zh


# --- on this machine: a real cgroup, where the grader may make one ------------------------------------------


@pytest.fixture
def run():
    """The run's cgroup on this machine, removed after the test; skipped where none can be made here."""
    made = cgroups.choose()
    if not isinstance(made, cgroups.Run):
        pytest.skip(f"no cgroup can be made here: {made.en}")
    yield made
    cgroups.close(made)
    assert not any(f.exists() for f in made.folders), made.folders


MEMFD = """import os
fd, held = os.memfd_create("held"), 0
for _ in range(20):
    os.write(fd, bytes(16 << 20))
    held += 16
    print(held, flush=True)
"""


@pytest.mark.integration
def test_a_box_cgroup_caps_the_memory_its_processes_hold_in_memfds(run, tmp_path):
    """Measured on the course machine (cgroup v1, Linux 6.18): a process in a 100 MiB cgroup writing a
    320 MiB memfd is killed (SIGKILL, the kernel's OOM killer) after about 80 MiB; `out_of_memory` sees it."""
    group = cgroups.open_box(run, 100 << 20, 0)
    try:
        done = subprocess.run(
            [sys.executable, "-S", "-c", MEMFD], capture_output=True, text=True, timeout=60,
            preexec_fn=lambda: cgroups.join(group),
        )  # fmt: skip
        held = int(done.stdout.split()[-1]) if done.stdout.split() else 0
        assert done.returncode == -9 and held < 100, (done.returncode, held, done.stderr)
        assert cgroups.out_of_memory(group)
    finally:
        cgroups.remove(group)
    assert not any(g.exists() for g in group)


@pytest.mark.integration
def test_removing_a_box_cgroup_kills_what_is_left_in_it_even_detached(run):
    group = cgroups.open_box(run, 0, 0)
    # a detached process (its own session, its parent gone): not in the grader's process tree any more
    script = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(300)\nos._exit(0)"
    subprocess.run([sys.executable, "-S", "-c", script], preexec_fn=lambda: cgroups.join(group), timeout=30)
    time.sleep(0.2)
    left = [int(p) for p in (group[0] / "cgroup.procs").read_text().split()]
    assert len(left) == 1, left
    cgroups.remove(group)
    assert not any(g.exists() for g in group)
    time.sleep(0.2)
    assert (
        not Path(f"/proc/{left[0]}").exists() or "Z" in Path(f"/proc/{left[0]}/stat").read_text().split()[2]
    )


@pytest.mark.integration
def test_closing_the_run_removes_the_box_cgroups_left_in_it(run):
    """As after an interrupted grader: every box cgroup left is emptied and removed with the run's."""
    group = cgroups.open_box(run, 0, 0)
    proc = subprocess.Popen(["sleep", "300"], preexec_fn=lambda: cgroups.join(group))
    cgroups.close(run)
    assert proc.wait(timeout=30) == -9
    assert not any(g.exists() for g in group) and not any(f.exists() for f in run.folders)


@pytest.mark.integration
def test_an_interrupted_grader_leaves_no_cgroup_and_no_process(run, tmp_path):
    """The grader, ended politely (SIGTERM, as Ctrl-C) while a notebook sleeps in its box: exit 130, every
    process of the box killed and every cgroup of the run removed."""
    import nbformat
    from grade_attacks.classroom import TRUST, processes_with

    from course_tools.paths import ROOT
    from course_tools.submissions import solved_lab, write

    marker = f"box48-{os.getpid()}-sleeps"
    nb = solved_lab("01-devices")
    sleeps = f"import subprocess\nsubprocess.run(['sh', '-c', 'sleep 99; : {marker}'])"
    nb.cells.append(nbformat.v4.new_code_cell(sleeps))
    write(nb, tmp_path / "subs" / "a-amy_01-devices.ipynb")
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT / 'tools'}"}
    grader = subprocess.Popen(
        [sys.executable, "-m", "devicekit_grade", "--out", "grades", *TRUST, "subs"], cwd=tmp_path, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    mine = [f.parent / f"devicekit-grade-{grader.pid}-" for f in run.folders]
    try:
        deadline = time.monotonic() + 300
        while not processes_with(marker) and time.monotonic() < deadline and grader.poll() is None:
            time.sleep(0.5)
        boxes = [b for m in mine for b in m.parent.glob(f"{m.name}*/b*")]
        assert processes_with(marker) and boxes, "the notebook never started in a box of its own cgroup"
        grader.terminate()
        assert grader.wait(timeout=120) == 130, grader.stderr.read() if grader.stderr else ""
    finally:
        if grader.poll() is None:
            grader.kill()
    assert not [p for m in mine for p in m.parent.glob(f"{m.name}*")]
    assert not processes_with(marker)
