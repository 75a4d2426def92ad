"""The error atlas and the explainer widget's data, generated from devicekit's error catalog.

``src/devicekit/catalog.json`` is the one source of every message, cause and fix. This module only lays
it out: :func:`atlas_markdown` writes the Markdown of the atlas page in one language (one section per
family, anchored by the family id so links stay stable across languages and rewordings), and
:func:`widget_json` writes the subset of the catalog that ``docs/assets/explainer.js`` needs to repeat
``devicekit.explain`` in the browser. ``course_tools/site/atlas_hooks.py`` calls both during the site build.

Run ``python -m course_tools.generate.atlas en`` (or ``zh``) to print the generated Markdown.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from course_tools import course
from course_tools.paths import ROOT
from devicekit.catalog import fill, load_catalog

#: Where the widget loads the catalog from, relative to the site root (and to explainer.js's folder).
WIDGET_JSON_PATH = "assets/devicekit-catalog.json"

#: The id of the "not a device error" section (both languages).
NOT_DEVICE_ANCHOR = "not-device"
DEVICE_NOTES_ANCHOR = "device-notes"

BACKEND_ORDER = ("cuda", "mps", "xpu", "hip", "cpu", "meta")
BACKEND_NAMES = {
    "cuda": "CUDA",
    "mps": "MPS",
    "xpu": "XPU",
    "hip": "HIP (ROCm)",
    "cpu": "CPU",
    "meta": "meta",
}

#: Page prose around the catalog's texts (the texts themselves come from the catalog).
UI: dict[str, dict[str, str]] = {
    "en": {
        "overview": "All families at a glance",
        "family": "Family",
        "typical": "A typical message",
        "lesson": "Lesson",
        "lab": "Lab",
        "soon": "coming soon",
        "prints": "What PyTorch prints",
        "torch": "PyTorch",
        "after": "— the traceback lines before it:",
        "wordings": "How the wording changed across PyTorch versions",
        "note": "Notes (from the catalog's sources)",
        "patterns": "What devicekit looks for (regular expressions, tried in this order)",
        "split": (
            "When both types in the message name the same device (or print bare dtypes), the message is "
            "reported as {target} instead."
        ),
        "context": (
            "A {upgrades} message is reported as this family when the pasted traceback also matches one of:"
        ),
        "notes_intro": (
            "Some devices need a word of their own; the explainer adds these notes when they appear."
        ),
        "not_device_intro": "When nothing in the pasted text matches a family, the explainer says so:",
        "hint": "Hints it adds for look-alike errors:",
    },
    "zh": {
        "overview": "所有类别一览",
        "family": "类别",
        "typical": "典型报错",
        "lesson": "课程",
        "lab": "实验",
        "soon": "即将推出",
        "prints": "PyTorch 的报错原文",
        "torch": "PyTorch 版本",
        "after": "——回溯信息（traceback）中位于它之前的几行：",
        "wordings": "不同 PyTorch 版本的措辞变化",
        "note": "说明（沿用目录中的英文原文）",
        "patterns": "devicekit 的匹配规则（正则表达式，按此顺序尝试）",
        "split": "如果报错里的两个类型指向同一个设备（或者只打印了 dtype），则归入{target}。",
        "context": "如果粘贴的回溯信息里还出现下列任一内容，{upgrades}类报错会归入这一类：",
        "notes_intro": "有些设备需要单独说明；报错里出现这些设备时，报错解读器会附上下面的提示。",
        "not_device_intro": "粘贴的内容与任何类别都不匹配时，报错解读器会这样回答：",
        "hint": "遇到形似设备错误的报错时，它会补充的提示：",
    },
}


# --- Markdown helpers ---------------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_\[\]{}()#+!|>-])")


def md_text(text: str) -> str:
    """Plain text as Markdown that renders to exactly that text (no emphasis, links, HTML or attrs)."""
    text = text.replace("&", "&amp;").replace("<", "&lt;")
    return _MD_SPECIAL.sub(r"\\\1", text)


def code_span(text: str) -> str:
    """``text`` as one inline code span, whatever backticks it contains."""
    text = " ".join(text.split())
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if longest else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def code_block(code: str, lang: str = "python") -> str:
    longest = max((len(run) for run in re.findall(r"`{3,}", code)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}{lang}\n{code.rstrip()}\n{fence}"


def _source(source: str) -> str:
    match = re.fullmatch(r"https://github\.com/([^/\s]+/[^/\s]+)/(?:issues|pull)/(\d+)", source)
    if match:
        return f"[{match.group(1)}#{match.group(2)}]({source})"
    if re.fullmatch(r"https?://\S+", source):
        return f"[{md_text(source.split('://', 1)[1])}]({source})"
    return md_text(source)


# --- content ------------------------------------------------------------------------------------


def _pages(docs_dir: Path, root: Path) -> dict[str, dict[str, str]]:
    """Lesson and lab pages that exist, by lab id: ``{"lesson": md path, "lab": ipynb path, titles...}``."""
    titles = {lab.id: lab for lab in course.labs(root)}
    found: dict[str, dict[str, str]] = {}
    for lesson in sorted(docs_dir.glob("lessons/[0-9]*.md")):
        if ".zh." not in lesson.name:
            found.setdefault(lesson.stem, {})["lesson"] = f"lessons/{lesson.name}"
    for lab in sorted((root / "labs").glob("[0-9]*.ipynb")):
        if ".zh." not in lab.name:
            found.setdefault(lab.stem, {})["lab"] = f"labs/{lab.name}"
    for lab_id, entry in found.items():
        lab = titles.get(lab_id)
        if lab is not None:
            for lang in ("en", "zh"):
                entry[f"lesson_title_{lang}"] = lab.lesson_titles[lang] or lab.lesson_titles["en"]
                entry[f"lab_title_{lang}"] = lab.titles[lang] or lab.titles["en"]
    return found


def _short_path(line: str) -> str:
    """A traceback line without the recording machine's folders (``"…/site-packages/torch/..."``)."""
    return re.sub(r'"[^"]*?[\\/](?:site|dist)-packages[\\/]', '"…/site-packages/', line)


