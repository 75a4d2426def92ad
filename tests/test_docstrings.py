"""The API reference renders docstrings with mkdocstrings (google style, Markdown): no Sphinx roles.

A ``:func:`x``` in a docstring shows up raw on the reference page (issue 20). Code names are written in
Markdown backticks. No mkdocstrings cross-references (``[`name`][devicekit.name]``) either: the English
and the Chinese reference page both render every object, so autorefs finds two primary URLs for each
("Multiple primary URLs found for 'devicekit.prepare'") and the strict site build fails.
"""

from __future__ import annotations

import re

from course_tools.paths import ROOT

SPHINX_ROLE = re.compile(r":(?:func|class|mod|meth|attr|exc|data|obj|const|ref|doc):`")
CROSS_REF = re.compile(r"\[`[^`]+`\]\[(devicekit[\w.]*)\]")


def _sources():
    return sorted((ROOT / "src").rglob("*.py"))


def test_no_sphinx_roles_in_any_docstring_under_src():
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in _sources()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if SPHINX_ROLE.search(line)
    ]
    assert not found, "Sphinx roles render raw in mkdocstrings; write `name`:\n" + "\n".join(found)


def test_the_role_pattern_catches_each_role():
    for text in (
        ":func:`f`",
        ":class:`C`",
        ":mod:`m`",
        ":meth:`C.m`",
        ":attr:`a`",
        ":py:func:`f`",
        ":exc:`E`",
    ):
        assert SPHINX_ROLE.search(text), text
    assert not SPHINX_ROLE.search("`f` and [`f`][devicekit.f] and a dict {'a': 1}")


def test_no_cross_references_that_a_bilingual_build_cannot_resolve():
    found = [
        f"{path.relative_to(ROOT)}: [{target}]"
        for path in _sources()
        for target in CROSS_REF.findall(path.read_text(encoding="utf-8"))
    ]
    assert not found, "cross-references resolve to two pages (en and zh); write `name`:\n" + "\n".join(found)
    assert CROSS_REF.findall("see [`check_devices`][devicekit.check_devices]") == ["devicekit.check_devices"]
