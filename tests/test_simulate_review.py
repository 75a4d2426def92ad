"""What an adversarial review of `devicekit.simulate()` found (issue 38), each shown fixed.

Each test runs the reviewer's call inside a block and checks what PyTorch does on CUDA, as the source
cited beside each test says.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import devicekit
from devicekit.simulate import is_simulated


def test_new_tensor_takes_self_device_and_dtype() -> None:
    """``new_tensor`` takes self's device and dtype unless given (``torch/csrc/utils/tensor_new.cpp``)."""
    with devicekit.simulate():
        x = torch.ones(3, device="cuda")
        y = x.new_tensor([1.0, 2.0, 3.0])
        assert is_simulated(y) and y.device == torch.device("cuda", 0)
        assert (x + y).tolist() == [2.0, 3.0, 4.0]
        h = x.half().new_tensor([1, 2])
        assert h.dtype == torch.float16 and h.tolist() == [1.0, 2.0]
        assert x.new_tensor([1, 2], dtype=torch.int64).dtype == torch.int64
        c = x.new_tensor([1, 2], device="cpu")
        assert not is_simulated(c) and c.device.type == "cpu" and c.dtype == torch.float32
        g = x.new_tensor([1.0], requires_grad=True)
        assert g.requires_grad and is_simulated(g)


def test_tensor_from_list_of_simulated_scalars() -> None:
    """``torch.tensor([cuda 0-dim, ...])`` reads each element's value and builds a CPU tensor
    (``internal_new_from_data`` in ``torch/csrc/utils/tensor_new.cpp``)."""
    with devicekit.simulate():
        x = torch.ones(3, device="cuda")
        for build in (torch.tensor, torch.as_tensor):
            t = build([x.sum(), x.mean()])
            assert not is_simulated(t) and t.device.type == "cpu" and t.tolist() == [3.0, 1.0]
        moved = torch.tensor([[x.sum()]], device="cuda")
        assert is_simulated(moved) and moved.tolist() == [[3.0]]
        assert torch.stack([x.sum(), x.mean()]).device == torch.device("cuda", 0)
        with pytest.warns(UserWarning):
            same = torch.tensor(x)
        assert is_simulated(same) and same.tolist() == [1.0, 1.0, 1.0]


MASK_TEXT = "expected self and mask to be on the same device, but got mask on {} and self on {}"


@pytest.mark.parametrize("mask", [[True, False, True], True], ids=["1-dim", "0-dim"])
def test_masked_fill_with_a_cpu_mask_raises_cudas_text(mask: object) -> None:
    """``masked_fill__cuda`` checks ``self.device() == mask.device()`` first, 0-dim masks included
    (``aten/src/ATen/native/cuda/Indexing.cu``, read at pytorch commit d4c71812, release tag unknown)."""
    with devicekit.simulate():
        x = torch.ones(3, device="cuda")
        cpu_mask = torch.tensor(mask)
        for call in (
            lambda: x.masked_fill(cpu_mask, 0.0),
            lambda: torch.masked_fill(x, cpu_mask, 0.0),
            lambda: x.clone().masked_fill_(cpu_mask, 0.0),
            lambda: x.masked_fill(mask=cpu_mask, value=torch.tensor(0.0)),
        ):
            with pytest.raises(RuntimeError) as info:
                call()
            assert str(info.value) == MASK_TEXT.format("cpu", "cuda:0")
        with pytest.raises(RuntimeError) as info:
            torch.ones(3).masked_fill(cpu_mask.cuda(), 0.0)
        assert str(info.value) == MASK_TEXT.format("cuda:0", "cpu")
        assert (
            x.masked_fill(cpu_mask.cuda(), 0.0).tolist() == torch.ones(3).masked_fill(cpu_mask, 0.0).tolist()
        )
        assert torch.ones(3).masked_fill(cpu_mask, 2.0).device.type == "cpu"


def test_masked_fill_mask_on_another_simulated_gpu() -> None:
    with devicekit.simulate(gpus=2):
        x = torch.ones(2, device="cuda:0")
        with pytest.raises(RuntimeError) as info:
            x.masked_fill(torch.tensor([True, False], device="cuda:1"), 0.0)
        assert str(info.value) == MASK_TEXT.format("cuda:1", "cuda:0")


def test_mask_text_is_a_format_string_of_the_installed_torch() -> None:
    """The text is not in ``results/cuda-messages.json``; its format string is in the installed binary."""
    lib = Path(torch.__file__).parent / "lib"
    blob = b"".join(p.read_bytes() for p in lib.glob("libtorch_cpu.so*")) or pytest.skip("no libtorch_cpu.so")
    assert b"expected self and mask to be on the same device, but got mask on " in blob
    assert b" and self on " in blob


