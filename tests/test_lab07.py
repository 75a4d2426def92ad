"""Lab 07 self-checks: a correct AMP step and dtype choice pass; typical wrong ones fail with a hint."""

from __future__ import annotations

import warnings

import pytest
import torch
from mutations import hidden_module, named
from mutations import lab07 as cases

from check_outcome import expect
from devicekit_labs import Fail, run

LAB = cases.LAB

#: The cases this lab's own test asserts, by name; each answer and its hint are in tests/mutations/lab07.py.
CASES = named(
    cases,
    [
        ("amp-step", "the lesson's step"),
        ("amp-step", "torch.amp spelling, loss outside, zero_grad at the end"),
        ("amp-step", "autocast('cuda') hard-coded"),
        ("amp-step", "no GradScaler"),
        ("amp-step", "model converted to the low dtype"),
        ("amp-step", "gradients never cleared"),
        ("amp-step", "optimizer never stepped"),
        ("amp-step", "untouched stub"),
        ("choose-amp", "capability compared as a tuple"),
        ("choose-amp", "dtype names instead of dtypes"),
        ("choose-amp", "untouched stub"),
    ],
)


@pytest.mark.parametrize(("key", "answer", "hint"), CASES)
def test_checks(key, answer, hint):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecation warnings of the answers
        result = run(LAB, key, answer)
    expect(result, hint)


def test_fp16_autocast_works_on_the_cpu():
    # lesson 7 says so; the check's fp16 case depends on it
    with torch.autocast("cpu", dtype=torch.float16):
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.float16


# --- the hidden tier: what only the grader checks, over the same observations ------------------------------


def _observed(key, answer):
    """The probe's observations after a trip through bytes, as the grader's judge process receives them."""
    import io

    from devicekit_labs import exercises_for

    (ex,) = [e for e in exercises_for(LAB) if e.key == key]
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.save(ex.probe(answer), buffer)
    buffer.seek(0)
    return ex, torch.load(buffer, weights_only=True)


@pytest.mark.parametrize(
    ("key", "answer", "hint"),
    named(
        cases,
        [
            ("amp-step", "L1 loss on a GPU only"),
            ("choose-amp", "bf16 everywhere"),
            ("choose-amp", "fp16 everywhere"),
            ("choose-amp", "fp16 only below capability 7.0"),
            ("amp-step", "L1 loss"),
        ],
    ),
)
def test_the_hidden_judges_reject_what_the_public_one_cannot_tell(key, answer, hint):
    """The public judge holds no answer table and no reference step: these pass it, the grader's fail."""
    ex, seen = _observed(key, answer)
    ex.judge(seen)  # passes the public judge
    with pytest.raises(Fail) as caught:
        hidden_module(LAB).HIDDEN[key](seen)
    assert hint in caught.value.en and any("\u4e00" <= ch <= "\u9fff" for ch in caught.value.zh)
    assert " of 6" not in caught.value.en and " of 9" not in caught.value.en  # one machine, never a count


@pytest.mark.parametrize(
    ("key", "answer", "hint"),
    named(cases, [("amp-step", "the lesson's step"), ("choose-amp", "capability compared as a tuple")]),
)
def test_right_answers_pass_public_and_hidden_judges_after_a_trip_through_bytes(key, answer, hint):
    ex, seen = _observed(key, answer)
    ex.judge(seen)
    hidden_module(LAB).HIDDEN[key](seen)


def test_no_reference_answer_ships_in_the_public_module():
    import devicekit_labs.lab07 as public

    assert not hasattr(public, "reference_step") and not hasattr(public, "_right_choice")
