"""Self-checks for the lab exercises: the learner's ✓ / ✗ with a hint, and what the grader scores.

Each lab registers its checks in a module of this package (``lab01.py`` for ``01-devices``). A check
receives the learner's objects, runs them for real, and raises `Fail` with a hint in both languages when
something is wrong. It never shows the solution. `check` turns that into one printed line in the lab's
language (see `devicekit.lang`) and records the outcome for the grader.
"""

from __future__ import annotations

import importlib
import re
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from devicekit.lang import Lang, current_language, pick

__all__ = [
    "CheckResult",
    "Exercise",
    "Fail",
    "check",
    "exercise",
    "exercises_for",
    "known_labs",
    "results",
    "run",
]

_PACKAGE_DIR = Path(__file__).resolve().parent
_LAB_ID = re.compile(r"^(\d\d)-[a-z0-9-]+$")


def _module_of(lab: str) -> str | None:
    """The module that registers the checks of ``lab`` (``NN-slug`` -> ``devicekit_labs.labNN``)."""
    match = _LAB_ID.match(lab)
    if match is None or not (_PACKAGE_DIR / f"lab{match.group(1)}.py").is_file():
        return None
    return f"devicekit_labs.lab{match.group(1)}"


def _lab_ids() -> list[str]:
    """Every lab id with checks: each ``labNN.py`` here declares its id in ``LAB``."""
    ids = []
    for path in sorted(_PACKAGE_DIR.glob("lab[0-9][0-9].py")):
        match = re.search(r'^LAB\s*=\s*"([^"]+)"', path.read_text(encoding="utf-8"), re.MULTILINE)
        if match:
            ids.append(match.group(1))
    return ids


class Fail(Exception):
    """Raised by a check: the learner's answer is wrong. Carries the hint in both languages."""

    def __init__(self, en: str, zh: str) -> None:
        super().__init__(en)
        self.en = en
        self.zh = zh


@dataclass(frozen=True)
class Exercise:
    lab: str
    key: str
    number: int
    title_en: str
    title_zh: str
    run: Callable[..., None] = field(repr=False)
    #: Name of the notebook variable the check receives; the grader re-runs checks the learner skipped.
    target: str | None = None


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one self-check. Truthy when it passed."""

    lab: str
    key: str
    number: int
    passed: bool
    en: str
    zh: str

    def __bool__(self) -> bool:
        return self.passed

    def text(self, lang: Lang | None = None) -> str:
        return pick(self.en, self.zh, lang)


_REGISTRY: dict[tuple[str, str], Exercise] = {}
#: Every check run in this process, in order. The grader reads it after executing a submission.
results: list[CheckResult] = []


def exercise(lab: str, key: str, number: int, title_en: str, title_zh: str, target: str | None = None):
    """Register the decorated function as the check for exercise ``key`` of ``lab``.

    ``target`` names the notebook variable the check is called with (e.g. ``"move_batch"``).
    """

    def register(run: Callable[..., None]) -> Callable[..., None]:
        _REGISTRY[(lab, key)] = Exercise(lab, key, number, title_en, title_zh, run, target)
        return run

    return register


def _load(lab: str) -> None:
    module = _module_of(lab) if lab in _lab_ids() else None
    if module is None:
        known = ", ".join(_lab_ids())
        raise KeyError(f"no self-checks for lab {lab!r}; labs with checks: {known}")
    importlib.import_module(module)


def known_labs() -> list[str]:
    """The ids of the labs that have self-checks."""
    return _lab_ids()


def exercises_for(lab: str) -> list[Exercise]:
    """The exercises of ``lab`` in their order in the notebook."""
    _load(lab)
    return sorted((e for e in _REGISTRY.values() if e.lab == lab), key=lambda e: e.number)


def _outcome(ex: Exercise, args: tuple, kwargs: dict) -> tuple[bool, str, str]:
    try:
        ex.run(*args, **kwargs)
    except Fail as fail:
        return False, fail.en, fail.zh
    except NotImplementedError as stub:
        hint = f" ({stub})" if str(stub) else ""  # the stub's own hint, in the notebook's language
        return (
            False,
            "not done yet: replace the `raise NotImplementedError` with your code, then run this cell "
            f"again.{hint}",
            f"还没有完成：把 `raise NotImplementedError` 换成你的代码，然后重新运行这个单元格。{hint}",
        )
    except Exception as exc:  # the learner's code crashed: report it, never crash the check cell
        where = traceback.extract_tb(exc.__traceback__)[-1]
        what = f"{type(exc).__name__}: {exc}"
        return (
            False,
            f"your code raised {what} (line {where.lineno}). Read the message, fix the code, run again.",
            f"你的代码抛出了 {what}（第 {where.lineno} 行）。读一读报错信息，改好后再运行。",
        )
    return True, "passed.", "通过。"


def run(lab: str, key: str, *args, **kwargs) -> CheckResult:
    """Run the self-check for exercise ``key`` of ``lab`` and return the result (prints nothing)."""
    _load(lab)
    ex = _REGISTRY.get((lab, key))
    if ex is None:
        keys = ", ".join(e.key for e in exercises_for(lab))
        raise KeyError(f"lab {lab!r} has no exercise {key!r}; its exercises: {keys}")
    passed, en, zh = _outcome(ex, args, kwargs)
    mark = "✓" if passed else "✗"
    result = CheckResult(
        lab=lab,
        key=key,
        number=ex.number,
        passed=passed,
        en=f"{mark} Exercise {ex.number} ({ex.title_en}): {en}",
        zh=f"{mark} 练习 {ex.number}（{ex.title_zh}）：{zh}",
    )
    results.append(result)
    return result


def check(lab: str, key: str, *args, lang: Lang | None = None, **kwargs) -> None:
    """The learner's self-check: run exercise ``key`` of ``lab`` on their objects and print ✓ or ✗.

    Prints one line in the lab's language (both languages when it is unknown) and returns nothing, so a
    notebook shows the line and no object repr. The outcome is recorded in `results` for the grader.
    """
    print(run(lab, key, *args, **kwargs).text(lang or current_language()))
