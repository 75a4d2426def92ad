"""``torch.distributed`` with the ``nccl`` backend on simulated GPUs, in one process.

A CPU build has no NCCL (``init_process_group("nccl")`` raises "Distributed package doesn't have NCCL
built in"). Inside a block, ``init_process_group("nccl", ...)`` makes a gloo process group with the same
arguments (``device_id``, a hint NCCL uses to bind a GPU early, is dropped: gloo would hand it to C++,
which has no CUDA device) and remembers it as an NCCL group: ``torch.distributed.get_backend`` answers
``"nccl"`` for it, ``torch.distributed.is_nccl_available()`` answers True and
``torch.cuda.nccl.version()`` answers ``(0, 0, 0)``, a stand-in no real NCCL reports. Its collectives run on
the simulated tensors' CPU data (the dispatch mode unwraps them, ``_dispatch._c10d``), and a tensor that
is not on a simulated GPU raises what a NCCL group raises, "No backend type associated with device type
cpu" (an NCCL group registers a backend for ``cuda`` only: ``ProcessGroup::getBackend``; recorded case
``nccl-cpu-tensor``). A group still open when the outermost block closes is destroyed then, so nothing
made for the simulation outlives it.

What differs from NCCL: gloo's algorithms and timing, no NCCL environment variables or error codes, and
only what one process can run (world size 1, or several processes each under its own block).
"""

from __future__ import annotations

import functools
from typing import Any

import torch

__all__ = ["close", "install", "is_simulated_nccl"]

_groups: list[Any] = []  # the process groups made for init_process_group("nccl") in open blocks


def _wants_nccl(backend: Any) -> bool:
    return isinstance(backend, str) and backend.strip().lower() == "nccl"


def is_simulated_nccl(group: Any) -> bool:
    """Whether ``group`` (a ``ProcessGroup``, or the ``ScriptObject`` a c10d op receives) is a simulated
    NCCL group."""
    if not _groups:
        return False
    if isinstance(group, torch.ScriptObject):
        try:
            group = torch.distributed.ProcessGroup.unbox(group)
        except (RuntimeError, TypeError):
            return False
    return any(group is g for g in _groups)


def _init_process_group(original: Any, *args: Any, **kwargs: Any) -> None:
    backend = kwargs.get("backend", args[0] if args else None)
    if not _wants_nccl(backend):
        original(*args, **kwargs)
        return
    if args:
        args = ("gloo", *args[1:])
    else:
        kwargs["backend"] = "gloo"
    kwargs.pop("device_id", None)
    original(*args, **kwargs)
    _groups.append(torch.distributed.distributed_c10d._get_default_group())


def _get_backend(original: Any, group: Any = None) -> Any:
    pg = group if group is not None else torch.distributed.distributed_c10d._get_default_group()
    if is_simulated_nccl(pg):
        return torch.distributed.Backend("nccl")
    return original(group)


def _destroy_process_group(original: Any, group: Any = None) -> None:
    target = group if group is not None else torch.distributed.distributed_c10d.GroupMember.WORLD
    original(group)
    if group is None:
        _groups.clear()
    else:
        _groups[:] = [g for g in _groups if g is not target]


def close() -> None:
    """Destroy the NCCL groups the blocks made and did not destroy (the outermost block is closing)."""
    if not _groups:
        return
    dist = torch.distributed
    for group in list(_groups):
        try:
            if group is dist.distributed_c10d.GroupMember.WORLD:
                dist.destroy_process_group()
            else:
                dist.destroy_process_group(group)
        except (RuntimeError, ValueError):  # already gone
            pass
    _groups.clear()


def install(patches: Any) -> None:
    """Replace the functions above in ``torch.distributed`` while a block is open."""
    if not torch.distributed.is_available():
        return
    dist = torch.distributed
    c10d = dist.distributed_c10d
    init = functools.partial(_init_process_group, c10d.init_process_group)
    destroy = functools.partial(_destroy_process_group, c10d.destroy_process_group)
    for owner in (dist, c10d):
        patches.set(owner, "init_process_group", init)
        patches.set(owner, "destroy_process_group", destroy)
    patches.set(dist, "get_backend", functools.partial(_get_backend, c10d.get_backend))
    patches.set(dist, "is_nccl_available", lambda: True)
    # the c10d logger reads the NCCL version when a collective of an NCCL group fails; a CPU build has no
    # NCCL library, so the version is a stand-in, (0, 0, 0), that no real NCCL reports
    patches.set(torch.cuda.nccl, "version", lambda: (0, 0, 0))
