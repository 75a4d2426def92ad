"""On the built site: every lab page offers its zip (both languages) and the zips hold what students need;
the API reference renders plain Markdown, with no raw Sphinx roles."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from course_tools import course

ROLE = re.compile(r":(?:func|class|mod|meth|attr|exc|data|obj|ref|py:\w+):`")


def test_the_api_reference_shows_no_raw_sphinx_roles(site: Path):
    for page in (site / "reference" / "index.html", site / "zh" / "reference" / "index.html"):
        html = page.read_text(encoding="utf-8")
        assert "devicekit.check_devices" in html or "check_devices" in html, f"{page} documents nothing"
        raw = sorted(set(ROLE.findall(html)))
        assert not raw, f"{page.relative_to(site)} shows raw roles: {raw}"


def test_every_lab_page_offers_its_zip_in_both_languages(site: Path):
    for lab in course.read_manifest()["labs"]:
        zipped = site / "downloads" / f"{lab['id']}.zip"
        assert zipped.is_file(), f"{zipped.name} was not built with the site"
        with zipfile.ZipFile(zipped) as zf:
            names = [n.split("/", 1)[1] for n in zf.namelist()]
        assert f"{lab['id']}.ipynb" in names and f"{lab['id']}.zh.ipynb" in names
        assert any(n.startswith("devicekit-") and n.endswith(".whl") for n in names)
        for lang, words in (("en", "Download lab (zip)"), ("zh", "下载实验 zip")):
            page = site / ("zh" if lang == "zh" else "") / "labs" / lab["id"] / "index.html"
            html = page.read_text(encoding="utf-8")
            assert words in html and f"downloads/{lab['id']}.zip" in html, f"{page} offers no zip"
