"""Move a whole batch -- any nesting of containers -- to one device.

``to_device(batch, device)`` walks dicts, lists, tuples, namedtuples, dataclasses and other
mappings, moves every tensor it finds, and rebuilds each container with its own type. Everything
else comes back untouched (the very same objects), and the input is never mutated.

Why not ``tree_map`` or a one-line recursion? Because real batches contain things a naive walk
gets wrong: a ``defaultdict`` whose factory must survive, a frozen dataclass, a tokenizer's
``BatchEncoding``, a ``PackedSequence`` whose ``batch_sizes`` must stay on the CPU, a model that
slipped into the batch by mistake, or a list that (by accident) contains itself.

Speed matters too: this runs once per training step, so the walk uses exact-type dispatch (one dict
lookup per object, cached per type) instead of a chain of ``isinstance`` checks per leaf, and the
expensive bookkeeping (paths for error messages) is only done after something went wrong.
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from collections import UserDict
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

import torch
from torch import nn

from .device import DeviceLike, UnknownDeviceError

__all__ = ["to_device"]

T = TypeVar("T")

_VALID_FORMS = (
    "a string such as 'cpu', 'cuda', 'cuda:1', 'mps', 'xpu', 'meta', "
    "an int CUDA index such as 0, or a torch.device"
)
_DEVICE_CACHE: dict[str, torch.device] = {}

# Device types whose host->device copies may safely be asynchronous (see _default_non_blocking).
_ASYNC_TARGETS = frozenset({"cuda", "xpu"})


def _as_device(device: DeviceLike) -> torch.device:
    """Turn ``str | torch.device | int`` into a ``torch.device``, with a helpful error if it is none.

    Unlike :func:`devicekit.resolve_device` this does not check that the device exists on this
    machine (that would cost more than the whole walk of a small batch, on every call); moving a
    tensor to a missing device fails in ``Tensor.to`` with PyTorch's own error.
    """
    if type(device) is torch.device:
        return device
    if type(device) is str:
        dev = _DEVICE_CACHE.get(device)
        if dev is None:
            try:
                dev = torch.device(device)
            except (RuntimeError, ValueError) as err:
                raise UnknownDeviceError(f"invalid device {device!r}: expected {_VALID_FORMS}") from err
            if len(_DEVICE_CACHE) < 64:
                _DEVICE_CACHE[device] = dev
        return dev
    if isinstance(device, bool):  # bool is an int subclass; True would silently mean cuda:1
        raise TypeError(f"invalid device {device!r}: expected {_VALID_FORMS}")
    if isinstance(device, int):
        if device < 0:
            raise UnknownDeviceError(f"invalid device {device!r}: a CUDA index must be >= 0")
        return torch.device("cuda", device)
    if isinstance(device, torch.device):
        return device
    raise TypeError(f"invalid device of type {type(device).__name__}: expected {_VALID_FORMS}")


def _default_non_blocking(src: torch.device | None, dst: torch.device) -> bool:
    """The ``non_blocking`` value used when the caller passes ``None``.

    ``True`` only for host (CPU) -> CUDA/XPU copies; ``False`` for everything else.

    * CPU -> CUDA/XPU, asynchronous: safe whether or not the source is pinned. From pinned memory
      the copy really overlaps with the host; from pageable memory the driver stages it through a
      pinned buffer and it behaves (almost) synchronously, so it is never wrong, just not faster.
      We therefore do not check ``is_pinned()`` per tensor (that costs time, and can initialise
      CUDA); use :class:`devicekit.DeviceLoader` or ``DataLoader(pin_memory=True)`` to get pinning.
    * anything -> CPU: asynchronous device->host copies return before the data has arrived; reading
      the result without a ``torch.cuda.synchronize()`` can see garbage. Never default to that.
    * -> MPS: ``non_blocking`` copies to MPS have had correctness bugs (pytorch/pytorch#83015).
    * -> meta, CUDA -> CUDA, and unknown devices: no benefit, so stay synchronous.

    ``src`` is ``None`` for objects with their own ``.to()`` (their tensors' device is unknown);
    they get ``True`` exactly when the target is CUDA/XPU.
    """
    if dst.type not in _ASYNC_TARGETS:
        return False
    return src is None or src.type == "cpu"


# ---------------------------------------------------------------------------------------------
# The fast walk. One handler per *kind* of object, looked up by exact type in _HANDLERS.
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
        self.notes: list[str] = []  # warnings, emitted at the end so that they point at the caller


def _leaf(w: _Walk, obj: T) -> T:
    return obj


def _handler(tp: type) -> Callable[[_Walk, Any], Any]:
    h = _HANDLERS.get(tp)
    return h if h is not None else _register(tp)


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
    memo[key] = out
    return out


def _found_module(w: _Walk, module: nn.Module) -> nn.Module:
    # A model inside a batch is almost always a mistake (and moving it would move a model the
    # caller did not ask to move). Leave it alone; to_device warns with its path afterwards.
    w.modules.append(module)
    return module


def _enter(w: _Walk, obj: Any) -> Any:
    """Memo/cycle check for a container. Returns a previous result, or None to go on copying."""
    hit = w.memo.get(id(obj))
    if hit is _ON_PATH:
        raise _Cycle
    if hit is None:
        w.memo[id(obj)] = _ON_PATH
    return hit


# dict and list are the hot path of every batch: the memo/cycle check of _enter is inlined in both, and
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


def _move_items(w: _Walk, items: Iterable[Any]) -> list[Any]:
    handlers = _HANDLERS
    return [x if (h := handlers.get(type(x)) or _register(type(x))) is _leaf else h(w, x) for x in items]


def _move_tuple(w: _Walk, tup: tuple) -> tuple:
    hit = _enter(w, tup)
    if hit is not None:
        return hit
    out = tuple(_move_items(w, tup))
    w.memo[id(tup)] = out
    return out


def _move_namedtuple(w: _Walk, tup: tuple) -> tuple:
    hit = _enter(w, tup)
    if hit is not None:
        return hit
    # _make() builds through tuple.__new__, bypassing a custom __new__ with a different signature.
    out = type(tup)._make(_move_items(w, tup))
    w.memo[id(tup)] = out
    return out


def _move_tuple_subclass(w: _Walk, tup: tuple) -> tuple:
    # tuple subclasses without _fields, e.g. torch.return_types structseqs: Cls(iterable).
    hit = _enter(w, tup)
    if hit is not None:
        return hit
    items = _move_items(w, tup)
    try:
        out = type(tup)(items)
    except TypeError:
        out = type(tup)(*items)
    w.memo[id(tup)] = out
    return out


def _move_list_subclass(w: _Walk, lst: list) -> list:
    hit = _enter(w, lst)
    if hit is not None:
        return hit
    items = _move_items(w, lst)
    out = copy.copy(lst)  # keeps the subclass and its instance attributes
    out[:] = items
    w.memo[id(lst)] = out
    return out


def _move_set(w: _Walk, s: set | frozenset) -> set | frozenset:
    hit = _enter(w, s)
    if hit is not None:
        return hit
    out = type(s)(_move_items(w, s))
    w.memo[id(s)] = out
    return out


def _moved_mapping_items(w: _Walk, m: Mapping, keep: bool = False) -> list[tuple[Hashable, Any]]:
    skip = w.skip
    items = []
    for k, v in m.items():
        if keep:
            w.keep.append(v)
        items.append((k, v if (skip and k in skip) else _handler(type(v))(w, v)))
    return items


def _move_dict_subclass(w: _Walk, d: dict) -> dict:
    # OrderedDict, defaultdict, Counter, user subclasses. copy.copy() rebuilds them through their
    # own __copy__/__reduce__ (defaultdict keeps default_factory, instance attributes survive, the
    # items are copied); then only the moved values are written back into the copy.
    hit = _enter(w, d)
    if hit is not None:
        return hit
    items = _moved_mapping_items(w, d)
    try:
        out = copy.copy(d)
        for k, v in items:
            out[k] = v
    except Exception:  # a subclass whose copy/setitem does something unusual
        out = _rebuild_mapping(w, d, items)
    w.memo[id(d)] = out
    return out


def _move_mapping(w: _Walk, m: Mapping) -> Mapping:
    # Mappings that are not dicts. UserDict (and so transformers' BatchEncoding) copies cleanly:
    # UserDict.__copy__ copies .data and keeps other attributes such as BatchEncoding._encodings.
    # Other mappings are rebuilt as type(m)(dict); if that fails we fall back to a plain dict and
    # warn. We do not call a mapping's own .to(): BatchEncoding.to() mutates itself in place and
    # only moves top-level tensors.
    hit = _enter(w, m)
    if hit is not None:
        return hit
    items = _moved_mapping_items(w, m, keep=True)
    out: Mapping | None = None
    if isinstance(m, UserDict):
        try:
            out = copy.copy(m)
            for k, v in items:
                out[k] = v  # type: ignore[index]
        except Exception:
            out = None
    if out is None:
        out = _rebuild_mapping(w, m, items)
    w.memo[id(m)] = out
    return out


def _rebuild_mapping(w: _Walk, m: Mapping, items: list[tuple[Hashable, Any]]) -> Mapping:
    try:
        return type(m)(dict(items))  # type: ignore[call-arg]
    except Exception:
        name = type(m).__qualname__
        w.notes.append(
            f"to_device could not rebuild a {name} (tried copy.copy and {name}(dict)); "
            f"returned a plain dict with the moved values instead."
        )
        return dict(items)


_DC_FIELDS: dict[type, tuple[str, ...]] = {}
_MISSING: Any = object()


def _move_dataclass(w: _Walk, obj: Any) -> Any:
    # A shallow copy with the moved field values written in via object.__setattr__. Unlike
    # dataclasses.replace this works for frozen dataclasses, for init=False fields, and does not
    # re-run __init__/__post_init__ (which may validate, derive or even move tensors itself).
    hit = _enter(w, obj)
    if hit is not None:
        return hit
    tp = type(obj)
    names = _DC_FIELDS.get(tp)
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(obj))
        _DC_FIELDS[tp] = names
    changes = []
    for name in names:
        old = getattr(obj, name, _MISSING)
        if old is _MISSING:
            continue
        new = _handler(type(old))(w, old)
        if new is not old:
            changes.append((name, new))
    out = copy.copy(obj)
    for name, new in changes:
        object.__setattr__(out, name, new)
    w.memo[id(obj)] = out
    return out


def _move_with_to(w: _Walk, obj: Any) -> Any:
    # Objects that know how to move themselves, e.g. PackedSequence (keeps batch_sizes on the
    # CPU, as pack_padded_sequence requires) or user batch classes.
    memo = w.memo
    hit = memo.get(id(obj))
    if hit is not None:
        return hit
    nb = w.non_blocking
    if nb is None:
        nb = _default_non_blocking(None, w.device)
    try:
        out = obj.to(w.device, non_blocking=nb)
    except TypeError:  # a .to() that does not take non_blocking
        out = obj.to(w.device)
    if out is None:  # a .to() that works in place and forgets to return self
        out = obj
    memo[id(obj)] = out
    return out


_HANDLERS: dict[type, Callable[[_Walk, Any], Any]] = {
    torch.Tensor: _move_tensor,
    torch.nn.Parameter: _move_tensor,
    dict: _move_dict,
    list: _move_list,
    tuple: _move_tuple,
    set: _move_set,
    frozenset: _move_set,
    # leaves that can never contain tensors (torch.Size is a tuple of ints: keep it as is)
    **dict.fromkeys(
        (str, bytes, bytearray, int, float, complex, bool, type(None), type(Ellipsis), range, slice),
        _leaf,
    ),
    **dict.fromkeys((torch.Size, torch.device, torch.dtype, torch.memory_format, torch.layout), _leaf),
}
_MAX_CACHED_TYPES = 4096  # dynamically created classes must not grow the cache forever


def _register(tp: type) -> Callable[[_Walk, Any], Any]:
    """Classify a type not seen before. Order matters; see to_device's docstring."""
    if issubclass(tp, torch.Tensor):
        h = _move_tensor
    elif issubclass(tp, nn.Module):
        h = _found_module
    elif issubclass(tp, dict):
        h = _move_dict_subclass
    elif issubclass(tp, Mapping):
        h = _move_mapping
    elif callable(getattr(tp, "to", None)):
        h = _move_with_to
    elif issubclass(tp, tuple):
        h = _move_namedtuple if hasattr(tp, "_fields") else _move_tuple_subclass
    elif issubclass(tp, list):
        h = _move_list_subclass
    elif issubclass(tp, (set, frozenset)):
        h = _move_set
    elif dataclasses.is_dataclass(tp):
        h = _move_dataclass
    else:
        h = _leaf
    if len(_HANDLERS) < _MAX_CACHED_TYPES:
        _HANDLERS[tp] = h
    return h


_MAPPING_HANDLERS = frozenset({_move_dict, _move_dict_subclass, _move_mapping})
_SEQUENCE_HANDLERS = frozenset({_move_list, _move_list_subclass, _move_tuple, _move_tuple_subclass})


def _children(obj: Any, skip: frozenset) -> list[tuple[str, Any]]:
    """(path suffix, child) pairs of a container, in the order the fast walk visits them."""
    h = _handler(type(obj))
    if h in _MAPPING_HANDLERS:
        return [(f"[{k!r}]", v) for k, v in obj.items() if not (skip and k in skip)]
    if h in _SEQUENCE_HANDLERS:
        return [(f"[{i}]", v) for i, v in enumerate(obj)]
    if h is _move_namedtuple:
        return [(f".{name}", v) for name, v in zip(type(obj)._fields, obj, strict=False)]
    if h is _move_dataclass:
        return [(f".{f.name}", getattr(obj, f.name)) for f in dataclasses.fields(obj) if hasattr(obj, f.name)]
    if h is _move_set:
        return [(f"{{<element {i}>}}", v) for i, v in enumerate(obj)]
    return []


def _walk_with_paths(root: Any, skip: frozenset, root_name: str) -> Iterator[tuple[str, Any, str | None]]:
    """Slow, iterative DFS that knows paths. Yields (path, obj, cycle_target_path_or_None).

    Used only after the fast walk found a problem, to name where it is. Iterative so that it can
    never hit RecursionError itself.
    """
    on_path: dict[int, str] = {}  # id -> path, for containers on the current DFS path
    done: set[int] = set()
    stack: list[tuple[str, Any, Iterator[tuple[str, Any]] | None]] = [(root_name, root, None)]
    while stack:
        path, obj, it = stack[-1]
        if it is None:
            oid = id(obj)
            if oid in on_path:
                stack.pop()
                yield path, obj, on_path[oid]
                continue
            if oid in done:
                stack.pop()
                continue
            yield path, obj, None
            kids = _children(obj, skip)
            if not kids:
                done.add(oid)
                stack.pop()
                continue
            on_path[oid] = path
            it = iter(kids)
            stack[-1] = (path, obj, it)
        nxt = next(it, None)
        if nxt is None:
            on_path.pop(id(obj), None)
            done.add(id(obj))
            stack.pop()
        else:
            suffix, child = nxt
            stack.append((path + suffix, child, None))


def _cycle_message(root: Any, skip: frozenset) -> str:
    for path, _obj, target in _walk_with_paths(root, skip, "batch"):
        if target is not None:
            return (
                f"to_device: reference cycle in the batch: {path} is the same object as {target}, "
                f"which contains it. A structure that contains itself cannot be copied to a device; "
                f"break the cycle (or put the key in skip_keys)."
            )
    return "to_device: reference cycle in the batch (a container that contains itself)."


def _warn_modules(root: Any, w: _Walk) -> None:
    wanted = {id(m) for m in w.modules}
    paths: dict[int, list[str]] = {}
    for path, obj, target in _walk_with_paths(root, w.skip, "batch"):
        if target is None and id(obj) in wanted:
            paths.setdefault(id(obj), []).append(path)
    for m in {id(m): m for m in w.modules}.values():
        where = paths.get(id(m)) or ["batch"]
        also = f" (also at {', '.join(where[1:])})" if len(where) > 1 else ""
        warnings.warn(
            f"to_device found an nn.Module ({type(m).__name__}) at {where[0]}{also} and did NOT move "
            f"it: a model inside a batch is usually a mistake. Move models explicitly with "
            f"model.to(device) or devicekit.prepare(model, device).",
            UserWarning,
            stacklevel=4,
        )


_EMPTY: frozenset = frozenset()


def _skip_set(skip_keys: Iterable[Hashable] | str) -> frozenset:
    if not skip_keys:
        return _EMPTY
    if isinstance(skip_keys, (str, bytes)):
        return frozenset((skip_keys,))
    return frozenset(skip_keys)


def _run(w: _Walk, obj: Any) -> Any:
    h = _HANDLERS.get(type(obj)) or _register(type(obj))
    try:
        out = h(w, obj)
    except _Cycle:
        raise ValueError(_cycle_message(obj, w.skip)) from None
    if w.modules:
        _warn_modules(obj, w)
    for note in w.notes:
        warnings.warn(note, UserWarning, stacklevel=3)
    return out


def to_device(
    obj: T,
    device: DeviceLike,
    non_blocking: bool | None = None,
    skip_keys: Iterable[Hashable] | str = (),
) -> T:
    """Return ``obj`` with every tensor in it on ``device``; nothing else changes.

    What is walked and how it is rebuilt (first match wins):

    * ``torch.Tensor`` (and subclasses): ``t.to(device, non_blocking=...)``. A tensor already on
      ``device`` is returned as the same object.
    * ``nn.Module``: **not moved**; a ``UserWarning`` names its path (e.g. ``batch['model']``).
      Models are moved with ``model.to(device)`` or :func:`devicekit.prepare`, never by accident.
    * ``dict`` and subclasses (``OrderedDict``, ``defaultdict`` keeping its ``default_factory``,
      ``Counter``...): a new mapping of the same type, same key order.
    * other ``Mapping`` types: ``UserDict`` subclasses (e.g. transformers' ``BatchEncoding``) are
      shallow-copied and keep their extra attributes; anything else is rebuilt as
      ``type(m)(dict)``. If that fails too, a plain ``dict`` is returned with a ``UserWarning``.
    * objects with their own callable ``.to`` (e.g. ``PackedSequence``):
      ``obj.to(device, non_blocking=...)`` (or ``obj.to(device)`` if that raises ``TypeError``).
    * ``tuple``, namedtuple (via ``_make``), ``list``, ``set``, ``frozenset`` and their subclasses.
    * dataclass instances (frozen too): a shallow copy with the moved fields set on the copy.
    * everything else (str, bytes, numbers, None, numpy arrays, ``torch.Size``...) is a leaf and
      comes back as the very same object.

    Containers are always new objects of the same type (mutating the result never touches the
    input), but an object that appears twice (shared, not cyclic) is copied once and appears
    twice in the result, like ``copy.deepcopy``. Two *different* tensors that are views of one
    storage are moved separately.

    Args:
        obj: a tensor or any nesting of the containers above.
        device: ``"cuda:0"``, ``torch.device("mps")``, ``0`` (a CUDA index)...
        non_blocking: ``None`` (default) picks per copy: ``True`` only for CPU -> CUDA/XPU (see
            ``_default_non_blocking``: device -> CPU asynchronous copies can be read before they
            arrive, and -> MPS asynchronous copies have had bugs). ``True``/``False`` force it.
        skip_keys: mapping keys (at any depth) whose values are returned as they are. A single
            string means one key.

    Raises:
        ValueError: ``device`` is not a valid device string (``UnknownDeviceError``, a ValueError
            subclass), or ``obj`` contains a reference cycle
            (the message names the path, e.g. ``batch['a'][0] is the same object as batch['a']``).
    """
    dev = _as_device(device)
    if non_blocking is not None and type(non_blocking) is not bool:
        raise TypeError(f"non_blocking must be None, True or False, not {non_blocking!r}")
    if type(obj) is torch.Tensor and obj.device == dev:
        return obj
    return _run(_Walk(dev, non_blocking, _skip_set(skip_keys)), obj)


def _to_device_pinned(obj: T, device: torch.device, non_blocking: bool | None) -> T:
    """to_device, pinning each CPU tensor first (for CUDA prefetching in DeviceLoader)."""
    return _run(_Walk(device, non_blocking, _EMPTY, pin=True), obj)


def _iter_tensors(obj: Any) -> Iterator[torch.Tensor]:
    """Every tensor reachable in a (moved) batch, each once.

    Best effort for objects with their own ``.to()``: their instance attributes are searched too.
    """
    seen: set[int] = set()
    stack = [obj]
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, torch.Tensor):
            yield x
            continue
        kids = _children(x, _EMPTY)
        if kids:
            stack.extend(v for _, v in kids)
        elif _handler(type(x)) is _move_with_to:
            if isinstance(x, (tuple, list, set, frozenset)):  # e.g. PackedSequence
                stack.extend(x)
            elif isinstance(x, Mapping):
                stack.extend(x.values())
            elif hasattr(x, "__dict__"):
                stack.extend(vars(x).values())
