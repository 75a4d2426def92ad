"""MkDocs hooks that make mkdocs-jupyter and mkdocs-static-i18n work together.

Each fix below answers a failure that is silent out of the box (measured on mkdocs 1.6, Material 9.6,
mkdocs-static-i18n 1.3 and mkdocs-jupyter 0.26); ``tests/test_site.py`` fails if any of them comes back.

1. Labs live outside ``docs/``. mkdocs-jupyter cannot include files outside ``docs_dir`` and files added
   from a hook break ``--strict`` under i18n, so ``labs/`` and ``solutions/`` are mirrored into the
   git-ignored ``docs/labs`` and ``docs/solutions`` before files are collected. Only changed files are
   copied, so ``mkdocs serve`` does not rebuild in a loop.
2. Raw-JSON lab pages. i18n rebuilds every file as a plain ``File`` and drops mkdocs-jupyter's wrapper,
   so ``.ipynb`` stopped being a documentation page and its JSON was copied as ``index.html``. Adding
   ``.ipynb`` to MkDocs' page extensions makes i18n keep it as a page; mkdocs-jupyter then renders it.
3. Dead Chinese anchors. mkdocs-jupyter ASCII-folds heading ids, so Chinese headings got ``id=""``.
   Notebook headings and their TOC now use the same unicode slug as the Markdown pages.
4. Render cache that never hits. mkdocs-jupyter evicts cache entries not used by the *current* build,
   and i18n runs one build per language, so each language evicted the other's entries. Every notebook's
   key is marked as used before each build. The cache folder is salted with this file's hash, so a change
   here never serves stale HTML.
5. Colab and download buttons need a URL per notebook, derived from the one ``repo_url`` setting.
6. 404s in every page's console. i18n points the ``<link rel="alternate" hreflang>`` tags in the page head
   at the translated *page*; Material's script fetches ``sitemap.xml`` relative to each of them, which
   does not exist there. The head links are removed; the language selector in the header (plain links to
   the translated page) is untouched.
7. Stray spaces in Chinese text. Markdown turns a line break inside a paragraph into a space, which is
   invisible between English words and wrong next to Chinese ("加速器、 苹果"). In the Chinese pages, a
   break between two CJK characters, or touching full-width punctuation on either side, is removed
   (outside code blocks; breaks Markdown needs, before a list item or after a heading, are kept).
8. 700 KB lab pages. mkdocs-jupyter inlines ~590 KB of JupyterLab CSS into every notebook page. It is
   moved into one content-hashed stylesheet (``assets/jupyter/notebook-<hash>.css``) that every lab page
   of both languages links and the browser caches, and so are its two large inline scripts (clipboard
   button, Mermaid loader: ``notebook-<hash>.js``, same position and type). This happens before the
   search plugin indexes the page, so the build no longer parses that CSS per page either.
9. Slow notebook conversion. mkdocs-jupyter builds a new nbconvert exporter per notebook, which
   recompiles the same Jinja templates each time; the compiled templates are now shared in memory.
10. jieba (Chinese search segmentation) parses its dictionary on first use and caches the result in
   the system's temporary folder; the cache now lives in ``.cache/`` (or ``$COURSE_SITE_CACHE``).

Course features (not fixes): the home page's course map and the badges on lab pages are generated
from the notebooks' metadata (``course_tools/course.py``); ``<!-- glossary -->`` becomes the terms table of
``course_tools/data/glossary.yml``; ``COURSE_STUDENTS_ONLY=1`` builds the site without
solutions: no solution pages, no links to them, and every ``<!-- solution -->...<!-- /solution -->``
region of a Markdown page removed.
"""

from __future__ import annotations

import filecmp
import hashlib
import logging
import os
import re
import shutil
import sys
from pathlib import Path

import mkdocs.utils
from mkdocs.plugins import event_priority
from pymdownx.slugs import slugify

from course_tools.generate import dist, verified
from course_tools.generate.students import for_students, page_for_students, students_repo

from course_tools import course

