"""``devicekit-grade``: grade lab submissions with the self-checks the learners themselves run.

For each submitted notebook the grader works out which lab it is (`identify`), executes a temporary copy
of it in a fresh kernel with per-cell and per-notebook time limits (`run`), scores it by the lab's
self-checks, and writes ``grades.csv``, ``grades.json`` and ``report.html`` (`report`). The submission
itself is only ever read. Run ``devicekit-grade --help`` or ``python -m devicekit.grade --help``.

The grader executes the submitted code with the grader's permissions: it isolates the grader from crashes
and endless loops, not the machine from a hostile notebook. Grade in a container or a throw-away account.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from devicekit.grade.cli import find_submissions, main
    from devicekit.grade.identify import Identity, identify, known_labs, load
    from devicekit.grade.report import write_all
    from devicekit.grade.run import STATUSES, ExerciseGrade, Grade, Options, grade_file

# Imported on first use: the kernel that runs a submission imports devicekit.grade._kernel, and must not pay
# for nbformat, nbclient and the rest of the grader (seconds on a busy machine) before the learner's code.
_LAZY = {
    "find_submissions": "cli",
    "main": "cli",
    "Identity": "identify",
    "identify": "identify",
    "known_labs": "identify",
    "load": "identify",
    "write_all": "report",
    "STATUSES": "run",
    "ExerciseGrade": "run",
    "Grade": "run",
    "Options": "run",
    "grade_file": "run",
}

__all__ = [
    "STATUSES",
    "ExerciseGrade",
    "Grade",
    "Identity",
    "Options",
    "find_submissions",
    "grade_file",
    "identify",
    "known_labs",
    "load",
    "main",
    "write_all",
]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'devicekit.grade' has no attribute {name!r}")
    return getattr(importlib.import_module(f"devicekit.grade.{_LAZY[name]}"), name)
