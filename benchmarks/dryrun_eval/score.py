"""Benchmark (not a test): devicekit's dry run on real device bugs from public reports (issue 38).

Each case folder ``NN-name/`` holds ``bug.py``, its fixed twin ``fixed.py`` and ``case.json`` (see
``README.md``). For every case this runs, in a fresh copy of the folder and with a timeout,

    python -m devicekit.dryrun --gpus N bug.py        and        ... fixed.py

and prints one row per case:

- bug caught: the dry run exits with status 1 and its output names bug.py's ``bug_line``, written
  ``bug.py:LINE`` or ``line LINE`` (the only thing read from the output, per issue 38's interface);
- fixed twin clean: the dry run of fixed.py exits with status 0;
- phrase (shown, not scored): whether the output contains the key phrase of the message a real GPU prints.

Then the two percentages against issue 38's goals: at least 90 % caught, at least 95 % clean.

    .venv/bin/python benchmarks/dryrun_eval/score.py                      # every case
    .venv/bin/python benchmarks/dryrun_eval/score.py --only 05 31 --json scores.json
    .venv/bin/python benchmarks/dryrun_eval/score.py --cpu-check          # no simulator, CUDA hidden

``--cpu-check`` runs each script with plain Python and ``CUDA_VISIBLE_DEVICES=`` and expects exit status 0
from both twins: on a CPU every script takes its CPU path, which is why a simulator is needed to see the
bugs at all. The children run with ``DEVICEKIT_LANG=en``, so that a location is written ``line N``.

Exit status: 0 goals met (``--cpu-check``: every script clean); 1 goals missed; 2 ``devicekit.dryrun``
cannot be imported, or bad arguments or case files.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from devicekit.messages import Message, join, localised

ROOT = Path(__file__).resolve().parent
MODULE = "devicekit.dryrun"
GOALS = {"caught": 0.90, "clean": 0.95}
FIELDS = ("source", "scenario", "gpus", "bug_line", "expect", "notes")


@dataclass(frozen=True)
class Case:
    """One case folder, as its case.json describes it."""

    name: str
    folder: Path
    source: str
    scenario: int
    gpus: int
    bug_line: int
    phrase: str
    error_type: str


@dataclass(frozen=True)
class Run:
    """One script run: exit status (None after a timeout), what it printed, and how long it took."""

    status: int | None
    output: str
    seconds: float


@dataclass(frozen=True)
class Row:
    """The verdicts on one case."""

    case: str
    scenario: int
    gpus: int
    bug_status: int | None
    line_named: bool
    phrase_seen: bool
    fixed_status: int | None
    seconds: float

    @property
    def caught(self) -> bool:
        return self.bug_status == 1 and self.line_named

    @property
    def clean(self) -> bool:
        return self.fixed_status == 0


def _bad_case(folder: Path, why: Message) -> ValueError:
    return localised(
        ValueError,
        Message(f"{folder.name}/case.json: ", f"{folder.name}/case.json：") + why,
    )


def load_case(folder: Path) -> Case:
    """Read and check ``folder/case.json``; a case that is not complete is refused with the reason."""
    try:
        data = json.loads((folder / "case.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise _bad_case(
            folder, Message(f"cannot be read as JSON ({exc})", f"无法按 JSON 读取（{exc}）")
        ) from exc
    missing = [f for f in FIELDS if f not in data]
    if missing:
        raise _bad_case(folder, Message("missing fields: ", "缺少字段：") + join(missing))
    if data["gpus"] not in (1, 2) or not isinstance(data["bug_line"], int) or data["bug_line"] < 1:
        raise _bad_case(
            folder,
            Message(
                "gpus must be 1 or 2 and bug_line a positive int", "gpus 必须是 1 或 2，bug_line 必须是正整数"
            ),
        )
    for script in ("bug.py", "fixed.py"):
        if not (folder / script).is_file():
            raise _bad_case(folder, Message(f"{script} is missing", f"缺少 {script}"))
    return Case(
        name=folder.name,
        folder=folder,
        source=data["source"],
        scenario=int(data["scenario"]),
        gpus=int(data["gpus"]),
        bug_line=data["bug_line"],
        phrase=str(data["expect"].get("phrase", "")),
        error_type=str(data["expect"].get("type", "")),
    )


def load_cases(root: Path = ROOT, only: list[str] | None = None) -> list[Case]:
    """Every case under `root` (folders named ``NN-...``), or those whose name starts with one of `only`."""
    folders = sorted(p for p in root.iterdir() if p.is_dir() and re.match(r"\d\d-", p.name))
    if only:
        folders = [p for p in folders if any(p.name.startswith(prefix) for prefix in only)]
        if not folders:
            raise localised(ValueError, Message("no case matches ", "没有用例匹配 ") + join(only))
    return [load_case(p) for p in folders]


def names_line(output: str, line: int) -> bool:
    """Whether `output` names bug.py's line `line`, written ``bug.py:LINE`` or ``line LINE``."""
    return bool(re.search(rf"bug\.py:{line}\b", output) or re.search(rf"\bline {line}\b", output))


