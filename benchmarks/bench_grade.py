"""Grade a class of mixed submissions with ``devicekit-grade -j 2`` and print the seconds per submission,
per lab, as a table.

    .venv/bin/python benchmarks/bench_grade.py [--jobs 2] [--size 30] [--keep DIR] [--src DIR] [--labs 01,07]

``--src DIR``: grade with the grader found in ``DIR`` (a ``src/`` folder of another checkout, e.g. main's,
exported with ``git archive``) instead of this one: the "before" column of a change.

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


def build_class(folder: Path, size: int, only: list[str] | None = None) -> Counter:
    labs = [lab for lab in graded_labs() if not only or lab[:2] in only]
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


def grade(subs: Path, out: Path, args: argparse.Namespace, env: dict[str, str]) -> tuple[list, float] | int:
    """Grade ``subs`` into ``out`` as an instructor would; the rows and the wall time, or the exit status."""
    cmd = [sys.executable, "-m", "devicekit_grade", "--out", str(out), "-j", str(args.jobs)]
    cmd += args.extra.split()
    cmd += ["--timeout", str(args.timeout), "--notebook-timeout", str(6 * args.timeout), str(subs)]
    started = time.monotonic()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.monotonic() - started
    if done.returncode != 0:
        print(done.stdout, done.stderr, sep="\n")
        return done.returncode
    return json.loads((out / "grades.json").read_text(encoding="utf-8")), wall


def summary(rows: list[dict], wall: float, jobs: int) -> None:
    ran = [r for r in rows if r["duration_s"] > 0]
    durations = sorted(r["duration_s"] for r in ran)
    print(f"  -j {jobs} on {os.cpu_count()} CPUs: {wall:.0f} s wall for {len(rows)} rows")
    print(f"  {wall / len(rows):.1f} s per submission (wall / rows)")
    if durations:
        print(
            f"  per notebook run: median {statistics.median(durations):.1f} s, "
            f"max {durations[-1]:.1f} s ({len(durations)} notebooks run)"
        )
    print("  statuses: " + ", ".join(f"{s} {n}" for s, n in Counter(r["status"] for r in rows).most_common()))
    for row in sorted(ran, key=lambda r: -r["duration_s"])[:5]:
        print(f"  slowest: {Path(row['file']).name}: {row['status']} {row['duration_s']:.1f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", "-j", type=int, default=2)
    parser.add_argument("--size", type=int, default=30)
    parser.add_argument("--timeout", type=int, default=60, help="per-cell limit passed to the grader")
    parser.add_argument("--keep", type=Path, help="build and grade in this folder and keep it")
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the grader's src/ folder")
    parser.add_argument("--only", help="comma-separated lab numbers, e.g. 01,07 (default: every lab)")
    parser.add_argument("--extra", default="", help="more grader arguments, e.g. --trust-submissions")
    args = parser.parse_args(argv)
    temp = Path(tempfile.gettempdir()).resolve()
    if args.src.resolve().is_relative_to(temp):
        # bubblewrap gives each notebook a /tmp of its own: a grader kept there is invisible to the kernel,
        # whose setup cell then fails at once, and every row would time a run that never happened
        parser.error(f"--src {args.src}: put the other grader outside {temp} (the sandbox hides it)")
    with tempfile.TemporaryDirectory(prefix="bench-grade-") as tmp:
        root = args.keep or Path(tmp)
        subs = root / "submissions"
        kinds = build_class(subs, args.size, args.only.split(",") if args.only else None)
        print(f"class of {sum(kinds.values())}: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
        env = {**os.environ, "PYTHONPATH": str(args.src.resolve())}
        graded = grade(subs, root / "grades", args, env)
        if isinstance(graded, int):
            return graded
        summary(*graded, args.jobs)
    print(per_lab_table(graded[0], args.jobs))
    return 0


def _per_submission(rows: list[dict], jobs: int) -> dict[str, float]:
    """Per lab, the mean grader duration of the notebooks that neither hang nor die, divided by ``jobs``."""
    out = {}
    for lab, group in _by_lab(rows).items():
        normal = [r["duration_s"] for r in group if not any(k in r["file"] for k in ("hangs", "dies"))]
        out[lab] = statistics.mean(normal or [r["duration_s"] for r in group]) / jobs
    return out


def _by_lab(rows: list[dict]) -> dict[str, list[dict]]:
    by_lab: dict[str, list[dict]] = {}
    for row in rows:
        if row.get("lab") and row["duration_s"] > 0:
            by_lab.setdefault(row["lab"], []).append(row)
    return by_lab


def per_lab_table(rows: list[dict], jobs: int) -> str:
    """Markdown table: per lab, the notebooks run, the median and worst seconds per notebook (the grader's
    own duration of each row), and seconds per submission at ``-j jobs`` (`_per_submission`)."""
    per = _per_submission(rows, jobs)
    lines = [
        f"| lab | notebooks | median s | max s | s per submission at -j {jobs} |",
        "|---|---:|---:|---:|---:|",
    ]
    for lab, group in sorted(_by_lab(rows).items()):
        times = sorted(r["duration_s"] for r in group)
        lines.append(
            f"| {lab} | {len(group)} | {statistics.median(times):.1f} | {times[-1]:.1f} | {per[lab]:.1f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
