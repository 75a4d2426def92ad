"""The course's structure, read from the notebooks themselves: one source for the course map, the
badges on lab pages, ``make dist`` and the CI routing.

Every solution notebook declares, in ``metadata.devicekit``:

- ``lab``: its id, ``NN-slug`` (the file name without ``.ipynb``);
- ``needs``: what it must run on: ``cpu`` (runs anywhere, the accelerator is optional), ``cuda``
  (needs an NVIDIA GPU), ``2-processes`` (launches two processes), ``bf16`` (needs bfloat16 support);
- ``minutes``: the expected time for a learner, ``{"cpu": N, "gpu": N}``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from course_tools.paths import ROOT

NEEDS = {
    "cpu": ("runs on CPU", "CPU 即可运行"),
    "cuda": ("needs a CUDA GPU", "需要 CUDA GPU"),
    "2-processes": ("launches 2 processes", "启动 2 个进程"),
    "bf16": ("needs bfloat16", "需要 bfloat16"),
}


class CourseMetadataError(ValueError):
    """A notebook whose ``metadata.devicekit`` is missing or malformed."""


@dataclass(frozen=True)
class Lab:
    id: str
    needs: tuple[str, ...]
    minutes_cpu: int
    minutes_gpu: int
    titles: dict[str, str]  # language -> the notebook's H1
    lesson_titles: dict[str, str]  # language -> the lesson page's H1

    def badges(self, lang: str) -> list[str]:
        """Short labels for the lab page and the course map, in ``lang``."""
        zh = lang == "zh"
        labels = [NEEDS[need][1 if zh else 0] for need in self.needs]
        if zh:
            labels.append(f"约 {self.minutes_cpu} 分钟（CPU）/ {self.minutes_gpu} 分钟（GPU）")
        else:
            labels.append(f"~{self.minutes_cpu} min on CPU / {self.minutes_gpu} min on GPU")
        return labels


def _h1(text: str) -> str:
    match = re.search(r"^# (.+)$", text, re.MULTILINE)
    return match.group(1).strip() if match else ""


def _notebook_h1(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    markdown = ("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return next((h for h in map(_h1, markdown) if h), "")


def read_metadata(path: Path) -> dict:
    """``metadata.devicekit`` of one notebook, validated."""
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))["metadata"]["devicekit"]
    except (KeyError, json.JSONDecodeError) as exc:
        raise CourseMetadataError(f"{path}: no readable metadata.devicekit ({exc})") from exc
    lab = meta.get("lab")
    if lab != path.name.split(".")[0]:
        raise CourseMetadataError(f"{path}: metadata.devicekit.lab is {lab!r}, the file name says otherwise")
    unknown = set(meta.get("needs", [])) - set(NEEDS)
    if not meta.get("needs") or unknown:
        raise CourseMetadataError(
            f"{path}: needs must be a non-empty subset of {sorted(NEEDS)}, got {meta.get('needs')}"
        )
    minutes = meta.get("minutes", {})
    if not all(isinstance(minutes.get(k), int) and minutes[k] > 0 for k in ("cpu", "gpu")):
        raise CourseMetadataError(f"{path}: minutes must be {{'cpu': N, 'gpu': N}} with positive integers")
    return meta


def labs(root: Path = ROOT) -> list[Lab]:
    """Every lab of the course in order, from ``solutions/`` (the source) and ``docs/lessons/``."""
    found = []
    for path in sorted((root / "solutions").glob("[0-9]*.ipynb")):
        if ".zh." in path.name:
            continue
        meta = read_metadata(path)
        zh_path = path.with_name(f"{meta['lab']}.zh.ipynb")
        lesson = root / "docs" / "lessons" / f"{meta['lab']}.md"
        lesson_zh = lesson.with_name(f"{meta['lab']}.zh.md")
        found.append(
            Lab(
                id=meta["lab"],
                needs=tuple(meta["needs"]),
                minutes_cpu=meta["minutes"]["cpu"],
                minutes_gpu=meta["minutes"]["gpu"],
                titles={"en": _notebook_h1(path), "zh": _notebook_h1(zh_path) if zh_path.exists() else ""},
                lesson_titles={
                    "en": _h1(lesson.read_text(encoding="utf-8")) if lesson.exists() else "",
                    "zh": _h1(lesson_zh.read_text(encoding="utf-8")) if lesson_zh.exists() else "",
                },
            )
        )
    return found


def course_map(lang: str, with_solutions: bool = True, root: Path = ROOT, base: str = "") -> str:
    """The course-map table (Markdown) in ``lang``; ``base`` leads from the page to the docs root."""
    zh = lang == "zh"
    head = ["#", "课程" if zh else "Lesson", "实验" if zh else "Lab", "需要" if zh else "Needs"]
    if with_solutions:
        head.append("参考答案" if zh else "Solution")
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for lab in labs(root):
        number = lab.id.split("-")[0].lstrip("0")
        lesson = lab.lesson_titles[lang] or lab.lesson_titles["en"]
        cells = [
            number,
            f"[{lesson}]({base}lessons/{lab.id}.md)",
            f"[{'实验' if zh else 'Lab'} {number}]({base}labs/{lab.id}.ipynb)",
            " · ".join(lab.badges(lang)),
        ]
        if with_solutions:
            cells.append(f"[{'参考答案' if zh else 'Solution'} {number}]({base}solutions/{lab.id}.ipynb)")
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)
