"""Score devicekit-lint on one of the frozen outsider evaluation sets (issue 43, "Measures"); not a test.

One scorer for every set in ``SETS`` (``benchmarks/lint_eval_outsider/``, ``lint_eval_fresh/``,
``lint_eval_third/``, ``lint_eval_fourth/``); each set's ``score.py`` is a thin entry point that
calls `main` with its `EvalSet`.
The sets were built from public issues and pull requests without reading the linter's rules or code (see
each README.md). Each case folder ``NNN-name/`` holds ``buggy/`` and ``fixed/`` (the same ``.py`` files) and
``case.json``::

    {"source": URL, "scenario": 1..15, "files": [...], "bug_lines": {"file.py": [lines]}, "why": "..."}

A set with a manifest (``EvalSet.manifest``) has ``MANIFEST.sha256``: the SHA-256 of every file under its
case folders (``sha256sum`` format); it is scored only when every hash matches and no case file is missing
from or added to the manifest, so an edit to a frozen case is visible.

For every case the linter runs as its own process, ``python -m devicekit.lint --format json FOLDER``, once on
``buggy/`` and once on ``fixed/`` (a whole folder, so an analysis across files sees the package). Only
that JSON output is read, never the linter's modules: the sets measure the linter from outside.

* A bug is **found** when any finding lands within one line of one of its ``bug_lines``, in that file.
* A fixed twin is **silent** when the linter reports nothing at all in ``fixed/``.

Prints recall per scenario, overall recall and twin silence, against issue 43's goals (>= 80 % found,
>= 90 % of twins silent). Exit status: 0 when both goals are met, 1 when one is missed, 2 when the set is
malformed, its manifest does not match, or the linter could not run.

Run (from the repository root; ``--set`` picks the set, or call the set's own ``score.py``)::

    PYTHONPATH=/work/main/src /work/main/.venv/bin/python benchmarks/lint_eval_fresh/score.py
    .venv/bin/python benchmarks/lint_eval_score.py --set fresh --jobs 2 --json /tmp/scores.json
    .venv/bin/python benchmarks/lint_eval_third/score.py --check   # validate the set and its hashes only
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from devicekit.lang import set_language
from devicekit.messages import Message, localised

HERE = Path(__file__).resolve().parent
MANIFEST = "MANIFEST.sha256"
GOALS = {"recall": 0.80, "silent": 0.90}
SCENARIOS = range(1, 16)
TOLERANCE = 1  # a finding counts when it is at most this many lines from a bug line
CASE_KEYS = {"source", "scenario", "files", "bug_lines", "why"}
_CASE_DIR = re.compile(r"^\d{3}-[a-z0-9-]+$")
_SOURCE = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+$")


class CaseError(ValueError):
    """A case folder or its case.json is malformed (the message names the folder and says what is wrong)."""


@dataclass(frozen=True)
class EvalSet:
    """One frozen evaluation set: its folder, whether it has a manifest, and its name in the report.

    ``title`` names the cases in the report's first line ("45 outsider cases"), in both languages.
    """

    key: str
    root: Path
    manifest: bool
    title: Message


SETS: dict[str, EvalSet] = {
    s.key: s
    for s in (
        EvalSet("outsider", HERE / "lint_eval_outsider", False, Message("outsider", "外部")),
        EvalSet("fresh", HERE / "lint_eval_fresh", True, Message("fresh outsider", "第二批外部")),
        EvalSet("third", HERE / "lint_eval_third", True, Message("third outsider", "第三批外部")),
        EvalSet("fourth", HERE / "lint_eval_fourth", True, Message("fourth outsider", "第四批外部")),
    )
}


@dataclass(frozen=True)
class Case:
    """One evaluation case: where it came from, its scenario and the lines a linter should point at."""

    name: str
    folder: Path
    source: str
    scenario: int
    files: tuple[str, ...]
    bug_lines: dict[str, tuple[int, ...]]
    why: str


@dataclass(frozen=True)
class Finding:
    """One finding as the linter's JSON gives it, with its path made relative to the linted folder."""

    file: str
    line: int
    code: str


