"""The error catalog against real CUDA messages: trigger every family a CUDA machine can produce.

Each case below provokes one device error for real on the GPU, the way a learner meets it, and checks
that ``devicekit.explain`` puts it in the expected family and finds the devices the message names. The
catalog was written from issue reports and CPU/meta runs; only this test sees PyTorch's CUDA wording
first-hand, so every message is recorded (``gpu_record``) and ends up in ``results/gpu-check.json``,
whether the assertion holds or not.

What a one-GPU machine cannot produce is skipped with the reason: the ``cuda:0`` vs ``cuda:1`` variants
need two GPUs. Two families are produced on the GPU machine with its GPUs hidden from a child process
(``CUDA_VISIBLE_DEVICES=""``): loading a checkpoint saved on the GPU where no GPU is visible, and asking
for CUDA where none is visible. Those texts are what a CPU-only laptop prints too, produced from a real
GPU checkpoint.
"""

from __future__ import annotations

import functools
import io
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from torch import nn

import devicekit

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA GPU (torch.cuda.is_available() is False)"
)


@dataclass(frozen=True)
class Case:
    """One way to meet a family. ``trigger`` raises the error, or returns its text (child processes).

    ``devices`` are device strings ``explain`` must find in the message; ``{n}`` stands for
    ``torch.cuda.device_count()`` (the first index that does not exist).
    """

    id: str
    family: str
    trigger: Callable[[], str | None]
    devices: tuple[str, ...] = ()
    min_gpus: int = 1


# --- triggers: each is the smallest real program that meets the error ------------------------------


def linear_cpu_batch():
    nn.Linear(4, 2).to("cuda:0")(torch.randn(3, 4))


def elementwise_cpu_operand():
    torch.ones(3, device="cuda:0") + torch.ones(3)


def elementwise_two_gpus():
    torch.ones(3, device="cuda:0") + torch.ones(3, device="cuda:1")


def conv_cpu_input():
    nn.Conv2d(3, 4, 3).to("cuda:0")(torch.randn(1, 3, 8, 8))


def conv_cuda_input():
    nn.Conv2d(3, 4, 3)(torch.randn(1, 3, 8, 8, device="cuda:0"))


def conv_two_gpus():
    nn.Conv2d(3, 4, 3).to("cuda:1")(torch.randn(1, 3, 8, 8, device="cuda:0"))


def conv_half_weights():
    nn.Conv2d(3, 4, 3).to("cuda:0").half()(torch.randn(1, 3, 8, 8, device="cuda:0"))


def lstm_cpu_input():
    nn.LSTM(4, 8).to("cuda:0")(torch.randn(5, 1, 4))


def gru_cpu_hidden():
    nn.GRU(4, 8).to("cuda:0")(torch.randn(5, 1, 4, device="cuda:0"), torch.zeros(1, 1, 8))


def cuda_index_into_cpu_tensor():
    torch.arange(10.0)[torch.tensor([1, 2], device="cuda:0")]


def cuda_tensor_to_numpy():
    torch.ones(2, device="cuda:0").numpy()


def shuffle_with_default_device_cuda():
    torch.set_default_device("cuda")
    try:
        loader = torch.utils.data.DataLoader(list(range(8)), batch_size=2, shuffle=True)
        next(iter(loader))
    finally:
        torch.set_default_device(None)


def data_parallel_module_on_cpu():
    # With one device id, DataParallel.__init__ moves the module itself (recorded on torch 2.11, case
    # data-parallel-module-on-cpu in results/cuda-messages.json): the error needs two GPUs.
    nn.DataParallel(nn.Linear(4, 2), device_ids=[0, 1])(torch.randn(3, 4))


def optimizer_created_before_move():
    model = nn.Linear(4, 2)
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(3, 4)).sum().backward()
    opt.step()  # Adam's state (exp_avg, exp_avg_sq) now lives on the CPU
    model.to("cuda:0")  # moves the parameters in place, not the optimizer state
    opt.zero_grad()
    model(torch.randn(3, 4, device="cuda:0")).sum().backward()
    opt.step()


def checkpoint_from_missing_gpu():
    """A checkpoint saved on ``cuda:N`` (a GPU this machine lacks), loaded without map_location.

    Saved here on cuda:0 in the legacy (non-zip) format, whose storage locations are plain pickled
    strings, then relabelled ``cuda:N``: the bytes torch.save writes on an N+1-GPU machine's last GPU.
    """
    n = torch.cuda.device_count()
    if n > 9:
        pytest.skip("relabelling needs a one-digit index (more than 9 GPUs here)")
    buffer = io.BytesIO()
    torch.save(torch.ones(2, device="cuda:0"), buffer, _use_new_zipfile_serialization=False)
    data = buffer.getvalue()
    if data.count(b"cuda:0") != 1:
        pytest.skip("this torch's legacy checkpoint format does not hold the location once as text")
    torch.load(io.BytesIO(data.replace(b"cuda:0", f"cuda:{n}".encode())))


