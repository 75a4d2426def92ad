"""Worker functions a notebook can hand to `devicekit.distributed.spawn`.

``spawn`` starts fresh Python processes that import the worker by module and name, so a function typed
into a notebook cell cannot be used (it lives in the notebook's ``__main__``, which the new processes
do not have).  These workers live in an importable module and run on CPU with ``gloo``, so the labs can
show real multi-process DDP on a laptop::

    from devicekit_labs import workers as dist_workers
    from devicekit.distributed import spawn

    spawn(dist_workers.ddp_train_step, nprocs=2, args=(2, "ddp-out"))
    dist_workers.collect_results("ddp-out")   # one dict per rank, identical parameter checksums

Each worker sends a small dict back, because ``spawn`` discards return values: ``out`` is a directory
(each rank writes ``rank<N>.json`` there), anything with a ``put`` method (a queue from
``torch.multiprocessing.get_context("spawn")``), or ``None`` (only returned, for direct calls).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from devicekit.distributed import setup, teardown

__all__ = [
    "PROBES",
    "all_reduce_demo",
    "batchnorm_demo",
    "collect_results",
    "ddp_train_step",
    "deliver",
    "leave_group",
    "param_digest",
    "resume_demo",
    "straggler_demo",
]


def param_digest(module: nn.Module) -> tuple[float, str]:
    """``(checksum, sha256)`` of all parameters: the sum shows the size of a change, the hash any change."""
    flat = torch.cat([p.detach().reshape(-1).to("cpu", torch.float64) for p in module.parameters()])
    return float(flat.sum()), hashlib.sha256(flat.numpy().tobytes()).hexdigest()


def deliver(result: dict[str, Any], out: Any) -> dict[str, Any]:
    """Send a rank's ``result`` back (``spawn`` drops return values): to ``out``'s ``put`` (a queue), as
    ``rank<N>.json`` in the folder ``out`` (written whole, then renamed), or nowhere when ``out`` is None."""
    if out is None:
        return result
    if hasattr(out, "put"):
        out.put(result)
        return result
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"rank{result['rank']}.json"
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1), encoding="utf-8")
    os.replace(tmp, target)  # the reader never sees half a file
    return result


def collect_results(folder: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The dicts the ranks wrote into ``folder``, sorted by rank."""
    results = [json.loads(p.read_text(encoding="utf-8")) for p in Path(folder).glob("rank*.json")]
    return sorted(results, key=lambda r: r["rank"])


def leave_group(finished: bool) -> None:
    """Destroy the process group; after a successful run, only once every rank has got this far.

    Without the barrier a fast rank destroys its group (and rank 0 the rendezvous store) while a slower
    one may still be finishing the last collective; that, or a group still held by a DDP reducer and freed
    only during interpreter shutdown, is the likely cause of a rare worker abort at exit ("terminate called
    without an active exception", SIGABRT) seen under load.  PyTorch's own multi-process tests also end
    each test with ``c10d.barrier()``.  ``gc.collect()`` frees a DDP model (its reducer holds the group)
    while the interpreter is still fully alive.  After an error there is no barrier: the other ranks may
    never arrive, and ``spawn`` stops them anyway.
    """
    try:
        if finished and dist.is_initialized():
            dist.barrier()
    finally:
        gc.collect()
        teardown()