@dataclass
class Outcome:
    """What the linter said about one case: findings in buggy/ and in fixed/, or why it could not run."""

    case: Case
    buggy: list[Finding] = field(default_factory=list)
    fixed: list[Finding] = field(default_factory=list)
    error: str | None = None

    @property
    def found(self) -> bool:
        """True when a finding in buggy/ is within `TOLERANCE` lines of one of the case's bug lines."""
        return self.error is None and bug_found(self.case, self.buggy)

    @property
    def silent(self) -> bool:
        """True when the linter reported nothing at all on the fixed twin."""
        return self.error is None and not self.fixed


def _bad(case: str, en: str, zh: str) -> CaseError:
    return localised(CaseError, Message(f"{case}: {en}", f"{case}：{zh}"))


def load_case(folder: Path) -> Case:
    """Read and check one case folder; bad input raises `CaseError` and nothing is scored.

    Checks the folder name, that case.json has exactly the documented keys with the right types, that
    ``buggy/`` and ``fixed/`` hold the same ``.py`` files and that these are the ``files`` listed, that
    every file parses, and that every bug line exists in its buggy file.
    """
    name = folder.name
    if not _CASE_DIR.match(name):
        raise _bad(name, "a case folder is named NNN-short-name", "案例文件夹的名字应为 NNN-short-name")
    try:
        data = json.loads((folder / "case.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise _bad(
            name, f"case.json cannot be read as JSON ({exc})", f"case.json 无法按 JSON 读取（{exc}）"
        ) from None
    if not isinstance(data, dict) or set(data) != CASE_KEYS:
        keys = ", ".join(sorted(CASE_KEYS))
        raise _bad(
            name, f"case.json must have exactly the keys {keys}", f"case.json 必须恰好包含这些键：{keys}"
        )
    source, scenario, files, bug_lines, why = (
        data[k] for k in ("source", "scenario", "files", "bug_lines", "why")
    )
    if not isinstance(source, str) or not _SOURCE.match(source):
        raise _bad(
            name,
            f"source {source!r} is not a GitHub issue or pull request URL",
            f"source {source!r} 不是 GitHub 议题或拉取请求的网址",
        )
    if not isinstance(scenario, int) or isinstance(scenario, bool) or scenario not in SCENARIOS:
        raise _bad(
            name,
            f"scenario {scenario!r} is not a number from 1 to 15",
            f"scenario {scenario!r} 不是 1 到 15 的数",
        )
    if not isinstance(why, str) or not why.strip():
        raise _bad(name, "why must be a non-empty sentence", "why 必须是一句非空的话")
    if not isinstance(files, list) or not files or not all(isinstance(f, str) for f in files):
        raise _bad(name, "files must be a non-empty list of paths", "files 必须是非空的路径列表")
    for side in ("buggy", "fixed"):
        present = sorted(p.relative_to(folder / side).as_posix() for p in (folder / side).rglob("*.py"))
        if present != sorted(files):
            raise _bad(
                name,
                f"{side}/ holds {present}, not the files listed {sorted(files)}",
                f"{side}/ 中的文件是 {present}，与列出的 {sorted(files)} 不符",
            )
        for rel in files:
            try:
                ast.parse((folder / side / rel).read_text(encoding="utf-8"), filename=rel)
            except SyntaxError as exc:
                raise _bad(
                    name,
                    f"{side}/{rel} does not parse (line {exc.lineno})",
                    f"{side}/{rel} 无法解析（第 {exc.lineno} 行）",
                ) from None
    if not isinstance(bug_lines, dict) or not bug_lines:
        raise _bad(
            name, "bug_lines must map at least one file to its lines", "bug_lines 必须至少给一个文件列出行号"
        )
    checked: dict[str, tuple[int, ...]] = {}
    for rel, lines in bug_lines.items():
        if rel not in files:
            raise _bad(
                name, f"bug_lines names {rel}, which is not in files", f"bug_lines 提到的 {rel} 不在 files 中"
            )
        count = len((folder / "buggy" / rel).read_text(encoding="utf-8").splitlines())
        ok = isinstance(lines, list) and lines and all(type(n) is int and 1 <= n <= count for n in lines)
        if not ok:
            raise _bad(
                name,
                f"bug_lines for {rel} must be line numbers from 1 to {count}",
                f"{rel} 的 bug_lines 必须是 1 到 {count} 之间的行号",
            )
        checked[rel] = tuple(lines)
    return Case(name, folder, source, scenario, tuple(files), checked, why)


def load_cases(root: Path, only: Sequence[str] = ()) -> list[Case]:
    """Every case folder under ``root`` in name order; ``only`` keeps the names that start with one of them.

    Raises:
        CaseError: a case is malformed, two cases share a number or source, or ``only`` matches nothing.
    """
    folders = sorted(p for p in root.iterdir() if p.is_dir() and p.name[:1].isdigit())
    if only:
        folders = [p for p in folders if any(p.name.startswith(o) for o in only)]
        if not folders:
            wanted = ", ".join(only)
            raise localised(CaseError, Message(f"no case matches {wanted}", f"没有与 {wanted} 相符的案例"))
    cases = [load_case(p) for p in folders]
    for attr, en, zh in (("source", "source", "来源"), ("name", "number", "编号")):
        seen: dict[str, str] = {}
        for case in cases:
            key = case.source if attr == "source" else case.name[:3]
            if key in seen:
                raise _bad(case.name, f"same {en} as {seen[key]}", f"与 {seen[key]} 的{zh}相同")
            seen[key] = case.name
    return cases


def case_files(root: Path) -> list[str]:
    """Every file under the case folders (``NNN-name/``), as sorted paths relative to ``root``."""
    folders = sorted(p for p in root.iterdir() if p.is_dir() and p.name[:1].isdigit())
    return sorted(f.relative_to(root).as_posix() for d in folders for f in d.rglob("*") if f.is_file())


def file_hash(path: Path) -> str:
    """The SHA-256 of a file's bytes with CRLF read as LF, in hexadecimal.

    On a normal checkout this is what ``sha256sum`` prints; reading CRLF as LF keeps a Windows checkout
    with ``core.autocrlf`` from looking like an edit.
    """
    return hashlib.sha256(path.read_bytes().replace(b"\r\n", b"\n")).hexdigest()


def write_manifest(root: Path) -> Path:
    """Write ``MANIFEST.sha256`` (``sha256sum`` format) for the case files under ``root``; return its path."""
    target = root / MANIFEST
    lines = [f"{file_hash(root / rel)}  {rel}" for rel in case_files(root)]
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


def check_manifest(root: Path) -> None:
    """Check that ``MANIFEST.sha256`` lists exactly the case files under ``root`` with their current hashes.

    Raises:
        CaseError: the manifest is missing or unreadable, a listed file is missing or changed, or a case
            file is not listed (the message names up to five files and counts the rest).
    """
    try:
        text = (root / MANIFEST).read_text(encoding="utf-8")
    except OSError as exc:
        raise _bad(MANIFEST, f"cannot be read ({exc})", f"无法读取（{exc}）") from None
    listed: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        digest, sep, rel = line.partition("  ")
        if not sep or len(digest) != 64 or not rel:
            raise _bad(
                MANIFEST,
                f"line {number} is not '<sha256>  <path>'",
                f"第 {number} 行不是“<sha256>  <路径>”的格式",
            )
        listed[rel] = digest
    present = case_files(root)
    changed = [rel for rel in present if rel in listed and listed[rel] != file_hash(root / rel)]
    problems = [f"{rel} (changed)" for rel in changed]
    problems += [f"{rel} (not listed)" for rel in present if rel not in listed]
    problems += [f"{rel} (missing)" for rel in sorted(set(listed) - set(present))]
    if problems:
        shown = ", ".join(problems[:5]) + (f" (+{len(problems) - 5})" if len(problems) > 5 else "")
        shown_zh = (
            shown.replace("(changed)", "（已改动）")
            .replace("(not listed)", "（未列入）")
            .replace("(missing)", "（缺失）")
        )
        raise _bad(
            MANIFEST,
            f"the frozen set was edited: {shown}",
            f"冻结的案例集被改动过：{shown_zh}",
        )


def parse_findings(stdout: str, folder: Path) -> list[Finding]:
    """The findings in the linter's JSON output, with paths relative to ``folder``.

    Raises:
        ValueError: the output is not a JSON list of objects with ``path`` and ``line``, or a path lies
            outside ``folder``.
    """
    data = json.loads(stdout)
    if not isinstance(data, list):
        raise ValueError("the linter's JSON output is not a list")
    root = folder.resolve()
    findings = []
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("line"), int) or "path" not in item:
            raise ValueError(f"a finding without path and line: {item!r}")
        path = Path(item["path"])
        path = (path if path.is_absolute() else root / path).resolve()
        findings.append(Finding(path.relative_to(root).as_posix(), item["line"], str(item.get("code", ""))))
    return findings


