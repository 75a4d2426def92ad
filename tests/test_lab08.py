"""Lab 08 (multi-GPU): the checks accept correct answers and reject typical wrong ones with a hint in both
languages; the workers really run DDP on two CPU processes; nothing is left running afterwards.
(tests/test_grade.py grades every lab: the solution in full, the untouched lab at zero.)"""

from __future__ import annotations

import nbformat
import pytest
import torch
import torch.distributed as dist
from mutations import case, layered, named
from mutations import lab08 as cases

from check_outcome import expect
from course_tools.paths import SOLUTIONS
from devicekit.distributed import teardown
from devicekit_labs import exercises_for, run
from devicekit_labs import workers as dist_workers

LAB = cases.LAB

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="this PyTorch build has no torch.distributed")


@pytest.fixture(autouse=True)
def no_group_left():
    teardown()
    yield
    assert not dist.is_initialized(), "a check left a process group behind"


#: The cases this lab's own tests assert, by name; each answer and its hint are in tests/mutations/lab08.py.
RANK_PLAN = [
    ("rank-plan", "torch.device objects"),
    ("rank-plan", "device strings, keys in another order"),
    ("rank-plan", "GPU picked by RANK"),
    ("rank-plan", "nccl without GPUs"),
    ("rank-plan", "a tuple, not a dict"),
    ("rank-plan", "untouched stub"),
]
WRAP = [
    ("wrap-model", "model.to(info.device)"),
    ("wrap-model", "device_ids for a CPU module"),
    ("wrap-model", "returns the model unwrapped"),
    ("wrap-model", "wraps a new model"),
    ("wrap-model", "the one-GPU script"),
    ("wrap-model", "untouched stub"),
]
#: fail-fast's settings that its check refuses before it starts any process
BAD_SETTINGS = [
    ("fail-fast", "the 30-minute default"),
    ("fail-fast", "timeout as text"),
    ("fail-fast", "a probe that does not exist"),
    ("fail-fast", "wrong keys"),
    ("fail-fast", "untouched stub"),
]


@pytest.mark.parametrize(("key", "answer", "hint"), named(cases, RANK_PLAN + WRAP))
def test_checks(key, answer, hint):
    expect(run(LAB, key, answer), hint)


def test_wrap_model_is_asked_for_rank_1_and_a_second_machine():
    """The one-GPU script is right for rank 0 of a GPU job; ranks 1 and 5 (local rank 1, on the second GPU,
    real or simulated) show the bug."""
    from devicekit_labs.lab08 import _wrap_cases
    from devicekit_labs.machine import probe_gpus

    with probe_gpus():
        if torch.cuda.device_count() < 2:
            pytest.skip("one real GPU: the check has no local rank 1 to ask about")
        asked = {(i.rank, i.local_rank, str(i.device)) for i in _wrap_cases()}
    assert asked >= {(0, 0, "cpu"), (0, 0, "cuda:0"), (1, 1, "cuda:1"), (5, 1, "cuda:1")}

    answer, hint = case(cases, "wrap-model", "the one-GPU script on GPU ranks only")
    expect(run(LAB, "wrap-model", answer), hint)


def test_wrap_model_leaves_the_current_gpu_as_it_was():
    """An answer that calls torch.cuda.set_device (right on a GPU) changes nothing in the notebook, whose
    simulation (lab 8: two GPUs) the probe runs in."""
    import devicekit

    with devicekit.simulate(gpus=2):
        assert run(LAB, "wrap-model", cases.wrap_set_device_first).passed
        assert torch.cuda.current_device() == 0


def test_wrap_model_keeps_a_group_that_was_already_there():
    from devicekit.distributed import setup

    info = setup("gloo")
    assert run(LAB, "wrap-model", cases.wrap_ok).passed
    assert dist.is_initialized() and setup() is info
    teardown()


@pytest.mark.parametrize(("key", "answer", "hint"), named(cases, BAD_SETTINGS))
def test_fail_fast_rejects_bad_settings_without_starting_processes(key, answer, hint):
    expect(run(LAB, key, answer), hint)


@pytest.mark.integration
def test_fail_fast_runs_two_real_processes(monkeypatch):
    """The probe that names the missing rank passes; a plain all_reduce times out without naming it."""
    import devicekit_labs.lab08

    # 2.0 s, as the lab's answer and the mutation cases: the check launches each setting once per process
    assert run(LAB, "fail-fast", cases.fail_fast_ok).passed
    answer, hint = case(cases, "fail-fast", "all_reduce never names the rank")
    expect(run(LAB, "fail-fast", answer), hint)

    def launched_again(*args, **kwargs):
        raise AssertionError("the same setting launched its processes again instead of reusing its run")

    monkeypatch.setattr(devicekit_labs.lab08, "spawn", launched_again)
    assert run(LAB, "fail-fast", cases.fail_fast_int_seconds).passed


def test_straggler_worker_validates_its_arguments():
    with pytest.raises(ValueError, match="probe"):
        dist_workers.straggler_demo(0, 1, probe="nope")
    with pytest.raises(ValueError, match="positive"):
        dist_workers.straggler_demo(0, 1, timeout_s=0)
    assert not dist.is_initialized()


def test_nothing_left_running_after_the_lab_workers(ddp_run):
    """Every process the run starts has exited and been reaped; no process group survives anywhere.

    The run is conftest.py's ``ddp_run`` (shared with test_distributed.py): it spawns the workers without
    joining, joins them with a deadline and records what became of each process.
    """
    assert ddp_run["alive"] == [False, False] and ddp_run["exitcodes"] == [0, 0]
    # reaped: right after the join, the kernel no longer knew them as children of their parent
    assert ddp_run["reaped"] == [True, True]
    results = ddp_run["results"]
    assert [r["rank"] for r in results] == [0, 1] and results[0]["digest"] == results[1]["digest"]
    assert ddp_run["parent_in_group"] is False
    assert not dist.is_initialized()


def test_the_notebook_ends_by_checking_that_nothing_is_left():
    nb = nbformat.read(SOLUTIONS / f"{LAB}.ipynb", as_version=4)
    last_code = [c for c in nb.cells if c.cell_type == "code"][-1].source
    assert "dist.is_initialized()" in last_code and "multiprocessing.active_children()" in last_code
    outputs = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "child processes still alive: []" in outputs and "process group initialised: False" in outputs


def test_three_exercises_in_order():
    assert [e.key for e in exercises_for(LAB)] == ["rank-plan", "wrap-model", "fail-fast"]


# --- the two-part check: observations are plain data, the judge decides from them alone -------------------


def _through_bytes(observations):
    import io

    buffer = io.BytesIO()
    torch.save(observations, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


@pytest.mark.parametrize("key", layered([(e.key,) for e in exercises_for(LAB)], LAB))
def test_observations_survive_bytes_and_the_judge_alone_decides(key):
    """As the grader does it: the probe's data crosses a process boundary as bytes, the judge runs apart."""
    from devicekit_labs import Fail

    (ex,) = [e for e in exercises_for(LAB) if e.key == key]
    assert ex.probe is not None and ex.judge is not None, "a two-part (judged) check"
    ex.judge(_through_bytes(ex.probe(cases.RIGHT[key][0][1])))
    _name, wrong, hint = cases.WRONG[key][0]
    with pytest.raises(Fail) as caught:
        ex.judge(_through_bytes(ex.probe(wrong)))
    assert hint in caught.value.en
