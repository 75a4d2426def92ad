"""The suite's xdist units (`xdist_scheduling`): every test file that needs an artifact made once per run
is in the unit of the others that need it, so no worker waits on another's lock."""

from __future__ import annotations

import ast
from pathlib import Path

from xdist_scheduling import SHARED, SHARED_FIXTURES, UNIT_OF, unit_of

TESTS = Path(__file__).parent
ROOT = TESTS.parent


def shared_fixtures_used(path: Path) -> set[str]:
    """The `SHARED_FIXTURES` a test file requests: as a parameter of a test or fixture, or by name (a string,
    as ``request.getfixturevalue`` takes it)."""
    used = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            used |= {a.arg for a in node.args.args} & set(SHARED_FIXTURES)
        elif isinstance(node, ast.Constant) and node.value in SHARED_FIXTURES:
            used.add(node.value)
    return used


def test_every_file_that_needs_a_shared_artifact_is_in_its_unit():
    needing = {
        str(path.relative_to(ROOT)): used
        for path in sorted(TESTS.glob("test_*.py"))
        if (used := shared_fixtures_used(path))
    }
    assert needing, "no test file requests a shared fixture: the scan is broken"
    missing = sorted(set(needing) - set(UNIT_OF))
    assert not missing, f"add these files to xdist_scheduling.SHARED: {missing}"
    for unit, paths in SHARED.items():
        for path in paths:
            assert (ROOT / path).is_file(), f"{unit}: {path} does not exist"


def test_the_shared_fixtures_are_the_ones_made_once_per_run():
    conftest = ast.parse((TESTS / "conftest.py").read_text(encoding="utf-8"))
    fixtures = {
        node.name: node
        for node in conftest.body
        if isinstance(node, ast.FunctionDef) and any("fixture" in ast.unparse(d) for d in node.decorator_list)
    }
    makers = {"once_per_run", "build_site"}

    def made_once(name: str) -> bool:
        node = fixtures[name]
        calls = {
            n.func.id for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        }
        return bool(calls & makers) or any(a.arg in fixtures and made_once(a.arg) for a in node.args.args)

    once = {name for name in fixtures if made_once(name)}
    assert set(SHARED_FIXTURES) == once


def test_a_shared_unit_holds_its_files_and_any_other_file_is_its_own_unit():
    assert unit_of("tests/test_site.py::test_strict_build_has_no_warnings") == unit_of(
        "tests/test_links.py::test_no_broken_internal_links_or_anchors[en]"
    )
    assert unit_of("tests/test_grade.py::test_x") == unit_of("tests/test_grade_judged.py::test_y")
    assert unit_of("labs/01-devices.ipynb::Cell 3") == "labs/01-devices.ipynb"
    assert unit_of("tests/test_device.py::test_z") == "tests/test_device.py"
