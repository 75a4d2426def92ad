"""Drills: exercises answered by a dict of predictions (one value per letter), judged without an answer key.

The wheel that students install must not hold the drills' answers in a form one can read or import. A drill's
public judge therefore holds, per letter, only a salted digest of the right value (`answer_digest`): it can
tell whether a prediction is right, and nothing more. That leaks nothing the self-check itself does not: a
learner who calls the check in a loop learns the same. The grader's hidden tier (``grading/hidden/``) holds
the answers in plain text and grounds them in PyTorch (tests run the operations).

When some predictions are wrong, the feedback teaches the rule behind ONE of them, in words that name the
concept but neither the letter nor how many are wrong: trying combinations must not be cheaper than thinking.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from devicekit_labs import Fail, failed_call, observe

__all__ = ["answer_digest", "judge_drill", "probe_drill"]


def answer_digest(lab: str, key: str, letter: str, value: object) -> str:
    """The digest a drill's judge keeps for "the right value of ``letter`` is ``value``" (16 hex digits)."""
    text = f"devicekit-drill|{lab}|{key}|{letter}|{value!r}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def probe_drill(answer: object) -> dict:
    """The drill's probe: the learner's predictions as plain data (a callable is called first).

    Values that are not plain (str, bool, int, float, None) are recorded by their type name, so that the
    judge can say what it got without the observations ever holding a learner object.
    """
    if callable(answer):
        called = observe(answer)
        if "error" in called:
            return {"error": called["error"]}
        answer = called["value"]
    if not isinstance(answer, Mapping):
        return {"type": type(answer).__name__}
    plain = (str, bool, int, float, type(None))
    predictions = {
        str(k): (v if isinstance(v, plain) else f"<{type(v).__name__}>") for k, v in answer.items()
    }
    return {
        "type": "dict",
        "predictions": predictions,
        "keys_are_str": all(isinstance(k, str) for k in answer),
    }


def judge_drill(
    seen: dict,
    *,
    lab: str,
    key: str,
    letters: str,
    allowed: tuple,
    digests: Mapping[str, str],
    rules: Mapping[str, tuple[str, str]],
    format_en: str,
    format_zh: str,
) -> None:
    """Judge a drill's observations: the format first, then one wrong letter's rule (never the letter).

    ``allowed`` are the values a prediction may take (compared by type too: ``True`` is not ``1``);
    ``rules[letter]`` is the (en, zh) rule that decides that letter.
    """
    failed_call(seen, "your predictions", "你的预测")
    keys = set(letters)
    got = seen.get("predictions")
    if seen.get("type") != "dict" or got is None or set(got) != keys or not seen.get("keys_are_str"):
        shown = sorted(got) if got is not None else seen.get("type")
        raise Fail(
            f"expected a dict with exactly the keys {_letters(letters)}, got {shown}. Return it in this "
            f"format: {format_en}",
            f"应当返回一个字典，键恰好是 {_letters(letters, zh=True)}，实际得到的是 {shown}。请按这个格式返回"
            f"：{format_zh}",
        )
    bad = [k for k in letters if not any(type(got[k]) is type(a) and got[k] == a for a in allowed)]
    if bad:
        shown = ", ".join(f"{k!r}: {got[k]!r}" for k in bad)
        choices = " or ".join(repr(a) for a in allowed)
        raise Fail(
            f"each value must be {choices}, not {shown}. Return it in this format: {format_en}",
            f"每个值都必须是 {' 或 '.join(repr(a) for a in allowed)}，而不是 {shown}。请按这个格式返回："
            f"{format_zh}",
        )
    wrong = [k for k in letters if answer_digest(lab, key, k, got[k]) != digests[k]]
    if wrong:
        en, zh = rules[wrong[0]]
        raise Fail(
            "not every prediction holds on a real run. Check each one against this rule, then look "
            f"again at all of them: {en}",
            f"并不是每个预测都和实际运行的结果一致。请用下面这条规则逐个核对，然后把所有预测再看一遍：{zh}",
        )


def _letters(letters: str, zh: bool = False) -> str:
    quoted = [f"'{k}'" for k in letters]
    if len(quoted) > 5:
        return f"{quoted[0]}{' 到 ' if zh else ' to '}{quoted[-1]}"
    return ("、" if zh else ", ").join(quoted)
