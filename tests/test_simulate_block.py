"""devicekit.simulate as a block: what it replaces is put back, blocks nest, bad input changes nothing,
threads and DataLoader workers see the simulation, CUDA_VISIBLE_DEVICES narrows it."""

from __future__ import annotations

import multiprocessing
import sys
import threading

import pytest
import torch
from torch import nn

import devicekit
from devicekit.lang import using_language
from devicekit.simulate import is_simulated, simulate

REPLACED = [
    (torch.cuda, "is_available"),
    (torch.cuda, "device_count"),
    (torch.cuda, "current_device"),
    (torch.cuda, "set_device"),
    (torch.cuda, "get_device_properties"),
    (torch.cuda, "synchronize"),
    (torch.cuda, "memory_allocated"),
    (torch.cuda, "_lazy_init"),
    (torch.cuda, "default_generators"),
    (torch.cuda.random, "device_count"),
    (torch._C, "_accelerator_getAccelerator"),
    (torch._C, "_scatter"),
    (torch, "Generator"),
    (torch.serialization, "_package_registry"),
    (torch._utils, "_rebuild_tensor"),
    (torch.UntypedStorage, "to"),
    (threading.Thread, "start"),
]
MISSING = object()


def _snapshot() -> list[object]:
    return [
        owner.__dict__.get(name, MISSING) if isinstance(owner, type) else getattr(owner, name, MISSING)
        for owner, name in REPLACED
    ]


def _outside_is_a_cpu_only_machine() -> None:
    assert not torch.cuda.is_available() and torch.cuda.device_count() == 0
    assert not torch.accelerator.is_available()
    assert torch.overrides._get_current_function_mode_stack() == []
    assert torch.utils._python_dispatch._get_current_dispatch_mode_stack() == []
    x = torch.ones(3) * 2
    assert type(x) is torch.Tensor and x.device.type == "cpu" and x.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        torch.ones(1, device="cuda")


def test_every_replaced_attribute_is_the_original_object_after_the_block():
    before = _snapshot()
    with simulate(gpus=2):
        during = _snapshot()
        model = nn.Linear(2, 2).cuda()
        model(torch.ones(1, 2, device="cuda")).sum().backward()
    assert all(a is not b for a, b in zip(before, during, strict=True) if a is not MISSING)
    assert all(a is b for a, b in zip(before, _snapshot(), strict=True))
    _outside_is_a_cpu_only_machine()


def test_an_exception_inside_restores_everything():
    before = _snapshot()
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        with simulate():
            torch.ones(2, device="cuda") + torch.ones(2)
    assert all(a is b for a, b in zip(before, _snapshot(), strict=True))
    _outside_is_a_cpu_only_machine()


def test_blocks_nest_and_the_inner_machine_is_in_force_inside_it():
    before = _snapshot()
    with simulate(gpus=1, profile="T4"):
        outer = torch.ones(1, device="cuda")
        with simulate(gpus=3, profile="A100"):
            assert torch.cuda.device_count() == 3 and torch.cuda.get_device_name() == "NVIDIA A100-SXM4-80GB"
            inner = torch.ones(1, device="cuda:2")
            torch.cuda.manual_seed_all(0)
            assert (outer + 1).device.index == 0
        assert torch.cuda.device_count() == 1 and torch.cuda.get_device_name() == "Tesla T4"
        assert len(torch.cuda.default_generators) == 1
        assert inner.device.index == 2
        assert torch.overrides._get_current_function_mode_stack() != []
    assert all(a is b for a, b in zip(before, _snapshot(), strict=True))
    _outside_is_a_cpu_only_machine()


def test_it_is_a_decorator_and_devicekit_simulate_is_callable_either_way():
    @devicekit.simulate(gpus=2)
    def count() -> int:
        return torch.cuda.device_count()

    assert count() == 2 and count() == 2
    assert not torch.cuda.is_available()
    import devicekit.simulate as package

    assert devicekit.simulate is package and callable(package)
    assert devicekit.is_simulated(torch.ones(1)) is False


@pytest.mark.parametrize(
    "kwargs, kind, en, zh",
    [
        ({"gpus": 0}, ValueError, "gpus must be between 1 and 64", "gpus 必须在 1 到 64 之间"),
        ({"gpus": 1.5}, TypeError, "gpus must be a positive int", "gpus 必须是正整数"),
        ({"gpus": True}, TypeError, "gpus must be a positive int", "gpus 必须是正整数"),
        ({"profile": "K80"}, ValueError, "known profiles: H200, H100, A100, V100, T4, RTX 4090", "可选"),
        ({"force": "yes"}, TypeError, "force must be True or False", "force 只能是 True 或 False"),
    ],
)
def test_bad_input_is_a_bilingual_error_and_patches_nothing(kwargs, kind, en, zh):
    before = _snapshot()
    with pytest.raises(kind) as info:
        simulate(**kwargs)
    assert en in info.value.en and zh in info.value.zh
    assert all(a is b for a, b in zip(before, _snapshot(), strict=True))


def test_profiles_are_matched_without_case_or_spaces():
    assert simulate(profile="rtx4090").profile.name == "NVIDIA GeForce RTX 4090"
    assert simulate(profile="a100").profile.key == "A100"


def test_a_machine_with_real_gpus_is_refused_unless_forced(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 8)
    before = _snapshot()
    with pytest.raises(RuntimeError) as info:
        with simulate():
            pass
    assert "this machine has 8 real GPU(s)" in info.value.en and "force=True" in info.value.en
    assert "这台机器有 8 块真实 GPU" in info.value.zh
    assert all(a is b for a, b in zip(before, _snapshot(), strict=True))
    with simulate(force=True):
        assert is_simulated(torch.ones(1, device="cuda"))


