"""How much of PyTorch's own device vocabulary ``devicekit.explain`` recognises (a report, not a test).

    python tools/catalog_coverage.py                 # overall, per category, and the common subset
    python tools/catalog_coverage.py --missed same-device   # the texts of one category it misses

Reads ``tools/torch_messages.json`` (made by ``tools/mine_messages.py`` from the torch wheels) and runs each
mined text through ``devicekit.explain``. A text counts as recognised when explain names a family for it.
Templates keep their holes (``{}`` from Python f-strings, cut-off C++ fragments), exactly as mined.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

from devicekit import explain

MESSAGES = Path(__file__).resolve().parent / "torch_messages.json"


def coverage(messages: list[dict]) -> dict[str, tuple[int, int]]:
    """category -> (recognised, total), plus ``"all"`` and ``"common"``."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for message in messages:
        hit = explain(message["text"]).family is not None
        keys = ["all", message["category"]] + (["common"] if message.get("common") else [])
        for key in keys:
            counts[key][0] += hit
            counts[key][1] += 1
    return {key: (hits, total) for key, (hits, total) in counts.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--missed", metavar="CATEGORY", help="print the texts of CATEGORY that get no family")
    args = parser.parse_args(argv)
    data = json.loads(MESSAGES.read_text(encoding="utf-8"))
    messages = data["messages"]
    if args.missed:
        for message in messages:
            if message["category"] == args.missed and explain(message["text"]).family is None:
                print(f"- {message['text'][:200]}  [{', '.join(message['versions'])}]")
        return 0
    table = coverage(messages)
    print(f"torch versions mined: {', '.join(data['sources'])}")
    for key in ["all", "common"] + sorted(k for k in table if k not in {"all", "common"}):
        hits, total = table[key]
        print(f"{key:20} {hits:4d}/{total:<4d} {100 * hits / total:5.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
