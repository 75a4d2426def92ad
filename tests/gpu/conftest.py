"""Shared set-up for the GPU-only tests in ``tests/gpu/`` (each module skips itself without CUDA).

These tests check devicekit against real hardware: the error catalog against the messages a CUDA build
of PyTorch really prints, and ``DeviceLoader`` against the copy bandwidth the machine really has. What
they observe is worth keeping even when an assertion fails, so the ``gpu_record`` fixture stores it and,
when ``DEVICEKIT_GPU_RECORD`` names a file, the session writes everything there as JSON for
``scripts/gpu-check`` to put in ``results/gpu-check.json``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

_RECORDS: dict[str, dict[str, Any]] = {}


@pytest.fixture
def gpu_record() -> Callable[[str, str, dict[str, Any]], None]:
    """``gpu_record(section, key, data)``: keep ``data`` under ``section/key`` for the results file."""

    def record(section: str, key: str, data: dict[str, Any]) -> None:
        _RECORDS.setdefault(section, {})[key] = data
        print(f"[{section}] {key}: {json.dumps(data, ensure_ascii=False)}")

    return record


def pytest_sessionfinish(session):
    target = os.environ.get("DEVICEKIT_GPU_RECORD")
    if not target or not _RECORDS:
        return
    path = Path(target)
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:  # one file per xdist worker; gpu-check merges <stem>*.json
        path = path.with_name(f"{path.stem}.{worker}{path.suffix}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_RECORDS, indent=1, ensure_ascii=False, sort_keys=True), encoding="utf-8")
