"""The API reference renders docstrings with mkdocstrings (google style, Markdown): no Sphinx roles.

A ``:func:`x``` in a docstring shows up raw on the reference page (issue 20). Code names are written in
Markdown backticks; a link to another documented object is a mkdocstrings cross-reference,
``[`name`][devicekit.name]``, and it must point at an object the reference page renders (``::: ...``),
or the strict site build fails on an unresolved reference.
"""

from __future__ import annotations

import re

from _paths import DOCS, ROOT

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
    assert not found, (
        "Sphinx roles render raw in mkdocstrings; use `name` or [`name`][devicekit.name]:\n"
        + "\n".join(found)
    )


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


def test_cross_references_point_at_rendered_objects():
    rendered = {
        m.group(1)
        for page in DOCS.rglob("*.md")
        for m in re.finditer(r"^::: ([\w.]+)", page.read_text(encoding="utf-8"), re.M)
    }
    assert "devicekit.check_devices" in rendered
    bad = [
        f"{path.relative_to(ROOT)}: [{target}]"
        for path in _sources()
        for target in CROSS_REF.findall(path.read_text(encoding="utf-8"))
        if target not in rendered
    ]
    assert not bad, "cross-references to objects no reference page renders:\n" + "\n".join(bad)
