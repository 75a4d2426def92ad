"""Write the grades: ``grades.csv`` and ``grades.json`` (every row), ``report.html`` (bilingual, for the
instructor), ``canvas.csv`` and ``moodle.csv`` (grade-import files), and ``feedback/<student>.txt`` (one
file per student, in the student's language). Every file is written atomically: a reader never sees half
a file. `load` reads an earlier ``grades.json`` back, so a second run merges into the same folder.
"""

from __future__ import annotations

import contextlib
import csv
import html
import io
import json
import os
import re
import tempfile
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from devicekit.messages import Message
from devicekit_grade.failures import Told
from devicekit_grade.installed import labs_manifest
from devicekit_grade.records import STATUS_ZH, STATUSES, Grade
from devicekit_grade.released import notebook_cells

_UMASK = os.umask(0o022)
os.umask(_UMASK)

FIXED = [
    "file", "student", "student_name", "lab", "lang", "identified_by", "status", "flags",
    "score", "max", "points", "points_possible", "percent",
]  # fmt: skip
COUNTED = ("graded", "timeout", "kernel-died")
#: Rows exported to an LMS: the counted ones, and roster students with no gradable file (0 points).
EXPORTED = (*COUNTED, "missing")

#: What each status means: the report's legend.
STATUS_HELP = {
    "graded": Message(
        "Ran; the score counts the exercises the grader's checks passed.",
        "已运行；得分是评分器用已发布的自测判定通过的练习数。",
    ),
    "timeout": Message(
        "A cell ran past the per-cell limit (interrupted, the rest ran) or the notebook past its limit.",
        "某个单元格超过单元格时限（已中断，其余照常运行），或整个 notebook 超过时限。",
    ),
    "kernel-died": Message(
        "Python stopped mid-run (os._exit, a crash in compiled code, out of memory); exercises before that "
        "cell count.",
        "运行中途 Python 进程意外退出（调用了 os._exit、C/C++ 编写的底层代码崩溃、内存耗尽）；"
        "该单元格之前的练习照常计分。",
    ),
    "invalid-json": Message(
        "Not valid JSON: ask for the .ipynb again, saved from Jupyter.",
        "不是有效的 JSON：请学生从 Jupyter 重新下载 .ipynb 再提交。",
    ),
    "not-a-notebook": Message("Valid JSON, but not a notebook.", "是 JSON，但不是 notebook。"),
    "unknown-lab": Message(
        "Nothing says which lab this is, or the lab has no checks here.",
        "无法判断是哪个实验，或该实验没有自测。",
    ),
    "refused": Message("A symbolic link: never followed, never graded.", "符号链接：不跟随，不评分。"),
    "ignored": Message(
        "Not a submission (the reason says why); name it on the command line to grade it.",
        "不是提交的作业（原因见说明）；在命令行里单独指定即可评分。",
    ),
    "superseded": Message(
        "An older submission of the same student; the newest counts.",
        "同一学生较早的提交；以最新的为准。",
    ),
    "missing": Message(
        "A roster student with no gradable submission: 0 points; the reason says what was found.",
        "名单上的学生没有可评分的提交：0 分；原因见说明。",
    ),
    "error": Message(
        "The grader could not handle this file; the reason says why.",
        "评分器无法处理这个文件；原因见说明。",
    ),
    "grader-error": Message(
        "The grader itself failed before the notebook ran, or could not collect its answers: no score, "
        "the reason says why; the next run into the same folder grades it again. Exit status 4.",
        "评分器自身出错：notebook 还没运行就失败了，或者收集不到它的答案；不给分，原因见说明；"
        "下次输出到同一文件夹时会重新评分。退出状态为 4。",
    ),
}


def shown_number(value: float | int | None) -> str:
    """3 and 3.0 as "3", 2.5 as "2.5"; "" for None."""
    if value is None:
        return ""
    return f"{float(value):g}"


def percent(value: float | None) -> str:
    """50.0 as "50%" (no space, the Chinese way too)."""
    return "" if value is None else f"{float(value):g}%"


