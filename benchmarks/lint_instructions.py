"""Benchmark: instructions (valgrind's count, `Ir`) that devicekit-lint and pyflakes execute on the files of
`bench_lint.py` (not a test).

On a shared machine the CPU times of `bench_lint.py` move by a tenth or more between runs; the number of
instructions a run executes does not depend on what else runs. It is not time (a cache miss costs more
than an add), so `bench_lint.py` stays the measure; this one says which way a change went when the machine
is too busy to tell. Each command runs once under `valgrind --tool=cachegrind --cache-sim=no` (about 50
times slower than without), `PYTHONHASHSEED=0`, with the modules' bytecode written first:

- `python -c pass` (the interpreter's own start);
- `python -m devicekit.lint SMALL` and `python -m pyflakes SMALL`, one small file end to end;
- one process that lints the 190 files one by one with `lint_source` (as `bench_lint.py` times it), one
  that checks them with pyflakes, and one that only reads them (subtracted from both);
- `python -m devicekit.lint FILES` and `python -m pyflakes FILES`, every file end to end.

Run:  python benchmarks/lint_instructions.py --src /path/to/old/src --src src CLEAN_FOLDERS...
(with the folders `bench_lint.py` is given, e.g. checkouts of detr, whisper and yolov5).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
_IR = re.compile(r"I\s+refs:\s+([\d,]+)")

# One pass over the files, in one process: `lint`, `flakes` or nothing (`none`, the baseline).
_IN_PROCESS = textwrap.dedent(
    """
    import io, sys
    sys.path.insert(0, {bench!r})
    import bench_lint
    from devicekit.lint import DEFAULT_CODES, lint_source
    from pyflakes.api import check
    from pyflakes.reporter import Reporter
    sources = bench_lint._sources({folders!r})
    if sys.argv[1] == "lint":
        for path, source in sources:
            lint_source(source, path, DEFAULT_CODES)
    elif sys.argv[1] == "flakes":
        sink = io.StringIO()
        reporter = Reporter(sink, sink)
        for path, source in sources:
            check(source, path, reporter)
    """
)


def instructions(command: list[str], src: str | None = None) -> int:
    """The instructions `command` executes (valgrind cachegrind), with `src` first on `PYTHONPATH`."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if src is not None:
        env["PYTHONPATH"] = os.path.abspath(src)
    subprocess.run(command, env=env, capture_output=True, check=False)  # bytecode written
    done = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null", *command],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    match = _IR.search(done.stderr)
    if match is None:
        raise SystemExit(f"no instruction count from valgrind for {command[:3]}: {done.stderr[-500:]}")
    return int(match.group(1).replace(",", ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", action="append", required=True, help="a devicekit src folder (repeat)")
    parser.add_argument("clean", nargs="*", help="the folders of clean code bench_lint.py is given")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE))
    import bench_lint

    folders = [os.path.abspath(f) for f in args.clean]
    paths = [p for p, _ in bench_lint._sources(folders)]
    small = str(sorted(bench_lint.EVAL.glob("fixed/*.py"))[0])
    script = Path(tempfile.mkdtemp()) / "lint_instructions_pass.py"
    script.write_text(_IN_PROCESS.format(bench=str(HERE), folders=folders), encoding="utf-8")
    py = sys.executable
    try:
        bare = instructions([py, "-c", "pass"])
        flakes_small = instructions([py, "-m", "pyflakes", small])
        flakes_all = instructions([py, "-m", "pyflakes", *paths])
        none = instructions([py, str(script), "none"], args.src[0])
        flakes_pass = instructions([py, str(script), "flakes"], args.src[0]) - none
        print(
            f"{len(paths)} files; millions of instructions (pyflakes {flakes_pass / 1e6:.0f} in one process)"
        )
        print(f"  python -c pass: {bare / 1e6:.1f}; pyflakes, one small file: {flakes_small / 1e6:.1f}")
        for src in args.src:
            lint_small = instructions([py, "-m", "devicekit.lint", small], src)
            baseline = instructions([py, str(script), "none"], src)
            lint_pass = instructions([py, str(script), "lint"], src) - baseline
            lint_all = instructions([py, "-m", "devicekit.lint", *paths], src)
            print(
                f"  {src}: one small file {lint_small / 1e6:.1f} ({lint_small / flakes_small:.2f}x); "
                f"in one process {lint_pass / 1e6:.0f} ({lint_pass / flakes_pass:.2f}x); "
                f"every file end to end {lint_all / 1e6:.0f} ({lint_all / flakes_all:.2f}x, "
                f"pyflakes {flakes_all / 1e6:.0f})"
            )
    finally:
        script.unlink(missing_ok=True)
        script.parent.rmdir()
    return 0


if __name__ == "__main__":
    sys.exit(main())
