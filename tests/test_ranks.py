"""`devicekit_labs.ranks`: a self-check's helper ranks, forked where that is safe, give what spawned ranks
give; a forked child hangs in OpenMP unless it keeps to one thread (why `start_ranks` sets one); forked
ranks leave an inherited simulated GPU; no fork while a process group exists."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.distributed as dist

from devicekit.distributed import setup, spawn, teardown
from devicekit_labs import ranks
from devicekit_labs import sharded_workers as sw

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="this PyTorch build has no torch.distributed")

FORKS_HERE = sys.platform.startswith("linux") and not torch.backends.cuda.is_built()


@pytest.fixture(autouse=True)
def no_group_left():
    teardown()
    yield
    teardown()


@pytest.mark.integration
@pytest.mark.skipif(not FORKS_HERE, reason="start_ranks forks only on Linux with a torch built without CUDA")
def test_forked_ranks_save_what_spawned_ranks_save_even_from_a_simulating_process(tmp_path):
    """FSDP2 with a DCP checkpoint, inside a simulation of two GPUs (as in a lab's kernel): the forked
    ranks run on the CPU with gloo and report the same digests as two spawned ranks."""
    import devicekit

    with devicekit.simulate(gpus=2):
        assert ranks.can_fork() and torch.cuda.is_available()  # the simulated GPUs: the parent sees them
        ranks.start_ranks(sw.fsdp_train, 2, (2, tmp_path / "forked", 2, str(tmp_path / "ckpt-forked")))
    forked = sw.collect_results(tmp_path / "forked")
    spawn(sw.fsdp_train, nprocs=2, args=(2, tmp_path / "spawned", 2, str(tmp_path / "ckpt-spawned")))
    spawned = sw.collect_results(tmp_path / "spawned")
    assert [(r["backend"], r["device"]) for r in forked] == [("gloo", "cpu"), ("gloo", "cpu")]
    for key in ("digest", "optim_digest", "shard_digest", "losses"):
        assert [r[key] for r in forked] == [r[key] for r in spawned], key
    assert sorted(p.name for p in (tmp_path / "ckpt-forked" / "dcp").iterdir()) == [
        ".metadata",
        "__0_0.distcp",
        "__1_0.distcp",
    ]


def test_no_fork_while_a_process_group_exists():
    setup("gloo")
    assert not ranks.can_fork()
    teardown()
    assert ranks.can_fork() == FORKS_HERE


#: A parent that ran OpenMP parallel regions on two threads forks a child that multiplies matrices: with
#: ``ONE`` the child first keeps to one thread, as `ranks._forked_rank` does.
_OPENMP_AFTER_FORK = textwrap.dedent(
    """
    import os, sys, torch
    torch.set_num_threads(2)
    a = torch.randn(1000, 1000)
    for _ in range(3):
        a = (a @ a).tanh()
    pid = os.fork()
    if pid == 0:
        if sys.argv[1] == "ONE":
            torch.set_num_threads(1)
        b = torch.randn(500, 500)
        for _ in range(3):
            b = (b @ b).tanh()
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    print("child done", status)
    """
)


@pytest.mark.integration
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork and GNU OpenMP: Linux")
def test_a_forked_child_hangs_in_openmp_unless_it_keeps_to_one_thread():
    one = subprocess.run(
        [sys.executable, "-c", _OPENMP_AFTER_FORK, "ONE"], capture_output=True, text=True, timeout=120
    )
    assert one.returncode == 0 and "child done 0" in one.stdout, one.stderr[-2000:]
    two = subprocess.Popen(
        [sys.executable, "-c", _OPENMP_AFTER_FORK, "TWO"], stdout=subprocess.PIPE, start_new_session=True
    )
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            two.communicate(timeout=20)
    finally:
        os.killpg(two.pid, signal.SIGKILL)  # the parent and its hanging child
        two.communicate()


#: A gloo group destroyed while a reference cycle keeps its object: garbage when the ranks are forked.
_DEAD_GROUP_IN_A_CYCLE = textwrap.dedent(
    """
    import gc, sys
    import torch.distributed as dist
    from devicekit.distributed import setup, teardown
    from devicekit_labs import ranks, sharded_workers as sw

    gc.disable()
    setup("gloo")
    cycle = [dist.group.WORLD]
    cycle.append(cycle)
    teardown()
    del cycle
    gc.enable()
    ranks.start_ranks(sw.mesh_demo, 2, (2, sys.argv[1]))
    print("ranks done")
    """
)


@pytest.mark.integration
@pytest.mark.skipif(not FORKS_HERE, reason="start_ranks forks only on Linux with a torch built without CUDA")
def test_forked_ranks_do_not_free_a_dead_group_they_inherited(tmp_path):
    """Freed in a forked child, the group would join gloo threads that fork did not copy, and wait for ever
    (a kernel's forked ranks did, before `start_ranks` collected and froze the garbage)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _DEAD_GROUP_IN_A_CYCLE, str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=300)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # a hanging rank too
    assert proc.returncode == 0 and "ranks done" in out, err[-3000:]
    assert [r["local_rows"] for r in sw.collect_results(tmp_path)] == [[0, 1, 2, 3], [4, 5, 6, 7]]
