"""check_devices: the static pre-flight check finds each kind of misplaced tensor, and never runs the model.

`meta` stands in for the accelerator: the model (or part of it) goes to meta, the odd tensor stays on cpu.
"""

from __future__ import annotations

import pickle
from collections import namedtuple
from dataclasses import dataclass

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from devicekit.check import DeviceFinding, DeviceReport, _matches, _resolve_index, check_devices
from devicekit.errors import DeviceMismatchError

META = torch.device("meta")


def mismatch(*args, **kwargs) -> DeviceMismatchError:
    with pytest.raises(DeviceMismatchError) as info:
        check_devices(*args, **kwargs)
    return info.value


def by_name(err: DeviceMismatchError) -> dict[str, DeviceFinding]:
    return {f.name: f for f in err.findings}


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        raise AssertionError("check_devices must never run the model")


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(Block(), Block())
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        raise AssertionError("check_devices must never run the model")


# -------------------------------------------------------------------------------- consistent models


def test_clean_model_returns_a_report():
    report = check_devices(Net(), torch.randn(3, 4), labels=torch.tensor([0, 1, 1]))
    assert isinstance(report, DeviceReport) and report.ok
    assert report.device == torch.device("cpu") and report.source == "parameters"
    assert (report.n_parameters, report.n_buffers, report.n_inputs) == (10, 6, 2)
    assert report.warnings == ()
    assert "OK" in str(report) and "cpu" in str(report)


def test_clean_model_on_the_stand_in_accelerator():
    model = Net().to(META)
    assert check_devices(model, torch.randn(3, 4, device=META)).device == META
    assert check_devices(model, device="meta").source == "argument"


def test_parameterless_model_uses_the_inputs_device():
    report = check_devices(nn.ReLU(), torch.randn(2, device=META))
    assert report.device == META and report.source == "inputs"
    err = mismatch(nn.ReLU(), torch.randn(2, device=META), torch.randn(2, device=META), torch.randn(2))
    assert [f.name for f in err.findings] == ["inputs[2]"]


def test_model_and_inputs_without_tensors():
    report = check_devices(nn.Sequential(nn.ReLU(), nn.Identity()))
    assert report.device is None and report.source == "none"
    assert check_devices(nn.ReLU(), 3, "text", None).device is None


def test_zero_dim_cpu_tensors_are_allowed_as_inputs_and_attributes():
    model = nn.Linear(4, 4).to(META)
    model.temperature = torch.tensor(0.5)  # plain attribute, 0-dim CPU: combines with any device
    report = check_devices(model, torch.randn(2, 4, device=META), torch.tensor(3.0), scale=torch.tensor(2))
    assert report.device == META and report.warnings == ()
    assert report.n_inputs == 3


def test_the_model_is_never_called():
    check_devices(Net(), torch.randn(3, 4))  # Net.forward raises AssertionError if called


def test_not_a_module_is_a_type_error():
    with pytest.raises(TypeError, match="nn.Module"):
        check_devices(lambda x: x, torch.randn(2))


# -------------------------------------------------------------------------------- each kind of finding


def test_parameter_left_behind_after_to():
    model = Net().to(META)
    model.head = nn.Linear(4, 2)  # replaced after .to(): stays on cpu
    err = mismatch(model)
    found = by_name(err)
    assert set(found) == {"head.weight", "head.bias"}
    assert all(f.kind == "parameter" and f.device == "cpu" and f.expected == "meta" for f in found.values())


def test_buffer_reassigned_on_the_wrong_device():
    model = Net().to(META)
    model.body[1].bn.running_mean = torch.zeros(4)  # assigning to a buffer name keeps it a buffer
    err = mismatch(model)
    assert [(f.kind, f.name) for f in err.findings] == [("buffer", "body.1.bn.running_mean")]


