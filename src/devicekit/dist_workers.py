"""Worker functions a notebook can hand to :func:`devicekit.distributed.spawn`.

``spawn`` starts fresh Python processes that import the worker by module and name, so a function typed
into a notebook cell cannot be used (it lives in the notebook's ``__main__``, which the new processes
do not have).  These workers live in an importable module and run on CPU with ``gloo``, so the labs can
show real multi-process DDP on a laptop::

    from devicekit import dist_workers
    from devicekit.distributed import spawn

    spawn(dist_workers.ddp_train_step, nprocs=2, args=(2, "ddp-out"))
    dist_workers.collect_results("ddp-out")   # one dict per rank, identical parameter checksums

Each worker sends a small dict back, because ``spawn`` discards return values: ``out`` is a directory
(each rank writes ``rank<N>.json`` there), anything with a ``put`` method (a queue from
``torch.multiprocessing.get_context("spawn")``), or ``None`` (only returned, for direct calls).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from devicekit.distributed import setup, teardown

__all__ = ["all_reduce_demo", "collect_results", "ddp_train_step", "param_digest"]


def param_digest(module: nn.Module) -> tuple[float, str]:
    """``(checksum, sha256)`` of all parameters: the sum shows the size of a change, the hash any change."""
    flat = torch.cat([p.detach().reshape(-1).to("cpu", torch.float64) for p in module.parameters()])
    return float(flat.sum()), hashlib.sha256(flat.numpy().tobytes()).hexdigest()


def _deliver(result: dict[str, Any], out: Any) -> dict[str, Any]:
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
    finally:
        teardown()
    return _deliver(result, out)


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
    finally:
        teardown()
    return _deliver(result, out)
