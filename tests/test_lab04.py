"""Lab 04 (data pipelines): the self-checks accept correct answers, reject typical wrong ones with a hint in
both languages. (tests/test_grade.py grades every lab: the solution in full, the untouched lab at zero.)"""

from __future__ import annotations

import json

import pytest
import torch
from mutations import lab04 as cases
from mutations import named

from check_outcome import expect
from course_tools.paths import ROOT
from devicekit_labs import exercises_for, run
from devicekit_labs.machine import probe_devices, probe_gpus

LAB = cases.LAB

#: The cases this lab's own test asserts, by name; each answer and its hint are in tests/mutations/lab04.py.
CASES = named(
    cases,
    [
        ("ragged-batch", "pad_sequence + to_device(skip_keys)"),
        ("ragged-batch", "lengths moved with the data"),
        ("ragged-batch", "labels left on the CPU"),
        ("ragged-batch", "lengths int32"),
        ("ragged-batch", "padded with -1"),
        ("ragged-batch", "a list of token tensors"),
        ("ragged-batch", "untouched stub"),
        ("dataclass-batch", "to_device"),
        ("dataclass-batch", "labels forgotten"),
        ("dataclass-batch", "a dict back"),
        ("dataclass-batch", "changed in place"),
        ("dataclass-batch", "untouched stub"),
        ("non-blocking", "a function"),
        ("non-blocking", "pinned temporary judged a bug"),
        ("non-blocking", "nothing judged a bug"),
        ("non-blocking", "strings"),
        ("non-blocking", "keys missing"),
        ("non-blocking", "untouched stub"),
    ],
)


@pytest.mark.parametrize(("key", "answer", "hint"), CASES)
def test_checks(key, answer, hint):
    expect(run(LAB, key, answer), hint)


def test_the_ragged_check_really_runs_pack_padded_sequence_on_a_gpu():
    # The truth behind the lengths rule is PyTorch's, on a GPU (real or simulated): lengths on cuda:0 are
    # refused with the message recorded on an H200, lengths on the CPU are packed there
    from torch.nn.utils.rnn import pack_padded_sequence

    recorded = json.loads((ROOT / "results" / "cuda-messages.json").read_text())["cases"]
    with probe_gpus():
        device = probe_devices()[0]
        data = torch.zeros(2, 3, 4, device=device)
        with pytest.raises(RuntimeError) as info:
            pack_padded_sequence(data, torch.tensor([3, 1], device=device), batch_first=True)
        packed = pack_padded_sequence(data, torch.tensor([3, 1]), batch_first=True)
        assert packed.data.device == device and packed.batch_sizes.device.type == "cpu"
    assert str(info.value) == recorded["pack-padded-cuda-lengths"]["message"]


def test_hints_never_reveal_the_non_blocking_answers():
    result = run(LAB, "non-blocking", lambda: {k: True for k in "abcde"})
    for key in "abcde":
        assert f"({key})" not in result.en and f"'{key}'" not in result.en.split("answers", 1)[-1]


def test_exercises_are_numbered_in_notebook_order():
    assert [e.key for e in exercises_for(LAB)] == ["ragged-batch", "dataclass-batch", "non-blocking"]
