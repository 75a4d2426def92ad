"""The grades as records: one `Grade` per file (and per roster student without one), with its exercises,
its reasons for the instructor and its notes for the learner, each a `devicekit.messages.Message` made
where the grader found it. ``grades.json`` holds these records (`Grade.to_dict`), and a later run reads
them back (`Grade.from_dict`) to merge into the same folder.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from devicekit.messages import Message

#: Every status a row can have, in words a Chinese reader understands (the English is the status itself).
#: ``graded`` rows have a score; the others say why not (or not fully).
STATUS_ZH = {
    "graded": "已评分",
    "timeout": "超时",
    "kernel-died": "Python 中途退出",
    "invalid-json": "不是有效的 JSON",
    "not-a-notebook": "不是 notebook",
    "unknown-lab": "无法判断是哪个实验",
    "refused": "拒绝评分",
    "ignored": "未评分",
    "superseded": "已被较新的提交取代",
    "missing": "缺交",
    "error": "无法处理",
    "grader-error": "评分器出错",  # the grader failed, not the notebook (`devicekit_grade.failures`)
}
STATUSES = tuple(STATUS_ZH)


@dataclass
class ExerciseGrade:
    """One exercise of one submission: passed or not, and the feedback line in both languages."""

    number: int
    key: str
    passed: bool
    #: "judged": the public (and hidden) judges read the probe's observations; "not-reached": the run
    #: stopped before the answer existed; "not-run": no answer for another reason (the feedback says which)
    how: str
    en: str
    zh: str
    seconds: float = 0.0  # time the grader spent getting and judging this answer


@dataclass
class Grade:
    """One row of the grades: a submission, its status, score and feedback."""

    file: str
    lab: str | None = None
    lang: str = "en"
    identified_by: str | None = None
    status: str = "error"
    score: int | None = None
    max: int | None = None
    flags: list[str] = field(default_factory=list)
    #: why the row is what it is, for the instructor (the report's and the CSV's reason columns)
    reasons: list[Message] = field(default_factory=list)
    exercises: list[ExerciseGrade] = field(default_factory=list)
    #: remarks for the learner beyond the exercises (the feedback's last lines)
    notes: list[Message] = field(default_factory=list)
    duration_s: float = 0.0
    sha256: str = ""
    submitted: float = 0.0  # the file's modification time
    versions: dict[str, str] = field(default_factory=dict)  # devicekit/torch of the grader and the notebook
    student: str = ""
    student_name: str = ""
    folder: str = ""  # the student's own sub-folder of the input folder, when there is one
    points: float | None = None
    points_possible: float | None = None
    percent: float | None = None
    canvas_id: str = ""  # the student's Canvas user id (roster, or the Canvas file name)
    graded_with: str = ""  # fingerprint of the grader, checks and limits that produced this row (cache key)
    code_hash: str = ""  # the learner's own code, normalised (`devicekit_grade.integrity`)
    code_sig: list[int] = field(default_factory=list)

    @property
    def reason(self) -> str:
        """The reasons in English, joined with "; "."""
        return "; ".join(m.en for m in self.reasons)

    @property
    def reason_zh(self) -> str:
        """The reasons in Chinese, joined with "；"."""
        return "；".join(m.zh for m in self.reasons)

    def reason_message(self) -> Message:
        """All the reasons as one `Message`."""
        return Message(self.reason, self.reason_zh)

    def in_lang(self, message: Message) -> str:
        """``message`` in the learner's language."""
        return message.zh if self.lang == "zh" else message.en

    def feedback(self) -> list[str]:
        """The lines to show the learner, in the submission's language."""
        lines = [e.zh if self.lang == "zh" else e.en for e in self.exercises]
        return lines + [self.in_lang(note) for note in self.notes]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)  # reasons and notes: [{"en": ..., "zh": ...}]
        data.update(reason=self.reason, reason_zh=self.reason_zh, feedback=self.feedback())
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Grade:
        data = dict(data)
        data.pop("feedback", None)
        reason, reason_zh = str(data.pop("reason", "") or ""), str(data.pop("reason_zh", "") or "")
        exercises = [ExerciseGrade(**e) for e in data.pop("exercises", [])]
        reasons = [Message(str(r["en"]), str(r["zh"])) for r in data.pop("reasons", [])]
        if reason and not reasons:  # a grades.json written before reasons had both languages
            reasons = [Message(reason, reason_zh or reason)]
        notes = [Message(str(n["en"]), str(n["zh"])) for n in data.pop("notes", [])]
        known = set(cls.__dataclass_fields__)
        grade = cls(**{k: v for k, v in data.items() if k in known})
        grade.exercises, grade.reasons, grade.notes = exercises, reasons, notes
        return grade
