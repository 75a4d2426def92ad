"""Explain PyTorch device errors to a learner, in English and Chinese.

``explain()`` takes an exception (or its message, or a whole pasted traceback),
finds the line that matters, matches it against the error catalog
(``devicekit/catalog.json``) and returns an `Explanation`: which family of
device-consistency error it is, which devices the message names, and a cause and
fix written for a learner.

All knowledge lives in the catalog, not in this module: the same JSON feeds the
course's atlas pages and the browser widget, so a wording PyTorch changes is fixed
in one place.  `devicekit.catalog` loads it and implements its matching rules
(family order, ``split``, device extraction); this module adds what is about one
explanation: which line of a traceback counts, ``context`` upgrades, ``details``
and the wording.
"""

from __future__ import annotations

import re
import traceback
import warnings
from dataclasses import dataclass

from .catalog import (
    CatalogFamily,
    Match,
    blank,
    compiled,
    device_type,
    extract_devices,
    fill,
    load_catalog,
    match,
)
from .lang import using_language
from .messages import Message, localised

__all__ = ["FAMILIES", "Explanation", "explain", "load_catalog"]  # load_catalog: from devicekit.catalog

#: The stable family ids, in the order the catalog tries them (read from the catalog, not repeated here).
FAMILIES: tuple[str, ...] = tuple(family["id"] for family in load_catalog()["families"])

# Longest text examined; a pasted log can be huge, the error is at its end.
_MAX_CHARS = 200_000


@dataclass(frozen=True)
class Explanation:
    """What ``explain()`` found out about one error.

    ``family`` is one of `FAMILIES`, or ``None`` when the text does not look
    like a device error.  ``devices`` lists the device strings the message names
    (``"cuda:0"``, ``"cpu"``, ``"mps"``, legacy type names mapped to devices), in
    order of appearance and without repeats.  ``en`` and ``zh`` are the full
    explanations; ``str()`` gives the one of the learner's language
    (``devicekit.lang.current_language()``), both (English first) when it is unknown.
    ``message`` is the error line that was matched, so a learner can see which line
    of a long traceback counted.  ``lesson`` and ``lab`` name the lesson that teaches
    the family and the lab that practises it first; ``lessons`` lists every lesson that
    teaches it, ``lesson`` first, and ``labs`` every lab whose cells raise it, ``lab``
    first (so the explanation under an error in lab 5 names lab 5 too).
    """

    family: str | None
    devices: tuple[str, ...]
    en: str
    zh: str
    title_en: str
    title_zh: str
    lab: str | None
    message: str
    lesson: str | None = None
    lessons: tuple[str, ...] = ()
    labs: tuple[str, ...] = ()

    def __str__(self) -> str:
        from .lang import current_language

        return {"en": self.en, "zh": self.zh}.get(current_language() or "", f"{self.en}\n\n{self.zh}")


# --- finding the line that matters --------------------------------------------------------------

# "RuntimeError: ...", "torch.OutOfMemoryError: ...", "E   ValueError: ..." (pytest),
# "[rank0]: RuntimeError: ..." (torchrun), "UserWarning: ...".
_EXC_LINE = re.compile(
    r"^\s*(?:E\s+)?(?:\[rank\d+\]:\s*)?"
    r"(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Warning|Exit|Interrupt|Failure)\s*:"
)
# Lines that end an exception message inside a traceback; devicekit.simulate's note under an error raised by a
# simulated GPU too: it is not PyTorch's message, and its "(its tensors live on the CPU)" names no device
# the error is about (a dtype error between two simulated GPU tensors named "cpu").
_STOP_LINE = re.compile(
    r"^\s*(?:\[rank\d+\]:\s*)?(?:Traceback \(most recent call last\)|During handling of the above exception"
    r"|The above exception was the direct cause|File \"|devicekit\.simulate[:：])"
)
_SPACES = re.compile(r"\s+")


