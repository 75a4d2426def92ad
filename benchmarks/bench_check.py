"""Benchmarks for devicekit's diagnostics (not part of the test suite).

1. ``check_devices`` on a ResNet-50-sized model (~25.6M parameters, 161 modules, built from plain nn
   layers because torchvision is not a dependency).  Target: at most 2 ms per call.
2. The forward pass of a small model, timed before and after ``import devicekit`` in the same process.
   devicekit patches nothing global and leaves no hooks, so both numbers should be the same (ratio ~1).

Run:  .venv/bin/python benchmarks/bench_check.py
"""

from __future__ import annotations

import statistics
import sys
import time
import timeit
import warnings

import torch
from torch import nn

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")


class Bottleneck(nn.Module):
    """The ResNet-50 bottleneck block: 1x1 -> 3x3 -> 1x1 convolutions with batch norms."""

    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        cout = width * 4
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        idt = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        return self.relu(self.bn3(self.conv3(out)) + idt)


def resnet50_like(device: str = "cpu") -> nn.Module:
    """Same layer counts and shapes as torchvision's resnet50 (layers 3-4-6-3)."""
    with torch.device(device):
        layers: list[nn.Module] = [
            nn.Conv2d(3, 64, 7, 2, 3, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2, 1),
        ]
        cin = 64
        for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            stage = []
            for i in range(blocks):
                stage.append(Bottleneck(cin, width, stride if i == 0 else 1))
                cin = width * 4
            layers.append(nn.Sequential(*stage))
        layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2048, 1000)]
        return nn.Sequential(*layers)


def bench_forward(model: nn.Module, x: torch.Tensor, number: int = 2000, repeat: int = 15) -> float:
    """Median microseconds per forward call."""
    with torch.no_grad():
        times = timeit.repeat(lambda: model(x), number=number, repeat=repeat)
    return statistics.median(times) / number * 1e6


def main() -> None:
    assert "devicekit" not in sys.modules, "run this file directly: devicekit must not be imported yet"
    torch.manual_seed(0)
    torch.set_num_threads(1)

    # ---- 2a. forward before devicekit is imported
    small = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
    x = torch.randn(8, 64)
    bench_forward(small, x, number=500, repeat=3)  # warm-up
    before = bench_forward(small, x)

    t0 = time.perf_counter()
    import devicekit
    import devicekit.check
    import devicekit.locate
    import devicekit.strict

    import_ms = (time.perf_counter() - t0) * 1e3
    after = bench_forward(small, x)
    before2 = bench_forward(small, x)  # noise estimate: the same measurement once more
    print("forward of a 3-layer MLP (batch 8), median of 15 x 2000 calls:")
    print(f"  before import devicekit: {before:8.2f} us/call")
    print(f"  after  import devicekit: {after:8.2f} us/call   (import took {import_ms:.0f} ms)")
    print(f"  again, for noise:        {before2:8.2f} us/call")
    print(f"  ratio after/before: {after / before:.3f}  (target: 1.0 within noise)")

    # ---- 1. check_devices on a ResNet-50-sized model
    model = resnet50_like("cpu")
    n_params = sum(p.numel() for p in model.parameters())
    n_modules = sum(1 for _ in model.modules())
    batch = {"image": torch.randn(2, 3, 32, 32), "label": torch.tensor([1, 2])}
    check = devicekit.check.check_devices
    report = check(model, batch)
    for _ in range(50):
        check(model, batch)
    number, repeat = 200, 7
    times = timeit.repeat(lambda: check(model, batch), number=number, repeat=repeat)
    per_call = [t / number * 1e3 for t in times]
    print(
        f"\ncheck_devices on a ResNet-50-sized model ({n_params / 1e6:.2f}M parameters, {n_modules} modules,"
    )
    print(f"  {report.n_parameters} parameter tensors, {report.n_buffers} buffers):")
    print(
        f"  median {statistics.median(per_call):.3f} ms/call, best {min(per_call):.3f} ms/call "
        f"(target <= 2 ms)"
    )
    meta_model = resnet50_like("meta")
    t = timeit.timeit(lambda: check(meta_model, device="meta"), number=number) / number * 1e3
    print(f"  same model on meta, device='meta': {t:.3f} ms/call")


if __name__ == "__main__":
    main()
