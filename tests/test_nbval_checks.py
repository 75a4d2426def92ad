"""The nbval plugin really fails a cell that is tagged to raise but no longer raises (or raises another
exception than the one its stored output shows)."""

from __future__ import annotations

import os
import subprocess
import sys

import nbformat

from course_tools.paths import ROOT


def _run_nbval(tmp_path, cell, mode: str = "--nbval-lax"):
    nb = nbformat.v4.new_notebook()
    nb.cells.append(cell)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "probe.ipynb"
    nbformat.write(nb, path)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests")}
    args = [sys.executable, "-m", "pytest", "-p", "nbval_checks", mode, "--nbval-current-env"]
    args += ["-p", "no:xdist", "-p", "no:cacheprovider", "-o", "addopts="]
    args += ["--rootdir", str(tmp_path), str(path)]
    return subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True)


def _cell(source: str, tags: list[str], stored_error: str | None = None):
    cell = nbformat.v4.new_code_cell(source, execution_count=1 if stored_error else None)
    cell.metadata["tags"] = tags
    if stored_error:
        cell.outputs = [nbformat.v4.new_output("error", ename=stored_error, evalue="x", traceback=[])]
    return cell


def test_tagged_cell_that_does_not_raise_fails(tmp_path):
    run = _run_nbval(tmp_path, _cell("x = 1 + 1", ["raises-exception"]))
    assert run.returncode == 1, run.stdout
    assert "tagged raises-exception but did not raise" in run.stdout


def test_tagged_cell_that_raises_passes(tmp_path):
    run = _run_nbval(tmp_path, _cell("raise RuntimeError('boom')", ["raises-exception"]))
    assert run.returncode == 0, run.stdout + run.stderr


def test_tagged_cell_raising_another_exception_type_fails(tmp_path):
    cell = _cell("raise ValueError('no')", ["raises-exception", "nbval-ignore-output"], "RuntimeError")
    run = _run_nbval(tmp_path, cell, mode="--nbval")
    assert run.returncode == 1, run.stdout
    assert "raised ['ValueError'], the stored output shows ['RuntimeError']" in run.stdout


def test_pytorchs_own_error_matches_the_stored_stand_in_error(tmp_path):
    """Stored on the CPU runner from `strict_devices` (DeviceMismatchError); on a GPU PyTorch raises."""
    cell = _cell(
        "raise RuntimeError('on cuda')", ["raises-exception", "nbval-ignore-output"], "DeviceMismatchError"
    )
    run = _run_nbval(tmp_path, cell, mode="--nbval")
    assert run.returncode == 0, run.stdout + run.stderr
