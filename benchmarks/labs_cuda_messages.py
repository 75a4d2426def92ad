"""How many of the labs' stored error messages are CUDA's own, word for word (issue 39, "Measures").

The labs' stored outputs come from a run on a CPU-only machine, on simulated GPUs (`devicekit_labs.use_gpus`).
This reads every error a code cell stored (``output_type == "error"``) in ``labs/*.ipynb`` and compares its
message with the messages a real GPU printed, recorded in ``results/cuda-messages.json`` (NVIDIA H200):

* **verbatim**: the stored message is one of the recorded messages, character for character;
* **same with other indices**: it equals a recorded message once device indices are ignored (``cuda:1`` for
  ``cuda:0``; the recording used one GPU's worth of cases);
* **not recorded**: no recorded case has this message. Not necessarily wrong: the recording holds 47 cases
  and the labs raise more kinds of error (lesson-specific Python errors, devicekit's own messages);
* **mentions meta**: the message names the ``meta`` device, which a lab on a (simulated) GPU should only
  do where it teaches meta itself.

    .venv/bin/python benchmarks/labs_cuda_messages.py            # a table per lab and the totals
    .venv/bin/python benchmarks/labs_cuda_messages.py --list     # every message not matched verbatim

Exit status 0 always (a measure, not a test).
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INDEX = re.compile(r"cuda:\d+")


def recorded_messages(path: Path = ROOT / "results" / "cuda-messages.json") -> set[str]:
    """Every message the recorded GPU run raised (cases and child-process cases)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for table in ("cases", "child_cases"):
        for case in (data.get(table) or {}).values():
            if isinstance(case, dict) and case.get("raised") and case.get("message"):
                found.add(case["message"])
    return found


def stored_errors(notebook: Path) -> list[tuple[int, str, str]]:
    """(cell index, exception name, message) of every error output stored in ``notebook``."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return [
        (index, out.get("ename", ""), out.get("evalue", ""))
        for index, cell in enumerate(cells)
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]


def classify(message: str, recorded: set[str]) -> str:
    if message in recorded:
        return "verbatim"
    if INDEX.sub("cuda:N", message) in {INDEX.sub("cuda:N", m) for m in recorded}:
        return "same with other indices"
    return "not recorded"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print every message not matched verbatim")
    parser.add_argument("--labs", type=Path, default=ROOT / "labs")
    args = parser.parse_args(argv)
    recorded = recorded_messages()
    totals: Counter[str] = Counter()
    print(f"{'notebook':34} {'errors':>6} {'verbatim':>8} {'indices':>7} {'other':>5} {'meta':>4}")
    for notebook in sorted(args.labs.glob("*.ipynb")):
        counts: Counter[str] = Counter()
        for index, name, message in stored_errors(notebook):
            kind = classify(message, recorded)
            counts[kind] += 1
            counts["errors"] += 1
            counts["meta"] += "meta" in message
            if args.list and kind != "verbatim":
                print(f"  {notebook.name} cell {index} [{kind}] {name}: {message[:200]}")
        totals.update(counts)
        print(
            f"{notebook.name:34} {counts['errors']:>6} {counts['verbatim']:>8} "
            f"{counts['same with other indices']:>7} {counts['not recorded']:>5} {counts['meta']:>4}"
        )
    print(
        f"{'all':34} {totals['errors']:>6} {totals['verbatim']:>8} {totals['same with other indices']:>7} "
        f"{totals['not recorded']:>5} {totals['meta']:>4}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
