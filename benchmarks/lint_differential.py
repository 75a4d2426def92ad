"""A differential run of two linters on the same code: the findings the old one has and the new one lacks
(within one line), and the other way round. Round 4 of issue 43 used it against b31bf62's surface rules.

    git worktree add /tmp/old b31bf62
    python benchmarks/lint_differential.py --old /tmp/old/src --new src FOLDER...

Each FOLDER is linted as one project (`python -m devicekit.lint --format json FOLDER`), once with each
`PYTHONPATH`. Prints the counts, then one line per finding that only one side has.

With `--exact` (for a change that must not change anything, such as a speed-up), it compares instead the
whole output, byte for byte: standard output, standard error and exit status of `--format json`, `sarif`
and `text`, each with `--lang en` and `--lang zh` (`PYTHONHASHSEED=0`), and prints each that differs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys


def lint(src: str, target: str) -> list[dict]:
    """The JSON findings of the devicekit found under `src` on `target`."""
    env = dict(os.environ, PYTHONPATH=src)
    done = subprocess.run(
        [sys.executable, "-m", "devicekit.lint", "--format", "json", target],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode == 2 and not done.stdout.strip():
        raise SystemExit(f"{target}: {done.stderr.strip()}")
    return json.loads(done.stdout or "[]")


_EXACT_MODES = [(fmt, lang) for fmt in ("json", "sarif", "text") for lang in ("en", "zh")]


def run_exactly(src: str, target: str, fmt: str, lang: str) -> tuple[int, str, str]:
    """Exit status, standard output and standard error of the devicekit under `src` on `target`."""
    env = dict(os.environ, PYTHONPATH=src, PYTHONHASHSEED="0")
    done = subprocess.run(
        [sys.executable, "-m", "devicekit.lint", "--format", fmt, "--lang", lang, target],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


def exact(old: str, new: str, targets: list[str]) -> int:
    """How many (target, format, language) give a different output under `old` and `new`."""
    differ = 0
    for target in targets:
        for fmt, lang in _EXACT_MODES:
            before, after = run_exactly(old, target, fmt, lang), run_exactly(new, target, fmt, lang)
            if before != after:
                differ += 1
                print(f"DIFFERS {target} --format {fmt} --lang {lang}")
    print(f"{len(targets) * len(_EXACT_MODES)} outputs compared, {differ} differ")
    return differ


def near(finding: dict, others: set[tuple[str, int]]) -> bool:
    return any((finding["path"], finding["line"] + d) in others for d in (-1, 0, 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, help="the src folder of the old devicekit")
    parser.add_argument("--new", required=True, help="the src folder of the new devicekit")
    parser.add_argument("--exact", action="store_true", help="compare every output byte for byte")
    parser.add_argument("targets", nargs="+")
    args = parser.parse_args()
    if args.exact:
        sys.exit(1 if exact(args.old, args.new, args.targets) else 0)
    old_all: list[dict] = []
    new_all: list[dict] = []
    only_old: list[dict] = []
    only_new: list[dict] = []
    for target in args.targets:
        old, new = lint(args.old, target), lint(args.new, target)
        old_all += old
        new_all += new
        old_keys = {(f["path"], f["line"]) for f in old}
        new_keys = {(f["path"], f["line"]) for f in new}
        only_old += [f for f in old if not near(f, new_keys)]
        only_new += [f for f in new if not near(f, old_keys)]
    print(f"old {len(old_all)} new {len(new_all)} old-only {len(only_old)} new-only {len(only_new)}")
    for side, found in (("OLD-ONLY", only_old), ("NEW-ONLY", only_new)):
        for f in found:
            print(side, f"{f['path']}:{f['line']}", f["code"], f["message"][:240])


if __name__ == "__main__":
    main()
