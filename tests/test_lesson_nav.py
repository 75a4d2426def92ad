"""Every lesson ends with working previous/next links, and nothing a student reads promises "coming soon".

The last paragraph of every lesson page, in both languages, is its navigation line:

- English (lesson 2): ``[← Lesson 1 · Devices and `.device`](01-devices.md) ·
  [Lesson 3 · How devices propagate →](03-propagation.md)``, on one line
- Chinese (lesson 2): ``[← 第 1 课：设备与 `.device`](01-devices.md) ·
  [第 3 课：设备如何传播 →](03-propagation.md)``, on one line

The first lesson has no previous link and the last no next link. Each link names the neighbouring lesson by
its number and its own title (the page's ``# `` heading, after "Lesson N — " or "第 N 课："), and its target
is that lesson's page (the ``.md`` name; the i18n plugin serves the Chinese twin on Chinese pages).
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from course_tools.paths import DOCS, LABS, SOLUTIONS, english, notebooks, zh_twin

LESSON_DIR = DOCS / "lessons"
EN_LESSONS = english(sorted(LESSON_DIR.glob("[0-9][0-9]-*.md")))
LESSONS = sorted([*EN_LESSONS, *(zh_twin(p) for p in EN_LESSONS)])
NUMBERS = [int(p.name[:2]) for p in EN_LESSONS]
LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
TITLE = {"en": re.compile(r"^# Lesson (\d+) — (.+)$"), "zh": re.compile(r"^# 第 (\d+) 课：(.+)$")}
PREVIOUS = {"en": "← Lesson {n} · {title}", "zh": "← 第 {n} 课：{title}"}
NEXT = {"en": "Lesson {n} · {title} →", "zh": "第 {n} 课：{title} →"}
#: What no student-facing text may promise (English and Chinese).
COMING_SOON = re.compile(r"coming soon|即将推出|敬请期待", re.IGNORECASE)


def _lang(page: Path) -> str:
    return "zh" if page.name.endswith(".zh.md") else "en"


def _title(page: Path) -> tuple[int, str]:
    """The lesson's number and title, from its first ``# `` heading."""
    lang = _lang(page)
    heading = next(line for line in page.read_text(encoding="utf-8").splitlines() if line.startswith("# "))
    found = TITLE[lang].match(heading)
    assert found, f"{page.name}: first heading {heading!r} is not “{TITLE[lang].pattern}”"
    return int(found.group(1)), found.group(2).strip()


def last_paragraph(text: str) -> str:
    """The last block of text separated by a blank line, HTML comments removed."""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)
    blocks = [block.strip() for block in re.split(r"\n\s*\n", text) if block.strip()]
    return blocks[-1] if blocks else ""


def _neighbour(page: Path, number: int) -> Path:
    name = next(p.name for p in EN_LESSONS if int(p.name[:2]) == number)
    return page.with_name(name if _lang(page) == "en" else zh_twin(page.with_name(name)).name)


def expected_links(page: Path) -> list[tuple[str, str]]:
    """The (text, target) pairs the page's last paragraph must hold, in order."""
    number, _ = _title(page)
    lang, wanted = _lang(page), []
    for other, template in ((number - 1, PREVIOUS), (number + 1, NEXT)):
        if other in NUMBERS:
            neighbour = _neighbour(page, other)
            _, title = _title(neighbour)
            target = neighbour.name.replace(".zh.md", ".md")
            wanted.append((template[lang].format(n=other, title=title), target))
    return wanted


def test_there_are_lessons_in_both_languages():
    assert len(EN_LESSONS) >= 2 and all(zh_twin(p).exists() for p in EN_LESSONS)
    assert NUMBERS == list(range(1, len(NUMBERS) + 1)), "lessons are numbered 01, 02, … without gaps"


@pytest.mark.parametrize("page", LESSONS, ids=lambda p: p.name)
def test_lesson_ends_with_previous_and_next_links(page):
    number, _ = _title(page)
    assert number == int(page.name[:2]), f"{page.name}: its heading says lesson {number}"
    last = last_paragraph(page.read_text(encoding="utf-8"))
    links = LINK.findall(last)
    wanted = expected_links(page)
    assert links == wanted, (
        f"{page.name}: the last paragraph must be the navigation line\n"
        f"  found:  {links} in {last[:200]!r}\n  wanted: {wanted}"
    )
    for _, target in links:
        assert (page.parent / target).is_file(), f"{page.name}: {target} does not exist"
        assert zh_twin(page.parent / target).is_file(), f"{page.name}: {target} has no Chinese twin"


def test_first_and_last_lessons_have_one_link_each():
    first, last = EN_LESSONS[0], EN_LESSONS[-1]
    for page in (first, zh_twin(first), last, zh_twin(last)):
        assert len(expected_links(page)) == 1


@pytest.mark.parametrize(
    ("text", "last"),
    [
        ("# T\n\nBody.\n\n[← A](a.md) · [B →](b.md)\n", "[← A](a.md) · [B →](b.md)"),
        ("Body.\n\n[B →](b.md)\n<!-- a comment -->\n\n", "[B →](b.md)"),
        ("[B →](b.md)\n\nA closing remark.\n", "A closing remark."),
    ],
)
def test_last_paragraph_is_the_last_block_of_text(text, last):
    assert last_paragraph(text) == last


STUDENT_PAGES = sorted(p for p in DOCS.rglob("*.md") if "overrides" not in p.parts)


def _promises(text: str) -> list[str]:
    return [line.strip()[:100] for line in text.splitlines() if COMING_SOON.search(line)]


def test_no_page_says_coming_soon():
    problems = [
        f"{page.relative_to(DOCS)}: {line}"
        for page in STUDENT_PAGES
        for line in _promises(page.read_text(encoding="utf-8"))
    ]
    assert not problems, "a promise the course does not keep:\n" + "\n".join(problems)


@pytest.mark.parametrize("folder", [LABS, SOLUTIONS], ids=lambda p: p.name)
def test_no_notebook_says_coming_soon(folder):
    problems = []
    for path in notebooks(folder):
        for number, cell in enumerate(nbformat.read(path, as_version=4).cells, 1):
            if cell.cell_type == "markdown":
                problems += [f"{path.name}: cell {number}: {line}" for line in _promises(cell.source)]
    assert not problems, "a promise the course does not keep:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    "text", ["Next lesson (coming soon).", "下一课（即将推出）", "敬请期待", "Coming Soon!"]
)
def test_the_promise_check_catches_each_wording(text):
    assert _promises(text)
