"""Lab self-checks pass on correct answers and fail with a hint (in both languages) on wrong ones."""

from __future__ import annotations

import pytest
from mutations import case, named
from mutations import lab01 as cases

from devicekit import mismatch_device
from devicekit_labs import check, exercises_for, run


def _stub(*args):
    raise NotImplementedError


#: Lab 1's cases this test asserts, by name; each answer and its hint are in tests/mutations/lab01.py.
CASES = named(
    cases,
    [
        ("move-batch", "x.to(device)"),
        ("move-batch", "x.to(device) as a statement"),
        ("move-batch", "x.to(device, dtype=torch.float16)"),
        ("move-batch", "returns nothing"),
        ("move-batch", "untouched stub"),
        ("causal-mask", "torch.ones(..., device=x.device).tril()"),
        ("causal-mask", "factory without device"),
        ("causal-mask", "upper triangle"),
        ("causal-mask", "float mask"),
        ("causal-mask", "raises an error of its own"),
        ("predict-raises", "a function"),
        ("predict-raises", "0-dim CPU tensor predicted to raise"),
        ("predict-raises", "a key missing"),
        ("predict-raises", "untouched stub"),
    ],
)


@pytest.mark.parametrize(("key", "answer", "hint"), CASES)
def test_checks(key, answer, hint):
    result = run("01-devices", key, answer)
    assert result.passed is (hint is None)
    assert result.en.startswith("✓" if hint is None else "✗")
    assert result.zh.startswith("✓" if hint is None else "✗")
    if hint:
        assert hint in result.en
        assert any("\u4e00" <= ch <= "\u9fff" for ch in result.zh), "the Chinese hint is written in Chinese"


def test_hints_never_reveal_the_prediction_answers_nor_how_many_are_wrong():
    one = run(
        cases.LAB, "predict-raises", case(cases, "predict-raises", "0-dim CPU tensor predicted to raise")[0]
    )
    every = run(cases.LAB, "predict-raises", case(cases, "predict-raises", "all wrong")[0])
    for result in (one, every):
        assert not result.passed
        for key in "abcd":
            assert f"({key})" not in result.en and f"'{key}'" not in result.en
        assert not any(n in result.en for n in ("1 of", "4 of", "one of the", "all four"))
    assert one.en.split(":", 1)[1].startswith(every.en.split(":", 1)[1][:40])  # the same opening, any count


def _raises(fn) -> bool:
    try:
        fn()
    except RuntimeError:
        return True
    return False


def test_the_predictions_answer_key_is_grounded_in_real_pytorch():
    # The grader's answer key (grading/hidden/lab01.py) is what running the four mixes gives on this runner.
    from mutations import hidden_module

    hidden = hidden_module("01-devices")
    truth = {k: _raises(f) for k, f in hidden.mix_cases(mismatch_device()).items()}
    assert truth == hidden.PREDICT_RAISES == cases.RIGHT_PREDICTIONS


@pytest.mark.parametrize(("lang", "word"), [("en", "Exercise"), ("zh", "练习")])
def test_check_prints_one_line_in_the_lab_language(capsys, monkeypatch, lang, word):
    monkeypatch.setenv("DEVICEKIT_LANG", lang)
    assert check("01-devices", "move-batch", lambda x, d: x.to(d)) is None
    out = capsys.readouterr().out.strip()
    assert out.startswith(f"✓ {word} 1")
    assert "\n" not in out


def test_unknown_language_prints_both(capsys, monkeypatch):
    monkeypatch.delenv("DEVICEKIT_LANG", raising=False)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    check("01-devices", "move-batch", _stub)
    out = capsys.readouterr().out
    assert "Exercise 1" in out and "练习 1" in out


def test_language_from_the_notebook_file_name(monkeypatch):
    from devicekit.lang import current_language

    monkeypatch.delenv("DEVICEKIT_LANG", raising=False)
    monkeypatch.setenv("JPY_SESSION_NAME", "/home/me/labs/01-devices.zh.ipynb")
    assert current_language() == "zh"
    monkeypatch.setenv("JPY_SESSION_NAME", "/home/me/labs/01-devices.ipynb")
    assert current_language() == "en"


def test_unknown_lab_or_exercise_is_a_clear_error():
    with pytest.raises(KeyError, match="labs with checks: 01-devices"):
        run("99-nope", "x", None)
    with pytest.raises(KeyError, match="its exercises: move-batch, causal-mask, predict-raises"):
        run("01-devices", "nope", None)
    assert [e.number for e in exercises_for("01-devices")] == [1, 2, 3]


@pytest.mark.parametrize(
    "name",
    [
        "01-devices.zh (1).ipynb",
        "01-devices.zh-Copy1.ipynb",
        "Copy of 01-devices.zh.ipynb",
        "01-devices.ZH.ipynb",
    ],
)
def test_renamed_chinese_copies_are_still_chinese(monkeypatch, name):
    from devicekit.lang import current_language, language_of_path

    monkeypatch.delenv("DEVICEKIT_LANG", raising=False)
    monkeypatch.setenv("JPY_SESSION_NAME", f"/nowhere/{name}")
    assert language_of_path(name) == "zh"
    assert current_language() == "zh"
    assert language_of_path("01-devices-Copy1.ipynb") == "en"


