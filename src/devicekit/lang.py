"""Which language (``en`` or ``zh``) the learner is reading, so hints and explanations can match it.

Code cells are identical in the English and Chinese twin of every lab, so the language cannot be written
in the code. It is found, in this order, from:

1. ``DEVICEKIT_LANG`` (``en`` or ``zh``), set by the grader, the test suite, or the learner;
2. the notebook's file name (``*.zh.ipynb`` is Chinese), which Jupyter Server passes to the kernel as
   ``JPY_SESSION_NAME`` and VS Code as ``__vsc_ipynb_file__``.

When neither says anything (Google Colab, a plain script) the language is unknown and callers show both.
"""

from __future__ import annotations

import os
from typing import Literal

Lang = Literal["en", "zh"]
LANG_ENV = "DEVICEKIT_LANG"


def language_of_path(path: str) -> Lang | None:
    """``zh`` for ``*.zh.ipynb``, ``en`` for another notebook, None otherwise: the twins' naming rule."""
    if not path:
        return None
    name = os.path.basename(path).lower()
    if name.endswith(".zh.ipynb") or name.endswith(".zh.py"):
        return "zh"
    if name.endswith(".ipynb"):
        return "en"
    return None


def _notebook_path() -> str:
    path = os.environ.get("JPY_SESSION_NAME", "")
    if path:
        return path
    try:
        from IPython import get_ipython
    except ImportError:
        return ""
    shell = get_ipython()
    if shell is None:
        return ""
    return str(shell.user_ns.get("__vsc_ipynb_file__") or shell.user_ns.get("__session__") or "")


def current_language() -> Lang | None:
    """``"en"``, ``"zh"``, or ``None`` when the language cannot be known (then show both)."""
    value = os.environ.get(LANG_ENV, "").strip().lower()
    if value.startswith("zh"):
        return "zh"
    if value.startswith("en"):
        return "en"
    return language_of_path(_notebook_path())


def pick(en: str, zh: str, lang: Lang | None = None) -> str:
    """The text in ``lang`` (default: `current_language`), or both lines when the language is unknown."""
    lang = lang or current_language()
    if lang == "en":
        return en
    if lang == "zh":
        return zh
    return f"{en}\n{zh}"
