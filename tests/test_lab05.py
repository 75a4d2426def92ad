"""Lab 05 (debugging a mismatch): the checks compute their truth by running devicekit's tools on the lab's
models, accept correct answers, reject typical wrong ones with a hint in both languages.
(tests/test_grade.py grades every lab: the solution in full, the untouched lab at zero.)"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from check_outcome import expect
from devicekit import locate_mismatch, strict_devices
from devicekit_labs import exercises_for, run
from devicekit_labs.lab05 import FeatureScale, MixerTagger, Tagger, distance_weights, token_ids
from devicekit_labs.machine import probe_gpus

LAB = "05-debugging"


def _stub(*args):
    raise NotImplementedError


class BufferScale(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.register_buffer("scale", torch.ones(dim))
        self.shift = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        return x * self.scale + self.shift


class NonPersistentScale(BufferScale):
    def __init__(self, dim):
        nn.Module.__init__(self)
        self.register_buffer("scale", torch.ones(dim), persistent=False)
        self.shift = nn.Parameter(torch.zeros(dim))


class ParameterScale(BufferScale):
    """Moves with the model and is saved, but makes a constant trainable: rejected (the optimizer would
    change the scale, so it is not a drop-in replacement)."""

    def __init__(self, dim):
        nn.Module.__init__(self)
        self.scale = nn.Parameter(torch.ones(dim))
        self.shift = nn.Parameter(torch.zeros(dim))


class NoShiftScale(nn.Module):
    """Computes the same for a fresh layer but drops the trained shift: not a drop-in replacement."""

    def __init__(self, dim):
        super().__init__()
        self.register_buffer("scale", torch.ones(dim))

    def forward(self, x):
        return x * self.scale


class IgnoresLoadedScale(BufferScale):
    """Right tensors, but forward ignores the loaded scale."""

    def forward(self, x):
        return x + self.shift


class DoubledScale(BufferScale):
    def forward(self, x):
        return 2 * x * self.scale + self.shift


class StubScale(nn.Module):
    """What the untouched lab defines: the solution region of __init__ is a raising stub."""

    def __init__(self, dim):
        super().__init__()
        raise NotImplementedError


def culprit_strict(model, batch):
    with strict_devices():
        report = locate_mismatch(model, batch)
    return None if report is None else report.module


def culprit_plain(model, batch):
    report = locate_mismatch(model, batch)
    return None if report is None else report.module


def weights_fixed(x):
    positions = torch.arange(x.shape[1], device=x.device)
    return torch.softmax(-(positions[:, None] - positions[None, :]).abs().float(), dim=-1)


def weights_copied(x):
    """Right values and device, but built on the CPU and copied on every call."""
    return distance_weights(x).to(x.device)


def weights_uniform(x):
    return torch.full((x.shape[1], x.shape[1]), 1 / x.shape[1], device=x.device)


CASES = [
    ("first-module", lambda: "layers.2.scale", None),
    ("first-module", "layers.2.scale", None),
    ("first-module", lambda: "layers.2", "not the innermost one where the devices mix"),
    ("first-module", lambda: "layers.2.scale.scale", "no module named"),
    ("first-module", lambda: 2, "as a string"),
    ("first-module", _stub, "not done yet"),
    ("fix-scale", BufferScale, None),
    ("fix-scale", ParameterScale, "must not change"),
    ("fix-scale", NoShiftScale, "drop-in replacement"),
    ("fix-scale", IgnoresLoadedScale, "after load_state_dict"),
    ("fix-scale", FeatureScale, "stayed behind"),
    ("fix-scale", NonPersistentScale, "missing from state_dict"),
    ("fix-scale", DoubledScale, "same as FeatureScale"),
    ("fix-scale", lambda dim: None, "nn.Module subclass"),
    ("fix-scale", StubScale, "not done yet"),
    ("find-culprit", culprit_strict, None),
    ("find-culprit", culprit_plain, None),
    ("find-culprit", lambda m, b: "blocks.0.mixer", "not the module where"),
    ("find-culprit", _stub, "not done yet"),
    ("fix-weights", weights_fixed, None),
    ("fix-weights", distance_weights, "weights are on"),
    ("fix-weights", weights_uniform, "hold other values"),
    ("fix-weights", weights_copied, "copies them"),
    ("fix-weights", _stub, "not done yet"),
]


@pytest.mark.parametrize(("key", "answer", "hint"), CASES)
def test_checks(key, answer, hint):
    expect(run(LAB, key, answer), hint)


def test_the_lab_models_fail_as_the_lab_says():
    """On a GPU (real or simulated) both models raise PyTorch's own error, in the forms the lab reads, and
    `locate_mismatch` alone names each module; under `strict_devices` it names the same ones."""
    with probe_gpus(1):
        device = torch.device("cuda", 0)
        torch.manual_seed(0)
        tagger, ids = Tagger().to(device), token_ids(device)
        with pytest.raises(RuntimeError, match="found at least two devices, cuda:0 and cpu!"):
            tagger(ids)
        with pytest.raises(RuntimeError, match=r"aten\.mul\.Tensor .*cuda:0 \(arg 0 'self'\), cpu \(arg 1"):
            with strict_devices():
                tagger(ids)
        assert culprit_plain(tagger, ids) == "layers.2.scale"
        mixer = MixerTagger().to(device)
        with pytest.raises(RuntimeError, match=r"mat2 is on cuda:0, .* wrapper_CUDA_bmm"):
            mixer(ids)
        assert culprit_plain(mixer, ids) == culprit_strict(mixer, ids) == "blocks.0.mixer"
        fixed = Tagger(scale_cls=BufferScale).to(device)
        assert culprit_plain(fixed, ids) is None


def test_hints_never_reveal_the_module_names():
    for key, answer in [("first-module", lambda: "embed"), ("find-culprit", lambda m, b: "embed")]:
        result = run(LAB, key, answer)
        assert "layers.2.scale" not in result.en and "blocks.0.mixer" not in result.en


def test_exercises_are_numbered_in_notebook_order():
    assert [e.key for e in exercises_for(LAB)] == ["first-module", "fix-scale", "find-culprit", "fix-weights"]


# --- the two-part check: observations are plain data, the judge decides from them alone -------------------


def _through_bytes(observations):
    import io

    buffer = io.BytesIO()
    torch.save(observations, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


@pytest.mark.parametrize("key", [e.key for e in exercises_for(LAB)])
def test_observations_survive_bytes_and_the_judge_alone_decides(key):
    """As the grader does it: the probe's data crosses a process boundary as bytes, the judge runs apart."""
    from mutations import lab05 as cases

    from devicekit_labs import Fail

    (ex,) = [e for e in exercises_for(LAB) if e.key == key]
    assert ex.probe is not None and ex.judge is not None, "a two-part (judged) check"
    ex.judge(_through_bytes(ex.probe(cases.RIGHT[key][0][1])))
    _name, wrong, hint = cases.WRONG[key][0]
    with pytest.raises(Fail) as caught:
        ex.judge(_through_bytes(ex.probe(wrong)))
    assert hint in caught.value.en