def run_script(case: Case, script: str, prefix: list[str], timeout: float, env: dict[str, str]) -> Run:
    """Run ``prefix + [script]`` in a fresh copy of the case folder; the case set itself is never written."""
    with tempfile.TemporaryDirectory(prefix=f"dryrun-eval-{case.name}-") as tmp:
        work = Path(tmp) / case.name
        shutil.copytree(case.folder, work)
        start = time.perf_counter()
        try:
            done = subprocess.run(
                [*prefix, script], cwd=work, env=env, capture_output=True, text=True, timeout=timeout
            )
            status: int | None = done.returncode
            output = done.stdout + done.stderr
        except subprocess.TimeoutExpired as exc:
            status = None
            output = _text(exc.stdout) + _text(exc.stderr)
        return Run(status, output, time.perf_counter() - start)


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode("utf-8", "replace")


def module_available(python: str, module: str) -> bool:
    """Whether `python` can find `module` (checked in a child, as the runs are)."""
    probe = f"import importlib.util, sys; sys.exit(0 if importlib.util.find_spec({module!r}) else 3)"
    return subprocess.run([python, "-c", probe], capture_output=True).returncode == 0


def child_env(cpu_check: bool) -> dict[str, str]:
    """The children's environment: English messages, unbuffered output, and no GPU for the CPU check."""
    env = dict(os.environ, DEVICEKIT_LANG="en", PYTHONUNBUFFERED="1")
    if cpu_check:
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def score_case(case: Case, python: str, module: str, timeout: float, cpu_check: bool) -> Row:
    """Run both twins of `case` (under the dry run, or plainly with `cpu_check`) and judge them."""
    env = child_env(cpu_check)
    prefix = [python] if cpu_check else [python, "-m", module, "--gpus", str(case.gpus)]
    bug = run_script(case, "bug.py", prefix, timeout, env)
    fixed = run_script(case, "fixed.py", prefix, timeout, env)
    return Row(
        case=case.name,
        scenario=case.scenario,
        gpus=case.gpus,
        bug_status=bug.status,
        line_named=names_line(bug.output, case.bug_line),
        phrase_seen=bool(case.phrase) and case.phrase in bug.output,
        fixed_status=fixed.status,
        seconds=bug.seconds + fixed.seconds,
    )


def _status(status: int | None) -> str:
    return "⏱" if status is None else str(status)


def _mark(flag: bool) -> str:
    return "✓" if flag else "✗"


def format_table(rows: list[Row], cpu_check: bool) -> str:
    """The per-case table; cells are numbers and marks (⏱ = timed out), the header in the user's language."""
    if cpu_check:
        header = Message(
            f"{'case':<40} {'bug.py exit':>11} {'fixed.py exit':>13} {'s':>6}",
            f"{'用例':<38} {'bug.py 退出码':>11} {'fixed.py 退出码':>13} {'秒':>5}",
        )
        lines = [
            f"{r.case:<40} {_status(r.bug_status):>11} {_status(r.fixed_status):>13} {r.seconds:>6.1f}"
            for r in rows
        ]
    else:
        header = Message(
            f"{'case':<40} {'scen.':>5} {'GPUs':>4} {'bug exit':>8} {'line':>4} {'phrase':>6} "
            f"{'caught':>6} {'fixed exit':>10} {'clean':>5} {'s':>6}",
            f"{'用例':<38} {'场景':>3} {'GPU':>4} {'bug 退出码':>7} {'行号':>2} {'关键语':>3} "
            f"{'捕获':>4} {'fixed 退出码':>8} {'干净':>3} {'秒':>5}",
        )
        lines = [
            f"{r.case:<40} {r.scenario:>5} {r.gpus:>4} {_status(r.bug_status):>8} {_mark(r.line_named):>4} "
            f"{_mark(r.phrase_seen):>6} {_mark(r.caught):>6} {_status(r.fixed_status):>10} "
            f"{_mark(r.clean):>5} {r.seconds:>6.1f}"
            for r in rows
        ]
    return "\n".join([str(header), *lines])


