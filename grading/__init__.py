"""The instructor's grading tier, at the repository root and never packaged: ``grading/hidden/labNN.py``
holds each lab's hidden judges (``HIDDEN = {key: judge}``, extra judges over the same observations as the
public ones), ``grading/Dockerfile`` the grader's container.

`hidden_judges` loads them the way the grader does (``devicekit-grade --hidden grading/hidden``), for tests
of the hidden tier::

    from grading import hidden_judges
    judge = hidden_judges("01-devices")["predict-raises"]
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

HIDDEN_DIR = Path(__file__).resolve().parent / "hidden"


def hidden_judges(lab: str, folder: Path | None = None) -> dict[str, Callable[[dict], None]]:
    """{exercise key: hidden judge} of ``lab`` from ``folder`` (default ``grading/hidden``); {} when none."""
    from devicekit_grade._evaluator import load_hidden

    folder = HIDDEN_DIR if folder is None else folder
    return load_hidden(str(folder) if folder.is_dir() else None).get(lab, {})