def ddp_train_step(rank: int, world_size: int, out: Any = None, steps: int = 2) -> dict[str, Any]:
    """Train a tiny model for ``steps`` steps under DistributedDataParallel and report its parameters.

    What it shows, rank by rank:

    1. each rank builds the model with a *different* seed, so the parameters start out different
       (``digest_before_ddp`` differs between ranks);
    2. wrapping it in ``DistributedDataParallel`` broadcasts rank 0's parameters to every rank;
    3. every rank trains on *its own* random batch, yet after each ``backward()`` DDP all-reduces
       (averages) the gradients, so every optimizer takes the same step and the parameters stay
       identical: ``checksum`` and ``digest`` agree on all ranks, and ``identical`` (checked with an
       ``all_gather``) is ``True``.

    CPU and ``gloo``, so no ``device_ids``: ``device_ids=[local_rank]`` is only for a model on one GPU,
    and on a CPU model DDP raises "device_ids and output_device arguments only work with
    single-device/multiple-device GPU modules or CPU modules".  Launch with
    ``spawn(ddp_train_step, nprocs=2, args=(2, folder))``.
    """
    from torch.nn.parallel import DistributedDataParallel as DDP

    info = setup("gloo")
    finished = False
    try:
        if info.world_size != world_size:
            raise RuntimeError(f"started with world_size={world_size}, but the group has {info.world_size}")
        torch.manual_seed(1000 + info.rank)  # deliberately different initial weights per rank
        model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1)).to(info.device)
        _, digest_before = param_digest(model)
        ddp = DDP(model)  # broadcasts rank 0's parameters
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
        data = torch.Generator().manual_seed(2000 + info.rank)  # a different batch on every rank
        losses = []
        for _ in range(steps):
            x = torch.randn(16, 4, generator=data).to(info.device)
            y = x.sum(dim=1, keepdim=True)
            loss = nn.functional.mse_loss(ddp(x), y)
            optimizer.zero_grad()
            loss.backward()  # gradients are averaged across ranks here
            optimizer.step()
            losses.append(loss.item())
        checksum, digest = param_digest(model)
        flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
        gathered = [torch.empty_like(flat) for _ in range(info.world_size)]
        dist.all_gather(gathered, flat)
        result = {
            "rank": info.rank,
            "world_size": info.world_size,
            "backend": info.backend,
            "device": str(info.device),
            "digest_before_ddp": digest_before,
            "checksum": checksum,
            "digest": digest,
            "identical": all(torch.equal(gathered[0], other) for other in gathered[1:]),
            "losses": losses,
        }
        del ddp, optimizer  # the reducer holds the group: let it go before the group is destroyed
        finished = True
    finally:
        leave_group(finished)
    return deliver(result, out)


def all_reduce_demo(
    rank: int, world_size: int, out: Any = None, backend: str | None = "gloo"
) -> dict[str, Any]:
    """Each rank contributes ``rank + 1``; after ``all_reduce(SUM)`` every rank holds 1 + 2 + ... + N.

    The smallest collective there is: every rank must call it, with a tensor on the backend's device
    (CPU for gloo, its own GPU for nccl), and every rank gets the same result.  ``backend="gloo"`` by
    default so it runs anywhere (Colab has one GPU, and nccl needs one GPU per process); ``None`` picks
    nccl when there are GPUs.
    """
    info = setup(backend)
    finished = False
    try:
        tensor = torch.tensor([float(info.rank + 1)], device=info.device)
        before = float(tensor)
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        result = {
            "rank": info.rank,
            "world_size": info.world_size,
            "backend": info.backend,
            "device": str(info.device),
            "before": before,
            "after": float(tensor),
            "expected": float(world_size * (world_size + 1) // 2),
        }
        finished = True
    finally:
        leave_group(finished)
    return deliver(result, out)


def _same_on_all_ranks(tensor: torch.Tensor) -> bool:
    """Whether every rank holds exactly these values (an ``all_gather``: every rank must call it)."""
    gathered = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, tensor.contiguous())
    return all(torch.equal(gathered[0], other) for other in gathered[1:])


