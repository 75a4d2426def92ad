"""The PyTorch versions the course names, read from the one place that states them: the Makefile.

* ``TORCH_SPEC``: the range the course declares (``torch>=2.7,<2.16``): its floor is what the lessons need
  (``torch.accelerator`` with ``check_available=``, 2.7), its ceiling admits the newest releases.
* ``TORCH_PINNED``: the release the notebooks' stored outputs come from (``make labs`` ran on it), which
  ``make setup`` falls back to where PyTorch's CPU index does not answer (``TORCH_FALLBACK_SPEC``).

Everything else that states a range (README, the "running the labs" pages, the notebooks' first cell, the
lab zips' README, the workflows) is generated from these values or checked against them by
``tests/test_torch_versions.py``.

Run as a script (``make setup`` does, before the course tools are installed, so it imports only the
standard library), ``python tools/course_tools/torch_versions.py cpu-build < report.json`` prints the
torch version that ``pip install --dry-run --report -`` would install when it is a CPU-only build
(``+cpu``), and nothing otherwise.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

MAKEFILE = Path(__file__).resolve().parents[2] / "Makefile"


def makefile_value(name: str, makefile: Path = MAKEFILE) -> str:
    """The value of ``NAME ?= value`` in the Makefile; ValueError when it has none."""
    match = re.search(rf"^{re.escape(name)} \?= (.+)$", makefile.read_text(encoding="utf-8"), re.MULTILINE)
    if not match:
        raise ValueError(f"{makefile} sets no {name}")
    return match.group(1).strip()


def course_spec(makefile: Path = MAKEFILE) -> str:
    """The course's torch range as pip reads it: ``torch>=2.7,<2.16``."""
    return makefile_value("TORCH_SPEC", makefile)


def floor(makefile: Path = MAKEFILE) -> str:
    """The oldest release the course supports (``2.7``): the range's ``>=`` bound."""
    match = re.search(r">=(\d+\.\d+)", course_spec(makefile))
    if not match:
        raise ValueError(f"TORCH_SPEC {course_spec(makefile)!r} has no >= floor")
    return match.group(1)


def ceiling(makefile: Path = MAKEFILE) -> str:
    """The first release the range excludes (``2.16``): its ``<`` bound."""
    match = re.search(r"<(\d+\.\d+)", course_spec(makefile))
    if not match:
        raise ValueError(f"TORCH_SPEC {course_spec(makefile)!r} has no < ceiling")
    return match.group(1)


def pinned(makefile: Path = MAKEFILE) -> str:
    """The release the stored outputs come from and CI's pinned job runs (``2.13``)."""
    return makefile_value("TORCH_PINNED", makefile)


def cpu_build(report: dict[str, Any]) -> str | None:
    """The torch version in a ``pip install --dry-run --report`` report when it is a CPU-only build.

    PyTorch's CPU-only wheels carry the local label ``+cpu``; the Linux wheels of the default index
    (CUDA builds that pull several GB of ``nvidia-*`` packages) carry none. None when the report installs
    no torch or a torch of another build.
    """
    for item in report.get("install", []):
        meta = item.get("metadata", {})
        if str(meta.get("name", "")).lower() == "torch":
            version = str(meta.get("version", ""))
            return version if version.endswith("+cpu") else None
    return None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args != ["cpu-build"]:
        # standard library only (no devicekit yet when make setup runs this): both languages by hand
        print(
            "usage: torch_versions.py cpu-build < pip-report.json\n"
            "用法：torch_versions.py cpu-build < pip-report.json",
            file=sys.stderr,
        )
        return 2
    try:
        report = json.load(sys.stdin)
    except ValueError:
        return 1  # pip wrote no report (the index did not answer): no CPU build to offer
    version = cpu_build(report) if isinstance(report, dict) else None
    if version:
        print(version)
    return 0 if version else 1


if __name__ == "__main__":
    sys.exit(main())
