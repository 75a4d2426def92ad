"""The mainland-China pages and the grader's Dockerfile agree on how to use Alibaba Cloud's PyTorch mirror.

Its wheels sit directly in ``https://mirrors.aliyun.com/pytorch-wheels/cpu/`` (``.../cpu/torch-…+cpu-….whl``):
a flat list of files, which pip reads with ``-f`` / ``--find-links``, not a PEP 503 index (that would have a
``torch/`` page). We cannot reach the mirror from our machines, so the pages say "not verified"; what the
tests hold is that every mention uses it one way, and pins the CPU wheel: the files ``-f`` finds compete with
the index's, and on Linux the index's torch is the multi-GB CUDA build (issue 40).
"""

from __future__ import annotations

import re

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from course_tools.paths import ROOT

MIRROR = "mirrors.aliyun.com/pytorch-wheels"
PLACES = [
    "docs/running.md",
    "docs/running.zh.md",
    "docs/instructors/grading.md",
    "docs/instructors/grading.zh.md",
    "grading/README.md",
    "grading/Dockerfile",
]
#: How the mirror may be named: after -f / --find-links, or as the Dockerfile's TORCH_FIND_LINKS.
AS_FILE_LIST = re.compile(rf"(?:-f |--find-links[ =]|TORCH_FIND_LINKS=)https://{re.escape(MIRROR)}")
AS_INDEX = re.compile(
    rf"(?:--index-url[ =]|-i |TORCH_INDEX_URL=|TORCH_CPU_INDEX=)https://{re.escape(MIRROR)}"
)


def mentions() -> list[tuple[str, str]]:
    """Every command (a line, with its continuation lines) that names the mirror, with where it is."""
    found = []
    for place in PLACES:
        text = (ROOT / place).read_text(encoding="utf-8").replace("\\\n", " ")
        found += [(f"{place}:{n}", line) for n, line in enumerate(text.splitlines(), 1) if MIRROR in line]
    return found


def test_the_mirror_is_named_where_expected():
    places = {where.split(":")[0] for where, _ in mentions()}
    assert places == set(PLACES)
    assert not AS_INDEX.search((ROOT / "Makefile").read_text(encoding="utf-8"))  # TORCH_CPU_INDEX is an index


@pytest.mark.parametrize(("where", "line"), mentions(), ids=[w for w, _ in mentions()])
def test_the_mirror_is_a_file_list_everywhere_and_the_cpu_wheel_is_pinned(where, line):
    assert not AS_INDEX.search(line), f"{where} uses the file list as an index: {line.strip()}"
    if "pip install" in line or "--build-arg" in line:
        assert AS_FILE_LIST.search(line), where
        assert re.search(r"torch==[\d.]+\+cpu", line), f"{where} does not pin the CPU wheel: {line.strip()}"


def test_the_dockerfile_refuses_the_file_list_without_a_pinned_cpu_wheel():
    dockerfile = (ROOT / "grading" / "Dockerfile").read_text(encoding="utf-8")
    assert 'case "$TORCH_SPEC" in *+cpu*) ;;' in dockerfile
    assert '--find-links "$TORCH_FIND_LINKS" "$TORCH_SPEC"' in dockerfile


def test_why_the_pin_matters():
    """A version range admits PyPI's torch 2.13.0 (the CUDA build on Linux); ``==2.13.0+cpu`` admits only the
    wheel with the local label, which only the CPU file list carries (PEP 440)."""
    cuda_build, cpu_build = Version("2.13.0"), Version("2.13.0+cpu")
    assert cuda_build in SpecifierSet(">=2.7,<2.14") and cpu_build in SpecifierSet(">=2.7,<2.14")
    assert cpu_build in SpecifierSet("==2.13.0+cpu") and cuda_build not in SpecifierSet("==2.13.0+cpu")
