"""Both languages, always: every page and notebook has its twin, with identical code."""

from __future__ import annotations

import re

import nbformat
import pytest
from twins import (
    RUN_ALL,
    code_differences,
    notebook_code_differences,
    page_code_differences,
    page_skip_reason,
)

from course_tools.paths import DOCS, LABS, SOLUTIONS, english, notebooks, zh_twin

PAGES = english(
    sorted(p for p in DOCS.rglob("*.md") if "overrides" not in p.parts and p.parts[-2:-1] != ("labs",))
)
NOTEBOOKS = english(notebooks(SOLUTIONS) + notebooks(LABS))
CJK = re.compile(r"[\u4e00-\u9fff]")


def test_there_is_something_to_compare():
    assert PAGES and NOTEBOOKS


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_pages_have_twins_with_identical_code(page):
    twin = zh_twin(page)
    assert twin.exists(), f"{twin.relative_to(DOCS)} is missing"
    en, zh = page.read_text(encoding="utf-8"), twin.read_text(encoding="utf-8")
    problems = page_code_differences(en, zh, twin.name)
    assert not problems, "\n".join(problems)
    assert CJK.search(zh), "the Chinese page is written in Chinese"
    assert en.count("\n#") == zh.count("\n#"), "same section structure"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_notebooks_have_twins_with_identical_code_cells(path):
    twin = zh_twin(path)
    assert twin.exists(), f"{twin.name} is missing"
    en, zh = nbformat.read(path, as_version=4), nbformat.read(twin, as_version=4)
    problems = notebook_code_differences(path, twin)  # the number of code cells, their code and tags
    assert not problems, "\n".join(problems)
    assert [c.cell_type for c in en.cells] == [c.cell_type for c in zh.cells], "same cell structure"
    for cell_en, cell_zh in zip(en.cells, zh.cells, strict=True):
        if cell_en.cell_type == "markdown":
            assert CJK.search(cell_zh.source), (
                f"untranslated markdown cell in {twin.name}: {cell_zh.source[:60]}"
            )
    assert en.metadata["devicekit"]["lang"] == "en" and zh.metadata["devicekit"]["lang"] == "zh"
    per_language = ("lang", "short")  # the notebook's language and its name in the nav differ by design
    meta_en = {k: v for k, v in en.metadata["devicekit"].items() if k not in per_language}
    meta_zh = {k: v for k, v in zh.metadata["devicekit"].items() if k not in per_language}
    assert meta_en == meta_zh


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_chinese_markdown_has_no_line_breaks_inside_sentences(path):
    # Jupyter, Colab and nbconvert render a line break inside a paragraph as a space, which shows between
    # two Chinese characters. (Markdown pages are fixed at build time by course_tools/site/hooks.py.)
    from course_tools.site.hooks import cjk_breaks

    zh = nbformat.read(zh_twin(path), as_version=4)
    problems = []
    for number, cell in enumerate(zh.cells, 1):
        if cell.cell_type == "markdown":
            text = re.sub(r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), cell.source, flags=re.DOTALL)
            problems += [f"{zh_twin(path).name}: cell {number}, line {line}" for line in cjk_breaks(text)]
    assert not problems, "line breaks that render as stray spaces:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    ("en", "zh", "same"),
    [
        ("x = torch.ones(2)  # make it\n", "x = torch.ones(2)  # 创建张量\n", True),
        ('print("device:", x.device)\n', 'print("设备：", x.device)\n', True),
        (
            'def f(x):\n    """Move x."""\n    return x\n',
            'def f(x):\n    """移动 x。"""\n    return x\n',
            True,
        ),
        ('print(f"on {x.device}")\n', 'print(f"在 {x.device} 上")\n', True),
        ("%xmode Minimal\n", "%xmode Minimal\n", True),
        ('x.to("cuda")\n', 'x.to("cpu")\n', False),
        ("x = torch.ones(2)\n", "x = torch.zeros(2)\n", False),
        ("x = 1\n", "x = 1\ny = 2\n", False),
    ],
)
def test_code_comparison_ignores_only_comments_and_translated_strings(en, zh, same):
    assert (not code_differences(en, zh, "cell")) is same


def test_a_chinese_lesson_page_is_skipped_locally_only_where_its_snippets_are_the_english_code(
    tmp_path, monkeypatch
):
    monkeypatch.delenv(RUN_ALL, raising=False)
    en, zh = tmp_path / "a.md", tmp_path / "a.zh.md"
    en.write_text('```python\nprint("done")  # note\n```\n', encoding="utf-8")
    zh.write_text('```python\nprint("完成")  # 注释\n```\n', encoding="utf-8")
    reason = page_skip_reason(en, zh)
    assert reason and "a.md" in reason and RUN_ALL in reason
    monkeypatch.setenv(RUN_ALL, "1")
    assert page_skip_reason(en, zh) is None  # CI runs it
    monkeypatch.delenv(RUN_ALL)
    zh.write_text('```python\nprint("完成")\nx = 2\n```\n', encoding="utf-8")
    assert page_skip_reason(en, zh) is None  # other code: it runs
    zh.write_text('```python\nprint("完成")\n```\n\n```python\nx = 1\n```\n', encoding="utf-8")
    assert page_skip_reason(en, zh) is None  # another snippet: it runs
    assert page_skip_reason(en, tmp_path / "missing.zh.md") is None
