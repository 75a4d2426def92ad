"""The course's structure, read from the notebooks themselves: one source for the course map, the
badges on lab pages, ``make dist`` and the CI routing.

Every solution notebook declares, in ``metadata.devicekit``:

- ``lab``: its id, ``NN-slug`` (the file name without ``.ipynb``);
- ``needs``: what it must run on: ``cpu`` (runs anywhere, the accelerator is optional), ``cuda``
  (needs an NVIDIA GPU), ``2-processes`` (launches two processes), ``bf16`` (needs bfloat16 support);
- ``minutes``: the expected time for a learner, ``{"cpu": N, "gpu": N}``;
- ``short``: the lab's short name in the notebook's language, for the site's navigation.

`manifest` gathers all of it, with each lab's exercises, into ``src/devicekit_labs/manifest.json``: the
one list of labs that the site's navigation and its translations, the self-check registry, the grader and
the per-lab tests read. ``python -m course_tools.course --write`` regenerates it; a test fails when it is
out of date.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from course_tools.paths import MANIFEST, ROOT

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
    short: dict[str, str]  # language -> the short name the navigation shows

    @property
    def number(self) -> int:
        return int(self.id.split("-")[0])

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
    if not isinstance(meta.get("short"), str) or not meta["short"].strip():
        raise CourseMetadataError(f"{path}: short must be the lab's short name for the navigation")
    return meta


def labs(root: Path = ROOT) -> list[Lab]:
    """Every lab of the course in order, from ``solutions/`` (the source) and ``docs/lessons/``."""
    found = []
    for path in sorted((root / "solutions").glob("[0-9]*.ipynb")):
        if ".zh." in path.name:
            continue
        meta = read_metadata(path)
        zh_path = path.with_name(f"{meta['lab']}.zh.ipynb")
        zh_meta = read_metadata(zh_path) if zh_path.exists() else {}
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
                short={"en": meta["short"], "zh": zh_meta.get("short", meta["short"])},
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


def _exercises(lab_id: str) -> list[dict]:
    """The self-checks ``devicekit_labs.labNN`` registers for ``lab_id`` (none when it has no module)."""
    number = lab_id.split("-")[0]
    try:
        importlib.import_module(f"devicekit_labs.lab{number}")
    except ModuleNotFoundError:
        return []
    from devicekit_labs import registered

    return [
        {"key": e.key, "number": e.number, "title": {"en": e.title_en, "zh": e.title_zh}, "target": e.target}
        for e in registered(lab_id)
    ]


def manifest(root: Path = ROOT) -> dict:
    """The course manifest: every lab, its titles in both languages, needs, minutes and exercises."""
    return {
        "about": "Generated by `python -m course_tools.course --write` from solutions/*.ipynb metadata.",
        "labs": [
            {
                "id": lab.id,
                "number": lab.number,
                "title": lab.titles,
                "short": lab.short,
                "lesson": {"page": f"lessons/{lab.id}.md", "title": lab.lesson_titles},
                "needs": list(lab.needs),
                "minutes": {"cpu": lab.minutes_cpu, "gpu": lab.minutes_gpu},
                "exercises": _exercises(lab.id),
            }
            for lab in labs(root)
        ],
    }


def manifest_text(root: Path = ROOT) -> str:
    return json.dumps(manifest(root), indent=1, ensure_ascii=False) + "\n"


def nav_entries(section: str, data: dict | None = None) -> list[dict[str, str]]:
    """The site navigation's ``Labs`` or ``Solutions`` entries from the manifest.

    English titles are the navigation's keys (``Lab 1 · Devices``); `nav_translations` maps them to zh.
    """
    data = data or read_manifest()
    folder = {"Labs": "labs", "Solutions": "solutions"}[section]
    word = {"Labs": "Lab", "Solutions": "Solution"}[section]
    entries = []
    for lab in data["labs"]:
        entries.append({f"{word} {lab['number']} · {lab['short']['en']}": f"{folder}/{lab['id']}.ipynb"})
    return entries


def nav_translations(data: dict | None = None) -> dict[str, str]:
    """English navigation titles of the labs and solutions -> their Chinese titles."""
    data = data or read_manifest()
    out = {}
    for lab in data["labs"]:
        n, en, zh = lab["number"], lab["short"]["en"], lab["short"]["zh"]
        out[f"Lab {n} · {en}"] = f"实验 {n}：{zh}"
        out[f"Solution {n} · {en}"] = f"参考答案 {n}：{zh}"
    return out


def read_manifest(path: Path = MANIFEST) -> dict:
    """The committed manifest (what the site build and the tests read; no notebook is parsed)."""
    return json.loads(path.read_text(encoding="utf-8"))


#: What `lab_map` lists for every lab, in order: a kind of file and where files of that kind live.
MAP_KINDS = ("pages", "lab", "solution", "checks", "hidden judges", "mutations", "tests", "catalog families")


def lab_map(lab: str, root: Path = ROOT) -> dict[str, list[str]]:
    """Every file of ``lab`` (``10-compile``, or its number ``10``), by kind (`MAP_KINDS`), as paths relative
    to ``root``: the lesson pages, the lab and solution notebooks (both languages), its checks
    (``devicekit_labs/labNN.py``), the instructor's hidden judges (``grading/hidden/labNN.py``, an empty
    ``HIDDEN`` where a lab has none), its mutations, its tests (its own file, and the two that run every
    lab's checks and mutations), and the error catalog's families that name
    the lab or its lesson (as ``catalog.json#family-id``). KeyError for a lab the manifest does not know."""
    labs = {entry["id"]: entry for entry in read_manifest(root / MANIFEST.relative_to(ROOT))["labs"]}
    number = f"{int(lab):02d}" if lab.isdigit() else None
    found = next((k for k in labs if k == lab or k.split("-")[0] == number), None)
    if found is None:
        raise KeyError(f"no lab {lab!r}; labs: {', '.join(labs)}")
    number = found.split("-")[0]

    def existing(*patterns: str) -> list[str]:
        return sorted({str(p.relative_to(root)) for pattern in patterns for p in root.glob(pattern)})

    catalog = json.loads((root / "src" / "devicekit" / "catalog.json").read_text(encoding="utf-8"))
    families = [
        f"src/devicekit/catalog.json#{family['id']}"
        for family in catalog["families"]
        if family.get("lab") == found or found in {family.get("lesson"), *family.get("lessons", ())}
    ]
    return {
        "pages": existing(f"docs/lessons/{found}.md", f"docs/lessons/{found}.zh.md"),
        "lab": existing(f"labs/{found}.ipynb", f"labs/{found}.zh.ipynb"),
        "solution": existing(f"solutions/{found}.ipynb", f"solutions/{found}.zh.ipynb"),
        "checks": existing(f"src/devicekit_labs/lab{number}.py"),
        "hidden judges": existing(f"grading/hidden/lab{number}.py"),
        "mutations": existing(f"tests/mutations/lab{number}.py"),
        # its own test file, and the tests that run every lab's checks and mutations
        "tests": existing(f"tests/test_lab{number}.py", f"tests/test_lab{number}_*.py")
        + existing("tests/test_exercises.py", "tests/test_mutations.py"),
        "catalog families": families,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write or check the course manifest, or list a lab's files.")
    parser.add_argument("--write", action="store_true", help=f"write {MANIFEST.relative_to(ROOT)}")
    parser.add_argument("--where", metavar="LAB", help="list every file of a lab (10 or 10-compile), by kind")
    args = parser.parse_args(argv)
    if args.where:
        try:
            found = lab_map(args.where)
        except (KeyError, ValueError) as exc:
            print(f"course: {exc}", file=sys.stderr)
            return 2
        for kind in MAP_KINDS:
            print(f"{kind}:")
            for path in found[kind] or ["(none)"]:
                print(f"  {path}")
        return 0
    text = manifest_text()
    if args.write:
        MANIFEST.write_text(text, encoding="utf-8")
        print(f"wrote {MANIFEST.relative_to(ROOT)}")
        return 0
    current = MANIFEST.read_text(encoding="utf-8") if MANIFEST.exists() else ""
    if current != text:
        print(f"{MANIFEST.relative_to(ROOT)} is out of date: run `python -m course_tools.course --write`")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
