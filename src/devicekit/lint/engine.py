"""Linting a source string, a `.py` file, a notebook, or a list of files and folders."""

from __future__ import annotations

import ast
import gc
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from devicekit.lint.calls import check_calls
from devicekit.lint.core import Context, Finding
from devicekit.lint.dataflow import check_dataflow, forget_labels
from devicekit.lint.flow import check_flow
from devicekit.lint.index import forget_walks
from devicekit.lint.modules import check_modules
from devicekit.lint.nbjson import cell_positions, file_position, split_lines
from devicekit.lint.project import Project, SourceFile, module_names
from devicekit.lint.rules import DEFAULT_CODES
from devicekit.messages import Message, localised

_CHECKS = (check_modules, check_calls, check_flow, check_dataflow)
# IPython syntax that is not Python: `%magic`, `!shell`, `?help`, `obj?`. Blanked to keep line numbers.
_IPYTHON_LINE = re.compile(r"^\s*([%!?]|.*\?\s*$)")
_SKIPPED_DIRS = {
    ".git",
    ".venv",
    "venv",
    "__pycache__",
    "node_modules",
    ".ipynb_checkpoints",
    "build",
    "site",
}


@dataclass(frozen=True)
class LintError:
    """A file that could not be linted (it does not parse, or cannot be read).

    Attributes:
        path: the file.
        line: 1-based line of the syntax error (0 when unknown).
        col: 1-based column (0 when unknown).
        message: what went wrong, in both languages.
        cell: the notebook cell, or None.
        file_line: in a notebook, the line of the `.ipynb` file the error is on (None when unknown).
        file_col: in a notebook, the column in the `.ipynb` file.
    """

    path: str
    line: int
    col: int
    message: Message
    cell: int | None = None
    file_line: int | None = None
    file_col: int | None = None


