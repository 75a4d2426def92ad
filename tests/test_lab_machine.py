"""The labs' GPUs (`devicekit_labs.machine`, issue 39): a lab's setup cell makes the rest of the notebook
run on simulated GPUs where the machine has none, and every self-check's probe runs on two GPUs, real or
simulated."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch

import devicekit
from devicekit_labs import _REGISTRY, judged, registered
from devicekit_labs.machine import gpus_line, probe_devices, probe_gpus, simulating, with_probe_gpus

NO_GPU = "these tests are about a machine without a GPU"
pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason=NO_GPU)
MIX = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        # English, whatever language this xdist worker's earlier tests left in the environment
        env={**os.environ, "DEVICEKIT_LANG": "en"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_use_gpus_makes_the_rest_of_the_session_a_gpu_machine_and_a_rerun_replaces_it():
    out = _run(
        """
        import torch
        from devicekit.lang import set_language
        from devicekit_labs import use_gpus
        set_language("en")
        print(use_gpus(1))
        print("after 1:", torch.cuda.is_available(), torch.cuda.device_count())
        x = torch.ones(2, device="cuda")
        try:
            x + torch.ones(2)
        except RuntimeError as err:
            print("raised:", err)
        print(use_gpus(2))  # the setup cell run again, asking for two
        print("after 2:", torch.cuda.device_count())
        from devicekit_labs.machine import _leave_entered
        _leave_entered()
        print("left:", torch.cuda.is_available())
        """
    )
    assert "GPUs for this lab: 1 simulated NVIDIA H200" in out
    assert "after 1: True 1" in out
    assert f"raised: {MIX}" in out
    assert "after 2: 2" in out
    assert "left: False" in out
    assert "Exception ignored" not in out


def test_the_kernel_leaves_the_simulation_cleanly_at_exit():
    done = subprocess.run(
        [sys.executable, "-c", "from devicekit_labs import use_gpus; use_gpus(2)"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr[-2000:]


def test_the_setup_line_names_the_simulation_in_both_languages():
    with devicekit.simulate(gpus=2):
        line = gpus_line(2, simulated=True)
    assert line.en.startswith("GPUs for this lab: 2 simulated NVIDIA H200")
    assert line.zh.startswith("本实验使用的 GPU：2 块模拟的 NVIDIA H200（")


def test_a_probe_runs_on_two_gpus_outside_or_inside_a_one_gpu_notebook():
    seen = []

    def probe() -> dict:
        seen.append((simulating(), [str(d) for d in probe_devices()]))
        return {}

    run = with_probe_gpus(probe)
    run()
    with devicekit.simulate(gpus=1):
        run()
    with devicekit.simulate(gpus=3):
        run()  # enough GPUs already: the notebook's own simulation
    assert seen == [(2, ["cuda:0", "cuda:1"]), (2, ["cuda:0", "cuda:1"]), (3, ["cuda:0", "cuda:1"])]
    assert simulating() == 0 and not torch.cuda.is_available()


def test_probe_gpus_leaves_nothing_behind_when_the_probe_raises():
    with pytest.raises(ValueError), probe_gpus():
        raise ValueError("the learner's code failed")
    assert simulating() == 0 and not torch.cuda.is_available()


def test_judged_probes_run_on_the_simulated_gpus_unless_told_not_to():
    lab = "99-machine-test"

    @judged(lab, "on-gpus", 1, "on GPUs", "在 GPU 上")
    def probe_on(_answer) -> dict:
        return {"count": torch.cuda.device_count() if torch.cuda.is_available() else 0}

    @probe_on.judge
    def judge_on(seen: dict) -> None:
        assert seen["count"] == 2

    @judged(lab, "as-is", 2, "as it is", "原样", gpus=0)
    def probe_as_is(_answer) -> dict:
        return {"available": torch.cuda.is_available()}

    @probe_as_is.judge
    def judge_as_is(seen: dict) -> None:
        assert seen["available"] is False

    try:
        on, as_is = registered(lab)
        on.run(None)
        as_is.run(None)
        assert on.probe(None) == {"count": 2}
        assert as_is.probe(None) == {"available": False}
    finally:
        for ex in registered(lab):
            _REGISTRY.pop((ex.lab, ex.key))