def _course_links(family: dict[str, Any], lang: str, pages: dict[str, dict[str, str]]) -> str:
    ui = UI[lang]
    colon = "：" if lang == "zh" else ": "
    parts = []
    lessons = (
        list(dict.fromkeys([family["lesson"], *family.get("lessons", ())])) if family.get("lesson") else []
    )
    labs = list(dict.fromkeys([family["lab"], *family.get("labs", ())])) if family.get("lab") else []
    for kind, page_id in [*(("lesson", lesson) for lesson in lessons), *(("lab", lab) for lab in labs)]:
        if not page_id:
            continue
        entry = pages.get(page_id, {})
        if kind in entry:
            title = entry.get(f"{kind}_title_{lang}") or page_id
            parts.append(f"{ui[kind]}{colon}[{title}]({entry[kind]})")
        else:
            soon = f"（{ui['soon']}）" if lang == "zh" else f" ({ui['soon']})"
            parts.append(f"{ui[kind]}{colon}{md_text(page_id)}{soon}")
    return " · ".join(parts)


def _typical(family: dict[str, Any]) -> str:
    message = family["examples"][0]["message"]
    message = re.sub(r"^(?:[A-Za-z_][\w.]*(?:Error|Exception|Warning)\s*:\s*)", "", message)
    return message if len(message) <= 90 else message[:88].rstrip() + " …"


def _examples(family: dict[str, Any], lang: str) -> list[str]:
    """The family's recorded messages, grouped by device, each with its PyTorch version and source."""
    ui = UI[lang]
    out = []
    for backend in sorted(
        {ex["backend"] for ex in family["examples"]},
        key=lambda b: BACKEND_ORDER.index(b) if b in BACKEND_ORDER else len(BACKEND_ORDER),
    ):
        out += [f"**{md_text(BACKEND_NAMES.get(backend, backend))}**", ""]
        for ex in (ex for ex in family["examples"] if ex["backend"] == backend):
            item = f"- {code_span(ex['message'])}"
            if ex.get("context"):
                lines = [_short_path(line) for line in ex["context"].splitlines() if line.strip()]
                gap = "" if lang == "zh" else " "  # no space next to full-width punctuation
                item += f"{gap}{md_text(ui['after'])}{gap}" + " ".join(code_span(line) for line in lines)
            out.append(item + "<br>")
            out.append(f"  {md_text(ui['torch'])} {md_text(ex['torch'])} · {_source(ex['source'])}")
        out.append("")
    return out


def _family_section(family: dict[str, Any], catalog: dict[str, Any], lang: str, pages) -> list[str]:
    ui = UI[lang]
    labels = catalog["labels"][lang]
    words = catalog["placeholders"][lang]
    gap = " " if lang == "en" else ""
    titles = {f["id"]: f["title"][lang] for f in catalog["families"]}
    fid = family["id"]
    out = [
        f"## {md_text(family['title'][lang])} {{ #{fid} }}",
        "",
        f"{code_span(fid)} · {_course_links(family, lang, pages)}",
        "",
        f"**{md_text(labels['what'])}**{gap}{md_text(fill(family['cause'][lang], (), words))}",
        "",
        f"**{md_text(labels['fix'])}**{gap}{md_text(fill(family['fix'][lang], (), words))}",
        "",
        code_block(family["fix"]["code"]),
        "",
        f"**{md_text(ui['prints'])}**",
        "",
        *_examples(family, lang),
        f'??? info "{ui["wordings"]}"',
        "",
        f"    | {ui['torch']} | {ui['note']} |",
        "    |---|---|",
        *(f"    | {md_text(p['torch'])} | {md_text(p.get('note', ''))} |" for p in family["patterns"]),
        "",
        f'??? info "{ui["patterns"]}"',
        "",
    ]
    for pattern in family["patterns"]:
        flags = " (i)" if pattern.get("flags") == "i" else ""
        out.append(f"    - {code_span(pattern['regex'])}{flags}")
    out.append("")
    splits = {p["split"]["when_same_device"] for p in family["patterns"] if p.get("split")}
    for target in sorted(splits):
        link = f"[{md_text(titles[target])}](#{target})"
        out += [f"    {md_text(ui['split']).replace(md_text('{target}'), link)}", ""]
    context = family.get("context")
    if context:
        upgrades = "、".join if lang == "zh" else ", ".join
        names = upgrades(f"[{md_text(titles[u])}](#{u})" for u in context["upgrades"])
        out += [f"    {md_text(ui['context']).replace(md_text('{upgrades}'), names)}", ""]
        out += [f"    - {code_span(p['regex'])}" for p in context["patterns"]]
        out.append("")
    return out


