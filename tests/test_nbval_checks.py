"""The nbval plugin really fails a cell that is tagged to raise but no longer raises."""

from __future__ import annotations

import os
import subprocess
import sys

import nbformat
from _paths import ROOT


def _run_nbval(tmp_path, source: str, tags: list[str]):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["tags"] = tags
    nb.cells.append(cell)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "probe.ipynb"
    nbformat.write(nb, path)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests")}
    args = [sys.executable, "-m", "pytest", "-p", "nbval_checks", "--nbval-lax", "--nbval-current-env"]
    args += [
        "-p",
        "no:xdist",
        "-p",
        "no:cacheprovider",
        "-o",
        "addopts=",
        "--rootdir",
        str(tmp_path),
        str(path),
    ]
    return subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True)


def test_tagged_cell_that_does_not_raise_fails(tmp_path):
    run = _run_nbval(tmp_path, "x = 1 + 1", ["raises-exception"])
    assert run.returncode == 1, run.stdout
    assert "tagged raises-exception but did not raise" in run.stdout


def test_tagged_cell_that_raises_passes(tmp_path):
    run = _run_nbval(tmp_path, "raise RuntimeError('boom')", ["raises-exception"])
    assert run.returncode == 0, run.stdout + run.stderr
