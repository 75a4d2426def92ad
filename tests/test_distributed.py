"""devicekit.distributed and devicekit_labs.workers: set-up/tear-down, clear errors, real 2-process DDP."""

from __future__ import annotations

import os
import sys
import types
from datetime import timedelta

import pytest
import torch
import torch.distributed as dist

from devicekit import distributed
from devicekit.distributed import DistInfo, DistributedSetupError, setup, spawn, teardown
from devicekit_labs import workers as dist_workers

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="this PyTorch build has no torch.distributed")

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.fixture(autouse=True)
def clean(monkeypatch: pytest.MonkeyPatch):
    """No torchrun variables from the outside, and no process group left behind by a failing test."""
    for name in distributed.ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    teardown()
    yield
    teardown()


def _torchrun_env(monkeypatch: pytest.MonkeyPatch, rank: int, world_size: int, local_rank: int | None = None):
    monkeypatch.setenv("RANK", str(rank))
    monkeypatch.setenv("WORLD_SIZE", str(world_size))
    monkeypatch.setenv("LOCAL_RANK", str(rank if local_rank is None else local_rank))
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "29555")


# --- setup / teardown in one process --------------------------------------------------------------


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU machine setup() picks nccl")
def test_single_process_setup_is_idempotent():
    info = setup()
    assert info == DistInfo(rank=0, local_rank=0, world_size=1, backend="gloo", device=torch.device("cpu"))
    assert info.is_main
    assert dist.is_initialized() and dist.get_backend() == "gloo" and dist.get_world_size() == 1
    # Re-running the notebook cell: same group, same answer, no "initialize the default process group twice".
    assert setup() is info
    assert setup("gloo") is info
    assert setup("GLOO") is info
    # The one-process rendezvous does not leak into the environment that later child processes inherit.
    assert not any(name in os.environ for name in distributed.ENV_VARS)
    assert teardown() is True
    assert not dist.is_initialized()
    assert teardown() is False  # safe when nothing is initialised


def test_setup_again_after_teardown_and_with_timeout():
    first = setup("gloo", timeout=30)
    teardown()
    second = setup("gloo", timeout=timedelta(seconds=20))
    assert second == first and dist.is_initialized()
    t = torch.ones(3)
    dist.all_reduce(t)  # a real collective on the one-process group
    assert torch.equal(t, torch.ones(3))


def test_teardown_when_never_initialised():
    assert not dist.is_initialized()
    assert teardown() is False


def test_incompatible_backend_needs_teardown_first():
    setup("gloo")
    # The already-initialised check comes first: the message is about teardown(), not about nccl.
    with pytest.raises(DistributedSetupError, match=r"already initialised.*teardown\(\) first"):
        setup("nccl")
    assert dist.is_initialized() and dist.get_backend() == "gloo"  # the existing group is left alone


def test_incompatible_world_size_needs_teardown_first(monkeypatch: pytest.MonkeyPatch):
    setup("gloo")
    _torchrun_env(monkeypatch, rank=1, world_size=2)
    with pytest.raises(DistributedSetupError, match=r"rank 1 \(it has 0\).*world_size 2 \(it has 1\)"):
        setup()


def test_group_made_by_plain_init_process_group_is_recognised():
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{distributed._free_port()}", rank=0, world_size=1
    )
    info = setup()
    assert (info.backend, info.rank, info.world_size, info.device) == ("gloo", 0, 1, torch.device("cpu"))


# --- clear errors ---------------------------------------------------------------------------------


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA GPUs")
def test_nccl_on_cpu_says_use_gloo():
    with pytest.raises(DistributedSetupError, match="nccl needs CUDA GPUs; use gloo on CPU"):
        setup("nccl")
    assert not dist.is_initialized()


def test_unknown_backend():
    with pytest.raises(ValueError, match="unknown backend 'mpii'.*'gloo' \\(CPU\\)"):
        setup("mpii")


