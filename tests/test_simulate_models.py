"""Real models on simulated GPUs: the layers the course meets, their device rules, and what Python code
around them (DataParallel, optimizers, deepcopy, custom autograd functions) does with them."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from devicekit.simulate import is_simulated, simulate

RECORD = json.loads((Path(__file__).resolve().parent.parent / "results" / "cuda-messages.json").read_text())


def test_convolution_picks_cudnn_or_the_slow_kernel_as_cuda_does():
    with simulate(gpus=2):
        conv = nn.Conv2d(1, 1, 3).cuda()
        with pytest.raises(RuntimeError) as info:  # CPU input: the slow kernel's generated check
            conv(torch.ones(1, 1, 5, 5))
        assert str(info.value) == RECORD["cases"]["conv-cpu-input-cuda-weight"]["message"]
        with pytest.raises(RuntimeError) as info:  # input on cuda:1 with cuDNN: same type, then the kernel
            conv(torch.ones(1, 1, 5, 5, device="cuda:1"))
        assert "got weight is on cuda:0, different from other tensors on cuda:1" in str(info.value)
        assert "wrapper_CUDA__cudnn_convolution" in str(info.value)
        x16 = torch.ones(1, 1, 5, 5, device="cuda", dtype=torch.float16)
        with pytest.raises(RuntimeError) as info:  # cuDNN compares dtypes in the same words
            nn.Conv2d(1, 1, 3, bias=False).cuda()(x16)
        assert str(info.value) == (
            "Input type (torch.cuda.HalfTensor) and weight type (torch.cuda.FloatTensor) should be the same"
        )
        with pytest.raises(RuntimeError, match=r"^Input type \(c10::Half\) and bias type \(float\)"):
            conv(x16)  # conv2d's own check, before any backend is chosen: the same words on every device
        assert conv(torch.ones(1, 1, 5, 5, device="cuda")).shape == (1, 1, 3, 3)


def test_rnns_check_hidden_states_then_parameters():
    with simulate():
        lstm = nn.LSTM(3, 4).cuda()
        with pytest.raises(RuntimeError) as info:
            lstm(torch.ones(2, 1, 3))
        assert str(info.value) == RECORD["cases"]["lstm-cpu-input"]["message"]
        gru = nn.GRU(4, 3, batch_first=True).cuda()
        packed = nn.utils.rnn.pack_padded_sequence(
            torch.randn(2, 3, 4, device="cuda"), torch.tensor([3, 2]), batch_first=True
        )
        out, h = gru(packed)
        padded, lengths = nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
        assert h.is_cuda and padded.is_cuda and lengths.device.type == "cpu"
        with pytest.raises(RuntimeError) as info:
            gru(packed, torch.zeros(1, 2, 3))
        assert str(info.value) == RECORD["cases"]["gru-cpu-hidden"]["message"]


def test_embedding_and_index_select_gradients_are_right():
    with simulate():
        emb = nn.Embedding(5, 3).cuda()
        idx = torch.tensor([1, 1, 3], device="cuda")
        emb(idx).sum().backward()
        assert emb.weight.grad.is_cuda
        assert emb.weight.grad.sum(dim=1).tolist() == [0.0, 6.0, 0.0, 3.0, 0.0]
        with pytest.raises(RuntimeError) as info:
            emb(torch.tensor([1, 2]))
        assert str(info.value) == RECORD["cases"]["embedding-cpu-indices"]["message"]


def test_transformer_layers_run_and_train():
    torch.manual_seed(0)
    with simulate():
        layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, dropout=0.0).cuda()
        x = torch.randn(2, 5, 8, device="cuda")
        out = layer(x)
        assert out.is_cuda and out.shape == (2, 5, 8)
        out.pow(2).mean().backward()
        assert all(p.grad is not None and p.grad.is_cuda for p in layer.parameters())
        layer.eval()
        with torch.no_grad():
            assert layer(x).is_cuda
        mha = nn.MultiheadAttention(8, 2, batch_first=True).cuda()
        with torch.autocast("cuda", dtype=torch.float16):
            attended, _ = mha(x, x, x)
        assert attended.dtype == torch.float16


def test_data_parallel_applies_its_device_ids_check_and_runs_on_two_gpus():
    with simulate(gpus=2):
        with pytest.raises(
            RuntimeError, match=r"module must have its parameters and buffers on device cuda:0"
        ):
            nn.DataParallel(nn.Linear(2, 2))(torch.ones(4, 2, device="cuda"))
        model = nn.DataParallel(nn.Linear(2, 3).cuda())
        y = model(torch.ones(4, 2, device="cuda"))
        assert y.device == torch.device("cuda", 0) and y.shape == (4, 3)
        y.sum().backward()
        assert model.module.weight.grad.is_cuda
    with simulate(gpus=1):  # one GPU: DataParallel moves the module itself (recorded on the H200)
        assert nn.DataParallel(nn.Linear(2, 2))(torch.ones(4, 2, device="cuda")).is_cuda


def test_data_parallel_scatters_a_cpu_batch_over_the_gpus_with_the_cpu_values():
    # torch/nn/parallel/_functions.py (v2.13.0) Scatter.forward: a CPU input is copied to each GPU on a
    # background stream, torch.Stream(torch.device(index)), which a CUDA build gives: no error, as on a GPU
    torch.manual_seed(0)
    layer, x = nn.Linear(4, 2), torch.randn(8, 4)
    expected = layer(x).detach()
    with simulate(gpus=2):
        model = nn.DataParallel(layer.cuda(), device_ids=[0, 1])
        y = model(x)
        assert y.device == torch.device("cuda", 0)
        assert torch.allclose(y.detach().cpu(), expected)
        y.sum().backward()
        assert layer.weight.grad.device == torch.device("cuda", 0)


def test_an_index_alone_is_a_device_of_the_accelerator_and_streams_events_are_the_gpus():
    with simulate(gpus=2):
        assert torch.device(1) == torch.device("cuda", 1)
        with pytest.raises(RuntimeError, match="Device index must not be negative"):
            torch.device(-1)
        stream = torch.Stream(1)
        assert isinstance(stream, torch.Stream) and stream.device == torch.device("cuda", 1)
        assert isinstance(torch.cuda.current_stream(), torch.Stream)
        event = torch.Event(enable_timing=True)
        assert isinstance(event, torch.Event)
        event.record(stream)
        assert torch.Stream(device="cpu").device_type == 0  # the CPU's own stream (c10::DeviceType::CPU)
    assert torch.Stream.__name__ == "Stream" and isinstance(torch.Stream(device="cpu"), torch.Stream)
    with pytest.raises(RuntimeError, match="Cannot access accelerator device"):  # the CPU build again
        torch.device(0)


def test_the_gpu_generator_state_has_cudas_layout_and_replays():
    # aten/src/ATen/cuda/CUDAGeneratorImpl.cpp: get_state is 16 bytes, seed then Philox offset; set_state
    # takes 8 (seed only) or 16 bytes, and the offset must be a multiple of 4
    torch.manual_seed(3)
    on_cpu = torch.rand(3)
    with simulate(gpus=2):
        torch.cuda.manual_seed(3)
        assert torch.equal(torch.rand(3, device="cuda").cpu(), on_cpu)  # the CPU's draws for the seed
        state = torch.cuda.get_rng_state()
        assert (state.dtype, state.numel()) == (torch.uint8, 16)
        assert state.view(torch.int64).tolist() == [3, 4]
        first = torch.rand(3, device="cuda")
        torch.cuda.set_rng_state(state)
        assert torch.equal(torch.rand(3, device="cuda").cpu(), first.cpu())
        assert torch.cuda.initial_seed() == 3
        with pytest.raises(RuntimeError, match="^RNG state is wrong size$"):
            torch.cuda.set_rng_state(torch.zeros(5, dtype=torch.uint8))
            torch.cuda.get_rng_state()  # set_rng_state is lazy, as on a GPU before CUDA starts
        with pytest.raises(TypeError, match="^RNG state must be a torch.ByteTensor$"):
            torch.cuda.set_rng_state(torch.zeros(16))
            torch.cuda.get_rng_state()
        with pytest.raises(RuntimeError, match="^offset must be a multiple of 4$"):
            torch.cuda.set_rng_state(torch.tensor([1, 3]).view(torch.uint8))
            torch.cuda.get_rng_state()
        generator = torch.Generator(device="cuda").manual_seed(5)
        saved = generator.get_state()
        drawn = torch.rand(2, device="cuda", generator=generator)
        generator.set_state(saved)
        assert torch.equal(torch.rand(2, device="cuda", generator=generator).cpu(), drawn.cpu())


def test_param_data_assignment_deepcopy_and_to_empty():
    with simulate():
        model = nn.Linear(2, 2).cuda()
        model.weight.data = torch.zeros(2, 2, device="cuda")
        assert model.weight.sum().item() == 0.0 and model(torch.ones(1, 2, device="cuda")).is_cuda
        with pytest.raises(RuntimeError, match="have incompatible tensor type"):
            model.weight.data = torch.zeros(2, 2)
        twin = copy.deepcopy(model)
        assert twin.weight is not model.weight and isinstance(twin.weight, nn.Parameter)
        assert is_simulated(twin.weight) and twin.weight.requires_grad
        empty = nn.Linear(2, 2, device="meta").to_empty(device="cuda")
        assert empty.weight.device == torch.device("cuda", 0)


def test_an_optimizer_state_loads_onto_the_parameters_device():
    model = nn.Linear(2, 2)
    opt = torch.optim.Adam(model.parameters())
    model(torch.ones(1, 2)).sum().backward()
    opt.step()
    state = opt.state_dict()
    with simulate():
        model.cuda()
        again = torch.optim.Adam(model.parameters())
        again.load_state_dict(state)
        assert next(iter(again.state.values()))["exp_avg"].is_cuda
        model(torch.ones(1, 2, device="cuda")).sum().backward()
        again.step()
        for st in again.state.values():
            st["exp_avg"] = st["exp_avg"].cpu()
        with pytest.raises(RuntimeError) as info:
            again.step()
    assert str(info.value) == RECORD["cases"]["adam-state-cpu"]["message"]


def test_memory_summary_and_stats():
    with simulate():
        keep = torch.ones(100, device="cuda")
        assert torch.cuda.memory_stats()["allocated_bytes.all.current"] == 512
        assert "PyTorch CUDA memory summary, device ID 0" in torch.cuda.memory_summary()
        del keep


def test_grad_through_a_move_from_the_cpu():
    with simulate():
        x = torch.randn(3, requires_grad=True)
        (x.to("cuda") * 2).sum().backward()
        assert x.grad.device.type == "cpu" and x.grad.tolist() == [2.0, 2.0, 2.0]
        y = torch.randn(3, device="cuda", requires_grad=True)
        (y.cpu() * 3).sum().backward()
        assert y.grad.is_cuda and y.grad.tolist() == [3.0, 3.0, 3.0]


def test_ctc_loss_mean_with_cpu_length_tensors_runs_cudas_composite():
    # CUDA's ctc_loss (a C++ composite) divides the per-sample loss by target_lengths for reduction="mean"
    # without moving them: with 1-D CPU length tensors that is a device mix; reduction="sum" is fine
    with simulate():
        lp = torch.randn(5, 2, 4, device="cuda").log_softmax(2)
        targets = torch.randint(1, 4, (2, 3), device="cuda")
        lengths = torch.tensor([5, 5]), torch.tensor([3, 3])
        assert F.ctc_loss(lp, targets, *lengths, reduction="sum").is_cuda
        with pytest.raises(RuntimeError, match="found at least two devices, cuda:0 and cpu!"):
            F.ctc_loss(lp, targets, *lengths)