def run_linter(folder: Path, python: str = sys.executable, timeout: float = 300.0) -> list[Finding]:
    """Run ``python -m devicekit.lint --format json folder`` and return its findings.

    Exit status 0 (nothing found) and 1 (findings) are the linter's answers; anything else, or output that
    is not the documented JSON, is an error.

    Raises:
        RuntimeError: the linter failed, timed out or printed something that is not its JSON list.
    """
    cmd = [python, "-m", "devicekit.lint", "--format", "json", str(folder)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"timed out after {timeout:.0f} s") from None
    if done.returncode not in (0, 1):
        raise RuntimeError(f"exit status {done.returncode}: {done.stderr.strip()[-400:]}")
    try:
        return parse_findings(done.stdout, folder)
    except ValueError as exc:
        raise RuntimeError(f"unexpected output ({exc}): {done.stdout[:200]!r}") from None


def bug_found(case: Case, findings: Iterable[Finding]) -> bool:
    """True when some finding is in a file with bug lines and within `TOLERANCE` lines of one of them."""
    for finding in findings:
        lines = case.bug_lines.get(finding.file, ())
        if any(abs(finding.line - line) <= TOLERANCE for line in lines):
            return True
    return False


def evaluate(case: Case, python: str, timeout: float) -> Outcome:
    """Lint one case's buggy/ and fixed/ folders; a failure is kept in the outcome, not raised."""
    outcome = Outcome(case)
    try:
        outcome.buggy = run_linter(case.folder / "buggy", python, timeout)
        outcome.fixed = run_linter(case.folder / "fixed", python, timeout)
    except RuntimeError as exc:
        outcome.error = str(exc)
    return outcome


