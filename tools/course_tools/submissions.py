"""Submissions built from labs/ and solutions/ for the grader's tests and benchmark, for every lab.

A *correct* submission is the student lab with each ``### BEGIN SOLUTION`` region's code filled in from
the solution notebook (what a learner who solved it hands in); an *untouched* one is the lab as released.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

from course_tools.paths import LABS, SOLUTIONS

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"


def graded_labs() -> list[str]:
    """Every lab with a solution, a student lab and self-checks (``NN-slug``)."""
    import devicekit_grade.identify as identify

    known = set(identify.known_labs())
    return [
        p.stem
        for p in sorted(SOLUTIONS.glob("[0-9][0-9]-*.ipynb"))
        if ".zh" not in p.name and p.stem in known and (LABS / p.name).exists()
    ]


def _suffix(lang: str) -> str:
    return ".zh" if lang == "zh" else ""


def lab_notebook(lab: str, lang: str = "en") -> nbformat.NotebookNode:
    return nbformat.read(LABS / f"{lab}{_suffix(lang)}.ipynb", as_version=4)


def solution_notebook(lab: str, lang: str = "en") -> nbformat.NotebookNode:
    return nbformat.read(SOLUTIONS / f"{lab}{_suffix(lang)}.ipynb", as_version=4)


def as_student_work(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A solution notebook as a learner's own correct work: no solution markers, role ``student``."""
    for cell in nb.cells:
        if cell.cell_type == "code" and BEGIN in cell.source:
            cell.source = "\n".join(
                line for line in cell.source.splitlines() if line.strip() not in (BEGIN, END)
            )
    meta = nb.metadata.setdefault("devicekit", {})
    meta["role"] = "student"
    return nb


def solved_lab(lab: str, lang: str = "en") -> nbformat.NotebookNode:
    """The student lab, its solution regions filled from the solution notebook.

    labs/ is generated from solutions/ cell by cell, so the cells correspond one to one; every cell whose
    solution holds a ``### BEGIN SOLUTION`` region takes the solution's code (markers removed).
    """
    nb, solution = lab_notebook(lab, lang), solution_notebook(lab, lang)
    assert len(nb.cells) == len(solution.cells), f"{lab}: labs/ and solutions/ are out of sync"
    for mine, theirs in zip(nb.cells, solution.cells, strict=True):
        if mine.cell_type == "code" and BEGIN in theirs.source:
            mine.source = as_student_work(_notebook_of([theirs])).cells[0].source
    return nb


def _notebook_of(cells: list) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.from_dict(dict(c)) for c in cells]
    return nb


def write(nb: nbformat.NotebookNode, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path
