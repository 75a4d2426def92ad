"""Benchmark: devicekit.to_device against its peers (not part of the test suite).

Peers, each skipped with a message if it is not installed:

* HF accelerate's ``accelerate.utils.send_to_device``
* Lightning's ``move_data_to_device`` (from ``lightning_fabric``, ``lightning.fabric`` or
  ``pytorch_lightning``)
* a ``torch.utils._pytree.tree_map`` one-liner (always available)

Cases, both with a CPU target and tensors already on the CPU, so what is measured is the walk
itself, not memory copies:

(a) a nested batch: a dict with 5 tensors plus strings, ints and None (one level of nesting);
(b) a single tensor.

Target (issue 14): devicekit / accelerate <= 0.5 on (a) and on (b). Each number is the minimum
over repeats of the mean time per call (timeit, garbage collection off), in microseconds.

Run:  .venv/bin/python benchmarks/bench_transfer.py      (or: make bench)
Needs for the peers:  pip install accelerate lightning-fabric
"""

from __future__ import annotations

import platform
import sys
import timeit
import warnings
from collections.abc import Callable
from typing import Any

import torch

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

from devicekit.transfer import to_device  # noqa: E402

TARGET_RATIO = 0.5
REPEAT = 7


def nested_batch() -> dict[str, Any]:
    """What a typical NLP/vision collate function returns."""
    return {
        "input_ids": torch.randint(0, 30_000, (8, 128)),
        "attention_mask": torch.ones(8, 128, dtype=torch.long),
        "labels": torch.randint(0, 2, (8,)),
        "pixel_values": torch.randn(8, 3, 32, 32),
        "meta": {
            "lengths": torch.full((8,), 128),
            "ids": [f"sample-{i}" for i in range(8)],
            "epoch": 3,
            "source": None,
        },
        "split": "train",
        "step": 1234,
        "extra": None,
    }


def find_peers(device: torch.device) -> tuple[dict[str, Callable[[Any], Any]], list[str]]:
    peers: dict[str, Callable[[Any], Any]] = {}
    missing: list[str] = []
    try:
        from accelerate.utils import send_to_device

        peers["accelerate.send_to_device"] = lambda b: send_to_device(b, device)
    except ImportError:
        missing.append("accelerate (pip install accelerate)")

    move = None
    for mod in (
        "lightning_fabric.utilities.apply_func",
        "lightning.fabric.utilities.apply_func",
        "pytorch_lightning.utilities",
    ):
        try:
            move = __import__(mod, fromlist=["move_data_to_device"]).move_data_to_device
            break
        except (ImportError, AttributeError):
            continue
    if move is not None:
        peers["lightning.move_data_to_device"] = lambda b: move(b, device)
    else:
        missing.append("lightning (pip install lightning-fabric)")

    from torch.utils._pytree import tree_map

    def pytree_move(b: Any) -> Any:
        return tree_map(lambda x: x.to(device) if isinstance(x, torch.Tensor) else x, b)

    peers["torch pytree.tree_map"] = pytree_move
    return peers, missing


def time_call(fn: Callable[[Any], Any], arg: Any) -> float:
    """Microseconds per call: min over REPEAT runs of a loop sized to last ~0.1 s."""
    timer = timeit.Timer(lambda: fn(arg))
    number, _ = timer.autorange()  # smallest 1/2/5*10^k lasting >= 0.2 s
    number = max(number // 2, 1000)
    return min(timer.repeat(repeat=REPEAT, number=number)) / number * 1e6


def sanity_check(name: str, out: Any, case: str) -> None:
    tensors = list(out.values()) if isinstance(out, dict) else [out]
    if case == "nested batch":
        tensors = [*tensors, *out["meta"].values()]
    assert all(t.device.type == "cpu" for t in tensors if isinstance(t, torch.Tensor)), name


def main() -> int:
    device = torch.device("cpu")
    peers, missing = find_peers(device)
    print(f"devicekit.to_device vs peers -- torch {torch.__version__}, Python {platform.python_version()}")
    for m in missing:
        print(f"  skipped peer, not installed: {m}")
    print()

    cases = {"nested batch": nested_batch(), "single tensor": torch.randn(8, 128)}
    rows = []
    failed = False
    for case, arg in cases.items():
        ours = time_call(lambda b: to_device(b, device), arg)
        sanity_check("devicekit", to_device(arg, device), case)
        rows.append((case, "devicekit.to_device", ours, None))
        for name, fn in peers.items():
            sanity_check(name, fn(arg), case)
            theirs = time_call(fn, arg)
            rows.append((case, name, theirs, ours / theirs))
            if name.startswith("accelerate") and ours / theirs > TARGET_RATIO:
                failed = True

    print(f"{'case':<15} {'implementation':<32} {'us/call':>9} {'devicekit/peer':>15}")
    print("-" * 74)
    for case, name, us, ratio in rows:
        r = "" if ratio is None else f"{ratio:.2f}"
        print(f"{case:<15} {name:<32} {us:>9.2f} {r:>15}")
    print()
    if "accelerate.send_to_device" in peers:
        verdict = "MISSED" if failed else "met"
        print(f"target devicekit/accelerate <= {TARGET_RATIO} on both cases: {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