log = logging.getLogger("mkdocs.hooks.site_hooks")
SOLUTION_REGION = re.compile(r"<!-- solution -->.*?<!-- /solution -->", re.DOTALL)
COURSE_MAP = "<!-- course-map -->"
GLOSSARY_MARK = "<!-- glossary -->"
#: The terms table, relative to the repository root (read by tests/test_terms.py too).
GLOSSARY = "tools/course_tools/data/glossary.yml"
#: Full-width punctuation and forms, and the quotes, dash and ellipsis Chinese text sets full width.
CJK_PUNCT = "\u3000-\u303f\ufe30-\ufe4f\uff00-\uffef\u2018\u2019\u201c\u201d\u2014\u2026"
#: Han characters, kana and everything in CJK_PUNCT.
CJK = f"\u2e80-\u2fff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff{CJK_PUNCT}"
#: Where Markdown starts a new block: a break before such a line is never joined.
BLOCK_START = r"(?:[-*+][ \t]|\d+[.)][ \t]|#|>|\||!!!|\?\?\?|:::|<|\{)"
#: A line break inside a paragraph that a browser would render as a stray space: between two CJK
#: characters, after full-width punctuation, or before it (outside code; see ``join_cjk_lines``).
CJK_BREAK = re.compile(
    rf"(?<=[{CJK}])\n[ \t]*(?=[{CJK}])"
    rf"|(?<=[{CJK_PUNCT}])\n[ \t]*(?!{BLOCK_START})(?=\S)"
    rf"|(?<=\S)\n[ \t]*(?=[{CJK_PUNCT}])",
)
#: A line a break after which is never joined: a heading, table row, admonition or HTML block opener.
LINE_NOT_JOINED = re.compile(r"[ \t]*(?:#|\||!!!|\?\?\?|:::|<)")
FENCE = re.compile(r"^( *)(```|~~~).*?^\1\2[ \t]*$", re.MULTILINE | re.DOTALL)
STYLE_BLOCK = re.compile(r"<style[^>]*>(.*?)</style>", re.DOTALL)
NOTEBOOK_CSS_MARK = "<!-- notebook-css -->"
#: mkdocs-jupyter's inline scripts (clipboard button, Mermaid loader) this long or longer become files.
SCRIPT_MIN_EXTERNAL = 2000
SCRIPT_BLOCK = re.compile(r"<script((?:\s+type=\"(?:module|text/javascript)\")?)>(.*?)</script>", re.DOTALL)
#: Where the stylesheet shared by every notebook page is written, relative to the site root.
NOTEBOOK_CSS_DIR = "assets/jupyter"
HEAD_ALTERNATE = re.compile(r'[ \t]*<link rel="alternate" href="[^"]*" hreflang="[^"]*">\n?')

#: What the students-only build leaves out: solution pages and the instructors' pages (grading guide...).
STUDENTS_HIDDEN = ("solutions/", "instructors/")
HIDDEN_LINK = re.compile(r"\[([^\]]+)\]\((?:\.\./)*(?:solutions|instructors)/[^)]*\)")

#: Where the lab zips go in the built site (``downloads/NN-slug.zip``).
DOWNLOADS = "downloads"
#: Folders at the repository root that are published as pages (source -> mirror under docs/).
MIRRORED = ("labs", "solutions")

#: The slug used for every heading id on the site, Markdown and notebooks alike.
unicode_slug = slugify(case="lower")


def _root(config) -> Path:
    return Path(config.config_file_path).resolve().parent


def students_only(config) -> bool:
    """True for the build without solutions (``COURSE_STUDENTS_ONLY=1``, read by ``extra.students_only``)."""
    return str(config.extra.get("students_only", "")).strip().lower() in ("1", "true", "yes")


