"""The evaluator zygote imports Dynamo once for all its children (`_evaluator._preload_dynamo`).

Why it pays: building an optimizer imports ``torch._dynamo`` (``Optimizer.add_param_group`` is wrapped by
``torch._disable_dynamo``, torch/_compile.py at v2.13.0), and lab 6's judges build one for their reference
checkpoint, so before this every forked evaluator child paid that import. Each case runs in a fresh
interpreter, since this test process may have imported Dynamo already.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _run(code: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env={"PYTHONPATH": SRC}
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.integration  # a fresh Python that imports torch
def test_a_judge_reference_checkpoint_imports_dynamo_without_the_preload() -> None:
    """The PyTorch behaviour the preload answers: lab 6's judge copy of the checkpoint imports Dynamo."""
    seen = _run(
        "import io, json, sys, torch\n"
        "from devicekit_labs import lab06\n"
        "before = 'torch._dynamo' in sys.modules\n"
        "lab06._checkpoint_in_memory()\n"
        "print(json.dumps({'before': before, 'after': 'torch._dynamo' in sys.modules}))\n"
    )
    assert seen == {"before": False, "after": True}


@pytest.mark.integration  # a fresh Python that imports torch
def test_the_preload_imports_dynamo_and_starts_no_thread() -> None:
    """The zygote forks after the preload: it must add no thread (a fork copies only the calling one)."""
    seen = _run(
        "import json, os, sys, threading, torch\n"
        "import devicekit_labs\n"
        "from devicekit_grade import _evaluator\n"
        "tasks = len(os.listdir('/proc/self/task'))\n"
        "_evaluator._preload_dynamo()\n"
        "print(json.dumps({'dynamo': 'torch._dynamo' in sys.modules,\n"
        "                  'new_tasks': len(os.listdir('/proc/self/task')) - tasks,\n"
        "                  'threads': threading.active_count()}))\n"
    )
    assert seen == {"dynamo": True, "new_tasks": 0, "threads": 1}


def test_the_zygote_preloads_before_its_probe() -> None:
    """`serve_forks` preloads before answering ``--probe``, so Dynamo's files are in the run's fingerprint."""
    import inspect

    from devicekit_grade import _evaluator

    source = inspect.getsource(_evaluator.serve_forks)
    assert 0 <= source.index("_preload_dynamo()") < source.index('main(["--probe"')
