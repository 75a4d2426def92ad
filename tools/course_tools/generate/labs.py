"""Generate the student labs from the solution notebooks, and store real outputs in both.

The notebooks in ``solutions/`` are the source. Code between ``### BEGIN SOLUTION`` and
``### END SOLUTION`` (nbgrader's convention) is the answer; in ``labs/`` it becomes a TODO stub that raises
``NotImplementedError`` with a hint in the notebook's language: the region's ``### HINT: ...`` line if it
has one, else a general one. Everything else is copied unchanged. The install part of every solution's
first code cell (everything before ``import torch``) is written by ``setup_cell.py``, its one source.

    python -m course_tools.generate.labs sync     # regenerate labs/, execute labs/ and solutions/
    python -m course_tools.generate.labs sync --only 02   # the same for one lab (both languages)
    python -m course_tools.generate.labs check    # exit 1 when labs/ is out of date (used by the tests)

Executing is what puts outputs on the site: nothing is typed by hand. Each notebook runs in a fresh kernel
of this Python, with ``DEVICEKIT_LANG`` set from its file name so self-check hints match its language.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import sys
from pathlib import Path

import nbformat

from course_tools.generate import setup_cell
from course_tools.paths import LABS, ROOT, SOLUTIONS
from devicekit.lang import language_of_path

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
HINT = "### HINT:"
#: The file ipykernel writes a cell to (``/tmp/ipykernel_14294/2542620439.py``), as tracebacks and Dynamo's
#: "from user code" name it: a process id and a hash of this machine's run, not worth storing.
CELL_FILE = re.compile(r"ipykernel_\d+([/\\])\d+\.py")
CELL_FILE_STORED = r"ipykernel_<pid>\1<cell>.py"

STUB = {
    "en": 'raise NotImplementedError("Exercise: write your code here, then run the check cell below.")',
    "zh": 'raise NotImplementedError("练习：在这里写下你的代码，然后运行下面的自测单元格。")',
}
TODO = {"en": "# TODO: your code here", "zh": "# TODO：在这里写你的代码"}


class LabSourceError(ValueError):
    """A solution notebook that cannot be turned into a lab (unbalanced regions, unknown language...)."""


def language_of(path: Path) -> str:
    return language_of_path(str(path)) or "en"


def repo_url() -> str:
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    match = re.search(r"^repo_url:\s*(\S+)", text, re.MULTILINE)
    if not match:
        raise LabSourceError("mkdocs.yml has no repo_url setting")
    return match.group(1)


def stub(lang: str, hint: str | None) -> str:
    """The line that replaces a solution region: raises NotImplementedError with the exercise's hint."""
    if hint is None:
        return STUB[lang]
    return f"raise NotImplementedError({json.dumps(hint, ensure_ascii=False)})"


def strip_solution(source: str, lang: str, where: str) -> tuple[str, bool]:
    """Replace each solution region of one cell's source by a stub. Returns (source, had_region).

    A ``### HINT: ...`` line inside the region becomes the stub's message (the exercise's own hint).
    """
    out, inside, had_region, hint = [], False, False, None
    for number, line in enumerate(source.splitlines(), start=1):
        marker = line.strip()
        if marker == BEGIN:
            if inside:
                raise LabSourceError(f"{where}, line {number}: {BEGIN} inside another solution region")
            inside, had_region, hint = True, True, None
            indent = line[: len(line) - len(line.lstrip())]
        elif marker == END:
            if not inside:
                raise LabSourceError(f"{where}, line {number}: {END} without {BEGIN}")
            inside = False
            out += [indent + TODO[lang], indent + stub(lang, hint)]
        elif inside and marker.startswith(HINT):
            hint = marker[len(HINT) :].strip()
        elif not inside:
            out.append(line)
    if inside:
        raise LabSourceError(f"{where}: {BEGIN} is never closed by {END}")
    return "\n".join(out), had_region


def set_setup_cell(nb: nbformat.NotebookNode, lang: str, url: str, where: str = "notebook") -> None:
    """Put the one install block (``setup_cell.install_block``) at the top of the first code cell.

    Everything from that cell's ``import torch`` on is the lab's own and stays as written.
    """
    setup = next((cell for cell in nb.cells if cell.cell_type == "code"), None)
    if setup is None:
        raise LabSourceError(f"{where}: no code cell, so no setup cell")
    try:
        _, rest = setup_cell.split(setup.source)
    except ValueError as exc:
        raise LabSourceError(f"{where}: {exc}") from None
    setup.source = setup_cell.install_block(lang, url) + "\n\n" + rest


