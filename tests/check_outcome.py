"""One way for the lab tests to judge a self-check's outcome: passed exactly when no hint is expected,
and when it failed, the expected hint is in the English line and the Chinese line is written in Chinese."""

from __future__ import annotations

from devicekit_labs import CheckResult


def expect(result: CheckResult, hint: str | None) -> None:
    assert result.passed is (hint is None), result.en
    if hint is not None:
        assert hint in result.en, result.en
        assert any("\u4e00" <= ch <= "\u9fff" for ch in result.zh), "the Chinese hint is written in Chinese"
