"""Re-run devicekit-lint on the precision sample of issue 43 and list its findings (a benchmark, not a test).

The sample is `benchmarks/lint_eval_fresh/precision_sample.json`: five well-known code bases, each pinned to
a commit with an explicit file list. This script lints exactly those files, each code base as one project
(the linter follows calls between the files of one run), the way a user would, with
`python -m devicekit.lint --format json FILE...` run from the code base's root, and prints one JSON line
per finding, keyed by (repo, file, line, rule).

Why: the findings of one linter commit were judged by hand in `judged-stop46.md`; their raw output is
`findings-main.json`. A later linter run through this script marks each finding `"new": true` when its key
is not in that file, so only the new ones need judging (`--new-only`). Keys use the pinned files' own
line numbers, which do not move between linter versions.

Get the code once (from git mirrors holding the pinned commits, as the `fetch` tool leaves them):

    python benchmarks/lint_precision/run.py --extract --code /work/judge43-code

Then re-run, with the linter of this worktree or another one:

    python benchmarks/lint_precision/run.py --code /work/judge43-code [--linter-src OTHER/src] [--new-only]

`--write-baseline FILE` writes the raw output of this run in the format of `findings-main.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SAMPLE = ROOT / "benchmarks" / "lint_eval_fresh" / "precision_sample.json"
BASELINE = HERE / "findings-main.json"


def short_name(repo: str) -> str:
    """The folder a code base sits in under `--code`: the repository's name without its owner."""
    return repo.split("/")[1]


def load_sample(path: Path) -> list[dict]:
    """The code bases of the sample, each with repo, commit and files[].path."""
    return json.loads(path.read_text(encoding="utf-8"))["code_bases"]


def extract(code_bases: list[dict], code: Path, mirrors: Path) -> None:
    """Write each listed file at its pinned commit from the git mirror `mirrors/owner+name/repo`.

    Only the listed files are written, so a folder never holds more than the sample. The line count of
    each file is checked against the sample, which fails loudly if the mirror holds another version.
    """
    for base in code_bases:
        git_dir = mirrors / base["repo"].replace("/", "+") / "repo"
        for entry in base["files"]:
            blob = subprocess.run(
                ["git", "--git-dir", str(git_dir), "show", f"{base['commit']}:{entry['path']}"],
                capture_output=True,
                check=True,
            ).stdout
            if blob.count(b"\n") != entry["lines"]:
                raise SystemExit(f"{base['repo']}:{entry['path']}: line count differs from the sample")
            target = code / short_name(base["repo"]) / entry["path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(blob)


def nonblank_lines(root: Path, paths: list[str]) -> int:
    """Non-blank lines (comments included) of the listed files: the kLOC the findings are counted per."""
    total = 0
    for rel in paths:
        text = (root / rel).read_text(encoding="utf-8")
        total += sum(1 for line in text.splitlines() if line.strip())
    return total


def lint(python: str, linter_src: Path, root: Path, paths: list[str], select: str | None) -> list[dict]:
    """Run the linter as a user would, from the code base's root, on exactly the listed files."""
    env = dict(os.environ, PYTHONPATH=str(linter_src), DEVICEKIT_LANG="en")
    command = [python, "-m", "devicekit.lint", "--format", "json"]
    if select:
        command += ["--select", select]
    done = subprocess.run(command + paths, cwd=root, env=env, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"devicekit.lint exited {done.returncode} in {root}:\n{done.stderr}")
    return json.loads(done.stdout)


def key(repo: str, finding: dict) -> tuple[str, str, int, str]:
    """(repo, file, line, rule): what identifies a finding across linter versions."""
    path = finding["path"].removeprefix("./")
    return (repo, path, finding["line"], finding["code"])


def known_keys(baseline: Path) -> set[tuple[str, str, int, str]]:
    """The keys of the findings already judged (the raw output kept in `findings-main.json`)."""
    if not baseline.exists():
        return set()
    data = json.loads(baseline.read_text(encoding="utf-8"))
    return {key(base["repo"], f) for base in data["code_bases"] for f in base["findings"]}


def linter_commit(linter_src: Path) -> str:
    """The commit of the checkout the linter is imported from (empty when it is not a git checkout)."""
    done = subprocess.run(["git", "-C", str(linter_src), "rev-parse", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sample", type=Path, default=SAMPLE)
    parser.add_argument("--code", type=Path, required=True, help="folder with one subfolder per code base")
    parser.add_argument("--extract", action="store_true", help="write the listed files first")
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--linter-src", type=Path, default=ROOT / "src")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--select", help="passed on to --select (default: the linter's default rules)")
    parser.add_argument("--baseline", type=Path, default=BASELINE)
    parser.add_argument("--new-only", action="store_true", help="print only findings not in --baseline")
    parser.add_argument("--write-baseline", type=Path, help="write this run's raw output here")
    args = parser.parse_args(argv)

    code_bases = load_sample(args.sample)
    if args.extract:
        extract(code_bases, args.code, args.mirrors)
    known = known_keys(args.baseline)
    record = {
        "linter_commit": linter_commit(args.linter_src),
        "command": "python -m devicekit.lint --format json FILE... (run from each code base's root)",
        "select": args.select or "default rules",
        "code_bases": [],
    }
    for base in code_bases:
        root = args.code / short_name(base["repo"])
        paths = [entry["path"] for entry in base["files"]]
        findings = lint(args.python, args.linter_src, root, paths, args.select)
        record["code_bases"].append(
            {
                "repo": base["repo"],
                "commit": base["commit"],
                "files": len(paths),
                "nonblank_lines": nonblank_lines(root, paths),
                "findings": findings,
            }
        )
        for finding in findings:
            repo, path, line, rule = key(base["repo"], finding)
            new = (repo, path, line, rule) not in known
            if args.new_only and not new:
                continue
            row = {"repo": repo, "file": path, "line": line, "rule": rule, "new": new}
            row.update(col=finding["col"], message=finding["message"])
            print(json.dumps(row, ensure_ascii=False))
    if args.write_baseline:
        text = json.dumps(record, ensure_ascii=False, indent=1) + "\n"
        args.write_baseline.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
