"""The labs' mutation cases on a real accelerator: the same wrong answers rejected, the right ones passed.

On a CUDA machine ``mismatch_device()`` is the GPU, so every probe plants its "other device" inputs there:
the configurations meta cannot run (a tensor copied from the GPU to the CPU, ``.item()``, the reverse
split of lab 2's two-stage model) run for real, and a right answer that only passed on the CPU runner
because meta cannot show a value is now checked on values. Each outcome is recorded (``gpu_record``) for
``results/gpu-check.json``, whether the assertion holds or not.
"""

from __future__ import annotations

import pytest
import torch
from mutations import right_cases, wrong_cases

from devicekit import mismatch_device
from devicekit_labs import run

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA GPU (torch.cuda.is_available() is False)"
)


def _ids(cases) -> list[str]:
    return [f"{c[0]}:{c[1]}:{c[2]}" for c in cases]


def test_the_other_device_is_the_gpu():
    assert mismatch_device().type == "cuda"


@pytest.mark.parametrize(("lab", "key", "name", "answer", "hint"), wrong_cases(), ids=_ids(wrong_cases()))
def test_a_wrong_answer_is_rejected_on_the_gpu(gpu_record, lab, key, name, answer, hint):
    result = run(lab, key, answer)
    gpu_record("mutations-wrong", f"{lab}:{key}:{name}", {"passed": result.passed, "en": result.en})
    assert not result.passed, f"{name!r} was accepted on the GPU"
    assert hint in result.en, result.en


@pytest.mark.parametrize(("lab", "key", "name", "answer"), right_cases(), ids=_ids(right_cases()))
def test_a_right_answer_passes_on_the_gpu(gpu_record, lab, key, name, answer):
    result = run(lab, key, answer)
    gpu_record("mutations-right", f"{lab}:{key}:{name}", {"passed": result.passed, "en": result.en})
    assert result.passed, result.en