def test_rank_without_rendezvous_address(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(DistributedSetupError, match="MASTER_ADDR, MASTER_PORT are not.*torchrun"):
        setup("gloo")


@pytest.mark.parametrize(("rank", "world"), [("2", "2"), ("-1", "2"), ("0", "0"), ("x", "2")])
def test_bad_rank_or_world_size(monkeypatch: pytest.MonkeyPatch, rank: str, world: str):
    monkeypatch.setenv("RANK", rank)
    monkeypatch.setenv("WORLD_SIZE", world)
    with pytest.raises(DistributedSetupError):
        setup("gloo")


def test_nccl_sets_the_device_before_init_process_group(monkeypatch: pytest.MonkeyPatch):
    """The order that keeps every rank off cuda:0, checked without a GPU by recording the calls."""
    calls: list[tuple[str, object]] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "set_device", lambda device: calls.append(("set_device", device)))
    monkeypatch.setattr(dist, "is_nccl_available", lambda: True)

    def fake_init(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, device_id=None):
        calls.append(("init_process_group", locals()))

    monkeypatch.setattr(dist, "init_process_group", fake_init)
    _torchrun_env(monkeypatch, rank=3, world_size=4, local_rank=1)

    info = setup()

    assert info == DistInfo(
        rank=3, local_rank=1, world_size=4, backend="nccl", device=torch.device("cuda", 1)
    )
    assert [name for name, _ in calls] == ["set_device", "init_process_group"]
    assert calls[0][1] == torch.device("cuda", 1)
    kwargs = calls[1][1]
    assert isinstance(kwargs, dict)
    assert kwargs["backend"] == "nccl" and kwargs["init_method"] == "env://"
    assert (kwargs["rank"], kwargs["world_size"]) == (3, 4)
    assert kwargs["device_id"] == torch.device("cuda", 1)


def test_nccl_local_rank_beyond_visible_gpus(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(dist, "is_nccl_available", lambda: True)
    _torchrun_env(monkeypatch, rank=1, world_size=2)
    with pytest.raises(DistributedSetupError, match=r"LOCAL_RANK=1 but only 1 CUDA GPU\(s\)"):
        setup("nccl")


# --- spawn: what can be sent to a child process ---------------------------------------------------


def _worker(rank: int) -> None:  # pragma: no cover - never started
    pass


def test_spawn_rejects_a_notebook_function(monkeypatch: pytest.MonkeyPatch):
    """In a notebook ``__main__`` has no ``__file__``; a worker defined there cannot reach the children."""
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))
    monkeypatch.setattr(_worker, "__module__", "__main__")
    with pytest.raises(ValueError, match="importable module, e.g. devicekit_labs.workers") as info:
        spawn(_worker, nprocs=2)
    assert "Can't get attribute '_worker' on <module '__main__'" in str(info.value)


def test_spawn_accepts_a_script_function(monkeypatch: pytest.MonkeyPatch):
    """``python train.py`` is fine: spawn re-imports the script in each child."""
    script = types.ModuleType("__main__")
    script.__file__ = "/somewhere/train.py"
    monkeypatch.setitem(sys.modules, "__main__", script)
    monkeypatch.setattr(_worker, "__module__", "__main__")
    distributed._check_importable(_worker)  # no error


def test_spawn_rejects_lambdas_and_nested_functions():
    def nested(rank: int) -> None:  # pragma: no cover - never started
        pass

    for fn in (lambda rank: None, nested):
        with pytest.raises(ValueError, match="cannot be pickled"):
            spawn(fn)
    with pytest.raises(ValueError, match="nprocs"):
        spawn(dist_workers.all_reduce_demo, nprocs=0)


# --- real processes -------------------------------------------------------------------------------


