"""Which language (``en`` or ``zh``) the learner is reading, so hints and explanations can match it.

The English and Chinese twin of every lab run the same code, so the language has to come from somewhere
else. It is found, in this order, from:

1. ``DEVICEKIT_LANG`` (``en`` or ``zh``), set by the grader, the test suite, or a learner who wants it;
2. `set_language`, which every lab's setup cell calls with its notebook's language (a string literal that
   differs between the twins), so Colab, nbconvert and renamed copies all know it;
3. the notebook's own metadata, ``metadata.devicekit.lang``, read from the notebook file when the kernel
   knows its path (Jupyter Server passes it as ``JPY_SESSION_NAME``, VS Code as ``__vsc_ipynb_file__``);
4. that file's name: ``*.zh.ipynb`` is Chinese, also as a renamed copy (``01-devices.zh (1).ipynb``,
   ``01-devices.zh-Copy1.ipynb``), and any other notebook is English.

When none of these says anything (a plain script) the language is unknown and `pick` shows both.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterator

# `typing` is not imported at run time: `devicekit-lint` imports this module and starts faster without it
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    Lang = Literal["en", "zh"]
else:
    Lang = str
LANG_ENV = "DEVICEKIT_LANG"

# ``.zh`` as the last part of the stem, optionally followed by what a copy adds: " (1)", "-Copy1", " copy".
_ZH_NAME = re.compile(r"\.zh(?![a-z0-9])[^.]*\.(ipynb|py)$")
_notebook_language: Lang | None = None
_forced: list[Lang] = []  # using_language() blocks, innermost last
_metadata_cache: dict[tuple[str, float], Lang | None] = {}


def _normalise(value: object) -> Lang | None:
    text = str(value or "").strip().lower()
    if text.startswith("zh"):
        return "zh"
    if text.startswith("en"):
        return "en"
    return None


def language_of_path(path: str) -> Lang | None:
    """``zh`` for ``*.zh.ipynb`` (and its renamed copies), ``en`` for another notebook, else None."""
    if not path:
        return None
    name = os.path.basename(path).lower()
    if _ZH_NAME.search(name):
        return "zh"
    if name.endswith(".ipynb"):
        return "en"
    return None


def _unknown_language(lang: object) -> ValueError:
    from devicekit.messages import Message, localised  # messages imports this module: import it late

    return localised(
        ValueError,
        Message(f"unknown language {lang!r}: use 'en' or 'zh'", f"未知的语言 {lang!r}：请用 'en' 或 'zh'"),
    )


def set_language(lang: str | None) -> None:
    """Declare the language of the running notebook (the labs' setup cell does); ``None`` forgets it.

    Raises:
        ValueError: ``lang`` is neither ``"en"`` nor ``"zh"``.
    """
    global _notebook_language
    if lang is None:
        _notebook_language = None
        return
    normalised = _normalise(lang)
    if normalised is None:
        raise _unknown_language(lang)
    _notebook_language = normalised


def language_of_notebook(path: str) -> Lang | None:
    """``metadata.devicekit.lang`` of the notebook file at ``path``; None when it cannot be read."""
    try:
        key = (os.path.abspath(path), os.path.getmtime(path))
    except OSError:
        return None
    if key not in _metadata_cache:
        try:
            import json  # only here: `import devicekit.lint` starts without it

            with open(path, encoding="utf-8") as handle:
                metadata = json.load(handle).get("metadata", {})
            _metadata_cache[key] = _normalise(metadata.get("devicekit", {}).get("lang"))
        except (OSError, ValueError, AttributeError):
            _metadata_cache[key] = None
    return _metadata_cache[key]


def _notebook_path() -> str:
    path = os.environ.get("JPY_SESSION_NAME", "")
    if path:
        return path
    # A running IPython shell means IPython is imported already: importing it here would only cost a
    # command-line tool (devicekit-lint) a fifth of a second to learn that there is none.
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return ""
    shell = ipython.get_ipython()
    if shell is None:
        return ""
    return str(shell.user_ns.get("__vsc_ipynb_file__") or shell.user_ns.get("__session__") or "")


def _language_from_file(path: str) -> Lang | None:
    if not path:
        return None
    # Jupyter Server may give a path relative to its root; the kernel runs in the notebook's folder.
    for candidate in (path, os.path.basename(path)):
        found = language_of_notebook(candidate)
        if found is not None:
            return found
    return language_of_path(path)


def current_language() -> Lang | None:
    """``"en"``, ``"zh"``, or ``None`` when the language cannot be known (then show both).

    Inside a `using_language` block, that block's language comes first.
    """
    if _forced:
        return _forced[-1]
    return _normalise(os.environ.get(LANG_ENV)) or _notebook_language or _language_from_file(_notebook_path())


@contextlib.contextmanager
def using_language(lang: str) -> Iterator[None]:
    """Make `current_language` answer ``lang`` inside the block (e.g. to read devicekit's own errors in
    English, as an error classifier must).  Blocks nest; the previous language is back afterwards.

    Raises:
        ValueError: ``lang`` is neither ``"en"`` nor ``"zh"``.
    """
    normalised = _normalise(lang)
    if normalised is None:
        raise _unknown_language(lang)
    _forced.append(normalised)
    try:
        yield
    finally:
        _forced.pop()


def pick(en: str, zh: str, lang: Lang | None = None) -> str:
    """The text in ``lang`` (default: `current_language`), or both lines when the language is unknown."""
    lang = lang or current_language()
    if lang == "en":
        return en
    if lang == "zh":
        return zh
    return f"{en}\n{zh}"
