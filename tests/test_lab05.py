"""Lab 05 (debugging a mismatch): the checks compute their truth by running devicekit's tools on the lab's
models, accept correct answers, reject typical wrong ones with a hint in both languages.
(tests/test_grade.py grades every lab: the solution in full, the untouched lab at zero.)"""

from __future__ import annotations

import pytest
import torch
from mutations import lab05 as cases
from mutations import named

from check_outcome import expect
from devicekit import strict_devices
from devicekit_labs import exercises_for, run
from devicekit_labs.lab05 import MixerTagger, Tagger, token_ids
from devicekit_labs.machine import probe_gpus

LAB = cases.LAB

#: The cases this lab's own test asserts, by name; each answer and its hint are in tests/mutations/lab05.py.
CASES = named(
    cases,
    [
        ("first-module", "the name"),
        ("first-module", "the name itself, not a function"),
        ("first-module", "the enclosing block"),
        ("first-module", "the tensor, not the module"),
        ("first-module", "a number"),
        ("first-module", "untouched stub"),
        ("fix-scale", "register_buffer"),
        ("fix-scale", "a trainable scale"),
        ("fix-scale", "the shift dropped"),
        ("fix-scale", "forward ignores the loaded scale"),
        ("fix-scale", "a plain tensor attribute"),
        ("fix-scale", "a buffer that is not saved"),
        ("fix-scale", "the input doubled"),
        ("fix-scale", "a function, not a class"),
        ("fix-scale", "untouched stub"),
        ("find-culprit", "locate under strict_devices"),
        ("find-culprit", "locate_mismatch"),
        ("find-culprit", "a hard-coded name"),
        ("find-culprit", "untouched stub"),
        ("fix-weights", "device=x.device"),
        ("fix-weights", "the original: positions born on the CPU"),
        ("fix-weights", "uniform weights"),
        ("fix-weights", "built on the CPU, then copied"),
        ("fix-weights", "untouched stub"),
    ],
)


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
        assert cases.culprit_ok(tagger, ids) == "layers.2.scale"
        mixer = MixerTagger().to(device)
        with pytest.raises(RuntimeError, match=r"mat2 is on cuda:0, .* wrapper_CUDA_bmm"):
            mixer(ids)
        assert cases.culprit_ok(mixer, ids) == cases.culprit_under_strict(mixer, ids) == "blocks.0.mixer"
        fixed = Tagger(scale_cls=cases.ScaleBuffer).to(device)
        assert cases.culprit_ok(fixed, ids) is None


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
    from devicekit_labs import Fail

    (ex,) = [e for e in exercises_for(LAB) if e.key == key]
    assert ex.probe is not None and ex.judge is not None, "a two-part (judged) check"
    ex.judge(_through_bytes(ex.probe(cases.RIGHT[key][0][1])))
    _name, wrong, hint = cases.WRONG[key][0]
    with pytest.raises(Fail) as caught:
        ex.judge(_through_bytes(ex.probe(wrong)))
    assert hint in caught.value.en
