"""Isolation of devicekit-grade without grading a notebook: the choice of mode, the bilingual refusal, the
uid pool that two runs share safely, and the process limit that holds in every mode."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from devicekit_grade import sandbox


def test_without_a_user_or_a_sandbox_the_grader_refuses_in_both_languages():
    with pytest.raises(sandbox.Refused) as refused:
        sandbox.choose_isolation("auto", as_root=False, python_private="", bwrap_ok=False, trust=False)
    assert "apt install bubblewrap" in refused.value.en and "--trust-submissions" in refused.value.en
    assert "apt install bubblewrap" in refused.value.zh and "拒绝" in refused.value.zh
    assert "（" in refused.value.zh  # Chinese punctuation in the Chinese text


def test_a_private_python_as_root_is_named_in_the_refusal():
    with pytest.raises(sandbox.Refused) as refused:
        sandbox.choose_isolation("auto", as_root=True, python_private="/root", bwrap_ok=False, trust=False)
    assert "/root is private" in refused.value.en and "/root 是私有的" in refused.value.zh


@pytest.mark.parametrize(
    ("as_root", "private", "bwrap", "trust", "expected"),
    [
        (True, "", False, False, ("user", True)),
        (True, "/root", True, False, ("bwrap", True)),  # bubblewrap, and a user of its own inside
        (False, "", True, False, ("bwrap", False)),
        (False, "", False, True, ("none", False)),
        (True, "/root", False, True, ("none", False)),
    ],
)
def test_the_mode_follows_what_the_machine_allows(as_root, private, bwrap, trust, expected):
    assert sandbox.choose_isolation("auto", as_root, private, bwrap, trust) == expected


def test_isolation_none_needs_trust_and_a_sandbox_asked_for_must_exist():
    with pytest.raises(sandbox.Refused):
        sandbox.choose_isolation("none", True, "", True, trust=False)
    assert sandbox.choose_isolation("none", True, "", True, trust=True) == ("none", False)
    with pytest.raises(RuntimeError, match="apt install bubblewrap"):
        sandbox.choose_isolation("bwrap", False, "", False, trust=True)


def test_the_command_line_refuses_with_exit_2_and_says_how(tmp_path, monkeypatch):
    from course_tools.submissions import lab_notebook, write
    from devicekit_grade import cli

    write(lab_notebook("01-devices"), tmp_path / "a.ipynb")
    monkeypatch.setattr(sandbox, "bwrap_works", lambda: False)
    monkeypatch.setattr(sandbox, "running_as_root", lambda: False)
    code = cli.main(["--out", str(tmp_path / "out"), str(tmp_path / "a.ipynb")])
    assert code == cli.USAGE_ERROR
    assert not (tmp_path / "out" / "grades.json").exists()


def test_two_uid_pools_never_hand_out_the_same_user(tmp_path):
    a, b = sandbox.UidPool(1_990_000_000, tmp_path), sandbox.UidPool(1_990_000_000, tmp_path)
    b._next = a._next  # the worst case: both runs start at the same number
    taken_a = [a.take() for _ in range(5)]
    taken_b = [b.take() for _ in range(5)]
    assert not set(taken_a) & set(taken_b)
    a.release(taken_a[0])
    assert not (tmp_path / f"{taken_a[0]}.lock").exists()
    assert a.holds(taken_a[1]) and not a.holds(taken_b[0])


def test_a_lock_whose_file_was_removed_meanwhile_does_not_count(tmp_path, monkeypatch):
    # run A releases a user (removes its lock file, then closes it) just as run B, which opened the old
    # file, locks it; a third run has created the file anew: B's lock is on a removed file and holds nothing
    import fcntl

    pool = sandbox.UidPool(1_990_000_000, tmp_path)
    first = pool._next
    real_flock, raced = fcntl.flock, []

    def flock(fd, op):
        real_flock(fd, op)
        if not raced:
            raced.append(fd)
            (tmp_path / f"{first}.lock").unlink()
            (tmp_path / f"{first}.lock").touch()

    monkeypatch.setattr(fcntl, "flock", flock)
    assert pool.take() == first + 1


def test_two_runs_start_at_different_offsets(tmp_path):
    starts = {sandbox.UidPool(1_990_000_000, tmp_path)._next for _ in range(5)}
    assert len(starts) > 1


FORKS = textwrap.dedent(
    """
    import os, sys, time
    started = 0
    for _ in range(150):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            time.sleep(3)
            os._exit(0)
        started += 1
    print(started, flush=True)
    time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 0)
    """
)


@pytest.mark.integration  # forks real processes
def test_the_process_limit_holds_for_the_graders_own_user():
    limits = sandbox.Limits(memory_mb=0, cpu_s=60, processes=20, file_mb=1)
    done = subprocess.run(
        [sys.executable, "-c", FORKS], capture_output=True, text=True, timeout=120,
        preexec_fn=sandbox.preexec(limits, None),
    )  # fmt: skip
    started = int(done.stdout.strip().splitlines()[-1])
    if os.geteuid() == 0:
        # root is exempt from RLIMIT_NPROC: the grader's watchdog holds the limit there (next test)
        assert started == 150
    else:
        assert started < 40, f"{started} forks with a limit of 20 more processes"


@pytest.mark.integration  # forks real processes
def test_the_watchdog_stops_a_submission_that_forks_past_the_limit():
    proc = subprocess.Popen(
        [sys.executable, "-c", FORKS.replace("time.sleep(3)", "time.sleep(30)"), "30"],
        stdout=subprocess.DEVNULL, preexec_fn=os.setsid,
    )  # fmt: skip
    watchdog = sandbox.Watchdog(proc.pid, limit=64)
    watchdog.start()
    try:
        proc.wait(timeout=60)
    finally:
        watchdog.stop()
        sandbox.kill_tree(proc.pid)
    assert watchdog.tripped
    assert not sandbox.descendants(proc.pid)


@pytest.mark.skipif(not sandbox.bwrap_works(), reason="bubblewrap is not installed here")
def test_the_sandbox_hides_the_solutions_folder(tmp_path):
    secret = tmp_path / "solutions"
    secret.mkdir()
    (secret / "answer.txt").write_text("42")
    box = sandbox.make_box(tmp_path, None)
    keep = [sys.prefix, sys.base_prefix]
    cmd = [*sandbox.bwrap_prefix(box, keep, [str(secret)]), "sh", "-c", f"ls {secret}; echo done"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert "done" in done.stdout and "answer.txt" not in done.stdout, done.stderr