def student_version(solution: nbformat.NotebookNode, lang: str, name: str) -> nbformat.NotebookNode:
    """The student lab for one solution notebook (sources only; outputs are cleared)."""
    lab = copy.deepcopy(solution)
    lab.metadata.setdefault("devicekit", {})["role"] = "student"
    lab.metadata["devicekit"].pop("executed", None)  # set again when the lab itself is executed
    for index, cell in enumerate(lab.cells):
        if cell.cell_type != "code":
            continue
        cell.outputs, cell.execution_count = [], None
        cell.source, had_region = strip_solution(cell.source, lang, f"{name}, cell {index}")
        tags = cell.metadata.get("tags", [])
        # A stub at the top level raises as soon as the cell runs: tag it so "Run all" and nbval go on.
        if had_region and re.search(r"^raise NotImplementedError", cell.source, re.MULTILINE):
            cell.metadata["tags"] = [*tags, "raises-exception"] if "raises-exception" not in tags else tags
    return lab


def _sources(nb: nbformat.NotebookNode) -> list[tuple[str, str, list[str]]]:
    return [(c.cell_type, c.source, list(c.metadata.get("tags", []))) for c in nb.cells]


def _this_run() -> dict[str, str]:
    """What executes the notebooks: torch version and device kind (``cpu`` when there is no accelerator).

    The kernel runs in this same environment, so this is what the stored outputs come from; the site's
    "verified on" badge reads it (course_tools/generate/verified.py).
    """
    from importlib.metadata import version

    from devicekit import best_device

    return {"torch": version("torch"), "device": best_device().type}


def execute(nb: nbformat.NotebookNode, path: Path) -> nbformat.NotebookNode:
    from nbclient import NotebookClient

    os.environ["DEVICEKIT_LANG"] = language_of(path)
    client = NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        allow_errors=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    scrub_outputs(nb)
    nb.metadata.setdefault("devicekit", {})["executed"] = _this_run()
    return nb


def scrub_outputs(nb: nbformat.NotebookNode) -> None:
    """Replace what only this run printed (the cell's temporary file name) in the stored outputs."""

    def scrub(text):
        if isinstance(text, list):
            return [scrub(part) for part in text]
        return CELL_FILE.sub(CELL_FILE_STORED, text) if isinstance(text, str) else text

    for cell in nb.cells:
        for out in cell.get("outputs", []):
            for field in ("text", "evalue", "traceback"):
                if field in out:
                    out[field] = scrub(out[field])
            for kind, data in out.get("data", {}).items():
                if kind.startswith("text/"):
                    out["data"][kind] = scrub(data)


def sync(execute_notebooks: bool = True, only: str | None = None) -> list[Path]:
    """Regenerate every lab (or the one whose file name starts with ``only``, e.g. ``02``), execute labs
    and solutions, write the files that changed."""
    url, written = repo_url(), []
    chosen = sorted(p for p in SOLUTIONS.glob("*.ipynb") if only is None or p.name.startswith(only))
    if only is not None and not chosen:
        raise LabSourceError(f"no solution notebook in solutions/ starts with {only!r}")
    for solution_path in chosen:
        lang = language_of(solution_path)
        solution = nbformat.read(solution_path, as_version=4)
        set_setup_cell(solution, lang, url, solution_path.name)
        lab_path = LABS / solution_path.name
        lab = student_version(solution, lang, solution_path.name)
        for nb, path in ((solution, solution_path), (lab, lab_path)):
            if execute_notebooks:
                print(f"executing {path.relative_to(ROOT)}", flush=True)
                execute(nb, path)
            nbformat.validate(nb)
            text = nbformat.writes(nb) + "\n"
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8")
                written.append(path)
    return written


def out_of_date() -> list[str]:
    """Why labs/ differs from what the solutions generate (an empty list when it is in sync)."""
    problems, url = [], repo_url()
    solutions = {p.name for p in SOLUTIONS.glob("*.ipynb")}
    for extra in sorted({p.name for p in LABS.glob("*.ipynb")} - solutions):
        problems.append(f"labs/{extra} has no solutions/{extra}")
    for name in sorted(solutions):
        solution = nbformat.read(SOLUTIONS / name, as_version=4)
        expected_solution = copy.deepcopy(solution)
        set_setup_cell(expected_solution, language_of(SOLUTIONS / name), url, name)
        if _sources(expected_solution) != _sources(solution):
            problems.append(
                f"solutions/{name}: its setup cell does not install devicekit as setup_cell.py says "
                f"(course repository {url})"
            )
        lab_path = LABS / name
        if not lab_path.exists():
            problems.append(f"labs/{name} is missing")
            continue
        expected = student_version(expected_solution, language_of(lab_path), name)
        if _sources(expected) != _sources(nbformat.read(lab_path, as_version=4)):
            problems.append(f"labs/{name} differs from what solutions/{name} generates")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["sync", "check"])
    parser.add_argument("--no-execute", action="store_true", help="sync sources only, keep no outputs")
    parser.add_argument("--only", metavar="PREFIX", help="only labs whose name starts so (02)")
    args = parser.parse_args(argv)
    if args.command == "check":
        problems = out_of_date()
        for problem in problems:
            print(problem)
        if problems:
            print("Run `make labs` to regenerate labs/ from solutions/.")
        return 1 if problems else 0
    written = sync(execute_notebooks=not args.no_execute, only=args.only)
    print(f"{len(written)} notebook(s) written" + "".join(f"\n  {p.relative_to(ROOT)}" for p in written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