def score_text(g: Grade) -> str:
    """ "2/3" (points when the row has them, else the score), "0/3" for a missing student, "" when the row
    has no score; never a Python value such as ``None``."""
    points = 0 if g.status == "missing" else (g.points if g.points is not None else g.score)
    if points is None:
        return ""
    possible = g.points_possible or g.max
    return f"{shown_number(points)}/{shown_number(possible)}" if possible else shown_number(points)


_H1 = re.compile(r"^#\s+(.+?)\s*$", re.MULTILINE)


def lab_titles(labs_folder: Path | None, labs: list[str]) -> dict[str, tuple[str, str]]:
    """{lab: (English title, Chinese title)}: from the installed course manifest
    (`devicekit_grade.installed.labs_manifest`), else from the first H1 of the released notebooks
    ``NN-slug.ipynb`` and ``NN-slug.zh.ipynb``; a lab with neither is left out (`_fallback_title`)."""
    titles: dict[str, tuple[str, str]] = {}
    manifest = {entry["id"]: entry.get("title") for entry in labs_manifest()}
    for lab in labs:
        title = manifest.get(lab)
        if isinstance(title, dict) and title.get("en"):
            titles[lab] = (str(title["en"]), str(title.get("zh") or title["en"]))
            continue
        found = [_h1(labs_folder / f"{lab}{suffix}.ipynb") if labs_folder else "" for suffix in ("", ".zh")]
        if found[0] or found[1]:
            titles[lab] = (found[0] or found[1], found[1] or found[0])
    return titles


def _h1(path: Path) -> str:
    """The first level-1 heading of a notebook's markdown ("" when none)."""
    for cell in notebook_cells(path):
        match = _H1.search(cell["source"]) if cell["type"] == "markdown" else None
        if match:
            return match.group(1).strip()
    return ""


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and `os.replace`."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _cell(value: object) -> str:
    """A CSV cell; text that a spreadsheet would run as a formula is prefixed with a quote."""
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _csv(header: list[str], rows: list[list[object]]) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([_cell(v) for v in row])
    return buffer.getvalue().encode("utf-8-sig")  # with a BOM: spreadsheets then read Chinese correctly


def _count(grades: Sequence[Grade]) -> int:
    return max((len(g.exercises) for g in grades), default=0) or max((g.max or 0 for g in grades), default=0)


def to_csv(grades: Sequence[Grade]) -> bytes:
    count = _count(grades)
    rows = []
    for g in grades:
        marks = {e.number: ("pass" if e.passed else "fail") for e in g.exercises}
        rows.append(
            [
                g.file, g.student, g.student_name, g.lab, g.lang, g.identified_by, g.status,
                " ".join(g.flags),
                g.score, g.max, g.points, g.points_possible, g.percent,
                *(marks.get(n, "") for n in range(1, count + 1)),
                g.reason_zh, " | ".join(g.feedback()), g.reason, g.sha256,
            ]
        )  # fmt: skip
    header = [*FIXED, *(f"ex{n}" for n in range(1, count + 1)), "reason_zh", "feedback", "reason", "sha256"]
    return _csv(header, rows)


def to_json(grades: Sequence[Grade]) -> bytes:
    return (json.dumps([g.to_dict() for g in grades], ensure_ascii=False, indent=2) + "\n").encode("utf-8")


def main_lab(grades: Sequence[Grade], lab: str | None = None) -> str | None:
    """The lab of the LMS files: ``lab`` (``--lab``) when given, else the one most counted rows are of;
    None when two labs have as many (a folder of one assignment holds notebooks of another: which one the
    column is for is the instructor's to say)."""
    if lab:
        return lab
    top = Counter(g.lab for g in grades if g.status in COUNTED and g.lab).most_common(2)
    if not top or (len(top) == 2 and top[0][1] == top[1][1]):
        return None
    return top[0][0]


def _counted(grades: Sequence[Grade], lab: str | None = None) -> list[Grade]:
    """The rows of the LMS files: counted rows of the lab's own notebooks (`main_lab`), and its missing
    students; none when the lab is not known."""
    lab = main_lab(grades, lab)
    return [
        g
        for g in grades
        if (g.status in COUNTED and g.points is not None or g.status == "missing") and lab and g.lab == lab
    ]