def test_the_note_follows_the_readers_language():
    for lang, phrase in (("en", "raised by a simulated GPU"), ("zh", "这是模拟 GPU 报的错")):
        with using_language(lang), simulate(), pytest.raises(RuntimeError) as info:
            torch.ones(2, device="cuda") @ torch.ones(2, 2)
        assert phrase in info.value.__notes__[0]


@pytest.mark.parametrize(
    "visible, count", [("1", 1), ("0,1", 2), ("", 0), ("-1", 0), ("1,7", 1), ("GPU-1234", 0), ("3", 0)]
)
def test_cuda_visible_devices_narrows_or_hides_the_simulated_gpus(monkeypatch, visible, count):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    with simulate(gpus=2):
        assert torch.cuda.device_count() == count and torch.cuda.is_available() == (count > 0)
        if count == 0:
            with pytest.raises(RuntimeError, match="No CUDA GPUs are available"):
                torch.ones(1, device="cuda")
            with pytest.raises(RuntimeError, match="torch.cuda.is_available\\(\\) is False"):
                torch.serialization._validate_device("cuda:0", "cuda")


def test_a_thread_started_in_the_block_sees_it_and_one_started_before_does_not():
    seen: dict[str, object] = {}
    release = threading.Event()

    def early() -> None:
        release.wait(10)
        seen["early"] = torch.overrides._get_current_function_mode_stack() == []

    def late() -> None:
        seen["late"] = is_simulated(torch.ones(1, device="cuda")) and torch.cuda.current_device() == 0

    before = threading.Thread(target=early)
    before.start()
    with simulate(gpus=2):
        torch.cuda.set_device(1)
        thread = threading.Thread(target=late)
        thread.start()
        thread.join()
        release.set()
        before.join()
    assert seen == {"early": True, "late": True}


def test_a_dataloader_with_pin_memory_in_the_main_thread():
    data = torch.utils.data.TensorDataset(torch.arange(8.0).reshape(4, 2), torch.arange(4))
    with simulate():
        loader = torch.utils.data.DataLoader(data, batch_size=2, pin_memory=True)
        batches = list(loader)
        assert all(x.is_pinned() and x.device.type == "cpu" for x, _ in batches)
        moved = [x.cuda(non_blocking=True) for x, _ in batches]
        assert moved[1].tolist() == [[4.0, 5.0], [6.0, 7.0]] and moved[1].is_cuda


@pytest.mark.skipif(sys.platform != "linux", reason="fork start method")
def test_devicekits_loader_prefetches_on_a_side_stream_of_a_simulated_gpu():
    # DeviceLoader's CUDA path: copies under torch.cuda.stream(side), wait_stream, record_stream per tensor
    from devicekit import DeviceManager

    data = [{"x": torch.full((3,), float(i)), "y": torch.tensor(i)} for i in range(4)]
    with simulate(gpus=2):
        loader = torch.utils.data.DataLoader(data, batch_size=2)
        batches = list(DeviceManager("cuda:1").loader(loader))
        assert [b["x"].device for b in batches] == [torch.device("cuda", 1)] * 2
        assert [b["y"].tolist() for b in batches] == [[0, 1], [2, 3]]
        batches[0]["x"].record_stream(torch.cuda.current_stream(1))


def test_forked_dataloader_workers_make_cpu_tensors_and_cannot_use_cuda():
    data = torch.utils.data.TensorDataset(torch.arange(8.0).reshape(4, 2))
    context = multiprocessing.get_context("fork")
    with simulate():
        loader = torch.utils.data.DataLoader(
            data, batch_size=2, num_workers=2, pin_memory=True, multiprocessing_context=context
        )
        batches = [x for (x,) in loader]
        assert [b.device.type for b in batches] == ["cpu", "cpu"] and all(b.is_pinned() for b in batches)
        assert torch.cat(batches).cuda().sum().item() == 28.0

        bad = torch.utils.data.DataLoader(_CudaInWorker(), num_workers=1, multiprocessing_context=context)
        with pytest.raises(RuntimeError, match="Cannot re-initialize CUDA in forked subprocess"):
            list(bad)


class _CudaInWorker(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return 1

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.ones(1, device="cuda")


def test_cuda_named_in_a_custom_backward_works_and_pytorchs_init_flag_is_cleared_after_the_block():
    from devicekit.simulate import _lazyinit

    class Twice(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            # autograd runs this without the simulation's function mode: C++ sees device="cuda"
            return grad * torch.full((1,), 2.0, device=grad.device)

    with simulate():
        x = torch.ones(2, device="cuda", requires_grad=True)
        Twice.apply(x).sum().backward()
        assert x.grad.tolist() == [2.0, 2.0] and x.grad.is_cuda
        if sys.platform.startswith("linux"):
            assert _lazyinit.is_set() is True  # PyTorch's C++ flag: CUDA "initialised"
    if sys.platform.startswith("linux"):
        assert _lazyinit.is_set() is False
    _outside_is_a_cpu_only_machine()


def test_plain_cpu_tensors_inside_the_block_are_untouched():
    def train() -> list[torch.Tensor]:
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            model(torch.randn(4, 3)).pow(2).mean().backward()
            opt.step()
        return [p.detach().clone() for p in model.parameters()]

    outside = train()
    with simulate():
        inside = train()
        assert all(type(p) is torch.Tensor and p.device.type == "cpu" for p in inside)
        assert torch.tensor([1.0]).numpy().tolist() == [1.0]
    for a, b in zip(outside, inside, strict=True):
        assert torch.equal(a, b)  # the same generator draws, the same kernels: bit for bit