def test_notebook_metadata_beats_the_file_name(monkeypatch, tmp_path):
    import json

    from devicekit.lang import current_language

    notebook = tmp_path / "Untitled.ipynb"  # a name that says English
    notebook.write_text(
        json.dumps({"metadata": {"devicekit": {"lang": "zh"}}, "cells": []}), encoding="utf-8"
    )
    monkeypatch.delenv("DEVICEKIT_LANG", raising=False)
    monkeypatch.setenv("JPY_SESSION_NAME", str(notebook))
    assert current_language() == "zh"


def test_set_language_covers_an_unknown_name_and_the_env_var_still_wins(monkeypatch):
    from devicekit.lang import current_language, pick, set_language

    monkeypatch.delenv("DEVICEKIT_LANG", raising=False)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    try:
        assert current_language() is None and pick("A", "甲") == "A\n甲"  # unknown: both
        set_language("zh")  # what the lab's setup cell does (Colab, nbconvert: no file name)
        assert current_language() == "zh" and pick("A", "甲") == "甲"
        monkeypatch.setenv("DEVICEKIT_LANG", "en")
        assert current_language() == "en"
        with pytest.raises(ValueError, match="'en' or 'zh'"):
            set_language("fr")
    finally:
        set_language(None)


def test_describe_speaks_the_notebook_language(monkeypatch):
    from devicekit import DeviceManager

    monkeypatch.setenv("DEVICEKIT_LANG", "zh")
    monkeypatch.delenv("DEVICEKIT_DEVICE", raising=False)
    text = DeviceManager("cpu").describe()
    assert "显式传入的参数" in text and "explicit" not in text
    assert "explicit argument" in DeviceManager("cpu").describe("en")


@pytest.mark.parametrize(
    ("answer", "needle"),
    [
        ({"a": "works", "b": "raises", "c": "works", "d": "raises"}, "must be True or False"),
        ({"a": 0, "b": 1, "c": 0, "d": 1}, "must be True or False"),
        ({"a": 1.0, "b": True, "c": False, "d": True}, "must be True or False"),
        ({"a": False, "b": True}, "exactly the keys"),
        (["a", "b"], "exactly the keys"),
    ],
)
def test_exercise_3_rejects_malformed_answers_with_the_format(answer, needle):
    from devicekit_labs.lab01 import PREDICTIONS_FORMAT

    result = run("01-devices", "predict-raises", answer)
    assert not result.passed
    assert needle in result.en and PREDICTIONS_FORMAT in result.en and PREDICTIONS_FORMAT in result.zh


def test_a_stub_hint_reaches_the_check_line():
    def stub():
        raise NotImplementedError("Exercise 1: return x.to(device)")

    result = run("01-devices", "move-batch", lambda x, device: stub())
    assert not result.passed and "Exercise 1: return x.to(device)" in result.en


@pytest.mark.parametrize("lab", ["01-devices", "02-models", "03-propagation", "04-data"])
@pytest.mark.parametrize("suffix", ["", ".zh"])
def test_stub_hints_name_the_concept_not_the_solution_code(lab, suffix):
    # issue 20: a hint that spells out the solution line turns the exercise into copying
    import re

    import nbformat

    from course_tools.paths import ROOT

    nb = nbformat.read(ROOT / "solutions" / f"{lab}{suffix}.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.cell_type != "code" or "### HINT:" not in cell.source:
            continue
        region = cell.source.split("### BEGIN SOLUTION")[1].split("### END SOLUTION")[0]
        hint = next(line for line in region.splitlines() if "### HINT:" in line)
        code = [line.strip() for line in region.splitlines() if line.strip() and "###" not in line]
        for line in code:
            expression = re.sub(r"^(return|[\w.]+\s*=)\s*", "", line)
            assert len(expression) < 12 or expression not in hint, f"{lab}{suffix}: {hint!r} spells {line!r}"
        calls = set(re.findall(r"([A-Za-z_][\w.]*)\(", "\n".join(code)))
        named = sorted(c for c in calls if f"{c}(" in hint)
        assert not named, f"{lab}{suffix}: {hint!r} names the solution's calls {named}"


def test_a_stubs_chinese_feedback_gives_its_hint_once_in_full_width_punctuation():
    """The student notebook's stub raises NotImplementedError("练习 1：…"): the Chinese feedback, which
    names the exercise already, gives the hint after 提示： (no half-width bracket, no stray space, no
    second 练习 1)."""
    from devicekit_labs import run

    def stub(batch, device):
        raise NotImplementedError("练习 1：张量在哪个设备上？")

    result = run("01-devices", "move-batch", stub)
    assert result.zh.endswith("然后重新运行这个单元格。提示：张量在哪个设备上？"), result.zh
    assert result.zh.count("练习 1") == 1 and " (" not in result.zh
