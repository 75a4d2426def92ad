"""The ranks a self-check starts for itself (never the ones a lab teaches): forked where that is safe.

`devicekit.distributed.spawn`, which the labs teach, starts every rank as a fresh interpreter (the
``spawn`` method, lesson 8): each imports torch, and for DTensor or FSDP2 also Dynamo (``torch._compile``
imports it at the first call of a function DTensor marks as not traceable), about 3 s of CPU per rank on
the course machine. A check's own helper ranks (lab 11's exercise 3 saves its checkpoint with two) do not
teach anything about starting processes, so `start_ranks` forks them from the calling process, where
torch and the workers are already imported, whenever that is safe, and spawns them otherwise:

* Linux only (elsewhere ``fork`` is unsafe or absent);
* a torch built without CUDA or ROCm: no real GPU can have been initialised in the caller, which a
  forked child cannot use ("Cannot re-initialize CUDA in forked subprocess");
* no default process group in the caller (a forked child would inherit its sockets and threads, not a
  working group); the garbage of a destroyed one is collected before the fork, and everything the child
  inherits is frozen (``gc.freeze``), never collected there (a gloo group freed in the child waits for
  ever on threads fork did not copy: seen in a kernel, `tests/test_ranks.py`).

Each forked rank first sets one intra-op thread: PyTorch's OpenMP (GNU libgomp) hangs in a child forked
after the parent ran a parallel region, unless the child stays on one thread (`tests/test_ranks.py`; the
DataLoader's forked workers do the same). It then leaves any simulated GPU it inherited
(`devicekit.simulate._context.leave_all_in_forked_child`): the ranks run on the CPU with gloo, as spawned
ones would, since a simulation does not follow a process the notebook starts.
"""

from __future__ import annotations

import gc
import os
import socket
import sys
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["can_fork", "start_ranks"]

#: How often a new port is tried when the one picked was taken before rank 0 could bind it.
_PORT_ATTEMPTS = 3


def can_fork() -> bool:
    """Whether `start_ranks` forks here: Linux, torch without CUDA or ROCm, no default process group."""
    import torch
    import torch.distributed as dist

    if not sys.platform.startswith("linux"):
        return False
    if torch.backends.cuda.is_built() or getattr(torch.version, "hip", None) is not None:
        return False
    return not (dist.is_available() and dist.is_initialized())


def start_ranks(fn: Callable[..., Any], nprocs: int, args: Sequence[Any] = ()) -> None:
    """Run ``fn(rank, *args)`` in ``nprocs`` processes and wait for them, as
    ``devicekit.distributed.spawn(fn, nprocs, args)`` does; forked from this process where `can_fork`.

    ``fn`` calls ``devicekit.distributed.setup()`` as under ``spawn`` (the same ``RANK``, ``WORLD_SIZE``
    and ``MASTER_*`` variables). A rank's error is raised here as
    ``torch.multiprocessing.ProcessRaisedException``, as by ``spawn``.
    """
    if not can_fork():
        from devicekit.distributed import spawn

        spawn(fn, nprocs=nprocs, args=args)
        return
    import torch.multiprocessing as mp

    for attempt in range(1, _PORT_ATTEMPTS + 1):
        # Garbage the caller still holds (a destroyed process group that a cycle keeps) is freed here, and
        # what is left is frozen: a forked child's collector never frees what it inherited. A gloo group
        # freed in a child joins its worker threads, which fork did not copy, and waits for ever.
        gc.collect()
        gc.freeze()
        try:
            ranks = mp.start_processes(
                _forked_rank,
                args=(fn, tuple(args), nprocs, _free_port()),
                nprocs=nprocs,
                join=False,
                start_method="fork",
            )
        finally:
            gc.unfreeze()
        try:
            while not ranks.join():
                pass
            return
        except mp.ProcessRaisedException as error:  # the port was taken between choosing and binding it
            if attempt == _PORT_ATTEMPTS or "EADDRINUSE" not in str(error):
                raise


def _free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _forked_rank(rank: int, fn: Callable[..., Any], args: tuple[Any, ...], nprocs: int, port: int) -> None:
    """One forked rank: one OpenMP thread, no simulated GPU, torchrun's variables, then ``fn``."""
    import torch

    torch.set_num_threads(1)  # before any op: libgomp's pool belongs to the parent
    from devicekit.simulate._context import leave_all_in_forked_child

    leave_all_in_forked_child()
    os.environ.update(
        {
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
            "RANK": str(rank),
            "LOCAL_RANK": str(rank),
            "WORLD_SIZE": str(nprocs),
            "LOCAL_WORLD_SIZE": str(nprocs),
            "OMP_NUM_THREADS": "1",
        }
    )
    fn(rank, *args)