def lint_source(
    source: str,
    path: str = "<string>",
    codes: Iterable[str] | None = None,
    notebook: bool = False,
) -> list[Finding]:
    """The findings in one piece of Python source, sorted by position.

    Args:
        source: the code.
        path: the name findings carry.
        codes: the rule codes to run (default: the default rules).
        notebook: the code is a notebook's (`DK214` needs this: functions defined in it live in `__main__`).

    Raises:
        SyntaxError: the source does not parse.

    Python's cycle collector is paused meanwhile, as in `lint_paths`: the tree and the analysis' tables
    are many small objects that hold no cycles (`tests/test_lint_speed.py`), so the collections that
    making them would trigger have nothing to find.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        tree = ast.parse(source, filename=path)
        return lint_tree(tree, split_lines(source), path, codes, notebook)
    finally:
        if paused:
            gc.enable()


def lint_tree(
    tree: ast.Module,
    lines: list[str],
    path: str = "<string>",
    codes: Iterable[str] | None = None,
    notebook: bool = False,
    project: Project | None = None,
) -> list[Finding]:
    """The findings in an already parsed module (`lines` are its source lines, for `# noqa`), with the
    other files of `project` in view (calls into them are followed); alone when `project` is None."""
    chosen = frozenset(codes) if codes is not None else DEFAULT_CODES
    source = project.files.get(path) if project is not None else None
    ctx = Context(
        tree=tree, lines=lines, codes=chosen, notebook=notebook, path=path, project=project, source=source
    )
    try:
        for check in _CHECKS:
            try:
                check(ctx)
            except RecursionError:  # code nested deeper than the checks recurse (generated code): that
                continue  # check says nothing about this file; the others still run
    finally:
        if project is None:  # alone: the nodes `walk` kept for this file would keep its tree alive
            forget_walks()  # (`lint_paths` forgets them once the whole project is linted)
    return sorted(
        Finding(path, None, line, col, code, detail, fix=ctx.fixes.get((line, col, code)))
        for (line, col, code), detail in ctx.found.items()
    )


def _raw_source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _cell_source(text: str) -> str:
    """The cell's code with its IPython lines blanked (line numbers kept); an indented one becomes `pass`,
    so that a block holding only magics (`elif logger == "TensorBoard":` then `%load_ext ...`) parses."""
    return "\n".join(_blanked(line) if _IPYTHON_LINE.match(line) else line for line in split_lines(text))


def _blanked(line: str) -> str:
    indent = line[: len(line) - len(line.lstrip())]
    return f"{indent}pass" if indent else ""


def lint_notebook(
    path: str, codes: Iterable[str] | None = None, text: str | None = None
) -> tuple[list[Finding], list[LintError]]:
    """Lint the code cells of a notebook as one program, so a model defined in one cell is known in the next.

    A cell that does not parse is reported as a `LintError` and left out; the others are still linted.
    Findings carry the cell's 1-based index among all cells and the line within that cell, and, where the
    notebook's JSON can be read for positions, the line and column in the `.ipynb` file (`file_line`).

    Raises:
        OSError: the file cannot be read.
        ValueError: the file is not a notebook (not JSON, or no `cells`).
    """
    import json  # only notebooks need it: linting `.py` files does not import it (start-up time)

    if text is None:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    try:
        cells = json.loads(text)["cells"]
    except (ValueError, KeyError, TypeError) as exc:
        raise localised(
            ValueError,
            Message(f"{path}: not a Jupyter notebook ({exc})", f"{path}：不是 Jupyter notebook（{exc}）"),
        ) from None
    try:
        positions = cell_positions(text)
    except ValueError:
        positions = {}
    raw: dict[int, str] = {}

    def in_file(cell: int | None, line: int, col: int) -> tuple[int | None, int | None]:
        if cell is None or cell not in positions:
            return None, None
        return file_position(positions[cell], raw[cell], line, col) or (None, None)

    errors: list[LintError] = []
    parts: list[str] = []
    where: list[tuple[int, int]] = []  # for each line of the joined program: (cell, line in cell)
    for index, cell in enumerate(cells, start=1):
        if cell.get("cell_type") != "code":
            continue
        raw[index] = _raw_source(cell)
        source = _cell_source(raw[index])
        try:
            ast.parse(source)
        except SyntaxError as exc:
            line, col = exc.lineno or 0, exc.offset or 0
            errors.append(LintError(path, line, col, _syntax(exc), index, *in_file(index, line, col)))
            continue
        lines = split_lines(source) or [""]
        parts.extend(lines)
        where.extend((index, n) for n in range(1, len(lines) + 1))
    findings = []
    for finding in lint_source("\n".join(parts) + "\n", path, codes, notebook=True):
        cell, line = where[finding.line - 1] if finding.line <= len(where) else (None, finding.line)
        findings.append(
            Finding(
                path,
                cell,
                line,
                finding.col,
                finding.code,
                finding.detail,
                *in_file(cell, line, finding.col),
                fix=finding.fix,
            )
        )
    return sorted(findings, key=lambda f: (f.cell or 0, f.line, f.col, f.code)), errors


def lint_file(path: str, codes: Iterable[str] | None = None) -> tuple[list[Finding], list[LintError]]:
    """Lint one `.py` or `.ipynb` file: its findings, and the errors that kept (part of) it from linting."""
    try:
        if path.endswith(".ipynb"):
            return lint_notebook(path, codes)
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
    except UnicodeDecodeError as exc:
        why = Message(f"cannot be read as UTF-8 ({exc.reason})", f"不是 UTF-8 编码，无法读取（{exc.reason}）")
        return [], [LintError(path, 0, 0, why)]
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        return [], [LintError(path, 0, 0, Message(f"cannot be read ({reason})", f"无法读取（{reason}）"))]
    except ValueError as exc:  # not a notebook: lint_notebook's error is bilingual
        return [], [
            LintError(path, 0, 0, Message(getattr(exc, "en", str(exc)), getattr(exc, "zh", str(exc))))
        ]
    try:
        return lint_source(source, path, codes), []
    except SyntaxError as exc:
        return [], [LintError(path, exc.lineno or 0, exc.offset or 0, _syntax(exc))]
    except RecursionError:  # Python's own parser gives up on expressions nested thousands deep
        why = Message("nested too deeply for Python's parser", "嵌套太深，Python 的解析器无法解析")
        return [], [LintError(path, 0, 0, why)]


def _syntax(exc: SyntaxError) -> Message:
    """A syntax error's message (Python's own words, quoted in both languages)."""
    what = exc.msg or "invalid syntax"
    return Message(f"does not parse: {what}", f"无法解析：{what}")


def iter_files(paths: Iterable[str]) -> Iterator[str]:
    """The `.py` and `.ipynb` files named by `paths` (folders searched recursively, sorted)."""
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS and not d.startswith("."))
                for name in sorted(files):
                    if name.endswith((".py", ".ipynb")):
                        yield os.path.join(root, name)
        else:
            yield path


def lint_paths(
    paths: Iterable[str], codes: Iterable[str] | None = None
) -> tuple[list[Finding], list[LintError]]:
    """Lint files and folders as one project (a call into another of the files is followed); a file that
    cannot be linted is reported and the rest still are.

    The syntax trees of all the files stay alive together; Python's cycle collector would walk them again
    and again (a third of the time on 300 files), and they hold no cycles to collect, so it is paused
    while they are read and linted.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        return _lint_paths(paths, codes)
    finally:
        forget_walks()
        forget_labels()
        if paused:
            gc.enable()


def _lint_paths(
    paths: Iterable[str], codes: Iterable[str] | None = None
) -> tuple[list[Finding], list[LintError]]:
    chosen = frozenset(codes) if codes is not None else DEFAULT_CODES
    findings: list[Finding] = []
    errors: list[LintError] = []
    parsed: dict[str, tuple[ast.Module, str]] = {}
    order: list[str] = []
    for path in iter_files(paths):
        order.append(path)
        if not os.path.exists(path):
            continue
        if path.endswith(".py"):
            try:
                with open(path, encoding="utf-8") as handle:
                    text = handle.read()
                parsed[path] = (ast.parse(text, filename=path), text)
            except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
                pass  # lint_file reports it
    project = Project(
        [SourceFile(p, tree, module_names(p)[0], text=text) for p, (tree, text) in parsed.items()]
    )
    for path in order:
        if not os.path.exists(path):
            errors.append(LintError(path, 0, 0, Message("no such file or folder", "没有这个文件或文件夹")))
            continue
        if path in parsed:
            tree, text = parsed[path]
            findings.extend(lint_tree(tree, split_lines(text), path, chosen, project=project))
            continue
        found, failed = lint_file(path, chosen)
        findings.extend(found)
        errors.extend(failed)
    return findings, errors
