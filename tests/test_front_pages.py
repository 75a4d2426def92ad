"""The course's front pages list every lesson the course manifest has: the README's lesson lists (English and
Chinese) and the instructors' "Lessons at a glance" tables. Issue 40 found the README saying "all 9 lessons"
and the instructors' table stopping at lesson 9 once lessons 10 and 11 existed; these tests read the lesson
numbers from `src/devicekit_labs/manifest.json`, so the pages cannot go stale again."""

from __future__ import annotations

import re

import pytest

from course_tools import course
from course_tools.paths import DOCS, ROOT

#: The README's two lesson paragraphs, each after its marker comment and up to the next blank line.
README_LIST = re.compile(r"<!-- lessons: (en|zh) -->\n(.*?)(?:\n\n|\Z)", re.DOTALL)
#: A numbered item of such a list: the number at the start, after a colon or after a separator.
ITEM = {
    "en": re.compile(r"(?:: |, |; )(\d+) (?=\S)"),
    "zh": re.compile(r"(?:：|，|；)(\d+) (?=\S)"),
}
COUNT = {"en": re.compile(r"all (\d+) lessons"), "zh": re.compile(r"全部 (\d+) 课")}


def manifest_numbers() -> list[int]:
    return [lab["number"] for lab in course.read_manifest()["labs"]]


def readme_lists(text: str) -> dict[str, str]:
    return {lang: body for lang, body in README_LIST.findall(text)}


def listed_numbers(body: str, lang: str) -> tuple[int | None, list[int]]:
    """The count a README paragraph states, and the numbers of its items in order."""
    count = COUNT[lang].search(body)
    flat = " ".join(body.split())
    return (int(count.group(1)) if count else None, [int(n) for n in ITEM[lang].findall(flat)])


def glance_rows(page: str) -> list[tuple[int, str]]:
    """The rows of the "Lessons at a glance" table: (lesson number, suggested assignment)."""
    text = (DOCS / page).read_text(encoding="utf-8")
    table = text.split("<!-- course-map -->", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0].isdigit():
            rows.append((int(cells[0]), cells[-1]))
    return rows


def test_the_manifest_has_the_eleven_lessons():
    assert manifest_numbers() == list(range(1, 12))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_readme_lists_every_lesson_in_both_languages(lang):
    body = readme_lists((ROOT / "README.md").read_text(encoding="utf-8"))[lang]
    count, numbers = listed_numbers(body, lang)
    assert count == len(manifest_numbers()), f"the README ({lang}) says {count} lessons"
    assert numbers == manifest_numbers(), f"the README ({lang}) lists lessons {numbers}"


@pytest.mark.parametrize(
    ("page", "lab_word"), [("instructors/index.md", "Lab"), ("instructors/index.zh.md", "实验")]
)
def test_the_instructors_table_has_a_row_per_lesson(page, lab_word):
    rows = glance_rows(page)
    assert [number for number, _ in rows] == manifest_numbers()
    for number, assignment in rows:
        assert assignment.startswith(f"{lab_word} {number}"), (number, assignment)


def test_a_stale_list_is_caught():
    stale = (
        "<!-- lessons: en -->\n**What exists today:** all 9 lessons: 1 devices, 2 models, 9 a capstone.\n\n"
        "<!-- lessons: zh -->\n**现有内容**：全部 9 课：1 设备，2 模型，9 综合项目。"
    )
    lists = readme_lists(stale)
    assert listed_numbers(lists["en"], "en") == (9, [1, 2, 9])
    assert listed_numbers(lists["zh"], "zh") == (9, [1, 2, 9])
