"""Lab 03 (how devices propagate): the self-checks accept correct answers, reject the typical wrong ones
with a hint in both languages, the drill's truth agrees with what CUDA recorded. (tests/test_grade.py
grades every lab: the solution in full, the untouched lab at zero.)"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from mutations import hidden_module, named
from mutations import lab03 as cases
from torch.utils.data import DataLoader

from check_outcome import expect
from course_tools.paths import ROOT
from devicekit_labs import exercises_for, run
from devicekit_labs.lab03 import CopyRecorder
from devicekit_labs.machine import probe_devices, probe_gpus

LAB = cases.LAB
_HIDDEN = hidden_module(LAB)
drill_cases, outcome = _HIDDEN.drill_cases, _HIDDEN.outcome
RIGHT = cases.RIGHT_PREDICTIONS
#: Drill item -> the case in results/cuda-messages.json that recorded it on CUDA, and what it recorded.
RECORDED = {
    "b": ("add-0dim-cpu-ok", False),
    "c": ("add-1elem-cpu", True),
    "d": ("cat", True),
    "e": ("stack-0dim", True),
    "g": ("where-cpu-cond", True),
    "h": ("index-cuda-tensor-cpu-indices-ok", False),
    "i": ("mask-cpu-bool", False),
}


#: The cases this lab's own test asserts, by name; each answer and its hint are in tests/mutations/lab03.py.
CASES = named(
    cases,
    [
        ("predict-mixes", "a function"),
        ("predict-mixes", "0-dim CPU tensor predicted to raise"),
        ("predict-mixes", "two predictions wrong"),
        ("predict-mixes", "a boolean answer"),
        ("predict-mixes", "keys missing"),
        ("predict-mixes", "untouched stub"),
        ("lookup", "table moved to the ids"),
        ("lookup", "nothing moved"),
        ("lookup", "ids copied to the CPU and the rows moved back"),
        ("lookup", "the first id only"),
        ("to-numpy", "detach().cpu().numpy()"),
        ("to-numpy", "cpu().detach().numpy()"),
        ("to-numpy", "no copy to the host"),
        ("to-numpy", "t.numpy()"),
        ("to-numpy", "a Python list"),
        ("default-device", "with torch.device(device)"),
        ("default-device", "set_default_device never given back"),
        ("default-device", "model left on the CPU"),
        ("default-device", "nn.Linear(4, 2).to(device)"),
        ("default-device", "drop_last loses items"),
        ("default-device", "untouched stub"),
    ],
)


@pytest.mark.parametrize(("key", "answer", "hint"), CASES)
def test_checks(key, answer, hint):
    expect(run(LAB, key, answer), hint)
    assert torch.get_default_device().type == "cpu", "a check must restore the default device"


def test_the_drill_truth_on_a_gpu_is_the_solution():
    # on this machine's GPUs, or simulated ones: x on cuda:0 and on cuda:1
    with probe_gpus():
        for acc in probe_devices():
            assert {key: outcome(case, acc) for key, case in drill_cases(acc).items()} == RIGHT, acc


def test_the_drill_agrees_with_what_cuda_recorded():
    # the answer key must be what a real GPU did, where results/cuda-messages.json recorded the mix
    recorded = json.loads((ROOT / "results" / "cuda-messages.json").read_text())
    for item, (case, raised) in RECORDED.items():
        assert recorded["cases"][case]["raised"] is raised, case
        assert (RIGHT[item] == "error") is raised, item


def test_hints_never_name_the_wrong_items_nor_count_them():
    for wrong in ({**RIGHT, "c": "x"}, {**RIGHT, "c": "x", "j": "x", "a": "cpu"}):
        result = run(LAB, "predict-mixes", lambda w=wrong: w)
        assert not result.passed
        assert not any(f"'{k}'" in result.en or f"({k})" in result.en for k in RIGHT)
        assert not any(str(n) in result.en.split(":", 1)[1] for n in range(1, 13))


def test_the_copy_recorder_names_the_gpus_the_code_named():
    # the checks of exercises 2 and 4 tell copies apart by device: on simulated GPUs too, every way of
    # copying (to, cuda, cpu, tolist, item) is recorded with the cuda:N the code named
    with probe_gpus():
        gpu = probe_devices()[-1]
        ids = torch.tensor([3, 1], device=gpu)
        with CopyRecorder() as recorder:
            torch.zeros(2).to(gpu)
            ids.cpu()
            ids.tolist()
            ids[0].item()
        assert recorder.copies == [("cpu", str(gpu)), (str(gpu), "cpu"), (str(gpu), "cpu"), (str(gpu), "cpu")]
    assert isinstance(torch.ones(2).detach().cpu().numpy(), np.ndarray)


def test_a_global_gpu_default_breaks_the_shuffling_dataloader_with_cudas_message():
    # What lab 3 shows: the global default reaches RandomSampler's randperm, which refuses its CPU generator
    recorded = json.loads((ROOT / "results" / "cuda-messages.json").read_text())["cases"]
    with probe_gpus():
        torch.set_default_device(probe_devices()[0])
        try:
            with pytest.raises(RuntimeError) as info:
                next(iter(DataLoader(list(range(8)), batch_size=4, shuffle=True)))
        finally:
            torch.set_default_device(None)
    assert str(info.value) == recorded["randperm-default-device-cuda"]["message"]


def test_exercises_are_numbered_in_notebook_order():
    assert [e.key for e in exercises_for(LAB)] == ["predict-mixes", "lookup", "to-numpy", "default-device"]