def left_out(grades: Sequence[Grade], lab: str | None = None) -> list[Grade]:
    """Counted rows of another lab than the LMS files' (`main_lab`): not exported, and reported."""
    lab = main_lab(grades, lab)
    return [g for g in grades if g.status in COUNTED and g.lab and g.lab != lab]


def to_canvas(grades: Sequence[Grade], assignment: str, lab: str | None = None) -> bytes:
    """Canvas gradebook import: Student, ID, SIS User ID, SIS Login ID, Section, then the assignment (the
    rows of ``lab``'s own notebooks, `main_lab`)."""
    counted = _counted(grades, lab)
    rows = [[g.student_name, g.canvas_id, g.student, "", "", _points(g)] for g in counted]
    possible = max((g.points_possible or 0 for g in counted), default=0)
    return _csv(
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", assignment],
        [["Points Possible", "", "", "", "", shown_number(possible)], *rows],
    )


def to_moodle(grades: Sequence[Grade], lab: str | None = None) -> bytes:
    """Moodle grade import (Grades → Import → CSV file): map "ID number" to the user, "Grade" and
    "Feedback" to the assignment (the rows of ``lab``'s own notebooks, `main_lab`)."""
    rows = [
        [g.student, g.student_name, _points(g), " | ".join(g.feedback()) or g.in_lang(g.reason_message())]
        for g in _counted(grades, lab)
    ]
    return _csv(["ID number", "Full name", "Grade", "Feedback"], rows)


def _points(g: Grade) -> str:
    return shown_number(0 if g.status == "missing" else g.points)


def _fallback_title(lab: str | None) -> tuple[str, str]:
    """ "Lab 1" / "实验 1" for ``01-devices`` when no title is known (never the bare slug in Chinese)."""
    match = re.match(r"(\d+)-", lab or "")
    if match:
        return f"Lab {int(match.group(1))}", f"实验 {int(match.group(1))}"
    return f"lab {lab}", f"实验 {lab}"


def feedback_text(g: Grade, titles: dict[str, tuple[str, str]] | None = None) -> str:
    """The student's feedback file, in the student's language, headed by the lab's title."""
    title = Message(*(titles or {}).get(g.lab or "", _fallback_title(g.lab)))
    lines = [
        f"{g.student_name or g.student} — {g.in_lang(title)}",
        g.in_lang(Message(f"Score: {score_text(g)}", f"得分：{score_text(g)}")),
        "",
        *g.feedback(),
    ]
    if not g.exercises and g.reasons:
        lines.append(g.in_lang(g.reason_message()))
    return "\n".join(lines).rstrip() + "\n"


def _safe_name(text: str) -> str:
    return re.sub(r"[^\w.-]+", "_", text, flags=re.UNICODE).strip("._")[:80] or "student"


CSS = " ".join(
    [
        'body{font:14px/1.45 system-ui,-apple-system,"Segoe UI","PingFang SC","Microsoft YaHei",sans-serif;',
        "margin:2em;color:#1b1b1b} h1{font-size:1.5em}",
        "table{border-collapse:collapse;width:100%;margin:1em 0}",
        "th,td{border:1px solid #ccc;padding:.3em .5em;text-align:left;vertical-align:top}",
        "th{background:#f3f3f3} tr.bad td{background:#fff4f0}",
        ".pass{color:#1a7f37;font-weight:600} .fail{color:#c0392b;font-weight:600}",
        "code,.file{font-family:ui-monospace,Menlo,Consolas,monospace;word-break:break-all}",
        ".note{background:#eef5ff;border-left:4px solid #3b82f6;padding:.6em 1em} .muted{color:#666}",
        "details{margin:.4em 0} summary{cursor:pointer} .zh{color:#444}",
        "pre{white-space:pre-wrap;background:#f7f7f7;padding:.6em;margin:.3em 0}",
    ]
)
#: No script, no external anything: even a mistake in escaping could not run code or fetch a resource.
CSP = "default-src 'none'; style-src 'unsafe-inline'"