def missing_device_ordinal():
    torch.ones(1, device=f"cuda:{torch.cuda.device_count()}")


def unscale_fp16_gradients():
    model = nn.Linear(4, 2).to("cuda:0").half()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda")
    loss = model(torch.randn(3, 4, device="cuda:0", dtype=torch.half)).float().sum()
    scaler.scale(loss).backward()
    scaler.step(opt)


def ddp_without_process_group():
    import torch.distributed as dist

    if not dist.is_available():
        pytest.skip("this torch has no torch.distributed")
    if dist.is_initialized():
        pytest.skip("a process group already exists in this test process")
    nn.parallel.DistributedDataParallel(nn.Linear(4, 2).to("cuda:0"), device_ids=[0])


def _use_cuda_in_child(conn) -> None:
    try:
        torch.ones(1, device="cuda")
    except Exception as exc:  # sent back to the parent, which explains it
        conn.send(f"{type(exc).__name__}: {exc}")
    else:
        conn.send(None)
    conn.close()


def cuda_in_forked_child() -> str | None:
    torch.ones(1, device="cuda:0")  # CUDA is initialised in the parent first, as in a training script
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_use_cuda_in_child, args=(send,))
    child.start()
    try:
        if not receive.poll(60):
            pytest.fail("the forked child did not answer within 60 s")
        return receive.recv()
    finally:
        child.join(10)


_DEVICE_SIDE_ASSERT_CHILD = """
import torch, torch.nn.functional as F
try:
    F.cross_entropy(torch.zeros(2, 3, device="cuda"), torch.tensor([0, 7], device="cuda"))
    torch.cuda.synchronize()
except Exception as exc:
    print(f"{type(exc).__name__}: {exc}")
"""


def device_side_assert() -> str | None:
    """A label out of range: the assert poisons the CUDA context, so it runs in a child of its own."""
    done = subprocess.run(
        [sys.executable, "-c", _DEVICE_SIDE_ASSERT_CHILD], capture_output=True, text=True, timeout=120
    )
    return done.stdout.strip() or None


def out_of_memory():
    torch.empty(1 << 50, dtype=torch.uint8, device="cuda:0")  # a petabyte


def pin_cuda_tensor():
    torch.ones(2, device="cuda:0").pin_memory()


def lengths_on_cuda():
    padded = torch.zeros(3, 2, 4, device="cuda:0")
    nn.utils.rnn.pack_padded_sequence(padded, torch.tensor([3, 2], device="cuda:0"))


def copy_out_of_meta():
    torch.ones(2, device="meta").to("cuda:0")


def invalid_device_string():
    torch.ones(1, device="cuda:x")


def pin_to_meta():
    torch.ones(2).pin_memory("meta")


def linear_bf16_input_fp32_weights():
    nn.Linear(4, 2).to("cuda:0")(torch.randn(3, 4, device="cuda:0", dtype=torch.bfloat16))


def nccl_with_cpu_tensor():
    if not dist.is_available() or not dist.is_nccl_available():
        pytest.skip("this torch has no NCCL")
    if dist.is_initialized():
        pytest.skip("a process group already exists in this test process")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    try:
        dist.all_reduce(torch.ones(2))
    finally:
        dist.destroy_process_group()


#: Families this machine cannot provoke (another backend, an older driver or GPU, a corrupted kernel).
NOT_ON_THIS_KIND_OF_MACHINE = {
    "illegal-memory-access": "needs a kernel that writes out of bounds",
    "cudnn-cublas": "needs a cuDNN/cuBLAS failure (bad configuration or hardware)",
    "gpu-not-supported": "needs a GPU this PyTorch build was not compiled for",
    "driver-too-old": "needs a driver older than the CUDA runtime",
    "mps-unsupported": "needs an Apple GPU",
    "op-not-implemented": "needs an operator without a CUDA kernel",
    "mps-cpu-tensor": "needs an Apple GPU",
    "dist-timeout": "needs two processes, one skipping a collective (lab 8 records gloo's on the CPU)",
    "dist-spawn": "needs workers that die at start (recorded live on the CPU: a worker from __main__)",
}


