"""The built site: strict, both languages, lab pages rendered (not raw JSON), anchors alive, buttons,
Chinese search, and a render cache that hits. Each check guards one of the silent failures fixed in
tools/site_hooks.py."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import labs as labtool
from _paths import DOCS, LABS, ROOT, english, notebooks

MKDOCS = [sys.executable, "-m", "mkdocs", "build", "--strict"]
LAB_PAGES = [
    f"{folder}/{p.stem}" for folder in ("labs", "solutions") for p in english(notebooks(ROOT / folder))
]


def _build(site: Path) -> str:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    run = subprocess.run([*MKDOCS, "-d", str(site)], cwd=ROOT, env=env, capture_output=True, text=True)
    log = run.stdout + run.stderr
    assert run.returncode == 0, log
    return log


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    site = tmp_path_factory.mktemp("site")
    first = _build(site)
    second = _build(site)
    return site, first, second


def _page(site: Path, url: str, lang: str) -> str:
    prefix = "" if lang == "en" else "zh/"
    return (site / f"{prefix}{url}/index.html").read_text(encoding="utf-8")


def test_strict_build_has_no_warnings(built):
    _, first, second = built
    for log in (first, second):
        assert not [line for line in log.splitlines() if "WARNING" in line and "TCP" not in line], log


@pytest.mark.parametrize("url", LAB_PAGES)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_lab_pages_are_rendered_notebooks(built, url, lang):
    site, _, _ = built
    page = _page(site, url, lang)
    assert not page.lstrip().startswith("{"), "raw notebook JSON instead of a page"
    assert "<!doctype html>" in page.lower()
    source = ROOT / f"{url}{'' if lang == 'en' else '.zh'}.ipynb"
    title = next(c for c in json.loads(source.read_text())["cells"] if c["cell_type"] == "markdown")
    heading = "".join(title["source"]).splitlines()[0].lstrip("# ").split("`")[0].strip()
    assert html.escape(heading, quote=False) in page, (
        f"{url} ({lang}) does not show its own title {heading!r}"
    )
    assert 'class="jp-Cell' in page or "jp-Notebook" in page


@pytest.mark.parametrize("url", LAB_PAGES)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_lab_pages_show_error_and_buttons(built, url, lang):
    site, _, _ = built
    page = _page(site, url, lang)
    name = f"{Path(url).name}{'' if lang == 'en' else '.zh'}.ipynb"
    assert "RuntimeError" in page and "is not on the expected device" in page, "stored error output missing"
    repo = labtool.repo_url().removeprefix("https://github.com/")
    colab = f"https://colab.research.google.com/github/{repo}/blob/main/{Path(url).parent}/{name}"
    assert f'href="{colab}"' in page
    assert f'href="{name}" download' in page
    assert (site / ("" if lang == "en" else "zh") / url / name).exists(), "download target missing"
    assert "assets/colab-badge.svg" in page


def _all_pages(site: Path):
    return sorted(site.rglob("index.html"))


def test_every_in_page_anchor_exists(built):
    site, _, _ = built
    checked = 0
    for path in _all_pages(site):
        page = path.read_text(encoding="utf-8")
        ids = set(re.findall(r'\sid="([^"]*)"', page))
        assert "" not in ids, f'{path.relative_to(site)} has an empty id=""'
        for anchor in set(re.findall(r'href="#([^"]+)"', page)):
            assert html.unescape(anchor) in {html.unescape(i) for i in ids}, (
                f"{path.relative_to(site)}: #{anchor}"
            )
            checked += 1
    assert checked > 20


def test_chinese_headings_keep_chinese_ids(built):
    site, _, _ = built
    page = _page(site, "labs/01-devices", "zh")
    assert 'id="2-触发报错"' in page
    assert 'href="#2-触发报错"' in page


def test_language_switcher_links_page_to_page(built):
    site, _, _ = built
    for url in ["lessons/01-devices", *LAB_PAGES]:
        en, zh = _page(site, url, "en"), _page(site, url, "zh")
        assert re.search(rf'href="[./]*zh/{url}/"[^>]*hreflang="zh"', en), f"{url}: no link to the zh page"
        assert re.search(rf'href="[./]*{url}/"[^>]*hreflang="en"', zh), f"{url}: no link to the en page"


def test_chinese_search_finds_chinese_words(built):
    site, _, _ = built
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    separator = re.compile(index["config"]["separator"])
    zh_docs = [d for d in index["docs"] if d["location"].startswith("zh/")]
    assert zh_docs, "the search index has no Chinese pages"
    hits = {
        d["location"].split("#")[0]
        for d in zh_docs
        if "设备" in separator.split(d["text"] + " " + d["title"])
    }
    assert "zh/lessons/01-devices/" in hits
    assert "zh/labs/01-devices/" in hits
    en_hits = {
        d["location"].split("#")[0] for d in index["docs"] if "device" in separator.split(d["text"].lower())
    }
    assert "lessons/01-devices/" in en_hits


def test_render_cache_hits_on_the_second_build(built):
    _, first, second = built
    pages = len(LAB_PAGES) * 2
    assert second.count("Cache hit") == pages, second
    assert "Cache miss" not in second
    assert first.count("Cache hit") + first.count("Cache miss") == pages


def test_mirror_is_ignored_and_complete(built):
    ignored = (ROOT / ".gitignore").read_text()
    assert "docs/labs/" in ignored and "docs/solutions/" in ignored
    for nb in notebooks(LABS):
        assert (DOCS / "labs" / nb.name).read_bytes() == nb.read_bytes()


def test_no_outside_fonts_or_scripts(built):
    site, _, _ = built
    for path in _all_pages(site):
        page = path.read_text(encoding="utf-8")
        assert "fonts.googleapis.com" not in page, path
        assert not re.search(r'<script[^>]+src="https?://', page), path


def test_course_map_and_badges_come_from_lab_metadata(built):
    site, _, _ = built
    import course

    for lab in course.labs():
        for lang in ("en", "zh"):
            home = (site / ("" if lang == "en" else "zh") / "index.html").read_text(encoding="utf-8")
            page = _page(site, f"labs/{lab.id}", lang)
            for badge in lab.badges(lang):
                assert html.escape(badge, quote=False) in home
                assert f'lab-badge">{html.escape(badge, quote=False)}' in page


def test_students_only_build_has_no_solutions(tmp_path):
    site = tmp_path / "students"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "COURSE_STUDENTS_ONLY": "1"}
    run = subprocess.run([*MKDOCS, "-d", str(site)], cwd=ROOT, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (site / "labs" / "01-devices" / "index.html").exists()
    assert not (site / "solutions").exists() and not (site / "zh" / "solutions").exists()
    solution_lines = {
        line.strip()
        for nb in notebooks(ROOT / "solutions")
        for cell in json.loads(nb.read_text(encoding="utf-8"))["cells"]
        if "### BEGIN SOLUTION" in "".join(cell["source"])
        for line in "".join(cell["source"])
        .split("### BEGIN SOLUTION")[1]
        .split("### END SOLUTION")[0]
        .splitlines()
        if line.strip()
    }
    assert solution_lines
    for path in site.rglob("*"):
        if path.suffix not in (".html", ".json", ".ipynb", ".xml"):
            continue
        text = path.read_text(encoding="utf-8")
        assert "solutions/" not in text, f"{path.relative_to(site)} links to a solution"
        assert "BEGIN SOLUTION" not in text
        for line in solution_lines:
            assert html.escape(line, quote=False) not in text and line not in text, f"{path}: {line}"
