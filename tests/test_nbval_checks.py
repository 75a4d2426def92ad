"""The nbval plugin really fails a cell that is tagged to raise but no longer raises (or raises another
exception than the one its stored output shows), and skips a Chinese twin only where its code is the
English notebook's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from course_tools.paths import ROOT


def _cell(source: str, tags: list[str], stored_error: str | None = None):
    cell = nbformat.v4.new_code_cell(source, execution_count=1 if stored_error else None)
    cell.metadata["tags"] = tags
    if stored_error:
        cell.outputs = [nbformat.v4.new_output("error", ename=stored_error, evalue="x", traceback=[])]
    return cell


#: The notebooks here import nothing: each starts its kernel as an interpreter of its own (1 s), not from a
#: kernel zygote that imports torch and runs a meta op first (4 s per pytest process; the zygote has tests of
#: its own, tests/test_kernel_zygote.py). What these tests check does not depend on the kernel's origin.
ONE_CELL_KERNELS = {"DEVICEKIT_NBVAL_FRESH_KERNELS": "1"}

#: One one-cell notebook per case, and the nbval mode it runs under: {case: (mode, cell)}.
CASES = {
    "does-not-raise": ("--nbval-lax", lambda: _cell("x = 1 + 1", ["raises-exception"])),
    "raises": ("--nbval-lax", lambda: _cell("raise RuntimeError('boom')", ["raises-exception"])),
    "raises-another-type": (
        "--nbval",
        lambda: _cell("raise ValueError('no')", ["raises-exception", "nbval-ignore-output"], "RuntimeError"),
    ),
    # stored on the CPU runner from `strict_devices` (DeviceMismatchError); on a GPU PyTorch raises
    "pytorch-vs-stand-in": (
        "--nbval",
        lambda: _cell(
            "raise RuntimeError('on cuda')",
            ["raises-exception", "nbval-ignore-output"],
            "DeviceMismatchError",
        ),
    ),
}


@pytest.fixture(scope="module")
def nbval_outcomes(tmp_path_factory) -> dict[str, list[tuple[str, str]]]:
    """Every case run by the real plugin: one pytest process per mode over that mode's notebooks (a kernel
    per notebook); {case: [(outcome, message) per collected cell]} from the JUnit report."""
    import xml.etree.ElementTree as ET

    outcomes: dict[str, list[tuple[str, str]]] = {case: [] for case in CASES}
    for mode in sorted({mode for mode, _ in CASES.values()}):
        folder = tmp_path_factory.mktemp(mode.strip("-"))
        for case, (case_mode, make) in CASES.items():
            if case_mode == mode:
                nb = nbformat.v4.new_notebook(cells=[make()])
                nb.metadata["kernelspec"] = {
                    "name": "python3",
                    "display_name": "Python 3",
                    "language": "python",
                }
                nbformat.write(nb, folder / f"{case}.ipynb")
        env = {**os.environ, "PYTHONPATH": str(ROOT / "tests"), **ONE_CELL_KERNELS}
        args = [sys.executable, "-m", "pytest", "-p", "nbval_checks", mode, "--nbval-current-env"]
        args += ["-p", "no:xdist", "-p", "no:cacheprovider", "-o", "addopts=", "--junitxml", "report.xml"]
        args += ["--rootdir", str(folder), "."]
        run = subprocess.run(args, cwd=folder, env=env, capture_output=True, text=True)
        assert (folder / "report.xml").exists(), run.stdout + run.stderr
        for case_el in ET.parse(folder / "report.xml").iter("testcase"):
            case = Path(case_el.get("classname", "")).name.removesuffix(".ipynb")
            assert case in CASES, case_el.attrib
            bad = case_el.find("failure")
            bad = case_el.find("error") if bad is None else bad  # (an Element without children is falsy)
            skipped = case_el.find("skipped")
            if bad is not None:
                outcomes[case].append(("failed", (bad.get("message") or "") + (bad.text or "")))
            elif skipped is not None:
                outcomes[case].append(("skipped", skipped.get("message") or ""))
            else:
                outcomes[case].append(("passed", ""))
    return outcomes


@pytest.mark.integration
def test_tagged_cell_that_does_not_raise_fails(nbval_outcomes):
    ((outcome, message),) = nbval_outcomes["does-not-raise"]
    assert outcome == "failed" and "tagged raises-exception but did not raise" in message, message


@pytest.mark.integration
def test_tagged_cell_that_raises_passes(nbval_outcomes):
    # exactly one cell, and it passed: it ran (not skipped, not uncollected)
    assert nbval_outcomes["raises"] == [("passed", "")]


@pytest.mark.integration
def test_tagged_cell_raising_another_exception_type_fails(nbval_outcomes):
    ((outcome, message),) = nbval_outcomes["raises-another-type"]
    assert outcome == "failed", message
    assert "raised ['ValueError'], the stored output shows ['RuntimeError']" in message


@pytest.mark.integration
def test_pytorchs_own_error_matches_the_stored_stand_in_error(nbval_outcomes):
    """Stored on the CPU runner from `strict_devices` (DeviceMismatchError); on a GPU PyTorch raises."""
    assert nbval_outcomes["pytorch-vs-stand-in"] == [("passed", "")]


# --- Chinese twins: skipped where their code cells are the English twin's ---------------------------------


def _probe(path, source: str) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


def test_a_course_twin_with_the_same_code_is_skipped_and_says_why():
    from nbval_checks import RUN_ALL, twin_skip_reason

    reason = twin_skip_reason(ROOT / "labs" / "01-devices.zh.ipynb")
    assert reason and "01-devices.ipynb" in reason and "tests/test_parity.py" in reason and RUN_ALL in reason
    assert twin_skip_reason(ROOT / "solutions" / "01-devices.zh.ipynb")
    assert twin_skip_reason(ROOT / "labs" / "01-devices.ipynb") is None  # English notebooks always run


def test_a_twin_with_other_code_or_outside_the_course_folders_runs(tmp_path):
    from nbval_checks import twin_skip_reason

    _probe(tmp_path / "labs" / "a.ipynb", 'x = 1\nprint("done")')
    _probe(tmp_path / "labs" / "a.zh.ipynb", 'x = 1  # 注释\nprint("完成")')
    assert twin_skip_reason(tmp_path / "labs" / "a.zh.ipynb")  # comments and translated strings aside
    _probe(tmp_path / "labs" / "a.zh.ipynb", 'x = 2\nprint("完成")')
    assert twin_skip_reason(tmp_path / "labs" / "a.zh.ipynb") is None
    _probe(tmp_path / "notes" / "a.ipynb", "x = 1")
    _probe(tmp_path / "notes" / "a.zh.ipynb", "x = 1")
    assert twin_skip_reason(tmp_path / "notes" / "a.zh.ipynb") is None
    assert twin_skip_reason(tmp_path / "labs" / "missing.zh.ipynb") is None  # no English twin


@pytest.mark.integration
def test_nbval_skips_a_same_code_twin_unless_asked_for(tmp_path):
    """Three real runs: over the folder (the twin with the same code skipped, the other runs), with
    DEVICEKIT_NBVAL_ALL=1 (it runs), and with the twin named on the command line (it runs)."""
    labs = tmp_path / "labs"
    _probe(labs / "same.ipynb", 'print("done")')
    _probe(labs / "same.zh.ipynb", 'print("完成")')
    _probe(labs / "other.ipynb", "x = 1")
    _probe(labs / "other.zh.ipynb", "x = 2")

    def nbval(*args: str, **env: str) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-m", "pytest", "-p", "nbval_checks", "--nbval-lax", "--nbval-current-env"]
        cmd += [
            "-p",
            "no:xdist",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=",
            "-rs",
            "--rootdir",
            str(tmp_path),
        ]
        full_env = {**os.environ, "PYTHONPATH": str(ROOT / "tests"), **ONE_CELL_KERNELS, **env}
        full_env.pop("DEVICEKIT_NBVAL_ALL", None) if not env else None
        return subprocess.run([*cmd, *args], cwd=tmp_path, env=full_env, capture_output=True, text=True)

    folder = nbval("labs", "-k", "zh")
    assert folder.returncode == 0, folder.stdout + folder.stderr
    assert "1 passed, 1 skipped" in folder.stdout, folder.stdout
    assert "labs/same.zh.ipynb runs the same code cells as same.ipynb" in folder.stdout, folder.stdout
    every = nbval("labs", "-k", "same and zh", DEVICEKIT_NBVAL_ALL="1")
    assert "1 passed" in every.stdout and "skipped" not in every.stdout, every.stdout
    named = nbval("labs/same.zh.ipynb")
    assert "1 passed" in named.stdout and "skipped" not in named.stdout, named.stdout
