"""Move a whole batch -- any nesting of containers -- to one device.

``to_device(batch, device)`` walks dicts, lists, tuples, namedtuples, dataclasses, deques, sets and other
mappings, moves every tensor it finds, and rebuilds each container with its own type. Everything else
comes back untouched (the very same objects), and the input is never mutated.

What a batch contains is defined once, in `devicekit.traversal`, for every devicekit function.
Real batches contain things a naive walk gets wrong: a ``defaultdict`` whose factory must survive, a
frozen dataclass, a tokenizer's ``BatchEncoding``, a ``PackedSequence`` whose ``batch_sizes`` must stay
on the CPU, a model that slipped into the batch by mistake, or a list that (by accident) contains itself.

Speed matters too: this runs once per training step. The common containers (``dict``, ``list``,
``tuple``) and tensors have inlined handlers here, looked up by exact type (one dict lookup per object),
and every other kind goes through the traversal's own ``children``/``rebuild``. The recursive fast walk
falls back to the traversal's iterative ``transform`` when a batch is nested deeper than Python's
recursion limit; ``tests/test_traversal.py`` checks with generated structures that both agree.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Hashable, Iterable
from typing import Any, TypeVar

import torch
from torch import nn

from . import traversal
from .device import DeviceLike, as_device
from .messages import Message, localised, warn

__all__ = ["to_device"]

T = TypeVar("T")

# Device types whose host->device copies may safely be asynchronous (see _default_non_blocking).
_ASYNC_TARGETS = frozenset({"cuda", "xpu"})


def _default_non_blocking(src: torch.device | None, dst: torch.device) -> bool:
    """The ``non_blocking`` value used when the caller passes ``None``.

    ``True`` only for host (CPU) -> CUDA/XPU copies; ``False`` for everything else.

    * CPU -> CUDA/XPU, asynchronous: safe whether or not the source is pinned. From pinned memory
      the copy really overlaps with the host; from pageable memory the driver stages it through a
      pinned buffer and it behaves (almost) synchronously, so it is never wrong, just not faster.
      We therefore do not check ``is_pinned()`` per tensor (that costs time, and can initialise
      CUDA); use `DeviceLoader` or ``DataLoader(pin_memory=True)`` to get pinning.
    * anything -> CPU: asynchronous device->host copies return before the data has arrived; reading
      the result without a ``torch.cuda.synchronize()`` can see garbage. Never default to that.
    * -> MPS: ``non_blocking`` host->MPS copies have returned wrong values
      (pytorch/pytorch#139550, torch 2.5.1; pytorch/pytorch#189690, a pageable source released
      before the MPS stream synchronises).
    * -> meta, CUDA -> CUDA, and unknown devices: no benefit, so stay synchronous.

    ``src`` is ``None`` for objects with their own ``.to()`` (their tensors' device is unknown);
    they get ``True`` exactly when the target is CUDA/XPU.
    """
    if dst.type not in _ASYNC_TARGETS:
        return False
    return src is None or src.type == "cpu"


# ---------------------------------------------------------------------------------------------
# The fast walk. One handler per kind of object, looked up by exact type in _HANDLERS.
# Every handler has the signature handler(walk, obj) -> moved obj.
# ---------------------------------------------------------------------------------------------


class _Cycle(Exception):
    """Internal: a container was reached again while still being copied (a reference cycle)."""


_ON_PATH: Any = object()  # memo marker for "container currently being copied"


class _Walk:
    """State of one ``to_device`` call."""

    __slots__ = ("device", "non_blocking", "skip", "memo", "modules", "keep", "pin", "notes")

    def __init__(
        self, device: torch.device, non_blocking: bool | None, skip: frozenset, pin: bool = False
    ) -> None:
        self.device = device
        self.non_blocking = non_blocking
        self.skip = skip
        # id(original) -> result, like copy.deepcopy's memo. Containers map to _ON_PATH while they
        # are being copied, which makes cycle detection a single dict lookup per container.
        self.memo: dict[int, Any] = {}
        self.modules: list[nn.Module] = []
        # Originals that are not owned by the input (e.g. values a custom Mapping computes on the
        # fly); kept alive so that their id() cannot be reused by another object during the walk.
        self.keep: list[Any] = []
        self.pin = pin
        self.notes: list[Message] = []  # warnings, emitted at the end so that they point at the caller


def _leaf(w: _Walk, obj: T) -> T:
    return obj


def _move_tensor(w: _Walk, t: torch.Tensor) -> torch.Tensor:
    dev = w.device
    if t.device == dev:
        return t
    # Not a fast exit when the target has no index ("cuda" vs "cuda:0"); Tensor.to() then
    # returns the tensor itself anyway, so identity is still preserved.
    memo = w.memo
    key = id(t)
    hit = memo.get(key)
    if hit is not None:
        return hit
    nb = w.non_blocking
    if nb is None:
        nb = _default_non_blocking(t.device, dev)
    src = t
    if w.pin and nb and t.device.type == "cpu" and dev.type == "cuda" and not t.is_pinned():
        # The pinned copy is freed right after .to(); the caching host allocator does not reuse
        # its block until the (asynchronous) copy that reads it has finished.
        src = t.pin_memory()
    out = src.to(dev, non_blocking=nb)
    if isinstance(t, nn.Parameter) and not isinstance(out, nn.Parameter):
        out = _as_parameter(t, out)
    memo[key] = out
    return out


def _as_parameter(old: nn.Parameter, moved: torch.Tensor) -> torch.Tensor:
    # Tensor.to() returns a plain Tensor for a Parameter; nn.Module._apply re-wraps it the same way.
    try:
        return type(old)(moved, old.requires_grad)
    except Exception:
        return nn.Parameter(moved, old.requires_grad)


def _found_module(w: _Walk, module: nn.Module) -> nn.Module:
    # A model inside a batch is almost always a mistake (and moving it would move a model the
    # caller did not ask to move). Leave it alone; to_device warns with its path afterwards.
    w.modules.append(module)
    return module


# dict and list are the hot path of every batch: the memo/cycle check is inlined in both, and
# the handler lookup is a dict hit per value (benchmarks/bench_transfer.py measures the difference).
def _move_dict(w: _Walk, d: dict) -> dict:
    memo = w.memo
    key = id(d)
    hit = memo.get(key)
    if hit is not None:
        if hit is _ON_PATH:
            raise _Cycle
        return hit
    memo[key] = _ON_PATH
    handlers = _HANDLERS
    skip = w.skip
    out = {}
    for k, v in d.items():
        if skip and k in skip:
            out[k] = v
            continue
        h = handlers.get(type(v)) or _register(type(v))
        out[k] = v if h is _leaf else h(w, v)
    memo[key] = out
    return out


def _move_list(w: _Walk, lst: list) -> list:
    memo = w.memo
    key = id(lst)
    hit = memo.get(key)
    if hit is not None:
        if hit is _ON_PATH:
            raise _Cycle
        return hit
    memo[key] = _ON_PATH
    handlers = _HANDLERS
    out = [x if (h := handlers.get(type(x)) or _register(type(x))) is _leaf else h(w, x) for x in lst]
    memo[key] = out
    return out


def _move_tuple(w: _Walk, tup: tuple) -> tuple:
    memo = w.memo
    key = id(tup)
    hit = memo.get(key)
    if hit is not None:
        if hit is _ON_PATH:
            raise _Cycle
        return hit
    memo[key] = _ON_PATH
    handlers = _HANDLERS
    out = tuple(x if (h := handlers.get(type(x)) or _register(type(x))) is _leaf else h(w, x) for x in tup)
    memo[key] = out
    return out


def _move_container(w: _Walk, obj: Any) -> Any:
    """Every other container kind: the traversal's children, moved here, rebuilt by the traversal."""
    memo = w.memo
    key = id(obj)
    hit = memo.get(key)
    if hit is not None:
        if hit is _ON_PATH:
            raise _Cycle
        return hit
    memo[key] = _ON_PATH
    kind = traversal.kind_of(type(obj))
    kids = traversal.children(obj, kind, w.skip)
    if kind == traversal.MAPPING and not isinstance(obj, dict):
        w.keep.extend(v for _, v in kids)
    handlers = _HANDLERS
    moved = [
        (k, v if (h := handlers.get(type(v)) or _register(type(v))) is _leaf else h(w, v)) for k, v in kids
    ]
    out = traversal.rebuild(obj, kind, moved, w.notes)
    memo[key] = out
    return out


_TAKES_NON_BLOCKING: dict[type, bool] = {}


def _takes_non_blocking(tp: type) -> bool:
    """Whether ``tp.to`` accepts ``non_blocking=`` (decided once per type, from its signature)."""
    known = _TAKES_NON_BLOCKING.get(tp)
    if known is None:
        try:
            params = inspect.signature(tp.to).parameters.values()
            known = any(p.name == "non_blocking" or p.kind is p.VAR_KEYWORD for p in params)
        except (TypeError, ValueError):  # no signature (a builtin): assume it is Tensor-like
            known = True
        if len(_TAKES_NON_BLOCKING) < 4096:
            _TAKES_NON_BLOCKING[tp] = known
    return known


def _move_with_to(w: _Walk, obj: Any) -> Any:
    # Objects that know how to move themselves, e.g. PackedSequence (keeps batch_sizes on the
    # CPU, as pack_padded_sequence requires) or user batch classes. .to() is called exactly once.
    memo = w.memo
    hit = memo.get(id(obj))
    if hit is not None:
        return hit
    if _takes_non_blocking(type(obj)):
        nb = w.non_blocking
        if nb is None:
            nb = _default_non_blocking(None, w.device)
        out = obj.to(w.device, non_blocking=nb)
    else:
        out = obj.to(w.device)
    if out is None:  # a .to() that works in place and forgets to return self
        out = obj
    memo[id(obj)] = out
    return out


_KIND_HANDLERS: dict[str, Callable[[_Walk, Any], Any]] = {
    traversal.TENSOR: _move_tensor,
    traversal.MODULE: _found_module,
    traversal.MOVABLE: _move_with_to,
    traversal.LEAF: _leaf,
}
_HANDLERS: dict[type, Callable[[_Walk, Any], Any]] = {dict: _move_dict, list: _move_list, tuple: _move_tuple}
_MAX_CACHED_TYPES = 4096  # dynamically created classes must not grow the cache forever


def _register(tp: type) -> Callable[[_Walk, Any], Any]:
    """The handler of a type not seen before: by its kind in devicekit.traversal."""
    h = _KIND_HANDLERS.get(traversal.kind_of(tp), _move_container)
    if len(_HANDLERS) < _MAX_CACHED_TYPES:
        _HANDLERS[tp] = h
    return h


def _cycle_message(path: str, target: str) -> Message:
    return Message(
        f"to_device: reference cycle in the batch: {path} is the same object as {target}, "
        f"which contains it. A structure that contains itself cannot be copied to a device; "
        f"break the cycle (or put the key in skip_keys).",
        f"to_device：批次里有引用环：{path} 和包含它的 {target} 是同一个对象。包含自身的结构无法复制到"
        "设备上；请打断这个环（或者把这个键放进 skip_keys）。",
    )


def _warn_modules(root: Any, w: _Walk) -> None:
    wanted = {id(m) for m in w.modules}
    paths: dict[int, list[str]] = {}
    for path, obj, kind in traversal.walk(root, "batch", w.skip):
        if kind == traversal.MODULE and id(obj) in wanted:
            paths.setdefault(id(obj), []).append(path)
    for m in {id(m): m for m in w.modules}.values():
        where = paths.get(id(m)) or ["batch"]
        also = f" (also at {', '.join(where[1:])})" if len(where) > 1 else ""
        also_zh = f"（还在 {'、'.join(where[1:])}）" if len(where) > 1 else ""
        kind = type(m).__name__
        warn(
            Message(
                f"to_device found an nn.Module ({kind}) at {where[0]}{also} and did NOT move "
                f"it: a model inside a batch is usually a mistake. Move models explicitly with "
                f"model.to(device) or devicekit.prepare(model, device).",
                f"to_device 在 {where[0]}{also_zh} 发现了一个 nn.Module（{kind}），没有移动它：批次里出现模型"
                "通常是个错误。请显式地移动模型：model.to(device) 或 devicekit.prepare(model, device)。",
            ),
            UserWarning,
            stacklevel=4,
        )


def _run(w: _Walk, obj: Any) -> Any:
    h = _HANDLERS.get(type(obj)) or _register(type(obj))
    try:
        out = h(w, obj)
    except _Cycle:
        found = traversal.find_cycle(obj, "batch", w.skip)
        path, target = found if found else ("a container", "one that contains it")
        raise localised(ValueError, _cycle_message(path, target)) from None
    except RecursionError:
        # Nested deeper than Python's recursion limit: start again with the iterative traversal.
        w = _Walk(w.device, w.non_blocking, w.skip, w.pin)
        visit = {
            traversal.TENSOR: _move_tensor,
            traversal.MODULE: _found_module,
            traversal.MOVABLE: _move_with_to,
        }
        try:
            out = traversal.transform(obj, lambda x, kind: visit[kind](w, x), w.skip, w.notes)
        except traversal.ReferenceCycle as err:
            raise localised(ValueError, _cycle_message(err.path, err.target)) from None
    if w.modules:
        _warn_modules(obj, w)
    for note in w.notes:
        warn(note, UserWarning, stacklevel=3)
    return out


def to_device(
    obj: T,
    device: DeviceLike,
    non_blocking: bool | None = None,
    skip_keys: Iterable[Hashable] | str = (),
) -> T:
    """Return ``obj`` with every tensor in it on ``device``; nothing else changes.

    What is walked and how it is rebuilt (the kinds of `devicekit.traversal`, first match wins):

    * ``torch.Tensor`` (and subclasses): ``t.to(device, non_blocking=...)``. A tensor already on
      ``device`` is returned as the same object; an ``nn.Parameter`` comes back a ``Parameter``.
    * ``nn.Module``: **not moved**; a ``UserWarning`` names its path (e.g. ``batch['model']``).
      Models are moved with ``model.to(device)`` or `prepare`, never by accident.
    * ``collections.ChainMap``: each of its maps, so shadowed values survive.
    * ``dict`` and subclasses (``OrderedDict``, ``defaultdict`` keeping its ``default_factory``,
      ``Counter``...): a new mapping of the same type, same key order.
    * other ``Mapping`` types: ``UserDict`` subclasses (e.g. transformers' ``BatchEncoding``) are
      shallow-copied and keep their extra attributes; anything else is rebuilt as
      ``type(m)(dict)``. If that fails too, a plain ``dict`` is returned with a ``UserWarning``.
    * objects with their own callable ``.to`` (e.g. ``PackedSequence``): ``obj.to(device,
      non_blocking=...)``, or ``obj.to(device)`` when its signature has no ``non_blocking``; once.
    * ``tuple``, namedtuple (via ``_make``), ``list``, ``collections.deque`` (keeping ``maxlen``),
      ``set``, ``frozenset`` and their subclasses; a subclass that cannot be rebuilt as itself
      (``torch.fx``'s immutable list, a tuple whose ``__new__`` takes other arguments) comes back as
      the plain type, with a ``UserWarning``.
    * dataclass instances (frozen too): a shallow copy with the moved fields and other instance
      attributes (set in ``__post_init__``) set on the copy; ``__init__`` is not re-run, filled
      ``functools.cached_property`` values are dropped (they would describe the old tensors).
    * everything else (str, bytes, numbers, None, numpy arrays, ``torch.Size``...) is a leaf and
      comes back as the very same object.

    Any depth works: a batch nested deeper than Python's recursion limit is walked iteratively.

    Containers are always new objects of the same type (mutating the result never touches the
    input), but an object that appears twice (shared, not cyclic) is copied once and appears
    twice in the result, like ``copy.deepcopy``. Two *different* tensors that are views of one
    storage are moved separately.

    Args:
        obj: a tensor or any nesting of the containers above.
        device: ``"cuda:0"``, ``torch.device("mps")``, ``0`` (index 0 of this machine's accelerator);
            read by `as_device`.
        non_blocking: ``None`` (default) picks per copy: ``True`` only for CPU -> CUDA/XPU (see
            ``_default_non_blocking``: device -> CPU asynchronous copies can be read before they
            arrive, and -> MPS asynchronous copies have had bugs). ``True``/``False`` force it.
        skip_keys: mapping keys (at any depth) whose values are returned as they are. A single
            string means one key.

    Raises:
        UnknownDeviceError: ``device`` is not a device (a ``ValueError`` and ``TypeError`` subclass).
        ValueError: ``obj`` contains a reference cycle
            (the message names the path, e.g. ``batch['a'][0] is the same object as batch['a']``).
    """
    dev = as_device(device)
    if non_blocking is not None and type(non_blocking) is not bool:
        raise localised(
            TypeError,
            Message(
                f"non_blocking must be None, True or False, not {non_blocking!r}",
                f"non_blocking 必须是 None、True 或 False，而不是 {non_blocking!r}",
            ),
        )
    if type(obj) is torch.Tensor and obj.device == dev:
        return obj
    return _run(_Walk(dev, non_blocking, traversal.skip_set(skip_keys)), obj)


def to_device_pinned(
    obj: T, device: torch.device, non_blocking: bool | None, skip: frozenset = frozenset()
) -> T:
    """to_device, pinning each CPU tensor first (for CUDA prefetching in DeviceLoader)."""
    return _run(_Walk(device, non_blocking, skip, pin=True), obj)
