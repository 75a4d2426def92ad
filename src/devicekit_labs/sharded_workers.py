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
    "TinyBlock",
    "backend_for",
    "collect_results",
    "fsdp_resume",
    "fsdp_train",
    "full_load_demo",
    "local_mask_demo",
    "make_model",
    "mesh_demo",
    "seeded_init_demo",
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


class TinyBlock(nn.Module):
    """A transformer-style block whose values no loop over ``reset_parameters()`` can all restore.

    ``nn.MultiheadAttention`` initialises its ``in_proj_weight`` in ``_reset_parameters`` (it has no
    ``reset_parameters``), ``gain`` is a parameter of the block's own, and ``inv_freq`` is a non-persistent
    buffer computed in ``__init__`` (the RoPE pattern: not in ``state_dict()``, so no checkpoint restores
    it). ``init_weights()`` sets every value; ``__init__`` calls it, and so must whoever gives a block built
    on ``meta`` its storage (``to_empty``), which lesson 11 teaches.
    """

    def __init__(self, vocab: int = 32, dim: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm = nn.LayerNorm(dim)
        self.gain = nn.Parameter(torch.empty(dim))
        self.register_buffer("inv_freq", torch.empty(dim // 2), persistent=False)
        self.init_weights()

    def init_weights(self) -> None:
        """Every value of the block, in place, on the device its tensors are on."""
        for module in self.modules():
            if module is not self and hasattr(module, "reset_parameters"):
                module.reset_parameters()  # the embedding, the norm, the attention's out_proj
        self.attn._reset_parameters()  # MultiheadAttention's own init: in_proj, and out_proj's bias to 0
        nn.init.ones_(self.gain)
        dim = self.gain.shape[0]
        steps = torch.arange(0, dim, 2, device=self.inv_freq.device, dtype=torch.float32)
        with torch.no_grad():
            self.inv_freq.copy_(1.0 / 10000 ** (steps / dim))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        angles = torch.arange(tokens.shape[-1], device=x.device)[:, None] * self.inv_freq
        x = x + torch.cat((angles.sin(), angles.cos()), dim=-1)
        out, _ = self.attn(x, x, x, need_weights=False)
        return self.norm(x + out) * self.gain


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
                lr=float(optimizer.param_groups[0]["lr"]),
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


def local_mask_demo(rank: int, world_size: int, out: Any = None) -> dict[str, Any]:
    """What ``distribute_tensor`` does with a tensor each rank built from its own rows.

    Every rank makes a 4 x 2 "mask" filled with its own rank number (each rank's own data, as a padding
    mask computed from the rank's batch is). ``distribute_tensor(mask, mesh, [Shard(0)])`` is a collective
    that scatters rank 0's tensor (``src_data_rank=0``, its default): every rank gets rows of rank 0's mask.
    ``DTensor.from_local(mask, mesh, [Shard(0)])`` keeps each rank's own rows as its shard (the global tensor
    is world_size x 4 rows); ``src_data_rank=None`` skips the communication and keeps this rank's own chunk
    of its own tensor. Each rank reports the values of its local piece under the three.
    """
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Shard, distribute_tensor

    _quiet()
    info = setup(backend_for(world_size))
    finished = False
    try:
        mesh = init_device_mesh(info.device.type, (info.world_size,))
        mask = torch.full((4, 2), float(info.rank), device=info.device)  # this rank's own values
        scattered = distribute_tensor(mask, mesh, [Shard(0)])
        kept = distribute_tensor(mask, mesh, [Shard(0)], src_data_rank=None)
        own = DTensor.from_local(mask, mesh, [Shard(0)])
        result = {
            "rank": info.rank,
            "world_size": info.world_size,
            "distribute_tensor": sorted(set(scattered.to_local().reshape(-1).tolist())),
            "distribute_tensor_shape": list(scattered.shape),
            "src_data_rank_none": sorted(set(kept.to_local().reshape(-1).tolist())),
            "from_local": sorted(set(own.to_local().reshape(-1).tolist())),
            "from_local_shape": list(own.shape),
        }
        finished = True
    finally:
        leave_group(finished)
    return deliver(result, out)


def seeded_init_demo(rank: int, world_size: int, out: Any = None, rows: int = 5) -> dict[str, Any]:
    """``reset_parameters()`` of ``nn.Linear(4, rows)`` built on meta, sharded over a CPU mesh, seed 0.

    On a CPU mesh each rank fills its local shard from its own generator, so with one seed every rank draws
    the start of the same stream. ``rows`` that do not divide evenly give the ranks shards of different
    sizes (``torch.chunk``'s split: 3 and 2 rows for 5 over 2), so the ranks' streams move on by different
    amounts and the bias, drawn next, is not even a repeat. Each rank reports the gathered weight and bias,
    and its local shapes; the one-CPU values are computed by the caller.
    """
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    _quiet()
    info = setup(backend_for(world_size))
    finished = False
    try:
        mesh = init_device_mesh(info.device.type, (info.world_size,))
        with torch.device("meta"):
            layer = nn.Linear(4, rows)
        fully_shard(layer, mesh=mesh)
        layer.to_empty(device=info.device)
        torch.manual_seed(0)
        layer.reset_parameters()
        result = {
            "rank": info.rank,
            "world_size": info.world_size,
            "local_rows": [layer.weight.to_local().shape[0], layer.bias.to_local().shape[0]],
            "weight": _full(layer.weight).tolist(),
            "bias": _full(layer.bias).tolist(),
        }
        finished = True
    finally:
        leave_group(finished)
    return deliver(result, out)


def full_load_demo(rank: int, world_size: int, out: Any = None, checkpoint: str = "") -> dict[str, Any]:
    """Load the full state dict ``fsdp_train`` saved (``<checkpoint>/full.pt``) into a sharded model.

    The way lesson 11 teaches: the model is built on ``meta``, sharded and given storage on this rank's
    device (``to_empty``: a model still on meta would get the process group's default device, which DCP
    guesses, with a warning, when the group has several backends); rank 0 alone reads the file, onto the CPU
    and memory-mapped (``torch.load(..., map_location="cpu", mmap=True)``), the other ranks pass an empty
    dict, and ``set_model_state_dict(..., StateDictOptions(full_state_dict=True, broadcast_from_rank0=True))``
    broadcasts each tensor and keeps this rank's shard. No GPU ever holds the whole model. Reports the
    digest of the gathered parameters, the local shapes and devices, the shapes of what rank 0 read (whole
    tensors), and the types of the caller's dict's values afterwards: ``set_model_state_dict`` replaces
    them by DTensors, in the caller's dict.
    """
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    _quiet()
    info = setup(backend_for(world_size))
    finished = False
    try:
        mesh = init_device_mesh(info.device.type, (info.world_size,))
        with torch.device("meta"):
            model = make_model()
        for layer in model:
            if isinstance(layer, nn.Linear):
                fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)
        model.to_empty(device=info.device)  # storage for this rank's shards; the values come from the file
        path = Path(checkpoint) / "full.pt"
        if info.rank == 0:
            full = torch.load(path, map_location="cpu", mmap=True, weights_only=True)
        else:
            full = {}
        read_shapes = {key: list(value.shape) for key, value in full.items()}
        read_devices = sorted({str(value.device) for value in full.values()})
        set_model_state_dict(
            model, full, options=StateDictOptions(full_state_dict=True, broadcast_from_rank0=True)
        )
        params = list(model.parameters())
        result = {
            "rank": info.rank,
            "world_size": info.world_size,
            "read_shapes": read_shapes,
            "read_devices": read_devices,
            "local_shape": list(model[0].weight.to_local().shape),
            "local_device": str(model[0].weight.to_local().device),
            "caller_dict_types": sorted({type(value).__name__ for value in full.values()}),
            "digest": state_digest(params),
        }
        del model
        finished = True
    finally:
        leave_group(finished)
    return deliver(result, out)
