"""devicekit.simulate: torch.distributed with the nccl backend on simulated GPUs, in one process.

The NCCL and DDP texts are the cases recorded on an H200 (``nccl-cpu-tensor``,
``ddp-device-ids-cpu-module`` in ``results/cuda-messages.json``).
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from torch import nn

from devicekit.simulate import is_simulated, raised_by_simulation, simulate

RECORD = json.loads((Path(__file__).resolve().parent.parent / "results" / "cuda-messages.json").read_text())
ORIGINALS = {
    "init_process_group": dist.init_process_group,
    "destroy_process_group": dist.destroy_process_group,
    "get_backend": dist.get_backend,
    "is_nccl_available": dist.is_nccl_available,
}


def recorded(case: str) -> str:
    return RECORD["cases"][case]["message"]


def _address() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


def _init() -> None:
    dist.init_process_group("nccl", init_method=_address(), rank=0, world_size=1)


def _assert_restored() -> None:
    assert not dist.is_initialized()
    for name, original in ORIGINALS.items():
        assert getattr(dist, name) is original, name
    assert dist.distributed_c10d.init_process_group is ORIGINALS["init_process_group"]
    assert dist.is_nccl_available() is False  # this CPU build has no NCCL


def test_an_nccl_group_runs_collectives_on_simulated_gpus_and_refuses_a_cpu_tensor_as_nccl_does():
    with simulate():
        _init()
        assert dist.get_backend() == "nccl" and dist.is_nccl_available()
        t = torch.arange(3.0, device="cuda")
        dist.all_reduce(t)
        assert is_simulated(t) and t.tolist() == [0.0, 1.0, 2.0]
        gathered = [torch.zeros(3, device="cuda")]
        dist.all_gather(gathered, t)
        assert is_simulated(gathered[0]) and gathered[0].tolist() == [0.0, 1.0, 2.0]
        with pytest.raises(RuntimeError) as info:
            dist.all_reduce(torch.ones(2))
        assert str(info.value) == recorded("nccl-cpu-tensor") and raised_by_simulation(info.value)
        dist.destroy_process_group()
    _assert_restored()


def test_a_gloo_group_in_a_block_still_takes_cpu_tensors():
    with simulate():
        dist.init_process_group("gloo", init_method=_address(), rank=0, world_size=1)
        assert dist.get_backend() == "gloo"
        cpu = torch.ones(2)
        dist.all_reduce(cpu)
        assert cpu.tolist() == [1.0, 1.0]
        dist.destroy_process_group()
    _assert_restored()


def test_ddp_with_device_ids_applies_its_checks_and_trains_like_the_plain_model():
    torch.manual_seed(0)
    plain = nn.Linear(3, 2)
    with simulate():
        _init()
        with pytest.raises(ValueError) as info:
            nn.parallel.DistributedDataParallel(nn.Linear(3, 2), device_ids=[0])  # forgot .cuda()
        assert str(info.value) == recorded("ddp-device-ids-cpu-module")
        model = nn.Linear(3, 2)
        model.load_state_dict(plain.state_dict())
        model = model.cuda()
        ddp = nn.parallel.DistributedDataParallel(model, device_ids=[0])
        ddp(torch.ones(4, 3, device="cuda")).pow(2).sum().backward()
        dist.destroy_process_group()
    plain(torch.ones(4, 3)).pow(2).sum().backward()
    assert model.weight.grad.device == torch.device("cuda", 0)
    torch.testing.assert_close(model.weight.grad.cpu(), plain.weight.grad)
    _assert_restored()


def test_a_group_left_open_or_an_exception_is_cleaned_up_when_the_block_closes():
    with simulate():
        _init()  # never destroyed
    _assert_restored()
    with pytest.raises(KeyError), simulate():
        _init()
        raise KeyError("boom")
    _assert_restored()


def test_a_dtensor_with_a_plain_gpu_tensor_raises_dtensors_own_error_as_on_a_gpu():
    # torch/distributed/tensor/_dispatch.py (v2.13.0) raises this for any plain tensor, whatever its device;
    # before, the simulation's device check came first with "two devices, cuda:0 and cuda:0"
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, distribute_tensor

    with simulate(gpus=1):
        _init()
        mesh = init_device_mesh("cuda", (1,))
        d = distribute_tensor(torch.ones(4, 4, device="cuda"), mesh, [Replicate()])
        assert (d + d).to_local().sum().item() == 32.0
        # a DTensor's C++ device is its local tensor's (meta:0 here): Python reads it as cuda:0
        assert d.device == torch.device("cuda", 0) and d.is_cuda and not d.is_meta
        assert torch._C._get_accelerator() == torch.device("cuda")  # FSDP2's default mesh asks this
        # a DTensor's own ops on its local tensors run under the simulation (to_empty's empty_like)
        meta = distribute_tensor(torch.ones(4, 4, device="meta"), mesh, [Replicate()])
        empty = torch.empty_like(meta, device="cuda")
        assert empty.device == torch.device("cuda", 0)
        assert is_simulated(empty.to_local()) and not empty.is_meta
        for plain in (torch.ones(4, 4, device="cuda"), torch.ones(4, 4)):
            with pytest.raises(RuntimeError, match="got mixed torch.Tensor and DTensor"):
                d + plain
    _assert_restored()


def test_fsdp2_on_a_meta_model_given_storage_on_the_gpu_trains_as_on_a_gpu():
    # the lesson-11 order: build on meta, fully_shard each layer then the root, to_empty onto the GPU,
    # reset_parameters (DTensor random ops: the CUDA generator's seed-and-offset state), then forward
    from torch.distributed.fsdp import fully_shard

    with simulate(gpus=1):
        _init()
        with torch.device("meta"):
            model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
        for layer in model:
            fully_shard(layer)
        fully_shard(model)
        model.to_empty(device="cuda")
        for layer in model:
            layer.reset_parameters()
        assert model[0].weight.device == torch.device("cuda", 0)
        assert is_simulated(model[0].weight.to_local())
        out = model(torch.ones(3, 4, device="cuda"))
        assert out.device == torch.device("cuda", 0) and torch.isfinite(out).all()
        out.sum().backward()
        assert model[0].weight.grad is not None and model[0].weight.grad.device == torch.device("cuda", 0)
    _assert_restored()
