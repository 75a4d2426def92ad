"""Every lab keeps its explanations and answer keys folded until the learner has tried (authoring guide, "The
learner's path"): the first Markdown cell after each self-check opens with a ``<details>`` block that has a
``<summary>``, and no "Why this works" paragraph stands open anywhere else in the notebook.

Issue 40 found labs 10 and 11 printing every explanation open under its exercise; this holds every lab,
solutions and student notebooks, in both languages, to the rule.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from course_tools.paths import LABS, SOLUTIONS

NOTEBOOKS = sorted(SOLUTIONS.glob("*.ipynb")) + sorted(LABS.glob("*.ipynb"))
#: A self-check call, as every lab writes it: ``check("NN-slug", "key", answer)``.
CHECK = re.compile(r"^check\(", re.MULTILINE)
#: An explanation's opening words, bold or as a summary, in either language.
WHY = re.compile(r"\*\*(Why\b[^*]*|为什么[^*]*)\*\*|<summary>")
DETAILS = re.compile(r"<details>.*?</details>", re.DOTALL)


def unfolded_explanations(path: Path) -> list[str]:
    """What breaks the rule in the notebook at ``path``: one line per problem, empty when it holds."""
    cells = nbformat.read(path, as_version=4).cells
    problems = []
    for number, cell in enumerate(cells):
        if cell.cell_type == "code" and CHECK.search(cell.source):
            following = next((c for c in cells[number + 1 :] if c.cell_type == "markdown"), None)
            opening = following.source.lstrip() if following is not None else ""
            if not (opening.startswith("<details>") and "<summary>" in opening.split("</details>")[0]):
                problems.append(
                    f"cell {number}: the first Markdown cell after the check is not a <details> block"
                )
        if cell.cell_type == "markdown":
            outside = DETAILS.sub("", cell.source)
            if found := WHY.search(outside):
                problems.append(f"cell {number}: {found.group(0)!r} stands outside a <details> block")
            if cell.source.count("<details>") != cell.source.count("</details>"):
                problems.append(f"cell {number}: a <details> block is not closed")
    return problems


def test_every_notebook_has_checks_to_hold_to_the_rule():
    assert len(NOTEBOOKS) >= 44
    for path in NOTEBOOKS:
        cells = nbformat.read(path, as_version=4).cells
        assert any(c.cell_type == "code" and CHECK.search(c.source) for c in cells), path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_explanations_are_folded_after_the_check(path):
    assert unfolded_explanations(path) == []


def test_an_open_explanation_and_a_missing_fold_are_both_found(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell('check("01-devices", "move-batch", move_batch)'),
        nbformat.v4.new_markdown_cell("**Why this works.** Because.\n\n### Exercise 2"),
        nbformat.v4.new_code_cell('check("01-devices", "causal-mask", causal_mask)'),
        nbformat.v4.new_markdown_cell(
            "<details>\n<summary>Why</summary>\n\nFolded.\n\n</details>\n\n**为什么这样可行**：不行。"
        ),
    ]
    path = tmp_path / "open.ipynb"
    nbformat.write(nb, path)
    problems = unfolded_explanations(path)
    assert problems[0].startswith("cell 0: the first Markdown cell after the check")
    assert "'**Why this works.**' stands outside" in problems[1]
    assert "'**为什么这样可行**' stands outside" in problems[2]
    assert len(problems) == 3