def test_torch_compile_inside_a_block_raises_a_clear_bilingual_error() -> None:
    """Left alone, Dynamo fails inside guard creation on a simulated tensor (InternalTorchDynamoError)."""
    original = torch.compile
    with devicekit.simulate():
        x = torch.ones(3, device="cuda")
        model = torch.nn.Linear(3, 1).cuda()
        for call in (lambda: torch.compile(lambda t: t * 2)(x), lambda: torch.compile(model), model.compile):
            with pytest.raises(RuntimeError) as info:
                call()
            assert "torch.compile is not simulated" in info.value.en  # type: ignore[attr-defined]
            assert "remove the torch.compile call" in info.value.en  # type: ignore[attr-defined]
            assert "不模拟 torch.compile" in info.value.zh  # type: ignore[attr-defined]
        assert (x * 2).tolist() == [2.0, 2.0, 2.0]  # the uncompiled code still runs
    assert torch.compile is original


def test_legacy_cuda_tensor_types_behave_as_on_a_cuda_build() -> None:
    """``Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor``: the CPU build refuses these."""
    originals = {name: getattr(torch.cuda, name) for name in ("FloatTensor", "HalfTensor", "LongTensor")}
    with devicekit.simulate():
        x = torch.ones(3, device="cuda")
        made = torch.cuda.FloatTensor([1, 2])
        assert is_simulated(made) and made.tolist() == [1.0, 2.0] and made.dtype == torch.float32
        sized = torch.cuda.LongTensor(2, 3)
        assert is_simulated(sized) and sized.shape == (2, 3) and sized.dtype == torch.int64
        assert torch.cuda.FloatTensor(torch.Size([4, 1])).fill_(1.0).sum().item() == 4.0
        assert torch.cuda.FloatTensor().shape == (0,)
        moved = torch.ones(2).type(torch.cuda.FloatTensor)
        assert is_simulated(moved) and moved.device == torch.device("cuda", 0)
        half = torch.ones(2).type("torch.cuda.HalfTensor")
        assert is_simulated(half) and half.dtype == torch.float16
        assert x.type(torch.cuda.HalfTensor).dtype == torch.float16
        assert not is_simulated(torch.ones(2).type(torch.DoubleTensor))
        assert isinstance(x, torch.cuda.FloatTensor) and not isinstance(x, torch.cuda.HalfTensor)
        assert not isinstance(torch.ones(2), torch.cuda.FloatTensor)
        assert repr(torch.cuda.FloatTensor) == "<class 'torch.cuda.FloatTensor'>"
        assert torch.cuda.FloatTensor(made) is not made and torch.cuda.FloatTensor(made).tolist() == [
            1.0,
            2.0,
        ]
        with pytest.raises(TypeError) as info:
            torch.cuda.FloatTensor(torch.ones(2))
        assert "torch.cuda.FloatTensor(Tensor)" in info.value.en  # type: ignore[attr-defined]
        assert "不模拟" in info.value.zh  # type: ignore[attr-defined]
    for name, original in originals.items():
        assert getattr(torch.cuda, name) is original
    with pytest.raises(TypeError):
        torch.cuda.FloatTensor([1, 2])  # the CPU build's own refusal is back


@pytest.mark.parametrize("cls", [torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN])
def test_rnns_under_float16_autocast_run_in_float16(cls: type) -> None:
    """``_cudnn_rnn``'s autocast kernel casts input, hidden states and weights to float16
    (``aten/src/ATen/cudnn/AutocastRNN.cpp``, read at pytorch commit 0d0444e4, release tag unknown)."""
    with devicekit.simulate():
        model = cls(4, 3).cuda()
        x = torch.randn(2, 1, 4, device="cuda")
        with torch.autocast("cuda", dtype=torch.float16):
            out, hidden = model(x)
        hiddens = hidden if isinstance(hidden, tuple) else (hidden,)
        assert out.dtype == torch.float16 and all(h.dtype == torch.float16 for h in hiddens)
        out.float().sum().backward()
        assert all(p.grad is not None and p.grad.dtype == torch.float32 for p in model.parameters())
        assert model(x)[0].dtype == torch.float32  # outside autocast: as given


def test_packed_lstm_under_float16_autocast() -> None:
    with devicekit.simulate():
        model = torch.nn.LSTM(4, 3).cuda()
        packed = torch.nn.utils.rnn.pack_padded_sequence(torch.randn(3, 2, 4, device="cuda"), [3, 2])
        with torch.autocast("cuda", dtype=torch.float16):
            out, (h, c) = model(packed)
        assert out.data.dtype == h.dtype == c.dtype == torch.float16
        assert out.batch_sizes.device.type == "cpu"


def test_storage_device_is_the_simulated_gpu() -> None:
    """On a GPU ``x.untyped_storage().device`` and ``x.storage().device`` are ``cuda:N``."""
    with devicekit.simulate(gpus=2):
        x = torch.ones(3, device="cuda")
        y = torch.ones(3, device="cuda:1")
        assert x.untyped_storage().device == torch.device("cuda", 0)
        assert x.untyped_storage().is_cuda
        with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
            assert x.storage().device == torch.device("cuda", 0)
        assert y[1:].untyped_storage().device == torch.device("cuda", 1)
        assert torch.ones(2).untyped_storage().device == torch.device("cpu")
        assert x.untyped_storage().nbytes() == 12
