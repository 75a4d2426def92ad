"""The students-only site (``COURSE_STUDENTS_ONLY=1``) leaks nothing an instructor keeps: no instructors'
pages (the grading guide explains how grades are computed), no link to the repository that holds
``solutions/`` unless it is replaced by a solution-free one (``COURSE_STUDENTS_REPO_URL``)."""

from __future__ import annotations

import re

import pytest

from course_tools.paths import ROOT

pytestmark = pytest.mark.site  # its builds are chosen by name (getfixturevalue), so marked here


def _course_repo() -> str:
    return re.search(r"^repo_url:\s*(\S+)", (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), re.M).group(1)


@pytest.mark.parametrize("build", ["site_students", "site_students_repo"])
def test_students_only_build_has_no_instructor_pages_or_course_repository(request, build):
    built = request.getfixturevalue(build)  # conftest.py: one snapshot build each
    site, students_repo = built.site, built.env.get("COURSE_STUDENTS_REPO_URL", "")
    assert (site / "labs" / "01-devices" / "index.html").exists()
    assert not (site / "instructors").exists() and not (site / "zh" / "instructors").exists()
    course_repo = _course_repo()
    found_students_repo = False
    for path in site.rglob("*"):
        if path.suffix not in (".html", ".json", ".xml", ".js"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        where = path.relative_to(site)
        assert course_repo not in text, f"{where} links to the repository that holds the solutions"
        # what a link to it would leave behind without a students' repository: a path on this site that 404s
        assert not re.search(r'href="/(?:blob|tree)/', text), f"{where} keeps a repository path as a link"
        assert "instructors/" not in text, f"{where} links to an instructors' page"
        assert "devicekit-grade" not in text, f"{where} mentions the grader"
        found_students_repo |= bool(students_repo) and students_repo in text
    assert found_students_repo == bool(students_repo)
