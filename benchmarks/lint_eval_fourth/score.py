"""Score devicekit-lint on this frozen evaluation set: a thin entry point to `benchmarks/lint_eval_score.py`.

The scorer, its rules for counting and its options are documented there and in this folder's README.md;
this file only names the set, so the commands the README gives keep working::

    PYTHONPATH=/work/main/src /work/main/.venv/bin/python benchmarks/lint_eval_fourth/score.py --jobs 2
    .venv/bin/python benchmarks/lint_eval_fourth/score.py --check
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/, where the shared scorer lives

from lint_eval_score import SETS, main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(evalset=SETS["fourth"]))
