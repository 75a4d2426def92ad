"""One word for one thing, and Chinese typography, in every Chinese text the course ships.

The terms and their forbidden variants come from ``course_tools/data/glossary.yml`` (the terms table);
each failure names ``file:line`` and what to write instead. Scanned: the zh pages, the zh notebooks
(Markdown, code comments and strings), the zh lines of the error catalog, the widget script, devicekit
(grader, self-checks), the build tools, the theme overrides, ``mkdocs.yml`` and the README.

Typography (in Markdown, where it shows when rendered): no italics, ``**标签**：正文`` rather than
``**标签：** 正文``, no spaces next to full-width punctuation or between bold text and Chinese, "10 万"
rather than "100,000", and titles with a full-width colon: "第 N 课：…" for lessons, "实验 N：…" for labs.
An English term is glossed once per page ("缓冲区（buffer）" the first time, "缓冲区" after that).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
import yaml

from course_tools.paths import DATA, DOCS, LABS, ROOT, SOLUTIONS, notebooks

GLOSSARY = DATA / "glossary.yml"
HAN = "\u3400-\u4dbf\u4e00-\u9fff"
#: Full-width punctuation and forms, and the quotes, dash and ellipsis Chinese sets full width.
PUNCT = "\u3000-\u303f\ufe30-\ufe4f\uff00-\uffef\u2018\u2019\u201c\u201d\u2014\u2026"
CJK = f"{HAN}{PUNCT}"
HAS_HAN = re.compile(f"[{HAN}]")


@dataclass(frozen=True)
class Rule:
    term: str
    pattern: re.Pattern
    use: str
    unless: re.Pattern | None


def load_rules(path: Path = GLOSSARY) -> list[Rule]:
    terms = yaml.safe_load(path.read_text(encoding="utf-8"))["terms"]
    return [
        Rule(
            term=term["id"],
            pattern=re.compile(bad["pattern"]),
            use=bad["use"],
            unless=re.compile(bad["unless"]) if bad.get("unless") else None,
        )
        for term in terms
        for bad in term.get("forbidden", [])
    ]


RULES = load_rules()


# --- where Chinese text lives ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Line:
    where: str  # "path:line" (notebooks: "path:cell N:line")
    text: str
    markdown: bool  # rendered as Markdown (typography checks apply)


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _markdown_lines(path: Path) -> list[Line]:
    """Lines of a zh Markdown page outside fenced code blocks."""
    lines, fenced = [], False
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if re.match(r"\s*(```|~~~)", text):
            fenced = not fenced
            continue
        lines.append(Line(f"{_rel(path)}:{number}", text, markdown=not fenced))
    return lines


def _notebook_lines(path: Path) -> list[Line]:
    nb = nbformat.read(path, as_version=4)
    lines = []
    for index, cell in enumerate(nb.cells, 1):
        fenced = False
        for number, text in enumerate(cell.source.splitlines(), 1):
            markdown = cell.cell_type == "markdown"
            if markdown and re.match(r"\s*(```|~~~)", text):
                fenced = not fenced
                continue
            lines.append(Line(f"{_rel(path)}:cell {index}:{number}", text, markdown and not fenced))
    return lines


def _chinese_lines(path: Path) -> list[Line]:
    """Lines of a mixed-language file (catalog, scripts, README) that hold Chinese text."""
    return [
        Line(f"{_rel(path)}:{number}", text, markdown=False)
        for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if HAS_HAN.search(text)
    ]


def _catalog_code_comments(lines: list[Line]) -> list[Line]:
    """The catalog's lines with each ``"code_zh"`` example reduced to its comments: the code itself is
    Python (``worker`` there is a function's name), only the comments are Chinese prose."""
    out = []
    for line in lines:
        key, _, value = line.text.strip().partition(": ")
        if key != '"code_zh"':
            out.append(line)
            continue
        code = json.loads(value.rstrip(","))
        out += [Line(line.where, "#" + c.split("#", 1)[1], False) for c in code.splitlines() if "#" in c]
    return out


ZH_PAGES = sorted(p for p in DOCS.rglob("*.zh.md") if "overrides" not in p.parts)
ZH_NOTEBOOKS = [p for p in notebooks(SOLUTIONS) + notebooks(LABS) if p.name.endswith(".zh.ipynb")]
MIXED = sorted(
    {
        ROOT / "README.md",
        ROOT / "mkdocs.yml",
        ROOT / "src" / "devicekit" / "catalog.json",
        DOCS / "assets" / "explainer.js",
        *(ROOT / "src").rglob("*.py"),  # devicekit, its self-checks and the grader
        *(ROOT / "tools").rglob("*.py"),
        *(DOCS / "overrides").rglob("*.html"),
    }
)


def _lines(path: Path) -> list[Line]:
    if path.suffix == ".ipynb":
        return _notebook_lines(path)
    if path.name.endswith(".zh.md"):
        return _markdown_lines(path)
    lines = _chinese_lines(path)
    if path.name == "catalog.json":
        lines = _catalog_code_comments(lines)
    if path.name == "README.md":  # the README's Chinese paragraphs are Markdown too
        lines = [Line(line.where, line.text, markdown=True) for line in lines]
    return lines


SOURCES = [*ZH_PAGES, *ZH_NOTEBOOKS, *MIXED]


def _id(path: Path) -> str:
    return _rel(path)


# --- terms -------------------------------------------------------------------------------------------------


def term_problems(lines: list[Line], rules: list[Rule] = RULES) -> list[str]:
    problems = []
    for line in lines:
        for rule in rules:
            found = rule.pattern.search(line.text)
            if found and not (rule.unless and rule.unless.search(line.text)):
                problems.append(f"{line.where}: “{found.group(0)}” → {rule.use}   | {line.text.strip()[:90]}")
    return problems


@pytest.mark.parametrize("path", SOURCES, ids=_id)
def test_chinese_text_uses_the_course_terms(path):
    problems = term_problems(_lines(path))
    assert not problems, "terms from course_tools/data/glossary.yml:\n" + "\n".join(problems)


# --- typography --------------------------------------------------------------------------------------------

CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
AUTOLINK = re.compile(r"<https?://[^>]+>")  # rendered as its URL
ATTR_LIST = re.compile(r"\s*\{:?\s*[#.][^}]*\}\s*$")  # `{ #id }` after a heading: not rendered
LINK_TARGET = re.compile(r"\]\([^)]*\)|<[^>]+>")  # link targets and HTML tags: not rendered text
BLOCK_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)]|#+|>)\s+")
TYPOGRAPHY = [
    (
        re.compile(
            r"(?<![*\\A-Za-z0-9])\*(?![\s*])[^*]+?(?<![\s*\\])\*(?![*A-Za-z0-9])"
            r"|(?<![\w\\])_(?![\s_])[^_]+?(?<![\s_])_(?!\w)"
        ),
        "italics: Chinese has no italic (browsers fake a slant); use “” or **bold**",
    ),
    (re.compile(r"<(?:em|i)>"), "italics: Chinese has no italic; use “” or <strong>"),
    (
        re.compile(f"[{PUNCT}]\\*\\*[ \\t]"),
        "write **标签**：正文, not **标签：** 正文 (renders a stray space)",
    ),
    (
        re.compile(f"[{CJK}]\\*\\*[ \\t]+[{CJK}]|[{CJK}][ \\t]+\\*\\*[{CJK}]"),
        "no space between bold text and Chinese",
    ),
    (
        re.compile(f"(?<=[{PUNCT}])[ \\t]+(?=[^\\s|])|(?<=[^\\s|])[ \\t]+(?=[{PUNCT}])"),
        "no space next to full-width punctuation",
    ),
    (re.compile(r"(?<![\d,.])\d{1,3}(?:,\d{3})+(?![\d,])"), "write 10 万 / 1 亿, not 100,000"),
]


