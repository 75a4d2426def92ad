"""Isolation of devicekit-grade without grading a notebook: bubblewrap or a bilingual refusal, the user a
sandbox switches to as root, and the process limit that holds in every mode."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from devicekit_grade import sandbox


def test_without_bubblewrap_the_grader_refuses_in_both_languages(monkeypatch):
    monkeypatch.setattr(sandbox, "bwrap_works", lambda: False)
    for requested in ("auto", "bwrap"):
        with pytest.raises(sandbox.Refused) as refused:
            sandbox.choose(requested, trust=False, keep=[], hide=[])
        message = refused.value.message
        assert "apt install bubblewrap" in message.en and "0.5 or later" in message.en
        assert "--trust-submissions" in message.en and "not installed or cannot start" in message.en
        assert "apt install bubblewrap" in message.zh and "拒绝" in message.zh and "0.5" in message.zh
        assert "（" in message.zh  # Chinese punctuation in the Chinese text
    with pytest.raises(sandbox.Refused):  # asked for by name: never without it, trusted or not
        sandbox.choose("bwrap", trust=True, keep=[], hide=[])


def test_bubblewrap_is_the_one_isolation_and_none_needs_trust(monkeypatch):
    monkeypatch.setattr(sandbox, "bwrap_works", lambda: True)
    chosen = sandbox.choose("auto", trust=True, keep=["/usr"], hide=["/srv/solutions"])
    assert (chosen.mode, chosen.keep, chosen.hide) == ("bwrap", ("/usr",), ("/srv/solutions",))
    assert not chosen.warnings
    with pytest.raises(sandbox.Refused) as refused:
        sandbox.choose("none", trust=False, keep=[], hide=[])
    assert "--isolation none" in refused.value.message.en and "--isolation none" in refused.value.message.zh
    none = sandbox.choose("none", trust=True, keep=[], hide=[])
    assert none.mode == "none" and "--trust-submissions" in none.warnings[0].en
    monkeypatch.setattr(sandbox, "bwrap_works", lambda: False)
    assert sandbox.choose("auto", trust=True, keep=[], hide=[]).mode == "none"


def test_the_command_line_refuses_with_exit_2_and_says_how(tmp_path, monkeypatch, capsys):
    from course_tools.submissions import lab_notebook, write
    from devicekit_grade import cli

    write(lab_notebook("01-devices"), tmp_path / "a.ipynb")
    monkeypatch.setattr(sandbox, "bwrap_works", lambda: False)
    code = cli.main(["--out", str(tmp_path / "out"), str(tmp_path / "a.ipynb")])
    assert code == cli.USAGE_ERROR
    assert not (tmp_path / "out" / "grades.json").exists()
    err = capsys.readouterr().err
    assert "apt install bubblewrap" in err and "拒绝" in err


def test_as_root_a_sandbox_switches_to_the_submissions_user_and_the_box_is_its(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "running_as_root", lambda: True)
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(sandbox.os, "chown", lambda *args: None)
    monkeypatch.setattr(sandbox, "bwrap_disables_userns", lambda: True)
    box = sandbox.open_box(tmp_path)
    prefix = sandbox.bwrap_prefix(box, [], [])
    uid = sandbox.SUBMISSION_UID
    switch = ["/usr/bin/setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
    # then, as that user, a bubblewrap inside that stops the box making user namespaces (review47, hole 3)
    inner = ["/usr/bin/bwrap", "--unshare-user", "--disable-userns", "--dev-bind", "/", "/", "--"]
    assert prefix[-13:] == ["--", *switch, *inner]
    monkeypatch.setattr(sandbox, "bwrap_disables_userns", lambda: False)  # a bubblewrap before 0.8
    assert sandbox.bwrap_prefix(box, [], [])[-6:] == ["--", *switch]
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None if name == "setpriv" else "/usr/bin/bwrap")
    assert sandbox.bwrap_prefix(box, [], []) == []  # never root inside: no sandbox at all
    monkeypatch.setattr(sandbox, "running_as_root", lambda: False)  # not root: the command itself follows
    assert sandbox.bwrap_prefix(box, [], [])[-2:] == [str(box.root), "--"]
    monkeypatch.setattr(sandbox, "bwrap_disables_userns", lambda: True)
    assert sandbox.bwrap_prefix(box, [], [])[-9:] == [str(box.root), "--", *inner]


@pytest.mark.skipif(not sandbox.bwrap_disables_userns(), reason="this bubblewrap cannot stop user namespaces")
def test_a_box_cannot_make_a_user_namespace(tmp_path):
    """Review47, hole 3: a notebook mounted a tmpfs of its own (no --size, no limit) in a user namespace it
    made; as root and as an ordinary user the box's user now can make none (ENOSPC: the limit is 1)."""
    box = sandbox.open_box(tmp_path)
    cmd = [*sandbox.bwrap_prefix(box, [], []), "unshare", "--user", "true"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "No space left on device" in done.stderr, (done.returncode, done.stderr)


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
        preexec_fn=sandbox.preexec(limits),
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
    assert watchdog.tripped == "processes"
    assert not sandbox.descendants(proc.pid)


def test_on_disk_counts_allocated_blocks_below_a_folder_without_following_links(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "full").write_bytes(b"x" * (1 << 20))
    with open(tmp_path / "sparse", "wb") as f:  # 1 GiB long, one block written
        f.seek(1 << 30)
        f.write(b"x")
    os.symlink("/usr", tmp_path / "usr")  # a link to a large folder counts as the link only
    used = sandbox.on_disk(tmp_path, 1 << 40)
    assert (1 << 20) <= used < (1 << 20) + (1 << 18), used


def test_on_disk_stops_counting_past_the_limit_and_past_too_many_entries(tmp_path):
    for i in range(3):
        (tmp_path / f"f{i}").write_bytes(b"x" * (1 << 20))
    assert sandbox.on_disk(tmp_path, 100) > 100
    many = tmp_path / "many"
    many.mkdir()
    for i in range(50):
        (many / str(i)).touch()
    assert sandbox.on_disk(many, 1 << 30) < 1 << 30
    old, sandbox.MAX_ENTRIES = sandbox.MAX_ENTRIES, 10
    try:
        assert sandbox.on_disk(many, 1 << 30) == (1 << 30) + 1
    finally:
        sandbox.MAX_ENTRIES = old


@pytest.mark.integration  # writes 256 MiB
def test_the_watchdog_stops_a_submission_that_fills_its_folder(tmp_path):
    writes = (
        "import time\nfor i in range(32):\n    open(f'f{i}', 'wb').write(bytes(8 << 20)); time.sleep(0.05)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", writes], cwd=tmp_path, preexec_fn=os.setsid)
    watchdog = sandbox.Watchdog(proc.pid, limit=64, folder=tmp_path, disk=32 << 20)
    watchdog.start()
    try:
        proc.wait(timeout=60)
    finally:
        watchdog.stop()
        sandbox.kill_tree(proc.pid)
    assert watchdog.tripped == "disk"
    assert proc.returncode != 0
    assert len(list(tmp_path.iterdir())) < 32


