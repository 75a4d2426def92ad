"""Tests for devicekit.transfer.to_device (CPU only; ``meta`` plays the "other" device)."""

from __future__ import annotations

import dataclasses
import warnings
from collections import Counter, OrderedDict, UserDict, defaultdict, namedtuple
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from devicekit.device import UnknownDeviceError, as_device
from devicekit.transfer import _default_non_blocking, to_device
from devicekit.traversal import iter_tensors


def _iter_tensors(obj):
    return [t for _, t in iter_tensors(obj)]


META = torch.device("meta")
CPU = torch.device("cpu")

Pair = namedtuple("Pair", "a b")


@dataclasses.dataclass
class Box:
    x: Any
    y: Any = None


@dataclasses.dataclass(frozen=True)
class FrozenBox:
    x: Any
    y: Any = None


@dataclasses.dataclass
class WithInitFalse:
    x: Any
    derived: Any = dataclasses.field(init=False)
    post_init_calls: Any = dataclasses.field(init=False, default=0)

    def __post_init__(self) -> None:
        self.derived = self.x
        self.post_init_calls += 1


class Tagged(dict):
    """dict subclass with an instance attribute."""


class Encoding(UserDict):
    """Stand-in for transformers.BatchEncoding: a UserDict with extra state."""

    def __init__(self, data=None, encodings=None):
        super().__init__(data)
        self._encodings = encodings

    def to(self, device, non_blocking=False):  # like BatchEncoding.to: mutates in place
        self.data = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in self.data.items()}
        return self


class FrozenMap(Mapping):
    """Read-only Mapping constructible from a dict."""

    def __init__(self, d):
        self._d = dict(d)

    def __getitem__(self, k):
        return self._d[k]

    def __iter__(self):
        return iter(self._d)

    def __len__(self):
        return len(self._d)


class OddMap(FrozenMap):
    """Mapping that cannot be rebuilt from a dict."""

    def __init__(self, d, token):
        super().__init__(d)
        self.token = token


class Movable:
    """An object with its own .to(), recording how it was called."""

    def __init__(self, t):
        self.t = t
        self.calls = []

    def to(self, device, non_blocking=False):
        self.calls.append((torch.device(device), non_blocking))
        return Movable(self.t.to(device))


class MovableNoKw:
    def __init__(self):
        self.calls = 0

    def to(self, device):
        self.calls += 1
        return "moved"


# --------------------------------------------------------------------------------------------
# basics
# --------------------------------------------------------------------------------------------


def test_tensor_moves_and_keeps_shape_dtype():
    t = torch.randn(2, 3, dtype=torch.float64)
    out = to_device(t, "meta")
    assert out.device == META and out.shape == (2, 3) and out.dtype == torch.float64
    assert t.device == CPU


def test_same_device_returns_same_object():
    t = torch.randn(2)
    assert to_device(t, "cpu") is t
    batch = {"a": t, "b": [t]}
    out = to_device(batch, torch.device("cpu"))
    assert out["a"] is t and out["b"][0] is t
    assert out is not batch and out["b"] is not batch["b"]  # containers are new


@pytest.mark.parametrize(
    "device, expected",
    [
        ("cpu", CPU),
        ("meta", META),
        ("cuda:1", torch.device("cuda", 1)),
        (META, META),
    ],
)
def test_device_forms(device, expected):
    assert as_device(device) == expected


def test_an_int_is_an_accelerator_index():
    accelerator = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else None
    if accelerator is None:
        with pytest.raises(UnknownDeviceError, match="accelerator index 0, which is not available"):
            to_device(torch.ones(1), 0)
    else:
        assert as_device(0) == torch.device(accelerator.type, 0)


@pytest.mark.parametrize("bad", ["gpu", "cuda:x", "", "cpu0", "cuda:128"])
def test_bad_device_string(bad):
    with pytest.raises(UnknownDeviceError, match="A device is a torch.device, a string such as 'cpu'"):
        to_device(torch.ones(1), bad)


@pytest.mark.parametrize("bad", [True, 1.5, None, -1, 2**63, 128, [0]])
def test_bad_device_type(bad):
    with pytest.raises(UnknownDeviceError, match="A device is") as info:
        to_device(torch.ones(1), bad)
    assert isinstance(info.value, ValueError) and isinstance(info.value, TypeError)


def test_non_blocking_must_be_bool_or_none():
    with pytest.raises(TypeError):
        to_device(torch.ones(1), "meta", non_blocking=1)


