"""Both languages, always: every page and notebook has its twin, with identical code."""

from __future__ import annotations

import re

import nbformat
import pytest

from _paths import DOCS, LABS, SOLUTIONS, english, notebooks, zh_twin

PAGES = english(
    sorted(p for p in DOCS.rglob("*.md") if "overrides" not in p.parts and p.parts[-2:-1] != ("labs",))
)
NOTEBOOKS = english(notebooks(SOLUTIONS) + notebooks(LABS))
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
CJK = re.compile(r"[\u4e00-\u9fff]")


def python_blocks(text: str) -> list[str]:
    return [body for lang, body in FENCE.findall(text) if lang == "python"]


def test_there_is_something_to_compare():
    assert PAGES and NOTEBOOKS


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_pages_have_twins_with_identical_code(page):
    twin = zh_twin(page)
    assert twin.exists(), f"{twin.relative_to(DOCS)} is missing"
    en, zh = page.read_text(encoding="utf-8"), twin.read_text(encoding="utf-8")
    assert python_blocks(en) == python_blocks(zh)
    assert CJK.search(zh), "the Chinese page is written in Chinese"
    assert en.count("\n#") == zh.count("\n#"), "same section structure"


def _code(nb):
    """Code cells with the lab stubs (the one line written in the notebook's language) normalised."""
    stub = re.compile(r"^(\s*)(# TODO[:：].*|raise NotImplementedError\(.*\))$", re.MULTILINE)
    return [
        (stub.sub(r"\1<stub>", c.source), c.metadata.get("tags", []))
        for c in nb.cells
        if c.cell_type == "code"
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_notebooks_have_twins_with_identical_code_cells(path):
    twin = zh_twin(path)
    assert twin.exists(), f"{twin.name} is missing"
    en, zh = nbformat.read(path, as_version=4), nbformat.read(twin, as_version=4)
    assert _code(en) == _code(zh)
    assert [c.cell_type for c in en.cells] == [c.cell_type for c in zh.cells], "same cell structure"
    for cell_en, cell_zh in zip(en.cells, zh.cells, strict=True):
        if cell_en.cell_type == "markdown":
            assert CJK.search(cell_zh.source), (
                f"untranslated markdown cell in {twin.name}: {cell_zh.source[:60]}"
            )
    assert en.metadata["devicekit"]["lang"] == "en" and zh.metadata["devicekit"]["lang"] == "zh"
    meta_en = {k: v for k, v in en.metadata["devicekit"].items() if k != "lang"}
    meta_zh = {k: v for k, v in zh.metadata["devicekit"].items() if k != "lang"}
    assert meta_en == meta_zh


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_chinese_markdown_has_no_line_breaks_inside_sentences(path):
    # Jupyter, Colab and nbconvert render a line break inside a paragraph as a space, which shows between
    # two Chinese characters. (Markdown pages are fixed at build time by tools/site_hooks.py.)
    from site_hooks import CJK_BREAK

    zh = nbformat.read(zh_twin(path), as_version=4)
    for cell in zh.cells:
        if cell.cell_type == "markdown":
            text = re.sub(r"```.*?```", "", cell.source, flags=re.DOTALL)
            assert not CJK_BREAK.search(text), f"{zh_twin(path).name}: {text[:80]!r}"