_HIDDEN_GPU_CHILD = """
import json, sys, torch
out = {}
try:
    torch.load(sys.argv[1])
except Exception as exc:
    out["load"] = f"{type(exc).__name__}: {exc}"
try:
    torch.ones(1, device="cuda")
except Exception as exc:
    out["cuda"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""


@functools.lru_cache(maxsize=1)
def _hidden_gpu_messages() -> dict[str, str]:
    """Run one child with ``CUDA_VISIBLE_DEVICES=""`` that loads a real GPU checkpoint and asks for CUDA."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "saved-on-cuda0.pt"
        torch.save({"weight": torch.ones(2, device="cuda:0")}, path)
        done = subprocess.run(
            [sys.executable, "-c", _HIDDEN_GPU_CHILD, str(path)],
            env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _hidden(key: str) -> Callable[[], str | None]:
    def trigger() -> str | None:
        return _hidden_gpu_messages().get(key)

    return trigger


CASES = (
    Case("same-device/linear-cpu-batch", "same-device", linear_cpu_batch, ("cuda:0", "cpu")),
    Case("same-device/elementwise-cpu-operand", "same-device", elementwise_cpu_operand, ("cuda:0", "cpu")),
    Case("two-gpus/elementwise", "two-gpus", elementwise_two_gpus, ("cuda:0", "cuda:1"), min_gpus=2),
    # A CPU input to a CUDA conv takes the slow path, whose adaption check names the argument (torch 2.11).
    Case("same-device/conv-cpu-input", "same-device", conv_cpu_input, ("cuda:0", "cpu")),
    Case("conv-input-weight/cuda-input", "conv-input-weight", conv_cuda_input, ("cuda", "cpu")),
    Case("conv-input-weight/two-gpus", "conv-input-weight", conv_two_gpus, (), min_gpus=2),
    Case("dtype-mismatch/conv-half-weights", "dtype-mismatch", conv_half_weights),
    Case("rnn-device/lstm-cpu-input", "rnn-device", lstm_cpu_input, ("cpu", "cuda:0")),
    Case("rnn-device/gru-cpu-hidden", "rnn-device", gru_cpu_hidden, ("cuda:0", "cpu")),
    Case("index-device/cuda-index", "index-device", cuda_index_into_cpu_tensor, ("cpu",)),
    Case("to-numpy/cuda-tensor", "to-numpy", cuda_tensor_to_numpy, ("cuda:0",)),
    Case("generator-device/shuffle", "generator-device", shuffle_with_default_device_cuda, ("cuda", "cpu")),
    Case(
        "data-parallel/module-on-cpu",
        "data-parallel",
        data_parallel_module_on_cpu,
        ("cuda:0", "cpu"),
        min_gpus=2,
    ),
    Case("optimizer-state/adam-before-move", "optimizer-state", optimizer_created_before_move),
    Case("load-map-location/missing-gpu", "load-map-location", checkpoint_from_missing_gpu, ("cuda:{n}",)),
    Case("load-map-location/gpus-hidden", "load-map-location", _hidden("load"), ("cuda",)),
    Case("no-accelerator/gpus-hidden", "no-accelerator", _hidden("cuda")),
    Case("no-accelerator/missing-ordinal", "no-accelerator", missing_device_ordinal),
    Case("amp/unscale-fp16", "amp", unscale_fp16_gradients),
    Case("ddp/no-process-group", "ddp", ddp_without_process_group),
    Case("cuda-fork/forked-child", "cuda-fork", cuda_in_forked_child),
    Case("device-side-assert/label-out-of-range", "device-side-assert", device_side_assert),
    Case("out-of-memory/petabyte", "out-of-memory", out_of_memory),
    Case("pin-memory/cuda-tensor", "pin-memory", pin_cuda_tensor),
    Case("cpu-required/lengths-on-cuda", "cpu-required", lengths_on_cuda),
    Case("meta-no-data/copy-to-cuda", "meta-no-data", copy_out_of_meta),
    Case("dist-backend/nccl-cpu-tensor", "dist-backend", nccl_with_cpu_tensor),
    Case("device-string/cuda-x", "device-string", invalid_device_string),
    Case("meta-not-accelerator/pin-to-meta", "meta-not-accelerator", pin_to_meta, ("meta",)),
    Case("dtype-mismatch/linear-bf16-input", "dtype-mismatch", linear_bf16_input_fp32_weights),
)


def test_every_family_has_a_case():
    """A family added to the catalog must get a CUDA case here (or this test says which is missing)."""
    covered = {case.family for case in CASES} | set(NOT_ON_THIS_KIND_OF_MACHINE)
    assert sorted(covered) == sorted(devicekit.FAMILIES)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_family_on_cuda(case: Case, gpu_record):
    if torch.cuda.device_count() < case.min_gpus:
        pytest.skip(f"needs {case.min_gpus} GPUs, this machine has {torch.cuda.device_count()}")
    try:
        text = case.trigger()
    except Exception as exc:  # the error this case provokes
        error: BaseException | str = exc
        message, kind = str(exc), type(exc).__name__
    else:
        if text is None:
            pytest.fail(f"{case.id}: no error was raised")
        error, message, kind = text, text.split(": ", 1)[-1], text.split(": ", 1)[0]
    found = devicekit.explain(error)
    expected_devices = [d.format(n=torch.cuda.device_count()) for d in case.devices]
    gpu_record(
        "families",
        case.id,
        {
            "expected": case.family,
            "family": found.family,
            "devices": list(found.devices),
            "expected_devices": expected_devices,
            "exception": kind,
            "message": message[:2000],
            "matched": found.message[:2000],
        },
    )
    assert found.family == case.family, f"{case.id}: {kind}: {message}"
    missing = [d for d in expected_devices if d not in found.devices]
    assert not missing, f"{case.id}: devices {missing} not found in {found.devices} ({message})"
