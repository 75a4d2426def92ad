"""Who handed a submission in, and what it is worth: the roster, the file names Canvas and Moodle give
downloaded submissions, the latest submission per student, points, weights and percentages.

* Canvas (*Download submissions*): ``lastfirst_12345_67890_01-devices.ipynb`` and
  ``lastfirst_LATE_12345_67890_...``: 12345 is the Canvas user id, 67890 the submission.
* Moodle (*Download all submissions*): a folder or file prefix ``First Last_12345_assignsubmission_file_``,
  12345 the participant id.
* Otherwise a student's own sub-folder (``submissions/alice/...``) or the file name without the lab id
  (``01-devices-alice.ipynb``, ``alice_01-devices.zh.ipynb`` → ``alice``).

A roster (``--roster roster.csv``) maps those to student ids: columns ``id`` (required), ``name``,
``email``, ``lang``, ``canvas_id``, ``moodle_id``, ``aliases`` (``;``-separated other names).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path

from devicekit.messages import Message
from devicekit_grade.failures import Told
from devicekit_grade.records import STATUS_ZH, Grade

CANVAS = re.compile(r"^(?P<name>[^_/]+?)(?:_LATE)?_(?P<uid>\d+)_(?P<sub>\d+)_(?P<file>.+)$", re.IGNORECASE)
MOODLE = re.compile(r"^(?P<name>.+?)_(?P<pid>\d+)_assignsubmission_\w+?(?:_|$)")


class RosterError(Told, ValueError):
    """The roster file cannot be used; ``message`` says why, in both languages."""


class OptionError(Told, ValueError):
    """A command-line value the grader cannot read; ``message`` says why and how to write it."""


@dataclass
class Student:
    id: str
    name: str = ""
    email: str = ""
    lang: str = ""
    canvas_id: str = ""
    moodle_id: str = ""
    aliases: list[str] = field(default_factory=list)


def _key(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.lower())


def read_roster(path: Path) -> list[Student]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise RosterError(Message(f"--roster {path}: {why}", f"--roster {path}：{why}")) from None
    rows = list(csv.DictReader(text.splitlines()))
    if not rows:
        raise RosterError(
            Message(
                f"--roster {path}: no rows (a header line with at least 'id', then one row each)",
                f"--roster {path}：没有数据行（第一行是至少含 id 的表头，之后每个学生一行）",
            )
        )
    header = {(h or "").strip().lower().replace(" ", "_"): h for h in rows[0]}
    id_column = next(
        (header[k] for k in ("id", "student_id", "sis_user_id", "id_number") if k in header), None
    )
    if id_column is None:
        found = list(filter(None, rows[0]))
        raise RosterError(
            Message(
                f"--roster {path}: no 'id' column (found: {', '.join(found)})",
                f"--roster {path}：没有 id 列（找到的列：{'、'.join(found)}）",
            )
        )

    def get(row: dict, *names: str) -> str:
        for name in names:
            if name in header:
                return (row.get(header[name]) or "").strip()
        return ""

    students = []
    for row in rows:
        sid = (row.get(id_column) or "").strip()
        if not sid:
            continue
        students.append(
            Student(
                id=sid,
                name=get(row, "name", "full_name", "student"),
                email=get(row, "email", "email_address"),
                lang=get(row, "lang", "language"),
                canvas_id=get(row, "canvas_id", "canvas_user_id"),
                moodle_id=get(row, "moodle_id", "participant_id"),
                aliases=[a.strip() for a in get(row, "aliases").split(";") if a.strip()],
            )
        )
    return students


def clues(shown: str, labs: list[str], folder: str = "") -> dict[str, str]:
    """What a submission's path says about its author: ``canvas``, ``moodle``, ``key``, ``name``.
    ``folder``: the student's own sub-folder of the input folder, if any."""
    path = Path(shown)
    found: dict[str, str] = {}
    for part in [*path.parts[:-1], path.name]:
        moodle = MOODLE.match(part)
        if moodle:
            found.update(moodle=moodle["pid"], name=moodle["name"])
            break
    canvas = CANVAS.match(path.name)
    if canvas and "moodle" not in found:
        found.update(canvas=canvas["uid"], name=canvas["name"])
    if "name" not in found:
        stem = path.name.split(".")[0]
        for lab in sorted(labs, key=len, reverse=True):
            stem = re.sub(re.escape(lab), "", stem, flags=re.IGNORECASE)
        stem = re.sub(r"(?i)\blab[-_ ]?\d+\b", "", stem).strip(" _-.")
        found["name"] = folder or stem  # submissions/alice/lab.ipynb: the student's folder
    found["key"] = _key(found["name"])
    return found


