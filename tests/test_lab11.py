"""Lab 11 (sharded training): every mutation case of tests/mutations/lab11.py gets the verdict it should, the
observations are plain data, the workers really shard over two processes and resume on another world size,
and nothing is left running afterwards: no child process, no process group."""

from __future__ import annotations

import io
import multiprocessing
import os
import subprocess
import sys
import warnings

import nbformat
import pytest
import torch
import torch.distributed as dist
from mutations import lab11 as MUTATIONS
from mutations import layered

import devicekit_labs
from course_tools.paths import SOLUTIONS
from devicekit.distributed import spawn, teardown
from devicekit_labs import exercises_for, run
from devicekit_labs import sharded_workers as sw

LAB = "11-sharded"

WRONG = [(key, name, answer, hint) for key, cases in MUTATIONS.WRONG.items() for name, answer, hint in cases]
RIGHT = [(key, name, answer) for key, cases in MUTATIONS.RIGHT.items() for name, answer in cases]

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="this PyTorch build has no torch.distributed")


@pytest.fixture(autouse=True)
def no_group_left():
    teardown()
    yield
    assert not dist.is_initialized(), "a check left a process group behind"


def _run(key, answer):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run(LAB, key, answer)


def test_three_exercises_in_order_and_the_taught_bug_first():
    assert [e.key for e in exercises_for(LAB)] == ["materialize", "load-full", "resume"]
    assert MUTATIONS.WRONG["materialize"][0][1] is MUTATIONS.materialize_with_to
    assert MUTATIONS.WRONG["load-full"][0][1] is MUTATIONS.load_full_onto_own_gpu
    assert MUTATIONS.WRONG["resume"][0][1] is MUTATIONS.resume_with_optimizer_state_dict


@pytest.mark.parametrize(
    ("key", "name", "answer", "hint"), layered(WRONG, LAB), ids=[f"{k}:{n}" for k, n, _, _ in WRONG]
)
def test_wrong_answers_fail_with_their_hint(key, name, answer, hint):
    result = _run(key, answer)
    assert not result.passed, f"{name} passed"
    assert hint in result.en, result.en
    assert any("\u4e00" <= ch <= "\u9fff" for ch in result.zh), result.zh


@pytest.mark.parametrize(
    ("key", "name", "answer"), layered(RIGHT, LAB), ids=[f"{k}:{n}" for k, n, _ in RIGHT]
)
def test_right_answers_pass(key, name, answer):
    result = _run(key, answer)
    assert result.passed, result.en


@pytest.mark.parametrize(
    ("key", "answer"),
    layered(
        [
            ("materialize", MUTATIONS.materialize_with_to),
            ("load-full", MUTATIONS.load_full_onto_own_gpu),
            ("load-full", MUTATIONS.load_full_cpu_then_each_to_gpu),
            ("load-full", MUTATIONS.load_full_whole_dict_to_gpu_then_distribute),
            ("resume", MUTATIONS.resume_with_optimizer_state_dict),
        ],
        LAB,
    ),
)
def test_observations_are_plain_data_and_the_judge_alone_decides(key, answer):
    exercise = next(e for e in devicekit_labs.exercises_for(LAB) if e.key == key)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seen = exercise.probe(answer)
    buffer = io.BytesIO()
    torch.save(seen, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=True)
    with pytest.raises(devicekit_labs.Fail):
        exercise.judge(loaded)


def test_a_recorded_rank_reports_where_its_state_dict_was_and_its_gpu_peak():
    # review 47, F1: a CPU read moved whole to the GPU shows in the devices of the dict handed to DCP and in
    # the GPU's peak; a right answer keeps the dict on the CPU and allocates nothing on the GPU
    exercise = next(e for e in devicekit_labs.exercises_for(LAB) if e.key == "load-full")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wrong = exercise.probe(MUTATIONS.load_full_cpu_then_each_to_gpu)
        right = exercise.probe(MUTATIONS.load_full_ok)
    assert wrong["whole_bytes"] == right["whole_bytes"] > 0
    for bad, good in zip(wrong["recorded"], right["recorded"], strict=True):
        dcp_bad = [c for c in bad["calls"] if c["call"] == "set_model_state_dict"]
        dcp_good = [c for c in good["calls"] if c["call"] == "set_model_state_dict"]
        assert [c["devices"] for c in dcp_bad] == [[bad["device"]]]
        assert [c["devices"] for c in dcp_good] == [["cpu"]]
        assert bad["gpu_peak_bytes"] >= wrong["whole_bytes"] and good["gpu_peak_bytes"] == 0


