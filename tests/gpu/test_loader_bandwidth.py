"""``DeviceLoader`` on a real GPU: does prefetching on a side stream pay, and how close to the wire?

The claim in ``devicekit/loader.py`` is that on CUDA the host->device copy of batch *n+1* overlaps the
compute on batch *n*. On a CPU machine nothing can check that, so this test measures it:

* the reference: pinned ``tensor.to('cuda', non_blocking=True)`` of one batch, timed with CUDA events
  (the copy bandwidth this machine really has for that transfer size);
* ``DeviceLoader`` alone over a synthetic ``DataLoader`` of large, already pinned batches must reach
  ``SHARE`` of that bandwidth (its per-batch Python and stream bookkeeping must not cost more);
* with a fake compute step as long as one copy, the prefetching loop must take less than
  ``OVERLAP_BOUND`` times the copy + compute serial time (the no-overlap total), and less than the same
  loop without prefetching measured for real.

The figures are printed and recorded for ``results/gpu-check.json``.
"""

from __future__ import annotations

import statistics
import time

import pytest
import torch

from devicekit import DeviceLoader

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA GPU (torch.cuda.is_available() is False)"
)

BATCH_MIB = 64  # one batch: large enough that a copy runs far longer than the per-batch overhead
BATCHES = 48  # per timed pass (3 GiB)
BUFFERS = 4  # distinct pinned host buffers the dataset cycles through
SHARE = 0.7  # DeviceLoader throughput / pinned copy bandwidth must reach this
OVERLAP_BOUND = 0.9  # prefetch time / (copy + compute serial time) must stay below this
PASSES = 3  # each timing is the best of this many passes


class PinnedBatches(torch.utils.data.Dataset):
    """``BATCHES`` ready-made float32 batches of ``BATCH_MIB`` MiB each, already in pinned memory.

    Already pinned, so the measurement is of the copy and of DeviceLoader, not of pinning (a
    ``DataLoader(pin_memory=True)`` with workers does that in the background in real training).
    """

    def __init__(self) -> None:
        numel = BATCH_MIB * 2**20 // 4
        self.buffers = [torch.full((numel,), float(i)).pin_memory() for i in range(BUFFERS)]

    def __len__(self) -> int:
        return BATCHES

    def __getitem__(self, index: int) -> torch.Tensor:
        return self.buffers[index % BUFFERS]


def _loader(dataset: PinnedBatches) -> torch.utils.data.DataLoader:
    # batch_size=None: items are whole batches; pin_memory=True tells DeviceLoader they are pinned.
    return torch.utils.data.DataLoader(dataset, batch_size=None, pin_memory=True)


def _event_seconds(fn) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1000


def _pinned_bandwidth(host: torch.Tensor, reps: int = 10) -> float:
    """Bytes per second of ``host.to('cuda', non_blocking=True)`` (median of ``reps``, after warm-up)."""
    for _ in range(2):
        host.to("cuda", non_blocking=True)
    times = [_event_seconds(lambda: host.to("cuda", non_blocking=True)) for _ in range(reps)]
    return host.numel() * host.element_size() / statistics.median(times)


def _fake_step(seconds: float):
    """A GPU "training step" of about ``seconds`` that also reads the batch it is given."""
    if hasattr(torch.cuda, "_sleep"):  # a spin kernel: pure GPU time, no memory traffic
        probe = 2_000_000
        torch.cuda._sleep(probe)
        rate = probe / _event_seconds(lambda: torch.cuda._sleep(probe))
        cycles = max(1, int(seconds * rate))

        def step(x: torch.Tensor) -> torch.Tensor:
            torch.cuda._sleep(cycles)
            return x[:1024].sum()

        return step
    a = torch.randn(2048, 2048, device="cuda")  # fallback: matrix products, calibrated the same way
    one = _event_seconds(lambda: a @ a)
    repeats = max(1, round(seconds / one))

    def step(x: torch.Tensor) -> torch.Tensor:
        for _ in range(repeats):
            a @ a
        return x[:1024].sum()

    return step


def _wall(fn) -> float:
    """Best wall time of ``PASSES`` runs of ``fn``, GPU work included (synchronised on both ends)."""
    best = float("inf")
    for _ in range(PASSES):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def test_prefetch_reaches_pinned_bandwidth_and_overlaps(gpu_record):
    device = torch.device("cuda", torch.cuda.current_device())
    batch_bytes = BATCH_MIB * 2**20
    dataset = PinnedBatches()  # pinned once: building it is not part of any timing
    reference = _pinned_bandwidth(dataset[0])
    copy_s = batch_bytes / reference  # one batch's copy at the reference bandwidth
    step = _fake_step(copy_s)
    compute_s = _event_seconds(lambda: step(torch.empty(1024, device=device)))

    def loader_only():
        for _batch in DeviceLoader(_loader(dataset), device):
            pass

    def with_prefetch():
        for batch in DeviceLoader(_loader(dataset), device):
            step(batch)

    def without_prefetch():  # the same loop, copying on the compute stream: nothing overlaps
        for batch in _loader(dataset):
            step(batch.to(device, non_blocking=True))

    for fn in (loader_only, with_prefetch, without_prefetch):  # warm-up: allocator, kernels, threads
        fn()
    loader_s = _wall(loader_only)
    prefetch_s = _wall(with_prefetch)
    serial_measured_s = _wall(without_prefetch)
    serial_s = BATCHES * (copy_s + compute_s)
    figures = {
        "batch_mib": BATCH_MIB,
        "batches": BATCHES,
        "pinned_h2d_gbps": round(reference / 1e9, 2),
        "loader_gbps": round(BATCHES * batch_bytes / loader_s / 1e9, 2),
        "share": round(BATCHES * batch_bytes / loader_s / reference, 3),
        "share_required": SHARE,
        "compute_ms_per_batch": round(compute_s * 1e3, 3),
        "copy_ms_per_batch": round(copy_s * 1e3, 3),
        "serial_s": round(serial_s, 4),
        "prefetch_s": round(prefetch_s, 4),
        "without_prefetch_measured_s": round(serial_measured_s, 4),
        "prefetch_over_serial": round(prefetch_s / serial_s, 3),
        "overlap_bound": OVERLAP_BOUND,
    }
    gpu_record("loader_bandwidth", "device_loader", figures)
    assert figures["share"] >= SHARE, f"DeviceLoader reached {figures['share']:.0%} of pinned bandwidth"
    assert prefetch_s < OVERLAP_BOUND * serial_s, f"no overlap: {figures}"
    assert prefetch_s < serial_measured_s, f"prefetching was not faster than copying inline: {figures}"