class WithMask(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.mask = torch.tril(torch.ones(4, 4))  # unregistered: model.to() skips it


def test_unregistered_tensor_attribute():
    model = nn.Sequential(WithMask()).to(META)
    err = mismatch(model)
    (f,) = err.findings
    assert (f.kind, f.name, f.device) == ("attribute", "0.mask", "cpu")
    assert "self.register_buffer('mask', ...)" in str(err)


def test_unregistered_attribute_on_the_right_device_is_a_warning():
    report = check_devices(nn.Sequential(WithMask()))
    assert len(report.warnings) == 1 and "register_buffer('mask'" in report.warnings[0]
    assert "Warnings" in str(report)


def test_tensors_inside_plain_container_attributes():
    model = nn.Linear(4, 4).to(META)
    model.cache = {"k": torch.zeros(2, 4), "v": [torch.zeros(2, 4, device=META)]}
    err = mismatch(model)
    assert [(f.kind, f.name) for f in err.findings] == [("attribute", "cache['k']")]


class HiddenList(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(4, 4)
        self.blocks = [nn.Linear(4, 4), nn.Linear(4, 4)]  # plain list: not registered


class HiddenDict(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(4, 4)
        self.heads = {"cls": nn.Linear(4, 3)}  # plain dict: not registered


def test_submodules_hidden_in_a_plain_list():
    model = HiddenList().to(META)
    assert len(list(model.parameters())) == 2  # the optimizer would only see the stem
    err = mismatch(model)
    assert [f.name for f in err.findings] == [
        "blocks[0].weight",
        "blocks[0].bias",
        "blocks[1].weight",
        "blocks[1].bias",
    ]
    assert {f.kind for f in err.findings} == {"hidden_module"}
    assert "nn.ModuleList" in str(err)


def test_submodules_hidden_in_a_plain_dict():
    err = mismatch(HiddenDict().to(META))
    assert [f.name for f in err.findings] == ["heads['cls'].weight", "heads['cls'].bias"]
    assert "nn.ModuleDict" in str(err)


def test_hidden_submodules_on_the_right_device_are_warnings():
    report = check_devices(HiddenList())
    assert len(report.warnings) == 2 and all("nn.ModuleList" in w for w in report.warnings)


def test_plain_list_of_registered_modules_is_fine():
    class Aliases(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = nn.Linear(2, 2), nn.Linear(2, 2)
            self.order = [self.a, self.b]  # aliases of registered modules: moved with the model

    assert check_devices(Aliases().to(META)).warnings == ()


def test_lstm_flat_weights_are_not_reported():
    report = check_devices(nn.LSTM(4, 4, num_layers=2).to(META), torch.randn(3, 1, 4, device=META))
    assert report.warnings == () and report.n_parameters == 8


def test_loss_weight_passed_as_extra_module():
    model = nn.Linear(4, 3).to(META)
    criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 3.0]))  # weight is a buffer
    err = mismatch(model, extra_modules=criterion)
    (f,) = err.findings
    assert (f.kind, f.name, f.device) == ("extra_module", "extra_modules[0].weight", "cpu")
    assert "extra_modules[0].to(device)" in str(err)
    err = mismatch(model, extra_modules={"criterion": criterion})
    assert err.findings[0].name == "criterion.weight"
    assert check_devices(model, extra_modules=[criterion.to(META)]).device == META


def test_loss_module_inside_the_model_is_a_registered_buffer():
    model = nn.Sequential(nn.Linear(4, 3)).to(META)
    model.criterion = nn.BCEWithLogitsLoss(pos_weight=torch.ones(3))  # added after .to()
    err = mismatch(model)
    assert [(f.kind, f.name) for f in err.findings] == [("buffer", "criterion.pos_weight")]


def test_extra_modules_must_be_modules():
    with pytest.raises(TypeError, match="not an nn.Module"):
        check_devices(nn.Linear(2, 2), extra_modules=[lambda x: x])


@dataclass
class Batch:
    pixels: torch.Tensor
    meta: dict


Pair = namedtuple("Pair", ["left", "right"])


def test_inputs_nested_in_dicts_lists_dataclasses_and_namedtuples():
    model = nn.Linear(4, 4).to(META)
    on_meta = torch.randn(2, 4, device=META)
    batch = {"x": on_meta, "mask": torch.ones(2, 4), "extra": [on_meta, torch.ones(2)]}
    err = mismatch(
        model,
        batch,
        Batch(on_meta, {"ids": torch.arange(2)}),
        Pair(on_meta, torch.ones(3)),
        labels=torch.ones(2),
    )
    assert [f.name for f in err.findings] == [
        "inputs[0]['mask']",
        "inputs[0]['extra'][1]",
        "inputs[1].meta['ids']",
        "inputs[2].right",
        "kw['labels']",
    ]
    assert {f.kind for f in err.findings} == {"input"}
    assert "dm.to(batch)" in str(err)


def test_packed_sequence_batch_sizes_stay_on_cpu_legitimately():
    data = torch.randn(5, 4, device=META)
    packed = nn.utils.rnn.PackedSequence(data, torch.tensor([3, 2]))  # batch_sizes: always CPU
    assert check_devices(nn.LSTM(4, 4).to(META), packed).device == META


# -------------------------------------------------------------------------------- the error itself


def test_error_message_lists_each_offender_and_each_fix():
    model = nn.Sequential(WithMask(), nn.BatchNorm1d(4)).to(META)
    model.add_module("head", nn.Linear(4, 2))  # added after .to()
    model[1].running_var = torch.ones(4)
    criterion = nn.CrossEntropyLoss(weight=torch.ones(2))
    err = mismatch(model, {"x": torch.ones(2, 4)}, extra_modules={"criterion": criterion})
    text = str(err)
    assert isinstance(err, RuntimeError)
    assert text.startswith("check_devices: 6 tensors not on the expected device meta")
    for name in ("head.weight", "head.bias", "1.running_var", "0.mask", "criterion.weight", "inputs[0]['x']"):
        assert name in text
    assert text.count("on cpu, expected meta") == 6
    for fix in ("model.to(device)", "register_buffer('mask'", "criterion.to(device)", "dm.to(batch)"):
        assert fix in text
    assert [f.kind for f in err.findings] == [
        "parameter",
        "parameter",
        "buffer",
        "attribute",
        "extra_module",
        "input",
    ]
    assert err.devices == ("cpu", "meta")


def test_explicit_device_flags_the_whole_model_and_long_lists_are_cut():
    model = nn.Sequential(*[nn.Linear(2, 2) for _ in range(30)])  # still on cpu
    err = mismatch(model, device="meta")
    assert len(err.findings) == 60
    assert "the device= argument" in str(err)
    assert "... and 20 more" in str(err)


def test_majority_of_parameter_elements_decides_the_expected_device():
    model = nn.Sequential(nn.Linear(64, 64), nn.Linear(2, 2), nn.Linear(2, 2))
    model[0].to(META)  # 1 big layer on meta, 2 small ones on cpu
    err = mismatch(model)
    assert err.findings[0].expected == "meta" and len(err.findings) == 4


def test_buffers_do_not_sway_the_majority():
    model = nn.Sequential(
        nn.BatchNorm1d(4), nn.Linear(64, 64).to(META)
    )  # bn first: params and buffers on cpu
    err = mismatch(model)
    assert {f.name for f in err.findings} == {
        "0.weight",
        "0.bias",
        "0.running_mean",
        "0.running_var",
        "0.num_batches_tracked",
    }
    assert err.findings[0].expected == "meta"


def test_tied_parameters_are_counted_once():
    model = nn.Sequential(nn.Embedding(5, 4), nn.Linear(4, 5, bias=False))
    model[1].weight = model[0].weight
    assert check_devices(model).n_parameters == 1


def test_error_survives_pickling():
    err = mismatch(nn.Linear(2, 2), device="meta")
    clone = pickle.loads(pickle.dumps(err))
    assert str(clone) == str(err) and clone.findings == err.findings and clone.devices == err.devices


def test_unindexed_accelerator_matches_the_index_in_use():
    cuda0, cuda1 = torch.device("cuda", 0), torch.device("cuda", 1)
    assert _resolve_index(torch.device("cuda"), [cuda1, cuda1, cuda0]) == cuda1
    assert _resolve_index(torch.device("cuda"), []) == torch.device("cuda")
    assert _matches(cuda0, torch.device("cuda")) and not _matches(cuda0, cuda1)
    assert _resolve_index(torch.device("cpu"), [cuda0]) == torch.device("cpu")


# -------------------------------------------------------------------------------- property and speed


leaf = st.sampled_from(["meta", "cpu", "cpu0", "int"])
nested = st.recursive(
    leaf,
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.sampled_from("abc"), kids, max_size=3),
    max_leaves=8,
)


