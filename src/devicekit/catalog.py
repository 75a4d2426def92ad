"""The error catalog (``devicekit/catalog.json``): loaded, compiled, and asked.

The catalog is the only classifier of "is this a device error, and which one" in devicekit: ``explain``
builds its explanations on it, ``locate_mismatch`` asks it whether an exception is about devices, and the
atlas pages (``course_tools.generate.atlas``) and the widget (``docs/assets/explainer.js``) read this JSON.
This module implements the rules of the catalog's ``matching`` section that do not depend on wording:
family order, ``split``, ``ignore``, template filling, and device extraction by ``device_rules``.

Regexes are compiled with ``re.ASCII``, as the widget compiles them with JavaScript's ``u`` flag: in
both, ``\\w``, ``\\b`` and ``\\d`` are ASCII and text is read in code points, so Python and JavaScript
find the same devices in Chinese text around a device name (``"在cuda:0上"``).
"""

from __future__ import annotations

import copy
import functools
import json
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

__all__ = [
    "CatalogFamily",
    "CompiledCatalog",
    "Match",
    "compiled",
    "device_type",
    "extract_devices",
    "fill",
    "is_device_error",
    "load_catalog",
    "match",
]


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
    flags = re.ASCII | (re.IGNORECASE if spec.get("flags") == "i" else 0)
    return re.compile(spec["regex"], flags)


@dataclass(frozen=True)
class CatalogFamily:
    """One family of the catalog with its regexes compiled."""

    data: dict[str, Any]
    patterns: tuple[tuple[re.Pattern[str], dict[str, Any]], ...]
    context: tuple[re.Pattern[str], ...]
    upgrades: tuple[str, ...]
    details: tuple[tuple[re.Pattern[str], dict[str, Any]], ...]

    @property
    def id(self) -> str:
        return self.data["id"]


@dataclass(frozen=True)
class CompiledCatalog:
    """The whole catalog, compiled once per process (see `compiled`)."""

    families: tuple[CatalogFamily, ...]
    by_id: dict[str, CatalogFamily]
    device_rules: tuple[tuple[re.Pattern[str], dict[str, Any]], ...]
    hints: tuple[tuple[re.Pattern[str], dict[str, Any]], ...]
    catalog: dict[str, Any]


@functools.lru_cache(maxsize=1)
def compiled() -> CompiledCatalog:
    """The catalog with every regex compiled; cached (the catalog is package data and does not change)."""
    catalog = _raw_catalog()
    families = []
    for fam in catalog["families"]:
        context = fam.get("context", {})
        families.append(
            CatalogFamily(
                data=fam,
                patterns=tuple((_compile(p), p) for p in fam["patterns"]),
                context=tuple(_compile(p) for p in context.get("patterns", ())),
                upgrades=tuple(context.get("upgrades", ())),
                details=tuple((_compile(d), d) for d in fam.get("details", ())),
            )
        )
    return CompiledCatalog(
        families=tuple(families),
        by_id={f.data["id"]: f for f in families},
        device_rules=tuple((_compile(r), r) for r in catalog["device_rules"]),
        hints=tuple((_compile(h), h) for h in catalog["not_device"].get("hints", ())),
        catalog=catalog,
    )


# --- devices ------------------------------------------------------------------------------------


def _rule_devices(found: re.Match[str], rule: dict[str, Any]) -> list[str]:
    out = []
    for spec in rule["devices"]:
        kind = spec["type"]
        name = found.group(kind) if isinstance(kind, int) else kind
        if not name:
            continue
        name = name.lower()
        index = spec.get("index")
        number = found.group(index) if isinstance(index, int) else None
        out.append(f"{name}:{number}" if number is not None else name)
    return out


