"""nbval over the labs on simulated GPUs against the old ``meta`` stand-in path, in one run (issue 39).

Issue 39's goal: running the labs under `devicekit.simulate` costs at most 1.3x what the ``meta`` path cost.
Both sides run here, one after the other, on the same machine: this checkout (simulated GPUs) and the
commit given with ``--before`` (default ``b31bf62``, main before the labs moved to the simulator), checked
out into a temporary git worktree and run with its own ``src``/``tools``/``tests`` on ``PYTHONPATH`` and
this venv's Python (no install). Each side is ``pytest`` with the repository's own nbval options over the
English lab notebooks (``labs/NN-*.ipynb``, not the Chinese twins, not ``solutions/``), one process, no
xdist, so the times compare kernels and cells rather than scheduling.

    .venv/bin/python benchmarks/bench_labs_nbval.py                 # all English labs, both sides
    .venv/bin/python benchmarks/bench_labs_nbval.py --only 01 03     # some labs

It prints seconds per side and the ratio, and whether each side's nbval passed. One run, no repetitions:
numbers on a loaded machine move by tens of percent; read the ratio, and run it again when in doubt.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEFORE = "b31bf62"


def notebooks(tree: Path, only: list[str]) -> list[str]:
    found = sorted(p for p in (tree / "labs").glob("[0-9][0-9]-*.ipynb") if not p.name.endswith(".zh.ipynb"))
    return [str(p.relative_to(tree)) for p in found if not only or p.name[:2] in only]


def run_side(tree: Path, only: list[str]) -> tuple[float, int, str]:
    """(seconds, pytest's exit status, its last line) for nbval over ``tree``'s English labs."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(tree / d) for d in ("src", "tools", "tests"))}
    env.pop("DEVICEKIT_NBVAL_ALL", None)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:xdist",
        "-p",
        "no:cacheprovider",
        *notebooks(tree, only),
    ]
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    lines = (done.stdout + done.stderr).strip().splitlines()
    return seconds, done.returncode, lines[-1] if lines else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BEFORE, help=f"the meta path's commit (default {BEFORE})")
    parser.add_argument("--only", nargs="*", default=[], metavar="NN", help="lab numbers, e.g. 01 03")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-labs-") as scratch:
        old = Path(scratch) / "before"
        add = ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(old), args.before]
        subprocess.run(add, check=True)
        try:
            meta_s, meta_rc, meta_last = run_side(old, args.only)
            sim_s, sim_rc, sim_last = run_side(ROOT, args.only)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)], check=False)
    print(f"meta stand-in ({args.before}): {meta_s:7.1f} s  nbval rc={meta_rc}  {meta_last}")
    print(f"simulated GPUs (this tree):   {sim_s:7.1f} s  nbval rc={sim_rc}  {sim_last}")
    print(f"ratio simulated / meta: {sim_s / meta_s:.2f}x (goal <= 1.3x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