def mirror_notebooks(root: Path, docs_dir: Path, folders: tuple[str, ...] = MIRRORED) -> list[str]:
    """Copy ``labs/*.ipynb`` and ``solutions/*.ipynb`` into ``docs_dir`` (only what changed).

    Notebooks removed from the source are removed from the mirror, and so is the mirror of a folder not
    in ``folders``. Returns the relative paths written.
    """
    written = []
    for folder in set(MIRRORED) - set(folders):
        shutil.rmtree(docs_dir / folder, ignore_errors=True)
    for folder in folders:
        source, mirror = root / folder, docs_dir / folder
        mirror.mkdir(parents=True, exist_ok=True)
        wanted = {p.name for p in source.glob("*.ipynb")}
        for stale in mirror.glob("*.ipynb"):
            if stale.name not in wanted:
                stale.unlink()
        for name in sorted(wanted):
            src, dst = source / name, mirror / name
            if not dst.exists() or not filecmp.cmp(src, dst, shallow=False):
                shutil.copyfile(src, dst)
                written.append(f"{folder}/{name}")
    return written


def _patch_notebook_slugs() -> None:
    """Notebook heading ids and TOC entries: the same unicode slug, from the same heading text."""
    import json

    import mkdocs_jupyter.convert
    import mkdocs_jupyter.plugin
    import nbconvert.filters.strings
    from markdown import Markdown
    from markdown.extensions.toc import TocExtension

    mkdocs_jupyter.convert.slugify = lambda text: unicode_slug(text, "-")
    # nbconvert percent-encodes non-ASCII ids ("1-%E5%87%86"); the slug is already a valid fragment.
    nbconvert.filters.strings._convert_header_id = lambda text: text.replace(" ", "-")

    def notebook_toc(path: str, toc_depth: int):
        # mkdocs-jupyter builds the TOC from nbconvert's Markdown export, which drops `code` spans from
        # headings, so its anchors missed headings such as "5. `Tensor.to` vs `Module.to`". Read the
        # notebook's own Markdown cells instead.
        cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
        source = "\n\n".join(
            "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in cells
            if c["cell_type"] == "markdown"
        )
        md = Markdown(extensions=[TocExtension(toc_depth=toc_depth, slugify=unicode_slug)])
        md.convert(source)
        title = next((t["name"] for t in md.toc_tokens if t["level"] == 1), None)
        return md.toc_tokens, title

    mkdocs_jupyter.plugin._get_nb_toc_tokens = notebook_toc


class _TemplateBytecode:
    """One in-memory Jinja bytecode cache for every nbconvert exporter of the process.

    mkdocs-jupyter makes a new exporter, so a new Jinja environment, per notebook, and nbconvert then
    compiles the same eleven templates again: about a third of each conversion. Jinja keys compiled
    code by template name and source checksum, so a changed template is never served stale.
    """

    def __init__(self) -> None:
        import jinja2

        class Memory(jinja2.BytecodeCache):
            def __init__(self) -> None:
                self.code: dict[str, bytes] = {}

            def load_bytecode(self, bucket) -> None:
                if bucket.key in self.code:
                    bucket.bytecode_from_string(self.code[bucket.key])

            def dump_bytecode(self, bucket) -> None:
                self.code[bucket.key] = bucket.bytecode_to_string()

        self.cache = Memory()

    def install(self) -> None:
        from nbconvert.exporters.templateexporter import TemplateExporter

        create = TemplateExporter._create_environment
        if getattr(create, "_course_shared", False):
            return
        cache = self.cache

        def create_environment(exporter):
            environment = create(exporter)
            environment.bytecode_cache = cache
            return environment

        create_environment._course_shared = True
        TemplateExporter._create_environment = create_environment


def _repo_slug(repo_url: str) -> str:
    match = re.match(r"https?://github\.com/([^/]+/[^/#?]+?)(?:\.git)?/?$", repo_url or "")
    if not match:
        raise ValueError(f"repo_url in mkdocs.yml must be a GitHub repository URL, got {repo_url!r}")
    return match.group(1)


def _without_solutions(nav):
    """The nav with every entry that leads to a solution page removed."""
    kept = []
    for item in nav:
        if isinstance(item, dict):
            ((title, value),) = item.items()
            if isinstance(value, list):
                value = _without_solutions(value)
                if value:
                    kept.append({title: value})
            elif not str(value).startswith(STUDENTS_HIDDEN):
                kept.append(item)
        elif not str(item).startswith(STUDENTS_HIDDEN):
            kept.append(item)
    return kept


