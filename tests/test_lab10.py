"""Lab 10 self-checks: its mutation cases are enough and lead with the taught bug (their verdicts are
asserted by tests/test_mutations.py, which runs every lab's cases), the observations are plain data, and the
probes leave the process as they found it."""

from __future__ import annotations

import contextlib
import io
import warnings

import pytest
import torch
from mutations import lab10 as MUTATIONS

import devicekit
import devicekit_labs
import devicekit_labs.lab10
from devicekit_labs import run

LAB = "10-compile"


def _run(key, answer):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run(LAB, key, answer)


def test_every_exercise_has_enough_cases_and_the_taught_bug_first():
    assert set(MUTATIONS.WRONG) == set(MUTATIONS.RIGHT) == {"rotate", "plain-state-dict"}
    for key in MUTATIONS.WRONG:
        assert len(MUTATIONS.WRONG[key]) >= 4 and len(MUTATIONS.RIGHT[key]) >= 2
    assert MUTATIONS.WRONG["rotate"][0][0] == "matrix without device"
    assert MUTATIONS.WRONG["plain-state-dict"][0][0] == "state_dict as is"


@pytest.mark.parametrize(
    ("key", "answer"),
    [("rotate", MUTATIONS.rotate_matrix_without_device), ("plain-state-dict", MUTATIONS.state_dict_as_is)],
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


def test_the_rotate_probe_restores_the_default_device():
    # the probe sets the default device for some cases, and one wrong answer sets it itself: afterwards
    # the process must be as before, with no default-device mode left on the stack (it would reach
    # every later test in this process)
    before = torch.get_default_device()
    modes_before = len(torch.overrides._get_current_function_mode_stack())
    for answer in (MUTATIONS.rotate_setting_default_device, MUTATIONS.rotate_ok):
        _run("rotate", answer)
        assert torch.get_default_device() == before
        assert len(torch.overrides._get_current_function_mode_stack()) == modes_before
    assert torch.zeros(1).device == before


def test_the_meta_gap_the_rotate_probe_leaves_unjudged_is_real():
    # Dynamo keeps torch.tensor(data, device="meta") as a real tensor, and FakeTensorMode refuses any
    # operation on it, with or without a fake tensor beside it; on a GPU the same code compiles. The probe
    # compiles for meta only because it cannot compile for the simulated GPU, and leaves such a call
    # unjudged (the eager case on cuda:1 has judged the answer's devices).
    for fn in (MUTATIONS.rotate_ok, lambda x: torch.tensor([[0.0, 1.0], [-1.0, 0.0]], device=x.device) * 2):
        torch.compiler.reset()
        with pytest.raises(RuntimeError, match="Please convert all Tensors to FakeTensors"):
            torch.compile(fn, backend="aot_eager")(torch.ones(3, 2, device="meta"))
    torch.compiler.reset()


@contextlib.contextmanager
def _default_device_meta():
    """``torch.set_default_device("meta")`` for the block, put back afterwards."""
    before = torch.get_default_device()
    torch.set_default_device("meta")
    try:
        yield
    finally:
        torch.set_default_device(before)


@pytest.mark.parametrize("meta_default", [_default_device_meta, lambda: torch.device("meta")])
def test_the_meta_gap_is_also_reached_through_the_default_device(meta_default):
    # lesson 10's note (review 47, F5): torch.tensor(...) without device= while meta is the default device
    # meets the same refusal; torch.zeros(...) compiles on meta
    n = torch.ones(2, device="meta")
    try:
        torch.compiler.reset()
        with meta_default(), pytest.raises(RuntimeError, match="Please convert all Tensors to FakeTensors"):
            torch.compile(lambda n: torch.tensor([1.0, 2.0]) * n, backend="aot_eager")(n)
        torch.compiler.reset()
        with meta_default():
            assert torch.compile(lambda n: torch.zeros(2) + n, backend="aot_eager")(n).device.type == "meta"
    finally:
        torch.compiler.reset()
    assert torch.zeros(1).device.type != "meta"


def test_the_rotate_probe_describes_x_before_the_call_in_non_representable_values():
    # an answer that changes x in place must not make its own expectation, and a float64 answer that went
    # through float32 must come back different: 0.1 and 1/3 have no exact binary form
    exercise = next(e for e in devicekit_labs.exercises_for(LAB) if e.key == "rotate")
    seen = exercise.probe(MUTATIONS.rotate_zeroing_its_input)
    first = seen["cases"][0]
    assert not first["compiled"] and first["device"] == "cpu"
    assert first["x"]["values"][0, 0].item() == pytest.approx(0.1)  # as planted, not as left
    assert first["result"]["values"].abs().sum() == 0
    planted = devicekit_labs.lab10.planted_points(torch.float64)
    assert not torch.equal(planted.float().double(), planted)
    eager = [(c["device"], c["default"]) for c in seen["cases"] if not c["compiled"]]
    assert eager == [("cpu", "cpu"), ("cuda:1", "cpu"), ("cpu", "cuda:1")]
    on_gpu = next(c for c in seen["cases"] if c["device"] == "cuda:1")
    assert on_gpu["result"]["values"].abs().sum() == 0, "real values on the second GPU, zeroed by the answer"


def test_the_rotate_probe_compiles_outside_the_simulation_and_leaves_it_as_it_was():
    # torch.compile raises inside a simulation; the probe's compiled cases run outside it, and afterwards
    # the simulation the probe runs in is back: the same machine, torch.compile refused again
    exercise = next(e for e in devicekit_labs.exercises_for(LAB) if e.key == "rotate")
    with devicekit.simulate(gpus=2):
        seen = exercise.probe(MUTATIONS.rotate_ok)
        assert torch.cuda.device_count() == 2 and torch.ones(1, device="cuda:1").device.index == 1
        with pytest.raises(RuntimeError, match="torch.compile is not simulated|不模拟 torch.compile"):
            torch.compile(MUTATIONS.rotate_ok)
    compiled = [c for c in seen["cases"] if c["compiled"]]
    assert [c["device"] for c in compiled] == ["cpu", "cpu", "cpu", "meta"]
    assert all("error" not in c for c in compiled)
    assert compiled[-1].get("not_judged"), "torch.tensor(data, device='meta') under compile: the meta gap"
    exercise.judge(seen)


def test_the_state_dict_probe_compares_with_a_copy_taken_before_the_call():
    exercise = next(e for e in devicekit_labs.exercises_for(LAB) if e.key == "plain-state-dict")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seen = exercise.probe(MUTATIONS.state_dict_zeroing_the_model)
    assert seen["cases"][0]["model_changed"], "the zeroed model differs from its copy"
    assert torch.equal(torch.ones(2), torch.ones(2, dtype=torch.float64)), "why dtypes are compared apart"
    assert seen["cases"][0]["wanted_dtypes"]["1.num_batches_tracked"] == "int64"


@pytest.mark.integration
def test_the_rotate_probe_on_a_simulated_gpu_does_not_import_inductor():
    """Its compiler resets run outside the simulation: inside it, Dynamo's reset would import Inductor to
    reset CUDA graph trees (``torch.cuda.is_available()`` is True there), about 1 s of CPU in every graded
    lab 10 notebook. In a fresh process: this one may have imported Inductor already."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    tests = str(Path(__file__).parent)
    code = (
        "import sys, warnings; warnings.simplefilter('ignore')\n"
        "from devicekit_labs import use_gpus, exercises_for\n"
        "from mutations import lab10\n"
        "use_gpus(1)\n"
        "probe = next(e for e in exercises_for('10-compile') if e.key == 'rotate').probe\n"
        "assert len(probe(lab10.rotate_ok)['cases']) == 7\n"
        "print('torch._inductor.cudagraph_trees' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [tests, os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "False"
