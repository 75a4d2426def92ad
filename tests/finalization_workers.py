"""Spawn workers for test_distributed.py: importable by the children (tests/ is on their sys.path)."""

from __future__ import annotations

import os
from pathlib import Path


class _AbortsWhenFreed:
    """Calls abort() when freed, as a C++ object can when the interpreter tears down its last references."""

    def __del__(self, _abort=os.abort) -> None:  # bound now: teardown may have cleared ``os`` already
        _abort()


_kept: list[_AbortsWhenFreed] = []


def finish_then_abort_at_teardown(rank: int, out: str) -> None:
    """Do the work (write ``rank<N>.txt``), then leave an object that aborts when teardown frees it."""
    Path(out, f"rank{rank}.txt").write_text("done")
    _kept.append(_AbortsWhenFreed())


def fail_after_arming(rank: int, out: str) -> None:
    """Raise: an unfinished worker must still fail, whatever its teardown does."""
    _kept.append(_AbortsWhenFreed())
    raise RuntimeError(f"rank {rank} failed on purpose")


#: A variable this module reads when it is imported (in a spawned child: before the worker runs).
READ_AT_IMPORT = "DEVICEKIT_TEST_SET_AFTER_THE_FIRST_SPAWN"
_AT_IMPORT = os.environ.get(READ_AT_IMPORT)


def report_environment(rank: int, out: str, name: str) -> None:
    """Write what this process sees: the variable ``name`` now and when this module was imported, and its
    working folder."""
    import json

    seen = {"value": os.environ.get(name), "at_import": _AT_IMPORT, "cwd": os.getcwd()}
    Path(out).mkdir(parents=True, exist_ok=True)
    Path(out, f"rank{rank}.json").write_text(json.dumps(seen))