def test_two_process_ddp_keeps_parameters_identical(ddp_run):
    """The run of conftest.py's ``ddp_run`` (spawn, two processes, gloo), shared with test_lab08.py."""
    results = ddp_run["results"]
    assert [r["rank"] for r in results] == [0, 1]
    for r in results:
        assert (r["backend"], r["device"], r["world_size"], r["identical"]) == ("gloo", "cpu", 2, True)
    first, second = results
    assert first["digest_before_ddp"] != second["digest_before_ddp"]  # different seeds per rank ...
    assert first["losses"] != second["losses"]  # ... and different data per rank ...
    assert first["checksum"] == second["checksum"]  # ... yet identical parameters after the all-reduce
    assert first["digest"] == second["digest"]
    assert ddp_run["parent_in_group"] is False  # the parent never joined a group


@pytest.mark.integration
def test_two_process_all_reduce_through_a_queue():
    queue = torch.multiprocessing.get_context("spawn").SimpleQueue()
    spawn(dist_workers.all_reduce_demo, nprocs=2, args=(2, queue))
    results = sorted((queue.get() for _ in range(2)), key=lambda r: r["rank"])
    assert [(r["before"], r["after"]) for r in results] == [(1.0, 3.0), (2.0, 3.0)]
    assert all(r["expected"] == 3.0 and r["backend"] == "gloo" for r in results)


@pytest.mark.integration
def test_spawn_tries_another_port_when_its_port_was_taken(monkeypatch: pytest.MonkeyPatch, tmp_path):
    """Labs run side by side (CI, the GPU check): the port spawn() picked can be taken before rank 0 binds.
    One rank is enough: it is rank 0 that binds the store (one process per attempt instead of two)."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        ports = iter([taken.getsockname()[1]])
        real_free_port = distributed._free_port
        monkeypatch.setattr(distributed, "_free_port", lambda: next(ports, None) or real_free_port())
        spawn(dist_workers.all_reduce_demo, nprocs=1, args=(1, tmp_path))
    assert next(ports, "used") == "used", "spawn never tried the taken port"
    assert [r["after"] for r in dist_workers.collect_results(tmp_path)] == [1.0]


@pytest.mark.integration
def test_spawn_does_not_retry_a_port_the_caller_chose(tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(torch.multiprocessing.ProcessRaisedException, match="EADDRINUSE"):
            spawn(
                dist_workers.all_reduce_demo, nprocs=1, args=(1, tmp_path), master_port=taken.getsockname()[1]
            )


def test_worker_called_directly_in_one_process():
    """The same worker runs without spawn as a one-process group (how a notebook can step through it)."""
    result = dist_workers.ddp_train_step(0, 1)
    assert result["identical"] and result["world_size"] == 1
    assert not dist.is_initialized()


def test_batchnorm_worker_in_one_process():
    """Lesson 8's BatchNorm worker: with one rank the broadcast changes nothing, and SyncBatchNorm is still
    refused on the CPU, by DDP and by the layer (its check comes before it looks at the world size)."""
    result = dist_workers.batchnorm_demo(0, 1)
    assert result["converted"] == "SyncBatchNorm" and result["eval_forward_ok"]
    assert result["ddp_error"] == "ValueError: SyncBatchNorm layers only work with GPU modules"
    assert result["forward_error"].startswith("ValueError: SyncBatchNorm expected input tensor to be on GPU")
    assert all(s["same_at_start"] and s["same_after"] for s in result["stats"].values())
    assert not dist.is_initialized()


def test_resume_worker_in_one_process(tmp_path):
    """Lesson 8's resume worker reads a checkpoint recorded on cuda:0 through its map_location function."""
    from devicekit_labs.lab06 import save_as_if_on

    net = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    net(torch.randn(8, 4)).square().mean().backward()
    optimizer.step()
    path = tmp_path / "checkpoint.pt"
    momentum = [s["momentum_buffer"] for s in optimizer.state_dict()["state"].values()]
    checkpoint = {"model": net.state_dict(), "optimizer": optimizer.state_dict()}
    save_as_if_on(checkpoint, path, "cuda:0", [*net.state_dict().values(), *momentum])
    result = dist_workers.resume_demo(0, 1, None, str(path))
    for way in ("rank 0 only", "every rank"):
        assert result[way]["locations"] == ["cuda:0"] and result[way]["has_momentum"]
        assert result[way]["same_after_step"]  # one rank agrees with itself
    assert not dist.is_initialized()


