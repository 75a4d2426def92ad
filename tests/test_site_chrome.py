"""The site chrome reads in Chinese on /zh/ pages (issue 23): theme toggle and notebook copy buttons.

Checked without a site build: the zh language entry of mkdocs.yml overrides the palette toggle labels,
and the content partial replaces exactly the English strings that the installed mkdocs-jupyter template
writes (so a new mkdocs-jupyter wording fails here instead of leaking English onto the zh pages).
A full build was grepped once by hand (see the branch's report); tests/test_site.py builds the site.
"""

from __future__ import annotations

import re
from pathlib import Path

import mkdocs_jupyter
import yaml

from course_tools.paths import DOCS, ROOT

HAN = re.compile(r"[\u4e00-\u9fff]")


class _Loader(yaml.SafeLoader):
    pass


# mkdocs.yml uses !ENV and !!python tags: read them as plain values, this test needs neither.
_Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
_Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)


def _config() -> dict:
    return yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_Loader)


def test_the_zh_palette_toggle_labels_are_chinese():
    config = _config()
    english = [entry["toggle"]["name"] for entry in config["theme"]["palette"]]
    assert english == ["Switch to dark mode", "Switch to light mode"]
    i18n = next(p["i18n"] for p in config["plugins"] if isinstance(p, dict) and "i18n" in p)
    zh = next(lang for lang in i18n["languages"] if lang["locale"] == "zh")
    names = [entry["toggle"]["name"] for entry in zh["theme"]["palette"]]
    assert names == ["切换到深色模式", "切换到浅色模式"]
    assert i18n["reconfigure_material"] is True  # theme.language follows the page: Material's own strings


def test_the_notebook_copy_buttons_are_translated_on_zh_pages():
    template = Path(mkdocs_jupyter.__file__).parent / "templates" / "mkdocs_html" / "notebook.html.j2"
    source = template.read_text(encoding="utf-8")
    partial = (DOCS / "overrides" / "partials" / "content.html").read_text(encoding="utf-8")
    # (the notice is matched from ">" on: a site hook may rewrite `hidden` as `hidden=""` first)
    for english in ('aria-label="Copy to Clipboard"', ">Copied!</span>"):
        assert english in source, f"mkdocs-jupyter no longer writes {english!r}: update content.html"
        replaced = re.search(re.escape(f"replace('{english}', '") + r"([^']*)'", partial)
        assert replaced and HAN.search(replaced.group(1)), english
    assert 'config.theme.language == "zh"' in partial


def _render_copyright(locale: str, copyright: str | None = None) -> str:
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(DOCS / "overrides")))
    config = {"copyright": copyright, "extra": {}}
    return env.get_template("partials/copyright.html").render(i18n_page_locale=locale, config=config)


def test_the_footer_credits_material_in_chinese_on_zh_pages():
    """The zh reviewer, item 29: "Made with Material for MkDocs" was English on the zh pages."""
    zh = " ".join(_render_copyright("zh", "© 课程").split())
    en = " ".join(_render_copyright("en").split())
    assert '由 <a href="https://squidfunk.github.io/mkdocs-material/"' in zh and "构建" in zh
    assert "Made with" not in zh and "© 课程" in zh
    assert en.startswith(
        '<div class="md-copyright"> Made with <a href="https://squidfunk.github.io/mkdocs-material/"'
    )


def test_the_copyright_override_still_mirrors_materials_partial():
    """The override copies Material's own partial; a Material that changes it fails here, not silently."""
    import material

    theirs = (Path(material.__file__).parent / "templates" / "partials" / "copyright.html").read_text()
    for part in (
        '<div class="md-copyright">',
        "config.copyright",
        "config.extra.generator == false",
        "Made with",
    ):
        assert part in theirs, part
