"""CPU seconds of grading one correct notebook per lab: the grader and every process under it (worker,
kernel, ranks, fork server, evaluator), counted by a cgroup v1 ``cpuacct`` group the command runs in.

    sudo .venv/bin/python benchmarks/grade_cpu.py 08-multi-gpu 10-compile 11-sharded [--reps 2]
    sudo .venv/bin/python benchmarks/grade_cpu.py 06-checkpoints --copies 6 -j 2  # a class: CPU per notebook

Needs root and ``/sys/fs/cgroup/cpuacct`` (a group ``devicekit-grade-cpu`` is made there and removed at
the end). Wall time on a shared machine says little; the CPU of a process tree does, and ``getrusage`` of
the children cannot give it (bubblewrap's processes are killed, not all waited for). Each run includes the
grader's fixed cost (its start, the evaluator zygote, the preflight: 2.2–2.4 s on the course machine), the
same before and after a change. Prints the load average at the start of each run. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from course_tools.submissions import solved_lab, write

GROUP = Path("/sys/fs/cgroup/cpuacct/devicekit-grade-cpu")


def _usage() -> float:
    return int((GROUP / "cpuacct.usage").read_text()) / 1e9


def _enter() -> None:  # in the child, before exec: it and all it starts are counted
    (GROUP / "cgroup.procs").write_text(str(os.getpid()))


def grade_one(lab: str, timeout: int, copies: int = 1, jobs: int = 1) -> str:
    """Grade ``copies`` correct notebooks of ``lab`` in one run at ``-j jobs``; one line: status, score,
    row duration (of the first), CPU of the whole run and per notebook, wall, load."""
    with tempfile.TemporaryDirectory(prefix="grade-cpu-") as tmp:
        subs = Path(tmp, "subs")
        subs.mkdir()
        for n in range(copies):
            write(solved_lab(lab), subs / f"{lab}-student{n}.ipynb")
        load, before, started = os.getloadavg()[0], _usage(), time.monotonic()
        cmd = [sys.executable, "-m", "devicekit_grade", "--out", str(Path(tmp, "out")), "-j", str(jobs)]
        done = subprocess.run(
            [*cmd, "--timeout", str(timeout), str(subs)], capture_output=True, text=True, preexec_fn=_enter
        )
        wall = time.monotonic() - started
        time.sleep(0.5)  # the box's last processes are being killed
        cpu = _usage() - before
        if done.returncode:
            return f"{lab}: exit {done.returncode}: {done.stderr[-500:]}"
        rows = json.loads(Path(tmp, "out", "grades.json").read_text(encoding="utf-8"))
        row = rows[0]
        scores = sorted({str(r.get("score")) for r in rows})
        return (
            f"{lab}: {row['status']} {'/'.join(scores)} ({len(rows)} rows), row {row['duration_s']:.1f} s, "
            f"whole run {cpu:.2f} s CPU ({cpu / copies:.2f} per notebook), {wall:.1f} s wall, load {load:.1f}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("labs", nargs="+")
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--timeout", type=int, default=60, help="per-cell limit passed to the grader")
    parser.add_argument("--copies", type=int, default=1, help="correct notebooks per run (one class)")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="the grader's -j")
    args = parser.parse_args(argv)
    GROUP.mkdir(exist_ok=True)
    try:
        for _ in range(args.reps):
            for lab in args.labs:
                print(grade_one(lab, args.timeout, args.copies, args.jobs), flush=True)
    finally:
        time.sleep(1)
        GROUP.rmdir()  # empty once every process of the runs has ended
    return 0


if __name__ == "__main__":
    sys.exit(main())