def summarise(outcomes: Sequence[Outcome]) -> dict:
    """Per-scenario and overall counts: cases, found, silent twins, errors (plain data, for --json too)."""
    per = {s: {"cases": 0, "found": 0, "silent": 0} for s in sorted({o.case.scenario for o in outcomes})}
    for o in outcomes:
        row = per[o.case.scenario]
        row["cases"] += 1
        row["found"] += o.found
        row["silent"] += o.silent
    total = len(outcomes)
    return {
        "cases": total,
        "found": sum(o.found for o in outcomes),
        "silent": sum(o.silent for o in outcomes),
        "errors": sum(o.error is not None for o in outcomes),
        "per_scenario": per,
        "per_case": [
            {
                "case": o.case.name,
                "scenario": o.case.scenario,
                "found": o.found,
                "silent": o.silent,
                "buggy_codes": sorted({f.code for f in o.buggy}),
                "fixed_findings": [f"{f.file}:{f.line} {f.code}" for f in o.fixed],
                "error": o.error,
            }
            for o in outcomes
        ],
    }


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:5.1f} %" if whole else "  n/a"


def report(summary: dict) -> list[str]:
    """The printed report: one row per case, one per scenario, then recall and twin silence with goals."""
    lines = [
        str(
            Message(
                "case                                           S  found  twin    codes in buggy/",
                "案例                                           场景 检出  修复版  buggy/ 中的规则",
            )
        ),
    ]
    for row in summary["per_case"]:
        found = "ERROR" if row["error"] else ("yes" if row["found"] else "no")
        twin = "-" if row["error"] else ("silent" if row["silent"] else f"{len(row['fixed_findings'])} find.")
        lines.append(
            f"{row['case']:<46} {row['scenario']:>2}  {found:<5}  {twin:<7} {','.join(row['buggy_codes'])}"
        )
    lines.append("")
    lines.append(
        str(Message("scenario   found   recall   silent twins", "场景       检出    检出率   安静的修复版"))
    )
    for scenario, row in summary["per_scenario"].items():
        lines.append(
            f"{scenario:>8}   {row['found']:>2}/{row['cases']:<2}  {_pct(row['found'], row['cases'])}   "
            f"{row['silent']:>2}/{row['cases']:<2}"
        )
    total, found, silent = summary["cases"], summary["found"], summary["silent"]
    recall, quiet = _pct(found, total).strip(), _pct(silent, total).strip()
    goal_r, goal_s = int(GOALS["recall"] * 100), int(GOALS["silent"] * 100)
    lines += [
        "",
        str(
            Message(
                f"recall: {found}/{total} bugs found = {recall} (goal >= {goal_r} %)",
                f"检出率：{total} 个缺陷中检出 {found} 个 = {recall}（目标 >= {goal_r} %）",
            )
        ),
        str(
            Message(
                f"twin silence: {silent}/{total} fixed twins without findings = {quiet} (goal >= {goal_s} %)",
                f"修复版安静率：{total} 个修复版中 {silent} 个没有任何提示 = {quiet}（目标 >= {goal_s} %）",
            )
        ),
    ]
    if summary["errors"]:
        lines.append(
            str(
                Message(
                    f"the linter failed on {summary['errors']} case(s): see ERROR rows",
                    f"有 {summary['errors']} 个案例上检查器运行失败：见 ERROR 行",
                )
            )
        )
    return lines


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Score devicekit-lint (its JSON output only) on a frozen outsider evaluation set.",
    )
    parser.add_argument("--case", action="append", default=[], metavar="NNN", help="only cases starting so")
    parser.add_argument("--jobs", "-j", type=int, default=2, help="linter processes at once (default 2)")
    parser.add_argument("--python", default=sys.executable, help="interpreter that runs devicekit.lint")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per linter run (default 300)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the results as JSON")
    parser.add_argument(
        "--check", action="store_true", help="only validate the set (and its manifest); do not run the linter"
    )
    parser.add_argument("--lang", choices=("en", "zh"), help="language of the report (default: both)")
    return parser