def test_leaves_are_identical():
    leaves = ["s", b"b", 3, 2.5, None, True, 1j, torch.Size([2, 3]), torch.float16, CPU, range(3)]
    out = to_device(leaves, "meta")
    assert all(a is b for a, b in zip(out, leaves, strict=True))


def test_numpy_array_is_identical_leaf():
    np = pytest.importorskip("numpy")
    arr = np.zeros(3)
    out = to_device({"a": arr, "t": torch.ones(1)}, "meta")
    assert out["a"] is arr and out["t"].device == META


def test_parameter_inside_batch_moves():
    p = nn.Parameter(torch.randn(2))
    assert to_device([p], "meta")[0].device == META


# --------------------------------------------------------------------------------------------
# container types
# --------------------------------------------------------------------------------------------


def test_defaultdict_keeps_factory_and_order():
    d = defaultdict(list)
    d["z"] = torch.ones(1)
    d["a"] = "x"
    out = to_device(d, "meta")
    assert type(out) is defaultdict and out.default_factory is list
    assert list(out) == ["z", "a"] and out["z"].device == META and out["a"] is d["a"]
    assert d["z"].device == CPU


def test_ordereddict_counter_and_dict_subclass_attrs():
    od = OrderedDict(b=torch.ones(1), a=2)
    out = to_device(od, "meta")
    assert type(out) is OrderedDict and list(out) == ["b", "a"] and out["b"].device == META
    c = Counter(a=3)
    assert to_device(c, "meta") == c and type(to_device(c, "meta")) is Counter
    tagged = Tagged(t=torch.ones(1))
    tagged.note = "kept"
    out = to_device(tagged, "meta")
    assert type(out) is Tagged and out.note == "kept" and out["t"].device == META
    assert tagged["t"].device == CPU


def test_userdict_like_batchencoding_keeps_state_and_input():
    enc = Encoding({"input_ids": torch.ones(2, 3), "nested": {"m": torch.ones(1)}}, encodings=["e"])
    out = to_device(enc, "meta")
    assert type(out) is Encoding and out is not enc
    assert out._encodings == ["e"]
    assert out["input_ids"].device == META and out["nested"]["m"].device == META  # nested moved too
    assert enc["input_ids"].device == CPU  # its in-place .to() was not used


def test_readonly_mapping_rebuilt_with_its_type():
    fm = FrozenMap({"t": torch.ones(1), "s": "x"})
    out = to_device(fm, "meta")
    assert type(out) is FrozenMap and out["t"].device == META and out["s"] is fm["s"]
    proxy = MappingProxyType({"t": torch.ones(1)})
    assert type(to_device(proxy, "meta")) is MappingProxyType


def test_unrebuildable_mapping_falls_back_to_dict_with_warning():
    om = OddMap({"t": torch.ones(1)}, token=1)
    with pytest.warns(UserWarning, match="could not rebuild a OddMap") as rec:
        out = to_device([[om]], "meta")[0][0]
    assert type(out) is dict and out["t"].device == META
    assert rec[0].filename == __file__


def test_namedtuple_list_tuple_set_subclasses():
    class MyList(list):
        pass

    ml = MyList([torch.ones(1)])
    ml.tag = 7
    batch = (Pair(torch.ones(1), "s"), ml, {torch.ones(1), 3}, frozenset({4}))
    out = to_device(batch, "meta")
    assert type(out) is tuple and type(out[0]) is Pair and out[0].a.device == META and out[0].b == "s"
    assert type(out[1]) is MyList and out[1].tag == 7 and out[1][0].device == META
    assert type(out[2]) is set and {x.device for x in out[2] if isinstance(x, torch.Tensor)} == {META}
    assert type(out[3]) is frozenset and out[3] == {4}


def test_return_types_structseq():
    res = torch.randn(3, 4).max(dim=1)
    out = to_device(res, "meta")
    assert type(out) is type(res) and out.values.device == META and out.indices.device == META


def test_dataclass_copied_not_mutated():
    b = Box(torch.ones(1), [torch.ones(2), "s"])
    out = to_device(b, "meta")
    assert type(out) is Box and out is not b
    assert out.x.device == META and out.y[0].device == META and out.y[1] is b.y[1]
    assert b.x.device == CPU and b.y[0].device == CPU


def test_frozen_dataclass():
    fb = FrozenBox(torch.ones(1), "label")
    out = to_device(fb, "meta")
    assert type(out) is FrozenBox and out.x.device == META and out.y is fb.y and fb.x.device == CPU
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.x = 1


