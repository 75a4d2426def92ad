"""Lab 02 (models): the self-checks accept correct answers, reject the typical wrong ones with a hint in both
languages. (tests/test_grade.py grades every lab: the solution in full, the untouched lab at zero.)"""

from __future__ import annotations

import pytest
import torch
from mutations import lab02 as cases
from mutations import named

from check_outcome import expect
from devicekit_labs import exercises_for, run

LAB = cases.LAB

#: The cases this lab's own test asserts, by name; each answer and its hint are in tests/mutations/lab02.py.
CASES = named(
    cases,
    [
        ("mask-buffer", "persistent=False buffer with torch.where"),
        ("mask-buffer", "persistent buffer"),
        ("mask-buffer", "plain tensor attribute"),
        ("mask-buffer", "upper triangle"),
        ("mask-buffer", "an instance instead of the class"),
        ("mask-buffer", "stub"),
        ("module-list", "ModuleList comprehension"),
        ("module-list", "plain Python list"),
        ("module-list", "no relu"),
        ("module-list", "layers a plain list of registered blocks"),
        ("noise-forward", "randn_like"),
        ("noise-forward", "factory without device"),
        ("noise-forward", "output cast to float16"),
        ("noise-forward", "std ignored"),
        ("noise-forward", "no noise at all"),
        ("two-stage", "Module.to in __init__"),
        ("two-stage", "activations never cross"),
        ("two-stage", "both stages on the first device"),
        ("two-stage", "stage1 skipped"),
    ],
)


@pytest.mark.parametrize(("key", "answer", "hint"), CASES)
def test_checks(key, answer, hint):
    expect(run(LAB, key, answer), hint)


def test_the_checks_leave_the_default_device_and_grad_mode_alone():
    run(LAB, "noise-forward", cases.NoiseOnCpu)
    assert torch.get_default_device().type == "cpu"


def test_exercises_are_numbered_in_notebook_order():
    assert [e.key for e in exercises_for(LAB)] == ["mask-buffer", "module-list", "noise-forward", "two-stage"]
