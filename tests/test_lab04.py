"""Lab 04 (data pipelines): the self-checks accept correct answers, reject typical wrong ones with a hint in
both languages. (tests/test_grade.py grades every lab: the solution in full, the untouched lab at zero.)"""

from __future__ import annotations

import json

import pytest
import torch
from torch.nn.utils.rnn import pad_sequence

from check_outcome import expect
from course_tools.paths import ROOT
from devicekit import to_device
from devicekit_labs import exercises_for, run
from devicekit_labs.lab04 import ImageBatch
from devicekit_labs.machine import probe_devices, probe_gpus

LAB = "04-data"


def _stub(*args):
    raise NotImplementedError


def _collate(samples):
    return {
        "tokens": pad_sequence([s["tokens"] for s in samples], batch_first=True),
        "lengths": torch.tensor([len(s["tokens"]) for s in samples]),
        "labels": torch.tensor([s["label"] for s in samples]),
    }


def ragged_ok(samples, device):
    return to_device(_collate(samples), device, skip_keys=["lengths"])


def ragged_lengths_moved(samples, device):
    return to_device(_collate(samples), device)


def ragged_labels_forgotten(samples, device):
    batch = _collate(samples)
    return {**to_device(batch, device, skip_keys=["lengths"]), "labels": batch["labels"]}


def ragged_int32_lengths(samples, device):
    batch = ragged_ok(samples, device)
    return {**batch, "lengths": batch["lengths"].int()}


def ragged_right_padded_wrong(samples, device):
    batch = _collate(samples)
    batch["tokens"] = pad_sequence([s["tokens"] for s in samples], batch_first=True, padding_value=9)
    return to_device(batch, device, skip_keys=["lengths"])


def dataclass_in_place(batch, device):
    object.__setattr__(batch, "images", batch.images.to(device))
    object.__setattr__(batch, "labels", batch.labels.to(device))
    return batch


CASES = [
    ("ragged-batch", ragged_ok, None),
    ("ragged-batch", ragged_lengths_moved, "1-D int64 tensor on the CPU"),
    ("ragged-batch", ragged_labels_forgotten, "'labels' on cpu"),
    ("ragged-batch", ragged_int32_lengths, "1-D int32 tensor"),
    ("ragged-batch", ragged_right_padded_wrong, "padded with 0"),
    ("ragged-batch", lambda s, d: [t["tokens"] for t in s], "expected a dict"),
    ("ragged-batch", _stub, "not done yet"),
    ("dataclass-batch", lambda b, d: to_device(b, d), None),
    ("dataclass-batch", lambda b, d: ImageBatch(b.images.to(d), b.labels, b.names), "Labels are the tensor"),
    ("dataclass-batch", lambda b, d: (b.images.to(d), b.labels.to(d), b.names), "expected an ImageBatch"),
    ("dataclass-batch", dataclass_in_place, "the input batch changed"),
    ("dataclass-batch", _stub, "not done yet"),
    ("non-blocking", lambda: {"a": False, "b": True, "c": False, "d": True, "e": False}, None),
    (
        "non-blocking",
        lambda: {"a": True, "b": True, "c": False, "d": True, "e": False},
        "not every prediction holds",
    ),
    ("non-blocking", lambda: dict.fromkeys("abcde", False), "not every prediction holds"),
    ("non-blocking", lambda: {"a": "no", "b": "yes", "c": "no", "d": "yes", "e": "no"}, "True or False"),
    ("non-blocking", lambda: {"a": False}, "exactly the keys 'a', 'b'"),
    ("non-blocking", _stub, "not done yet"),
]


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
