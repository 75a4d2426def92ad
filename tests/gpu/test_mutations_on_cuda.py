"""The labs' mutation cases on a real GPU: the same wrong answers rejected, the right ones passed.

Elsewhere the probes run on two simulated GPUs (`devicekit_labs.machine.probe_gpus`); on a CUDA machine
they run on the real ones, so this is the check that the simulated verdicts are the real ones. A wrong
answer that only a second GPU reveals (its hint names ``cuda:1``: ``x.cuda()`` for ``x.to(device)``) is
skipped on a machine with one GPU, where the check cannot tell them apart either (simulated and real CUDA
tensors must not meet, so no second GPU is simulated beside a real one). Each outcome is recorded
(``gpu_record``) for ``results/gpu-check.json``, whether the assertion holds or not.
"""

from __future__ import annotations

import pytest
import torch
from mutations import right_cases, wrong_cases

from devicekit_labs import run
from devicekit_labs.machine import probe_devices

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA GPU (torch.cuda.is_available() is False)"
)


def _ids(cases) -> list[str]:
    return [f"{c[0]}:{c[1]}:{c[2]}" for c in cases]


def test_the_probes_plant_on_the_real_gpus():
    assert [d.type for d in probe_devices()] == ["cuda"] * min(torch.cuda.device_count(), 2)


@pytest.mark.parametrize(("lab", "key", "name", "answer", "hint"), wrong_cases(), ids=_ids(wrong_cases()))
def test_a_wrong_answer_is_rejected_on_the_gpu(gpu_record, lab, key, name, answer, hint):
    if "cuda:1" in hint and torch.cuda.device_count() < 2:
        pytest.skip("only a second GPU tells this answer apart, and this machine has one")
    result = run(lab, key, answer)
    gpu_record("mutations-wrong", f"{lab}:{key}:{name}", {"passed": result.passed, "en": result.en})
    assert not result.passed, f"{name!r} was accepted on the GPU"
    assert hint in result.en, result.en


@pytest.mark.parametrize(("lab", "key", "name", "answer"), right_cases(), ids=_ids(right_cases()))
def test_a_right_answer_passes_on_the_gpu(gpu_record, lab, key, name, answer):
    result = run(lab, key, answer)
    gpu_record("mutations-right", f"{lab}:{key}:{name}", {"passed": result.passed, "en": result.en})
    assert result.passed, result.en
