"""Worker functions for lab 11 (sharded training: DeviceMesh, DTensor, FSDP2, distributed checkpoints).

Like `devicekit_labs.workers`, they live in an importable module so `devicekit.distributed.spawn` can start
them in fresh processes, and each rank sends a small dict back (``out``: a folder where rank N writes
``rank<N>.json``, a queue, or ``None``)::

    from devicekit.distributed import spawn
    from devicekit_labs import sharded_workers as sw

    spawn(sw.mesh_demo, nprocs=2, args=(2, "mesh-out"))
    sw.collect_results("mesh-out")   # one dict per rank: its shard, where it lives, the errors it met

The backend follows the machine: ``nccl`` and one GPU per rank when ``torch.cuda.is_available()`` and there
are enough GPUs, ``gloo`` and the CPU otherwise. The DeviceMesh is built for the device type of that backend
(``init_device_mesh("cuda", ...)`` or ``init_device_mesh("cpu", ...)``). Every worker destroys its process
group before it returns, after a barrier (see `devicekit_labs.workers`).
"""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from devicekit.distributed import setup
from devicekit_labs.workers import collect_results, deliver, leave_group

__all__ = [
    "backend_for",
    "collect_results",
    "fsdp_resume",
    "fsdp_train",
    "make_model",
    "mesh_demo",
    "state_digest",
]


def backend_for(world_size: int) -> str:
    """``nccl`` when this machine has a CUDA GPU for each of ``world_size`` ranks, else ``gloo``."""
    if torch.cuda.is_available() and dist.is_nccl_available() and torch.cuda.device_count() >= world_size:
        return "nccl"
    return "gloo"


def make_model() -> nn.Module:
    """The lab's small model: two linear layers (the seed makes every rank build the same one)."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))


def _full(tensor: torch.Tensor) -> torch.Tensor:
    """The whole tensor on the CPU: a DTensor is gathered from every rank first (a collective)."""
    full = getattr(tensor, "full_tensor", None)
    return (full() if full is not None else tensor).detach().to("cpu", torch.float64)


def state_digest(tensors: list[torch.Tensor]) -> str:
    """sha256 of the given tensors' values, gathered and in float64: equal on every rank iff equal data."""
    flat = torch.cat([_full(t).reshape(-1) for t in tensors]) if tensors else torch.zeros(0)
    return hashlib.sha256(flat.numpy().tobytes()).hexdigest()


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return f"{type(err).__name__}: {text.splitlines()[0] if text else ''}"


def _quiet() -> None:
    # DTensor warns at every random init on a CPU mesh (its RNG tracker is for accelerators); lesson 11
    # shows that warning once, the workers keep their output short.
    warnings.filterwarnings("ignore", message="DTensor random operators may not have complete support")


def mesh_demo(rank: int, world_size: int, out: Any = None) -> dict[str, Any]:
    """A DeviceMesh over all ranks, one tensor sharded and one replicated, and the errors of mixing them.

    Each rank reports its mesh (device type, shape), the rows of an 8 x 2 tensor it holds under
    ``Shard(0)`` (``to_local()``, and on which device), the shape it holds under ``Replicate()``, and the
    first line of two real errors: a DTensor plus a plain tensor (DTensor refuses, whatever the plain tensor's
    device), and a DTensor whose local tensor is on ``meta`` plus one on the mesh's device (meta's kernel
    refuses to mix devices).
    """
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    _quiet()
    info = setup(backend_for(world_size))
    finished = False
    try:
        mesh = init_device_mesh(info.device.type, (info.world_size,))
        full = torch.arange(16.0).reshape(8, 2)
        sharded = distribute_tensor(full, mesh, [Shard(0)])
        replicated = distribute_tensor(full, mesh, [Replicate()])
        local = sharded.to_local()
        errors = {}
        try:
            sharded + torch.ones(8, 2, device=info.device)
        except RuntimeError as err:
            errors["plain"] = _first_line(err)
        on_meta = distribute_tensor(torch.ones(8, 2, device="meta"), mesh, [Shard(0)])
        try:
            on_meta + sharded
        except RuntimeError as err:
            errors["meta"] = _first_line(err)
        result = {
            "rank": info.rank,
            "world_size": info.world_size,
            "backend": info.backend,
            "mesh_device_type": mesh.device_type,
            "mesh_shape": list(mesh.shape),
            "placements": [str(p) for p in sharded.placements],
            "global_shape": list(sharded.shape),
            "dtensor_device": str(sharded.device),
            "local_rows": local[:, 0].div(2).int().tolist(),
            "local_device": str(local.device),
            "replicated_local_shape": list(replicated.to_local().shape),
            "meta_local_device": str(on_meta.to_local().device),
            "gathered_equal": bool(torch.equal(sharded.full_tensor().cpu(), full)),
            "errors": errors,
        }
        finished = True
    finally:
        leave_group(finished)
    return deliver(result, out)


def _materialised_fsdp(mesh, device: torch.device) -> nn.Module:
    """The lab's model built on meta (no memory), sharded, given storage on ``device``, initialised."""
    from torch.distributed.fsdp import fully_shard

    with torch.device("meta"):
        model = make_model()
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    model.to_empty(device=device)  # storage on this rank's device, values not yet set
    torch.manual_seed(0)
    for module in model.modules():
        if hasattr(module, "reset_parameters"):
            module.reset_parameters()  # each layer's own initialisation, on its local shard
    return model