def typography_problems(lines: list[Line]) -> list[str]:
    problems = []
    for line in lines:
        if not line.markdown or not HAS_HAN.search(line.text):
            continue
        text = CODE_SPAN.sub("x", line.text)
        text = BLOCK_MARKER.sub("", LINK_TARGET.sub("", AUTOLINK.sub("x", ATTR_LIST.sub("", text))))
        for pattern, message in TYPOGRAPHY:
            found = pattern.search(text)
            if found:
                problems.append(f"{line.where}: {message}   | {line.text.strip()[:90]}")
    return problems


@pytest.mark.parametrize("path", [*ZH_PAGES, *ZH_NOTEBOOKS, ROOT / "README.md"], ids=_id)
def test_chinese_typography(path):
    problems = typography_problems(_lines(path))
    assert not problems, "\n".join(problems)


# --- glosses -----------------------------------------------------------------------------------------------

GLOSSES = [
    t["gloss"] for t in yaml.safe_load(GLOSSARY.read_text(encoding="utf-8"))["terms"] if t.get("gloss")
]


@pytest.mark.parametrize("path", [*ZH_PAGES, *ZH_NOTEBOOKS], ids=_id)
def test_an_english_term_is_glossed_once_per_page(path):
    prose = [line for line in _lines(path) if line.markdown]
    problems = []
    for gloss in GLOSSES:
        where = [line.where for line in prose for _ in range(line.text.count(gloss))]
        if len(where) > 1:
            problems.append(
                f"“{gloss}” {len(where)} times ({', '.join(where)}): gloss it once, then write the term"
            )
    assert not problems, "\n".join(problems)


# --- titles ------------------------------------------------------------------------------------------------


