"""Replay: score an exercise whose answer is not plain data (a class, a module, a dataclass instance).

The evaluator scores answers it can receive as data, or functions it can call remotely with data. Some
checks need the learner's object itself: ``issubclass(FixedScale, nn.Module)``, a function called with a
model. For those the grader starts this module in a fresh process inside the submission's sandbox: it
imports the released checks *first* (from the grader's snapshot), records the identity of every function
and attribute of devicekit, builtins and torch's core, runs the notebook's code cells (magics become
no-ops), then refuses to score if any of those changed, and otherwise runs the checks on the notebook's
objects. Results go to a pipe the grader reads.

This is weaker than the evaluator's guarantee, and the report says so (flag ``replayed``): the learner's
code ran in this process, so a deliberate attack on the process itself (writing a forged result to the
pipe) is not excluded. It does stop what the notebook can do by ordinary means: edited check cells and
fake entries in the results list are not used, and patching devicekit or torch is detected.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from typing import Any

WATCHED = ("builtins",)  # and every devicekit module
#: torch functions checks rely on (not all of torch: importing torch._dynamo legitimately re-wraps some)
TORCH_NAMES = (
    "equal",
    "allclose",
    "isclose",
    "eq",
    "tensor",
    "as_tensor",
    "ones",
    "zeros",
    "arange",
    "randn",
    "rand",
    "empty",
    "full",
    "device",
    "dtype",
    "cat",
    "stack",
    "is_tensor",
    "Tensor",
    "Size",
    "float32",
    "bool",
)


class _CellTimeout(BaseException):
    pass


class _Shell:
    """Enough of IPython's ``get_ipython()`` for a notebook's magics to do nothing."""

    user_ns: dict[str, Any] = {}

    def run_line_magic(self, *args: Any, **kwargs: Any) -> None:
        return None

    def run_cell_magic(self, *args: Any, **kwargs: Any) -> None:
        return None

    def system(self, *args: Any, **kwargs: Any) -> None:
        return None

    getoutput = system

    def __getattr__(self, name: str) -> Any:
        return lambda *a, **k: None


def _identities(checks: dict[str, Any]) -> dict[str, Any]:
    import torch

    out: dict[str, Any] = {}
    for name, module in list(sys.modules.items()):
        if module is None or not (name in WATCHED or name.startswith("devicekit.")):
            continue
        out[f"module {name}"] = id(module)
        # functions, classes and modules only: module-level settings (the notebook's language...) may change
        out.update(
            {f"{name}.{k}": id(v) for k, v in list(vars(module).items()) if callable(v) or _is_module(v)}
        )
    out.update({f"torch.{k}": id(getattr(torch, k, None)) for k in TORCH_NAMES})
    out.update({f"torch.nn.{k}": id(v) for k, v in list(vars(torch.nn).items()) if isinstance(v, type)})
    for cls in (torch.Tensor, torch.nn.Module, torch.nn.Parameter, torch.device):
        out.update({f"{cls.__qualname__}.{k}": id(v) for k, v in list(vars(cls).items())})
    for key, run in checks.items():
        out[f"check {key}"] = (
            id(run),
            id(getattr(run, "__code__", None)),
            id(getattr(run, "__globals__", None)),
        )
    return out


def _is_module(value: Any) -> bool:
    return type(value).__name__ == "module"


def _changed(before: dict[str, Any], checks: dict[str, Any]) -> str:
    now = _identities(checks)
    for key, value in before.items():
        if now.get(key) != value:
            return key
    return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lab", required=True)
    parser.add_argument("--keys", required=True)
    parser.add_argument("--notebook", required=True)
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--cell-timeout", type=int, default=120)
    args = parser.parse_args(argv)
    out = os.fdopen(args.fd, "w", encoding="utf-8")

    from devicekit_labs import exercises_for, run

    exercises = {e.key: e for e in exercises_for(args.lab)}
    keys = [k for k in args.keys.split(",") if k in exercises]
    checks = {k: exercises[k].run for k in keys}
    targets = {k: exercises[k].target for k in keys}
    with open(args.notebook, encoding="utf-8") as handle:
        cells = [c["source"] for c in json.load(handle)["cells"] if c.get("cell_type") == "code"]
    from IPython.core.inputtransformer2 import TransformerManager

    transform = TransformerManager().transform_cell
    before = _identities(checks)
    namespace: dict[str, Any] = {"__name__": "__main__", "get_ipython": _Shell}
    _Shell.user_ns = namespace

    def on_alarm(signum: int, frame: Any) -> None:
        raise _CellTimeout()

    signal.signal(signal.SIGALRM, on_alarm)
    for source in cells:
        source = "".join(source) if isinstance(source, list) else str(source)
        try:
            signal.alarm(args.cell_timeout)
            exec(compile(transform(source), "<cell>", "exec"), namespace)
        except (Exception, _CellTimeout, SystemExit, KeyboardInterrupt):
            pass
        finally:
            signal.alarm(0)
    changed = _changed(before, checks)
    results = []
    for key in keys:
        target = targets[key]
        row: dict[str, Any] = {"key": key}
        if changed:
            row.update(status="tampered", why=changed)
        elif not target or target not in namespace:
            row["status"] = "target-missing"
        else:
            # A check runs the student's code too (a process group, a training step): it gets the same
            # time limit as a cell, so a hang ends as a failed exercise instead of holding the grader.
            try:
                signal.alarm(args.cell_timeout)
                result = run(args.lab, key, namespace[target])
            except _CellTimeout:
                row.update(status="not-evaluated", why=f"the check ran longer than {args.cell_timeout} s")
                results.append(row)
                continue
            finally:
                signal.alarm(0)
            row.update(status="checked", passed=result.passed, en=result.en, zh=result.zh)
        results.append(row)
    out.write(json.dumps({"results": results}, ensure_ascii=False))
    out.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
