"""The recorded CUDA cases that the simulator reproduces today keep being reproduced.

``benchmarks/simulate_fidelity.py`` re-runs every case of ``scripts/cuda_messages.py`` on a simulated H200
and compares it with ``results/cuda-messages.json`` (recorded on a real H200): raised or not, type and
message verbatim. ``MATCHING`` is the list that matched when this test was written; a case that stops
matching fails here. A case outside it must be explained in the benchmark's ``KNOWN``.
"""

from __future__ import annotations

import importlib.util

from course_tools.paths import ROOT

MATCHING = {
    "add-cpu-first", "add-cuda-first", "add-0dim-cpu-ok", "add-1elem-cpu", "stack-0dim", "cat",
    "linear-bias-cpu-input", "linear-nobias-cpu-input", "matmul", "conv-cpu-input-cuda-weight",
    "conv-cuda-input-cpu-weight", "conv-cudnn-off-cpu-input", "embedding-cpu-indices",
    "embedding-cuda-indices-cpu-weight", "index-cpu-tensor-cuda-indices", "index-cuda-tensor-cpu-indices-ok",
    "index-select-cpu-index", "gather-cpu-index", "scatter-cpu-src", "where-cpu-cond", "mask-cpu-bool",
    "to-numpy", "tolist-ok", "cross-entropy-weight-cpu", "bce-pos-weight-cpu", "lstm-cpu-input",
    "lstm-cpu-hidden", "gru-cpu-hidden", "pack-padded-cuda-lengths", "grid-sample", "out-arg-other-device",
    "generator-cpu-for-cuda", "randperm-default-device-cuda", "pin-cuda-tensor", "meta-copy-out",
    "adam-state-cpu", "fused-adam-state-cpu", "data-parallel-module-on-cpu", "load-cuda1-on-one-gpu",
    "autocast-cuda-on-cpu-math", "deprecated-cuda-amp-autocast", "deprecated-cuda-amp-gradscaler",
    "autocast-output-meets-fp32", "ddp-device-ids-cpu-module", "init-process-group-twice",
}  # fmt: skip


def _benchmark():
    path = ROOT / "benchmarks" / "simulate_fidelity.py"
    spec = importlib.util.spec_from_file_location("simulate_fidelity", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cases_that_match_keep_matching_and_the_others_are_explained():
    bench = _benchmark()
    rows, _ = bench.measure()
    differ = {name: diff for name, diff in rows if diff is not None}
    regressed = {name: differ[name] for name in MATCHING if name in differ}
    assert not regressed, f"cases that matched the H200 recording no longer do: {regressed}"
    unexplained = set(differ) - set(bench.KNOWN)
    assert not unexplained, f"differences without a reason in KNOWN: {unexplained}"
    assert len(MATCHING) / len(rows) >= 0.95


def test_the_comparison_can_fail():
    bench = _benchmark()
    expected = {"raised": True, "type": "builtins.RuntimeError", "message": "a"}
    assert bench.compare(expected, dict(expected)) is None
    assert "message" in bench.compare(expected, {**expected, "message": "b"})
    assert "type" in bench.compare(expected, {**expected, "type": "builtins.TypeError"})
    assert "raised" in bench.compare(expected, {"raised": False, "value": "1"})
