"""The "verified on" badge of a lab page: which runs really checked this lab, in words.

Recorded runs, and nothing else, so the badge never claims a run that did not happen; it names the torch
release of every run that verified the lab:

- **CPU**: the run that produced the outputs stored in the lab's notebooks (``make labs`` records it in
  ``metadata.devicekit.executed``: torch version and device). Those outputs are the ones the site shows,
  and nbval re-runs every lab on CPU in ``make test`` and compares them. A lab whose notebooks were not all
  executed on a CPU runner, or that needs ``cuda``, gets "—". Other torch releases count once a run on
  them is recorded in ``results/cpu-runs/*.json`` (``scripts/gpu-check --dry-run --results
  results/cpu-runs/torch-X.Y.json`` run with that torch: nbval of every notebook against the stored
  outputs, on the CPU) and shows the lab passing with its current code, as for CUDA below.
- **CUDA**: ``results/gpu-check.json``, written by ``scripts/gpu-check`` on a GPU machine and committed
  only after a real GPU run. CUDA ✓ only when that file comes from a real run (not ``--dry-run``, with a
  CUDA version), says this lab passed there, and the lab's code has not changed since: the file records a
  hash of every notebook's code cells, and a lab edited after the GPU run is shown as not verified.

``badge("01-devices", "en")`` -> ``"verified on torch 2.13 · CPU ✓ · CUDA —"``;
``badge("01-devices", "zh")`` -> ``"已验证：torch 2.13 · CPU ✓ · CUDA —"``; with a recorded CPU run on 2.14,
``"verified on torch 2.13, 2.14 · CPU ✓ · CUDA —"``. When the GPU run used a torch release that no CPU run
verified, the CUDA part names it: ``CUDA ✓ (torch 2.11)``.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from course_tools import course
from course_tools.paths import ROOT

RESULTS = Path("results") / "gpu-check.json"  # relative to the course root
CPU_RUNS = Path("results") / "cpu-runs"  # recorded CPU runs on other torch releases, one file each
# Needs a CPU runner satisfies (bf16 runs on CPU; 2-processes uses gloo on CPU).
CPU_NEEDS = frozenset({"cpu", "2-processes", "bf16"})
YES, NO = "✓", "—"


def notebook_code_hash(path: Path) -> str:
    """sha256 of a notebook's code cells (their sources, in order): outputs and metadata do not count.

    So re-running a lab or regenerating ``labs/`` keeps the hash; changing any code changes it.
    """
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    digest = hashlib.sha256()
    for cell in cells:
        if cell.get("cell_type") == "code":
            source = cell.get("source", "")
            digest.update(("".join(source) if isinstance(source, list) else source).encode("utf-8"))
            digest.update(b"\0")
    return digest.hexdigest()


def lab_notebooks(lab_id: str, root: Path = ROOT) -> list[Path]:
    """The notebooks of one lab that exist: student and solution, English and Chinese."""
    names = (f"{lab_id}.ipynb", f"{lab_id}.zh.ipynb")
    paths = [root / folder / name for folder in ("labs", "solutions") for name in names]
    return [path for path in paths if path.exists()]


def torch_release(version: str | None) -> str | None:
    """``"2.13.0+cpu"`` -> ``"2.13"``; None for None or a version that does not start with X.Y."""
    match = re.match(r"(\d+)\.(\d+)", version or "")
    return f"{match.group(1)}.{match.group(2)}" if match else None


def cpu_run(lab_id: str, root: Path = ROOT) -> str | None:
    """The torch release of the CPU run that produced the stored outputs of every notebook of the lab.

    None when a notebook records no run, a run on another device, or the notebooks disagree.
    """
    releases = set()
    for path in lab_notebooks(lab_id, root):
        meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {}).get("devicekit", {})
        executed = meta.get("executed") or {}
        if executed.get("device") != "cpu":
            return None
        releases.add(torch_release(executed.get("torch")))
    return releases.pop() if len(releases) == 1 and None not in releases else None


def load_gpu_result(path: Path) -> dict[str, Any] | None:
    """The GPU run's result, or None when there is none that counts.

    Counts: a readable file with ``schema`` 1, not a dry run, and a CUDA version (a GPU really ran).
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("schema") != 1 or data.get("dry_run") is not False:
        return None
    if not data.get("cuda") or not isinstance(data.get("labs"), dict):
        return None
    return data


