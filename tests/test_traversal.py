"""devicekit.traversal: one definition of what a batch contains, shared by every devicekit function.

Each edge found by reviewing devicekit against accelerate/Lightning/pytree and by fuzzing has a test here
(issue 14); the fast path of ``to_device`` must agree with the traversal's own ``transform`` on generated
structures; no public function raises RecursionError on 10,000-deep input.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import warnings
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from torch import nn

import devicekit
from devicekit import check_devices, locate_mismatch, to_device, traversal
from devicekit.lang import using_language

META = torch.device("meta")
CPU = torch.device("cpu")


def _to_meta(x: Any, kind: str) -> Any:
    """The visit function of a reference transform: what to_device does to tensors."""
    if kind == traversal.TENSOR:
        out = x.to(META)
        return nn.Parameter(out, x.requires_grad) if isinstance(x, nn.Parameter) else out
    if kind == traversal.MOVABLE:
        return x.to(META)
    return x


# --- edges ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class WithCache:
    x: torch.Tensor

    @functools.cached_property
    def doubled(self) -> torch.Tensor:
        return self.x * 2


def test_filled_cached_property_is_not_copied_stale():
    b = WithCache(torch.ones(2))
    assert b.doubled.device == CPU  # filled on the CPU
    out = to_device(b, "meta")
    assert out.x.device == META
    assert "doubled" not in vars(out) and out.doubled.device == META  # recomputed from the moved tensor
    assert b.doubled.device == CPU  # the input keeps its own cache


def test_deque_is_moved_and_keeps_maxlen():
    dq = collections.deque([torch.ones(1), "s"], maxlen=5)
    out = to_device({"q": dq}, "meta")["q"]
    assert type(out) is collections.deque and out.maxlen == 5
    assert out[0].device == META and out[1] == "s" and dq[0].device == CPU


def test_list_subclass_refusing_item_assignment():
    from torch.fx.immutable_collections import immutable_list

    lst = immutable_list([torch.ones(1), 2])
    out = to_device(lst, "meta")
    assert type(out) is immutable_list and out[0].device == META and out[1] == 2


class Spread(tuple):
    """A tuple subclass whose constructor takes the items spread out."""

    def __new__(cls, *items):
        return super().__new__(cls, items)


def test_tuple_subclass_with_spread_constructor():
    t = Spread(torch.ones(1), torch.zeros(2))
    out = to_device(t, "meta")
    assert type(out) is Spread and len(out) == 2
    assert out[0].device == META and out[1].shape == (2,)


def test_tuple_subclass_that_cannot_be_rebuilt_warns_and_stays_a_tuple():
    class Picky(tuple):
        def __new__(cls, a, b, token):
            return super().__new__(cls, (a, b))

    with using_language("en"), pytest.warns(UserWarning, match="could not rebuild a .*Picky"):
        out = to_device(Picky(torch.ones(1), 1, "tok"), "meta")
    assert type(out) is tuple and out[0].device == META


def test_chainmap_keeps_its_maps():
    front, back = {"x": torch.ones(1)}, {"x": torch.zeros(1), "y": torch.ones(2)}
    out = to_device(collections.ChainMap(front, back), "meta")
    assert type(out) is collections.ChainMap and len(out.maps) == 2
    assert out.maps[1]["x"].device == META  # the shadowed value survives, moved
    assert out["y"].device == META and front["x"].device == CPU


def test_parameter_comes_back_a_parameter():
    p = nn.Parameter(torch.randn(2))
    frozen = nn.Parameter(torch.randn(2), requires_grad=False)
    out = to_device({"p": p, "f": frozen}, "meta")
    assert type(out["p"]) is nn.Parameter and out["p"].requires_grad and out["p"].device == META
    assert type(out["f"]) is nn.Parameter and not out["f"].requires_grad


@dataclasses.dataclass
class PostInit:
    x: torch.Tensor

    def __post_init__(self) -> None:
        self.mask = torch.ones_like(self.x, dtype=torch.bool)


def test_attributes_set_in_post_init_move_too():
    out = to_device(PostInit(torch.ones(2)), "meta")
    assert out.x.device == META and out.mask.device == META


def test_own_to_raising_type_error_is_called_once():
    class Broken:
        calls = 0

        def to(self, device, non_blocking=False):
            Broken.calls += 1
            raise TypeError("bug inside .to()")

    with pytest.raises(TypeError, match="bug inside"):
        to_device([Broken()], "meta")
    assert Broken.calls == 1


def test_custom_batch_with_to_is_inspected_by_check_devices():
    class Batch:
        def __init__(self, x):
            self.x = x

        def to(self, device):
            return Batch(self.x.to(device))

    model = nn.Linear(2, 2).to("meta")
    with pytest.raises(devicekit.DeviceMismatchError, match=r"inputs\[0\]\.x"):
        check_devices(model, Batch(torch.ones(2)))
    assert to_device(Batch(torch.ones(2)), "meta").x.device == META  # and to_device moves it


def _deep_list(depth: int) -> list:
    root: list = [torch.ones(1)]
    for _ in range(depth):
        root = [root]
    return root


def _deep_dict(depth: int) -> dict:
    root: dict = {"t": torch.ones(1)}
    for _ in range(depth):
        root = {"k": root}
    return root


@pytest.mark.parametrize("make", [_deep_list, _deep_dict])
def test_ten_thousand_deep_input_never_raises_recursion_error(make):
    batch = make(10_000)
    out = to_device(batch, "meta")
    found = list(traversal.iter_tensors(out))
    assert len(found) == 1 and found[0][1].device == META
    assert found[0][0].count("[") == 10_001
    model = nn.Linear(2, 2)
    with pytest.raises(devicekit.DeviceMismatchError):
        check_devices(model, to_device(batch, "meta"))
    assert locate_mismatch(nn.Identity(), batch) is None


def test_deep_cycle_gives_the_cycle_message():
    inner: list = [torch.ones(1)]
    root = inner
    for _ in range(5_000):
        root = [root]
    inner.append(root)
    with (
        using_language("en"),
        pytest.raises(
            ValueError, match="reference cycle in the batch: batch(\\[0\\]){5000}\\[1\\] is the same object"
        ),
    ):
        to_device(root, "meta")


# --- the fast path agrees with the traversal -------------------------------------------------------------


@dataclasses.dataclass
class Box:
    a: Any
    b: Any = None


Pair = collections.namedtuple("Pair", "a b")


class Tagged(list):
    pass


_leaves = st.one_of(
    st.builds(lambda n: torch.zeros(n), st.integers(0, 3)),
    st.builds(lambda n: nn.Parameter(torch.zeros(n)), st.integers(1, 2)),
    st.text(max_size=2),
    st.integers(),
    st.none(),
)


def _containers(children):
    return st.one_of(
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(tuple),
        st.lists(children, max_size=3).map(Tagged),
        st.lists(children, max_size=3).map(collections.deque),
        st.lists(children, max_size=3).map(lambda xs: Spread(*xs)),
        st.dictionaries(st.text(max_size=2), children, max_size=3),
        st.dictionaries(st.text(max_size=2), children, max_size=3).map(collections.OrderedDict),
        st.tuples(
            st.dictionaries(st.text(max_size=1), children, max_size=2),
            st.dictionaries(st.text(max_size=1), children, max_size=2),
        ).map(lambda ms: collections.ChainMap(*ms)),
        st.builds(Pair, children, children),
        st.builds(Box, children, children),
    )


batches = st.recursive(_leaves, _containers, max_leaves=14)


def _shape(obj: Any) -> Any:
    """Types, keys, devices and non-tensor leaves (by identity) of a moved structure."""
    if isinstance(obj, torch.Tensor):
        return (type(obj), obj.device, tuple(obj.shape))
    kind = traversal.kind_of(type(obj))
    if kind in traversal.CONTAINER_KINDS:
        return (type(obj), [(k, _shape(v)) for k, v in traversal.children(obj, kind)])
    return ("leaf", id(obj))


@seed(14)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches)
def test_fast_path_agrees_with_the_traversal(batch):
    fast = to_device(batch, "meta")
    reference = traversal.transform(batch, _to_meta)
    assert _shape(fast) == _shape(reference)
    inspected = [(p, t.device) for p, t in traversal.iter_tensors(fast)]
    assert all(d == META for _, d in inspected)
    assert [p for p, _ in inspected] == [p for p, _ in traversal.iter_tensors(reference)]


@seed(14)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches, st.integers(600, 1500))
def test_deep_fallback_agrees_with_the_fast_path(batch, depth):
    deep: Any = batch
    for _ in range(depth):
        deep = [deep]
    out = to_device(deep, "meta")  # deeper than the recursion limit: the iterative path
    for _ in range(depth):
        out = out[0]
    assert _shape(out) == _shape(to_device(batch, "meta"))


# --- fuzzing the public functions (fixed seed, bounded) -----------------------------------------------------


@seed(14)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches)
def test_fuzz_check_devices_and_locate_mismatch(batch):
    model = nn.Linear(2, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = check_devices(model, batch, device="cpu")
        assert report.n_inputs == len(list(traversal.iter_tensors(batch)))
        moved = to_device(batch, "meta")
        if any(True for _ in traversal.iter_tensors(moved)):
            with pytest.raises(devicekit.DeviceMismatchError):
                check_devices(model, moved, device="cpu")
        assert locate_mismatch(nn.Identity(), batch) is None
