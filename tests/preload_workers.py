"""Spawn workers for test_preloaded_ranks.py: importable by the children (tests/ is on their sys.path)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def report(rank: int, out: str, name: str) -> None:
    """Write what this rank sees: its parent, its environment, its working folder, what was imported."""
    facts = {
        "rank": int(os.environ["RANK"]),
        "world_size": int(os.environ["WORLD_SIZE"]),
        "ppid": os.getppid(),
        "variable": os.environ.get(name),
        "cwd": os.getcwd(),
        "dynamo_imported": "torch._dynamo" in sys.modules,
    }
    Path(out, f"rank{rank}.json").write_text(json.dumps(facts))


def fail(rank: int) -> None:
    """Raise in every rank: the caller gets the error of the rank that failed first."""
    raise RuntimeError(f"rank {rank} failed on purpose")


def read(out: str) -> list[dict]:
    """What `report` wrote, by rank."""
    return [json.loads(p.read_text()) for p in sorted(Path(out).glob("rank*.json"))]