def load_cpu_runs(folder: Path) -> list[dict[str, Any]]:
    """The recorded CPU runs in ``folder`` that count: schema 1, no CUDA, run on the CPU, with lab results."""
    runs = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or data.get("schema") != 1 or data.get("cuda") is not None:
            continue
        if (
            data.get("device") == "cpu"
            and isinstance(data.get("labs"), dict)
            and torch_release(data.get("torch"))
        ):
            runs.append(data)
    return runs


def cuda_verified(lab_id: str, result: dict[str, Any] | None, root: Path = ROOT) -> bool:
    """Whether ``result`` shows this lab, with its current code, passing on CUDA."""
    return lab_passed(lab_id, result, "cuda", root)


def lab_passed(lab_id: str, result: dict[str, Any] | None, device: str, root: Path = ROOT) -> bool:
    """Whether ``result`` (gpu-check's format) shows the lab, with its current code, passing on ``device``."""
    if result is None:
        return False
    entry = result["labs"].get(lab_id)
    if not isinstance(entry, dict) or entry.get("passed") is not True or entry.get("device") != device:
        return False
    ran = entry.get("notebooks") or {}
    current = lab_notebooks(lab_id, root)
    if not current:
        return False
    for path in current:
        recorded = ran.get(path.relative_to(root).as_posix())
        if not isinstance(recorded, dict) or recorded.get("outcome") != "passed":
            return False  # a notebook of this lab did not run there, or did not pass
        if recorded.get("code_sha256") != notebook_code_hash(path):
            return False  # the lab changed after the GPU run
    return True


def _release_key(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split("."))


def cpu_releases(lab_id: str, root: Path = ROOT, runs: Path | None = None) -> list[str]:
    """Every torch release a CPU run verified this lab on, oldest first: the stored outputs' run, and each
    recorded run in ``runs`` (default ``root/results/cpu-runs``) where the lab passed with its current code.
    """
    releases = set()
    stored = cpu_run(lab_id, root)
    if stored:
        releases.add(stored)
    for run in load_cpu_runs(runs if runs is not None else root / CPU_RUNS):
        if lab_passed(lab_id, run, "cpu", root):
            releases.add(torch_release(run["torch"]))
    return sorted(releases, key=_release_key)


def badge(lab_id: str, lang: str, root: Path = ROOT, results: Path | None = None) -> str:
    """The "verified on" text for ``lab_id`` in ``lang`` (``"en"`` or ``"zh"``).

    ``root`` is the course root (``solutions/``, ``labs/``), ``results`` the GPU result file
    (default ``root/results/gpu-check.json``). Raises :class:`course.CourseMetadataError` for a lab
    without a solution notebook, so a wrong id in the site wiring fails the strict build.
    """
    source = root / "solutions" / f"{lab_id}.ipynb"
    if not source.exists():
        raise course.CourseMetadataError(f"no solution notebook for lab {lab_id!r} at {source}")
    needs = set(course.read_metadata(source)["needs"])
    torch_cpu = cpu_releases(lab_id, root)
    cpu = YES if torch_cpu and needs <= CPU_NEEDS else NO
    result = load_gpu_result(results if results is not None else root / RESULTS)
    cuda = NO
    if cuda_verified(lab_id, result, root):
        cuda = YES
        gpu_torch = torch_release(result.get("torch"))
        if gpu_torch and gpu_torch not in torch_cpu:
            cuda += f"（torch {gpu_torch}）" if lang == "zh" else f" (torch {gpu_torch})"
    head = "已验证：" if lang == "zh" else "verified on "
    version = f"torch {', '.join(torch_cpu)} · " if torch_cpu else ""
    return f"{head}{version}CPU {cpu} · CUDA {cuda}"
