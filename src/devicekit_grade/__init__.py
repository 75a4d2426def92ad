"""``devicekit-grade``: grade lab submissions an instructor can trust (its own package; the runtime library
``devicekit`` knows nothing of grading). Install with ``pip install "devicekit[grade]"``.

One submission's way through the grader (`devicekit_grade.run`), each module once: `discover` reads it,
`identify` names its lab and language, `released` compares it with the released lab, `box` runs it sealed
off (`sandbox`) in a kernel that runs each exercise's probe (`_kernel`), and the evaluator, a process that
holds no submission code (`_evaluator`, started by `context`), judges the observations, plain data
(`wire`, `observations`); `scoring` turns that into a row (`records`). Over the class: `integrity` flags
copies, `lms` names students and points, `report` writes the files. Every text is a
`devicekit.messages.Message`, in English and Chinese. Run ``devicekit-grade --help``.
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
        from devicekit.messages import Message

        names, command = ", ".join(missing), '`pip install "devicekit[grade]"`'
        told = Message(
            f"devicekit-grade needs {names}: install the grader with {command}",
            f"devicekit-grade 需要 {names}：请用 {command} 安装评分器",
        )
        print(told.en, told.zh, sep="\n", file=sys.stderr)  # before any language is chosen: both
        return 2
    from devicekit_grade.cli import entry

    return entry()