def atlas_markdown(lang: str, docs_dir: Path | None = None, root: Path = ROOT) -> str:
    """The generated part of the atlas page in ``lang`` (``"en"`` or ``"zh"``), as Markdown.

    Links go only to lesson and lab pages that exist (``docs_dir/lessons/ID.md``, ``root/labs/ID.ipynb``);
    the others are named as plain text, marked "coming soon".
    """
    if lang not in UI:
        raise ValueError(f"lang must be one of {sorted(UI)}, got {lang!r}")
    catalog = load_catalog()
    pages = _pages(docs_dir or root / "docs", root)
    ui = UI[lang]
    out = [
        f"## {md_text(ui['overview'])} {{ #families }}",
        "",
        f"| {ui['family']} | {ui['typical']} |",
        "|---|---|",
    ]
    for family in catalog["families"]:
        title = md_text(family["title"][lang])
        out.append(f"| [{title}](#{family['id']}) | {code_span(_typical(family))} |")
    out.append("")
    for family in catalog["families"]:
        out += _family_section(family, catalog, lang, pages)

    notes = catalog["device_notes"]
    heading = "设备说明" if lang == "zh" else "Device notes"
    out += [f"## {heading} {{ #{DEVICE_NOTES_ANCHOR} }}", "", md_text(ui["notes_intro"]), ""]
    for kind, note in notes.items():
        out += [f"- {code_span(kind)}: {md_text(note[lang])}"]
    out.append("")

    section = catalog["not_device"]
    out += [
        f"## {md_text(section['title'][lang])} {{ #{NOT_DEVICE_ANCHOR} }}",
        "",
        md_text(ui["not_device_intro"]),
        "",
        f"> {md_text(section['text'][lang])}",
        "",
        md_text(ui["hint"]),
        "",
        *(f"- {md_text(hint[lang])}" for hint in section["hints"]),
        "",
    ]
    return "\n".join(out)


# --- the widget's data --------------------------------------------------------------------------


def _regex(spec: dict[str, Any], *extra: str) -> dict[str, Any]:
    kept = {"regex": spec["regex"]}
    if spec.get("flags"):
        kept["flags"] = spec["flags"]
    for key in extra:
        if key in spec:
            kept[key] = spec[key]
    return kept


def widget_data() -> dict[str, Any]:
    """What ``explainer.js`` needs from the catalog: the matching data and the learner-facing texts.

    Examples, sources and notes stay out (the atlas page shows them); nothing is rewritten.
    """
    catalog = load_catalog()
    families = []
    for fam in catalog["families"]:
        entry: dict[str, Any] = {
            "id": fam["id"],
            "title": fam["title"],
            "patterns": [_regex(p, "split", "ignore") for p in fam["patterns"]],
            "cause": fam["cause"],
            "fix": fam["fix"],
            "lab": fam.get("lab"),
            "lesson": fam.get("lesson"),
            "lessons": fam.get("lessons", []),
            "labs": fam.get("labs", []),
        }
        if "context" in fam:
            entry["context"] = {
                "upgrades": fam["context"].get("upgrades", []),
                "patterns": [_regex(p) for p in fam["context"].get("patterns", [])],
            }
        if "details" in fam:
            entry["details"] = [_regex(d, "en", "zh") for d in fam["details"]]
        families.append(entry)
    section = catalog["not_device"]
    return {
        "schema": catalog["schema"],
        "device_rules": [_regex(r, "devices") for r in catalog["device_rules"]],
        "placeholders": catalog["placeholders"],
        "device_notes": catalog["device_notes"],
        "labels": catalog["labels"],
        "not_device": {
            "title": section["title"],
            "text": section["text"],
            "hints": [_regex(h, "en", "zh") for h in section.get("hints", [])],
        },
        "families": families,
    }


def widget_json() -> str:
    """:func:`widget_data` as compact JSON (UTF-8 text, Chinese kept readable)."""
    return json.dumps(widget_data(), ensure_ascii=False, separators=(",", ":"))


if __name__ == "__main__":
    print(atlas_markdown(sys.argv[1] if len(sys.argv) > 1 else "en"))