def batchnorm_demo(rank: int, world_size: int, out: Any = None) -> dict[str, Any]:
    """What DDP does with BatchNorm's running statistics, and what ``SyncBatchNorm`` does on CPU processes.

    1. ``stats``: for ``broadcast_buffers`` True (the default) and False, every rank trains two steps on its
       own batches; a forward pre-hook on the BatchNorm layer records ``running_mean`` at the start of its
       second forward (after DDP's broadcast before the forward, before the layer updates it) and after it.
       ``same_at_start`` / ``same_after`` say whether all ranks held the same values there.
    2. ``converted``: the layer's class after ``nn.SyncBatchNorm.convert_sync_batchnorm``; ``ddp_error``: what
       ``DDP`` raises when wrapping that model on the CPU; ``forward_error``: what the layer's own forward
       raises in training mode inside a process group; ``eval_forward_ok``: that eval mode still runs.
    """
    import warnings

    from torch.nn.parallel import DistributedDataParallel as DDP

    info = setup("gloo")
    finished = False
    try:
        stats = {}
        for broadcast in (True, False):
            torch.manual_seed(0)  # the same initial weights on every rank
            model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3)).to(info.device)
            seen: list[torch.Tensor] = []
            model[1].register_forward_pre_hook(
                lambda module, args, seen=seen: seen.append(module.running_mean.clone())
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)  # torch 2.13 deprecates broadcast_buffers
                ddp = DDP(model, broadcast_buffers=broadcast)
            optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
            data = torch.Generator().manual_seed(100 + info.rank)  # each rank its own batches
            for _ in range(2):
                x = (torch.randn(8, 4, generator=data) + info.rank).to(info.device)
                optimizer.zero_grad()
                ddp(x).square().mean().backward()
                optimizer.step()
            after = model[1].running_mean.detach().clone()
            stats[str(broadcast)] = {
                "at_start": [round(v, 4) for v in seen[1].tolist()],
                "after": [round(v, 4) for v in after.tolist()],
                "same_at_start": _same_on_all_ranks(seen[1]),
                "same_after": _same_on_all_ranks(after),
            }
            del ddp, optimizer
        sync = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3)))
        result: dict[str, Any] = {
            "rank": info.rank,
            "world_size": info.world_size,
            "device": str(info.device),
            "stats": stats,
            "converted": type(sync[1]).__name__,
        }
        try:
            DDP(sync)
            result["ddp_error"] = None
        except ValueError as err:
            result["ddp_error"] = f"ValueError: {err}"
        try:
            sync(torch.randn(8, 4))
            result["forward_error"] = None
        except ValueError as err:
            result["forward_error"] = f"ValueError: {err}"
        sync.eval()
        result["eval_forward_ok"] = tuple(sync(torch.randn(8, 4)).shape) == (8, 3)
        finished = True
    finally:
        leave_group(finished)
    return deliver(result, out)


def resume_demo(rank: int, world_size: int, out: Any = None, path: str = "") -> dict[str, Any]:
    """Resume from one checkpoint on rank 0 only, then on every rank; each time train one DDP step.

    ``path`` holds ``{"model": ..., "optimizer": ...}`` (SGD with momentum, so the optimizer has state).
    Every rank builds the model with a different seed; in ``"rank 0 only"`` rank 0 alone loads the file, in
    ``"every rank"`` each rank does. ``torch.load`` gets a ``map_location`` function that records each
    location the file names and puts the storage on this rank's device (``info.device``: the CPU here,
    ``cuda:<local rank>`` on GPUs). Reported per way: ``locations`` (what the function was given),
    ``has_momentum`` (this rank's optimizer has state to resume), ``same_after_wrap`` (DDP's construction
    broadcast made the weights equal) and ``same_after_step`` (the ranks still agree after one step).
    """
    from torch.nn.parallel import DistributedDataParallel as DDP

    info = setup("gloo")
    finished = False
    try:
        result: dict[str, Any] = {"rank": info.rank, "world_size": info.world_size}
        for way in ("rank 0 only", "every rank"):
            torch.manual_seed(100 + info.rank)  # different weights on every rank before resuming
            model = nn.Linear(4, 1).to(info.device)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
            locations: list[str] = []

            def to_my_device(storage, location, locations=locations):
                locations.append(location)
                return storage.to(device=info.device)

            if way == "every rank" or info.rank == 0:
                checkpoint = torch.load(path, map_location=to_my_device)
                model.load_state_dict(checkpoint["model"])
                optimizer.load_state_dict(checkpoint["optimizer"])
            has_momentum = bool(optimizer.state)
            ddp = DDP(model)  # broadcasts rank 0's parameters and buffers, nothing else

            def weights(model=model):
                return torch.cat([p.detach().reshape(-1) for p in model.parameters()])

            same_after_wrap = _same_on_all_ranks(weights())
            data = torch.Generator().manual_seed(200 + info.rank)
            x = torch.randn(8, 4, generator=data).to(info.device)
            optimizer.zero_grad()
            ddp(x).square().mean().backward()  # DDP averages the gradients: equal on every rank
            optimizer.step()
            result[way] = {
                "locations": sorted(set(locations)),
                "has_momentum": has_momentum,
                "same_after_wrap": same_after_wrap,
                "same_after_step": _same_on_all_ranks(weights()),
            }
            del ddp, optimizer
        finished = True
    finally:
        leave_group(finished)
    return deliver(result, out)


