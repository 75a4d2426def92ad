"""devicekit.simulate: the simulated tensor, CUDA's device rules and texts, torch.cuda while a block is open.

Every CUDA text asserted here is either recorded on an H200 (``results/cuda-messages.json``, read by case
name through ``recorded``) or PyTorch's own format string (``_rules`` says where each comes from;
``test_simulate_texts.py`` finds them in the installed binaries).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import devicekit
from devicekit.simulate import SimulatedTensor, is_simulated, simulate

RECORD = json.loads((Path(__file__).resolve().parent.parent / "results" / "cuda-messages.json").read_text())


def recorded(case: str) -> str:
    return RECORD["cases"][case]["message"]


NOTE_EN = "devicekit.simulate: raised by a simulated GPU"


# --- the simulated tensor ---------------------------------------------------------------------------


def test_a_factory_with_device_cuda_makes_a_simulated_tensor_with_real_values():
    with simulate():
        x = torch.arange(6.0, device="cuda").reshape(2, 3)
        assert is_simulated(x) and isinstance(x, SimulatedTensor)
        assert x.device == torch.device("cuda", 0) and x.is_cuda and not x.is_cpu
        assert x.get_device() == 0 and x.type() == "torch.cuda.FloatTensor"
        assert (x * 2).sum().item() == 30.0
        assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
        assert x.cpu().device.type == "cpu" and not is_simulated(x.cpu())
        assert torch.equal(x.cpu(), torch.arange(6.0).reshape(2, 3))


def test_it_prints_as_a_cuda_tensor():
    with simulate():
        assert repr(torch.ones(2, device="cuda")) == "tensor([1., 1.], device='cuda:0')"
        assert repr(torch.tensor([1, 2], device="cuda")) == "tensor([1, 2], device='cuda:0')"
        w = torch.zeros(2, device="cuda", requires_grad=True)
        assert repr(w) == "tensor([0., 0.], device='cuda:0', requires_grad=True)"
        assert repr(w * 2) == "tensor([0., 0.], device='cuda:0', grad_fn=<MulBackward0>)"
        assert repr(torch.ones(2, device="cuda", dtype=torch.float16)) == (
            "tensor([1., 1.], device='cuda:0', dtype=torch.float16)"
        )
        assert repr(torch.empty(0, 3, device="cuda")) == "tensor([], device='cuda:0', size=(0, 3))"
        param = nn.Linear(1, 1, bias=False).cuda().weight
        assert repr(param).startswith("Parameter containing:\ntensor([[") and "device='cuda:0'" in repr(param)
        assert f"{torch.tensor(2.5, device='cuda'):.1f}" == "2.5"


def test_numpy_raises_cudas_type_error_and_tolist_works():
    with simulate():
        with pytest.raises(TypeError) as info:
            torch.ones(2, device="cuda").numpy()
        assert str(info.value) == recorded("to-numpy")
        assert torch.ones(2, device="cuda").tolist() == [1.0, 1.0]


def test_numpy_force_copies_to_the_host_as_on_a_gpu():
    # torch/_tensor_docs.py (v2.13.0), Tensor.numpy: "If force is True this is equivalent to calling
    # t.detach().cpu().resolve_conj().resolve_neg().numpy()", on any device
    with simulate(gpus=2):
        t = torch.tensor([1.0, 2.0], device="cuda:1", requires_grad=True)
        array = t.numpy(force=True)
        assert array.dtype.name == "float32" and array.tolist() == [1.0, 2.0]
        with pytest.raises(TypeError):
            t.detach().numpy()


def test_tolist_copies_to_the_host_where_a_dispatch_mode_sees_it():
    # a check that watches device-to-host copies (lab 3's) must see tolist's, as it does on a GPU
    from torch.utils._python_dispatch import TorchDispatchMode

    class Copies(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seen = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is torch.ops.aten._to_copy.default and "device" in kwargs:
                self.seen.append((str(args[0].device), str(kwargs["device"])))
            return func(*args, **kwargs)

    with simulate(gpus=2):
        ids = torch.tensor([[3, 1], [4, 1]], device="cuda:1")
        with Copies() as copies:
            assert ids.tolist() == [[3, 1], [4, 1]]
        assert copies.seen == [("cuda:1", "cpu")]


def test_cuda_means_the_current_device_and_an_index_past_the_count_is_an_invalid_ordinal():
    with simulate(gpus=2):
        torch.cuda.set_device(1)
        assert torch.ones(1, device="cuda").device == torch.device("cuda", 1)
        assert torch.ones(1).cuda().device == torch.device("cuda", 1)
        with torch.cuda.device(0):
            assert torch.zeros(1, device="cuda").device == torch.device("cuda", 0)
        assert torch.cuda.current_device() == 1
        with pytest.raises(torch.AcceleratorError) as info:
            torch.ones(1, device="cuda:2")
        assert str(info.value).startswith("CUDA error: invalid device ordinal\n")
        with pytest.raises(torch.AcceleratorError):
            torch.cuda.set_device(5)


def test_moves_between_the_host_and_two_simulated_gpus_copy_values():
    with simulate(gpus=2):
        a = torch.tensor([1.0, 2.0]).cuda()
        b = a.to("cuda:1")
        assert b.device.index == 1 and b.tolist() == [1.0, 2.0]
        b.add_(1)
        assert a.tolist() == [1.0, 2.0]  # a copy, not a view
        assert a.to("cuda:0") is a  # already there: .to returns the same tensor, as on CUDA
        assert a.to(b).device.index == 1
        assert a.to(torch.float16).dtype == torch.float16 and a.to(torch.float16).device.index == 0
        c = torch.empty(2, device="cuda:1")
        c.copy_(a)
        assert c.tolist() == [1.0, 2.0] and c.device.index == 1
        host = torch.empty(2)
        host.copy_(b, non_blocking=True)
        assert host.tolist() == [2.0, 3.0]


def test_views_and_in_place_ops_keep_the_same_simulated_tensor():
    with simulate():
        x = torch.zeros(2, 3, device="cuda")
        row = x[0]
        assert x.add_(1) is x
        row.mul_(5)
        assert x.tolist() == [[5.0, 5.0, 5.0], [1.0, 1.0, 1.0]]
        x.unsqueeze_(0)
        assert x.shape == (1, 2, 3)
        out = torch.empty(0, device="cuda")
        torch.add(torch.ones(4, device="cuda"), 1, out=out)
        assert out.shape == (4,) and out.tolist() == [2.0] * 4


# --- training --------------------------------------------------------------------------------------


def test_module_cuda_keeps_parameter_identity_and_an_optimizer_built_before_trains_it():
    torch.manual_seed(0)
    with simulate():
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        params = list(model.parameters())
        opt = torch.optim.SGD(model.parameters(), lr=0.1)  # built before the move, as in many scripts
        model.cuda()
        assert all(p is q for p, q in zip(params, model.parameters(), strict=True))
        assert all(p.device == torch.device("cuda", 0) and is_simulated(p) for p in model.parameters())
        assert isinstance(model[0].weight, nn.Parameter)
        x, y = torch.randn(16, 4, device="cuda"), torch.randn(16, 1, device="cuda")
        before = F.mse_loss(model(x), y).item()
        for _ in range(20):
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()
        assert model[0].weight.grad.device == torch.device("cuda", 0)
        assert loss.item() < before


def test_the_same_training_step_gives_the_same_numbers_as_on_the_cpu():
    def step(device: str) -> list[float]:
        torch.manual_seed(1)
        model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).to(device)
        opt = torch.optim.Adam(model.parameters(), lr=0.01)
        x = torch.arange(12.0).reshape(4, 3).to(device)
        for _ in range(3):
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()
        return [p.detach().cpu() for p in model.parameters()]

    plain = step("cpu")
    with simulate():
        simulated = step("cuda")
    for a, b in zip(plain, simulated, strict=True):
        torch.testing.assert_close(a, b)


# --- CUDA's device rules and texts -----------------------------------------------------------------


@pytest.mark.parametrize(
    "case, run",
    [
        ("add-cpu-first", lambda: torch.ones(2) + torch.ones(2, device="cuda")),
        ("add-1elem-cpu", lambda: torch.tensor([2.0]) + torch.ones(2, device="cuda")),
        ("cat", lambda: torch.cat([torch.ones(2, device="cuda"), torch.ones(2)])),
        ("matmul", lambda: torch.ones(2, 3) @ torch.ones(3, 2, device="cuda")),
        ("linear-bias-cpu-input", lambda: nn.Linear(4, 2).cuda()(torch.ones(3, 4))),
        ("index-select-cpu-index", lambda: torch.ones(5, device="cuda").index_select(0, torch.tensor([1]))),
        ("generator-cpu-for-cuda", lambda: torch.randn(3, device="cuda", generator=torch.Generator())),
        ("pin-cuda-tensor", lambda: torch.ones(2, device="cuda").pin_memory()),
        ("conv-cuda-input-cpu-weight", lambda: nn.Conv2d(1, 1, 3)(torch.ones(1, 1, 5, 5, device="cuda"))),
        (
            "lstm-cpu-hidden",
            lambda: nn.LSTM(3, 4).cuda()(torch.ones(2, 1, 3, device="cuda"), (torch.zeros(1, 1, 4),) * 2),
        ),  # noqa: E501
    ],
)
def test_a_device_mix_raises_the_recorded_cuda_error_with_a_note(case, run):
    with simulate(), pytest.raises(RuntimeError) as info:
        run()
    assert str(info.value) == recorded(case)
    assert type(info.value) is RuntimeError
    assert any(NOTE_EN in note for note in info.value.__notes__)


def test_one_0dim_cpu_tensor_may_join_but_not_two_and_not_in_generated_checks():
    with simulate():
        x = torch.ones(3, device="cuda")
        assert (x + torch.tensor(2.0)).device.type == "cuda"
        assert torch.where(x > 0, torch.tensor(1.0), torch.tensor(0.0)).device.type == "cuda"
        with pytest.raises(RuntimeError, match="^Trying to pass too many CPU scalars to non-CPU kernel!"):
            torch.addcmul(x, torch.tensor(1.0), torch.tensor(2.0))
        with pytest.raises(RuntimeError) as info:
            torch.clamp(x, min=torch.tensor(0.5))
        assert "(when checking argument in method wrapper_CUDA_clamp_Tensor)" in str(info.value)


def test_two_simulated_gpus_do_not_mix():
    with simulate(gpus=2):
        a, b = torch.ones(2, device="cuda:0"), torch.ones(2, device="cuda:1")
        with pytest.raises(RuntimeError) as info:
            a + b
        assert str(info.value) == (
            "Expected all tensors to be on the same device, but found at least two devices, "
            "cuda:0 and cuda:1!"
        )
        with pytest.raises(
            RuntimeError, match="got mat2 is on cuda:1, different from other tensors on cuda:0 "
        ):
            torch.ones(2, 2, device="cuda:0") @ torch.ones(2, 2, device="cuda:1")


def test_cpu_indices_are_allowed_and_gpu_indices_into_a_cpu_tensor_are_not():
    with simulate():
        x = torch.arange(5.0, device="cuda")
        assert x[torch.tensor([1, 3])].tolist() == [1.0, 3.0]
        assert x[torch.tensor([True, False, True, False, False])].device.type == "cuda"
        with pytest.raises(RuntimeError) as info:
            torch.ones(5)[torch.tensor([1, 2], device="cuda")]
        assert str(info.value) == recorded("index-cpu-tensor-cuda-indices")


def test_pack_padded_sequence_wants_cpu_lengths():
    with simulate():
        data = torch.ones(3, 2, 4, device="cuda")
        packed = nn.utils.rnn.pack_padded_sequence(data, torch.tensor([3, 2]))
        assert packed.data.device.type == "cuda" and packed.batch_sizes.device.type == "cpu"
        with pytest.raises(RuntimeError) as info:
            nn.utils.rnn.pack_padded_sequence(data, torch.tensor([3, 2], device="cuda"))
        assert str(info.value) == recorded("pack-padded-cuda-lengths")


def test_a_cpu_generator_under_the_default_device_cuda_is_the_dataloader_error():
    with simulate():
        torch.set_default_device("cuda")
        try:
            loader = torch.utils.data.DataLoader(list(range(8)), batch_size=2, shuffle=True)
            with pytest.raises(RuntimeError) as info:
                next(iter(loader))  # the case recorded on the H200, line for line
        finally:
            torch.set_default_device(None)
    assert str(info.value) == recorded("randperm-default-device-cuda")
    with simulate():
        gen = torch.Generator(device="cuda")
        assert gen.device == torch.device("cuda", 0) and isinstance(gen, torch.Generator)
        assert torch.randn(2, device="cuda", generator=gen).device.type == "cuda"


# --- torch.cuda and torch.accelerator inside a block -------------------------------------------------


def test_torch_cuda_answers_for_the_simulated_machine():
    with simulate(gpus=2, profile="A100"):
        assert torch.cuda.is_available() and torch.cuda.device_count() == 2
        assert torch.cuda.get_device_name(1) == "NVIDIA A100-SXM4-80GB"
        assert torch.cuda.get_device_capability() == (8, 0)
        assert torch.cuda.get_device_properties(0).multi_processor_count == 108
        assert torch.cuda.is_bf16_supported(including_emulation=False)
        torch.cuda.synchronize()
        with pytest.raises(AssertionError, match="^Invalid device id"):
            torch.cuda.get_device_name(2)
    with simulate(profile="T4"):
        assert torch.cuda.get_device_capability() == (7, 5)
        assert not torch.cuda.is_bf16_supported(including_emulation=False)
        assert torch.cuda.is_bf16_supported()  # a bf16 tensor can be made: emulation counts by default


def test_torch_accelerator_answers_for_cuda():
    with simulate(gpus=2):
        assert torch.accelerator.is_available() and torch.accelerator.device_count() == 2
        assert torch.accelerator.current_accelerator() == torch.device("cuda")
        torch.accelerator.set_device_index(1)
        assert torch.accelerator.current_device_index() == 1 and torch.cuda.current_device() == 1
        torch.accelerator.synchronize()
        assert not torch.accelerator.current_stream().is_capturing()


def test_memory_allocated_counts_live_storages_per_device():
    with simulate(gpus=2):
        assert torch.cuda.memory_allocated(0) == 0
        a = torch.empty(1000, device="cuda:0")  # 4000 bytes -> 4096 (512-byte blocks)
        b = torch.empty(10, device="cuda:1")
        view = a[10:]
        assert torch.cuda.memory_allocated(0) == 4096 and torch.cuda.memory_allocated(1) == 512
        del a
        assert torch.cuda.memory_allocated(0) == 4096  # the view keeps the storage
        del view
        assert torch.cuda.memory_allocated(0) == 0 and torch.cuda.max_memory_allocated(0) == 4096
        free, total = torch.cuda.mem_get_info(1)
        assert total == devicekit.simulate.PROFILES["H200"].total_memory and free == total - 512
        del b


def test_pin_memory_and_non_blocking_copies():
    with simulate():
        host = torch.arange(4.0)
        pinned = host.pin_memory()
        assert pinned.is_pinned() and not host.is_pinned() and pinned.device.type == "cpu"
        assert pinned[1:].is_pinned()
        moved = pinned.to("cuda", non_blocking=True)
        assert moved.tolist() == [0.0, 1.0, 2.0, 3.0] and not moved.is_pinned()


def test_the_cudnn_flag_and_cuda_random_seeds():
    with simulate(gpus=2):
        torch.cuda.manual_seed_all(3)
        a = torch.randn(3, device="cuda:1")
        torch.cuda.manual_seed_all(3)
        b = torch.randn(3, device="cuda:1")
        assert torch.equal(a.cpu(), b.cpu())
        assert torch.backends.cudnn.is_available()


def test_raised_by_simulation_tells_the_simulated_errors_apart():
    from devicekit.simulate import raised_by_simulation

    with simulate(), pytest.raises(RuntimeError) as info:
        torch.ones(2, device="cuda") + torch.ones(2)
    assert raised_by_simulation(info.value)
    with pytest.raises(RuntimeError) as plain:
        torch.ones(2) @ torch.ones(3)
    assert not raised_by_simulation(plain.value)


def test_streams_events_and_the_device_context_manager():
    with simulate(gpus=2):
        stream = torch.cuda.Stream(device=1)
        assert stream.device == torch.device("cuda", 1) and stream.query()
        with torch.cuda.stream(stream):
            assert torch.cuda.current_device() == 1
            assert torch.ones(1, device="cuda").device.index == 1
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.ones(100, device="cuda").sum()
        end.record()
        end.synchronize()
        assert start.elapsed_time(end) >= 0.0
        torch.cuda.current_stream().wait_stream(stream)
        with torch.device("cuda:1"):
            assert torch.zeros(2).device == torch.device("cuda", 1)
        assert torch.zeros(2).device.type == "cpu"


def test_list_indices_keep_their_values_and_cpp_checks_name_cuda():
    with simulate():
        x = torch.arange(25.0, device="cuda").reshape(5, 5)
        assert x[[1, 2]].tolist() == [[5.0, 6.0, 7.0, 8.0, 9.0], [10.0, 11.0, 12.0, 13.0, 14.0]]
        assert x[[1, 2], [0, 0]].tolist() == [5.0, 10.0] and x[[1, 2]].is_cuda
        with pytest.raises(RuntimeError) as info:  # a check PyTorch makes inside a C++ composite
            torch.tensor_split(x[0], torch.tensor([1, 3], device="cuda"))
        assert str(info.value) == (
            "tensor_split expected tensor_indices_or_sections to be on cpu, but it's on cuda:0"
        )
        with pytest.raises(RuntimeError, match="^Expected tensor to have cuda DeviceType, but got tensor"):
            torch.inner(torch.ones(3, device="cuda"), torch.ones(3))


def test_sparse_tensors_are_refused_clearly():
    with simulate(), pytest.raises(NotImplementedError) as info:
        torch.ones(2, 2).to_sparse().cuda()
    assert "torch.sparse_coo tensors are not simulated" in info.value.en and "不模拟" in info.value.zh
