#!/usr/bin/env python3
"""Record PyTorch's own CUDA device messages verbatim, for the lessons and the atlas to quote.

    python3 scripts/cuda_messages.py --out results/cuda-messages.json    # on a CUDA machine

Each case runs one deliberately wrong line on a real GPU and records what PyTorch raised or warned: the
exception type, the full message, and the torch/CUDA versions and GPU that printed it. Cases that poison
the CUDA context (a device-side assert, a forked child) run in a subprocess of their own. Nothing here is
typed by hand: the lessons cite ``results/cuda-messages.json`` by case name.

On a machine without CUDA the script exits 2 and writes nothing (a CPU run must never pass for a GPU one).
Also measured (ratios, one run each): pinned vs pageable host→device copies, bf16 autocast vs fp32 for a
small MLP.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

CASES: dict[str, Callable[[], object]] = {}


def case(name: str):
    def register(fn: Callable[[], object]) -> Callable[[], object]:
        CASES[name] = fn
        return fn

    return register


def cpu(*shape):
    return torch.ones(*shape)


def gpu(*shape):
    return torch.ones(*shape, device="cuda")


@case("add-cpu-first")
def _():
    return cpu(2) + gpu(2)


@case("add-cuda-first")
def _():
    return gpu(2) + cpu(2)


@case("add-0dim-cpu-ok")
def _():
    return (torch.tensor(2.0) + gpu(2)).device


@case("add-1elem-cpu")
def _():
    return torch.tensor([2.0]) + gpu(2)


@case("stack-0dim")
def _():
    return torch.stack([torch.tensor(1.0, device="cuda"), torch.tensor(2.0)])


@case("cat")
def _():
    return torch.cat([gpu(2), cpu(2)])


@case("linear-bias-cpu-input")
def _():
    return nn.Linear(4, 2).cuda()(cpu(3, 4))


@case("linear-nobias-cpu-input")
def _():
    return nn.Linear(4, 2, bias=False).cuda()(cpu(3, 4))


@case("matmul")
def _():
    return cpu(2, 3) @ gpu(3, 2)


@case("conv-cpu-input-cuda-weight")
def _():
    return nn.Conv2d(1, 1, 3).cuda()(cpu(1, 1, 5, 5))


@case("conv-cuda-input-cpu-weight")
def _():
    return nn.Conv2d(1, 1, 3)(gpu(1, 1, 5, 5))


@case("conv-cudnn-off-cpu-input")
def _():
    with torch.backends.cudnn.flags(enabled=False):
        return nn.Conv2d(1, 1, 3).cuda()(cpu(1, 1, 5, 5))


@case("embedding-cpu-indices")
def _():
    return nn.Embedding(10, 3).cuda()(torch.tensor([1, 2]))


@case("embedding-cuda-indices-cpu-weight")
def _():
    return nn.Embedding(10, 3)(torch.tensor([1, 2], device="cuda"))


@case("index-cpu-tensor-cuda-indices")
def _():
    return cpu(5)[torch.tensor([1, 2], device="cuda")]


@case("index-cuda-tensor-cpu-indices-ok")
def _():
    return gpu(5)[torch.tensor([1, 2])].device


@case("index-select-cpu-index")
def _():
    return gpu(5).index_select(0, torch.tensor([1]))


@case("gather-cpu-index")
def _():
    return gpu(2, 3).gather(1, torch.zeros(2, 1, dtype=torch.long))


@case("scatter-cpu-src")
def _():
    return gpu(2, 3).scatter(1, torch.zeros(2, 1, dtype=torch.long, device="cuda"), cpu(2, 1))


@case("where-cpu-cond")
def _():
    return torch.where(torch.ones(2, dtype=torch.bool), gpu(2), gpu(2))


@case("mask-cpu-bool")
def _():
    return gpu(3)[torch.tensor([True, False, True])].device


@case("to-numpy")
def _():
    return gpu(2).numpy()


@case("tolist-ok")
def _():
    return gpu(2).tolist()


@case("cross-entropy-weight-cpu")
def _():
    return nn.CrossEntropyLoss(weight=cpu(3))(gpu(2, 3), torch.tensor([0, 1], device="cuda"))


@case("bce-pos-weight-cpu")
def _():
    return nn.BCEWithLogitsLoss(pos_weight=cpu(3))(gpu(2, 3), gpu(2, 3))


@case("lstm-cpu-input")
def _():
    return nn.LSTM(3, 4).cuda()(cpu(2, 1, 3))


@case("lstm-cpu-hidden")
def _():
    h = (torch.zeros(1, 1, 4), torch.zeros(1, 1, 4))
    return nn.LSTM(3, 4).cuda()(gpu(2, 1, 3), h)


@case("gru-cpu-hidden")
def _():
    return nn.GRU(3, 4).cuda()(gpu(2, 1, 3), torch.zeros(1, 1, 4))


@case("pack-padded-cuda-lengths")
def _():
    return nn.utils.rnn.pack_padded_sequence(gpu(3, 2, 4), torch.tensor([3, 2], device="cuda"))


@case("grid-sample")
def _():
    return F.grid_sample(gpu(1, 1, 4, 4), cpu(1, 2, 2, 2), align_corners=False)


@case("out-arg-other-device")
def _():
    return torch.add(gpu(2), gpu(2), out=cpu(2))


@case("generator-cpu-for-cuda")
def _():
    return torch.randn(3, device="cuda", generator=torch.Generator())


@case("randperm-default-device-cuda")
def _():
    torch.set_default_device("cuda")
    try:
        loader = torch.utils.data.DataLoader(list(range(8)), batch_size=2, shuffle=True)
        return next(iter(loader))
    finally:
        torch.set_default_device(None)


@case("pin-cuda-tensor")
def _():
    return gpu(2).pin_memory()


@case("meta-copy-out")
def _():
    return torch.ones(2, device="meta").cpu()


@case("adam-state-cpu")
def _():
    model = nn.Linear(2, 2)
    opt = torch.optim.Adam(model.parameters())
    model(cpu(1, 2)).sum().backward()
    opt.step()
    state = opt.state_dict()
    model.cuda()
    opt2 = torch.optim.Adam(model.parameters())
    opt2.load_state_dict(state)  # casts state to the params' device: expected to work
    model(gpu(1, 2)).sum().backward()
    opt2.step()
    where = {k: v.device.type for k, v in next(iter(opt2.state.values())).items()}
    # now force the mismatch: state stays on CPU while the params are on CUDA
    for st in opt2.state.values():
        for k in ("exp_avg", "exp_avg_sq"):
            st[k] = st[k].cpu()
    opt2.step()
    return where


@case("fused-adam-state-cpu")
def _():
    model = nn.Linear(2, 2).cuda()
    opt = torch.optim.Adam(model.parameters(), fused=True)
    model(gpu(1, 2)).sum().backward()
    opt.step()
    for st in opt.state.values():
        st["exp_avg"] = st["exp_avg"].cpu()
    opt.step()


@case("data-parallel-module-on-cpu")
def _():
    return nn.DataParallel(nn.Linear(2, 2))(gpu(4, 2))


@case("load-cuda1-on-one-gpu")
def _():
    buf = io.BytesIO()
    torch.save({"w": gpu(2)}, buf)
    raw = buf.getvalue()
    # the zip's pickle records the storage location string; rewrite cuda:0 -> cuda:9 (same length)
    patched = raw.replace(b"cuda:0", b"cuda:9")
    return torch.load(io.BytesIO(patched), weights_only=True)


@case("autocast-cuda-on-cpu-math")
def _():
    with torch.autocast("cuda", dtype=torch.float16):
        return str((cpu(2, 2) @ cpu(2, 2)).dtype)


@case("deprecated-cuda-amp-autocast")
def _():
    with torch.cuda.amp.autocast():
        return str((gpu(2, 2) @ gpu(2, 2)).dtype)


@case("deprecated-cuda-amp-gradscaler")
def _():
    return type(torch.cuda.amp.GradScaler()).__name__


@case("autocast-output-meets-fp32")
def _():
    with torch.autocast("cuda", dtype=torch.bfloat16):
        h = gpu(2, 3) @ gpu(3, 3)
    return torch.mm(h, gpu(3, 2))


@case("ddp-device-ids-cpu-module")
def _():
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29533", rank=0, world_size=1)
    try:
        return nn.parallel.DistributedDataParallel(nn.Linear(2, 2), device_ids=[0])
    finally:
        dist.destroy_process_group()


@case("nccl-cpu-tensor")
def _():
    import torch.distributed as dist

    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29534", rank=0, world_size=1)
    try:
        t = cpu(2)
        dist.all_reduce(t)
        return t.tolist()
    finally:
        dist.destroy_process_group()


@case("init-process-group-twice")
def _():
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29535", rank=0, world_size=1)
    try:
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29536", rank=0, world_size=1)
    finally:
        dist.destroy_process_group()


@case("oom")
def _():
    return torch.empty(1 << 40, dtype=torch.uint8, device="cuda")


def run_case(fn: Callable[[], object]) -> dict:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = fn()
            result: dict = {"raised": False, "value": repr(value)[:300]}
        except BaseException as exc:
            result = {"raised": True, "type": f"{type(exc).__module__}.{type(exc).__qualname__}"}
            result["message"] = str(exc)
        torch.cuda.synchronize()
    result["warnings"] = [
        {"category": w.category.__name__, "message": str(w.message)} for w in caught if "torch" in w.filename
    ]
    return result


CHILD_CASES = {
    "device-side-assert": (
        "import torch, torch.nn.functional as F\n"
        "x = torch.zeros(2, 3, device='cuda'); y = torch.tensor([0, 7], device='cuda')\n"
        "F.cross_entropy(x, y); torch.cuda.synchronize()\n"
    ),
    "fork-after-cuda-init": (
        "import torch, multiprocessing as mp\n"
        "torch.zeros(1, device='cuda')\n"
        "def child(): torch.zeros(1, device='cuda')\n"
        "p = mp.get_context('fork').Process(target=child); p.start(); p.join()\n"
    ),
}


def run_child(code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    tail = [line for line in done.stderr.splitlines() if line.strip()][-8:]
    return {"returncode": done.returncode, "stderr_tail": tail}


def bandwidth() -> dict:
    x = torch.randn(64 * 1024 * 1024 // 4)  # 64 MiB
    pinned = x.pin_memory()

    def timed(fn, repeat=20):
        fn()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - start) / repeat

    pageable_s = timed(lambda: x.to("cuda"))
    pinned_s = timed(lambda: pinned.to("cuda", non_blocking=True))
    pin_then_copy_s = timed(lambda: x.pin_memory().to("cuda", non_blocking=True))
    gib = x.numel() * 4 / 2**30
    return {
        "bytes": x.numel() * 4,
        "pageable_GiB_s": round(gib / pageable_s, 2),
        "pinned_GiB_s": round(gib / pinned_s, 2),
        "pin_memory_then_copy_GiB_s": round(gib / pin_then_copy_s, 2),
    }


def amp_ratio() -> dict:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 1024)).cuda()
    x = torch.randn(4096, 1024, device="cuda")

    def timed(use_amp: bool, repeat=50):
        for _ in range(3):
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=use_amp):
                model(x)
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(repeat):
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=use_amp):
                model(x)
        torch.cuda.synchronize()
        return (time.perf_counter() - start) / repeat

    fp32, bf16 = timed(False), timed(True)
    return {
        "mlp": "1024-4096-1024, batch 4096, forward",
        "fp32_ms": round(fp32 * 1e3, 3),
        "bf16_autocast_ms": round(bf16 * 1e3, 3),
        "bf16_over_fp32": round(bf16 / fp32, 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results/cuda-messages.json"))
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: nothing recorded", file=sys.stderr)
        return 2
    record = {
        "recorded": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "gpu": torch.cuda.get_device_name(0),
        "device_count": torch.cuda.device_count(),
        "python": sys.version.split()[0],
        "cases": {},
        "child_cases": {},
    }
    for name, fn in CASES.items():
        record["cases"][name] = run_case(fn)
        print(name, json.dumps(record["cases"][name])[:300], flush=True)
    for name, code in CHILD_CASES.items():
        record["child_cases"][name] = run_child(code)
        print(name, record["child_cases"][name], flush=True)
    record["bandwidth"] = bandwidth()
    record["amp"] = amp_ratio()
    print(record["bandwidth"], record["amp"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