def test_dataclass_init_false_fields_and_no_post_init_rerun():
    w = WithInitFalse(torch.ones(1))
    out = to_device(w, "meta")
    assert out.x.device == META and out.derived.device == META
    assert out.post_init_calls == 1


def test_object_with_own_to_called_with_non_blocking():
    m = Movable(torch.ones(1))
    out = to_device({"m": m}, "meta")
    assert m.calls == [(META, False)] and out["m"].t.device == META
    assert m.t.device == CPU


def test_own_to_non_blocking_default_for_cuda_target():
    class Recorder:
        def __init__(self):
            self.kw = None

        def to(self, device, non_blocking=False):
            self.kw = (torch.device(device), non_blocking)
            return self

    r = Recorder()
    to_device(r, "cuda:0")
    assert r.kw == (torch.device("cuda", 0), True)
    to_device(r, "meta")
    assert r.kw == (META, False)
    to_device(r, "cuda:0", non_blocking=False)
    assert r.kw == (torch.device("cuda", 0), False)


def test_to_without_non_blocking_kwarg():
    obj = MovableNoKw()
    assert to_device([obj], "meta") == ["moved"]


def test_packed_sequence_uses_its_own_to():
    x = torch.randn(3, 4, 2)
    packed = pack_padded_sequence(x, torch.tensor([4, 2, 1]), batch_first=True)
    out = to_device({"seq": packed}, "meta")["seq"]
    assert type(out) is type(packed) and out.data.device == META
    assert out.batch_sizes.device == CPU  # PackedSequence.to keeps batch_sizes on the host


# --------------------------------------------------------------------------------------------
# skip_keys, modules, cycles, sharing
# --------------------------------------------------------------------------------------------


def test_skip_keys_at_any_depth():
    t = torch.ones(1)
    batch = {"keep": t, "move": t.clone(), "inner": [{"keep": [t], "x": torch.ones(1)}]}
    out = to_device(batch, "meta", skip_keys=["keep"])
    assert out["keep"] is t and out["inner"][0]["keep"] is batch["inner"][0]["keep"]
    assert out["move"].device == META and out["inner"][0]["x"].device == META
    out = to_device(batch, "meta", skip_keys="keep")  # a single string is one key, not characters
    assert out["keep"] is t


def test_module_is_not_moved_and_warned_with_path():
    lin = nn.Linear(2, 2)
    batch = {"x": torch.ones(1), "model": lin, "more": [nn.ReLU()]}
    with pytest.warns(UserWarning) as rec:
        out = to_device(batch, "meta")
    messages = [str(r.message) for r in rec]
    assert any("batch['model']" in m and "Linear" in m for m in messages)
    assert any("batch['more'][0]" in m and "ReLU" in m for m in messages)
    assert rec[0].filename == __file__  # the warning points at the caller
    assert out["model"] is lin and lin.weight.device == CPU and out["x"].device == META


def test_module_at_root_warns():
    lin = nn.Linear(2, 2)
    with pytest.warns(UserWarning, match=r"at batch and did NOT move"):
        assert to_device(lin, "meta") is lin


def _self_list():
    lst = [torch.ones(1)]
    lst.append(lst)
    return lst


def _dict_cycle():
    d: dict = {}
    d["self"] = d
    return {"outer": d}


def _dataclass_cycle():
    b = Box(torch.ones(1))
    b.y = (b,)
    return b


@pytest.mark.parametrize(
    "make, where",
    [
        (_self_list, r"batch\[1\] is the same object as batch, which contains it"),
        (_dict_cycle, r"batch\['outer'\]\['self'\] is the same object as batch\['outer'\]"),
        (_dataclass_cycle, r"batch\.y\[0\] is the same object as batch"),
    ],
)
def test_cycle_raises_value_error_with_path(make, where):
    with pytest.raises(ValueError, match=where):
        to_device(make(), "meta")


def test_long_cycle_does_not_hit_recursion_error():
    a: list = []
    b = [a]
    a.append({"k": (b,)})
    with pytest.raises(ValueError, match="reference cycle"):
        to_device(a, "meta")


def test_cycle_under_skip_key_is_ignored():
    d: dict = {"t": torch.ones(1)}
    d["self"] = d
    out = to_device(d, "meta", skip_keys=["self"])
    assert out["self"] is d and out["t"].device == META


def test_shared_subobjects_map_to_one_result():
    t = torch.ones(1)
    shared = [t, "s"]
    batch = {"a": shared, "b": shared, "t1": t, "t2": t}
    out = to_device(batch, "meta")
    assert out["a"] is out["b"] and out["a"] is not shared
    assert out["t1"] is out["t2"] and out["a"][0] is out["t1"]