def summary(rows: list[Row]) -> tuple[Message, bool]:
    """The two percentages and whether issue 38's goals are met."""
    n = len(rows)
    caught = sum(r.caught for r in rows)
    clean = sum(r.clean for r in rows)
    phrases = sum(r.phrase_seen for r in rows)
    p_caught, p_clean = caught / n, clean / n
    met = p_caught >= GOALS["caught"] and p_clean >= GOALS["clean"]
    verdict = Message("goals met", "目标已达到") if met else Message("goals missed", "目标未达到")
    text = (
        Message(
            f"bugs caught at their line: {caught}/{n} = {p_caught:.1%} (goal >= {GOALS['caught']:.0%})\n"
            f"fixed twins clean: {clean}/{n} = {p_clean:.1%} (goal >= {GOALS['clean']:.0%})\n"
            f"CUDA's key phrase in the output (not scored): {phrases}/{n}\n",
            f"在出错行捕获的 bug：{caught}/{n} = {p_caught:.1%}（目标 >= {GOALS['caught']:.0%}）\n"
            f"修复版运行干净：{clean}/{n} = {p_clean:.1%}（目标 >= {GOALS['clean']:.0%}）\n"
            f"输出中含 CUDA 报错的关键语（不计分）：{phrases}/{n}\n",
        )
        + verdict
    )
    return text, met


def misses(rows: list[Row], cases: dict[str, Case]) -> list[Message]:
    """One line per case that missed, saying why."""
    out = []
    for r in rows:
        line = cases[r.case].bug_line
        if not r.caught:
            if r.bug_status is None:
                out.append(Message(f"{r.case}: bug.py timed out", f"{r.case}：bug.py 超时"))
            elif r.bug_status != 1:
                out.append(
                    Message(
                        f"{r.case}: bug.py exited with {r.bug_status}, not 1",
                        f"{r.case}：bug.py 的退出码是 {r.bug_status}，不是 1",
                    )
                )
            else:
                out.append(
                    Message(
                        f"{r.case}: bug.py exited with 1 but the output does not name line {line}",
                        f"{r.case}：bug.py 退出码为 1，但输出没有指出第 {line} 行",
                    )
                )
        if not r.clean:
            if r.fixed_status is None:
                out.append(Message(f"{r.case}: fixed.py timed out", f"{r.case}：fixed.py 超时"))
            else:
                out.append(
                    Message(
                        f"{r.case}: fixed.py exited with {r.fixed_status}, not 0",
                        f"{r.case}：fixed.py 的退出码是 {r.fixed_status}，不是 0",
                    )
                )
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=str(
            Message(
                "Score devicekit's dry run on real device bugs (issue 38).",
                "用真实的设备 bug 给 devicekit 的 dry run 评分（issue 38）。",
            )
        )
    )
    parser.add_argument(
        "--only",
        nargs="+",
        metavar="NN",
        help=str(Message("cases whose folder name starts with these", "只运行文件夹名以这些开头的用例")),
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=180.0,
        help=str(Message("seconds per script run (default 180)", "每次运行脚本的秒数上限（默认 180）")),
    )
    parser.add_argument(
        "--python",
        default=sys.executable,
        help=str(
            Message("interpreter for the runs (default: this one)", "运行所用的解释器（默认：当前这个）")
        ),
    )
    parser.add_argument("--module", default=MODULE, help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    parser.add_argument(
        "--cpu-check",
        action="store_true",
        help=str(
            Message("plain Python, CUDA hidden; expect exit 0", "用普通 Python 运行并隐藏 CUDA；应以 0 退出")
        ),
    )
    parser.add_argument(
        "--json",
        type=Path,
        metavar="FILE",
        help=str(Message("also write the rows as JSON", "另外把结果行写成 JSON")),
    )
    args = parser.parse_args(argv)
    if args.timeout <= 0:
        parser.error(str(Message("--timeout must be positive", "--timeout 必须为正数")))
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        cases = load_cases(args.root, args.only)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    if not args.cpu_check and not module_available(args.python, args.module):
        print(
            Message(
                f"{args.module} does not exist yet (not importable by {args.python}): nothing to score.",
                f"{args.module} 尚不存在（{args.python} 无法导入）：没有可评分的对象。",
            ),
            file=sys.stderr,
        )
        return 2
    rows = []
    for case in cases:
        rows.append(score_case(case, args.python, args.module, args.timeout, args.cpu_check))
        print(format_table(rows[-1:], args.cpu_check).splitlines()[-1], file=sys.stderr, flush=True)
    print(format_table(rows, args.cpu_check))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=2) + "\n", encoding="utf-8")
    if args.cpu_check:
        bad = [r.case for r in rows if r.bug_status != 0 or r.fixed_status != 0]
        if bad:
            print(Message("not clean on the CPU: ", "在 CPU 上未能干净运行：") + join(bad))
            return 1
        print(
            Message(
                f"all {len(rows)} cases run clean on the CPU (both twins)",
                f"全部 {len(rows)} 个用例（两个版本）在 CPU 上运行干净",
            )
        )
        return 0
    for line in misses(rows, {c.name: c for c in cases}):
        print(line)
    text, met = summary(rows)
    print(text)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
