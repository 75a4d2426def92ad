"""The simulated-GPU page shows what the dry run really prints: its worked example is run here, in both
languages, and the page's output block must be what the run printed, line for line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from course_tools.paths import ROOT

pytestmark = pytest.mark.integration

PAGES = {"en": ROOT / "docs" / "simulate.md", "zh": ROOT / "docs" / "simulate.zh.md"}


def _blocks(page: str, kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", page, re.S)


def _run(script: str, tmp_path: Path, lang: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "train.py").write_text(script, encoding="utf-8")
    env = {**os.environ, "DEVICEKIT_LANG": lang}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    return subprocess.run(
        [sys.executable, "-m", "devicekit.dryrun", "train.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_worked_example_prints_what_the_page_shows(tmp_path: Path, lang: str) -> None:
    page = PAGES[lang].read_text(encoding="utf-8")
    script = next(b for b in _blocks(page, "python") if "never moved" in b)
    (shown,) = _blocks(page, "text")
    run = _run(script, tmp_path, lang)
    assert run.returncode == 1, run.stderr
    printed = run.stderr[run.stderr.index("RuntimeError:") :]
    assert printed.rstrip("\n") == shown.rstrip("\n")


def test_the_fix_the_page_names_makes_the_run_clean(tmp_path: Path) -> None:
    page = PAGES["en"].read_text(encoding="utf-8")
    script = next(b for b in _blocks(page, "python") if "never moved" in b)
    line, fix = re.search(r"Fix line (\d+) \(`(.*?)`\)", page).groups()
    lines = script.splitlines()
    assert "never moved" in lines[int(line) - 1]
    lines[int(line) - 1] = fix
    run = _run("\n".join(lines) + "\n", tmp_path, "en")
    assert run.returncode == 0, run.stderr
    assert "devicekit-dryrun: no device error on 1 simulated GPU(s) (H200)." in page
    assert "devicekit-dryrun: no device error on 1 simulated GPU(s) (H200)." in run.stderr
    zh = PAGES["zh"].read_text(encoding="utf-8")
    assert f"把第 {line} 行改成 `{fix}`" in zh
