"""``%load_ext devicekit``: explain device errors right under the traceback, in the notebook's language.

After ``%load_ext devicekit``, every cell that fails with a PyTorch device error (``Expected all tensors
to be on the same device ...``) is followed by a short cause-and-fix explanation from
`explain`, in English or Chinese as `devicekit.lang.current_language` says:
the lab's setup cell declares its notebook's language with `devicekit.lang.set_language`, so Colab,
nbconvert and renamed copies get one language; otherwise the notebook's metadata or file name decides, and
only when nothing does (a plain script) are both given.  Errors that are not device errors print nothing.

It also adds the ``%devicelint`` magic (``devicekit.lint.magic``): ``%devicelint`` lints the current cell,
``%%devicelint`` a cell without running it, ``%devicelint --all`` every cell run so far, and
``%devicelint --on`` every cell before it runs; and ``%%dryrun`` (``devicekit.dryrun``), which runs a cell
on simulated GPUs, ``%dryrun script.py`` a script.

How: a ``post_run_cell`` event callback that looks at ``result.error_in_exec``.  IPython has already
shown the traceback by then (Jupyter has already received the ``error`` output), so the explanation
lands *under* it, and the extension never touches the exception: the cell still fails, "Run all" still
stops, ``%debug``, ``%tb`` and ``sys.last_value`` behave exactly as without it.  The alternative,
``shell.set_custom_exc``, would make the extension responsible for showing the traceback itself and
would replace any custom handler the learner or another extension installed; it is not needed here.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["explanation_text", "load_ipython_extension", "unload_ipython_extension", "where_text"]

EVENT = "post_run_cell"
# Attribute set on our callback, so a second load (``%load_ext devicekit`` then
# ``%load_ext devicekit.ipython``, or a reloaded module) recognises an existing registration.
_MARK = "_devicekit_explain_callback"


def explanation_text(error: BaseException, lang: str | None = None) -> str | None:
    """The text printed under the traceback of ``error``, or ``None`` when there is nothing to say.

    ``None`` for anything that is not a device error (``explain()`` gives ``family=None``) and for
    ``KeyboardInterrupt``/``SystemExit``.  ``lang`` is ``"en"``, ``"zh"`` or ``None``; ``None`` asks
    `devicekit.lang.current_language` each time, so changing ``DEVICEKIT_LANG`` takes effect at
    once; when the language stays unknown both explanations are given, English first.
    """
    if not isinstance(error, Exception):
        return None
    from devicekit.explain import explain
    from devicekit.lang import current_language

    explanation = explain(error)
    if explanation.family is None:
        return None
    lang = lang or current_language()
    en, zh = explanation.en, explanation.zh
    where = where_text(error)
    if where:
        en, zh = f"{en}\n{where[0]}", f"{zh}\n{where[1]}"
    blocks = {"en": [en], "zh": [zh]}.get(lang or "", [en, zh])
    return "\n\n".join(f"[devicekit] {block}" for block in blocks)


def where_text(error: BaseException) -> tuple[str, str] | None:
    """The learner's own line the error went through last, in both languages (`devicekit.frames`).

    ``%xmode Minimal`` keeps a lab's tracebacks to their last line; this names the one frame worth
    reading, so the learner neither scrolls through PyTorch's internals nor loses their own line. A line of
    a notebook cell is quoted with its code rather than named by the cell: which cell holds it (this one,
    or the earlier one that defined a function) and its ``In[n]`` depend on the order the cells ran in,
    so a claim about them would be wrong in some runs.
    """
    from devicekit.frames import last_own_frame

    frame = last_own_frame(error)
    if frame is None:
        return None
    where = frame_text(frame)
    return f"In your code: {where.en}", f"你的代码：{where.zh}"


def frame_text(frame: Any) -> Any:
    """One frame of the learner's code, both languages: ``train.py, line 19: `out = model(x)` ``, or
    ``line 3 of a notebook cell: ...`` (a `devicekit.messages.Message`; `where_text` and the dry run
    share it)."""
    from devicekit.messages import Message

    code = f": `{frame.line.strip()}`" if frame.line else ""
    code_zh = f"：`{frame.line.strip()}`" if frame.line else ""
    n = frame.lineno
    if "ipykernel_" in frame.filename or "ipython-input" in frame.filename:
        return Message(f"line {n} of a notebook cell{code}", f"单元格中的第 {n} 行{code_zh}")
    name = frame.filename.replace("\\", "/").rsplit("/", 1)[-1]
    return Message(f"{name}, line {n}{code}", f"{name} 第 {n} 行{code_zh}")


def _show_explanation(result: Any) -> None:
    """``post_run_cell`` callback: print the explanation of the cell's device error, if it had one."""
    error = getattr(result, "error_in_exec", None)
    if error is None:
        return
    try:
        text = explanation_text(error)
    except Exception:  # a helper must never add a second traceback to a failed cell
        return
    if text:
        # A blank line separates it from the traceback in a terminal; Jupyter shows it as its own output.
        print("\n" + text, file=sys.stdout, flush=True)


setattr(_show_explanation, _MARK, True)


def _registered(ipython: Any) -> list[Any]:
    return [cb for cb in ipython.events.callbacks.get(EVENT, []) if getattr(cb, _MARK, False)]


def load_ipython_extension(ipython: Any) -> None:
    """Called by ``%load_ext devicekit``: start explaining device errors under their traceback.

    Loading again (also as ``%load_ext devicekit.ipython``) changes nothing, so each error is
    explained once.
    """
    if not _registered(ipython):
        ipython.events.register(EVENT, _show_explanation)
    from devicekit.lint.magic import devicelint

    ipython.register_magic_function(devicelint, magic_kind="line_cell", magic_name="devicelint")
    from devicekit.dryrun import dryrun_magic

    ipython.register_magic_function(dryrun_magic, magic_kind="line_cell", magic_name="dryrun")


def unload_ipython_extension(ipython: Any) -> None:
    """Called by ``%unload_ext devicekit``: stop explaining errors.  Safe when not loaded."""
    for callback in _registered(ipython):
        ipython.events.unregister(EVENT, callback)
    from devicekit.lint.magic import stop_linting_cells

    stop_linting_cells(ipython)
    for kind in ("line", "cell"):
        for name in ("devicelint", "dryrun"):
            ipython.magics_manager.magics.get(kind, {}).pop(name, None)
