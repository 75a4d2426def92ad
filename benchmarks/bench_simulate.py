"""Cost of `devicekit.simulate`: the same work on plain CPU tensors and on a simulated GPU, one run.

* a lab-sized training step: a 3-layer MLP (64-128-128-10), batch 32, forward, cross-entropy, backward,
  Adam step;
* a ResNet-18-shaped network (built here: torchvision is not a dependency), batch 8 of 3x224x224,
  forward and backward;
* the overhead per op: a 1-element ``x + y`` (the op costs next to nothing, so the difference is what
  the simulation adds to every op: its Python function mode, dispatch mode and wrapping).

Each figure is the best of ``--repeat`` runs after one warm-up, in CPU seconds of this process
(``time.process_time``) with ``--threads`` intra-op threads (default 1): on a shared machine wall-clock
time measures the neighbours' load as much as this code, and idle OpenMP threads spinning between ops
would count as work. ``--wall`` times with ``time.perf_counter`` instead.
Goal (issue 38): ResNet-18 under simulate() / plain CPU <= 1.5.

Run:  PYTHONPATH=src .venv/bin/python benchmarks/bench_simulate.py [--repeat 3] [--threads 1] [--wall]
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from devicekit.simulate import simulate


class Block(nn.Module):
    """ResNet's basic block: two 3x3 convolutions with batch norm, and the shortcut."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + (x if self.down is None else self.down(x)))


def resnet18(classes: int = 1000) -> nn.Module:
    """ResNet-18's layout (torchvision.models.resnet18): 64-128-256-512 channels, two blocks each."""
    layers: list[nn.Module] = [
        nn.Conv2d(3, 64, 7, 2, 3, bias=False),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.MaxPool2d(3, 2, 1),
    ]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, classes)]
    return nn.Sequential(*layers)


CLOCK = time.process_time


def best(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        start = CLOCK()
        fn()
        times.append(CLOCK() - start)
    return min(times)


def mlp_step(device: str) -> Callable[[], object]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
    model.to(device)
    opt = torch.optim.Adam(model.parameters())
    x, y = torch.randn(32, 64, device=device), torch.randint(0, 10, (32,), device=device)

    def step() -> None:
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    return step


def resnet_step(device: str) -> Callable[[], object]:
    torch.manual_seed(0)
    model = resnet18().to(device)
    x = torch.randn(8, 3, 224, 224, device=device)

    def step() -> None:
        model.zero_grad()
        model(x).sum().backward()

    return step


def tiny_op(device: str, n: int = 2000) -> Callable[[], object]:
    x, y = torch.ones(1, device=device), torch.ones(1, device=device)

    def ops() -> None:
        for _ in range(n):
            x + y

    return ops


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--wall", action="store_true", help="wall-clock time instead of CPU time")
    args = parser.parse_args(argv)
    global CLOCK
    CLOCK = time.perf_counter if args.wall else time.process_time
    torch.set_num_threads(args.threads)
    clock = "wall-clock" if args.wall else "CPU"
    print(f"torch {torch.__version__}, {platform.machine()}, {torch.get_num_threads()} threads, {clock} time")
    rows = []
    for name, make in (("MLP training step", mlp_step), ("ResNet-18 fwd+bwd, batch 8", resnet_step)):
        plain = best(make("cpu"), args.repeat)
        with simulate():
            simulated = best(make("cuda"), args.repeat)
        rows.append((name, plain, simulated))
    n = 2000
    plain_op = best(tiny_op("cpu", n), args.repeat) / n
    with simulate():
        simulated_op = best(tiny_op("cuda", n), args.repeat) / n
    for name, plain, simulated in rows:
        print(
            f"{name:<28} plain {plain * 1e3:9.2f} ms   simulate() {simulated * 1e3:9.2f} ms   "
            f"ratio {simulated / plain:5.2f}"
        )
    print(
        f"{'1-element x + y, per op':<28} plain {plain_op * 1e6:9.2f} us   simulate() "
        f"{simulated_op * 1e6:9.2f} us   overhead {(simulated_op - plain_op) * 1e6:6.2f} us"
    )
    ratio = rows[1][2] / rows[1][1]
    print(f"goal: ResNet-18 ratio <= 1.5: {'met' if ratio <= 1.5 else 'NOT met'} ({ratio:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
