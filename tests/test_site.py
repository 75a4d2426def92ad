"""The built site: strict, both languages, lab pages rendered (not raw JSON), anchors alive, buttons,
Chinese search, and a render cache that hits. Each check guards one of the silent failures fixed in
course_tools/site/hooks.py."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from course_tools.generate import labs as labtool
from course_tools.paths import DOCS, LABS, ROOT, english, notebooks

LAB_PAGES = [
    f"{folder}/{p.stem}" for folder in ("labs", "solutions") for p in english(notebooks(ROOT / folder))
]


@pytest.fixture(scope="module")
def built(site_full):
    """The full site (conftest.py: one snapshot, cold render cache) and the log of its build."""
    return site_full.site, site_full.log


def _page(site: Path, url: str, lang: str) -> str:
    prefix = "" if lang == "en" else "zh/"
    return (site / f"{prefix}{url}/index.html").read_text(encoding="utf-8")


@pytest.mark.site  # its builds are chosen by name (getfixturevalue), so marked here
@pytest.mark.parametrize("flavour", ["site_full", "site_students", "site_students_repo"])
def test_strict_build_has_no_warnings(request, flavour):
    log = request.getfixturevalue(flavour).log
    assert not [line for line in log.splitlines() if "WARNING" in line and "TCP" not in line], log


@pytest.mark.parametrize("url", LAB_PAGES)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_lab_pages_are_rendered_notebooks(built, url, lang):
    site, _ = built
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
    site, _ = built
    page = _page(site, url, lang)
    name = f"{Path(url).name}{'' if lang == 'en' else '.zh'}.ipynb"
    stored = json.loads((ROOT / url.split("/")[0] / name).read_text(encoding="utf-8"))
    outputs = [out for cell in stored["cells"] for out in cell.get("outputs", [])]
    first_error = next(out for out in outputs if out.get("output_type") == "error")
    # the lab's trigger as the real run stored it (a device RuntimeError; lab 8: PyTorch's ValueError)
    assert first_error["ename"] in page, "stored error output missing"
    text = html.escape(first_error["evalue"].splitlines()[0][:60], quote=False)
    assert text in page, "stored error text missing"
    repo = labtool.repo_url().removeprefix("https://github.com/")
    colab = f"https://colab.research.google.com/github/{repo}/blob/main/{Path(url).parent}/{name}"
    assert f'href="{colab}"' in page
    assert f'href="{name}" download' in page
    assert (site / ("" if lang == "en" else "zh") / url / name).exists(), "download target missing"
    badge = "assets/colab-badge.svg" if lang == "en" else "assets/colab-badge-zh.svg"
    assert badge in page and (site / badge).exists()


def _all_pages(site: Path):
    return sorted(site.rglob("index.html"))


def test_every_in_page_anchor_exists(built):
    site, _ = built
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
    site, _ = built
    page = _page(site, "labs/01-devices", "zh")
    assert 'id="2-触发报错"' in page
    assert 'href="#2-触发报错"' in page


LESSON_PAGES = [f"lessons/{p.stem}" for p in sorted(DOCS.glob("lessons/[0-9]*.md")) if ".zh." not in p.name]


def test_language_switcher_links_page_to_page(built):
    """Every lesson, lab and solution page's switcher names its counterpart, which is in that language (the
    browser clicks through one page of each kind: test_browser.py)."""
    site, _ = built
    assert len(LESSON_PAGES) >= 11 and len(LAB_PAGES) >= 22
    for url in [*LESSON_PAGES, *LAB_PAGES]:
        en, zh = _page(site, url, "en"), _page(site, url, "zh")
        assert re.search(rf'href="[./]*zh/{url}/"[^>]*hreflang="zh"', en), f"{url}: no link to the zh page"
        assert re.search(rf'href="[./]*{url}/"[^>]*hreflang="en"', zh), f"{url}: no link to the en page"
        assert '<html lang="en"' in en and '<html lang="zh"' in zh, url
        title = re.search(r"<h1[^>]*>(.*?)</h1>", zh, re.S)
        assert title and re.search(r"[\u4e00-\u9fff]", title.group(1)), (
            f"{url}: the zh page's title is not Chinese"
        )


def test_chinese_search_finds_chinese_words(built):
    site, _ = built
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


def test_render_cache_hits_on_the_next_build(built, site_students):
    """The full build renders every notebook page (cold); the students-only build, which starts from its
    cache (conftest.py), renders none: every one of its lab pages is a hit."""
    _, log = built
    assert log.count("Cache hit") + log.count("Cache miss") == len(LAB_PAGES) * 2, log
    lab_pages = len([url for url in LAB_PAGES if url.startswith("labs/")]) * 2
    assert site_students.log.count("Cache hit") == lab_pages, site_students.log
    assert "Cache miss" not in site_students.log


def test_mirror_is_ignored_and_complete(site_full):
    ignored = (ROOT / ".gitignore").read_text()
    assert "docs/labs/" in ignored and "docs/solutions/" in ignored
    # the build mirrors into the docs/ of the snapshot it was built from (conftest.py), never the checkout's
    for nb in notebooks(LABS):
        assert (site_full.source / "docs" / "labs" / nb.name).read_bytes() == nb.read_bytes()


def test_no_outside_fonts_or_scripts(built):
    site, _ = built
    for path in _all_pages(site):
        page = path.read_text(encoding="utf-8")
        assert "fonts.googleapis.com" not in page, path
        assert not re.search(r'<script[^>]+src="https?://', page), path


def test_course_map_and_badges_come_from_lab_metadata(built):
    site, _ = built
    from course_tools import course

    for lab in course.labs():
        for lang in ("en", "zh"):
            home = (site / ("" if lang == "en" else "zh") / "index.html").read_text(encoding="utf-8")
            page = _page(site, f"labs/{lab.id}", lang)
            for badge in lab.badges(lang):
                assert html.escape(badge, quote=False) in home
                assert f'lab-badge">{html.escape(badge, quote=False)}' in page


def test_students_only_build_has_no_solutions(site_students):
    site = site_students.site
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
        # a line long enough to be the answer itself, not punctuation such as "}," that any page may hold
        if len(line.strip()) >= 12
    }
    # Lessons teach the idioms the answers use (`model.to(device)`): a line the public sources (lesson pages,
    # student labs) already show is not a leak; one that only the solutions hold is.
    public = "\n".join(
        [p.read_text(encoding="utf-8") for p in (DOCS / "lessons").glob("*.md")]
        + [p.read_text(encoding="utf-8") for p in notebooks(LABS)]
        # the error catalog is public too: the atlas and the widget show every family's fix to everyone
        + [(ROOT / "src" / "devicekit" / "catalog.json").read_text(encoding="utf-8")]
        # and devicekit's own source (the wheel everyone installs; the paste-your-code page bundles part)
        + [p.read_text(encoding="utf-8") for p in (ROOT / "src" / "devicekit").rglob("*.py")]
    )
    solution_lines = {
        line
        for line in solution_lines
        if line not in public and json.dumps(line, ensure_ascii=False)[1:-1] not in public
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


# --- a lighter site ----------------------------------------------------------------------------------------

#: The most a lab page's HTML may weigh (mkdocs-jupyter's inline CSS made it ~700 KB).
MAX_LAB_PAGE_BYTES = 200_000


@pytest.mark.parametrize("url", LAB_PAGES)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_lab_pages_share_one_cached_notebook_stylesheet(built, url, lang):
    site, _ = built
    page = _page(site, url, lang)
    size = len(page.encode("utf-8"))
    assert size <= MAX_LAB_PAGE_BYTES, f"{url} ({lang}): {size} bytes of HTML"
    inline = sum(len(m) for m in re.findall(r"<style[^>]*>.*?</style>", page, re.DOTALL))
    assert inline < 2_000, f"{url} ({lang}): {inline} bytes of inline CSS"
    links = re.findall(r'<link rel="stylesheet" href="([^"]*assets/jupyter/notebook-[0-9a-f]+\.css)">', page)
    assert len(links) == 1, "the notebook stylesheet is linked once"
    target = (site / ("" if lang == "en" else "zh") / url / links[0]).resolve()
    assert target.is_relative_to(site.resolve()) and target.stat().st_size > 100_000, target
    assert list((site / "assets" / "jupyter").glob("*.css")) == [target], "one stylesheet for every lab page"
    inline_js = [
        len(body) for body in re.findall(r"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", page, re.DOTALL)
    ]
    assert max(inline_js, default=0) < 2_000, f"{url} ({lang}): an inline script of {max(inline_js)} bytes"
    for src in re.findall(r'<script[^>]*src="([^"]*assets/jupyter/[^"]+\.js)"', page):
        assert (site / ("" if lang == "en" else "zh") / url / src).resolve().is_file(), src


def test_notebook_css_split_keeps_every_rule_in_order():
    from course_tools.site.hooks import NOTEBOOK_CSS_MARK, split_notebook_css

    html = (
        "<p>a</p><style>.x{color:red}</style><div><style type='text/css'>.y{}</style></div>"
        "<style>['pre {}']</style>"
    )
    rest, css = split_notebook_css(html)
    assert rest == f"<p>a</p>{NOTEBOOK_CSS_MARK}<div></div>"
    assert css == ".x{color:red}\n.y{}\n"
    assert split_notebook_css("<p>no style</p>") == ("<p>no style</p>", "")


# --- Chinese text as the reader sees it --------------------------------------------------------------------

HAN = "\u3400-\u4dbf\u4e00-\u9fff"
#: Full-width punctuation; the dash and ellipsis count when doubled, as Chinese sets them (a lone "—"
#: is the "no value" mark of the badges).
PUNCT = "(?:——|……|[\u3000-\u303f\ufe30-\ufe4f\uff00-\uffef\u2018\u2019\u201c\u201d])"
STRAY_SPACE = re.compile(f"[{HAN}]\\s+[{HAN}]|{PUNCT}\\s+\\S|\\S\\s+{PUNCT}")
#: "A · B" separates items on purpose (badges, atlas links); the spaces around the dot are not stray.
SEPARATOR = re.compile(r"\s+·\s+")
#: Elements whose start or end breaks the line: whitespace next to them is not rendered between words.
BLOCKS = set(
    "address article aside blockquote br button dd details dialog div dl dt figcaption figure footer form "
    "h1 h2 h3 h4 h5 h6 header hr img input label li main nav ol option p section select summary table "
    "tbody td tfoot th thead tr ul".split()
)
#: Code, scripts and the like: not prose (replaced by a Latin stand-in, as a reader sees some code there).
OPAQUE = {"code", "kbd", "pre", "script", "style", "svg", "textarea", "math"}
#: Classes of elements that are not running text: hidden copy buffers, separate badges.
OPAQUE_CLASSES = {"clipboard-copy-txt"}
SEPARATE_CLASSES = {"lab-badge"}


def rendered_runs(page: str) -> list[str]:
    """The article's text as runs of inline content between block boundaries, whitespace collapsed."""
    from html.parser import HTMLParser

    class Runs(HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.runs, self.current, self.inside = [], [], 0
            self.opaque_tag, self.opaque_depth = None, 0

        def flush(self):
            text = SEPARATOR.sub("·", re.sub(r"\s+", " ", "".join(self.current)).strip())
            if text:
                self.runs.append(text)
            self.current = []

        def handle_starttag(self, tag, attrs):
            classes = set((dict(attrs).get("class") or "").split())
            if tag == "article" and "md-content__inner" in classes:
                self.inside += 1
            if self.opaque_depth:
                self.opaque_depth += tag == self.opaque_tag
            elif tag in OPAQUE or classes & OPAQUE_CLASSES:
                self.current.append("x")
                self.opaque_tag, self.opaque_depth = tag, 1
            elif tag in BLOCKS or classes & SEPARATE_CLASSES:
                self.flush()

        def handle_endtag(self, tag):
            if self.opaque_depth:
                self.opaque_depth -= tag == self.opaque_tag
            elif tag in BLOCKS:
                self.flush()

        def handle_data(self, data):
            if self.inside and not self.opaque_depth:
                self.current.append(data)

    parser = Runs()
    parser.feed(page)
    parser.flush()
    return parser.runs


def test_rendered_text_finder_sees_the_known_mistakes():
    assert STRAY_SPACE.search(" ".join(rendered_runs(_article("<p><strong>标签：</strong> 正文</p>"))))
    assert STRAY_SPACE.search(" ".join(rendered_runs(_article("<p>加速器、\n苹果</p>"))))
    assert STRAY_SPACE.search(" ".join(rendered_runs(_article("<p><strong>移动</strong> 张量</p>"))))
    clean = (
        "<p><strong>标签</strong>：正文 <code>x.to( 设备 )</code> 在 GPU 上</p><p>段落。</p>\n<p>下一段</p>"
    )
    assert not [r for r in rendered_runs(_article(clean)) if STRAY_SPACE.search(r)]


def _article(body: str) -> str:
    return f'<article class="md-content__inner md-typeset">{body}</article>'


def _zh_pages(site: Path) -> list[Path]:
    return sorted((site / "zh").rglob("index.html"))


def test_chinese_pages_have_no_stray_spaces(built):
    site, _ = built
    problems = []
    for path in _zh_pages(site):
        for run in rendered_runs(path.read_text(encoding="utf-8")):
            for found in STRAY_SPACE.finditer(run):
                context = run[max(0, found.start() - 20) : found.end() + 20]
                problems.append(f"{path.relative_to(site)}: “{context}”")
    assert len(_zh_pages(site)) > 5
    assert not problems, f"{len(problems)} stray spaces in rendered Chinese text:\n" + "\n".join(problems)


def test_chinese_pages_have_no_italics(built):
    site, _ = built
    problems = []
    for path in _zh_pages(site):
        page = path.read_text(encoding="utf-8")
        for tag, text in re.findall(r"<(em|i)\b[^>]*>(.*?)</\1>", page, re.DOTALL):
            if re.search(f"[{HAN}]", text):
                problems.append(f"{path.relative_to(site)}: <{tag}>{text[:40]}")
    assert not problems, "\n".join(problems)


# --- the line-break rule of the Chinese pages --------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "joined"),
    [
        ("加速器、\n苹果 GPU", "加速器、苹果 GPU"),
        ("设备\n不匹配", "设备不匹配"),
        ("**标签**：\n`code` 在这里", "**标签**：`code` 在这里"),
        ("写成 `x`\n，再运行", "写成 `x`，再运行"),
        ("- 第一项，\n  继续", "- 第一项，继续"),
        ("如下：\n- 列表项", "如下：\n- 列表项"),
        ("## 标题：\n正文", "## 标题：\n正文"),
        ("| 说明。 |\n| 好 |", "| 说明。 |\n| 好 |"),
        ("English\nwords 中文", "English\nwords 中文"),
        ("```python\n# 注释，\n# 下一行\n```", "```python\n# 注释，\n# 下一行\n```"),
    ],
)
def test_chinese_line_breaks_are_joined_where_they_would_show(source, joined):
    from course_tools.site.hooks import join_cjk_lines

    assert join_cjk_lines(source) == joined