@pytest.mark.integration
def test_spawn_from_a_real_notebook_kernel(tmp_path):
    """The case spawn() is for: a Jupyter kernel, whose ``__main__`` the children cannot import."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    cells = [
        "from devicekit_labs import workers as dist_workers\n"
        "from devicekit.distributed import spawn\n"
        f"spawn(dist_workers.ddp_train_step, nprocs=2, args=(2, {str(tmp_path)!r}))",
        "def worker(rank):\n    pass\n\nspawn(worker)",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True).execute()
    assert not any(o.output_type == "error" for o in nb.cells[0].outputs), nb.cells[0].outputs
    results = dist_workers.collect_results(tmp_path)
    assert len(results) == 2 and results[0]["digest"] == results[1]["digest"]
    errors = [o for o in nb.cells[1].outputs if o.output_type == "error"]
    assert len(errors) == 1 and errors[0].ename == "ValueError"
    assert "devicekit_labs.workers" in errors[0].evalue


# --- GPU only -------------------------------------------------------------------------------------


@needs_cuda
def test_single_process_nccl_on_gpu():
    info = setup()
    assert info.backend == "nccl" and info.device == torch.device("cuda", 0)
    assert torch.cuda.current_device() == 0
    t = torch.ones(2, device=info.device)
    dist.all_reduce(t)
    assert t.device == info.device


@pytest.mark.integration
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA GPUs")
def test_two_process_nccl_all_reduce(tmp_path):
    spawn(dist_workers.all_reduce_demo, nprocs=2, args=(2, tmp_path, "nccl"))
    results = dist_workers.collect_results(tmp_path)
    assert [(r["device"], r["after"]) for r in results] == [("cuda:0", 3.0), ("cuda:1", 3.0)]


@pytest.mark.integration
def test_spawn_is_not_failed_by_a_crash_in_teardown_after_the_work(tmp_path):
    """A child whose function returned ends before interpreter teardown, where PyTorch can abort."""
    import finalization_workers

    spawn(finalization_workers.finish_then_abort_at_teardown, nprocs=2, args=(str(tmp_path),))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rank0.txt", "rank1.txt"]


@pytest.mark.integration
def test_spawn_still_reports_a_worker_that_raised(tmp_path):
    import finalization_workers

    with pytest.raises(torch.multiprocessing.ProcessRaisedException, match="failed on purpose"):
        spawn(finalization_workers.fail_after_arming, nprocs=2, args=(str(tmp_path),))


@pytest.mark.integration
def test_spawned_processes_see_the_callers_environment_and_folder_of_now(tmp_path, monkeypatch):
    """Each spawn() starts its children afresh from the caller as it is at that call (``spawn`` start
    method): a variable set in a notebook cell after an earlier spawn() reaches the children's code
    from its first line, the import of the worker's module included, and so does a new working folder.
    (A forkserver would hand them the environment of its own start, taken at the first call.)"""
    import json

    import finalization_workers

    name = finalization_workers.READ_AT_IMPORT
    monkeypatch.delenv(name, raising=False)
    spawn(finalization_workers.report_environment, nprocs=1, args=(str(tmp_path / "first"), name))
    monkeypatch.setenv(name, "set later")
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    spawn(finalization_workers.report_environment, nprocs=2, args=(str(tmp_path / "second"), name))
    first = json.loads((tmp_path / "first" / "rank0.json").read_text())
    second = [json.loads((tmp_path / "second" / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert first["value"] is None and first["at_import"] is None
    assert [(s["value"], s["at_import"]) for s in second] == [("set later", "set later")] * 2
    assert {s["cwd"] for s in second} == {str(tmp_path / "here")}
