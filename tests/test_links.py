"""A link check over the whole built site, both languages: every relative ``href``/``src`` of every HTML
page leads to a file of the site, and every ``#anchor`` to an id on the target page. External links are
not fetched (the test machines are offline); they are listed in ``build/link-check.txt``.

The site is the full snapshot build that this module shares with ``test_site.py`` and ``test_browser.py``
(the ``site`` fixture of ``conftest.py``).
"""

from __future__ import annotations

import json
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

from course_tools.paths import ROOT

# --- parsing ------------------------------------------------------------------------------------

_LINK_ATTRS = {"href", "src"}


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.refs: list[tuple[str, str, str]] = []  # (tag, attribute, value)

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name == "id" or (tag == "a" and name == "name"):
                self.ids.add(value)
            elif name in _LINK_ATTRS and tag != "base":
                self.refs.append((tag, name, value))


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def _target(site: Path, page_rel: str, ref: str) -> tuple[Path, str]:
    """The file a relative reference on ``page_rel`` points to, and its fragment."""
    url = urljoin("http://site.invalid/" + page_rel, ref)
    parts = urlsplit(url)
    path = unquote(parts.path).lstrip("/")
    target = site / path
    if not path or path.endswith("/") or target.is_dir():
        target = target / "index.html"
    return target, unquote(parts.fragment)


def check_links(site: Path) -> dict:
    pages = sorted(site.rglob("*.html"))
    parsed = {path: _parse(path) for path in pages}
    broken: list[str] = []
    external: Counter[str] = Counter()
    checked = anchors = 0
    for path, page in parsed.items():
        rel = path.relative_to(site).as_posix()
        for tag, attr, value in page.refs:
            value = value.strip()
            scheme = urlsplit(value).scheme.lower()
            if value.startswith("//") or scheme in ("http", "https"):
                external[value] += 1
                continue
            if scheme in ("mailto", "javascript", "data", "tel") or not value:
                continue
            checked += 1
            target, fragment = _target(site, rel, value)
            if not target.is_file():
                broken.append(f"{rel}: <{tag} {attr}={value!r}> -> missing {target.relative_to(site)}")
                continue
            if fragment:
                anchors += 1
                if target.suffix != ".html":
                    continue
                ids = parsed[target].ids if target in parsed else _parse(target).ids
                if fragment not in ids:
                    broken.append(f"{rel}: <{tag} {attr}={value!r}> -> no id {fragment!r} in {target.name}")
    return {
        "pages": len(pages),
        "checked": checked,
        "anchors": anchors,
        "broken": broken,
        "external": dict(sorted(external.items())),
    }


def test_no_broken_internal_links_or_anchors(site):
    result = check_links(site)
    report = ROOT / "build" / "link-check.txt"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(
        f"{result['pages']} pages, {result['checked']} internal links checked "
        f"({result['anchors']} with #anchors), {len(result['broken'])} broken\n\n"
        + "".join(f"BROKEN {line}\n" for line in result["broken"])
        + f"\nExternal links (not fetched), {len(result['external'])} distinct:\n"
        + "".join(f"{count:4d}  {url}\n" for url, count in result["external"].items()),
        encoding="utf-8",
    )
    print(report.read_text(encoding="utf-8"))
    assert not result["broken"], "\n".join(result["broken"])
    assert result["pages"] >= 10 and result["checked"] > 200, result
    # both languages were crawled
    assert (site / "zh" / "atlas" / "index.html").is_file() and (site / "atlas" / "index.html").is_file()


def test_checker_catches_a_broken_link_and_a_dead_anchor(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "index.html").write_text(
        '<a id="top" href="a/">ok</a><a href="a/#here">ok</a><a href="#top">ok</a>'
        '<a href="missing/">bad</a><a href="a/#nowhere">bad</a><a href="https://example.org/">ext</a>',
        encoding="utf-8",
    )
    page = '<h2 id="here">x</h2><img src="../index.html">'
    (tmp_path / "a" / "index.html").write_text(page, encoding="utf-8")
    result = check_links(tmp_path)
    assert result["checked"] == 6 and result["anchors"] == 3
    assert len(result["broken"]) == 2
    assert result["external"] == {"https://example.org/": 1}


def test_every_atlas_family_has_its_anchor_in_both_languages(site):
    from devicekit.explain import FAMILIES

    for lang in ("", "zh/"):
        ids = _parse(site / f"{lang}atlas" / "index.html").ids
        missing = [fid for fid in (*FAMILIES, "explain", "not-device", "device-notes") if fid not in ids]
        assert not missing, f"{lang or 'en/'}atlas: no anchor for {missing}"


def test_widget_catalog_is_published_once_for_both_languages(site):
    from course_tools.generate import atlas

    published = site / atlas.WIDGET_JSON_PATH
    assert json.loads(published.read_text(encoding="utf-8")) == json.loads(atlas.widget_json())
    # the zh pages load the shared assets from the site root, next to which the widget finds its JSON
    zh_atlas = (site / "zh" / "atlas" / "index.html").read_text(encoding="utf-8")
    assert 'src="../../assets/explainer.js"' in zh_atlas
    assert (site / "assets" / "explainer.js").is_file()
