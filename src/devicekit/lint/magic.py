"""`%devicelint` for IPython and Jupyter (registered by `%load_ext devicekit`).

- `%devicelint` at the top of a cell lints that cell's code (the magic line itself left out);
- `%%devicelint` lints the cell's body *without running it*;
- `%devicelint --all` lints every cell run so far, as one program (so a model defined in an earlier cell
  is known), and names each finding by its `In[N]`;
- `%devicelint --on` lints every cell before it runs (a `pre_run_cell` hook; the cell still runs),
  `%devicelint --off` stops that.

Options: `--select CODES`, `--ignore CODES`, `--lang en|zh`.
"""

from __future__ import annotations

import argparse
import ast
import re
import shlex
import sys
from typing import Any

from devicekit.lint.engine import lint_source
from devicekit.lint.rules import select_codes
from devicekit.messages import Message

#: What starts every line the magic prints (rule texts come in the learner\'s language).
PREFIX = "[devicelint] "
EVENT = "pre_run_cell"
_MARK = "_devicekit_lint_callback"
_IPYTHON_LINE = re.compile(r"^\s*[%!]")


def _options(line: str) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="%devicelint", add_help=False, exit_on_error=False)
    p.add_argument("--all", action="store_true")
    p.add_argument("--on", action="store_true")
    p.add_argument("--off", action="store_true")
    p.add_argument("--select", default=None)
    p.add_argument("--ignore", default=None)
    p.add_argument("--lang", choices=("en", "zh"), default=None)
    return p.parse_args(shlex.split(line))


def _python_only(code: str) -> str:
    """The cell with IPython syntax (`%magic`, `!shell`) blanked, line numbers kept."""
    return "\n".join("" if _IPYTHON_LINE.match(text) else text for text in code.splitlines())


def lint_cell_text(
    code: str, codes: frozenset[str] | None = None, lang: str | None = None, name: str = "cell"
) -> list[str]:
    """The lines `%devicelint` prints for one cell's code: `cell:LINE:COL: DKnnn message`.

    A cell that does not parse gives one line saying so.
    """
    from devicekit.lang import current_language

    lang = lang or current_language() or "en"
    try:
        findings = lint_source(_python_only(code), path=name, codes=codes, notebook=True)
    except SyntaxError as exc:
        return [f"{name}:{exc.lineno or 0}:{exc.offset or 0}: E999 {exc.msg}"]
    return [f"{name}:{f.line}:{f.col}: {f.code} {f.message(lang)}" for f in findings]


def lint_history(
    inputs: list[str], codes: frozenset[str] | None = None, lang: str | None = None
) -> list[str]:
    """Lint the cells run so far (`In[1:]`) as one program; findings named `In[N]:LINE:COL`."""
    from devicekit.lang import current_language

    lang = lang or current_language() or "en"
    parts: list[str] = []
    where: list[tuple[int, int]] = []
    out: list[str] = []
    for number, code in enumerate(inputs, start=1):
        code = _python_only(code)
        try:
            ast.parse(code)
        except SyntaxError:
            continue
        lines = code.splitlines() or [""]
        parts.extend(lines)
        where.extend((number, n) for n in range(1, len(lines) + 1))
    for f in lint_source("\n".join(parts) + "\n", path="<history>", codes=codes, notebook=True):
        number, line = where[f.line - 1]
        out.append(f"In[{number}]:{line}:{f.col}: {f.code} {f.message(lang)}")
    return out


def _shell() -> Any:
    from IPython import get_ipython

    return get_ipython()


def _hooks(shell: Any) -> list[Any]:
    return [cb for cb in shell.events.callbacks.get(EVENT, []) if getattr(cb, _MARK, False)]


def _make_hook(codes: frozenset[str], lang: str | None) -> Any:
    def lint_before_run(info: Any) -> None:
        code = getattr(info, "raw_cell", "") or ""
        if code.lstrip().startswith(("%devicelint", "%%devicelint")):
            return
        try:
            lines = lint_cell_text(code, codes, lang)
        except Exception:  # a helper must never stop a cell from running
            return
        if lines:
            print("\n".join(PREFIX + text for text in lines), file=sys.stdout, flush=True)

    setattr(lint_before_run, _MARK, True)
    return lint_before_run


def stop_linting_cells(shell: Any) -> None:
    """Remove the `%devicelint --on` hook (safe when it is not there)."""
    for hook in _hooks(shell):
        shell.events.unregister(EVENT, hook)


def devicelint(line: str, cell: str | None = None) -> None:
    """The `%devicelint` / `%%devicelint` magic (see the module docstring)."""
    try:
        args = _options(line)
        codes = select_codes(
            args.select.split(",") if args.select else None, args.ignore.split(",") if args.ignore else None
        )
    except (argparse.ArgumentError, ValueError, SystemExit) as exc:
        print(Message(f"%devicelint: {exc}", f"%devicelint：{exc}").text(None), file=sys.stderr)
        return
    shell = _shell()
    if args.on or args.off:
        if shell is not None:
            stop_linting_cells(shell)
            if args.on:
                shell.events.register(EVENT, _make_hook(codes, args.lang))
        on = Message("every cell is linted before it runs", "每个单元格运行之前都会先做静态检查")
        off = Message("cells are no longer linted", "单元格运行之前不再做静态检查")
        print(PREFIX + (on if args.on else off).text(args.lang))
        return
    if cell is not None:
        lines = lint_cell_text(cell, codes, args.lang)
    elif args.all:
        history = list(shell.user_ns.get("In", [""])[1:]) if shell is not None else []
        lines = lint_history(history[:-1] if history else [], codes, args.lang)
    else:
        current = ""
        if shell is not None:
            inputs = shell.user_ns.get("In", [""])
            current = inputs[-1] if len(inputs) > 1 else ""
        lines = lint_cell_text(current, codes, args.lang)
    clean = Message("[devicelint] no device problems found", "[devicelint] 没有发现设备问题")
    print("\n".join(lines) if lines else clean.text(args.lang))
