"""Where a graded notebook's CPU seconds go: per cell, and per check's probe, in a kernel started as the
grader starts one (the grader's prepared copy of a correct submission, its setup cell first).

    .venv/bin/python benchmarks/profile_lab_cpu.py 10-compile [11-sharded ...] [--lang zh]

Prints, per lab, the kernel's start (CPU of the kernel process before its first cell), each code cell's
CPU seconds (the kernel and the processes it started and waited for: ``/proc/<pid>/stat`` utime, stime,
cutime, cstime) with its wall seconds and first line, and then each exercise's probe run on the solved
notebook's answer, as the grader's answer cell runs it. No sandbox: bubblewrap's own cost is not in these
figures, nor the evaluator's judges (milliseconds in a child of the evaluator zygote, which preloads Dynamo:
a judge that builds an optimizer imports it otherwise, about 1.4 s; benchmarks/README.md, stop 49). CPU
seconds, not wall, because the course machine's cores are shared. Not a test.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[assignment]  # as the grader's worker does

import nbformat  # noqa: E402
from nbclient import NotebookClient  # noqa: E402

from course_tools.submissions import solved_lab  # noqa: E402
from devicekit_grade import box  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")

#: Appended instead of the grader's answer cell: each probe on the notebook's own answer, with its CPU.
PROBES = """
import resource as _r, time as _t, json as _j
from devicekit_grade._kernel import _load_probes
import devicekit_labs as _dl
def _cpu():
    s, c = _r.getrusage(_r.RUSAGE_SELF), _r.getrusage(_r.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime
_table = _load_probes("", {lab!r})
_targets = {{ex.key: ex.target for ex in _dl.exercises_for({lab!r})}}
_out = {{}}
for _key, _probe in _table.items():
    _c, _w = _cpu(), _t.monotonic()
    _probe(globals()[_targets[_key]])
    _out[_key] = (_cpu() - _c, _t.monotonic() - _w)
print("PROBES " + _j.dumps(_out))
"""


def cpu_of(pid: int) -> float:
    """CPU seconds of ``pid`` and of the children it waited for."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / TICK


class Profiler(NotebookClient):
    """Records each code cell's CPU and wall seconds from the kernel's ``/proc`` entry."""

    def __init__(self, nb: Any, **kw: Any) -> None:
        super().__init__(nb, on_cell_execute=self._start, on_cell_executed=self._end, **kw)
        self.rows: list[tuple[int, float, float, str]] = []
        self.kernel_start = 0.0
        self._mark = (0.0, 0.0)

    def _pid(self) -> int:
        return self.km.provisioner.pid  # type: ignore[union-attr]

    def _start(self, cell: Any, cell_index: int) -> None:
        now = cpu_of(self._pid())
        if not self.rows and not self.kernel_start:
            self.kernel_start = now
        self._mark = (now, time.monotonic())

    def _end(self, cell: Any, cell_index: int, execute_reply: Any) -> None:
        cpu, wall = cpu_of(self._pid()) - self._mark[0], time.monotonic() - self._mark[1]
        first = next((line for line in cell.source.splitlines() if line.strip()), "")
        self.rows.append((cell_index, cpu, wall, first[:70]))


def profile(lab: str, lang: str) -> None:
    nb = solved_lab(lab, lang)
    ready = box.prepare(nb, set(), "", None, lab)
    ready.cells[-1] = nbformat.v4.new_code_cell(PROBES.format(lab=lab))
    with tempfile.TemporaryDirectory(prefix="profile-lab-") as tmp:
        root = Path(tmp)
        for name in ("work", "home", "tmp"):
            (root / name).mkdir()
        env = {
            "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(root / "home"),
            "TMPDIR": str(root / "tmp"),
            "XDG_CACHE_HOME": str(root / "home" / ".cache"),
            "OMP_NUM_THREADS": "1",
            "LANG": "C.UTF-8",
            "DEVICEKIT_LANG": lang,
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(env)
        try:
            client = Profiler(
                ready, timeout=600, kernel_name="python3", allow_errors=True,
                resources={"metadata": {"path": str(root / "work")}},
            )  # fmt: skip
            started = time.monotonic()
            client.execute()
            total = time.monotonic() - started
        finally:
            os.environ.clear()
            os.environ.update(saved)
    print(f"## {lab} ({lang})")
    print(f"kernel start: {client.kernel_start:.2f} s CPU")
    print("| cell | CPU s | wall s | first line |\n|---:|---:|---:|---|")
    for index, cpu, wall, first in client.rows:
        if cpu >= 0.05 or wall >= 0.2:
            print(f"| {index} | {cpu:.2f} | {wall:.2f} | `{first}` |")
    cells = sum(r[1] for r in client.rows)
    whole = cells + client.kernel_start
    print(f"all cells: {cells:.2f} s CPU; kernel start + cells: {whole:.2f} s; wall {total:.1f} s")
    for out in ready.cells[-1].get("outputs", []):
        for line in str(out.get("text", "")).splitlines():
            if line.startswith("PROBES "):
                print("probes (CPU s, wall s): " + line[7:])
            elif out.get("output_type") == "stream":
                print(line)
        if out.get("output_type") == "error":
            print("probe cell error:", out.get("ename"), out.get("evalue"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("labs", nargs="+")
    parser.add_argument("--lang", default="en")
    args = parser.parse_args(argv)
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    for lab in args.labs:
        profile(lab, args.lang)
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