def test_default_non_blocking_decision():
    cpu, cuda, xpu, mps = (torch.device(x) for x in ("cpu", "cuda", "xpu", "mps"))
    assert _default_non_blocking(cpu, cuda) is True
    assert _default_non_blocking(cpu, torch.device("cuda", 1)) is True
    assert _default_non_blocking(cpu, xpu) is True
    assert _default_non_blocking(cuda, cpu) is False
    assert _default_non_blocking(cpu, mps) is False
    assert _default_non_blocking(cpu, META) is False
    assert _default_non_blocking(cuda, torch.device("cuda", 1)) is False
    assert _default_non_blocking(mps, cpu) is False
    assert _default_non_blocking(None, cuda) is True
    assert _default_non_blocking(None, cpu) is False


def test_iter_tensors_finds_each_once():
    t = torch.ones(1)
    packed = pack_padded_sequence(torch.randn(2, 3, 1), torch.tensor([3, 1]), batch_first=True)
    z = torch.zeros(1)
    found = list(_iter_tensors({"a": [t, t], "b": Box(t, (z,)), "p": packed, "s": "x"}))
    expected = [t, z, packed.data]  # batch_sizes stays on the CPU: not reported; enforce_sorted: no indices
    assert len(found) == len(expected) and {id(x) for x in found} == {id(x) for x in expected}


# --------------------------------------------------------------------------------------------
# property tests
# --------------------------------------------------------------------------------------------

_leaf_values = st.one_of(
    st.builds(
        lambda n, d: torch.zeros(n, dtype=d), st.integers(0, 3), st.sampled_from([torch.float32, torch.int64])
    ),
    st.text(max_size=3),
    st.integers(),
    st.none(),
    st.floats(allow_nan=False),
    st.binary(max_size=3),
)


def _containers(children):
    return st.one_of(
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(st.text(max_size=2), children, max_size=3),
        st.builds(Pair, children, children),
        st.builds(Box, children, children),
        st.builds(FrozenBox, children, children),
        st.dictionaries(st.text(max_size=2), children, max_size=3).map(OrderedDict),
    )


batches = st.recursive(_leaf_values, _containers, max_leaves=12)


def _snapshot(obj):
    """A structural fingerprint: (type, id) of every node and (id, device) of tensors."""
    if isinstance(obj, torch.Tensor):
        return ("T", id(obj), obj.device, tuple(obj.shape), obj.dtype)
    if isinstance(obj, dict):
        return (type(obj), id(obj), [(k, _snapshot(v)) for k, v in obj.items()])
    if dataclasses.is_dataclass(obj):
        return (type(obj), id(obj), [_snapshot(getattr(obj, f.name)) for f in dataclasses.fields(obj)])
    if isinstance(obj, (list, tuple)):
        return (type(obj), id(obj), [_snapshot(x) for x in obj])
    return ("L", id(obj))


def _check_same_shape(before, after):
    if isinstance(before, torch.Tensor):
        assert type(after) is torch.Tensor and after.device == META
        assert after.shape == before.shape and after.dtype == before.dtype
        return
    assert type(after) is type(before)
    if isinstance(before, dict):
        assert list(after) == list(before)
        for k in before:
            _check_same_shape(before[k], after[k])
    elif dataclasses.is_dataclass(before):
        assert after is not before
        for f in dataclasses.fields(before):
            _check_same_shape(getattr(before, f.name), getattr(after, f.name))
    elif isinstance(before, (list, tuple)):
        assert len(after) == len(before)
        for a, b in zip(before, after, strict=True):
            _check_same_shape(a, b)
    else:
        assert after is before  # non-tensor leaves: the very same object


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches)
def test_property_structure_types_leaves_devices(batch):
    before = _snapshot(batch)
    out = to_device(batch, "meta")
    _check_same_shape(batch, out)
    assert _snapshot(batch) == before  # input not mutated


@settings(max_examples=60, deadline=None)
@given(batches)
def test_property_same_device_keeps_every_tensor(batch):
    out = to_device(batch, "cpu")
    before = [t for t in _iter_tensors(batch)]
    after = [t for t in _iter_tensors(out)]
    assert {id(t) for t in before} == {id(t) for t in after}


def test_no_warnings_on_plain_batches():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        to_device({"a": [torch.ones(1), "x", None], "b": (1, 2.0)}, "meta")
