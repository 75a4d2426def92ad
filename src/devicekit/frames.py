"""The learner's own frames of a traceback: where, in *their* code, an error went through.

A device error's traceback is mostly PyTorch (``torch/nn/modules/module.py``, ``_call_impl``) and, in the
labs, devicekit. The line a learner can fix is the last frame of their own code: a notebook cell or their
own ``.py`` file. `own_frames` keeps those and drops PyTorch, devicekit, the standard library, installed
packages and generated code (a dataclass's ``__init__``, whose file name starts with ``<``).
"""

from __future__ import annotations

import sys
import sysconfig
import traceback
from pathlib import Path

__all__ = ["is_own_file", "last_own_frame", "not_learner_code", "own_frames"]

#: Path fragments of code that is never the learner's: installed packages, PyTorch, devicekit itself.
_NOT_OWN: list[str] = ["/site-packages/", "/dist-packages/", "/torch/", "/devicekit/"]


def not_learner_code(folder: str | Path) -> None:
    """Declare ``folder`` library code: its frames are never "the learner's line".

    For packages that run learner code in a checkout rather than from ``site-packages`` (a course's own
    check package, say); devicekit itself and PyTorch are known already.
    """
    fragment = "/" + str(Path(folder).resolve()).replace("\\", "/").strip("/") + "/"
    if fragment not in _NOT_OWN:
        _NOT_OWN.append(fragment)


def _library_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {paths.get("stdlib", ""), paths.get("platstdlib", ""), str(Path(sys.prefix) / "lib")}
    return tuple(r.replace("\\", "/") for r in roots if r)


def is_own_file(filename: str) -> bool:
    """Whether ``filename`` is learner code: a notebook cell or a file outside the libraries."""
    name = filename.replace("\\", "/")
    if "ipykernel_" in name or "ipython-input" in name:  # a notebook cell (ipykernel, classic IPython)
        return True
    if name.startswith("<") or any(part in name for part in _NOT_OWN):
        return False
    return not name.startswith(_library_roots())


def own_frames(error: BaseException) -> list[traceback.FrameSummary]:
    """The frames of ``error``'s traceback that are the learner's own code, outermost first."""
    return [f for f in traceback.extract_tb(error.__traceback__) if is_own_file(f.filename)]


def last_own_frame(error: BaseException) -> traceback.FrameSummary | None:
    """The innermost frame of the learner's own code: the line to read first, or None."""
    frames = own_frames(error)
    return frames[-1] if frames else None