def attribute(grades: list[Grade], roster: list[Student] | None, labs: list[str]) -> None:
    """Fill in ``student`` and ``student_name`` of every row; flag rows the roster does not know."""
    for grade in grades:
        hint = clues(grade.file, labs, grade.folder)
        student = None
        if roster is not None:
            for s in roster:
                if (
                    ("canvas" in hint and hint["canvas"] in (s.canvas_id, s.id))
                    or ("moodle" in hint and hint["moodle"] in (s.moodle_id, s.id))
                    or hint["key"]
                    and hint["key"]
                    in {_key(s.id), _key(s.name), _key(s.email.split("@")[0]), *map(_key, s.aliases)}
                ):
                    student = s
                    break
        if student is not None:
            grade.student, grade.student_name = student.id, student.name
            grade.canvas_id = student.canvas_id or hint.get("canvas", "")
            if student.lang in ("en", "zh") and grade.status not in ("ignored", "refused"):
                grade.lang = student.lang
        else:
            grade.canvas_id = hint.get("canvas", "")
            grade.student = hint.get("canvas") or hint.get("moodle") or hint["key"]
            grade.student_name = hint["name"]
            if roster is not None and grade.status not in ("ignored",) and "not-in-roster" not in grade.flags:
                grade.flags.append("not-in-roster")


def keep_latest(grades: list[Grade]) -> None:
    """Of several graded submissions by one student for one lab, only the newest counts."""
    groups: dict[tuple[str, str], list[Grade]] = {}
    for grade in grades:
        if grade.student and grade.lab and grade.status not in ("ignored", "refused", "superseded"):
            groups.setdefault((grade.student, grade.lab), []).append(grade)
    for rows in groups.values():
        if len(rows) < 2:
            continue
        rows.sort(key=lambda g: (g.submitted, _canvas_submission(g.file), g.file))
        newest = rows[-1]
        for old in rows[:-1]:
            old.status = "superseded"
            old.reasons = [superseded_by(newest.file)]


def superseded_by(newest: str) -> Message:
    """The reason of a row that a newer submission of the same student replaces."""
    return Message(
        f"an older submission by the same student: {newest} counts",
        f"同一学生较早的提交：以 {newest} 为准",
    )


def _canvas_submission(shown: str) -> int:
    match = CANVAS.match(Path(shown).name)
    return int(match["sub"]) if match else 0


def parse_weights(text: str | None) -> dict[str, list[float]]:
    """``--weights``: ``1,1,2`` (every lab with three exercises) or ``01-devices=1,1,2;04-data=1,2``."""
    if not text:
        return {}
    out: dict[str, list[float]] = {}
    for part in text.split(";"):
        lab, _, numbers = part.rpartition("=")
        try:
            out[lab.strip() or "*"] = [float(n) for n in numbers.split(",")]
        except ValueError:
            raise OptionError(
                Message(
                    f"--weights {text!r}: numbers separated by commas, e.g. 1,1,2",
                    f"--weights {text!r}：应是用逗号分隔的数字，例如 1,1,2",
                )
            ) from None
    return out


