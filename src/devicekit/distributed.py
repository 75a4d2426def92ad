"""Set up and tear down ``torch.distributed`` with the backend and device that fit the machine.

Most multi-GPU device errors come from the first ten lines of a DDP script: the wrong backend for the
hardware (``nccl`` on a CPU-only machine), every rank piling onto ``cuda:0`` because
``torch.cuda.set_device`` came too late, a second ``init_process_group`` in a notebook, or a worker
defined in a notebook cell that ``spawn`` cannot find.  This module does those lines once, correctly:

* `setup` reads what ``torchrun`` puts in the environment (``RANK``, ``LOCAL_RANK``,
  ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``), or starts a one-process group when they are absent
  (a notebook, a plain ``python train.py``), picks ``nccl`` for CUDA, ``xccl`` for Intel XPU and ``gloo``
  for CPU, binds the process to its GPU *before* creating the group, and returns a `DistInfo`
  saying which rank and device this process has.  Calling it again with compatible settings returns the
  same information, so re-running a notebook cell is harmless.
* `teardown` destroys the group, and does nothing when there is none.
* `spawn` starts ``nprocs`` local processes the way ``torchrun`` would (same environment
  variables, ``spawn`` start method), for notebooks where ``torchrun`` is not at hand.  The worker must
  live in an importable module; `devicekit_labs.workers` has ready-made ones.
"""

from __future__ import annotations

import atexit
import inspect
import os
import socket
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from .messages import LocalisedError, Message, localised

__all__ = ["BACKENDS", "ENV_VARS", "DistInfo", "DistributedSetupError", "setup", "spawn", "teardown"]

#: Backends `setup` knows, with the device type each one drives.
BACKENDS: dict[str, str] = {"gloo": "cpu", "nccl": "cuda", "xccl": "xpu"}

#: The variables torchrun (and `spawn`) set for each process.
ENV_VARS: tuple[str, ...] = (
    "MASTER_ADDR",
    "MASTER_PORT",
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
)


class DistributedSetupError(LocalisedError, RuntimeError):
    """The process group cannot be set up as asked; the message says what to change (`.en`, `.zh`).

    A `RuntimeError`, the class PyTorch itself uses when the backend is missing from the build
    ("Distributed package doesn't have NCCL built in").  Note that PyTorch 2.x raises most of its
    *usage* errors around ``init_process_group`` as `ValueError` instead ("trying to initialize the
    default process group twice!", "Default process group has not been initialized, ..."), so code that
    wants to catch both must catch ``(RuntimeError, ValueError)``; lesson 8 shows each of them raised.
    """


@dataclass(frozen=True)
class DistInfo:
    """Who this process is in the process group, and where its tensors belong.

    ``device`` is the device this rank must put its model and batches on: ``cuda:<local_rank>`` with
    ``nccl``, ``xpu:<local_rank>`` with ``xccl``, ``cpu`` with ``gloo``.  ``local_rank`` numbers the
    processes on this machine (it picks the GPU); ``rank`` numbers them across all machines (it picks
    the data shard and who logs).
    """

    rank: int
    local_rank: int
    world_size: int
    backend: str
    device: torch.device

    @property
    def is_main(self) -> bool:
        """``True`` on rank 0, the process that should print, log and save checkpoints."""
        return self.rank == 0


# What the last successful setup() returned, so a second call can hand back the very same object.
_current: DistInfo | None = None


#: How often spawn() tries a new port when the one it picked was taken before rank 0 could bind it.
_PORT_ATTEMPTS = 3


def _free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise DistributedSetupError(
            Message(f"{name}={value!r} is not an integer", f"{name}={value!r} 不是整数")
        ) from None


