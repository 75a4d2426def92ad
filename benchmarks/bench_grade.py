"""Grade a class of 30 mixed submissions with ``devicekit-grade -j 2`` and print the time per submission.

    .venv/bin/python benchmarks/bench_grade.py [--jobs 2] [--size 30] [--keep DIR]

The class is built from ``labs/`` and ``solutions/`` (every lab found, in turn): correct work, untouched
labs, half-done labs, Chinese notebooks, a notebook that hangs in an endless loop, one that kills its
kernel, one that patches the checks, a detached process, a broken upload and a symbolic link. It is
graded by the command as an instructor runs it (a subprocess), and the script prints the wall time, the
time per submission and the per-row durations the grader recorded. Not a test: timings depend on the
machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import nbformat

from course_tools.paths import ROOT
from course_tools.submissions import graded_labs, lab_notebook, solution_notebook, solved_lab, write

HANG = "while True:\n    pass"
DIE = "import os\nos._exit(1)"
PATCH = "import devicekit_labs as _E\n_E._outcome = lambda ex, a, k: (True, 'passed.', '通过。')"
DETACH = (
    "import subprocess, sys\n"
    "subprocess.Popen(['setsid', sys.executable, '-c', 'import time; time.sleep(120)'], "
    "start_new_session=True)"
)


def _with_cell(nb: nbformat.NotebookNode, source: str, at: int) -> nbformat.NotebookNode:
    nb.cells.insert(min(at, len(nb.cells)), nbformat.v4.new_code_cell(source))
    return nb


def _half_done(lab: str) -> nbformat.NotebookNode:
    """The lab with only its first solution region filled in."""
    solved, nb = solved_lab(lab), lab_notebook(lab)
    for mine, theirs in zip(nb.cells, solved.cells, strict=False):
        if mine.source != theirs.source:
            mine.source = theirs.source
            break
    return nb


def build_class(folder: Path, size: int) -> Counter:
    labs = graded_labs()
    kinds: Counter = Counter()
    makers = [
        ("correct", lambda lab: solved_lab(lab)),
        ("correct-zh", lambda lab: solved_lab(lab, "zh")),
        ("untouched", lambda lab: lab_notebook(lab)),
        ("half-done", _half_done),
        ("correct", lambda lab: solved_lab(lab)),
        ("hangs", lambda lab: _with_cell(solved_lab(lab), HANG, len(solved_lab(lab).cells) // 2)),
        ("dies", lambda lab: _with_cell(solved_lab(lab), DIE, len(solved_lab(lab).cells) // 2)),
        ("patches-checks", lambda lab: _with_cell(lab_notebook(lab), PATCH, 3)),
        ("detaches", lambda lab: _with_cell(solved_lab(lab), DETACH, 3)),
        ("published-solution", lambda lab: solution_notebook(lab)),
    ]
    for n in range(size - 2):
        kind, make = makers[n % len(makers)]
        lab = labs[n % len(labs)]
        suffix = ".zh" if kind.endswith("-zh") else ""
        write(make(lab), folder / f"{lab}-student{n:02d}-{kind}{suffix}.ipynb")
        kinds[kind] += 1
    (folder / "broken-upload.ipynb").write_text('{"cells": [', encoding="utf-8")
    (folder / "link.ipynb").symlink_to(next(folder.glob("*-correct.ipynb")).name)
    kinds.update(["broken-upload", "symlink"])
    return kinds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", "-j", type=int, default=2)
    parser.add_argument("--size", type=int, default=30)
    parser.add_argument("--timeout", type=int, default=60, help="per-cell limit passed to the grader")
    parser.add_argument("--keep", type=Path, help="build and grade in this folder and keep it")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-grade-") as tmp:
        root = args.keep or Path(tmp)
        subs, out = root / "submissions", root / "grades"
        kinds = build_class(subs, args.size)
        print(f"class of {sum(kinds.values())}: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        cmd = [sys.executable, "-m", "devicekit_grade", "--out", str(out), "-j", str(args.jobs), "-q"]
        cmd += ["--timeout", str(args.timeout), "--notebook-timeout", str(6 * args.timeout), str(subs)]
        started = time.monotonic()
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        wall = time.monotonic() - started
        if done.returncode != 0:
            print(done.stdout, done.stderr, sep="\n")
            return done.returncode
        rows = json.loads((out / "grades.json").read_text(encoding="utf-8"))
    ran = [r for r in rows if r["duration_s"] > 0]
    durations = sorted(r["duration_s"] for r in ran)
    print(f"-j {args.jobs} on {os.cpu_count()} CPUs: {wall:.0f} s wall for {len(rows)} rows")
    print(f"  {wall / len(rows):.1f} s per submission (wall / rows)")
    if durations:
        print(
            f"  per notebook run: median {statistics.median(durations):.1f} s, "
            f"max {durations[-1]:.1f} s ({len(durations)} notebooks run)"
        )
    print("  statuses: " + ", ".join(f"{s} {n}" for s, n in Counter(r["status"] for r in rows).most_common()))
    for row in sorted(ran, key=lambda r: -r["duration_s"])[:5]:
        print(f"  slowest: {Path(row['file']).name}: {row['status']} {row['duration_s']:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
