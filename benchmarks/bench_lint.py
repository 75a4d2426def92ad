"""Benchmark: devicekit-lint on real buggy snippets, their fixed twins and clean code (not a test).

Prints, per rule and per scenario:
- recall on `benchmarks/lint_eval/buggy/` (each file names, in its header, the default rule that should
  find its bug; a file counts as found when that rule fires, and "any" when any default rule does);
- silence on `benchmarks/lint_eval/fixed/` (no default finding at all);
- findings per 1,000 lines on clean code (folders given with `--clean`, e.g. checkouts of nanoGPT,
  pytorch/examples and pytorch-image-models; see `benchmarks/lint_eval/README.md`);
- the CPU time devicekit-lint and pyflakes take on the same files, in the same run (best of `--repeat`,
  alternating), both including the parse;
- the wall time of `python -m devicekit.lint` and `python -m pyflakes` as fresh processes, start-up
  included, on one small file and on all the files.

Files whose name ends in `_nb.py` are linted as notebook code (rule DK214 needs that).

Run:  .venv/bin/python benchmarks/bench_lint.py --clean /tmp/clean/nanoGPT /tmp/clean/examples ...
Goals (issue 24): recall >= 80 %, silent on >= 90 % of the fixed twins, <= 0.5 findings per kLOC on clean
code, time <= 1x pyflakes. Exit status 1 when a goal is missed.
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from devicekit.lint import DEFAULT_CODES, RULES, lint_source
from devicekit.lint.engine import iter_files

EVAL = Path(__file__).with_name("lint_eval")
_EXPECT = re.compile(r"the default rule that should find it: (DK\d{3})")
GOALS = {"recall": 0.80, "silent": 0.90, "per_kloc": 0.5, "time_ratio": 1.0}


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _codes(path: Path, source: str) -> list[str]:
    notebook = path.name.endswith("_nb.py")
    return [f.code for f in lint_source(source, str(path), DEFAULT_CODES, notebook=notebook)]


def evaluate_pairs() -> tuple[dict, list[str]]:
    """Recall on the buggy files, silence on the fixed twins, per rule and per scenario."""
    rows: dict[str, Counter] = defaultdict(Counter)
    scenarios: dict[int, Counter] = defaultdict(Counter)
    misses: list[str] = []
    for buggy in sorted((EVAL / "buggy").glob("*.py")):
        fixed = EVAL / "fixed" / buggy.name
        source = _read(buggy)
        match = _EXPECT.search(source)
        if match is None or not fixed.exists():
            raise SystemExit(f"{buggy}: no expected rule in its header, or no fixed twin")
        expected = match.group(1)
        scenario = RULES[expected].scenario
        found = _codes(buggy, source)
        loud = _codes(fixed, _read(fixed))
        for table in (rows[expected], scenarios[scenario]):
            table["pairs"] += 1
            table["found"] += expected in found
            table["any"] += bool(found)
            table["silent"] += not loud
        if expected not in found:
            misses.append(f"missed  {buggy.name}: expected {expected}, got {sorted(set(found)) or 'nothing'}")
        if loud:
            misses.append(f"noisy   fixed/{fixed.name}: {sorted(set(loud))}")
    return {"rules": rows, "scenarios": scenarios}, misses


def evaluate_clean(folders: list[str]) -> tuple[int, Counter, list[str]]:
    lines = 0
    per_rule: Counter = Counter()
    where: list[str] = []
    for path in iter_files(folders):
        if not path.endswith(".py"):
            continue
        source = Path(path).read_text(encoding="utf-8", errors="replace")
        lines += source.count("\n") + 1
        try:
            findings = lint_source(source, path, DEFAULT_CODES)
        except SyntaxError:
            continue
        for f in findings:
            per_rule[f.code] += 1
            where.append(f"{path}:{f.line}:{f.col}: {f.code}")
    return lines, per_rule, where


def _sources(folders: list[str]) -> list[tuple[str, str]]:
    paths = [str(p) for p in sorted(EVAL.glob("*/*.py"))] + [
        p for p in iter_files(folders) if p.endswith(".py")
    ]
    out = []
    for path in paths:
        source = Path(path).read_text(encoding="utf-8", errors="replace")
        try:
            ast.parse(source)
        except SyntaxError:
            continue
        out.append((path, source))
    return out


def time_against_pyflakes(sources: list[tuple[str, str]], repeat: int) -> tuple[float, float | None]:
    """Best CPU time (`time.process_time`, so other processes on a shared machine count less) of
    devicekit-lint and of pyflakes on the same sources, the two runs alternating; both parse the source."""
    try:
        from pyflakes.api import check
        from pyflakes.reporter import Reporter
    except ImportError:
        check = None

    def run_lint() -> None:
        for path, source in sources:
            lint_source(source, path, DEFAULT_CODES)

    def run_pyflakes() -> None:
        sink = io.StringIO()
        reporter = Reporter(sink, sink)
        for path, source in sources:
            check(source, path, reporter)

    def timed(fn) -> float:
        start = time.process_time()
        fn()
        return time.process_time() - start

    lint_times, flake_times = [], []
    for _ in range(repeat):
        lint_times.append(timed(run_lint))
        if check is not None:
            flake_times.append(timed(run_pyflakes))
    return min(lint_times), (min(flake_times) if flake_times else None)


def time_end_to_end(paths: list[str], repeat: int) -> tuple[float, float | None, float, float | None]:
    """Best wall time, and best CPU time (user + system of the child process, which other processes on a
    shared machine disturb less), of `python -m devicekit.lint PATHS` and of `python -m pyflakes PATHS`,
    each a fresh process (interpreter start and imports included), the two alternating, after a first run
    of each that writes the bytecode of their modules (as an install does; `PYTHONDONTWRITEBYTECODE` is
    not passed on). Returns (lint wall, pyflakes wall, lint CPU, pyflakes CPU)."""
    import os
    import resource
    import subprocess

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parents[1] / "src"), env.get("PYTHONPATH", "")])
    env.pop("PYTHONDONTWRITEBYTECODE", None)

    def timed(module: str) -> tuple[float, float]:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", module, *paths],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return wall, cpu

    try:
        import pyflakes  # noqa: F401
    except ImportError:
        alone = [timed("devicekit.lint") for _ in range(repeat)]
        return min(w for w, _ in alone), None, min(c for _, c in alone), None
    timed("devicekit.lint"), timed("pyflakes")  # warm: bytecode written, files in the page cache
    lint_times, flake_times = [], []
    for _ in range(repeat):
        lint_times.append(timed("devicekit.lint"))
        flake_times.append(timed("pyflakes"))
    return (
        min(w for w, _ in lint_times),
        min(w for w, _ in flake_times),
        min(c for _, c in lint_times),
        min(c for _, c in flake_times),
    )


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:5.1f} %" if whole else "    -  "


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clean", nargs="*", default=[], help="folders of clean PyTorch code")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--show", action="store_true", help="list misses, noisy twins and clean findings")
    args = parser.parse_args(argv)

    tables, misses = evaluate_pairs()
    print("Buggy snippets (recall) and fixed twins (silence), per rule:")
    print(f"  {'rule':7} {'scen':>4} {'pairs':>5} {'found':>8} {'any rule':>9} {'silent':>8}")
    total: Counter = Counter()
    for code in sorted(tables["rules"]):
        row = tables["rules"][code]
        total.update(row)
        print(
            f"  {code:7} {RULES[code].scenario:>4} {row['pairs']:>5} {_pct(row['found'], row['pairs']):>8} "
            f"{_pct(row['any'], row['pairs']):>9} {_pct(row['silent'], row['pairs']):>8}"
        )
    print(
        f"  {'all':7} {'':>4} {total['pairs']:>5} {_pct(total['found'], total['pairs']):>8} "
        f"{_pct(total['any'], total['pairs']):>9} {_pct(total['silent'], total['pairs']):>8}"
    )
    print("Per scenario:")
    for scenario in sorted(tables["scenarios"]):
        row = tables["scenarios"][scenario]
        print(
            f"  scenario {scenario:>2}: {row['pairs']:>2} pairs, found {_pct(row['found'], row['pairs'])}, "
            f"silent on fixed {_pct(row['silent'], row['pairs'])}"
        )
    if args.show:
        print("\n".join(f"  {line}" for line in misses))

    per_kloc = None
    if args.clean:
        lines, per_rule, where = evaluate_clean(args.clean)
        count = sum(per_rule.values())
        per_kloc = 1000 * count / lines if lines else 0.0
        print(f"Clean code: {lines} lines, {count} findings, {per_kloc:.3f} per 1,000 lines")
        for code, n in sorted(per_rule.items()):
            print(f"  {code} (scenario {RULES[code].scenario}): {n} ({1000 * n / lines:.3f} per kLOC)")
        if args.show:
            print("\n".join(f"  {line}" for line in where))

    sources = _sources(args.clean)
    total_lines = sum(s.count("\n") + 1 for _, s in sources)
    lint_time, flakes_time = time_against_pyflakes(sources, args.repeat)
    print(
        f"Time on {len(sources)} files ({total_lines} lines), best CPU time of {args.repeat}: "
        f"devicekit-lint {lint_time * 1000:.1f} ms",
        end="",
    )
    ratio = None
    if flakes_time is None:
        print(", pyflakes not installed")
    else:
        ratio = lint_time / flakes_time
        print(f", pyflakes {flakes_time * 1000:.1f} ms, ratio {ratio:.2f}x")

    small = sorted(EVAL.glob("fixed/*.py"))[0]
    for label, paths in (("one small file", [str(small)]), ("every file", [p for p, _ in sources])):
        lint_wall, flakes_wall, lint_cpu, flakes_cpu = time_end_to_end(paths, args.repeat)
        for kind, lint_s, flakes_s in (("wall", lint_wall, flakes_wall), ("CPU", lint_cpu, flakes_cpu)):
            line = f"End to end ({label}), best {kind} time of {args.repeat}: devicekit-lint {lint_s:.2f} s"
            if flakes_s is None:
                print(f"{line}, pyflakes not installed")
            else:
                print(f"{line}, pyflakes {flakes_s:.2f} s, ratio {lint_s / flakes_s:.2f}x")

    recall = total["found"] / total["pairs"]
    silent = total["silent"] / total["pairs"]
    results = [
        ("recall", recall >= GOALS["recall"], f"{recall:.1%} (goal >= 80 %)"),
        ("silent on fixed", silent >= GOALS["silent"], f"{silent:.1%} (goal >= 90 %)"),
    ]
    if per_kloc is not None:
        results.append(("clean", per_kloc <= GOALS["per_kloc"], f"{per_kloc:.3f}/kLOC (goal <= 0.5)"))
    if ratio is not None:
        results.append(("speed", ratio <= GOALS["time_ratio"], f"{ratio:.2f}x pyflakes (goal <= 1x)"))
    for name, ok, text in results:
        print(f"{'met ' if ok else 'MISSED'} {name}: {text}")
    return 0 if all(ok for _, ok, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
