"""devicekit.simulate across the process boundary: torch.save/torch.load, and the memory of a profile."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest
import torch
from torch import nn

from devicekit.simulate import is_simulated, simulate

RECORD = json.loads((Path(__file__).resolve().parent.parent / "results" / "cuda-messages.json").read_text())


def _checkpoint_on_gpu1() -> bytes:
    buf = io.BytesIO()
    with simulate(gpus=2):
        model = nn.Linear(2, 2).to("cuda:1")
        torch.save({"model": model.state_dict(), "t": torch.arange(3.0, device="cuda:1")}, buf)
    return buf.getvalue()


def test_a_checkpoint_saved_on_simulated_gpu_1_records_cuda_1_locations():
    raw = _checkpoint_on_gpu1()
    assert b"cuda:1" in raw and b"cpu" not in raw


def test_outside_the_block_it_fails_as_on_a_cpu_only_machine():
    with pytest.raises(RuntimeError) as info:
        torch.load(io.BytesIO(_checkpoint_on_gpu1()))
    assert str(info.value).startswith(
        "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False."
    )
    assert not getattr(info.value, "__notes__", None)  # PyTorch's own error, untouched
    assert torch.load(io.BytesIO(_checkpoint_on_gpu1()), map_location="cpu")["t"].tolist() == [0.0, 1.0, 2.0]


def test_inside_it_loads_onto_the_gpu_it_was_saved_on():
    raw = _checkpoint_on_gpu1()
    with simulate(gpus=2):
        loaded = torch.load(io.BytesIO(raw))
        assert is_simulated(loaded["t"]) and loaded["t"].device == torch.device("cuda", 1)
        assert loaded["model"]["weight"].device.index == 1
        model = nn.Linear(2, 2).cuda()
        model.load_state_dict(loaded["model"])  # copies across simulated GPUs
        assert model.weight.device.index == 0
        torch.testing.assert_close(model.weight.cpu(), loaded["model"]["weight"].cpu())


def test_one_gpu_raises_pytorchs_message_and_every_map_location_works():
    raw = _checkpoint_on_gpu1()
    with simulate(gpus=1):
        with pytest.raises(RuntimeError) as info:
            torch.load(io.BytesIO(raw))
        assert str(info.value) == (
            "Attempting to deserialize object on CUDA device 1 but torch.cuda.device_count() is 1. "
            "Please use torch.load with map_location to map your storages to an existing device."
        )
        for where in (
            {"cuda:1": "cuda:0"},
            "cuda",
            "cuda:0",
            torch.device("cuda"),
            lambda storage, loc: storage.to(device=torch.device("cuda")),
            lambda storage, loc: storage.cuda(),
        ):
            t = torch.load(io.BytesIO(raw), map_location=where)["t"]
            assert t.device == torch.device("cuda", 0) and t.tolist() == [0.0, 1.0, 2.0], where
        assert not is_simulated(torch.load(io.BytesIO(raw), map_location="cpu")["t"])
        assert torch.load(io.BytesIO(raw), weights_only=False, map_location="cuda")["t"].is_cuda


def test_a_storage_takes_its_device_by_keyword_only_as_in_pytorch():
    """``UntypedStorage.to(self, *, device, non_blocking=False)`` (torch/storage.py, v2.13.0): the positional
    form raises PyTorch's own TypeError, simulated or not (a map_location learners write)."""
    buf = io.BytesIO()
    torch.save({"t": torch.ones(2)}, buf)
    messages = []
    for block in (contextlib.nullcontext(), simulate(gpus=1)):
        with block, pytest.raises(TypeError) as info:
            torch.load(io.BytesIO(buf.getvalue()), map_location=lambda storage, loc: storage.to("cpu"))
        messages.append(str(info.value))
    with simulate(gpus=1), pytest.raises(TypeError) as info:
        torch.load(io.BytesIO(buf.getvalue()), map_location=lambda storage, loc: storage.to("cuda:0"))
    messages.append(str(info.value))
    assert len(set(messages)) == 1 and "positional argument" in messages[0], messages


def test_the_recorded_cuda9_case_uses_pytorchs_own_validation():
    with simulate(gpus=1):
        buf = io.BytesIO()
        torch.save({"w": torch.ones(2, device="cuda")}, buf)
        with pytest.raises(RuntimeError) as info:
            torch.load(io.BytesIO(buf.getvalue().replace(b"cuda:0", b"cuda:9")), weights_only=True)
    assert str(info.value) == RECORD["cases"]["load-cuda1-on-one-gpu"]["message"]


def test_parameters_and_shared_storages_round_trip():
    with simulate():
        base = torch.arange(6.0, device="cuda")
        param = nn.Parameter(torch.ones(2, device="cuda"))
        buf = io.BytesIO()
        torch.save({"base": base, "view": base[2:4], "param": param}, buf)
        loaded = torch.load(io.BytesIO(buf.getvalue()))
        loaded["view"].fill_(0)
        assert loaded["base"].tolist() == [0.0, 1.0, 0.0, 0.0, 4.0, 5.0]  # still one storage
        assert isinstance(loaded["param"], nn.Parameter) and loaded["param"].requires_grad


def test_a_factory_that_does_not_fit_the_profile_is_cudas_out_of_memory_error():
    with simulate(profile="T4"):
        keep = torch.empty(1024, device="cuda")
        with pytest.raises(torch.OutOfMemoryError) as info:
            torch.empty(1 << 40, dtype=torch.uint8, device="cuda")
        with pytest.raises(torch.OutOfMemoryError):
            torch.zeros(1).expand(1 << 32).to("cuda")  # 16 GiB of float32 to a 15 GiB card (a view: no RAM)
        del keep
    message = str(info.value)
    assert (
        "Tried to allocate 1024.00 GiB. GPU 0 has a total capacity of 14.58 GiB of which 14.58 GiB" in message
    )
    recorded = RECORD["cases"]["oom"]["message"]
    number = re.compile(r"\d+(\.\d+)? (bytes|KiB|MiB|GiB)")
    assert number.sub("N", message) == number.sub("N", recorded)
    assert RECORD["cases"]["oom"]["type"] == "torch.OutOfMemoryError"
