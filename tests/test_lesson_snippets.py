"""Every ```python block on a lesson page runs, in order, in one namespace per page."""

from __future__ import annotations

import pytest

from _paths import DOCS, english
from test_parity import python_blocks

LESSONS = english(sorted((DOCS / "lessons").glob("*.md")))


@pytest.mark.parametrize("page", LESSONS, ids=lambda p: p.name)
def test_lesson_snippets_run(page):
    blocks = python_blocks(page.read_text(encoding="utf-8"))
    assert blocks, f"{page.name} has no runnable snippet"
    namespace: dict = {"__name__": f"lesson_{page.stem}"}
    for number, block in enumerate(blocks, start=1):
        try:
            exec(compile(block, f"{page.name} block {number}", "exec"), namespace)
        except Exception as exc:  # report which block failed, with its code
            pytest.fail(f"{page.name} block {number} raised {type(exc).__name__}: {exc}\n{block}")