def assign_points(grades: list[Grade], weights: dict[str, list[float]], total: float | None) -> None:
    """Points and percentage of every row that has a score. ``total``: scale each lab to that many points."""
    for grade in grades:
        if grade.status == "missing":
            continue
        if grade.score is None or not grade.max:
            grade.points = grade.points_possible = grade.percent = None
            continue
        w = weights.get(grade.lab or "", weights.get("*", []))
        if len(w) != len(grade.exercises):
            w = [1.0] * len(grade.exercises)
        possible = sum(w) or 1.0
        earned = sum(wi for wi, e in zip(w, grade.exercises, strict=True) if e.passed)
        scale = (total / possible) if total else 1.0
        grade.points = round(earned * scale, 2)
        grade.points_possible = round(possible * scale, 2)
        grade.percent = round(100 * earned / possible, 1)
    for grade in grades:  # a roster student without a gradable file: 0 of what the lab is worth
        if grade.status == "missing":
            others = [g.points_possible for g in grades if g.lab == grade.lab and g.points_possible]
            grade.points, grade.percent = 0.0, 0.0
            grade.points_possible = max(others) if others else total


def missing_rows(grades: list[Grade], roster: list[Student] | None, labs: list[str]) -> list[Grade]:
    """A ``missing`` row (score 0 and the reason) for every roster student without a graded submission of
    each of ``labs`` (the LMS files' lab); students whose file could not be graded keep that row, scored 0
    too."""
    if not roster:
        return []
    graded_labs = sorted({g.lab for g in grades if g.lab} & set(labs)) or labs[:1]
    have = {(g.student, g.lab) for g in grades if g.lab}
    out = []
    for student in roster:
        for lab in graded_labs:
            if (student.id, lab) in have:
                continue
            tried = [g for g in grades if g.student == student.id and not g.lab]
            if tried:
                why = tried[0].reason_message()
                status_zh = STATUS_ZH.get(tried[0].status, tried[0].status)
                reason = Message(
                    f"no gradable submission: {tried[0].file}: {tried[0].status} ({why.en})",
                    f"没有可以评分的提交：{tried[0].file}：{status_zh}（{why.zh}）",
                )
            else:
                reason = Message("no submission found for this lab", "没有找到这个实验的提交")
            lang = student.lang if student.lang in ("en", "zh") else "en"
            row = Grade(file="", lab=lab, lang=lang, status="missing", score=0, reasons=[reason])
            row.student, row.student_name, row.canvas_id = student.id, student.name, student.canvas_id
            out.append(row)
    return out


def mark_late(grades: list[Grade], due: float | None) -> None:
    """Flag rows submitted after ``due`` (a POSIX time; the file's modification time, or Canvas's LATE)."""
    from datetime import datetime

    for grade in grades:
        late_by_name = bool(re.search(r"_LATE_", Path(grade.file).name))
        late_by_time = due is not None and grade.submitted > due and grade.status not in ("missing",)
        if (late_by_name or late_by_time) and "late" not in grade.flags:
            grade.flags.append("late")
            when = datetime.fromtimestamp(grade.submitted).strftime("%Y-%m-%d %H:%M")
            note = (
                Message(f"submitted late ({when})", f"迟交（{when}）")
                if late_by_time
                else Message("marked LATE by Canvas", "Canvas 标记为迟交")
            )
            grade.reasons.append(note)


def parse_due(text: str | None) -> float | None:
    """``--due 2026-03-01T23:59`` (local time, or with an offset such as ``+08:00``) as a POSIX time."""
    if not text:
        return None
    from datetime import datetime

    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise OptionError(
            Message(
                f"--due {text!r}: a date and time such as 2026-03-01T23:59 or 2026-03-01T23:59+08:00",
                f"--due {text!r}：应是日期和时间，例如 2026-03-01T23:59 或 2026-03-01T23:59+08:00",
            )
        ) from None
