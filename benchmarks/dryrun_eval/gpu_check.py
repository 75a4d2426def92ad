"""Check the set itself on a real GPU machine (not a test): does each bug.py raise what case.json says?

The set was built on a machine without a GPU: each ``bug_line`` and ``expect`` comes from the recorded
CUDA messages (results/cuda-messages.json), PyTorch's sources and the reports' tracebacks. On a machine
with one or two real GPUs this runs every case plainly (``python bug.py``, ``python fixed.py``) and checks:

- bug.py exits non-zero, the innermost frame of bug.py in its traceback is ``bug_line``, and the final
  exception has ``expect.type`` and contains ``expect.phrase``;
- fixed.py exits 0.

Cases that need more GPUs than the machine has are skipped (and listed). A case that fails here is a
broken case: README.md says how such a case may still be fixed after the freeze.

    python benchmarks/dryrun_eval/gpu_check.py [--only NN ...] [--timeout S]

Exit status: 0 every case that ran is verified; 1 some case is not; 2 no GPU, or bad arguments.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from dataclasses import dataclass

from score import ROOT, Case, child_env, load_cases, run_script

from devicekit.messages import Message, join

FRAME = re.compile(r'File "[^"]*bug\.py", line (\d+)')
FINAL = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception)): (.*)$", re.M)


@dataclass(frozen=True)
class Verdict:
    """What a real GPU did with one case."""

    case: str
    bug_status: int | None
    frame_line: int | None
    error_type: str | None
    message: str | None
    fixed_status: int | None

    def verified(self, case: Case) -> bool:
        return (
            self.bug_status not in (0, None)
            and self.frame_line == case.bug_line
            and self.error_type is not None
            and self.error_type.rsplit(".", 1)[-1] == case.error_type
            and self.message is not None
            and case.phrase in self.message
            and self.fixed_status == 0
        )


def innermost_frame(output: str) -> int | None:
    """The line of the last ``bug.py`` frame printed (the innermost frame of the last traceback)."""
    lines = FRAME.findall(output)
    return int(lines[-1]) if lines else None


def final_exception(output: str) -> tuple[str | None, str | None]:
    """The type and message of the last exception line of a traceback."""
    found = FINAL.findall(output)
    return found[-1] if found else (None, None)


def gpu_count(python: str) -> int:
    probe = "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)"
    done = subprocess.run([python, "-c", probe], capture_output=True, text=True)
    return int(done.stdout.strip() or 0) if done.returncode == 0 else 0


def check_case(case: Case, python: str, timeout: float) -> Verdict:
    env = child_env(cpu_check=False)
    bug = run_script(case, "bug.py", [python], timeout, env)
    fixed = run_script(case, "fixed.py", [python], timeout, env)
    error_type, message = final_exception(bug.output)
    return Verdict(case.name, bug.status, innermost_frame(bug.output), error_type, message, fixed.status)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=str(
            Message("Check the real-bug set on a real GPU.", "在真实 GPU 上核对真实 bug 用例集。")
        )
    )
    parser.add_argument(
        "--only", nargs="+", metavar="NN", help=str(Message("cases to check", "要核对的用例"))
    )
    parser.add_argument(
        "--timeout", type=float, default=300.0, help=str(Message("seconds per run", "每次运行的秒数上限"))
    )
    parser.add_argument("--python", default=sys.executable, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        cases = load_cases(ROOT, args.only)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    gpus = gpu_count(args.python)
    if gpus == 0:
        print(
            Message("no CUDA GPU here: nothing to check.", "这里没有 CUDA GPU：无可核对。"), file=sys.stderr
        )
        return 2
    skipped = [c.name for c in cases if c.gpus > gpus]
    failed = []
    for case in (c for c in cases if c.gpus <= gpus):
        verdict = check_case(case, args.python, args.timeout)
        ok = verdict.verified(case)
        head = f"{'✓' if ok else '✗'} {case.name:<40}"
        err = f"{verdict.error_type}: {(verdict.message or '')[:90]}"
        frame, bug, fixed = f"{verdict.frame_line}/{case.bug_line}", verdict.bug_status, verdict.fixed_status
        print(
            Message(
                f"{head} exit {bug}, frame {frame}, {err} | fixed.py exit {fixed}",
                f"{head} 退出码 {bug}，帧 {frame}，{err} | fixed.py 退出码 {fixed}",
            )
        )
        if not ok:
            failed.append(case.name)
    if skipped:
        print(
            Message(f"skipped (need 2 GPUs, {gpus} here): ", f"已跳过（需要 2 块 GPU，这里只有 {gpus} 块）：")
            + join(skipped)
        )
    if failed:
        print(Message("not as case.json says: ", "与 case.json 不符：") + join(failed))
        return 1
    print(Message("every case that ran is as case.json says", "所有已运行的用例都与 case.json 相符"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
