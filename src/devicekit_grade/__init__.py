"""``devicekit-grade``: grade lab submissions an instructor can trust (its own package; the runtime library
``devicekit`` knows nothing of grading). Install with ``pip install "devicekit[grade]"``.

Each submission runs sealed off (`devicekit_grade.sandbox`: a user of its own, or bubblewrap, or a
refusal) and its kernel runs each exercise's probe on the answer; the observations, plain data, are judged
by the public and the instructor's hidden judges in a process that holds no submission code
(`devicekit_grade._evaluator`); `devicekit_grade.integrity` flags copies and tampering; the reports are
made for people and for learning-management systems (`devicekit_grade.report`, `devicekit_grade.lms`,
`devicekit_grade.zh`). Run ``devicekit-grade --help`` or ``python -m devicekit_grade --help``.
"""

from __future__ import annotations

import sys

#: nbformat validates with jsonschema, whose format checkers import ``rfc3987_syntax`` when it is installed
#: (JupyterLab brings it): that import builds a grammar, about 1 s of CPU in every process, for IRI formats
#: that no notebook schema uses. The grader's own processes skip it (an absent module to jsonschema).
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[assignment]

#: What the grader needs beyond devicekit itself: the ``grade`` extra of the devicekit distribution.
REQUIRES = ("nbformat", "nbclient", "ipykernel")


def console() -> int:
    """The ``devicekit-grade`` console script: a clear message when the ``grade`` extra is missing."""
    import importlib.util

    missing = [name for name in REQUIRES if importlib.util.find_spec(name) is None]
    if missing:
        print(
            f"devicekit-grade needs {', '.join(missing)}: install the grader with "
            '`pip install "devicekit[grade]"`',
            file=sys.stderr,
        )
        return 2
    from devicekit_grade.cli import entry

    return entry()
