"""How much of PyTorch's own device vocabulary ``devicekit.explain`` recognises (a report, not a test).

    python -m course_tools.miners.catalog_coverage                 # overall, by likelihood, per category
    python -m course_tools.miners.catalog_coverage --missed same-device  # the texts of one category it misses
    python -m course_tools.miners.catalog_coverage --missed all           # every text it misses or gets wrong

Reads ``course_tools/data/torch_messages.json`` (made by ``course_tools.miners.mine_messages`` from the
torch wheels) and runs each
mined text through ``devicekit.explain``. A text counts as recognised when explain names a family for it;
``wrong`` counts texts whose family differs from the one the miner's family map expects (``family`` in the
JSON; ``null`` there means the catalog does not claim the text). ``likely`` rows group the texts by how likely
a learner meets them (``high``: what the course teaches and what first GPU, AMP and multi-process scripts
hit; ``medium``: checks of an API a learner calls); ``likely (high + medium)`` is the "likely" figure of
issue 43's goal (>= 95 %, and >= 85 % for ``all``). Templates keep their holes (``{}`` from Python
f-strings, cut-off C++ fragments), exactly as mined.
``tests/test_catalog_coverage.py`` asserts the expected family of every claimed text, in Python and in the
browser widget, and the coverage floors per category.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict

from course_tools.paths import DATA
from devicekit import explain

MESSAGES = DATA / "torch_messages.json"


#: The rows printed before the categories: every text, and those a learner is likely to meet.
SUMMARY_ROWS = ("all", "likely (high + medium)", "likely: high", "likely: medium", "likely: low")


def coverage(messages: list[dict]) -> dict[str, tuple[int, int, int]]:
    """category -> (recognised, wrong family, total), plus ``"all"`` and one row per ``likely`` level."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for message in messages:
        family = explain(message["text"]).family
        wrong = family is not None and message.get("family") is not None and family != message["family"]
        likely = message.get("likely", "low")
        keys = ["all", f"likely: {likely}", message["category"]]
        if likely in ("high", "medium"):
            keys.append("likely (high + medium)")
        for key in keys:
            counts[key][0] += family is not None
            counts[key][1] += wrong
            counts[key][2] += 1
    return {key: (hits, wrong, total) for key, (hits, wrong, total) in counts.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--missed",
        metavar="CATEGORY",
        help="print the texts of CATEGORY ('all' for every one) not explained as expected",
    )
    args = parser.parse_args(argv)
    data = json.loads(MESSAGES.read_text(encoding="utf-8"))
    messages = data["messages"]
    if args.missed:
        for message in messages:
            if args.missed not in ("all", message["category"]):
                continue
            family = explain(message["text"]).family
            if family is None or (message.get("family") and family != message["family"]):
                print(
                    f"- [{family} / expected {message.get('family')}] {message['text'][:200]}"
                    f"  [{', '.join(message['versions'])}]"
                )
        return 0
    table = coverage(messages)
    print(f"torch versions mined: {', '.join(data['sources'])}")
    if data.get("libraries"):
        print(f"other libraries mined: {', '.join(data['libraries'])}")
    print(f"{'':22} {'recognised':>11} {'':>7}  wrong family")
    for key in [k for k in SUMMARY_ROWS if k in table] + sorted(k for k in table if k not in SUMMARY_ROWS):
        hits, wrong, total = table[key]
        print(f"{key:22} {hits:4d}/{total:<4d}  {100 * hits / total:5.1f} %  {wrong:4d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