@pytest.mark.integration  # the resume check starts two FSDP2 ranks first
def test_the_resume_check_reports_a_checkpoint_exception_instead_of_escaping():
    # DCP's CheckpointException is a BaseException: unwrapped it would pass through `observe`
    from torch.distributed.checkpoint.api import CheckpointException

    assert not issubclass(CheckpointException, Exception)
    result = _run("resume", MUTATIONS.resume_wrong_key)
    assert "CheckpointException: RuntimeError: Missing key in checkpoint state_dict" in result.en


@pytest.mark.integration
def test_workers_shard_train_and_resume_on_another_world_size(tmp_path):
    """Two ranks hold different rows and learn; one rank and two ranks resume the very same weights."""
    spawn(sw.mesh_demo, nprocs=2, args=(2, tmp_path / "mesh"))
    mesh = sw.collect_results(tmp_path / "mesh")
    assert [r["local_rows"] for r in mesh] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert all(r["gathered_equal"] and r["mesh_device_type"] == r["local_device"].split(":")[0] for r in mesh)
    assert all("got mixed torch.Tensor and DTensor" in r["errors"]["plain"] for r in mesh)
    assert all("is not on the expected device" in r["errors"]["meta"] for r in mesh)

    ckpt = tmp_path / "ckpt"
    spawn(sw.fsdp_train, nprocs=2, args=(2, tmp_path / "train", 4, str(ckpt)))
    trained = sw.collect_results(tmp_path / "train")
    assert all(r["losses"][-1] < r["losses"][0] for r in trained)
    assert trained[0]["digest"] == trained[1]["digest"] != ""
    assert trained[0]["shard_digest"] != trained[1]["shard_digest"]
    assert all("materialized from meta device" in r["meta_forward_error"] for r in trained)
    assert all(r["local_shape"] == [8, 4] and r["global_shape"] == [16, 4] for r in trained)

    spawn(sw.fsdp_resume, nprocs=1, args=(1, tmp_path / "one", str(ckpt)))
    (one,) = sw.collect_results(tmp_path / "one")
    assert one["local_shape"] == [16, 4]
    assert (one["digest"], one["optim_digest"]) == (trained[0]["digest"], trained[0]["optim_digest"])
    assert one["optim_step"] == 4.0 and one["full_devices"] == [one["device"]]
    assert not dist.is_initialized()


@pytest.mark.integration
def test_nothing_is_left_running_after_the_lab(tmp_path):
    """The lab's runs (workers and the resume check) leave no child process and no process group.

    The spawned workers are joined; `active_children()` also reaps any that had ended, so an empty list
    means none is alive and none is a zombie of this process. The check starts its own two ranks, so it
    counts as well.
    """
    spawn(sw.mesh_demo, nprocs=2, args=(2, tmp_path / "mesh"))
    assert _run("resume", MUTATIONS.resume_ok).passed
    assert multiprocessing.active_children() == []
    assert not dist.is_initialized()
    from torch.distributed import distributed_c10d

    assert distributed_c10d._world.pg_map == {}, "a process group object survived teardown"


@pytest.mark.integration
def test_the_resume_checks_checkpoint_folder_is_removed_when_the_process_ends(tmp_path):
    """The check's two ranks save into a temporary folder that lives as long as the process (the check
    resumes from it each time) and goes with it: running the lab leaves nothing behind in ``/tmp``."""
    code = (
        "import os; from devicekit_labs import lab11; saved = lab11.saved_checkpoint(); "
        "print(os.path.isdir(saved['dcp']))"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr[-3000:]
    assert not list(tmp_path.glob("lab11-check-*")), "the checkpoint folder outlived the process"


def test_the_notebook_ends_by_checking_that_nothing_is_left():
    nb = nbformat.read(SOLUTIONS / f"{LAB}.ipynb", as_version=4)
    last_code = [c for c in nb.cells if c.cell_type == "code"][-1].source
    assert "dist.is_initialized()" in last_code and "multiprocessing.active_children()" in last_code
    outputs = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "child processes still alive: []" in outputs and "process group initialised: False" in outputs
