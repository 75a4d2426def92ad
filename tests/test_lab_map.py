"""One map per lab (`course_tools.course.lab_map`, ``python -m course_tools.course --where 10``): every file
of a lab, by kind. Every lab of the manifest has each kind (hidden judges: an empty module where a lab has
none), every path it names exists, and every file named after a lab number is on that lab's map."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from course_tools.course import MAP_KINDS, lab_map, read_manifest
from course_tools.paths import ROOT

LABS = [entry["id"] for entry in read_manifest()["labs"]]
#: Kinds every lab has (catalog families: not every lab's errors have a family of their own).
REQUIRED = ("pages", "lab", "solution", "checks", "hidden judges", "mutations", "tests")


@pytest.mark.parametrize("lab", LABS)
def test_every_lab_has_each_kind_of_file_and_each_exists(lab):
    found = lab_map(lab)
    assert tuple(found) == MAP_KINDS
    for kind in REQUIRED:
        assert found[kind], f"{lab} has no {kind}"
    for kind, paths in found.items():
        for path in paths:
            assert (ROOT / path.split("#")[0]).is_file(), (kind, path)
    assert len(found["pages"]) == len(found["lab"]) == len(found["solution"]) == 2  # English and Chinese


def test_every_file_named_after_a_lab_number_is_on_its_map():
    named = {
        path
        for folder in ("src/devicekit_labs", "grading/hidden", "tests/mutations", "tests")
        for path in (str(p.relative_to(ROOT)) for p in (ROOT / folder).glob("*lab[0-9][0-9]*.py"))
    }
    on_maps = {path for lab in LABS for paths in lab_map(lab).values() for path in paths}
    assert named <= on_maps, sorted(named - on_maps)


def test_the_map_is_printed_by_number_and_an_unknown_lab_is_refused():
    done = subprocess.run(
        [sys.executable, "-m", "course_tools.course", "--where", "10"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert re.search(r"^checks:\n  src/devicekit_labs/lab10\.py$", done.stdout, re.MULTILINE), done.stdout
    assert "grading/hidden/lab10.py" in done.stdout and "solutions/10-compile.zh.ipynb" in done.stdout
    refused = subprocess.run(
        [sys.executable, "-m", "course_tools.course", "--where", "99"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert refused.returncode == 2 and "no lab" in refused.stderr