#: The prefix c10d puts before each log line: ``[rank0]:[E1130 19:34:15.385269979 ProcessGroupGloo.cpp:67] ``.
_LOG_PREFIX = re.compile(r"^(\[rank\d+\]:)?\[[IWEF]\d{4} [\d:.]+ [^\]]*\] ?")


@contextlib.contextmanager
def _stderr_lines() -> Iterator[list[str]]:
    """Collect what this process writes to file descriptor 2 (C++ logs included) instead of showing it.

    A notebook shows its children's stderr in the cell that started them; c10d's log lines carry a
    timestamp, so the lines are returned (prefix stripped) in the worker's result instead.
    """
    lines: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield lines
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            text = sink.read().decode("utf-8", errors="replace")
            lines.extend(_LOG_PREFIX.sub("", line) for line in text.splitlines() if line.strip())


#: What a waiting rank can call in `straggler_demo`.
PROBES: tuple[str, ...] = ("all_reduce", "monitored_barrier")


def straggler_demo(
    rank: int,
    world_size: int,
    out: Any = None,
    timeout_s: float = 3.0,
    probe: str = "all_reduce",
    late_rank: int = 1,
) -> dict[str, Any]:
    """One rank never reaches the collective; the others wait until the group's timeout, then fail.

    This is the "GPUs idle for hours" bug in small: rank ``late_rank`` is busy elsewhere (here it
    sleeps ``timeout_s + 1`` seconds, as a rank stuck in its data loader or in an ``if rank == 0:``
    branch would), while every other rank calls ``probe`` and blocks. Nothing raises until the
    process group's ``timeout`` runs out; with PyTorch's defaults that is 30 minutes for gloo and 10 for
    NCCL. ``probe="monitored_barrier"`` (gloo only) fails after the same time but names the rank
    that did not arrive. Each rank reports ``waited_s`` (measured), ``error`` (the first line of
    PyTorch's message, or ``None``) and ``log`` (what c10d logged meanwhile, timestamps removed).
    """
    if probe not in PROBES:
        raise ValueError(f"probe must be one of {PROBES}, got {probe!r}")
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}")
    info = setup("gloo", timeout=timeout_s)
    result: dict[str, Any] = {"rank": info.rank, "world_size": info.world_size, "probe": probe}
    start = time.monotonic()
    try:
        if info.rank == late_rank:
            time.sleep(timeout_s + 1.0)  # never reaches the collective
            result.update(called=None, error=None, log=[])
        else:
            result["called"] = probe
            with _stderr_lines() as log:
                try:
                    if probe == "all_reduce":
                        dist.all_reduce(torch.ones(1))
                    else:
                        dist.monitored_barrier(timeout=timedelta(seconds=timeout_s), wait_all_ranks=True)
                    result["error"] = None
                except RuntimeError as err:  # gloo's timeout is a DistBackendError, a RuntimeError
                    first_line = str(err).strip().splitlines()[0] if str(err).strip() else ""
                    result["error"] = f"{type(err).__name__}: {first_line}"
            result["log"] = log
        result["waited_s"] = round(time.monotonic() - start, 1)
    finally:
        teardown()
    return deliver(result, out)
