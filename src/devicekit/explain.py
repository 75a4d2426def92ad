"""Explain PyTorch device errors to a learner, in English and Chinese.

``explain()`` takes an exception (or its message, or a whole pasted traceback),
finds the line that matters, matches it against the error catalog
(``devicekit/catalog.json``) and returns an :class:`Explanation`: which family of
device-consistency error it is, which devices the message names, and a cause and
fix written for a learner.

All knowledge lives in the catalog, not in this module: the same JSON feeds the
course's atlas pages and the browser widget, so a wording PyTorch changes is fixed
in one place.  This module only implements the matching rules the catalog
describes in its ``matching`` section (family order, ``split``, ``context`` and
``details``) and the device extraction described by ``device_rules``.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import traceback
import warnings
from dataclasses import dataclass
from importlib import resources
from typing import Any

__all__ = ["FAMILIES", "Explanation", "explain", "load_catalog"]

#: The stable family ids, in the order the catalog tries them.
FAMILIES: tuple[str, ...] = (
    "optimizer-state",
    "data-parallel",
    "ddp",
    "load-map-location",
    "to-numpy",
    "generator-device",
    "rnn-device",
    "index-device",
    "conv-input-weight",
    "amp",
    "no-accelerator",
    "dtype-mismatch",
    "same-device",
)

# Longest text examined; a pasted log can be huge, the error is at its end.
_MAX_CHARS = 200_000


@dataclass(frozen=True)
class Explanation:
    """What ``explain()`` found out about one error.

    ``family`` is one of :data:`FAMILIES`, or ``None`` when the text does not look
    like a device error.  ``devices`` lists the device strings the message names
    (``"cuda:0"``, ``"cpu"``, ``"mps"``, legacy type names mapped to devices), in
    order of appearance and without repeats.  ``en`` and ``zh`` are the full
    explanations; ``str()`` gives the English one.  ``message`` is the error line
    that was matched, so a learner can see which line of a long traceback counted.
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

    def __str__(self) -> str:
        return self.en


def load_catalog() -> dict[str, Any]:
    """Return a copy of the error catalog (``devicekit/catalog.json``).

    A copy, so callers (the atlas generator, tests) may change it freely without
    affecting later ``explain()`` calls.
    """
    return copy.deepcopy(_raw_catalog())


@functools.lru_cache(maxsize=1)
def _raw_catalog() -> dict[str, Any]:
    text = resources.files("devicekit").joinpath("catalog.json").read_text(encoding="utf-8")
    return json.loads(text)


def _compile(spec: dict[str, Any]) -> re.Pattern[str]:
    return re.compile(spec["regex"], re.IGNORECASE if spec.get("flags") == "i" else 0)


@dataclass(frozen=True)
class _Family:
    data: dict[str, Any]
    patterns: tuple[tuple[re.Pattern[str], dict[str, Any]], ...]
    context: tuple[re.Pattern[str], ...]
    upgrades: tuple[str, ...]
    details: tuple[tuple[re.Pattern[str], dict[str, Any]], ...]


@dataclass(frozen=True)
class _Compiled:
    families: tuple[_Family, ...]
    by_id: dict[str, _Family]
    device_rules: tuple[tuple[re.Pattern[str], dict[str, Any]], ...]
    hints: tuple[tuple[re.Pattern[str], dict[str, Any]], ...]
    catalog: dict[str, Any]


@functools.lru_cache(maxsize=1)
def _compiled() -> _Compiled:
    catalog = _raw_catalog()
    families = []
    for fam in catalog["families"]:
        context = fam.get("context", {})
        families.append(
            _Family(
                data=fam,
                patterns=tuple((_compile(p), p) for p in fam["patterns"]),
                context=tuple(_compile(p) for p in context.get("patterns", ())),
                upgrades=tuple(context.get("upgrades", ())),
                details=tuple((_compile(d), d) for d in fam.get("details", ())),
            )
        )
    return _Compiled(
        families=tuple(families),
        by_id={f.data["id"]: f for f in families},
        device_rules=tuple((_compile(r), r) for r in catalog["device_rules"]),
        hints=tuple((_compile(h), h) for h in catalog["not_device"].get("hints", ())),
        catalog=catalog,
    )