@pytest.mark.skipif(not sandbox.bwrap_works(), reason="bubblewrap is not installed here")
def test_the_sandbox_hides_the_solutions_folder(tmp_path):
    secret = tmp_path / "solutions"
    secret.mkdir()
    (secret / "answer.txt").write_text("42")
    box = sandbox.open_box(tmp_path)
    keep = [sys.prefix, sys.base_prefix]
    cmd = [*sandbox.bwrap_prefix(box, keep, [str(secret)]), "sh", "-c", f"ls {secret}; echo done"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert "done" in done.stdout and "answer.txt" not in done.stdout, done.stderr


def test_unlinked_open_counts_files_a_process_keeps_after_removing_them(tmp_path):
    """review48, hole 1: a box's bytes in files it unlinked but keeps open; none once they are closed."""
    import os

    path = tmp_path / "gone"
    with open(path, "wb") as kept:
        kept.write(b"\1" * (4 << 20))
        kept.flush()
        os.fsync(kept.fileno())
        device = os.stat(tmp_path).st_dev
        assert sandbox.unlinked_open([os.getpid()], device) == 0  # still named: on_disk counts it
        path.unlink()
        assert sandbox.unlinked_open([os.getpid()], device) >= 4 << 20
        assert sandbox.unlinked_open([os.getpid()], device + 1) == 0  # another file system
    assert sandbox.unlinked_open([os.getpid()], device) == 0


def test_on_disk_counts_a_folder_it_may_not_list_as_over_the_limit(tmp_path, monkeypatch):
    """review48: as an ordinary user the grader is the box's user, and a box may make one of its folders
    unlistable (``chmod 0300``): what it holds cannot be measured, so the box is over its limit."""
    import os

    hidden = tmp_path / "hid"
    hidden.mkdir()
    (hidden / "f").write_bytes(b"\1" * 4096)
    real = os.scandir

    def scandir(path):
        if str(path) == str(hidden):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    assert sandbox.on_disk(tmp_path, 1 << 30) == (1 << 30) + 1
    (hidden / "f").unlink()
    hidden.rmdir()  # a folder removed meanwhile (FileNotFoundError) still just counts what is left
    assert sandbox.on_disk(tmp_path, 1 << 30) < 1 << 30


def test_unlinked_open_stops_looking_past_too_many_descriptors(monkeypatch):
    """review48: the watchdog's half-second look at a box's descriptors stays short; a box holding more than
    `MAX_ENTRIES` counts as over its disk limit."""
    import os

    monkeypatch.setattr(sandbox, "MAX_ENTRIES", 2)
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(3)]
    try:
        assert sandbox.unlinked_open([os.getpid()], 0, 100) == 101
    finally:
        for fd in held:
            os.close(fd)