def extract_devices(text: str) -> tuple[str, ...]:
    """Device strings named in ``text``, in order of appearance, without repeats.

    Rules are applied in catalog order; a later rule never reuses characters an earlier rule already
    claimed (so ``torch.cuda.FloatTensor`` gives ``cuda`` once, not also ``cpu``).  Linear in the length
    of the text: claimed characters are marked in a byte array, so each match is checked against earlier
    ones in time proportional to its own length.
    """
    claimed = bytearray(len(text) + 1)
    hits: list[tuple[int, list[str]]] = []
    for regex, rule in compiled().device_rules:
        groups = regex.groups or 0
        named: dict[tuple[str | None, ...], list[str]] = {}  # the devices of each distinct match, once
        for found in regex.finditer(text):
            # The groups of a device rule are sequential: the first one that took part starts first.
            start = found.start(1) if groups else found.start()
            if start < 0:
                starts = [s for g in range(2, groups + 1) if (s := found.start(g)) >= 0]
                start = min(starts) if starts else found.start()
            end = found.end()
            if end <= start or claimed.find(1, start, end) >= 0:
                continue
            claimed[start:end] = b"\x01" * (end - start)
            key = found.groups()
            devices = named.get(key)
            if devices is None:
                devices = named[key] = _rule_devices(found, rule)
            hits.append((start, devices))
    hits.sort(key=lambda hit: hit[0])
    return tuple(dict.fromkeys(device for _, devices in hits for device in devices))


def device_type(device: str) -> str:
    """``"cuda:0"`` -> ``"cuda"``."""
    return device.split(":", 1)[0]


def blank(text: str, pattern: str | None) -> str:
    """Replace the parts of ``text`` matched by a pattern's ``ignore`` regex with spaces."""
    if not pattern:
        return text
    return re.sub(pattern, lambda m: " " * len(m.group(0)), text, flags=re.ASCII)


# --- families -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Match:
    """The first family whose pattern matched: in which candidate text, with which pattern spec."""

    family: CatalogFamily
    candidate: str
    spec: dict[str, Any]


def match(candidates: list[str]) -> Match | None:
    """The first hit over ``candidates`` (most relevant first), families and patterns in catalog order."""
    catalog = compiled()
    for candidate in candidates:
        for family in catalog.families:
            for regex, spec in family.patterns:
                found = regex.search(candidate)
                if found is None:
                    continue
                split = spec.get("split")
                if split:
                    first, second = (extract_devices(found.group(g) or "") for g in split["groups"])
                    same = not (first and second) or device_type(first[0]) == device_type(second[0])
                    if same:
                        return Match(catalog.by_id[split["when_same_device"]], candidate, spec)
                return Match(family, candidate, spec)
    return None


def is_device_error(text: str) -> bool:
    """Whether an error message is about tensors on different devices, by the catalog's families.

    ``True`` for a family about placement (``same-device``, ``rnn-device``, ``index-device``...); ``False``
    for text no family matches (``KeyError('device')``, ``"unknown device profile"``) and for the
    families the catalog marks ``"mismatch": false``: about the machine or the setup (no accelerator,
    out of memory, drivers, dtype, AMP, process groups), so locate_mismatch must not blame a module.
    """
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    hit = match([" ".join(lines)] + lines[::-1] if lines else [])
    return hit is not None and hit.family.data.get("mismatch", True) is not False


# --- templates ----------------------------------------------------------------------------------


def _join(items: tuple[str, ...], words: dict[str, str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return words["sep"].join(items[:-1]) + words["and"] + items[-1]


_OPTIONAL = re.compile(r"\[\[(.*?)\]\]", re.DOTALL)


def fill(template: str, devices: tuple[str, ...], words: dict[str, str]) -> str:
    """Fill ``{devices}``, ``{first}`` and ``{second}`` as the catalog's ``matching.templates`` says."""
    values = {
        "{devices}": _join(devices, words) if devices else None,
        "{first}": devices[0] if devices else None,
        "{second}": devices[1] if len(devices) > 1 else None,
    }

    def optional(found: re.Match[str]) -> str:
        inner = found.group(1)
        missing = any(key in inner and value is None for key, value in values.items())
        return "" if missing else inner

    template = _OPTIONAL.sub(optional, template)
    for key, value in values.items():
        text = value if value is not None else words[key.strip("{}")]
        template = re.sub(re.escape(key), lambda found, text=text: _spaced(found, text), template)
    return template


# A Chinese character (CJK ideograph) and an ASCII letter or digit: Chinese text puts a space between them.
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_ASCII_WORD = re.compile(r"[A-Za-z0-9]")


def _spaced(found: re.Match[str], text: str) -> str:
    """`text` in place of a placeholder, with a space on a side where a Chinese character meets a device
    name (``在{first}上`` gives ``在 meta 上``)."""
    before = found.string[found.start() - 1 : found.start()]
    after = found.string[found.end() : found.end() + 1]
    if text and _HAN.match(before) and _ASCII_WORD.match(text[0]):
        text = " " + text
    if text and _HAN.match(after) and _ASCII_WORD.match(text[-1]):
        text = text + " "
    return text