def _ranks_from_env() -> tuple[int, int, int, bool]:
    """``(rank, local_rank, world_size, launched)``; ``launched`` is True when torchrun/spawn set RANK."""
    launched = bool(os.environ.get("RANK", "").strip())
    rank = _env_int("RANK", 0)
    world_size = _env_int("WORLD_SIZE", 1)
    # Without LOCAL_RANK (a launcher other than torchrun) assume one machine: the local rank is the rank.
    local_rank = _env_int("LOCAL_RANK", rank)
    if world_size < 1 or not 0 <= rank < world_size:
        raise DistributedSetupError(
            Message(
                f"RANK={rank} and WORLD_SIZE={world_size} do not fit: need 0 <= RANK < WORLD_SIZE",
                f"RANK={rank} 和 WORLD_SIZE={world_size} 对不上：需要 0 <= RANK < WORLD_SIZE",
            )
        )
    if launched:
        missing = [name for name in ("WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if not os.environ.get(name)]
        if missing:
            raise DistributedSetupError(
                Message(
                    f"RANK is set but {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not: start "
                    "the processes with torchrun (or devicekit.distributed.spawn), which sets all of them",
                    f"设置了 RANK，却没有设置 {'、'.join(missing)}：请用 torchrun"
                    "（或 devicekit.distributed.spawn）启动进程，它们会把这些变量都设好",
                )
            )
    return rank, local_rank, world_size, launched


def _xccl_available() -> bool:
    probe = getattr(dist, "is_xccl_available", None)
    return bool(probe and probe()) and hasattr(torch, "xpu") and torch.xpu.is_available()


def _auto_backend() -> str:
    if torch.cuda.is_available() and dist.is_nccl_available():
        return "nccl"
    if _xccl_available():
        return "xccl"
    return "gloo"


def _check_backend(backend: str, local_rank: int) -> None:
    """Raise a clear error when ``backend`` cannot work on this machine, before PyTorch's cryptic one."""
    if backend not in BACKENDS:
        raise localised(
            ValueError,
            Message(
                f"unknown backend {backend!r}; use 'gloo' (CPU), 'nccl' (CUDA GPUs) or 'xccl' (Intel GPUs), "
                "or leave backend=None to pick the one that fits this machine",
                f"未知的后端 {backend!r}；请用 'gloo'（CPU）、'nccl'（CUDA GPU）或 'xccl'（Intel GPU），"
                "或者保留 backend=None，让 devicekit 选适合本机的后端",
            ),
        )
    if backend == "gloo" and not dist.is_gloo_available():
        raise DistributedSetupError(
            Message("this PyTorch build has no gloo backend", "这个 PyTorch 版本没有 gloo 后端")
        )
    if backend == "nccl":
        if not dist.is_nccl_available() or not torch.cuda.is_available():
            why = (
                Message(
                    "this PyTorch build has no NCCL (a CPU-only, macOS or Windows build)",
                    "这个 PyTorch 版本没有 NCCL（只支持 CPU 的版本，或 macOS、Windows 版本）",
                )
                if not dist.is_nccl_available()
                else Message(
                    "no CUDA GPU is visible (torch.cuda.is_available() is False)",
                    "看不到 CUDA GPU（torch.cuda.is_available() 为 False）",
                )
            )
            raise DistributedSetupError(
                Message(
                    f"nccl needs CUDA GPUs; use gloo on CPU: setup(backend='gloo'), or setup() to pick the "
                    f"backend automatically ({why.en})",
                    f"nccl 需要 CUDA GPU；在 CPU 上请用 gloo：setup(backend='gloo')，"
                    f"或者 setup() 自动选择后端（{why.zh}）",
                )
            )
        count = torch.cuda.device_count()
        if local_rank >= count:
            raise DistributedSetupError(
                Message(
                    f"LOCAL_RANK={local_rank} but only {count} CUDA GPU(s) are visible: start at most "
                    f"{count} processes per machine (torchrun --nproc-per-node), one per GPU",
                    f"LOCAL_RANK={local_rank}，但只看得到 {count} 块 CUDA GPU：每台机器最多启动 "
                    f"{count} 个进程（torchrun --nproc-per-node），每块 GPU 一个",
                )
            )
    if backend == "xccl":
        if not _xccl_available():
            raise DistributedSetupError(
                Message(
                    "xccl needs Intel XPU devices and a PyTorch build with XCCL; use gloo on CPU",
                    "xccl 需要 Intel XPU 设备和带 XCCL 的 PyTorch 版本；在 CPU 上请用 gloo",
                )
            )
        count = torch.xpu.device_count()
        if local_rank >= count:
            raise DistributedSetupError(
                Message(
                    f"LOCAL_RANK={local_rank} but only {count} XPU(s) are visible: start at most {count} "
                    "processes per machine, one per device",
                    f"LOCAL_RANK={local_rank}，但只看得到 {count} 个 XPU：每台机器最多启动 {count} 个进程，"
                    "每个设备一个",
                )
            )


def _device_for(backend: str, local_rank: int) -> torch.device:
    kind = BACKENDS.get(backend, "cpu")
    return torch.device("cpu") if kind == "cpu" else torch.device(kind, local_rank)


def _existing(backend: str | None, rank: int, local_rank: int, world_size: int) -> DistInfo:
    """The info of the group that is already initialised, or an error when it does not match the request."""
    have_backend = str(dist.get_backend()).lower()
    have_rank, have_world = dist.get_rank(), dist.get_world_size()
    wanted = [
        ("backend", backend, have_backend),
        ("rank", rank, have_rank),
        ("world_size", world_size, have_world),
    ]
    clashes = [(name, want, have) for name, want, have in wanted if want is not None and want != have]
    if clashes:
        en = ", ".join(f"{name} {want!r} (it has {have!r})" for name, want, have in clashes)
        zh = "、".join(f"{name} {want!r}（现有的是 {have!r}）" for name, want, have in clashes)
        raise DistributedSetupError(
            Message(
                f"a process group is already initialised (backend={have_backend!r}, rank {have_rank}, "
                f"world_size {have_world}) and it does not match the requested {en}; "
                "call devicekit.distributed.teardown() first, then setup() again",
                f"进程组已经初始化过了（backend={have_backend!r}，rank {have_rank}，"
                f"world_size {have_world}），"
                f"和这次要求的不一致：{zh}；请先调用 devicekit.distributed.teardown()，再调用 setup()",
            )
        )
    if _current is not None and (_current.backend, _current.rank, _current.world_size) == (
        have_backend,
        have_rank,
        have_world,
    ):
        return _current
    # Initialised by someone else (plain init_process_group): describe it as setup() would have.
    return DistInfo(have_rank, local_rank, have_world, have_backend, _device_for(have_backend, local_rank))


def setup(backend: str | None = None, timeout: timedelta | float | None = None) -> DistInfo:
    """Initialise the default process group from the environment and bind this process to its device.

    Under ``torchrun`` (or `spawn`) the rank, world size and rendezvous address come from
    ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT``.  Without them this is a
    one-process group (rank 0 of 1, rendezvous on 127.0.0.1 and a free port): the same DDP code then runs
    unchanged in a notebook, which is how the labs try it without several GPUs.

    ``backend=None`` picks ``nccl`` when CUDA GPUs are visible, ``xccl`` on Intel GPUs, else ``gloo``.
    ``gloo`` is the CPU backend: NCCL only moves CUDA tensors, so a CPU-only machine (or a CPU-only
    PyTorch build) must use gloo, and asking for ``nccl`` there raises
    `DistributedSetupError` ("nccl needs CUDA GPUs; use gloo on CPU").

    With ``nccl``, ``torch.cuda.set_device(local_rank)`` runs *before* ``init_process_group``: NCCL sets
    up its communicator on the current device, and the current device defaults to ``cuda:0``, so without
    it every rank on the machine would create a context on GPU 0 (wasting its memory) and the collectives
    would hang or fail with "Duplicate GPU detected".  Where PyTorch supports it, ``device_id=`` is passed
    as well, which binds the group to that GPU at once.

    ``timeout`` (a `datetime.timedelta` or seconds) bounds how long a collective waits for the
    other ranks; ``None`` keeps PyTorch's default.

    Calling ``setup()`` when a group already exists returns its `DistInfo` if the backend, rank and
    world size agree with the request (``backend=None`` accepts any backend), and raises
    `DistributedSetupError` otherwise: call `teardown` first.
    """
    global _current
    if not dist.is_available():
        raise DistributedSetupError(
            Message(
                "this PyTorch build has no torch.distributed (torch.distributed.is_available())",
                "这个 PyTorch 版本没有 torch.distributed（torch.distributed.is_available() 为 False）",
            )
        )
    rank, local_rank, world_size, launched = _ranks_from_env()
    if backend is not None:
        backend = backend.lower()
    if dist.is_initialized():
        return _existing(backend, rank, local_rank, world_size)

    chosen = backend or _auto_backend()
    _check_backend(chosen, local_rank)
    device = _device_for(chosen, local_rank)
    kwargs: dict[str, Any] = {"backend": chosen, "rank": rank, "world_size": world_size}
    if timeout is not None:
        kwargs["timeout"] = timeout if isinstance(timeout, timedelta) else timedelta(seconds=float(timeout))
    if launched:
        kwargs["init_method"] = "env://"
    else:
        # Not through os.environ: a notebook's environment is inherited by every process it starts later.
        addr = os.environ.get("MASTER_ADDR") or "127.0.0.1"
        port = os.environ.get("MASTER_PORT") or str(_free_port())
        kwargs["init_method"] = f"tcp://{addr}:{port}"

    if device.type == "cuda":
        torch.cuda.set_device(device)  # before init_process_group: see the docstring
        if "device_id" in inspect.signature(dist.init_process_group).parameters:
            kwargs["device_id"] = device
    elif device.type == "xpu":
        torch.xpu.set_device(device)

    dist.init_process_group(**kwargs)
    _current = DistInfo(rank, local_rank, world_size, chosen, device)
    return _current


def teardown() -> bool:
    """Destroy the default process group; ``True`` if there was one, ``False`` (and no error) if not.

    Call it at the end of every worker (a ``finally:`` block): a group left alive keeps its port and, with
    NCCL, its GPU memory, and a later `setup` in the same notebook would find the old group.
    """
    global _current
    _current = None
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
        return True
    return False


def _check_importable(fn: Callable[..., Any]) -> None:
    """Fail early, with advice, for workers that a ``spawn``-ed child cannot import.

    ``spawn`` pickles ``fn`` *by reference* (module and name); each child imports that module and looks
    the name up.  A function typed into a notebook cell lives in ``__main__``, which in a child is a
    different, empty module, so the child dies with
    "Can't get attribute 'fn' on <module '__main__' (built-in)>".
    A script's ``__main__`` (``python train.py``) is fine: the child re-imports the file.
    """
    name = getattr(fn, "__qualname__", getattr(fn, "__name__", repr(fn)))
    module = getattr(fn, "__module__", None)
    if "<lambda>" in name or "<locals>" in name:
        raise localised(
            ValueError,
            Message(
                f"spawn() cannot send {name!r} to another process: lambdas and functions defined inside "
                "other functions cannot be pickled. Define the worker at the top level of an importable "
                "module, e.g. devicekit_labs.workers",
                f"spawn() 无法把 {name!r} 发送给另一个进程：lambda 和定义在其他函数内部的函数都无法 pickle。"
                "请把工作进程运行的函数定义在一个可导入模块的顶层，例如 devicekit_labs.workers",
            ),
        )
    main = sys.modules.get("__main__")
    if module == "__main__" and getattr(main, "__file__", None) is None:
        said = f"Can't get attribute '{name}' on <module '__main__' (built-in)>"
        raise localised(
            ValueError,
            Message(
                f"spawn() cannot use {name!r}: it is defined in __main__ (a notebook cell or an interactive "
                f'session), which the new processes cannot import, so they would fail with "{said}". '
                "Define the worker in an importable module, e.g. devicekit_labs.workers (or a .py file next "
                "to the notebook), and import it from there.",
                f"spawn() 无法使用 {name!r}：它定义在 __main__ 里（notebook 的单元格或交互式会话），"
                f'新进程无法导入它，会报 "{said}"。请把工作进程函数定义在一个可导入的模块里，'
                "例如 devicekit_labs.workers（或者 notebook 旁边的一个 .py 文件），再从那里导入它。",
            ),
        )


# Set in a spawn() child once its function has returned.
_finished = False


def _end_a_finished_child() -> None:
    """The last exit handler of a spawn() child: once its function returned, end the process right here.

    Registered before the worker runs, so it runs after every exit handler registered later (atexit is
    last-in, first-out) and after multiprocessing has flushed the child's queues.  What it skips is the
    interpreter's teardown, where PyTorch can still free C++ objects that need the interpreter and abort
    the process: pytorch/pytorch#179291 describes gloo work objects holding tensors that are freed there
    (SIGABRT).  We saw it once in CI, "process 0 terminated with signal SIGABRT" from lab 11's mesh demo
    (125 runs here under load did not repeat it); ``tests/finalization_workers.py`` plants such an object.
    A worker that raised is left alone: its exit code already says it failed.
    """
    if _finished:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (AttributeError, OSError, ValueError):
                pass
        os._exit(0)


def _child(
    local_rank: int,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    world_size: int,
    master_addr: str,
    master_port: int,
) -> None:
    """Runs in each new process: set the variables torchrun would set, then call ``fn(rank, *args)``."""
    global _finished
    os.environ.update(
        {
            "MASTER_ADDR": master_addr,
            "MASTER_PORT": str(master_port),
            "RANK": str(local_rank),
            "LOCAL_RANK": str(local_rank),
            "WORLD_SIZE": str(world_size),
            "LOCAL_WORLD_SIZE": str(world_size),
        }
    )
    if "OMP_NUM_THREADS" not in os.environ:
        # As torchrun does: several processes each using every core only fight over them.
        os.environ["OMP_NUM_THREADS"] = "1"
        torch.set_num_threads(1)
    atexit.register(_end_a_finished_child)
    fn(local_rank, *args)
    _finished = True


#: Set to ``1`` in a process that starts many short runs of ranks (a program that runs notebooks one after
#: another sets it in their kernels): `spawn` then forks each rank from a fork server that imported torch
#: once (`_start_method`), instead of starting a new interpreter per rank.
PRELOAD_ENV = "DEVICEKIT_PRELOADED_RANKS"
#: What that fork server imports before its first rank: most of a new rank's start is these imports (torch,
#: and Dynamo, which DTensor and FSDP2 import at their first call), about 3 s of CPU per rank on the course
#: machine, paid once per fork server instead.
PRELOAD = ("torch", "torch.distributed", "torch._dynamo", "devicekit.distributed")
#: The environment the fork server started with (None: not started by `_start_method`).
_server_env: dict[str, str] | None = None


def _start_method() -> str:
    """``"spawn"``, or ``"forkserver"`` where `PRELOAD_ENV` asks for it (Linux only).

    A rank forked from the fork server is what a spawned one is, a fresh interpreter that is not a copy
    of this one (no CUDA state, no threads, no simulated GPU, no process group), with torch and `PRELOAD`
    imported before its function: ``multiprocessing`` sends each rank the same preparation data as under
    ``spawn`` (``sys.path``, working folder, ``__main__``). What it does not send is the environment: a
    rank gets the fork server's, and a spawned one this process's of the moment. So the fork server is
    used only while this process's environment is the one the server started with; after a change, ranks
    are spawned again (the variables `_child` sets are not compared: it sets them in every rank), and so
    they are when a fork server that other code started is running (its environment is not known here).
    """
    global _server_env
    if os.environ.get(PRELOAD_ENV) != "1" or not sys.platform.startswith("linux"):
        return "spawn"
    env = {k: v for k, v in os.environ.items() if k not in _CHILD_SETS}
    if _server_env is None:
        import multiprocessing.forkserver

        server = getattr(multiprocessing.forkserver, "_forkserver", None)
        if getattr(server, "_forkserver_pid", 0) is not None:
            return "spawn"  # one started by other code, with an environment not known here (or no such API)
        multiprocessing.forkserver.set_forkserver_preload(["__main__", *PRELOAD])
        _server_env = env
    return "forkserver" if env == _server_env else "spawn"


#: The variables `_child` sets in every rank, whatever the rank inherited.
_CHILD_SETS = ("MASTER_ADDR", "MASTER_PORT", "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE")


def spawn(
    fn: Callable[..., Any],
    nprocs: int = 2,
    args: Sequence[Any] = (),
    *,
    master_addr: str = "127.0.0.1",
    master_port: int | None = None,
    join: bool = True,
) -> Any:
    """Run ``fn(rank, *args)`` in ``nprocs`` new processes on this machine, like ``torchrun`` would.

    Each process gets ``RANK`` = ``LOCAL_RANK`` = its index, ``WORLD_SIZE`` = ``nprocs``, and the same
    ``MASTER_ADDR``/``MASTER_PORT`` (a free port unless given), so ``fn`` just calls `setup`.  The
    processes are started with the ``spawn`` method, never ``fork``: a forked child inherits the parent's
    CUDA state and fails with "Cannot re-initialize CUDA in forked subprocess". (``PRELOAD_ENV`` asks for
    ``forkserver`` instead, which starts ranks as fresh but with torch already imported: `_start_method`.)

    ``fn`` must be importable by the children (a top-level function of a module, not of a notebook cell);
    otherwise this raises `ValueError` before starting anything.  With ``join=True`` it waits for
    all processes and re-raises the first worker error (``torch.multiprocessing.ProcessRaisedException``,
    with the worker's traceback); with ``join=False`` it returns the ``ProcessContext`` to join yourself.
    Return values of ``fn`` are discarded: have it write a file or put into a queue
    (see `devicekit_labs.workers`).
    """
    if nprocs < 1:
        raise localised(
            ValueError,
            Message(f"nprocs must be at least 1, got {nprocs}", f"nprocs 至少要是 1，收到的是 {nprocs}"),
        )
    _check_importable(fn)
    import torch.multiprocessing as mp

    # A free port is only free until someone takes it: another job on the machine (labs run side by side
    # in CI) can bind it between _free_port() and rank 0's store. Then rank 0 fails in setup() with
    # EADDRINUSE before any work was done, and a fresh port is tried (only when we chose the port).
    attempts = 1 if master_port is not None or not join else _PORT_ATTEMPTS
    for attempt in range(1, attempts + 1):
        port = master_port if master_port is not None else _free_port()
        try:
            return mp.start_processes(
                _child,
                args=(fn, tuple(args), nprocs, master_addr, port),
                nprocs=nprocs,
                join=join,
                start_method=_start_method(),
            )
        except mp.ProcessRaisedException as error:
            if attempt == attempts or "EADDRINUSE" not in str(error):
                raise
    raise AssertionError  # unreachable: the loop returns or raises
