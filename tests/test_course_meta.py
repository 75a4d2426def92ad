"""Lab metadata: present, valid, and the single source of the course map and badges."""

from __future__ import annotations

import json

import pytest

from course_tools import course
from course_tools.paths import SOLUTIONS, notebooks


def test_every_solution_declares_valid_metadata():
    labs = course.labs()
    assert [lab.id for lab in labs] == sorted({p.name.split(".")[0] for p in notebooks(SOLUTIONS)})
    for lab in labs:
        assert lab.titles["en"] and lab.titles["zh"] and lab.lesson_titles["en"] and lab.lesson_titles["zh"]
        assert lab.badges("en")[0] in {en for en, _ in course.NEEDS.values()}


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (lambda m: m.pop("needs"), "needs"),
        (lambda m: m.update(needs=["tpu"]), "needs"),
        (lambda m: m.update(minutes={"cpu": 0, "gpu": 5}), "minutes"),
        (lambda m: m.update(lab="02-other"), "file name"),
    ],
)
def test_malformed_metadata_is_reported(tmp_path, change, error):
    nb = json.loads((SOLUTIONS / "01-devices.ipynb").read_text(encoding="utf-8"))
    change(nb["metadata"]["devicekit"])
    path = tmp_path / "01-devices.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    with pytest.raises(course.CourseMetadataError, match=error):
        course.read_metadata(path)


def test_course_map_without_solutions_has_no_solution_column():
    assert "solutions/" in course.course_map("en")
    assert "solutions/" not in course.course_map("en", with_solutions=False)
    assert "课程" in course.course_map("zh")


def test_the_manifest_is_up_to_date_with_the_solutions():
    """src/devicekit_labs/manifest.json is what the solutions' metadata and the checks say today."""
    from course_tools.paths import MANIFEST

    assert MANIFEST.read_text(encoding="utf-8") == course.manifest_text(), (
        "run `python -m course_tools.course --write`"
    )


def test_every_reader_of_the_lab_list_agrees_with_the_manifest():
    """The registry, the grader and the site nav take their lab list from the manifest, nothing else."""
    import devicekit_labs
    from devicekit_grade import identify

    data = course.read_manifest()
    with_checks = [lab["id"] for lab in data["labs"] if lab["exercises"]]
    assert devicekit_labs.known_labs() == with_checks == identify.known_labs()
    for lab in data["labs"]:
        keys = [e["key"] for e in lab["exercises"]]
        assert [e.key for e in devicekit_labs.exercises_for(lab["id"])] == keys if keys else True
    nav = course.nav_entries("Labs", data)
    assert [next(iter(e.values())) for e in nav] == [f"labs/{lab['id']}.ipynb" for lab in data["labs"]]
    zh = course.nav_translations(data)
    assert all(title in zh and zh[title].startswith("实验 ") for e in nav for title in e)


def test_metadata_without_a_short_name_is_refused(tmp_path):
    meta = {"lab": "01-x", "needs": ["cpu"], "minutes": {"cpu": 1, "gpu": 1}}
    nb = {"cells": [], "metadata": {"devicekit": meta}}
    path = tmp_path / "01-x.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    with pytest.raises(course.CourseMetadataError, match="short"):
        course.read_metadata(path)
