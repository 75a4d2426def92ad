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
