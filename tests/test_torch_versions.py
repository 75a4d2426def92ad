"""The torch versions the course names come from one place, the Makefile (course_tools/torch_versions.py).

The range admits the newest releases (2.14, 2.15), every page that tells a learner which torch to install
states that same range, and `make setup`'s CPU-only choice takes only a CPU build.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from course_tools import torch_versions
from course_tools.paths import DOCS, ROOT

#: Where a learner, a contributor or an instructor is told which torch to install (the grader's container
#: too: a stale range there once kept the grader at torch < 2.14).
PAGES = [
    ROOT / "README.md",
    DOCS / "running.md",
    DOCS / "running.zh.md",
    ROOT / "grading" / "Dockerfile",
]
SPEC = re.compile(r"torch(?:>=|==|<)[0-9][^\"`\s]*")


def _release(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def test_the_range_admits_the_newest_releases_and_keeps_the_floor():
    assert torch_versions.course_spec() == f"torch>={torch_versions.floor()},<{torch_versions.ceiling()}"
    assert _release(torch_versions.floor()) == (2, 7), "the lessons need torch.accelerator (2.7)"
    assert _release(torch_versions.ceiling()) > (2, 15), "PyTorch 2.14.1 and 2.15.0 are released"
    assert (
        _release(torch_versions.floor())
        <= _release(torch_versions.pinned())
        < _release(torch_versions.ceiling())
    )


def test_the_fallback_is_the_pinned_release():
    assert torch_versions.makefile_value("TORCH_FALLBACK_SPEC") == "torch==$(TORCH_PINNED).*"


def test_the_pinned_release_is_the_one_the_stored_outputs_come_from():
    executed = set()
    for path in sorted((ROOT / "solutions").glob("*.ipynb")):
        meta = json.loads(path.read_text(encoding="utf-8"))["metadata"]["devicekit"]["executed"]
        executed.add(".".join(meta["torch"].split(".")[:2]))
    assert executed == {torch_versions.pinned()}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_page_states_the_makefiles_range(page):
    text = page.read_text(encoding="utf-8")
    found = {spec for spec in SPEC.findall(text) if not spec.startswith("torch==")}
    assert found == {torch_versions.course_spec()}, f"{page.name} states {found}"
    pinned = {spec for spec in SPEC.findall(text) if spec.startswith("torch==")}
    # the pinned release as a range, a newer one to try, or its CPU wheel by label (a flat mirror, pip -f)
    cpu_wheel = re.compile(rf"torch=={re.escape(torch_versions.pinned())}\.\d+\+cpu")
    assert {p for p in pinned if not cpu_wheel.fullmatch(p)} <= {
        f"torch=={torch_versions.pinned()}.*",
        "torch==2.14.*",
    }, pinned


@pytest.mark.parametrize(
    ("report", "chosen"),
    [
        ({"install": [{"metadata": {"name": "torch", "version": "2.15.0+cpu"}}]}, "2.15.0+cpu"),
        ({"install": [{"metadata": {"name": "filelock", "version": "3"}},
                      {"metadata": {"name": "Torch", "version": "2.13.0+cpu"}}]}, "2.13.0+cpu"),
        ({"install": [{"metadata": {"name": "torch", "version": "2.14.1"}}]}, None),  # the CUDA build
        ({"install": [{"metadata": {"name": "torch", "version": "2.15.0+cu130"}}]}, None),
        ({"install": []}, None),
    ],
    ids=["cpu", "cpu-among-others", "default-index-cuda", "cuda-label", "nothing"],
)  # fmt: skip
def test_only_a_cpu_build_is_chosen(report, chosen):
    assert torch_versions.cpu_build(report) == chosen


def test_the_script_make_setup_runs_needs_only_the_standard_library():
    """`make setup` runs it before the course tools (or anything but pip) are installed."""
    script = ROOT / "tools" / "course_tools" / "torch_versions.py"
    report = json.dumps({"install": [{"metadata": {"name": "torch", "version": "2.15.0+cpu"}}]})
    done = subprocess.run(
        [sys.executable, "-S", "-I", str(script), "cpu-build"], input=report, capture_output=True, text=True
    )
    assert (done.returncode, done.stdout.strip()) == (0, "2.15.0+cpu"), done.stderr
    for bad in (
        "",
        "not json",
        json.dumps({"install": [{"metadata": {"name": "torch", "version": "2.14.1"}}]}),
    ):
        done = subprocess.run(
            [sys.executable, "-S", "-I", str(script), "cpu-build"], input=bad, capture_output=True, text=True
        )
        assert (done.returncode, done.stdout) == (1, "")
