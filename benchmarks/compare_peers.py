"""Compare what devicekit.to_device and its peers do with the batches of the API reference's table.

Prints the "compared with accelerate / Lightning / pytree" table of docs/reference/index.md (en + zh) as
markdown, measured on the installed versions (not part of the test suite: the peers are the ``bench``
extra).  Run:  .venv/bin/python benchmarks/compare_peers.py
"""

from __future__ import annotations

import collections
import dataclasses
import warnings

import accelerate
import lightning_fabric
import torch
from accelerate.utils import send_to_device
from lightning_fabric.utilities.apply_func import move_data_to_device
from torch import nn
from torch.utils._pytree import tree_map

from devicekit import to_device

warnings.filterwarnings("ignore")
M = torch.device("meta")


def pyt(b, d):
    return tree_map(lambda x: x.to(d) if isinstance(x, torch.Tensor) else x, b)


peers = {
    "devicekit": lambda b: to_device(b, M),
    "accelerate": lambda b: send_to_device(b, M),
    "lightning": lambda b: move_data_to_device(b, M),
    "pytree": lambda b: pyt(b, M),
}


@dataclasses.dataclass(frozen=True)
class Fz:
    x: torch.Tensor


@dataclasses.dataclass
class InitF:
    x: torch.Tensor
    y: torch.Tensor = dataclasses.field(init=False)

    def __post_init__(self):
        self.y = self.x + 1


@dataclasses.dataclass
class PI:
    x: torch.Tensor

    def __post_init__(self):
        self.extra = torch.ones(1)


class Obj:
    def __init__(self):
        self.t = torch.ones(1)

    def to(self, d, non_blocking=False):
        o = Obj()
        o.t = self.t.to(d)
        return o


t = torch.ones(1)


def cyc():
    lst = [t]
    lst.append(lst)
    return lst


def dev(x):
    return getattr(x, "device", None)


cases = {
    "defaultdict factory kept": (
        lambda: collections.defaultdict(list, a=t),
        lambda o: isinstance(o, collections.defaultdict) and o.default_factory is list and dev(o["a"]) == M,
    ),
    "frozen dataclass moved": (lambda: Fz(t), lambda o: dev(o.x) == M),
    "init=False field moved": (lambda: InitF(t), lambda o: dev(o.y) == M and dev(o.x) == M),
    "__post_init__ attribute moved": (lambda: PI(t), lambda o: dev(o.extra) == M),
    "shared tensor moved once": (lambda: [t, t], lambda o: o[0] is o[1]),
    "deque moved": (lambda: collections.deque([t]), lambda o: dev(o[0]) == M),
    "ChainMap keeps its maps": (
        lambda: collections.ChainMap({"a": t}, {"a": t, "b": t}),
        lambda o: isinstance(o, collections.ChainMap) and len(o.maps) == 2 and dev(o.maps[1]["a"]) == M,
    ),
    "set moved": (lambda: {t}, lambda o: all(dev(x) == M for x in o)),
    "nn.Parameter stays a Parameter": (
        lambda: [nn.Parameter(torch.ones(1))],
        lambda o: type(o[0]) is nn.Parameter and dev(o[0]) == M,
    ),
    "nn.Module left alone": (lambda: [nn.Linear(1, 1)], lambda o: o[0].weight.device.type == "cpu"),
    "object with .to moved": (lambda: [Obj()], lambda o: dev(o[0].t) == M),
    "input not mutated": (lambda: {"a": [t]}, None),
}
rows = []
for name, (make, ok) in cases.items():
    row = [name]
    for fn in peers.values():
        b = make()
        try:
            o = fn(b)
            if ok is None:
                r = "yes" if dev(b["a"][0]) == torch.device("cpu") and o is not b else "no"
            else:
                r = "yes" if ok(o) else "no"
        except Exception as e:
            r = "error:" + type(e).__name__
        row.append(r)
    rows.append(row)


def extremes(fn):
    out = []
    for make in (cyc, deep):
        try:
            fn(make())
            out.append("yes")
        except RecursionError:
            out.append("RecursionError")
        except ValueError:
            out.append("ValueError naming the path")
        except Exception as e:
            out.append(f"error: {type(e).__name__}")
    return out


def deep():
    b = [t]
    for _ in range(5000):
        b = [b]
    return b


ext = {p: extremes(fn) for p, fn in peers.items()}
rows.append(["reference cycle", *(ext[p][0] for p in peers)])
rows.append(["5,000-deep list", *(ext[p][1] for p in peers)])
versions = {"torch": torch, "accelerate": accelerate, "lightning-fabric": lightning_fabric}
print(", ".join(f"{name} {module.__version__}" for name, module in versions.items()))
print("| batch | " + " | ".join(peers) + " |")
print("|---|" + "---|" * len(peers))
for r in rows:
    print("| " + " | ".join(r) + " |")
