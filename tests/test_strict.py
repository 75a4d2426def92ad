"""strict_devices: every op that mixes devices raises, including the mixes PyTorch lets through silently."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from devicekit.errors import DeviceMismatchError
from devicekit.strict import StrictDevicesMode, strict_devices

META = torch.device("meta")


def meta(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, device=META)


# Ops that PyTorch runs without complaint on a meta tensor and a cpu tensor (verified below).
SILENT = {
    "mm": (lambda: torch.mm(torch.randn(3, 3), meta(3, 3)), "aten.mm.default"),
    "matmul operator": (lambda: meta(3, 3) @ torch.randn(3, 3), "aten.mm.default"),
    "batched matmul": (lambda: torch.matmul(meta(2, 3, 3), torch.randn(3, 3)), "aten.mm.default"),
    "linear without bias": (lambda: F.linear(meta(2, 3), torch.randn(4, 3)), "aten.mm.default"),
    "conv2d": (lambda: F.conv2d(meta(1, 1, 5, 5), torch.randn(1, 1, 3, 3)), "aten.convolution.default"),
    "embedding": (
        lambda: F.embedding(torch.tensor([0, 1], device=META), torch.randn(4, 3)),
        "aten.embedding.default",
    ),
}


def dispatch_depth() -> int:
    return torch._C._len_torch_dispatch_stack()


@pytest.mark.parametrize("name", list(SILENT))
def test_pytorch_itself_is_silent_for_these_mixes(name):
    make, _ = SILENT[name]
    make()  # no error without strict_devices: this is why the mode exists


@pytest.mark.parametrize("name", list(SILENT))
def test_each_silent_mix_raises_under_strict_devices(name):
    make, op = SILENT[name]
    with pytest.raises(DeviceMismatchError) as info, strict_devices():
        make()
    err = info.value
    assert isinstance(err, RuntimeError)
    assert str(err).startswith(f"strict_devices: {op} got tensors on different devices: ")
    assert err.op == op and set(err.devices) == {"cpu", "meta"}
    assert dispatch_depth() == 0


def test_message_names_the_schema_arguments():
    with pytest.raises(DeviceMismatchError) as info, strict_devices():
        torch.mm(torch.randn(3, 3), meta(3, 3))
    assert str(info.value).startswith(
        "strict_devices: aten.mm.default got tensors on different devices: "
        "cpu (arg 0 'self'), meta (arg 1 'mat2')"
    )
    with pytest.raises(
        DeviceMismatchError, match=r"meta \(arg 0 'tensors\[0\]'\), cpu \(arg 0 'tensors\[1\]'\)"
    ):
        with strict_devices():
            torch.cat([meta(2), torch.randn(2)])


def test_mixes_pytorch_already_rejects_still_raise_our_error_first():
    with pytest.raises(DeviceMismatchError, match="aten.add.Tensor"), strict_devices():
        meta(3) + torch.randn(3)
    with pytest.raises(DeviceMismatchError, match="aten.addmm.default"), strict_devices():
        nn.Linear(3, 3)(meta(2, 3))  # with bias


def test_zero_dim_cpu_tensors_and_python_scalars_are_allowed():
    with strict_devices():
        y = meta(3) * torch.tensor(2.0) + 1
        z = torch.where(meta(3) > 0, torch.tensor(1.0), torch.tensor(0.0))
    assert y.device == META and z.device == META
    with pytest.raises(DeviceMismatchError), strict_devices():
        meta(3) + torch.tensor([2.0])  # 1-dim, one element: PyTorch rejects it too


def test_moving_between_devices_is_allowed():
    with strict_devices():
        assert torch.randn(3).to(META).device == META
        assert torch.randn(3).to("meta", non_blocking=True).device == META
        model = nn.Linear(2, 2).to(META)
        dst = torch.empty(3, device=META)
        dst.copy_(torch.randn(3))
        dst[torch.tensor([0])] = torch.tensor(1.0)  # CPU index on a meta tensor, as on CUDA
        picked = meta(4, 2)[torch.tensor([0, 3])]
    assert model.weight.device == META and picked.shape == (2, 2)


def test_same_device_training_step_is_untouched():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.LayerNorm(8), nn.Linear(8, 3))
    x, y = torch.randn(5, 4), torch.tensor([0, 1, 2, 0, 1])

    def step() -> tuple[torch.Tensor, list[torch.Tensor]]:
        model.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        return loss.detach(), [p.grad.clone() for p in model.parameters()]

    loss_plain, grads_plain = step()
    with strict_devices():
        loss_strict, grads_strict = step()
        torch.optim.SGD(model.parameters(), lr=0.1).step()
    assert torch.equal(loss_plain, loss_strict)
    assert all(torch.equal(a, b) for a, b in zip(grads_plain, grads_strict, strict=True))


def test_meta_only_model_runs_under_the_mode():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(144, 2)).to(META)
    with strict_devices():
        out = model(meta(2, 3, 8, 8))
    assert out.shape == (2, 2) and out.device == META


def test_nested_blocks_and_exception_safety():
    assert dispatch_depth() == 0
    with strict_devices() as outer:
        assert isinstance(outer, StrictDevicesMode)
        with strict_devices():
            assert dispatch_depth() == 2
            with pytest.raises(DeviceMismatchError):
                torch.mm(meta(2, 2), torch.randn(2, 2))
            assert dispatch_depth() == 2
        assert dispatch_depth() == 1
        with pytest.raises(DeviceMismatchError):  # the outer block still checks
            torch.mm(meta(2, 2), torch.randn(2, 2))
    assert dispatch_depth() == 0
    with pytest.raises(DeviceMismatchError), strict_devices(), strict_devices():
        F.linear(meta(2, 2), torch.randn(2, 2))
    assert dispatch_depth() == 0
    torch.mm(meta(2, 2), torch.randn(2, 2))  # outside the block: PyTorch's own (silent) behaviour again


def test_the_error_pickles():
    import pickle

    with pytest.raises(DeviceMismatchError) as info, strict_devices():
        torch.mm(meta(2, 2), torch.randn(2, 2))
    clone = pickle.loads(pickle.dumps(info.value))
    assert str(clone) == str(info.value) and clone.op == "aten.mm.default"


def test_cpu_tensors_pytorch_requires_are_allowed():
    """pack_padded_sequence needs CPU lengths; ctc_loss accepts CPU lengths: strict mode must not object."""
    from torch.nn.utils.rnn import pack_padded_sequence

    x = torch.randn(3, 4, 2, device="meta")
    with strict_devices():
        packed = pack_padded_sequence(x, torch.tensor([4, 2, 1]), batch_first=True)
    assert packed.data.device.type == "meta" and packed.batch_sizes.device.type == "cpu"
    log_probs = torch.randn(5, 2, 4, device="meta").log_softmax(2)
    targets = torch.randint(1, 4, (2, 3), device="meta")
    with strict_devices(), pytest.raises(NotImplementedError):  # meta has no ctc kernel; no device error
        torch.nn.functional.ctc_loss(log_probs, targets, torch.tensor([5, 5]), torch.tensor([3, 2]))


# ---- issue 20 (12): the 0-dim CPU exception only where PyTorch makes it, and generator devices


@pytest.mark.parametrize(
    ("name", "fn", "op"),
    [
        (
            "index_select",
            lambda: torch.index_select(meta(3), 0, torch.tensor(1)),
            "aten.index_select.default",
        ),
        ("clamp", lambda: torch.clamp(meta(3), min=torch.tensor(0.5)), "aten.clamp.Tensor"),
        ("gather", lambda: meta(3).gather(0, torch.tensor(0)), "aten.gather.default"),
    ],
)
def test_a_zero_dim_cpu_tensor_is_refused_where_the_op_checks_devices_itself(name, fn, op):
    fn()  # PyTorch lets each of these through on meta (CUDA raises: wrapper_CUDA_... device check)
    with pytest.raises(DeviceMismatchError) as info, strict_devices():
        fn()
    err = info.value
    assert err.op == op and set(err.devices) == {"meta", "cpu"}
    assert "only in element-wise (TensorIterator) ops" in err.en
    assert "逐元素（TensorIterator）运算" in err.zh


def test_tensor_iterator_ops_come_from_the_installed_native_functions_yaml():
    from devicekit.strict import allows_cpu_scalar, tensor_iterator_ops

    ops = tensor_iterator_ops()
    assert ops is not None and len(ops) > 400
    assert {"add.Tensor", "mul.Tensor", "eq.Tensor", "where.self", "index_put_"} <= ops
    # clamp.Tensor is tagged pointwise but is not TensorIterator-checked: the tag alone would be wrong
    assert "clamp.Tensor" not in ops and torch.Tag.pointwise in torch.ops.aten.clamp.Tensor.tags
    assert allows_cpu_scalar(torch.ops.aten.add.Tensor)
    assert not allows_cpu_scalar(torch.ops.aten.index_select.default)


def test_one_cpu_scalar_per_tensor_iterator_op_but_where_takes_any():
    with strict_devices():
        assert torch.addcmul(meta(3), meta(3), torch.tensor(2.0)).device == META
        assert torch.where(meta(3) > 0, torch.tensor(1.0), torch.tensor(0.0)).device == META
    with pytest.raises(DeviceMismatchError) as info, strict_devices():
        torch.addcmul(meta(3), torch.tensor(1.0), torch.tensor(2.0))
    assert "Trying to pass too many CPU scalars to non-CPU kernel!" in info.value.en


def test_a_cpu_generator_for_a_meta_result_raises_as_cuda_does():
    gen = torch.Generator()
    torch.randint(0, 5, (3,), generator=gen, device="meta")  # meta lets it through
    with pytest.raises(DeviceMismatchError) as info, strict_devices():
        torch.randint(0, 5, (3,), generator=gen, device="meta")
    err = info.value
    assert err.op == "aten.randint.low_generator" and err.devices == ("cpu", "meta")
    assert "Expected a 'cuda' device type for generator but found 'cpu'" in err.en  # recorded on an H200
    assert "随机数生成器在 cpu 上" in err.zh
    with pytest.raises(DeviceMismatchError), strict_devices():
        meta(3).normal_(generator=gen)  # the result's device comes from the tensor argument


def test_a_generator_on_the_right_device_is_fine():
    gen = torch.Generator()
    with strict_devices():
        assert torch.randint(0, 5, (3,), generator=gen).device.type == "cpu"
        assert torch.randn(3, generator=gen).normal_(generator=gen).device.type == "cpu"
        assert torch.randint(0, 5, (3,), device="meta").device == META  # no generator: nothing to check


def test_the_generator_case_is_the_recorded_cuda_message():
    import json
    from pathlib import Path

    recorded = json.loads(
        (Path(__file__).resolve().parent.parent / "results" / "cuda-messages.json").read_text()
    )
    message = recorded["cases"]["generator-cpu-for-cuda"]["message"]
    assert message == "Expected a 'cuda' device type for generator but found 'cpu'"


def test_strict_docstring_lists_what_it_misses():
    import devicekit.strict as strict_module

    doc = " ".join(strict_module.__doc__.split())
    assert "What it still misses or gets wrong:" in doc
    for phrase in ("ATen ops only", "``torch.compile``", "``torch.Tag.pointwise``", "device type only"):
        assert phrase in doc, phrase


def test_the_explanation_of_its_error_names_only_the_devices_that_mixed():
    """The message's advice names no device of its own (review zh39/expert39: "CUDA raises ... some devices
    (meta)" made `explain` list cuda and meta beside the mix, with a note about meta tensors)."""
    from devicekit import explain

    with pytest.raises(DeviceMismatchError) as caught, strict_devices():
        meta(2) * torch.ones(2)
    result = explain(caught.value)
    assert result.family == "same-device"
    for lang in ("en", "zh"):
        text = result.en if lang == "en" else result.zh
        devices = next(line for line in text.splitlines() if line.startswith(("Devices in", "报错中的设备")))
        assert devices.split("：" if lang == "zh" else ": ", 1)[1] in ("meta, cpu", "meta、cpu")
