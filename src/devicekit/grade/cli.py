"""The ``devicekit-grade`` command line (also ``python -m devicekit.grade``).

``devicekit-grade --out DIR [--timeout SECONDS] NOTEBOOK_OR_FOLDER...``

Exit status: 0 when every submission got a row (whatever its status or score), 2 when the grader could not
run at all (no submissions found, an input path that does not exist, ``--out`` not writable), 130 when
interrupted (the rows finished so far are written).

Notebooks are graded ``--jobs`` at a time by threads that each wait on a worker subprocess (see
`devicekit.grade.run`); the grader's own process never runs submitted code.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from devicekit.grade.report import write_all
from devicekit.grade.run import Grade, Options, grade_file, kill_all

USAGE_ERROR = 2


class UsageError(Exception):
    """The grader cannot run as asked; the message says why and what to do."""


def find_submissions(
    inputs: Sequence[str], exclude: Sequence[Path] = (), ignored: list[str] | None = None
) -> list[tuple[Path, str]]:
    """The notebooks to grade, as (path, name shown in the grades), in a stable order.

    A file is graded whatever its extension (so a broken upload still gets a row); a folder contributes
    every ``*.ipynb`` below it, except in hidden folders (``.ipynb_checkpoints``) and the output folder.
    The other files found in the folders are appended to ``ignored``, so that the instructor can see a
    notebook uploaded as ``alice.ipynb.txt`` instead of losing it.
    """
    excluded = [p.resolve() for p in exclude]
    found: list[tuple[Path, str]] = []
    seen: set[Path] = set()
    for text in inputs:
        given = Path(text)
        if not given.exists():
            raise UsageError(f"{text}: no such file or folder")
        if given.is_dir():
            candidates = []
            for path in sorted(given.rglob("*")):
                relative = path.relative_to(given)
                if any(part.startswith(".") for part in relative.parts) or not path.is_file():
                    continue
                if any(path.resolve().is_relative_to(out) for out in excluded):
                    continue
                if path.suffix != ".ipynb":
                    if ignored is not None and "__pycache__" not in relative.parts:
                        ignored.append(str(given / relative))
                    continue
                candidates.append((path, str(given / relative)))
        else:
            candidates = [(given, text)]
        for path, shown in candidates:
            key = path.resolve()
            if key not in seen:
                seen.add(key)
                found.append((path, shown))
    if not found:
        raise UsageError(
            "no submissions found in "
            + ", ".join(inputs)
            + ": give notebooks (.ipynb) or folders that hold them"
        )
    return found


def _prepare_out(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot write there ({exc.strerror or exc})") from None


class Progress:
    """Progress on stderr: a bar on a terminal (tqdm when installed, else a counter redrawn in place), one
    line per submission when stderr is not a terminal (a CI log, a file: a redrawn bar would only add noise
    there), nothing when quiet."""

    def __init__(self, total: int, quiet: bool) -> None:
        self.total, self.done, self.quiet = total, 0, quiet
        self.tty = sys.stderr.isatty()
        self.bar: Any = None
        if not quiet and self.tty:
            try:
                from tqdm import tqdm
            except ImportError:
                pass
            else:
                self.bar = tqdm(total=total, unit="nb", file=sys.stderr, desc="grading")

    def update(self, grade: Grade) -> None:
        self.done += 1
        score = "" if grade.score is None else f" {grade.score}/{grade.max}"
        line = f"[{self.done}/{self.total}] {grade.file}: {grade.status}{score} ({grade.duration_s:.1f} s)"
        if self.quiet:
            return
        if self.bar is not None:
            self.bar.set_postfix_str(f"{grade.status}{score}", refresh=False)
            self.bar.update(1)
        elif self.tty:
            sys.stderr.write("\r\033[K" + line[:150])
            sys.stderr.flush()
        else:
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.tty and not self.quiet and self.done:
            sys.stderr.write("\n")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="devicekit-grade",
        description="Grade devicekit lab notebooks with the self-checks the learners run. Writes "
        "DIR/grades.csv, DIR/grades.json and DIR/report.html. Runs the submitted code: use a machine or "
        "account you would let a student's code run on.",
    )
    parser.add_argument(
        "inputs", nargs="+", metavar="NOTEBOOK_OR_FOLDER", help="submissions, or folders of them"
    )
    parser.add_argument("--out", required=True, type=Path, metavar="DIR", help="folder for the grades")
    parser.add_argument(
        "--timeout", type=int, default=60, metavar="SECONDS",
        help="per-cell limit; a longer cell is interrupted and the notebook goes on (default 60)",
    )  # fmt: skip
    parser.add_argument(
        "--notebook-timeout", type=int, metavar="SECONDS",
        help="limit for a whole notebook, after which it is stopped (default: 10 x --timeout)",
    )  # fmt: skip
    jobs = min(4, max(1, (os.cpu_count() or 2) // 2))
    parser.add_argument(
        "--jobs", "-j", type=int, default=jobs, help=f"notebooks run at once (default {jobs})"
    )
    parser.add_argument("--kernel", default="python3", help="Jupyter kernel to run them in (default python3)")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress output")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the grader; returns the exit status (see the module docstring)."""
    args = _parser().parse_args(argv)
    if args.timeout < 1 or (args.notebook_timeout is not None and args.notebook_timeout < 1) or args.jobs < 1:
        print("devicekit-grade: --timeout, --notebook-timeout and --jobs must be at least 1", file=sys.stderr)
        return USAGE_ERROR
    out: Path = args.out
    ignored: list[str] = []
    try:
        submissions = find_submissions(args.inputs, exclude=[out], ignored=ignored)
        _prepare_out(out)
    except UsageError as exc:
        print(f"devicekit-grade: {exc}", file=sys.stderr)
        return USAGE_ERROR
    if ignored and not args.quiet:
        shown = ", ".join(ignored[:5]) + (f" and {len(ignored) - 5} more" if len(ignored) > 5 else "")
        print(
            f"devicekit-grade: not graded, not .ipynb: {shown} (name a file on the command line to grade it)",
            file=sys.stderr,
        )
    options = Options(
        cell_timeout=args.timeout,
        notebook_timeout=args.notebook_timeout or 10 * args.timeout,
        kernel=args.kernel,
        exclude=(out,),
    )
    # Rows stay in the order the submissions were found; the files are rewritten (atomically) after each one,
    # so that an interrupted run keeps what it finished. Only this thread writes them.
    grades: list[Grade | None] = [None] * len(submissions)
    progress = Progress(len(submissions), args.quiet)

    def save() -> None:
        write_all(out, [g for g in grades if g is not None])

    pool = ThreadPoolExecutor(max_workers=args.jobs)
    try:
        futures = {
            pool.submit(grade_file, path, shown, options): i for i, (path, shown) in enumerate(submissions)
        }
        for future in as_completed(futures):
            grade = future.result()
            grades[futures[future]] = grade
            save()
            progress.update(grade)
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)
        kill_all()
        progress.close()
        save()
        print(f"\ndevicekit-grade: interrupted; the grades finished so far are in {out}", file=sys.stderr)
        return 130
    except OSError as exc:  # the output folder became unwritable (disk full, removed...)
        pool.shutdown(wait=False, cancel_futures=True)
        kill_all()
        progress.close()
        print(f"devicekit-grade: cannot write the grades to {out}: {exc}", file=sys.stderr)
        return USAGE_ERROR
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    progress.close()
    done = [g for g in grades if g is not None]
    counts = ", ".join(f"{status} {n}" for status, n in Counter(g.status for g in done).most_common())
    if not args.quiet:
        print(f"{len(done)} submission(s): {counts}.")
        print(f"Grades in {out / 'grades.csv'} and {out / 'grades.json'}, report in {out / 'report.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