def main(argv: Sequence[str] | None = None, evalset: EvalSet | None = None) -> int:
    """Validate the set, lint every case, print the report; see the module docstring for exit status.

    ``evalset`` is the set a thin entry point scores; without it, ``--set`` names one of `SETS`.
    """
    parser = _parser("score.py" if evalset else "lint_eval_score.py")
    if evalset is None:
        parser.add_argument("--set", choices=sorted(SETS), required=True, help="which evaluation set")
    args = parser.parse_args(argv)
    if args.lang:
        set_language(args.lang)
    chosen = evalset or SETS[args.set]
    if args.jobs < 1:
        print(Message("--jobs must be at least 1", "--jobs 至少为 1"), file=sys.stderr)
        return 2
    try:
        cases = load_cases(chosen.root, args.case)
        if chosen.manifest:
            check_manifest(chosen.root)
    except CaseError as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.check:
        if chosen.manifest:
            print(
                Message(
                    f"{len(cases)} cases, all well-formed; every hash in {MANIFEST} matches",
                    f"共 {len(cases)} 个案例，格式全部正确；{MANIFEST} 中的哈希全部相符",
                )
            )
        else:
            print(Message(f"{len(cases)} cases, all well-formed", f"共 {len(cases)} 个案例，格式全部正确"))
        return 0
    linter = f"{args.python} -m devicekit.lint"
    print(
        Message(
            f"devicekit-lint on {len(cases)} {chosen.title.en} cases ({linter})",
            f"devicekit-lint 在 {len(cases)} 个{chosen.title.zh}案例上运行（{linter}）",
        )
    )
    env_path = os.environ.get("PYTHONPATH")
    if env_path:
        print(f"PYTHONPATH={env_path}")
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        outcomes = list(pool.map(lambda c: evaluate(c, args.python, args.timeout), cases))
    summary = summarise(outcomes)
    print("\n".join(report(summary)))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if summary["errors"]:
        return 2
    met = summary["found"] >= GOALS["recall"] * len(cases) and summary["silent"] >= GOALS["silent"] * len(
        cases
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
