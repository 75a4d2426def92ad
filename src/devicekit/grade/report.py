"""Write the grades: ``grades.csv`` (one row per submission), ``grades.json`` (the same plus feedback) and
``report.html`` (for the instructor, self-contained). Every file is written atomically: to a temporary file
in the output folder, then moved over the old one with `os.replace`, so a reader never sees half a file.
"""

from __future__ import annotations

import contextlib
import csv
import html
import io
import json
import os
import tempfile
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from devicekit.grade.run import STATUSES, Grade

_UMASK = os.umask(0o022)
os.umask(_UMASK)

FIXED = ["file", "lab", "lang", "identified_by", "status", "flags", "score", "max"]

#: What each status means, and what to tell the learner: shown in the report's legend.
STATUS_HELP = {
    "graded": "Executed; the score counts the self-checks that passed.",
    "invalid-json": "The file is not valid JSON (truncated upload, edited in a text editor, wrong file). "
    "Ask for the .ipynb again, saved from Jupyter.",
    "not-a-notebook": "Valid JSON, but not a Jupyter notebook. Ask for the .ipynb file itself.",
    "unknown-lab": "Neither its metadata, nor its check calls, nor its file name name a lab with checks.",
    "kernel-died": "The Python process stopped mid-run (os._exit, a native crash, out of memory). "
    "Checks that ran before count.",
    "timeout": "A cell ran past the per-cell limit (interrupted, the rest still ran) or the whole notebook "
    "past its limit (stopped). Checks that ran count.",
    "error": "The grader itself could not handle this file; the reason says why.",
}


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and `os.replace`."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; give it a normal file's permissions
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _max_exercises(grades: Sequence[Grade]) -> int:
    return max((len(g.exercises) for g in grades), default=0) or max((g.max or 0 for g in grades), default=0)


def _cell(value: object) -> str:
    """A CSV cell; text that a spreadsheet would run as a formula is prefixed with a quote."""
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def to_csv(grades: Sequence[Grade]) -> bytes:
    """The CSV, UTF-8 with a byte-order mark so that spreadsheet programs read Chinese text correctly."""
    count = _max_exercises(grades)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*FIXED, *(f"ex{n}" for n in range(1, count + 1)), "reason"])
    for g in grades:
        marks = {e.number: ("pass" if e.passed else "fail") for e in g.exercises}
        row = [g.file, g.lab, g.lang, g.identified_by, g.status, " ".join(g.flags), g.score, g.max]
        row += [marks.get(n, "") for n in range(1, count + 1)]
        writer.writerow([_cell(v) for v in [*row, g.reason]])
    return buffer.getvalue().encode("utf-8-sig")


def to_json(grades: Sequence[Grade]) -> bytes:
    return (json.dumps([g.to_dict() for g in grades], ensure_ascii=False, indent=2) + "\n").encode("utf-8")


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
        "details{margin:.4em 0} summary{cursor:pointer}",
        "pre{white-space:pre-wrap;background:#f7f7f7;padding:.6em;margin:.3em 0}",
    ]
)
#: No script, no external anything: even a mistake in escaping could not run code or fetch a resource.
CSP = "default-src 'none'; style-src 'unsafe-inline'"


def to_html(grades: Sequence[Grade], title: str = "devicekit-grade report") -> bytes:
    """The instructor's report. Everything from a submission is escaped; the page loads nothing and runs
    no script (its Content-Security-Policy forbids both), so a submission cannot inject anything into it."""
    e = html.escape
    count = _max_exercises(grades)
    statuses = Counter(g.status for g in grades)
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{e(title)}</h1>",
        f'<p class="muted">{len(grades)} submission(s), graded {e(when)}. '
        + ", ".join(f"{e(s)}: {n}" for s, n in sorted(statuses.items()))
        + "</p>",
        '<p class="note">Scores come from exactly the self-checks the learner sees and runs in the notebook, '
        "with the same hints. There are no hidden tests: a learner whose checks all print ✓ gets full "
        "marks.</p>",
        "<table><thead><tr><th>#</th><th>file</th><th>lab</th><th>lang</th><th>status</th><th>score</th>",
    ]
    out += [f"<th>ex{n}</th>" for n in range(1, count + 1)]
    out.append("<th>reason</th></tr></thead><tbody>")
    for number, g in enumerate(grades, start=1):
        marks = {x.number: x.passed for x in g.exercises}
        score = "" if g.score is None else f"{g.score}/{g.max}"
        row_class = "" if g.status == "graded" and not g.flags else ' class="bad"'
        out.append(
            f'<tr{row_class}><td><a href="#s{number}">{number}</a></td><td class="file">{e(g.file)}</td>'
            f"<td>{e(g.lab or '')}</td><td>{e(g.lang)}</td><td>{e(g.status)}"
            + (f'<br><span class="muted">{e(" ".join(g.flags))}</span>' if g.flags else "")
            + f"</td><td>{e(score)}</td>"
        )
        for n in range(1, count + 1):
            mark = marks.get(n)
            out.append(
                "<td></td>"
                if mark is None
                else f'<td class="{"pass" if mark else "fail"}">{"✓" if mark else "✗"}</td>'
            )
        out.append(f"<td>{e(g.reason)}</td></tr>")
    out.append("</tbody></table><h2>Feedback per submission</h2>")
    for number, g in enumerate(grades, start=1):
        summary = f"{g.file} — {g.status}" + ("" if g.score is None else f", {g.score}/{g.max}")
        out.append(f'<details id="s{number}"><summary>{number}. {e(summary)}</summary>')
        out.append(
            f'<p class="muted">lab: {e(g.lab or "?")} (identified by {e(g.identified_by or "nothing")}), '
            f"language: {e(g.lang)}, {g.duration_s:.1f} s</p>"
        )
        lines = g.feedback() or ([g.reason] if g.reason else [])
        out.append(f"<pre>{e(chr(10).join(lines))}</pre></details>")
    out.append("<h2>Statuses</h2><table><tbody>")
    out += [f"<tr><td><code>{e(s)}</code></td><td>{e(STATUS_HELP[s])}</td></tr>" for s in STATUSES]
    out.append("</tbody></table></body></html>\n")
    return "\n".join(out).encode("utf-8")


def write_all(out: Path, grades: Sequence[Grade]) -> list[Path]:
    """Write grades.csv, grades.json and report.html into ``out`` (atomically) and return their paths."""
    paths = [out / "grades.csv", out / "grades.json", out / "report.html"]
    for path, data in zip(paths, (to_csv(grades), to_json(grades), to_html(grades)), strict=True):
        atomic_write(path, data)
    return paths