def _nav_from_manifest(config, root: Path) -> None:
    """Fill the ``Lessons``, ``Labs`` and ``Solutions`` sections of the nav and their zh titles from the manifest."""
    data = course.read_manifest(root / "src" / "devicekit_labs" / "manifest.json")
    nav = []
    for item in config.nav or []:
        section = next(iter(item)) if isinstance(item, dict) else None
        if section == "Lessons":
            item = {section: [lab["lesson"]["page"] for lab in data["labs"]]}
        elif section in ("Labs", "Solutions"):
            item = {section: course.nav_entries(section, data)}
        nav.append(item)
    config.nav = nav
    i18n = config.plugins.get("i18n")
    if i18n is not None:
        for language in i18n.config.languages:
            if language.locale == "zh":
                language.nav_translations = {
                    **(language.nav_translations or {}),
                    **course.nav_translations(data),
                }


def on_config(config):
    root = _root(config)
    docs_dir = Path(config.docs_dir)
    _nav_from_manifest(config, root)
    if students_only(config):
        config.nav = _without_solutions(config.nav)
        written = mirror_notebooks(root, docs_dir, folders=("labs",))
    else:
        written = mirror_notebooks(root, docs_dir)
    if written:
        log.info("mirrored into docs/: %s", ", ".join(written))

    if ".ipynb" not in mkdocs.utils.markdown_extensions:
        mkdocs.utils.markdown_extensions = (*mkdocs.utils.markdown_extensions, ".ipynb")
    _patch_notebook_slugs()
    _TemplateBytecode().install()

    jupyter = config.plugins.get("mkdocs-jupyter")
    if jupyter is not None:
        salt = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]
        jupyter.config["cache_dir"] = str(cache_root(root) / "mkdocs-jupyter" / salt)

    _cache_jieba_dictionary(cache_root(root))

    extra = config.extra
    branch = extra.get("branch", "main")
    extra.setdefault("course_repo_url", config.repo_url)  # on_config runs again for each language
    if students_only(config):  # never link to the repository that holds solutions/
        # the solution-free repository (COURSE_STUDENTS_REPO_URL, course_tools.generate.students), or none
        config.repo_url = students_repo()
        config.repo_name = config.repo_name if config.repo_url else None
    extra["colab_base"] = (
        f"https://colab.research.google.com/github/{_repo_slug(config.repo_url)}/blob/{branch}"
        if config.repo_url
        else ""
    )
    return config


@event_priority(100)  # before i18n sorts the files by language
def on_files(files, config):
    """The students-only build has no instructors' pages (solutions are never mirrored into it)."""
    if students_only(config):
        for file in [f for f in files if f.src_uri.startswith(STUDENTS_HIDDEN)]:
            files.remove(file)
    return files


def cache_root(root: Path) -> Path:
    """Where the build caches renders and dictionaries: ``.cache/``, or ``$COURSE_SITE_CACHE`` (a cold-cache
    measurement in ``benchmarks/bench_site.py`` points it at an empty folder)."""
    return Path(os.environ.get("COURSE_SITE_CACHE") or root / ".cache")


def _cache_jieba_dictionary(cache: Path) -> None:
    """Keep jieba's parsed dictionary (Material's Chinese search segmenter) in the project's ``.cache``.

    jieba parses its 5 MB dictionary on first use (about 1-2 s) and caches the result in the system's
    temporary folder, which CI machines and some laptops empty; ``.cache/`` survives and CI caches it.
    """
    try:
        import jieba
    except ImportError:  # Material then indexes Chinese without segmentation; nothing to cache
        return
    cache.mkdir(parents=True, exist_ok=True)
    jieba.dt.tmp_dir = str(cache)
    jieba.setLogLevel(logging.WARNING)


@event_priority(-100)  # after mkdocs-jupyter's own on_pre_build reset its set of used cache entries
def on_pre_build(config):
    jupyter = config.plugins.get("mkdocs-jupyter")
    if jupyter is None or not jupyter.config["cache"]:
        return
    from mkdocs_jupyter.plugin import _compute_cache_key, _get_cache_path

    for folder in MIRRORED:
        for notebook in (Path(config.docs_dir) / folder).glob("*.ipynb"):
            key = _compute_cache_key(str(notebook), jupyter.config, jupyter.config["execute"])
            jupyter._used_cache_paths.add(_get_cache_path(jupyter.config["cache_dir"], key))