def _collapse(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def _candidates(text: str) -> list[str]:
    """Texts to match, most relevant first.

    The last exception message of a traceback (with its continuation lines) comes
    first, then earlier exception messages (chained exceptions, warnings in a log),
    then every non-empty line from the bottom up, for logs that do not follow the
    ``Type: message`` layout.
    """
    lines = text.splitlines()
    blocks: list[str] = []
    for i in range(len(lines) - 1, -1, -1):
        if not _EXC_LINE.match(lines[i]):
            continue
        parts = [lines[i]]
        for nxt in lines[i + 1 :]:
            if not nxt.strip() or _STOP_LINE.match(nxt) or _EXC_LINE.match(nxt):
                break
            parts.append(nxt)
        blocks.append(_collapse(" ".join(parts)))
    singles = [_collapse(line) for line in reversed(lines) if line.strip()]
    seen: set[str] = set()
    ordered = []
    for cand in blocks + singles:
        if cand and cand not in seen:
            seen.add(cand)
            ordered.append(cand)
    return ordered


# --- matching -----------------------------------------------------------------------------------


def _upgrade(hit: Match, full_text: str) -> CatalogFamily:
    """Apply the catalog's ``context`` rules (e.g. a same-device error inside torch/optim/)."""
    for family in compiled().families:
        if hit.family.id in family.upgrades and any(rx.search(full_text) for rx in family.context):
            return family
    return hit.family


# --- wording ------------------------------------------------------------------------------------


def _details(family: CatalogFamily, candidate: str, lang: str) -> str:
    for regex, spec in family.details:
        match = regex.search(candidate)
        if match:
            text = spec[lang]
            for number in range(1, (regex.groups or 0) + 1):
                text = text.replace(f"{{{number}}}", match.group(number) or "")
            return text
    return ""


def _compose(family: CatalogFamily, devices: tuple[str, ...], candidate: str, lang: str) -> str:
    catalog = compiled().catalog
    data = family.data
    words = catalog["placeholders"][lang]
    labels = catalog["labels"][lang]
    gap = " " if lang == "en" else ""
    what = fill(data["cause"][lang], devices, words)
    detail = _details(family, candidate, lang)
    if detail:
        what = f"{what}{gap}{detail}"
    lines = [
        f"{data['title'][lang]} [{data['id']}]",
        f"{labels['what']}{gap}{what}",
        f"{labels['fix']}{gap}{fill(data['fix'][lang], devices, words)}",
    ]
    notes = catalog.get("device_notes", {})
    for kind in dict.fromkeys(device_type(d) for d in devices):
        if kind in notes and data["id"] not in notes[kind].get("skip", ()):
            lines.append(notes[kind][lang])
    code = data["fix"].get("code")
    if code:
        lines.append(labels["example"])
        lines.extend("    " + line for line in code.splitlines())
    lines.append(f"{labels['lab']}{gap}{_taught(data, labels, lang)}")
    if devices:
        lines.append(f"{labels['devices']}{gap}{(', ' if lang == 'en' else '、').join(devices)}")
    return "\n".join(lines)


def _lessons(data: dict) -> tuple[str, ...]:
    """The lessons that teach a family, its ``lesson`` first."""
    listed = data.get("lessons") or ([data["lesson"]] if data.get("lesson") else [])
    return tuple(dict.fromkeys([data["lesson"], *listed] if data.get("lesson") else listed))


def _labs(data: dict) -> tuple[str, ...]:
    """The labs that practise a family, its ``lab`` first."""
    listed = data.get("labs") or ([data["lab"]] if data.get("lab") else [])
    return tuple(dict.fromkeys([data["lab"], *listed] if data.get("lab") else listed))


def _number(slug: str) -> str:
    """A lesson's or lab's number from its slug: ``"05-debugging"`` gives ``"5"``."""
    head = slug.split("-", 1)[0]
    return str(int(head)) if head.isdigit() else slug


def _taught(data: dict, labels: dict[str, str], lang: str) -> str:
    """The "Taught in" line by number: ``lessons 2, 8; labs 2, 8`` in English, ``第 2、8 课；实验 2、8``
    in Chinese (the catalog's ``lesson_one``, ``lesson_many``, ``lab_one`` and ``lab_many`` labels hold
    the wording)."""
    lessons = [_number(slug) for slug in _lessons(data)]
    labs = [_number(slug) for slug in _labs(data)]
    sep, end = (", ", "; ") if lang == "en" else ("、", "；")
    parts = []
    if lessons:
        word = labels["lesson_many"] if len(lessons) > 1 else labels["lesson_one"]
        parts.append(word.replace("{}", sep.join(lessons)))
    if labs:
        word = labels["lab_many"] if len(labs) > 1 else labels["lab_one"]
        parts.append(word.replace("{}", sep.join(labs)))
    return end.join(parts)


def _not_device(candidates: list[str]) -> Explanation:
    catalog = compiled().catalog
    section = catalog["not_device"]
    message = candidates[0] if candidates else ""
    extra = {"en": "", "zh": ""}
    for regex, hint in compiled().hints:
        if regex.search(message):
            extra = {"en": "\n" + hint["en"], "zh": "\n" + hint["zh"]}
            break
    return Explanation(
        family=None,
        devices=extract_devices(message),
        en=f"{section['title']['en']}\n{section['text']['en']}{extra['en']}",
        zh=f"{section['title']['zh']}\n{section['text']['zh']}{extra['zh']}",
        title_en=section["title"]["en"],
        title_zh=section["title"]["zh"],
        lab=None,
        message=message,
        lesson=None,
    )


def _as_text(error: object) -> str:
    if isinstance(error, str):
        return error
    if isinstance(error, BaseException):
        with using_language("en"):  # devicekit's own errors are classified by their English text
            return "".join(traceback.format_exception(type(error), error, error.__traceback__))
    if isinstance(error, warnings.WarningMessage):
        # category may be None (the constructor does not check it): name it Warning then
        category = error.category if isinstance(error.category, type) else Warning
        return f"{category.__name__}: {error.message}"
    if isinstance(error, type) and issubclass(error, BaseException):
        name = error.__name__
        raise localised(
            TypeError,
            Message(
                f"explain() needs an exception instance, not the class {name}; "
                "pass the caught exception (except Exception as e: explain(e)) or its message as a str",
                f"explain() 需要异常对象，而不是异常类 {name}；"
                "请传入捕获到的异常（except Exception as e: explain(e)），或者它的报错信息字符串",
            ),
        )
    kind = type(error).__name__
    raw = isinstance(error, (bytes, bytearray))
    raise localised(
        TypeError,
        Message(
            "explain() accepts an exception instance, a warnings.WarningMessage, or a str holding an error "
            f"message or a pasted traceback; got {kind}"
            + (" (decode bytes first: data.decode())" if raw else ""),
            "explain() 接受异常对象、warnings.WarningMessage，或者报错信息/回溯信息的字符串；"
            f"收到的是 {kind}" + ("（请先解码：data.decode()）" if raw else ""),
        ),
    )


def explain(error: BaseException | str) -> Explanation:
    """Explain a PyTorch device error for a learner, in English and Chinese.

    ``error`` may be a caught exception (its traceback is used too, which is how an
    error raised inside ``torch/optim/`` is recognised as an optimizer-state
    problem), a ``warnings.WarningMessage`` (AMP reports some problems as
    warnings), or a string: a single message or a whole pasted traceback or log.
    For any string it returns an `Explanation` and never raises; text that
    is not a known device error gives ``family=None``.  Anything else raises
    `TypeError`.
    """
    text = _as_text(error)[-_MAX_CHARS:]
    candidates = _candidates(text)
    hit = match(candidates)
    if hit is None:
        return _not_device(candidates)
    family = _upgrade(hit, text)
    devices = extract_devices(blank(hit.candidate, hit.spec.get("ignore")))
    data = family.data
    return Explanation(
        family=data["id"],
        devices=devices,
        en=_compose(family, devices, hit.candidate, "en"),
        zh=_compose(family, devices, hit.candidate, "zh"),
        title_en=data["title"]["en"],
        title_zh=data["title"]["zh"],
        lab=data.get("lab"),
        message=hit.candidate,
        lesson=data.get("lesson"),
        lessons=_lessons(data),
        labs=_labs(data),
    )
