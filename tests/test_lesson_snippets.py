"""Every ```python block on a lesson page runs, in order, in one namespace per page; and every output
block marked ``<!-- output: cpu-runner -->`` is what those blocks really print on a CPU-only runner."""

from __future__ import annotations

import contextlib
import io
import re

import pytest
from twins import page_skip_reason, python_blocks

import devicekit
from course_tools.paths import DOCS, english, zh_twin
from devicekit.lang import using_language

LESSONS = english(sorted((DOCS / "lessons").glob("*.md")))
#: A page's snippets take seconds (lessons 8 and 11 start two processes): the integration layer.
pytestmark = pytest.mark.integration
MARKED_OUTPUT = re.compile(r"<!-- output: cpu-runner -->\s*\n\s*```text\n(.*?)\n\s*```", re.DOTALL)


def _run_page(page, lang: str) -> str:
    blocks = python_blocks(page.read_text(encoding="utf-8"))
    assert blocks, f"{page.name} has no runnable snippet"
    namespace: dict = {"__name__": f"lesson_{page.stem}"}
    printed = io.StringIO()
    with using_language(lang):  # a reader of the Chinese page runs it in a Chinese notebook
        for number, block in enumerate(blocks, start=1):
            try:
                with contextlib.redirect_stdout(printed):
                    exec(compile(block, f"{page.name} block {number}", "exec"), namespace)
            except Exception as exc:  # report which block failed, with its code
                pytest.fail(f"{page.name} block {number} raised {type(exc).__name__}: {exc}\n{block}")
    return printed.getvalue()


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("page", LESSONS, ids=lambda p: p.name)
def test_lesson_snippets_run_and_shown_output_is_real(page, lang):
    """Each page's snippets run in its own language (the Chinese page prints Chinese labels, and
    devicekit answers in Chinese there), and each of its marked output blocks is what they print. A Chinese
    page with the English page's code is skipped locally (`twins.page_skip_reason`)."""
    if lang == "zh" and (reason := page_skip_reason(page, zh_twin(page))):
        pytest.skip(reason)
    twin = page if lang == "en" else zh_twin(page)
    printed = _run_page(twin, lang)
    if devicekit.best_device().type != "cpu":
        return  # the marked blocks quote the CPU runner; an accelerator prints CUDA's wording instead
    for block in MARKED_OUTPUT.findall(twin.read_text(encoding="utf-8")):
        for line in block.splitlines():
            assert line.strip() in printed, (
                f"{twin.name} shows {line.strip()!r}, which the snippets never print"
            )