def on_page_markdown(markdown, page, config, files):
    """Fill in the course map; drop solution regions from the students-only build."""
    lang = getattr(page.file, "locale", None) or "en"
    if COURSE_MAP in markdown:
        base = "../" * page.file.src_uri.count("/")
        table = course.course_map(lang, with_solutions=not students_only(config), base=base)
        markdown = markdown.replace(COURSE_MAP, table)
    if students_only(config):
        markdown = SOLUTION_REGION.sub("", markdown)
        markdown = HIDDEN_LINK.sub(r"\1", markdown)  # a link to a page this build leaves out: its text
    if GLOSSARY_MARK in markdown:
        markdown = markdown.replace(GLOSSARY_MARK, glossary_table(lang, _root(config) / GLOSSARY))
    if lang == "zh":
        markdown = join_cjk_lines(markdown)
    return markdown


def glossary_table(lang: str, path: Path) -> str:
    """The course's terms (``course_tools/data/glossary.yml``, the file ``tests/test_terms.py`` enforces) as a table."""
    import yaml

    terms = yaml.safe_load(path.read_text(encoding="utf-8"))["terms"]
    zh = lang == "zh"
    rows = ["| 中文 | English | 说明 |" if zh else "| English | 中文 | When to use |", "|---|---|---|"]
    for term in terms:
        note = (term.get("note") or {}).get(lang, "")
        if zh and term.get("gloss"):
            note = f"首次出现时写作“{term['gloss']}”。{note}"
        cells = [term["zh"], term["en"], note] if zh else [term["en"], term["zh"], note]
        rows.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ").strip() for c in cells) + " |")
    return "\n".join(rows)


def join_cjk_lines(markdown: str) -> str:
    """Remove the line breaks of ``CJK_BREAK`` (they render as stray spaces), except inside fenced code.

    A break is kept where Markdown needs it: after a heading, table row, admonition or HTML line, and
    before a line that starts a block (list item, heading, quote, table row, HTML).
    """
    parts, last = [], 0
    for fence in FENCE.finditer(markdown):
        parts += [_join_breaks(markdown[last : fence.start()]), fence.group(0)]
        last = fence.end()
    parts.append(_join_breaks(markdown[last:]))
    return "".join(parts)


def cjk_breaks(text: str) -> list[int]:
    """1-based line numbers of the lines ending in a break ``join_cjk_lines`` would remove (for tests)."""
    return [text.count("\n", 0, m.start()) + 1 for m in CJK_BREAK.finditer(text) if _joinable(text, m)]


def _joinable(text: str, match: re.Match) -> bool:
    line_start = text.rfind("\n", 0, match.start()) + 1
    return not LINE_NOT_JOINED.match(text, line_start)


def _join_breaks(text: str) -> str:
    return CJK_BREAK.sub(lambda m: "" if _joinable(text, m) else m.group(0), text)


def on_page_context(context, page, config, nav):
    """Give notebook pages the Open-in-Colab URL of their source notebook and the lab's badges."""
    src = page.file.src_uri
    if src.endswith(".ipynb") and src.split("/", 1)[0] in MIRRORED:
        page.colab_url = f"{config.extra['colab_base']}/{src}" if config.extra["colab_base"] else None
        lab_id = Path(src).name.split(".")[0]
        lab = next((lab for lab in course.labs(_root(config)) if lab.id == lab_id), None)
        lang = getattr(page.file, "locale", None) or "en"
        page.lab_badges = [*lab.badges(lang), verified.badge(lab.id, lang, root=_root(config))] if lab else []
        page.lab_zip = f"{DOWNLOADS}/{lab_id}.zip" if lab and src.startswith("labs/") else None
    return context