# --- finding the line that matters --------------------------------------------------------------

# "RuntimeError: ...", "torch.OutOfMemoryError: ...", "E   ValueError: ..." (pytest),
# "[rank0]: RuntimeError: ..." (torchrun), "UserWarning: ...".
_EXC_LINE = re.compile(
    r"^\s*(?:E\s+)?(?:\[rank\d+\]:\s*)?"
    r"(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Warning|Exit|Interrupt|Failure)\s*:"
)
# Lines that end an exception message inside a traceback.
_STOP_LINE = re.compile(
    r"^\s*(?:\[rank\d+\]:\s*)?(?:Traceback \(most recent call last\)|During handling of the above exception"
    r"|The above exception was the direct cause|File \")"
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


# --- devices ------------------------------------------------------------------------------------


def _rule_devices(match: re.Match[str], rule: dict[str, Any]) -> list[str]:
    found = []
    for spec in rule["devices"]:
        kind = spec["type"]
        name = match.group(kind) if isinstance(kind, int) else kind
        if not name:
            continue
        name = name.lower()
        index = spec.get("index")
        number = match.group(index) if isinstance(index, int) else None
        found.append(f"{name}:{number}" if number is not None else name)
    return found


def _extract_devices(text: str) -> tuple[str, ...]:
    """Device strings named in ``text``, in order of appearance, without repeats.

    Rules are applied in catalog order; a later rule never reuses characters an
    earlier rule already claimed (so ``torch.cuda.FloatTensor`` gives ``cuda`` once,
    not also ``cpu``).
    """
    taken: list[tuple[int, int]] = []
    hits: list[tuple[int, list[str]]] = []
    for regex, rule in _compiled().device_rules:
        for match in regex.finditer(text):
            starts = [match.start(g) for g in range(1, (regex.groups or 0) + 1) if match.start(g) >= 0]
            start, end = (min(starts) if starts else match.start()), match.end()
            if any(start < t_end and t_start < end for t_start, t_end in taken):
                continue
            taken.append((start, end))
            hits.append((start, _rule_devices(match, rule)))
    ordered: list[str] = []
    for _, devices in sorted(hits, key=lambda hit: hit[0]):
        for device in devices:
            if device not in ordered:
                ordered.append(device)
    return tuple(ordered)


def _blank(text: str, pattern: str | None) -> str:
    """Replace the parts of ``text`` matched by a pattern's ``ignore`` regex with spaces."""
    if not pattern:
        return text
    return re.sub(pattern, lambda m: " " * len(m.group(0)), text)


def _device_type(device: str) -> str:
    return device.split(":", 1)[0]


# --- matching -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Hit:
    family: _Family
    candidate: str
    spec: dict[str, Any]


def _find(candidates: list[str]) -> _Hit | None:
    compiled = _compiled()
    for candidate in candidates:
        for family in compiled.families:
            for regex, spec in family.patterns:
                match = regex.search(candidate)
                if match is None:
                    continue
                split = spec.get("split")
                if split:
                    first, second = (_extract_devices(match.group(g) or "") for g in split["groups"])
                    same = not (first and second) or _device_type(first[0]) == _device_type(second[0])
                    if same:
                        return _Hit(compiled.by_id[split["when_same_device"]], candidate, spec)
                return _Hit(family, candidate, spec)
    return None


def _upgrade(hit: _Hit, full_text: str) -> _Family:
    """Apply the catalog's ``context`` rules (e.g. a same-device error inside torch/optim/)."""
    for family in _compiled().families:
        if hit.family.data["id"] in family.upgrades and any(rx.search(full_text) for rx in family.context):
            return family
    return hit.family


# --- wording ------------------------------------------------------------------------------------


def _join(items: tuple[str, ...], words: dict[str, str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return words["sep"].join(items[:-1]) + words["and"] + items[-1]


_OPTIONAL = re.compile(r"\[\[(.*?)\]\]", re.DOTALL)


def _fill(template: str, devices: tuple[str, ...], words: dict[str, str]) -> str:
    """Fill ``{devices}``, ``{first}`` and ``{second}`` as the catalog's ``matching.templates`` says."""
    values = {
        "{devices}": _join(devices, words) if devices else None,
        "{first}": devices[0] if devices else None,
        "{second}": devices[1] if len(devices) > 1 else None,
    }

    def optional(match: re.Match[str]) -> str:
        inner = match.group(1)
        missing = any(key in inner and value is None for key, value in values.items())
        return "" if missing else inner

    template = _OPTIONAL.sub(optional, template)
    for key, value in values.items():
        template = template.replace(key, value if value is not None else words[key.strip("{}")])
    return template


def _details(family: _Family, candidate: str, lang: str) -> str:
    for regex, spec in family.details:
        match = regex.search(candidate)
        if match:
            text = spec[lang]
            for number in range(1, (regex.groups or 0) + 1):
                text = text.replace(f"{{{number}}}", match.group(number) or "")
            return text
    return ""


def _compose(family: _Family, devices: tuple[str, ...], candidate: str, lang: str) -> str:
    catalog = _compiled().catalog
    data = family.data
    words = catalog["placeholders"][lang]
    labels = catalog["labels"][lang]
    gap = " " if lang == "en" else ""
    what = _fill(data["cause"][lang], devices, words)
    detail = _details(family, candidate, lang)
    if detail:
        what = f"{what}{gap}{detail}"
    lines = [
        f"{data['title'][lang]} [{data['id']}]",
        f"{labels['what']}{gap}{what}",
        f"{labels['fix']}{gap}{_fill(data['fix'][lang], devices, words)}",
    ]
    notes = catalog.get("device_notes", {})
    for kind in dict.fromkeys(_device_type(d) for d in devices):
        if kind in notes:
            lines.append(notes[kind][lang])
    code = data["fix"].get("code")
    if code:
        lines.append(labels["example"])
        lines.extend("    " + line for line in code.splitlines())
    lines.append(f"{labels['lab']}{gap}{data['lab']}")
    if devices:
        lines.append(f"{labels['devices']}{gap}{', '.join(devices)}")
    return "\n".join(lines)


def _not_device(candidates: list[str]) -> Explanation:
    catalog = _compiled().catalog
    section = catalog["not_device"]
    message = candidates[0] if candidates else ""
    extra = {"en": "", "zh": ""}
    for regex, hint in _compiled().hints:
        if regex.search(message):
            extra = {"en": "\n" + hint["en"], "zh": "\n" + hint["zh"]}
            break
    return Explanation(
        family=None,
        devices=_extract_devices(message),
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
        return "".join(traceback.format_exception(type(error), error, error.__traceback__))
    if isinstance(error, warnings.WarningMessage):
        return f"{error.category.__name__}: {error.message}"
    if isinstance(error, type) and issubclass(error, BaseException):
        raise TypeError(
            f"explain() needs an exception instance, not the class {error.__name__}; "
            "pass the caught exception (except Exception as e: explain(e)) or its message as a str"
        )
    hint = " (decode bytes first: data.decode())" if isinstance(error, (bytes, bytearray)) else ""
    raise TypeError(
        "explain() accepts an exception instance, a warnings.WarningMessage, or a str holding an error "
        f"message or a pasted traceback; got {type(error).__name__}{hint}"
    )


def explain(error: BaseException | str) -> Explanation:
    """Explain a PyTorch device error for a learner, in English and Chinese.

    ``error`` may be a caught exception (its traceback is used too, which is how an
    error raised inside ``torch/optim/`` is recognised as an optimizer-state
    problem), a ``warnings.WarningMessage`` (AMP reports some problems as
    warnings), or a string: a single message or a whole pasted traceback or log.
    For any string it returns an :class:`Explanation` and never raises; text that
    is not a known device error gives ``family=None``.  Anything else raises
    :class:`TypeError`.
    """
    text = _as_text(error)[-_MAX_CHARS:]
    candidates = _candidates(text)
    hit = _find(candidates)
    if hit is None:
        return _not_device(candidates)
    family = _upgrade(hit, text)
    devices = _extract_devices(_blank(hit.candidate, hit.spec.get("ignore")))
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
    )