def _first_heading(path: Path) -> str:
    if path.suffix == ".ipynb":
        text = "\n".join(
            c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown"
        )
    else:
        text = path.read_text(encoding="utf-8")
    return next((line for line in text.splitlines() if line.startswith("# ")), "")


LESSON_TITLE = re.compile(r"^# 第 (\d+) 课：\S")
LAB_TITLE = re.compile(r"^# 实验 (\d+)：\S")


@pytest.mark.parametrize("path", sorted((DOCS / "lessons").glob("*.zh.md")), ids=_id)
def test_lesson_titles_use_a_full_width_colon(path):
    title = _first_heading(path)
    assert LESSON_TITLE.match(title), f"{_rel(path)}: {title!r} — write “# 第 N 课：标题”, like the labs"
    assert int(LESSON_TITLE.match(title).group(1)) == int(path.name[:2])


@pytest.mark.parametrize("path", ZH_NOTEBOOKS, ids=_id)
def test_lab_titles_use_a_full_width_colon(path):
    title = _first_heading(path)
    assert LAB_TITLE.match(title), f"{_rel(path)}: {title!r} — write “# 实验 N：标题”, like the lessons"
    assert int(LAB_TITLE.match(title).group(1)) == int(path.name[:2])


def test_nav_titles_use_a_full_width_colon():
    """The zh titles of labs and solutions in the nav (made from the manifest) read 实验 N：名称."""
    from course_tools import course

    titles = list(course.nav_translations().values())
    assert titles, "no lab or solution entries in the nav translations"
    for title in titles:
        assert re.match(r"^(实验|参考答案) \d+：\S", title), f"nav translation: {title!r}"


# --- the checks themselves ---------------------------------------------------------------------------------


def _check(text: str, markdown: bool = True) -> list[str]:
    lines = [Line("x:1", text, markdown)]
    return term_problems(lines) + typography_problems(lines)


@pytest.mark.parametrize(
    "bad",
    [
        "把张量搬运到 GPU 上。",
        "先把模型拷贝过去。",
        "用报错解释器看看。",
        "设备报错图鉴",
        "评分程序会重新运行。",
        "打开这个笔记本。",
        "每个算子都会检查设备。",
        "参数 '{1}' 在 {2} 上（内核 {4}）。",
        "一个 CUDA 内核",
        "损失由 CPU 内核算出。",
        "请减小批大小。",
        "**标签：** 正文",
        "**移动** 张量",
        "这是*斜体*的中文。",
        "这是 _斜体_ 的中文。",
        "原因： 设备不同。",
        "每个单元格 100,000 个字符",
        "页锁定内存",
        "## 常见误解",
        "## 接下来",
        "### 3. 接下来",
        "## 预备知识",
        "学完这一课，你能说出张量在哪个设备上。",
        "每个 worker 都调用了 teardown()。",
        "移动数据类的字段。",
        "模块的前向传播在 GPU 上。",
    ],
)
def test_the_checks_catch_each_known_mistake(bad):
    assert _check(bad), bad


@pytest.mark.parametrize(
    "good",
    [
        "没有 GPU 的笔记本电脑也能运行。",
        "把张量移动到 GPU 上。",
        "重启内核并运行全部单元格。",
        "报错里的 `wrapper_CUDA_addmm` 是包装函数。",
        "**标签**：正文",
        "用 `x * y` 或 `a_b_c` 计算。",
        "- **第一步**：移动模型。",
        "| 25 分钟 | 实验 1 的三道练习全部计分。 |",
        "每个单元格 10 万个字符",
        "`bmm` 是批量矩阵乘法。",
        "这是 Python 解释器的行为。",
        "实验 1 · 设备",
        "## 常见误区",
        "## 下一步",
        "接下来，把模型移动到 GPU 上。",
        "## 前置知识",
        "学完本课，你能说出张量在哪个设备上。",
        "每个工作进程都调用了 `teardown()`，`worker` 函数放在模块里。",
        "`devicekit_labs.workers` 里有现成的函数。",
        "用 dataclass 定义批次；检查数据类型。",
        "前向计算之后做反向传播。",
    ],
)
def test_the_checks_leave_correct_text_alone(good):
    assert not _check(good), _check(good)


def test_worker_in_code_lines_is_left_alone():
    assert not term_problems([Line("x:1", "spawn(worker, nprocs=2)", markdown=False)])
    assert not term_problems([Line("x:1", "worker.start()  # start it", markdown=False)])
    assert term_problems([Line("x:1", "worker.start()  # 启动 worker", markdown=False)])


def test_readme_chinese_has_no_line_breaks_that_render_as_spaces():
    # GitHub and Gitee render a line break inside a paragraph as a space, which shows next to Chinese.
    from course_tools.site.hooks import cjk_breaks

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert not cjk_breaks(text), f"README.md lines {cjk_breaks(text)}: join them (no break next to Chinese)"