def _build(spec):
    if spec == "meta":
        return torch.zeros(1, device=META)
    if spec == "cpu":
        return torch.zeros(1)
    if spec == "cpu0":
        return torch.tensor(1.0)
    if spec == "int":
        return 7
    if isinstance(spec, list):
        return [_build(s) for s in spec]
    return {k: _build(v) for k, v in spec.items()}


def _count(spec, kind):
    if isinstance(spec, list):
        return sum(_count(s, kind) for s in spec)
    if isinstance(spec, dict):
        return sum(_count(s, kind) for s in spec.values())
    return int(spec == kind)


@settings(max_examples=60, deadline=None)
@given(nested)
def test_every_misplaced_input_is_found_and_nothing_else(spec):
    model = nn.Linear(1, 1).to(META)
    expected = _count(spec, "cpu")
    if expected == 0:
        assert check_devices(model, _build(spec)).device == META
    else:
        err = mismatch(model, _build(spec))
        assert len(err.findings) == expected and {f.device for f in err.findings} == {"cpu"}


def _resnet50_like_on_meta() -> nn.Module:
    """Same counts as ResNet-50 (161 parameters, 159 buffers), on meta so it is built instantly."""

    def bottleneck(cin: int, width: int, down: bool) -> nn.Module:
        block = nn.Sequential(
            nn.Conv2d(cin, width, 1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(),
            nn.Conv2d(width, width, 3, padding=1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(),
            nn.Conv2d(width, width * 4, 1, bias=False),
            nn.BatchNorm2d(width * 4),
        )
        if down:
            block.add_module(
                "downsample", nn.Sequential(nn.Conv2d(cin, width * 4, 1), nn.BatchNorm2d(width * 4))
            )
            block.downsample[0].bias = None
        return block

    with torch.device(META):
        layers: list[nn.Module] = [nn.Conv2d(3, 64, 7, bias=False), nn.BatchNorm2d(64), nn.ReLU()]
        cin = 64
        for width, n in ((64, 3), (128, 4), (256, 6), (512, 3)):
            for i in range(n):
                layers.append(bottleneck(cin, width, i == 0))
                cin = width * 4
        layers.append(nn.Linear(2048, 1000))
        return nn.Sequential(*layers)


def test_a_resnet50_sized_model_is_checked_whole():
    model = _resnet50_like_on_meta()
    report = check_devices(model, torch.zeros(2, 3, 8, 8, device=META))
    assert (report.n_parameters, report.n_buffers) == (161, 159)
    assert sum(p.numel() for p in model.parameters()) > 25_000_000
    # how fast: benchmarks/bench_check.py (about 0.6 ms), not a timed test


def test_cpu_lengths_are_accepted_and_skip_keys_skips():
    class Tagger(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = nn.LSTM(2, 3, batch_first=True)

        def forward(self, x, lengths):
            return self.rnn(nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True))

    model = Tagger().to("meta")
    x = torch.randn(2, 4, 2, device="meta")
    report = check_devices(model, x, torch.tensor([4, 2]))  # positional: bound to forward's `lengths`
    assert report.n_inputs == 2
    check_devices(model, {"x": x, "seq_lengths": torch.tensor([4, 2])})
    check_devices(model, x, lengths=torch.tensor([4, 2]))
    with pytest.raises(DeviceMismatchError, match=r"inputs\[0\]\['labels'\]"):  # labels are not lengths
        check_devices(model, {"x": x, "labels": torch.tensor([1, 0])})
    check_devices(model, {"x": x, "labels": torch.tensor([1, 0])}, skip_keys="labels")
    with pytest.raises(DeviceMismatchError, match=r"inputs\[1\]"):  # a float "lengths" is no lengths
        check_devices(model, x, torch.tensor([4.0, 2.0]))


def test_bad_device_argument_is_an_unknown_device_error():
    from devicekit import UnknownDeviceError

    with pytest.raises(
        UnknownDeviceError, match=r"check_devices\(device=\.\.\.\): 'gpu' is not a device name"
    ):
        check_devices(nn.Linear(2, 2), device="gpu")
    if not torch.accelerator.is_available():
        with pytest.raises(UnknownDeviceError, match="accelerator index 0"):
            check_devices(nn.Linear(2, 2), device=0)
