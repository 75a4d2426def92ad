"""The Chinese side of the grader's report: every ``reason`` the grader writes, in Chinese, lab titles
instead of slugs, and numbers as a Chinese reader writes them ("50%", "3/3").

A row's ``reason`` is written in English, in parts joined by "; " (each part from one place of the
grader). `reason_zh` translates each part by its template (`TEMPLATES`); a part no template knows is kept
as is, and `untranslated` lists such parts (a test fails on any).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from devicekit_grade.failures import CAUSES, PREFIX
from devicekit_grade.installed import labs_manifest

_CELL = r"cell (\d+) \((.*?)\)"


def _cell(match: re.Match, number: int = 1, line: int = 2) -> str:
    return f"第 {match.group(number)} 个单元格（{match.group(line)}）"


#: (pattern of one English reason part, its Chinese): a string with {1}, {2}… for the groups, or a function.
TEMPLATES: list[tuple[str, object]] = [
    (rf"^error in {_CELL}: (.*)$", lambda m: f"{_cell(m)}出错：{m.group(3)}"),
    (
        rf"^{_CELL} ran longer than (\d+) s \(interrupted\)$",
        lambda m: f"{_cell(m)}运行超过 {m.group(3)} 秒（已中断）",
    ),
    (rf"^output of {_CELL} truncated$", lambda m: f"{_cell(m)}的输出被截断"),
    (rf"^kernel died in {_CELL}$", lambda m: f"内核在{_cell(m)}退出"),
    (
        rf"^{_CELL} did not stop when interrupted: stopped there$",
        lambda m: f"{_cell(m)}被中断后仍未停止：notebook 已在此处终止",
    ),
    (
        rf"^notebook ran longer than (\d+) s, stopped in {_CELL}$",
        lambda m: f"notebook 运行超过 {m.group(1)} 秒，在{_cell(m, 2, 3)}被终止",
    ),
    (r"^the notebook ran longer than (\d+) s$", "notebook 运行超过 {1} 秒"),
    (r"^more than (\d+) processes: stopped$", "进程超过 {1} 个：已终止"),
    (
        r"^the notebook was last run with torch (\S+); graded with torch (\S+)$",
        "notebook 上次运行用的是 torch {1}；评分用的是 torch {2}",
    ),
    (
        r"^this is the published solution notebook \(its metadata says role: solution\)$",
        "这是公开的参考答案 notebook（元数据写着 role: solution）",
    ),
    (
        r"^cell (\d+) is the published solution's cell, ### BEGIN SOLUTION marker included$",
        "第 {1} 个单元格就是参考答案的单元格（连 ### BEGIN SOLUTION 标记都在）",
    ),
    (
        r"^check cell (\d+) differs from the released lab \(the score does not use it\)$",
        "第 {1} 个检查单元格与发布的实验不同（得分不依赖它）",
    ),
    (
        r"^cell (\d+) reaches into the self-checks \(the score does not use them\)$",
        "第 {1} 个单元格动了自测代码（得分不依赖自测）",
    ),
    (r"^the code of the published solution, without its markers$", "代码与公开的参考答案相同（去掉了标记）"),
    (
        r"^no check cell for exercise\(s\) (.*) \(deleted or replaced\)$",
        "练习 {1} 没有检查单元格（被删除或替换）",
    ),
    (
        r"^a cell prints a check's verdict itself instead of calling check\(\.\.\.\)$",
        "有单元格自己打印检查结果，而不是调用 check(...)",
    ),
    (r"^a cell reaches for course or grader files \((.*)\)$", "有单元格试图读取课程或评分器的文件（{1}）"),
    (r"^a cell imports the self-checks' internals \((.*)\)$", "有单元格导入了自测的内部代码（{1}）"),
    (r"^identical file to (.*)$", "与 {1} 的文件完全相同"),
    (r"^identical code to (.*)$", "与 {1} 的代码相同（忽略命名和注释）"),
    (r"^near identical code to (.*)$", "与 {1} 的代码几乎相同"),
    (r"^an older submission by the same student: (.*) counts$", "同一学生较早的提交：以 {1} 为准"),
    (r"^submitted late \((.*)\)$", "迟交（{1}）"),
    (r"^marked LATE by Canvas$", "Canvas 标记为迟交"),
    (r"^no submission found$", "没有找到提交"),
    (
        r"^no gradable submission: (.*?): (\S+) \((.*)\)$",
        lambda m: f"没有可评分的提交：{m.group(1)}：{m.group(2)}（{reason_zh(m.group(3))}）",
    ),
    (r"^cannot tell which lab this is: (.*)$", "无法判断是哪个实验：{1}"),
    (r"^not valid JSON \((.*)\)$", "不是有效的 JSON（{1}）"),
    (
        r"^the file is not text \(not UTF-8\): not a saved notebook$",
        "文件不是文本（不是 UTF-8）：不是保存的 notebook",
    ),
    (
        r"^JSON nested too deeply to be a notebook .*$",
        "JSON 嵌套层数过深，不可能是 notebook（列表或对象层层嵌套）",
    ),
    (r"^a notebook nested too deeply to handle .*$", "notebook 嵌套层数过深，无法处理"),
    (r"^a notebook whose JSON is nested too deeply to read$", "notebook 的 JSON 嵌套层数过深，无法读取"),
    (
        r"^valid JSON \((\w+)\) but not a notebook: no 'cells' and 'nbformat'$",
        "是 JSON（{1}），但不是 notebook：没有 cells 和 nbformat",
    ),
    (r"^valid JSON but not a readable notebook: (.*)$", "是 JSON，但不是可读的 notebook：{1}"),
    (
        r"^the file is (\d+) MiB, too large to be a lab notebook$",
        "文件有 {1} MiB，太大，不可能是实验 notebook",
    ),
    (r"^cannot read the file: (.*)$", "无法读取文件：{1}"),
    (
        r"^a symbolic link \(to (.*)\), not a file: not graded\. Submit the file itself\.$",
        "这是符号链接（指向 {1}），不是文件：不评分。请提交文件本身。",
    ),
    (r"^a symbolic link to a folder \(to (.*)\): not followed$", "指向文件夹的符号链接（指向 {1}）：不跟随"),
    (r"^not a regular file$", "不是普通文件"),
    (r"^Python cache file$", "Python 缓存文件"),
    (
        r"^not graded: in a Jupyter checkpoint folder$",
        "不评分：位于 Jupyter 检查点文件夹中",
    ),
    (r"^name it on the command line to grade it$", "在命令行里单独指定即可评分"),
    (r"^not graded: hidden \((.*) starts with a dot\)$", "不评分：隐藏文件（{1} 以点开头）"),
    (
        r"^not graded: not an \.ipynb file \((.*)\); a notebook uploaded under another name can be graded by "
        r"naming it on the command line$",
        "不评分：不是 .ipynb 文件（{1}）；以其他名字上传的 notebook 可以在命令行里单独指定来评分",
    ),
    (r"^could not execute the notebook: (.*)$", "无法运行 notebook：{1}"),
    (r"^could not check the answers: (.*)$", "无法检查答案：{1}"),
    (r"^not graded: (.*)$", "未评分：{1}"),
    (r"^the grader failed on this file: (.*)$", "评分器处理这个文件时出错：{1}"),
    (r"^the grader's setup cell failed in the kernel: (.*)$", "评分器的准备单元格在内核中出错：{1}"),
    (r"^the grader's answer cell failed: (.*)$", "评分器的收集单元格出错：{1}"),
    (r"^(.*) is a symbolic link: not copied$", "{1} 是符号链接：没有复制"),
    (r"^(.*) not copied: over the (\d+) MB limit$", "{1} 没有复制：超过 {2} MB 的上限"),
]
# the grader's own failures (`devicekit_grade.failures`): "grader error: <cause>[: <what it saw>]"
for _en, _zh in CAUSES.values():
    TEMPLATES.append(
        (
            rf"^{PREFIX[0]}: {re.escape(_en)}(?:: (.*))?$",
            lambda m, zh=_zh: f"{PREFIX[1]}：{zh}" + (f"：{m.group(1)}" if m.group(1) else ""),
        )
    )
_COMPILED = [(re.compile(p, re.DOTALL), t) for p, t in TEMPLATES]


def _one(part: str) -> str | None:
    for pattern, template in _COMPILED:
        match = pattern.match(part)
        if match:
            if callable(template):
                return template(match)
            found = match
            return re.sub(r"\{(\d+)\}", lambda g, found=found: found.group(int(g.group(1))), str(template))
    return None


def reason_zh(reason: str) -> str:
    """``reason`` in Chinese, part by part (parts no template knows stay as they are)."""
    return "；".join(_one(part) or part for part in reason.split("; ") if part)


def untranslated(reason: str) -> list[str]:
    """The parts of ``reason`` that `reason_zh` leaves in English."""
    return [part for part in reason.split("; ") if part and _one(part) is None]


def number(value: float | int | None) -> str:
    """3 and 3.0 as "3", 2.5 as "2.5"; "" for None."""
    if value is None:
        return ""
    return f"{float(value):g}"


def percent(value: float | None) -> str:
    """50.0 as "50%" (no space, the Chinese way)."""
    return "" if value is None else f"{float(value):g}%"


_H1 = re.compile(r"^#\s+(.+?)\s*$", re.MULTILINE)


def lab_titles(labs_folder: Path | None, labs: list[str]) -> dict[str, tuple[str, str]]:
    """{lab: (English title, Chinese title)}: from the installed course manifest
    (`devicekit_grade.installed.labs_manifest`), else from the first H1 of the released notebooks
    ``NN-slug.ipynb`` and ``NN-slug.zh.ipynb``, else the slug. (The instructor's machine has no course build
    tools, and the grader's process never imports devicekit: nothing here imports either.)"""
    titles: dict[str, tuple[str, str]] = {}
    manifest = {entry["id"]: entry.get("title") for entry in labs_manifest()}
    for lab in labs:
        title = manifest.get(lab)
        if isinstance(title, dict) and title.get("en"):
            titles[lab] = (str(title["en"]), str(title.get("zh") or title["en"]))
            continue
        found = []
        for suffix in ("", ".zh"):
            title = ""
            if labs_folder is not None:
                path = labs_folder / f"{lab}{suffix}.ipynb"
                try:
                    cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
                except (OSError, ValueError):
                    cells = []
                for cell in cells:
                    source = cell.get("source", "")
                    source = "".join(source) if isinstance(source, list) else str(source)
                    match = _H1.search(source) if cell.get("cell_type") == "markdown" else None
                    if match:
                        title = match.group(1).strip()
                        break
            found.append(title)
        if found[0] or found[1]:
            titles[lab] = (found[0] or found[1], found[1] or found[0])
    return titles
