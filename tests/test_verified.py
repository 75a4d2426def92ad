"""The "verified on" badge (course_tools.generate.verified): it claims exactly the runs that happened.

Fake courses and fake GPU result files in a temporary folder. The result files are built with the very
functions ``scripts/gpu-check`` uses to write them, so the format the badge reads and the format the GPU
run writes cannot drift apart unnoticed.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
from pathlib import Path

import pytest

from course_tools import course, torch_versions
from course_tools.generate import verified
from course_tools.paths import ROOT

LAB = "01-fake"


def _load_gpu_check():
    loader = importlib.machinery.SourceFileLoader("gpu_check", str(ROOT / "scripts" / "gpu-check"))
    spec = importlib.util.spec_from_loader("gpu_check", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


gpu_check = _load_gpu_check()


def _notebook(path: Path, needs: list[str], code: str = "x = 1") -> None:
    lab_id = path.name.split(".")[0]
    nb = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# A lab"]},
            {"cell_type": "code", "metadata": {}, "source": [code], "outputs": [], "execution_count": None},
        ],
        "metadata": {
            "devicekit": {
                "lab": lab_id,
                "needs": needs,
                "minutes": {"cpu": 5, "gpu": 5},
                "short": "Fake",
                "executed": {"torch": "2.13.0+cpu", "device": "cpu"},
            }
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb), encoding="utf-8")


@pytest.fixture
def course_root(tmp_path, monkeypatch) -> Path:
    """A course with one lab (student and solution, en and zh), executed on CPU with torch 2.13."""
    for folder in ("labs", "solutions"):
        for name in (f"{LAB}.ipynb", f"{LAB}.zh.ipynb"):
            _notebook(tmp_path / folder / name, ["cpu"])
    return tmp_path


def _result(root: Path, monkeypatch, *, outcome: str = "passed", **top) -> Path:
    """Write results/gpu-check.json as gpu-check would after nbval reported ``outcome`` for every cell."""
    monkeypatch.setattr(gpu_check, "ROOT", root)
    notebooks = [p.relative_to(root).as_posix() for p in verified.lab_notebooks(LAB, root)]
    labs = {LAB: {"needs": ["cpu"], "ran": True, "reason": "", "notebooks": notebooks}}
    report = {
        f"{rel}::Cell {i}": {"outcome": outcome, "reason": "", "seconds": 0.1}
        for rel in notebooks
        for i in (0, 1)
    }
    gpu_check.lab_results(labs, report, top.pop("device", "cuda"))
    data = {"schema": 1, "dry_run": False, "torch": "2.13.0+cu130", "cuda": "13.0", "labs": labs, **top}
    path = root / "results" / "gpu-check.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_without_a_gpu_result_cuda_is_not_claimed(course_root):
    assert verified.badge(LAB, "en", root=course_root) == "verified on torch 2.13 · CPU ✓ · CUDA —"
    assert verified.badge(LAB, "zh", root=course_root) == "已验证：torch 2.13 · CPU ✓ · CUDA —"


def test_a_real_gpu_run_that_passed_gives_cuda_check(course_root, monkeypatch):
    _result(course_root, monkeypatch)
    assert verified.badge(LAB, "en", root=course_root) == "verified on torch 2.13 · CPU ✓ · CUDA ✓"
    assert verified.badge(LAB, "zh", root=course_root) == "已验证：torch 2.13 · CPU ✓ · CUDA ✓"


def test_a_gpu_run_on_another_torch_release_names_it(course_root, monkeypatch):
    _result(course_root, monkeypatch, torch="2.11.0+cu130")
    assert (
        verified.badge(LAB, "en", root=course_root) == "verified on torch 2.13 · CPU ✓ · CUDA ✓ (torch 2.11)"
    )
    assert verified.badge(LAB, "zh", root=course_root) == "已验证：torch 2.13 · CPU ✓ · CUDA ✓（torch 2.11）"


@pytest.mark.parametrize(
    "change",
    [
        {"dry_run": True},  # gpu-check --dry-run: CUDA was hidden
        {"cuda": None},  # no CUDA version: no GPU ran
        {"schema": 2},  # a format this code does not know
        {"device": "cpu"},  # the lab ran, but on the CPU
    ],
    ids=["dry-run", "no-cuda", "unknown-schema", "ran-on-cpu"],
)
def test_runs_that_are_not_gpu_runs_claim_nothing(course_root, monkeypatch, change):
    _result(course_root, monkeypatch, **change)
    assert verified.badge(LAB, "en", root=course_root).endswith("CUDA —")


def test_a_lab_that_failed_on_the_gpu_is_not_verified(course_root, monkeypatch):
    _result(course_root, monkeypatch, outcome="failed")
    assert verified.badge(LAB, "en", root=course_root).endswith("CUDA —")


def test_a_lab_changed_after_the_gpu_run_is_not_verified(course_root, monkeypatch):
    _result(course_root, monkeypatch)
    _notebook(course_root / "solutions" / f"{LAB}.zh.ipynb", ["cpu"], code="x = 2")
    assert verified.badge(LAB, "en", root=course_root).endswith("CUDA —")


def test_new_outputs_alone_keep_the_verification(course_root, monkeypatch):
    _result(course_root, monkeypatch)
    path = course_root / "labs" / f"{LAB}.ipynb"
    nb = json.loads(path.read_text(encoding="utf-8"))
    nb["cells"][1]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["re-run\n"]}]
    nb["cells"][1]["execution_count"] = 7
    path.write_text(json.dumps(nb), encoding="utf-8")
    assert verified.badge(LAB, "en", root=course_root).endswith("CUDA ✓")


def test_a_notebook_the_gpu_run_did_not_cover_is_not_verified(course_root, monkeypatch):
    path = _result(course_root, monkeypatch)
    data = json.loads(path.read_text(encoding="utf-8"))
    del data["labs"][LAB]["notebooks"][f"labs/{LAB}.zh.ipynb"]
    path.write_text(json.dumps(data), encoding="utf-8")
    assert verified.badge(LAB, "en", root=course_root).endswith("CUDA —")


def test_an_unreadable_result_file_claims_nothing(course_root):
    (course_root / "results").mkdir()
    (course_root / "results" / "gpu-check.json").write_text("{not json", encoding="utf-8")
    assert verified.badge(LAB, "en", root=course_root).endswith("CUDA —")


def test_an_explicit_result_path_is_read(course_root, monkeypatch, tmp_path_factory):
    path = _result(course_root, monkeypatch)
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "gpu.json"
    path.rename(elsewhere)
    assert verified.badge(LAB, "en", root=course_root).endswith("CUDA —")
    assert verified.badge(LAB, "en", root=course_root, results=elsewhere).endswith("CUDA ✓")


def test_a_lab_that_needs_cuda_is_not_verified_on_cpu(course_root):
    for folder in ("labs", "solutions"):
        _notebook(course_root / folder / f"{LAB}.ipynb", ["cuda"])
    assert verified.badge(LAB, "en", root=course_root) == "verified on torch 2.13 · CPU — · CUDA —"


@pytest.mark.parametrize("needs", [["cpu", "bf16"], ["cpu", "2-processes"]])
def test_needs_a_cpu_runner_meets_still_count_as_cpu(course_root, needs):
    _notebook(course_root / "solutions" / f"{LAB}.ipynb", needs)
    assert " · CPU ✓ · " in verified.badge(LAB, "en", root=course_root)


def test_without_a_recorded_cpu_run_nothing_is_claimed_for_cpu(course_root):
    path = course_root / "labs" / f"{LAB}.zh.ipynb"
    nb = json.loads(path.read_text(encoding="utf-8"))
    nb["metadata"]["devicekit"]["executed"] = {"torch": "2.13.0+cu130", "device": "cuda"}
    path.write_text(json.dumps(nb), encoding="utf-8")
    assert verified.badge(LAB, "en", root=course_root) == "verified on CPU — · CUDA —"
    assert verified.badge(LAB, "zh", root=course_root) == "已验证：CPU — · CUDA —"


def test_an_unknown_lab_fails_loudly(course_root):
    with pytest.raises(course.CourseMetadataError, match="no solution notebook"):
        verified.badge("99-nope", "en", root=course_root)


@pytest.mark.parametrize(
    ("version", "release"), [("2.13.0+cpu", "2.13"), ("2.11.0+cu130", "2.11"), ("3.0", "3.0"), ("dev", None)]
)
def test_torch_release(version, release):
    assert verified.torch_release(version) == release


def _cpu_run(root: Path, monkeypatch, torch: str, outcome: str = "passed") -> Path:
    """Record a CPU run on ``torch`` as ``gpu-check --dry-run --results results/cpu-runs/...`` writes it."""
    monkeypatch.setattr(gpu_check, "ROOT", root)
    notebooks = [p.relative_to(root).as_posix() for p in verified.lab_notebooks(LAB, root)]
    labs = {LAB: {"needs": ["cpu"], "ran": True, "reason": "", "notebooks": notebooks}}
    report = {
        f"{rel}::Cell {i}": {"outcome": outcome, "reason": "", "seconds": 0.1}
        for rel in notebooks
        for i in (0, 1)
    }
    gpu_check.lab_results(labs, report, "cpu")
    data = {"schema": 1, "dry_run": True, "torch": torch, "cuda": None, "device": "cpu", "labs": labs}
    path = root / verified.CPU_RUNS / f"torch-{verified.torch_release(torch)}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_a_recorded_cpu_run_on_another_release_is_named(course_root, monkeypatch):
    _cpu_run(course_root, monkeypatch, "2.14.1+cu130")
    assert verified.badge(LAB, "en", root=course_root) == "verified on torch 2.13, 2.14 · CPU ✓ · CUDA —"
    assert verified.badge(LAB, "zh", root=course_root) == "已验证：torch 2.13, 2.14 · CPU ✓ · CUDA —"


def test_every_verified_release_is_named_oldest_first(course_root, monkeypatch):
    for torch in ("2.15.0+cpu", "2.7.1+cpu", "2.10.0+cpu"):
        _cpu_run(course_root, monkeypatch, torch)
    _result(course_root, monkeypatch, torch="2.11.0+cu130")
    assert verified.badge(LAB, "en", root=course_root) == (
        "verified on torch 2.7, 2.10, 2.13, 2.15 · CPU ✓ · CUDA ✓ (torch 2.11)"
    )


def test_a_gpu_release_a_cpu_run_verified_is_not_named_twice(course_root, monkeypatch):
    _cpu_run(course_root, monkeypatch, "2.11.0+cpu")
    _result(course_root, monkeypatch, torch="2.11.0+cu130")
    assert verified.badge(LAB, "en", root=course_root) == "verified on torch 2.11, 2.13 · CPU ✓ · CUDA ✓"


@pytest.mark.parametrize(
    "spoil",
    ["failed", "changed", "cuda", "schema", "unreadable"],
)
def test_cpu_runs_that_do_not_show_the_lab_passing_name_nothing(course_root, monkeypatch, spoil):
    path = _cpu_run(course_root, monkeypatch, "2.14.1", outcome="failed" if spoil == "failed" else "passed")
    data = json.loads(path.read_text(encoding="utf-8"))
    if spoil == "changed":
        _notebook(course_root / "labs" / f"{LAB}.ipynb", ["cpu"], code="x = 3")
    elif spoil == "cuda":
        data["cuda"] = "13.0"
    elif spoil == "schema":
        data["schema"] = 2
    if spoil == "unreadable":
        path.write_text("{oops", encoding="utf-8")
    else:
        path.write_text(json.dumps(data), encoding="utf-8")
    assert verified.badge(LAB, "en", root=course_root).startswith("verified on torch 2.13 · ")


def test_the_real_course_badges():
    """Every lab of this course, in both languages, with no fake results: the badge names the release the
    stored outputs come from (whatever torch is installed) and every recorded CPU run the lab passed."""
    pinned = torch_versions.pinned()
    result = verified.load_gpu_result(ROOT / verified.RESULTS)
    runs = verified.load_cpu_runs(ROOT / verified.CPU_RUNS)
    for lab in course.labs():
        en, zh = verified.badge(lab.id, "en"), verified.badge(lab.id, "zh")
        releases = verified.cpu_releases(lab.id)
        assert pinned in releases, f"{lab.id}: its stored outputs come from torch {pinned}"
        expected = {pinned} | {
            verified.torch_release(run["torch"]) for run in runs if verified.lab_passed(lab.id, run, "cpu")
        }
        assert set(releases) == expected
        assert en.startswith(f"verified on torch {', '.join(releases)} · CPU ")
        assert zh.startswith(f"已验证：torch {', '.join(releases)} · CPU ")
        if result is None:  # no real GPU run committed: CUDA is never claimed
            assert en.endswith("CUDA —") and zh.endswith("CUDA —")


def test_a_cell_whose_real_output_differs_from_the_simulated_one_is_listed_with_nbval_s_text(
    course_root, monkeypatch
):
    monkeypatch.setattr(gpu_check, "ROOT", course_root)
    notebooks = [p.relative_to(course_root).as_posix() for p in verified.lab_notebooks(LAB, course_root)]
    labs = {LAB: {"needs": ["cpu"], "ran": True, "reason": "", "notebooks": notebooks}}
    first = notebooks[0]
    detail = "Cell outputs differ\n- Expected all tensors ... cuda:0\n+ Expected all tensors ... cuda:1"
    report = {f"{rel}::Cell 0": {"outcome": "passed", "reason": "", "seconds": 0.1} for rel in notebooks}
    report[f"{first}::Cell 1"] = {"outcome": "failed", "reason": "differ", "seconds": 0.1, "detail": detail}
    gpu_check.lab_results(labs, report, "cuda")
    record = labs[LAB]["notebooks"][first]
    assert record["outcome"] == "failed"
    assert record["differences"] == [{"cell": f"{first}::Cell 1", "detail": detail}]
    assert all("differences" not in labs[LAB]["notebooks"][rel] for rel in notebooks[1:])
