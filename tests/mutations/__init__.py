"""Mutation cases for the labs' self-checks: answers a learner could write, and what the check must say.

One module per lab, ``labNN.py``, owned by whoever owns the lab. Each defines:

- ``LAB``: the lab id, e.g. ``"01-devices"``;
- ``WRONG[key] = [(name, answer, hint_substring_en), ...]``: at least four wrong answers per exercise, the
  bug the lesson teaches FIRST, then the reviewers' cases (issue 21), then others. Each must be rejected, and
  ``hint_substring_en`` must be in the English feedback (the hint names the actual mistake);
- ``RIGHT[key] = [(name, answer), ...]``: at least two genuinely different right answers per exercise
  (one of them right on a GPU but awkward on the CPU stand-in, where the exercise has such an idiom). Each
  must pass;
- optionally ``HIDDEN_WRONG[key] = [(name, answer, hint_substring_en), ...]``: wrong answers that the public
  judge cannot tell from right ones (it holds no answer table): they pass it, and the grader's hidden judge
  (``grading/hidden/labNN.py``) rejects them with the hint.

An ``answer`` is the object the notebook hands to ``check``: a function, an ``nn.Module`` subclass or a dict,
written as real code in the module, exactly as a learner would write it in the cell.

A lab's own test file (``tests/test_labNN.py``) keeps no copies: it picks the cases it asserts by name with
`named`, so each answer and its hint are written once, here.

``tests/test_mutations.py`` runs every case of every ``tests/mutations/lab*.py`` through
``devicekit_labs.run`` (the public judge, what the learner sees) and the grader's hidden judges;
``tests/gpu/test_mutations_on_cuda.py`` runs the same cases on a real accelerator.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

HERE = Path(__file__).resolve().parent
HIDDEN_DIR = HERE.parents[1] / "grading" / "hidden"


def hidden_module(lab: str) -> ModuleType | None:
    """The grader's hidden tier of ``lab`` (``grading/hidden/labNN.py``, loaded by path), or None."""
    path = HIDDEN_DIR / f"lab{lab[:2]}.py"
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location(f"hidden_lab{lab[:2]}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lab_modules() -> list[ModuleType]:
    """Every ``tests/mutations/labNN.py`` module, in lab order."""
    return [importlib.import_module(f"mutations.{p.stem}") for p in sorted(HERE.glob("lab[0-9][0-9].py"))]


def wrong_cases() -> list[tuple[str, str, str, object, str]]:
    """(lab, key, name, answer, hint) for every wrong answer of every lab."""
    return [
        (m.LAB, key, name, answer, hint)
        for m in lab_modules()
        for key, cases in m.WRONG.items()
        for name, answer, hint in cases
    ]


def hidden_wrong_cases() -> list[tuple[str, str, str, object, str]]:
    """(lab, key, name, answer, hint) for every wrong answer only a lab's hidden judge rejects."""
    return [
        (m.LAB, key, name, answer, hint)
        for m in lab_modules()
        for key, cases in getattr(m, "HIDDEN_WRONG", {}).items()
        for name, answer, hint in cases
    ]


def right_cases() -> list[tuple[str, str, str, object]]:
    """(lab, key, name, answer) for every right answer of every lab."""
    return [
        (m.LAB, key, name, answer)
        for m in lab_modules()
        for key, cases in m.RIGHT.items()
        for name, answer in cases
    ]


def untouched(*args, **kwargs):
    """The lab's stub as the learner gets it: a function whose body is still ``raise NotImplementedError``."""
    raise NotImplementedError


def case(module: ModuleType, key: str, name: str) -> tuple[object, str | None]:
    """The answer called ``name`` under exercise ``key`` of a lab's ``module``, and its hint (None for a right
    answer). An unknown or ambiguous name is an error, never a skipped case."""
    every_wrong = module.WRONG.get(key, []) + getattr(module, "HIDDEN_WRONG", {}).get(key, [])
    found = [(answer, hint) for n, answer, hint in every_wrong if n == name]
    found += [(answer, None) for n, answer in module.RIGHT.get(key, []) if n == name]
    if len(found) != 1:
        raise LookupError(f"{module.LAB}: {len(found)} cases called {name!r} under {key!r}, not 1")
    return found[0]


def named(module: ModuleType, picks: list[tuple[str, str]]) -> list:
    """The cases of a lab's ``module`` picked by (exercise key, case name), as pytest parameters
    ``(key, answer, hint)`` with ``key:name`` as id (see `case`).

    Why: a lab's own test asserts some of the same answers as the mutation tests; naming them here keeps one
    copy of each answer and its hint.
    """
    return [pytest.param(key, *case(module, key, name), id=f"{key}:{name}") for key, name in picks]


#: Exercises whose check starts processes (two ranks: labs 8 and 11), compiles (lab 10) or trains and resumes
#: a model (lab 9): seconds per case, so their cases belong to the integration layer, not the unit layer.
SLOW_CHECKS = {
    ("08-multi-gpu", "fail-fast"),
    ("09-capstone", "fixed-script"),
    ("09-capstone", "audit"),
    ("10-compile", "rotate"),
    ("11-sharded", "resume"),
}


def layered(cases: list[tuple], lab: str | None = None) -> list:
    """``cases`` as pytest parameters, those of a `SLOW_CHECKS` exercise marked ``integration``. A case
    starts with (lab, key), or with (key,) when ``lab`` is given."""
    params = []
    for case in cases:
        exercise = (lab, case[0]) if lab is not None else tuple(case[:2])
        marks = pytest.mark.integration if exercise in SLOW_CHECKS else ()
        params.append(pytest.param(*case, marks=marks))
    return params
