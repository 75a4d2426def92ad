"""`devicekit.distributed.spawn` under ``DEVICEKIT_PRELOADED_RANKS=1`` (a grading kernel): ranks forked from a
fork server that imported torch once, and what they see is what spawned ranks see."""

from __future__ import annotations

import os
import sys

import preload_workers
import pytest
import torch

from devicekit import distributed
from devicekit.distributed import PRELOAD_ENV, spawn

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork server is Linux-only")


@pytest.fixture
def preloaded(monkeypatch: pytest.MonkeyPatch):
    """The variable set as the grader's setup cell sets it, no fork server running (an earlier test's, with
    an environment of its own, would be refused), and `_start_method`'s memory reset after."""
    import multiprocessing.forkserver

    multiprocessing.forkserver._forkserver._stop()  # "used by unit tests to stop the server"
    monkeypatch.setenv(PRELOAD_ENV, "1")
    monkeypatch.setattr(distributed, "_server_env", None)
    yield
    multiprocessing.forkserver._forkserver._stop()


def test_spawn_is_the_method_unless_asked(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(PRELOAD_ENV, raising=False)
    monkeypatch.setattr(distributed, "_server_env", None)
    assert distributed._start_method() == "spawn"
    monkeypatch.setenv(PRELOAD_ENV, "0")
    assert distributed._start_method() == "spawn"


def test_a_changed_environment_goes_back_to_spawn(preloaded, monkeypatch: pytest.MonkeyPatch):
    """A forked rank sees the fork server's environment: after a change, ranks are spawned again, so they see
    the caller's environment of the moment as spawned ranks do; the variables every rank sets don't count."""
    assert distributed._start_method() == "forkserver"
    monkeypatch.setenv("MASTER_PORT", "1234")  # set again in each rank by _child
    assert distributed._start_method() == "forkserver"
    monkeypatch.setenv("DEVICEKIT_TEST_PRELOAD", "changed")
    assert distributed._start_method() == "spawn"
    monkeypatch.delenv("DEVICEKIT_TEST_PRELOAD")
    assert distributed._start_method() == "forkserver"


@pytest.mark.integration
def test_ranks_come_from_the_fork_server_and_see_what_spawned_ones_see(
    preloaded, monkeypatch: pytest.MonkeyPatch, tmp_path
):
    monkeypatch.setenv("DEVICEKIT_TEST_PRELOAD", "first")
    forked, spawned = tmp_path / "forked", tmp_path / "spawned"
    forked.mkdir(), spawned.mkdir()
    spawn(preload_workers.report, nprocs=2, args=(str(forked), "DEVICEKIT_TEST_PRELOAD"))
    monkeypatch.setenv("DEVICEKIT_TEST_PRELOAD", "second")  # a change: this call spawns
    spawn(preload_workers.report, nprocs=2, args=(str(spawned), "DEVICEKIT_TEST_PRELOAD"))
    a, b = preload_workers.read(str(forked)), preload_workers.read(str(spawned))
    ranks = [(0, 2), (1, 2)]
    assert [(r["rank"], r["world_size"]) for r in a] == ranks == [(r["rank"], r["world_size"]) for r in b]
    assert [r["variable"] for r in a] == ["first", "first"]
    assert [r["variable"] for r in b] == ["second", "second"]
    assert all(r["cwd"] == os.getcwd() for r in a + b)
    # forked from one server (not this process) that had imported Dynamo; spawned ones are our children
    assert a[0]["ppid"] == a[1]["ppid"] != os.getpid()
    assert all(r["dynamo_imported"] for r in a)
    assert [r["ppid"] for r in b] == [os.getpid(), os.getpid()]


@pytest.mark.integration
def test_a_rank_error_is_raised_as_under_spawn(preloaded):
    with pytest.raises(torch.multiprocessing.ProcessRaisedException, match=r"rank [01] failed on purpose"):
        spawn(preload_workers.fail, nprocs=2)


def test_a_fork_server_started_by_other_code_is_not_used(preloaded, monkeypatch: pytest.MonkeyPatch):
    """Its environment is the one of the moment it started, not known here: ranks are spawned."""
    import multiprocessing.forkserver

    with monkeypatch.context() as patch:  # undone before the fixture stops the (real) server
        patch.setattr(multiprocessing.forkserver._forkserver, "_forkserver_pid", 12345)
        assert distributed._start_method() == "spawn"
    assert distributed._server_env is None
