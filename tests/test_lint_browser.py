"""The "paste your code" page in a real browser (headless Chromium, as in tests/test_browser.py): the
linter runs in Pyodide served by the site itself, in both languages, and no other page loads it.

Pyodide's files come from the npm package (`npm install`, see `package.json` and
`course_tools/site/lint_page_hooks.py`); a site built without them skips the in-browser run, saying so."""

from __future__ import annotations

import json

import pytest
from test_browser import Tab, browser, origin  # noqa: F401  (fixtures; `site` comes from conftest.py)

BUGGY = "import torch\nx = torch.ones(3)\nx.to(device)\nstate = torch.load(path)\n"
PYODIDE_TIMEOUT_MS = 240_000  # compiling 10 MB of WebAssembly on a busy 2-core machine


def _bundled(built) -> bool:
    return (built / "assets" / "pyodide" / "pyodide.asm.wasm").is_file()


def test_sources_json_is_the_linter_without_torch(site):
    files = json.loads((site / "assets" / "devicelint" / "sources.json").read_text(encoding="utf-8"))
    assert "devicekit/lint/engine.py" in files and "devicekit/lint/rules.py" in files
    assert "import torch" not in files["devicekit/__init__.py"]
    assert not any("import torch" in source for source in files.values())


@pytest.mark.parametrize(("lang", "prefix", "word"), [("en", "", "thrown away"), ("zh", "zh/", "丢弃")])
def test_paste_page_lints_in_the_browser(browser, origin, site, lang, prefix, word):  # noqa: F811
    if not _bundled(site):
        pytest.skip("Pyodide is not bundled in this build: run `npm install` (package.json) and rebuild")
    tab = Tab(browser, origin)
    try:
        page = tab.goto(f"{prefix}lint-playground/")
        page.fill(".dk-lint__input", BUGGY)
        page.click(".dk-lint__run")
        page.wait_for_selector(".dk-lint__output li", timeout=PYODIDE_TIMEOUT_MS)
        items = page.locator(".dk-lint__output li").all_inner_texts()
        assert [item.split()[1] for item in items] == ["DK002", "DK008"]
        assert items[0].startswith("3:1 DK002") and word in items[0]
        href = page.locator(".dk-lint__output li a").first.get_attribute("href")
        assert href == "../lint/#dk002"
        page.fill(".dk-lint__input", "x = torch.ones(3).to(device)\n")  # a second run reuses Python
        page.click(".dk-lint__run")
        page.wait_for_function("document.querySelector('.dk-lint__status').textContent.length > 0")
        assert page.locator(".dk-lint__output li").count() == 0
        assert all(url.startswith(origin + "/") for url in tab.requests), "a request left the site"
        assert any("/assets/pyodide/pyodide.asm.wasm" in url for url in tab.requests)
        unexpected, _ = tab.unexpected_errors()
        assert not unexpected, unexpected
    finally:
        tab.close()


def test_other_pages_do_not_load_pyodide(browser, origin, site):  # noqa: F811
    tab = Tab(browser, origin)
    try:
        tab.goto("lint/")
        tab.goto("")
        assert not [url for url in tab.requests if "pyodide" in url or "lint-playground" in url]
    finally:
        tab.close()