def pass_rates(grades: Sequence[Grade]) -> dict[str, list[tuple[int, int, int]]]:
    """Per lab: (exercise number, passed, graded) for every exercise, over the rows that count."""
    table: dict[str, dict[int, list[int]]] = {}
    for g in grades:
        if g.status not in COUNTED or not g.lab:
            continue
        for e in g.exercises:
            cell = table.setdefault(g.lab, {}).setdefault(e.number, [0, 0])
            cell[0] += int(e.passed)
            cell[1] += 1
    return {lab: [(n, p, t) for n, (p, t) in sorted(rows.items())] for lab, rows in sorted(table.items())}


def _both(message: Message) -> str:
    """A text of the report in both languages, escaped: the English, then the Chinese on a line of its own."""
    return f'{html.escape(message.en)}<br><span class="zh">{html.escape(message.zh)}</span>'


def to_html(
    grades: Sequence[Grade], notes: Sequence[Message] = (), titles: dict[str, tuple[str, str]] | None = None
) -> bytes:
    """The instructor's report, in English and Chinese. Everything from a submission is escaped; the page
    loads nothing and runs no script (its Content-Security-Policy forbids both)."""
    e = html.escape
    count = _count(grades)
    statuses = sorted(Counter(g.status for g in grades).items())
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    title = "devicekit-grade report · 评分报告"
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{e(title)}</h1>",
        '<p class="muted">'
        + _both(
            Message(
                f"{len(grades)} file(s), {when}: " + ", ".join(f"{s} {n}" for s, n in statuses) + ".",
                f"共 {len(grades)} 个文件，{when}："
                + "，".join(f"{STATUS_ZH.get(s, s)} {n} 个" for s, n in statuses)
                + "。",
            )
        )
        + "</p>",
        '<p class="note">Scores come from the released checks, run by the grader in a process of its own on '
        "the answers the notebook computes: editing or patching the checks in the notebook changes nothing. "
        '<br><span class="zh">得分来自已发布的自测：评分器在自己的独立进程中，用这些自测检查 notebook '
        "计算出的答案；在 notebook 里修改或篡改自测不会改变得分。</span></p>",
    ]
    out += [f'<p class="note">{_both(n)}</p>' for n in notes]
    out.append("<h2>Pass rate per exercise · 各练习通过率</h2><table><thead><tr><th>lab · 实验</th>")
    out.append("<th>exercise · 练习</th><th>passed · 通过</th><th>rate · 通过率</th></tr></thead><tbody>")
    titles = titles or {}

    def lab_cell(lab: str | None) -> str:
        if not lab:
            return ""
        if lab not in titles:
            return e(lab)
        en, zh = titles[lab]
        return f'{e(en)}<br><span class="zh">{e(zh)}</span>'

    for lab, rows in pass_rates(grades).items():
        for exercise, passed, total in rows:
            rate = percent(round(100 * passed / total)) if total else ""
            out.append(
                f"<tr><td>{lab_cell(lab)}</td><td>{exercise}</td><td>{passed}/{total}</td><td>{rate}</td></tr>"
            )
    out.append("</tbody></table>")
    out.append(
        "<h2>Submissions · 提交</h2><table><thead><tr><th>#</th><th>file · 文件</th><th>student · 学生</th>"
        "<th>lab · 实验</th><th>lang</th><th>status · 状态</th><th>score · 得分</th><th>%</th>"
    )
    out += [f"<th>ex{n}</th>" for n in range(1, count + 1)]
    out.append("<th>reason · 说明</th></tr></thead><tbody>")
    for number, g in enumerate(grades, start=1):
        marks = {x.number: x.passed for x in g.exercises}
        score = score_text(g)
        row_class = ' class="bad"' if g.status != "graded" or g.flags else ""
        out.append(
            f'<tr{row_class}><td><a href="#s{number}">{number}</a></td>'
            f'<td class="file">{e(g.file)}</td><td>{e(g.student_name or g.student)}</td>'
            f"<td>{lab_cell(g.lab)}</td><td>{e(g.lang)}</td><td>{e(g.status)}"
            f'<br><span class="zh">{e(STATUS_ZH.get(g.status, g.status))}</span>'
            + (f'<br><span class="muted">{e(" ".join(g.flags))}</span>' if g.flags else "")
            + f"</td><td>{e(score)}</td><td>{percent(g.percent)}</td>"
        )
        for n in range(1, count + 1):
            mark = marks.get(n)
            out.append(
                "<td></td>"
                if mark is None
                else f'<td class="{"pass" if mark else "fail"}">{"✓" if mark else "✗"}</td>'
            )
        out.append(f"<td>{_both(g.reason_message()) if g.reasons else ''}</td></tr>")
    out.append("</tbody></table><h2>Feedback · 反馈</h2>")
    for number, g in enumerate(grades, start=1):
        score = score_text(g)
        summary = f"{g.file or g.student} — {g.status}" + (f", {score}" if score else "")
        out.append(f'<details id="s{number}"><summary>{number}. {e(summary)}</summary>')
        lab, found_by = g.lab or "?", g.identified_by or "-"
        found_by_zh = {"metadata": "元数据", "check calls": "check(...) 调用", "file name": "文件名"}.get(
            found_by, found_by
        )
        facts = Message(
            f"lab: {lab} (found by {found_by}), language: {g.lang}, {g.duration_s:.1f} s, "
            f"sha256 {g.sha256[:12]}",
            f"实验：{lab}（依据：{found_by_zh}），语言：{g.lang}，用时 {g.duration_s:.1f} 秒，"
            f"sha256 {g.sha256[:12]}",
        )
        out.append(f'<p class="muted">{_both(facts)}</p>')
        lines = g.feedback() or ([g.in_lang(g.reason_message())] if g.reasons else [])
        out.append(f"<pre>{e(chr(10).join(lines))}</pre></details>")
    out.append("<h2>Statuses · 状态</h2><table><tbody>")
    for s in STATUSES:
        out.append(f"<tr><td><code>{e(s)}</code></td><td>{_both(STATUS_HELP[s])}</td></tr>")
    out.append("</tbody></table></body></html>\n")
    return "\n".join(out).encode("utf-8")


