"""MkDocs hooks that make mkdocs-jupyter and mkdocs-static-i18n work together.

Each fix below answers a failure that is silent out of the box (measured facts in
``shared/notes/toolchain.md``); ``tests/test_site.py`` fails if any of them comes back.

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
   invisible between English words and wrong between two Chinese characters ("加速器、 苹果"). In the
   Chinese pages, a break between two CJK characters is removed (outside code blocks).

Course features (not fixes): the home page's course map and the badges on lab pages are generated
from the notebooks' metadata (``tools/course.py``); ``COURSE_STUDENTS_ONLY=1`` builds the site without
solutions: no solution pages, no links to them, and every ``<!-- solution -->...<!-- /solution -->``
region of a Markdown page removed.
"""

from __future__ import annotations

import filecmp
import hashlib
import logging
import re
import shutil
import sys
from pathlib import Path

import mkdocs.utils
from mkdocs.plugins import event_priority
from pymdownx.slugs import slugify

sys.path.insert(0, str(Path(__file__).resolve().parent))
import verified  # noqa: E402  (tools/verified.py)

import course  # noqa: E402  (tools/course.py, next to this file)

log = logging.getLogger("mkdocs.hooks.site_hooks")
SOLUTION_REGION = re.compile(r"<!-- solution -->.*?<!-- /solution -->", re.DOTALL)
COURSE_MAP = "<!-- course-map -->"
CJK = "\u3000-\u303f\u3400-\u9fff\uff00-\uffef"
CJK_BREAK = re.compile(rf"(?<=[{CJK}])\n[ \t]*(?=[{CJK}])")
FENCE = re.compile(r"^( *)(```|~~~).*?^\1\2[ \t]*$", re.MULTILINE | re.DOTALL)
HEAD_ALTERNATE = re.compile(r'[ \t]*<link rel="alternate" href="[^"]*" hreflang="[^"]*">\n?')

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
            elif not str(value).startswith("solutions/"):
                kept.append(item)
        elif not str(item).startswith("solutions/"):
            kept.append(item)
    return kept


def on_config(config):
    root = _root(config)
    docs_dir = Path(config.docs_dir)
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

    jupyter = config.plugins.get("mkdocs-jupyter")
    if jupyter is not None:
        salt = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]
        jupyter.config["cache_dir"] = str(root / ".cache" / "mkdocs-jupyter" / salt)

    extra = config.extra
    branch = extra.get("branch", "main")
    extra["colab_base"] = (
        f"https://colab.research.google.com/github/{_repo_slug(config.repo_url)}/blob/{branch}"
    )
    return config


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
    if lang == "zh":
        markdown = join_cjk_lines(markdown)
    return markdown


def join_cjk_lines(markdown: str) -> str:
    """Remove line breaks between two CJK characters, except inside fenced code blocks."""
    parts, last = [], 0
    for fence in FENCE.finditer(markdown):
        parts += [CJK_BREAK.sub("", markdown[last : fence.start()]), fence.group(0)]
        last = fence.end()
    parts.append(CJK_BREAK.sub("", markdown[last:]))
    return "".join(parts)


def on_page_context(context, page, config, nav):
    """Give notebook pages the Open-in-Colab URL of their source notebook and the lab's badges."""
    src = page.file.src_uri
    if src.endswith(".ipynb") and src.split("/", 1)[0] in MIRRORED:
        page.colab_url = f"{config.extra['colab_base']}/{src}"
        lab_id = Path(src).name.split(".")[0]
        lab = next((lab for lab in course.labs(_root(config)) if lab.id == lab_id), None)
        lang = getattr(page.file, "locale", None) or "en"
        page.lab_badges = [*lab.badges(lang), verified.badge(lab.id, lang, root=_root(config))] if lab else []
    return context


def on_post_page(output, page, config):
    return HEAD_ALTERNATE.sub("", output)


def on_post_template(output_content, template_name, config):
    # 404.html is rendered as a template, not a page, and carries the same head links.
    return HEAD_ALTERNATE.sub("", output_content)