def fsdp_train(
    rank: int, world_size: int, out: Any = None, steps: int = 5, checkpoint: str | None = None
) -> dict[str, Any]:
    """FSDP2 on a mesh of all ranks: meta init, ``to_empty``, ``reset_parameters``, a few Adam steps.

    Each rank reports where its parameters live (the DTensor's device and its local shard's), the local and
    the global shape, its losses (each rank trains on its own batches), a digest of the gathered parameters
    (the same on every rank) and of its own shard (different), and the first line of the error a forward
    raises when the model is still on meta.

    With ``checkpoint`` (a folder), it also saves a distributed checkpoint there: ``dcp.save`` of
    ``get_state_dict(model, optimizer)`` into ``<checkpoint>/dcp`` (each rank writes its own shards), and
    rank 0 writes the full model state dict with ``torch.save`` to ``<checkpoint>/full.pt``. The digests of
    the gathered parameters and optimizer state are reported, so a resume can be compared against them.
    """
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict, get_state_dict
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    _quiet()
    info = setup(backend_for(world_size))
    finished = False
    try:
        mesh = init_device_mesh(info.device.type, (info.world_size,))
        with torch.device("meta"):
            on_meta = make_model()
        fully_shard(on_meta, mesh=mesh)
        try:
            on_meta(torch.ones(2, 4, device=info.device))
            meta_error = None
        except RuntimeError as err:
            meta_error = _first_line(err)
        del on_meta

        model = _materialised_fsdp(mesh, info.device)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
        data = torch.Generator().manual_seed(2000 + info.rank)  # a different batch on every rank
        losses = []
        for _ in range(steps):
            x = torch.randn(32, 4, generator=data).to(info.device)
            y = x.sum(dim=1, keepdim=True)
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()  # FSDP reduce-scatters the gradients: each rank keeps its shard's
            optimizer.step()
            losses.append(round(loss.item(), 4))
        weight = model[0].weight
        params = list(model.parameters())
        result = {
            "rank": info.rank,
            "world_size": info.world_size,
            "backend": info.backend,
            "device": str(info.device),
            "meta_forward_error": meta_error,
            "param_type": type(weight).__name__,
            "placements": [str(p) for p in weight.placements],
            "global_shape": list(weight.shape),
            "local_shape": list(weight.to_local().shape),
            "param_device": str(weight.device),
            "local_device": str(weight.to_local().device),
            "losses": losses,
            "digest": state_digest(params),
            "shard_digest": hashlib.sha256(
                torch.cat([p.to_local().detach().reshape(-1).cpu() for p in params]).numpy().tobytes()
            ).hexdigest(),
        }
        if checkpoint is not None:
            folder = Path(checkpoint)
            model_sd, optim_sd = get_state_dict(model, optimizer)
            dcp.save({"model": model_sd, "optim": optim_sd}, checkpoint_id=str(folder / "dcp"))
            full = get_model_state_dict(
                model, options=StateDictOptions(full_state_dict=True, cpu_offload=True)
            )
            if info.rank == 0:
                torch.save(full, folder / "full.pt")
            moments = [optimizer.state[p][k] for p in params for k in ("exp_avg", "exp_avg_sq")]
            result.update(
                checkpoint=str(folder),
                optim_digest=state_digest(moments),
                optim_step=float(optimizer.state[params[0]]["step"]),
                saved_types=sorted({type(v).__name__ for v in model_sd.values()}),
            )
        del model, optimizer
        finished = True
    finally:
        leave_group(finished)
    return deliver(result, out)


def fsdp_resume(rank: int, world_size: int, out: Any = None, checkpoint: str = "") -> dict[str, Any]:
    """Resume the checkpoint `fsdp_train` saved, on ``world_size`` ranks (any number, 1 included).

    Builds the sharded model on this mesh as `fsdp_train` does, then ``get_state_dict`` (the tensors to load
    into: this rank's shards, on its device), ``dcp.load`` (DCP reads the pieces each shard needs, whatever
    the world size that saved them) and ``set_state_dict``. Also loads ``full.pt`` with
    ``map_location=info.device``, this rank's own device. Reports the digests to compare with the save.
    """
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
    from torch.distributed.device_mesh import init_device_mesh

    _quiet()
    info = setup(backend_for(world_size))
    finished = False
    try:
        folder = Path(checkpoint)
        mesh = init_device_mesh(info.device.type, (info.world_size,))
        model = _materialised_fsdp(mesh, info.device)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
        model_sd, optim_sd = get_state_dict(model, optimizer)
        state = {"model": model_sd, "optim": optim_sd}
        dcp.load(state, checkpoint_id=str(folder / "dcp"))
        set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
        params = list(model.parameters())
        moments = [optimizer.state[p][k] for p in params for k in ("exp_avg", "exp_avg_sq")]
        full = torch.load(folder / "full.pt", map_location=info.device, weights_only=True)
        result = {
            "rank": info.rank,
            "world_size": info.world_size,
            "backend": info.backend,
            "device": str(info.device),
            "local_shape": list(model[0].weight.to_local().shape),
            "local_device": str(model[0].weight.to_local().device),
            "digest": state_digest(params),
            "optim_digest": state_digest(moments),
            "optim_step": float(optimizer.state[params[0]]["step"]),
            "full_devices": sorted({str(t.device) for t in full.values()}),
        }
        del model, optimizer
        finished = True
    finally:
        leave_group(finished)
    return deliver(result, out)