def write_all(
    out: Path,
    grades: Sequence[Grade],
    assignment: str = "Lab",
    notes: Sequence[Message] = (),
    titles: dict[str, tuple[str, str]] | None = None,
    lab: str | None = None,
) -> list[Path]:
    """Write every output file into ``out`` (atomically) and return their paths. ``titles``: {lab: (en,
    zh)} for headers (`lab_titles`); "Lab N" where a lab has none. ``lab``: the LMS files' (`main_lab`)."""
    files = {
        "grades.csv": to_csv(grades),
        "grades.json": to_json(grades),
        "report.html": to_html(grades, notes, titles),
        "canvas.csv": to_canvas(grades, assignment, lab),
        "moodle.csv": to_moodle(grades, lab),
    }
    paths = []
    for name, data in files.items():
        atomic_write(out / name, data)
        paths.append(out / name)
    folder = out / "feedback"
    folder.mkdir(exist_ok=True)
    wanted = {}
    for g in grades:
        if g.status in COUNTED or (g.student_name and g.status not in ("superseded", "ignored")):
            wanted[f"{_safe_name(g.student or Path(g.file).stem)}-{_safe_name(g.lab or '')}.txt"] = (
                feedback_text(g, titles)
            )
    for stale in folder.glob("*.txt"):
        if stale.name not in wanted:
            stale.unlink()
    for name, text in wanted.items():
        atomic_write(folder / name, text.encode("utf-8"))
        paths.append(folder / name)
    return paths


class MergeError(Told):
    """An earlier ``grades.json`` in the output folder cannot be merged into; ``message`` says why."""


def load(out: Path) -> list[Grade]:
    """The rows of an earlier run in ``out`` ([] when there is none)."""
    path = out / "grades.json"
    if not path.exists():
        return []
    try:
        return [Grade.from_dict(row) for row in json.loads(path.read_text(encoding="utf-8"))]
    except (OSError, ValueError, TypeError, KeyError) as exc:
        kind = type(exc).__name__
        raise MergeError(
            Message(
                f"{path} exists but is not a grades file this grader can merge into ({kind}): choose another "
                "--out folder, or pass --replace to start it afresh",
                f"{path} 已存在，但不是这个评分器能合并的成绩文件（{kind}）：请换一个 --out 文件夹，"
                "或者加上 --replace 重新开始",
            )
        ) from None
