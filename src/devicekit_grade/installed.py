"""Where the installed packages the grader snapshots live, found without importing them: ``devicekit``'s
``__init__`` imports torch, about three seconds of CPU that the grader's own process never needs (the
evaluator and the kernels import torch; the process that schedules them and writes the grades does not)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any


def package_folder(name: str) -> Path | None:
    """The folder of the installed package ``name`` (its first search location), or None when it is not
    installed (or is a single-file module)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def labs_manifest() -> list[dict[str, Any]]:
    """The ``labs`` list of the installed course manifest (``devicekit_labs/manifest.json``), read as a file:
    [] when devicekit_labs or its manifest is missing or unreadable."""
    folder = package_folder("devicekit_labs")
    if folder is None:
        return []
    try:
        data = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    labs = data.get("labs") if isinstance(data, dict) else None
    return [lab for lab in labs if isinstance(lab, dict) and "id" in lab] if isinstance(labs, list) else []
