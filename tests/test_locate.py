"""locate_mismatch: one hooked forward pass names the innermost module where devices mix, then cleans up."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn

import devicekit
from devicekit.locate import MismatchReport, locate_mismatch

META = torch.device("meta")


class Attn(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 4))

    def forward(self, x):
        return x @ self.weight  # meta @ cpu is silent in PyTorch: only the pre-hook can catch it


class Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = Attn()
        self.ff = nn.Sequential(nn.Linear(4, 4), nn.ReLU())

    def forward(self, x):
        return self.ff(torch.relu(self.attn(x)))


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([Layer(), Layer()])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = Encoder()
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.encoder(x))


def x_meta(*shape: int) -> torch.Tensor:
    return torch.randn(*(shape or (2, 4)), device=META)


def assert_no_hooks(model: nn.Module) -> None:
    for name, m in model.named_modules():
        for attr in (
            "_forward_hooks",
            "_forward_pre_hooks",
            "_forward_hooks_with_kwargs",
            "_forward_pre_hooks_with_kwargs",
            "_forward_hooks_always_called",
        ):
            assert not getattr(m, attr), f"{attr} left on {name!r}"


def assert_no_global_hooks() -> None:
    from torch.nn.modules import module as mod

    assert not mod._global_forward_hooks and not mod._global_forward_pre_hooks
    assert not mod._global_backward_hooks and not mod._global_backward_pre_hooks
    assert torch._C._len_torch_dispatch_stack() == 0


# -------------------------------------------------------------------------------- no mismatch


def test_consistent_model_returns_none_and_leaves_no_hooks():
    model = Net().to(META)
    assert locate_mismatch(model, x_meta()) is None
    assert_no_hooks(model)
    assert_no_global_hooks()


def test_zero_dim_cpu_inputs_are_not_a_mismatch():
    class Scale(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x, scale):
            return self.lin(x) * scale

    assert locate_mismatch(Scale().to(META), x_meta(), torch.tensor(2.0)) is None


# -------------------------------------------------------------------------------- silent mixes (pre-hook)


def test_names_the_nested_module_of_a_silent_mix():
    model = Net().to(META)
    model.encoder.layers[1].attn.weight = nn.Parameter(torch.randn(4, 4))  # replaced after .to()
    report = locate_mismatch(model, x_meta())
    assert isinstance(report, MismatchReport)
    assert report.module == "encoder.layers.1.attn"
    assert report.module_type == "Attn"
    assert report.devices == ("cpu", "meta")
    assert report.exception is None  # PyTorch would not have raised: devicekit stopped the forward
    assert "created or replaced after model.to" in report.detail
    text = str(report)
    assert text.startswith("Device mismatch in module 'encoder.layers.1.attn' (Attn)")
    assert_no_hooks(model)


def test_report_is_frozen():
    report = locate_mismatch(Net(), x_meta())
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.module = "x"  # type: ignore[misc]


def test_input_on_another_device_than_the_whole_model_is_blamed_on_the_call():
    model = Net()  # on cpu, input on meta
    report = locate_mismatch(model, x_meta())
    assert report.module == "" and report.module_type == "Net"
    assert "inputs[0]" in report.detail and "dm.to(batch)" in report.detail
    assert "encoder.layers.0.attn" in report.detail  # where it was first used
    assert str(report).startswith("Device mismatch in the model itself")
    assert_no_hooks(model)


def test_nested_sequential_and_parameterless_modules_are_not_blamed():
    model = nn.Sequential(
        nn.Sequential(nn.Linear(4, 4), nn.ReLU()), nn.Sequential(nn.ReLU(), nn.Linear(4, 4))
    )
    model[0].to(META)  # second half stays on cpu; the ReLUs only pass tensors on
    report = locate_mismatch(model, x_meta())
    assert report.module == "1.1" and report.module_type == "Linear"
    assert_no_hooks(model)


def test_own_tensors_split_across_devices():
    class Masked(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.randn(4, 4))
            self.mask = torch.tril(torch.ones(4, 4))  # plain attribute: model.to() skips it

        def forward(self, x):
            return (x @ self.weight) * self.mask

    model = nn.Sequential(nn.Identity(), Masked()).to(META)
    report = locate_mismatch(model, x_meta())
    assert report.module == "1" and report.devices == ("cpu", "meta")
    assert "split across devices" in report.detail and "register_buffer('mask'" in report.detail


def test_hidden_submodule_is_hooked_and_named():
    class Hidden(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Linear(4, 4)
            self.heads = [nn.Linear(4, 2, bias=False)]  # not moved by .to()

        def forward(self, x):
            return self.heads[0](self.stem(x))

    model = Hidden().to(META)
    report = locate_mismatch(model, x_meta())
    assert report.module == "heads[0]" and "nn.ModuleList" in report.detail
    assert_no_hooks(model)
    assert not model.heads[0]._forward_pre_hooks


def test_keyword_inputs_are_inspected():
    class KW(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = nn.Linear(4, 4)

        def forward(self, x, *, extra):
            return self.proj(x) + self.proj(input=extra)

    model = KW().to(META)
    report = locate_mismatch(model, x_meta(), extra=torch.randn(2, 4))  # a model input: blamed on the call
    assert report.module == "" and "kw['extra']" in report.detail
    model.other = nn.Linear(1, 1)  # the model is no longer on one device: the module itself is named
    report = locate_mismatch(model, x_meta(), extra=torch.randn(2, 4))
    assert report.module == "proj" and "kwargs['input'] on cpu" in report.detail
    assert_no_hooks(model)


# -------------------------------------------------------------------------------- real exceptions


class MakesCpuTensor(nn.Module):
    def forward(self, x):
        return x + torch.zeros(x.shape[-1])  # no device=: lands on cpu


def test_tensor_created_inside_forward_is_blamed_on_that_module():
    model = nn.Sequential(nn.Linear(4, 4), nn.Sequential(nn.ReLU(), MakesCpuTensor())).to(META)
    report = locate_mismatch(model, x_meta())
    assert report.module == "1.1" and report.module_type == "MakesCpuTensor"
    assert isinstance(report.exception, RuntimeError)
    assert report.devices == ("cpu", "meta")
    assert "device=x.device" in report.detail
    assert "PyTorch said: RuntimeError" in str(report)
    assert_no_hooks(model)


def test_parameterless_module_combining_inputs_from_different_devices():
    class Add(nn.Module):
        def forward(self, a, b):
            return a + b

    class Two(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.add = Add()

        def forward(self, x, y):
            return self.add(self.lin(x), y)

    model = Two().to(META)
    report = locate_mismatch(model, x_meta(), torch.randn(2, 4))
    assert report.module == "add" and report.exception is not None
    assert "inputs[1]" in report.detail
    assert_no_hooks(model)


def test_exception_caught_inside_a_child_does_not_mislead_the_blame():
    class Fragile(nn.Module):
        def forward(self, x):
            raise RuntimeError("Tensor on device cpu is not on the expected device meta!")

    class Tolerant(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fragile = Fragile()

        def forward(self, x):
            try:
                self.fragile(x)
            except RuntimeError:
                pass
            return x

    class Outer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tolerant = Tolerant()
            self.late = MakesCpuTensor()

        def forward(self, x):
            return self.late(self.tolerant(x))

    model = Outer()
    report = locate_mismatch(model, x_meta())
    assert report.module == "late"
    assert_no_hooks(model)


def test_internal_stop_is_not_swallowed_by_the_model():
    class Swallow(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = Attn()

        def forward(self, x):
            try:
                return self.inner(x)
            except Exception:  # a model that hides errors must not hide devicekit's stop
                return x

    model = Swallow()  # Attn on cpu, input on meta
    model.other = nn.Linear(4, 4).to(META)  # make the model itself split, so the module is blamed
    report = locate_mismatch(model, x_meta())
    assert report is not None and report.module == "inner"
    assert_no_hooks(model)


def test_other_errors_propagate_unchanged_and_hooks_are_removed():
    class BadShape(nn.Module):
        def forward(self, x):
            return x.view(3, 7)

    model = nn.Sequential(nn.Linear(4, 4), BadShape())
    with pytest.raises(RuntimeError, match="invalid for input of size") as info:
        locate_mismatch(model, torch.randn(2, 4))
    assert any("'1' (BadShape)" in note for note in getattr(info.value, "__notes__", ["'1' (BadShape)"]))
    assert_no_hooks(model)
    assert_no_global_hooks()


def test_user_hooks_are_kept():
    model = nn.Sequential(nn.Linear(4, 4))
    calls = []
    model[0].register_forward_hook(lambda m, a, o: calls.append("user"))
    assert locate_mismatch(model, torch.randn(2, 4)) is None
    assert calls == ["user"] and len(model[0]._forward_hooks) == 1


def test_shared_module_called_twice():
    shared = nn.Linear(4, 4)
    model = nn.Sequential(shared, nn.ReLU(), shared).to(META)
    assert locate_mismatch(model, x_meta()) is None
    assert_no_hooks(model)


def test_not_a_module_is_a_type_error():
    with pytest.raises(TypeError):
        locate_mismatch(lambda x: x, torch.randn(2))


# -------------------------------------------------------------------------------- edges (issue 14)


def test_bare_except_around_the_faulty_layer_still_reports():
    class BareExcept(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = Attn()
            self.other = nn.Linear(4, 4).to(META)

        def forward(self, x):
            try:
                return self.inner(x)
            except:  # noqa: E722  (the point of the test: even BaseException is swallowed)
                return x

    model = BareExcept()
    report = locate_mismatch(model, x_meta())
    assert report is not None and report.module == "inner"
    assert_no_hooks(model)


def test_nested_locate_mismatch_does_not_catch_the_outer_signal():
    inner_results = []

    class Probe(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn = Attn()  # on the CPU
            self.other = nn.Linear(4, 4).to(META)

        def forward(self, x):
            inner_results.append(locate_mismatch(nn.Identity(), x))  # a consistent inner call
            return self.attn(x)

    model = Probe()
    report = locate_mismatch(model, x_meta())
    assert inner_results == [None]
    assert report is not None and report.module == "attn"


@pytest.mark.parametrize(
    "error",
    [KeyError("device"), ValueError("unknown device profile 'fast'"), RuntimeError("device busy, retry")],
)
def test_errors_that_only_mention_the_word_device_propagate(error):
    class Raises(nn.Module):
        def forward(self, x):
            raise error

    with pytest.raises(type(error)):
        locate_mismatch(Raises(), torch.ones(1))
    assert devicekit.explain(str(error)).family is None  # explain and locate agree: no family


def test_cpu_lengths_for_pack_padded_sequence_are_not_blamed():
    class Packer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = nn.GRU(2, 3, batch_first=True)

        def forward(self, x, lengths):
            packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True)
            return self.rnn(packed)

    model = Packer().to(META)
    assert locate_mismatch(model, x_meta(2, 4, 2), torch.tensor([4, 2])) is None
    report = locate_mismatch(model.rnn, x_meta(2, 4, 2), torch.zeros(1, 2, 3))  # a CPU h0 is blamed
    assert report is not None and "inputs[1]" in report.detail


# -------------------------------------------------------------------------------- whose error it quotes


class BmmOnCpu(nn.Module):
    def forward(self, x):
        return torch.bmm(torch.ones(x.shape[0], x.shape[2], 2), x.transpose(1, 2)[:, :, :2].transpose(1, 2))


def _strict_report() -> MismatchReport:
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.mix = BmmOnCpu()

        def forward(self, x):
            return self.mix(self.lin(x))

    model = Net().to(META)
    with devicekit.strict_devices():
        return locate_mismatch(model, torch.ones(2, 3, 4, device=META))


def test_devicekit_own_error_is_quoted_as_devicekit_s_in_the_learner_s_language():
    """The zh reviewer, item 3: under Chinese, strict_devices' error was quoted in English as PyTorch's."""
    report = _strict_report()
    assert isinstance(report.exception, devicekit.DeviceMismatchError)
    zh, en = report.message.zh, report.message.en
    assert "  devicekit 的报错：DeviceMismatchError: strict_devices：" in zh
    assert "PyTorch 的报错" not in zh and "got tensors on different devices" not in zh
    assert "devicekit 在这个模块的 forward 里报了设备错误" in zh
    assert "  devicekit said: DeviceMismatchError: strict_devices: " in en and "PyTorch said" not in en


def test_pytorch_error_is_still_quoted_as_pytorch_s():
    model = nn.Sequential(nn.Linear(4, 4), MakesCpuTensor()).to(META)
    report = locate_mismatch(model, x_meta())
    assert "  PyTorch 的报错：RuntimeError: " in report.message.zh
    assert "PyTorch raised a device error inside this module's forward" in report.message.en
    assert "  PyTorch said: RuntimeError: " in report.message.en