@event_priority(50)  # before the search plugin indexes the page: it need not parse 600 KB of CSS
def on_page_content(html, page, config, files):
    """Notebook pages: move mkdocs-jupyter's inline CSS and large scripts into files the browser caches."""
    if not page.file.src_uri.endswith(".ipynb"):
        return html
    html, css = split_notebook_css(html)
    if css:
        href = _shared_asset(page, "notebook", "css", css)
        html = html.replace(NOTEBOOK_CSS_MARK, f'<link rel="stylesheet" href="{href}">', 1)

    def external(match: re.Match) -> str:
        attrs, body = match.group(1), match.group(2)
        if len(body) < SCRIPT_MIN_EXTERNAL:
            return match.group(0)
        # Same position, same type: a classic script still runs here, a module is still deferred.
        return f'<script{attrs} src="{_shared_asset(page, "notebook", "js", body)}"></script>'

    return SCRIPT_BLOCK.sub(external, html)


def _shared_asset(page, stem: str, suffix: str, text: str) -> str:
    """Write ``text`` once as ``assets/jupyter/<stem>-<hash>.<suffix>``; its URL relative to ``page``."""
    name = f"{NOTEBOOK_CSS_DIR}/{stem}-{hashlib.sha256(text.encode()).hexdigest()[:12]}.{suffix}"
    href = mkdocs.utils.get_relative_url(name, page.url)
    # The file is written beside the site's shared assets; the zh build writes into site/zh, so its
    # path comes from the page's own output file and the relative link, not from config.site_dir.
    target = (Path(page.file.abs_dest_path).parent / href).resolve()
    if not target.exists() or target.read_text(encoding="utf-8") != text:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return href


def split_notebook_css(html: str) -> tuple[str, str]:
    """The page without its ``<style>`` blocks (a marker where the first was) and their CSS, in order.

    All the blocks are consecutive stylesheets after Material's own, so one file in the same order
    keeps the cascade. mkdocs-jupyter also emits a block holding a Python list's repr
    (``['pre { ...']``): one invalid rule that browsers drop, so it is dropped here too.
    """
    blocks: list[str] = []
    seen = []

    def take(match: re.Match) -> str:
        body = match.group(1).strip()
        if not body.startswith("['"):
            blocks.append(body)
        seen.append(body)
        return NOTEBOOK_CSS_MARK if len(seen) == 1 else ""

    html = STYLE_BLOCK.sub(take, html)
    if not blocks:
        return html.replace(NOTEBOOK_CSS_MARK, ""), ""
    return html, "\n".join(blocks) + "\n"


def _course_repo(config) -> str:
    """The repository that holds the solutions (``repo_url``, kept by on_config before a students-only build
    drops it)."""
    return str(config.extra.get("course_repo_url") or "")


def on_post_page(output, page, config):
    if students_only(config):
        output = page_for_students(output, _course_repo(config), students_repo())
    return HEAD_ALTERNATE.sub("", output)


@event_priority(-200)  # after i18n, which writes the search index of both languages in its own on_post_build
def on_post_build(config):
    """Every build: the lab zips (``downloads/NN-slug.zip``) the lab pages offer. Students-only build: the
    same link rewriting in the files that are not pages (the notebooks offered for download, the search
    index)."""
    _build_lab_zips(config)
    if not students_only(config):
        return
    course_repo = _course_repo(config)
    for path in Path(config.site_dir).rglob("*"):
        if path.suffix in (".ipynb", ".json") and path.is_file() and DOWNLOADS not in path.parts:
            text = path.read_text(encoding="utf-8")
            rewrite = for_students if path.suffix == ".ipynb" and course_repo else page_for_students
            fixed = rewrite(text, course_repo, students_repo())
            if fixed != text:
                path.write_text(fixed, encoding="utf-8")


def _build_lab_zips(config) -> None:
    """``make dist``'s zips, built into the site so every lab page can offer its own (no GitHub needed)."""
    out = Path(config.site_dir) / DOWNLOADS
    root = _root(config)
    if out.is_dir() and all((out / f"{lab.id}.zip").exists() for lab in course.labs(root)):
        return  # i18n runs post_build once per language: build once
    dist.build(out, root)


def on_post_template(output_content, template_name, config):
    # 404.html is rendered as a template, not a page, and carries the same head links.
    return HEAD_ALTERNATE.sub("", output_content)
