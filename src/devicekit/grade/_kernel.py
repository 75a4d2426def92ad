"""Helpers that run *inside* the kernel executing a submission (imported by the cells the grader injects).

The grader adds cells to its temporary copy of a submission, never to the submission itself:

* a first cell calls `install`, which registers IPython hooks. Before each cell it notes which exercises'
  check cells started (their key appears in the cell's source); after each cell it writes the last
  recorded `devicekit.exercises.results` entry of every exercise of the lab to a JSON file. Writing after
  every cell means the checks that ran still count when a later cell kills the kernel or the whole run is
  stopped for taking too long.
* one last cell per exercise calls `rerun`: when the notebook never ran that exercise's check cell (the
  learner deleted it), the check is run once on the object the lab names as the exercise's ``target``.

Nothing here changes what a check does; the grader scores exactly the checks the learner sees.
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any

INJECTED = "# devicekit-grade: injected cell"


class _State:
    def __init__(self, path: str, lab: str, keys: list[str]) -> None:
        self.path, self.lab, self.keys = path, lab, keys
        self.attempted: set[str] = set()
        self.rerun: dict[str, str] = {}
        self.patterns = {key: re.compile(r"""["']""" + re.escape(key) + r"""["']""") for key in keys}

    def dump(self) -> None:
        module = sys.modules.get("devicekit.exercises")
        results = getattr(module, "results", []) if module is not None else []
        last: dict[str, dict[str, Any]] = {}
        runs: dict[str, int] = {}
        for result in list(results):
            if getattr(result, "lab", None) != self.lab:
                continue
            key = str(result.key)
            runs[key] = runs.get(key, 0) + 1
            last[key] = {"passed": bool(result.passed), "en": str(result.en), "zh": str(result.zh)}
        data = {
            "lab": self.lab,
            "last": last,
            "runs": runs,
            "attempted": sorted(self.attempted),
            "rerun": self.rerun,
        }
        tmp = f"{self.path}.tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(data, handle, ensure_ascii=False)
        os.replace(tmp, self.path)

    def before(self, info: Any) -> None:
        source = getattr(info, "raw_cell", "") or ""
        if source.startswith(INJECTED):
            return
        for key, pattern in self.patterns.items():
            if pattern.search(source):
                self.attempted.add(key)

    def after(self, result: Any) -> None:
        try:
            self.dump()
        except Exception as exc:  # never turn a grading hook failure into a student's error
            print(f"devicekit-grade: could not record the check results: {exc}", file=sys.__stderr__)


_STATE: _State | None = None


def install(path: str, lab: str, keys: list[str]) -> None:
    """Start recording the lab's check results into ``path`` after every cell."""
    global _STATE
    from IPython import get_ipython

    import devicekit.exercises  # noqa: F401  (so `results` exists before the first dump)

    _STATE = _State(path, lab, keys)
    shell = get_ipython()
    shell.events.register("pre_run_cell", _STATE.before)
    shell.events.register("post_run_cell", _STATE.after)
    _STATE.dump()


def rerun(key: str, target: str | None) -> None:
    """Run the check of ``key`` once if the notebook never ran its check cell, on the variable ``target``."""
    state = _STATE
    if state is None:
        return
    if key in state.attempted or any(r.key == key and r.lab == state.lab for r in _results()):
        return
    if not target:
        state.rerun[key] = "no-target"
    else:
        from IPython import get_ipython

        namespace = get_ipython().user_ns
        if target not in namespace:
            state.rerun[key] = "target-missing"
        else:
            from devicekit.exercises import run

            state.rerun[key] = "started"
            state.dump()
            run(state.lab, key, namespace[target])
            state.rerun[key] = "ran"
    state.dump()


def _results() -> list[Any]:
    module = sys.modules.get("devicekit.exercises")
    return list(getattr(module, "results", [])) if module is not None else []
