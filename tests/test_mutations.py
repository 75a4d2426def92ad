"""Mutation tests for the labs' self-checks (issue 21): every wrong answer in ``tests/mutations/lab*.py`` is
rejected with a hint that names its mistake (in English, and in Chinese), every right answer passes, and the
check is a probe + judge pair whose observations cross a process boundary as plain data.

Each lab's module is found by its file name, so a lab's cases join these tests by being written.
"""

from __future__ import annotations

import io

import pytest
import torch
from mutations import (
    SLOW_CHECKS,
    hidden_module,
    hidden_wrong_cases,
    lab_modules,
    layered,
    right_cases,
    wrong_cases,
)

from devicekit_labs import Fail, exercises_for, run


def _has_chinese(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


def hidden_judges(lab: str) -> dict:
    """The grader's hidden judges of ``lab`` (``HIDDEN`` of ``grading/hidden/labNN.py``), or {}."""
    module = hidden_module(lab)
    return {} if module is None else module.HIDDEN


def _exercise(lab: str, key: str):
    return next(e for e in exercises_for(lab) if e.key == key)


def _ids(cases) -> list[str]:
    return [f"{c[0]}:{c[1]}:{c[2]}" for c in cases]


def test_the_slow_checks_name_real_exercises():
    every = {(lab, key) for lab, key, *_ in wrong_cases() + right_cases()}
    assert SLOW_CHECKS <= every, SLOW_CHECKS - every


@pytest.mark.parametrize(
    ("lab", "key", "name", "answer", "hint"), layered(wrong_cases()), ids=_ids(wrong_cases())
)
def test_a_wrong_answer_is_rejected_with_its_hint(lab, key, name, answer, hint):
    result = run(lab, key, answer)
    assert not result.passed, f"{name!r} was accepted"
    assert hint in result.en, result.en
    assert _has_chinese(result.zh) and result.zh.startswith("✗"), result.zh


@pytest.mark.parametrize(("lab", "key", "name", "answer"), layered(right_cases()), ids=_ids(right_cases()))
def test_a_right_answer_passes_the_public_and_the_hidden_judges(lab, key, name, answer):
    result = run(lab, key, answer)
    assert result.passed, result.en
    ex = _exercise(lab, key)
    seen = ex.probe(answer)
    hidden = hidden_judges(lab).get(key)
    if hidden is not None:
        hidden(seen)  # raises Fail when the grader's extra judge rejects a right answer


@pytest.mark.parametrize(
    ("lab", "key", "name", "answer", "hint"), layered(hidden_wrong_cases()), ids=_ids(hidden_wrong_cases())
)
def test_a_wrong_answer_only_the_hidden_judge_can_tell_passes_the_public_one_and_fails_there(
    lab, key, name, answer, hint
):
    ex = _exercise(lab, key)
    buffer = io.BytesIO()
    torch.save(ex.probe(answer), buffer)
    seen = torch.load(io.BytesIO(buffer.getvalue()), weights_only=True)  # as the grader's judge receives it
    ex.judge(seen)  # the public judge cannot tell it from a right answer
    with pytest.raises(Fail) as caught:
        hidden_judges(lab)[key](seen)
    assert hint in caught.value.en, caught.value.en
    assert _has_chinese(caught.value.zh), caught.value.zh


_EVERY = [c[:4] for c in wrong_cases() + hidden_wrong_cases()] + right_cases()


@pytest.mark.parametrize(("lab", "key", "name", "answer"), layered(_EVERY), ids=_ids(_EVERY))
def test_observations_are_plain_data_and_judged_the_same_after_the_trip(lab, key, name, answer):
    ex = _exercise(lab, key)
    seen = ex.probe(answer)
    buffer = io.BytesIO()
    torch.save(seen, buffer)
    loaded = torch.load(io.BytesIO(buffer.getvalue()), weights_only=True)  # refuses anything not plain
    verdicts = []
    for observations in (seen, loaded):
        try:
            ex.judge(observations)
            verdicts.append("passed")
        except Fail as fail:
            verdicts.append(fail.en)
    assert verdicts[0] == verdicts[1]


@pytest.mark.parametrize("module", lab_modules(), ids=lambda m: m.LAB)
def test_every_exercise_has_enough_cases_and_a_two_part_check(module):
    keys = [e.key for e in exercises_for(module.LAB)]
    assert sorted(module.WRONG) == sorted(keys) == sorted(module.RIGHT)
    for key in keys:
        assert len(module.WRONG[key]) >= 4, key
        assert len(module.RIGHT[key]) >= 2, key
        assert len({name for name, *_ in module.WRONG[key]}) == len(module.WRONG[key]), key
        ex = _exercise(module.LAB, key)
        assert ex.probe is not None and ex.judge is not None, f"{key} is a legacy one-piece check"


@pytest.mark.parametrize("module", lab_modules(), ids=lambda m: m.LAB)
def test_hidden_judges_name_real_exercises(module):
    keys = {e.key for e in exercises_for(module.LAB)}
    assert set(hidden_judges(module.LAB)) <= keys


@pytest.mark.parametrize(
    ("lab", "key", "truth_name", "digests_module"),
    [
        ("01-devices", "predict-raises", "PREDICT_RAISES", "devicekit_labs.lab01"),
        ("03-propagation", "predict-mixes", "PREDICT_MIXES", "devicekit_labs.lab03"),
        ("04-data", "non-blocking", "NON_BLOCKING_TRUTH", "devicekit_labs.lab04"),
    ],
)
def test_a_drills_public_digests_agree_with_the_hidden_answers(lab, key, truth_name, digests_module):
    import importlib

    from devicekit_labs.drills import answer_digest

    truth = getattr(hidden_module(lab), truth_name)
    digests = importlib.import_module(digests_module)._DIGESTS
    assert digests == {k: answer_digest(lab, key, k, v) for k, v in truth.items()}
    assert run(lab, key, dict(truth)).passed


def _every_exercise() -> list[tuple[str, str]]:
    from devicekit_labs import known_labs

    return [(lab, ex.key) for lab in known_labs() for ex in exercises_for(lab)]


_EXERCISES = _every_exercise()


@pytest.mark.parametrize(("lab", "key"), layered(_EXERCISES), ids=[f"{a}:{b}" for a, b in _EXERCISES])
def test_an_untouched_exercise_never_passes(lab, key):
    """The student notebook's stub (a function that raises ``NotImplementedError``) fails every exercise's
    check, with a message in both languages: an untouched lab scores zero in the grader, for every lab
    (grade_attacks.classroom grades the untouched notebooks of labs 1 and 5 end to end)."""

    def stub(*args, **kwargs):
        raise NotImplementedError("Exercise: not done yet")

    result = run(lab, key, stub)
    assert not result.passed, f"{lab}:{key} accepts an untouched stub"
    assert result.en.startswith("✗") and _has_chinese(result.zh) and result.zh.startswith("✗"), result
