"""What a batch contains and how its parts are named: the one traversal behind every devicekit function.

``to_device`` (its general path), ``check_devices``, ``locate_mismatch``, ``prepare``, ``strict_devices``
and ``DeviceLoader`` all see a batch through this module, so they agree on what is inside it.

A value is classified by its type (`kind_of`, cached per type; first match wins):

==============  ==========================================================  ==========================
kind            types                                                       children named
==============  ==========================================================  ==========================
``tensor``      ``torch.Tensor`` and subclasses (``nn.Parameter``)           (a leaf)
``module``      ``nn.Module``: never walked into, never moved by a batch     (a leaf)
``chainmap``    ``collections.ChainMap``: each of its maps                  ``.maps[0]``
``mapping``     ``dict`` and subclasses, other ``Mapping`` types            ``['key']``
``movable``     objects with a callable ``.to`` (``PackedSequence``...)     ``.field`` / ``[0]``
``namedtuple``  tuple subclasses with ``_fields``                           ``.field``
``sequence``    ``list``, ``tuple``, ``collections.deque`` and subclasses   ``[0]``
``set``         ``set``, ``frozenset`` and subclasses                       ``{<element 0>}``
``dataclass``   dataclass instances: fields, then other instance attributes  ``.field``
``leaf``        everything else (str, numbers, None, numpy arrays...)        (a leaf)
==============  ==========================================================  ==========================

A ``movable`` object is moved by its own ``.to()``; its children (namedtuple fields, items, or instance
attributes) are only *inspected*, best effort.  ``PackedSequence.batch_sizes`` is never reported: PyTorch
requires it on the CPU.

Every walk here is iterative, so no nesting depth raises ``RecursionError``, and every container is
entered once (a shared container is visited once; a cycle is never followed twice).
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import functools
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from typing import Any

import torch
from torch import nn
from torch.nn.utils.rnn import PackedSequence

from .messages import LocalisedError, Message, localised

__all__ = [
    "CONTAINER_KINDS",
    "ReferenceCycle",
    "children",
    "find_cycle",
    "iter_tensors",
    "kind_of",
    "rebuild",
    "skip_set",
    "transform",
    "walk",
]

TENSOR, MODULE, CHAINMAP, MAPPING, MOVABLE = "tensor", "module", "chainmap", "mapping", "movable"
NAMEDTUPLE, SEQUENCE, SET, DATACLASS, LEAF = "namedtuple", "sequence", "set", "dataclass", "leaf"
#: Kinds that `transform` rebuilds from their moved children.
CONTAINER_KINDS = frozenset({CHAINMAP, MAPPING, NAMEDTUPLE, SEQUENCE, SET, DATACLASS})

_LEAF_TYPES = (str, bytes, bytearray, int, float, complex, bool, type(None), type(Ellipsis), range, slice)
_KINDS: dict[type, str] = {
    torch.Tensor: TENSOR,
    nn.Parameter: TENSOR,
    dict: MAPPING,
    list: SEQUENCE,
    tuple: SEQUENCE,
    **dict.fromkeys(_LEAF_TYPES, LEAF),
    # torch.Size is a tuple of ints: keep it as it is
    **dict.fromkeys((torch.Size, torch.device, torch.dtype, torch.memory_format, torch.layout), LEAF),
}
_MAX_CACHED_TYPES = 4096  # dynamically created classes must not grow the cache forever
_EMPTY: frozenset = frozenset()


def kind_of(tp: type) -> str:
    """The kind of a type (see the module docstring); cached per type."""
    kind = _KINDS.get(tp)
    if kind is None:
        kind = _classify(tp)
        if len(_KINDS) < _MAX_CACHED_TYPES:
            _KINDS[tp] = kind
    return kind


def _classify(tp: type) -> str:
    if issubclass(tp, torch.Tensor):
        return TENSOR
    if issubclass(tp, nn.Module):
        return MODULE
    if issubclass(tp, collections.ChainMap):
        return CHAINMAP
    if issubclass(tp, Mapping):
        return MAPPING
    if callable(getattr(tp, "to", None)):
        return MOVABLE
    if issubclass(tp, tuple):
        return NAMEDTUPLE if hasattr(tp, "_fields") else SEQUENCE
    if issubclass(tp, (list, collections.deque)):
        return SEQUENCE
    if issubclass(tp, (set, frozenset)):
        return SET
    if dataclasses.is_dataclass(tp):
        return DATACLASS
    return LEAF


def skip_set(skip_keys: Iterable[Hashable] | str) -> frozenset:
    """``skip_keys`` as a frozenset; a single string is one key (not its characters)."""
    if not skip_keys:
        return _EMPTY
    if isinstance(skip_keys, (str, bytes)):
        return frozenset((skip_keys,))
    try:
        return frozenset(skip_keys)
    except TypeError as err:
        raise localised(
            TypeError,
            Message(
                f"skip_keys must be a key or an iterable of hashable keys, not {skip_keys!r}",
                f"skip_keys 必须是一个键，或者由可哈希的键组成的可迭代对象，而不是 {skip_keys!r}",
            ),
        ) from err


# --- children: what is inside one container, and how each part is named ------------------------------


@functools.lru_cache(maxsize=1024)
def _dataclass_layout(tp: type) -> tuple[tuple[str, ...], frozenset[str]]:
    """(field names, names of functools.cached_property attributes) of a dataclass type."""
    names = tuple(f.name for f in dataclasses.fields(tp))
    cached = frozenset(
        n for klass in tp.__mro__ for n, v in vars(klass).items() if isinstance(v, functools.cached_property)
    )
    return names, cached


_MISSING: Any = object()


def children(obj: Any, kind: str | None = None, skip: frozenset = _EMPTY) -> list[tuple[Any, Any]]:
    """``(key, child)`` pairs of a container, in order; ``[]`` for tensors, modules and leaves.

    Mapping values whose key is in ``skip`` are left out.  Keys name the child with `suffix`.
    """
    if kind is None:
        kind = kind_of(type(obj))
    if kind == MAPPING:
        return [(k, v) for k, v in obj.items() if not (skip and k in skip)]
    if kind == SEQUENCE or kind == SET:
        return list(enumerate(obj))
    if kind == NAMEDTUPLE:
        return list(zip(type(obj)._fields, obj, strict=False))
    if kind == DATACLASS:
        names, cached = _dataclass_layout(type(obj))
        found = [(n, v) for n in names if (v := getattr(obj, n, _MISSING)) is not _MISSING]
        extra = getattr(obj, "__dict__", None)
        if extra:  # attributes set outside the fields (__post_init__): moved too; stale caches are dropped
            found += [(n, v) for n, v in extra.items() if n not in cached and n not in names]
        return found
    if kind == CHAINMAP:
        return list(enumerate(obj.maps))
    if kind == MOVABLE:  # inspected, not rebuilt
        if isinstance(obj, PackedSequence):
            return [(f, getattr(obj, f)) for f in ("data", "sorted_indices", "unsorted_indices")]
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):
            return list(zip(type(obj)._fields, obj, strict=False))
        if isinstance(obj, (list, tuple, set, frozenset)):
            return list(enumerate(obj))
        if isinstance(obj, Mapping):
            return [(k, v) for k, v in obj.items() if not (skip and k in skip)]
        return list(vars(obj).items()) if hasattr(obj, "__dict__") else []
    return []


def suffix(obj: Any, kind: str, key: Any) -> str:
    """The path suffix that names child ``key`` of ``obj``: ``['a']``, ``[0]``, ``.field``..."""
    if kind == MAPPING:
        return f"[{key!r}]"
    if kind == SEQUENCE:
        return f"[{key}]"
    if kind == SET:
        return f"{{<element {key}>}}"
    if kind == CHAINMAP:
        return f".maps[{key}]"
    if kind == MOVABLE:
        if isinstance(obj, Mapping):
            return f"[{key!r}]"
        return f"[{key}]" if isinstance(key, int) else f".{key}"
    return f".{key}"


# --- rebuilding a container from moved children ------------------------------------------------------


def rebuild(obj: Any, kind: str, moved: list[tuple[Any, Any]], notes: list[Message]) -> Any:
    """A new container like ``obj`` holding the ``moved`` children (the same keys as `children`).

    The input is never mutated.  When a type cannot be rebuilt as itself, the closest plain container is
    returned and a sentence saying so is appended to ``notes`` (``to_device`` turns it into a warning).
    """
    tp = type(obj)
    if kind == MAPPING:
        return _rebuild_mapping(obj, moved, notes)
    if kind == SEQUENCE:
        values = [v for _, v in moved]
        if tp is list:
            return values
        if tp is tuple:
            return tuple(values)
        if isinstance(obj, tuple):
            return _rebuild_tuple(obj, values, notes)
        if isinstance(obj, collections.deque):
            out = copy.copy(obj)  # keeps maxlen, the subclass and its attributes
            out.clear()
            out.extend(values)
            return out
        return _rebuild_list(obj, values, notes)
    if kind == NAMEDTUPLE:
        # _make() builds through tuple.__new__, bypassing a custom __new__ with a different signature.
        return tp._make(v for _, v in moved)
    if kind == SET:
        values = [v for _, v in moved]
        try:
            return tp(values)
        except Exception:
            notes.append(_fallback_note(tp, "set"))
            return frozenset(values) if isinstance(obj, frozenset) else set(values)
    if kind == DATACLASS:
        return _rebuild_dataclass(obj, moved)
    if kind == CHAINMAP:
        out = copy.copy(obj)
        out.maps = [v for _, v in moved]
        return out
    raise localised(
        ValueError, Message(f"rebuild: {kind!r} is not a container kind", f"rebuild：{kind!r} 不是容器类型")
    )


def _fallback_note(tp: type, plain: str) -> Message:
    name = tp.__qualname__
    return Message(
        f"to_device could not rebuild a {name}; returned a plain {plain} with the moved values instead.",
        f"to_device 无法重建 {name}，改为返回装着移动后的值的普通 {plain}。",
    )


def _same_items(out: Any, values: list[Any]) -> bool:
    return len(out) == len(values) and all(a is b for a, b in zip(out, values, strict=False))


def _rebuild_tuple(obj: tuple, values: list[Any], notes: list[Message]) -> tuple:
    # torch.return_types structseqs take one iterable; a subclass with __new__(cls, *items) takes them
    # spread out (and turns one iterable into a 1-tuple holding it: checked, not trusted).
    tp = type(obj)
    for build in (lambda: tp(values), lambda: tp(*values)):
        try:
            out = build()
        except Exception:
            continue
        if _same_items(out, values):
            return out
    notes.append(_fallback_note(tp, "tuple"))
    return tuple(values)


def _rebuild_list(obj: list, values: list[Any], notes: list[Message]) -> list:
    tp = type(obj)
    try:
        out = copy.copy(obj)  # keeps the subclass and its instance attributes
        out[:] = values
        if _same_items(out, values):
            return out
    except Exception:  # e.g. torch.fx.immutable_collections.immutable_list refuses item assignment
        pass
    try:
        out = tp(values)
        if _same_items(out, values):
            return out
    except Exception:
        pass
    notes.append(_fallback_note(tp, "list"))
    return values


def _rebuild_mapping(m: Mapping, moved: list[tuple[Any, Any]], notes: list[Message]) -> Mapping:
    # dict subclasses (OrderedDict, defaultdict keeping its factory, Counter) and UserDict (transformers'
    # BatchEncoding keeps its _encodings) are shallow-copied, then the moved values are written back.
    # Other mappings are rebuilt as type(m)(dict); a plain dict (with a note) if that fails too.  A
    # mapping's own .to() is not called: BatchEncoding.to() mutates itself and moves top-level tensors only.
    if type(m) is dict:
        out = dict(m)
        out.update(moved)
        return out
    if isinstance(m, (dict, collections.UserDict)):
        try:
            out = copy.copy(m)
            for k, v in moved:
                out[k] = v  # type: ignore[index]
            return out
        except Exception:  # a subclass whose copy/setitem does something unusual
            pass
    items = dict(m.items())
    items.update(moved)
    try:
        return type(m)(items)  # type: ignore[call-arg]
    except Exception:
        name = type(m).__qualname__
        notes.append(
            Message(
                f"to_device could not rebuild a {name} (tried copy.copy and {name}(dict)); "
                f"returned a plain dict with the moved values instead.",
                f"to_device 无法重建 {name}（试过 copy.copy 和 {name}(dict)），"
                "改为返回装着移动后的值的普通 dict。",
            )
        )
        return items


def _rebuild_dataclass(obj: Any, moved: list[tuple[Any, Any]]) -> Any:
    # A shallow copy with the moved values set via object.__setattr__. Unlike dataclasses.replace this
    # works for frozen dataclasses and init=False fields, and does not re-run __init__/__post_init__
    # (which may validate, derive or move tensors itself).  Filled functools.cached_property values are
    # dropped from the copy: computed from the old tensors, they would be stale (on the old device).
    out = copy.copy(obj)
    _, cached = _dataclass_layout(type(obj))
    state = getattr(out, "__dict__", None)
    if cached and state:
        for name in cached & state.keys():
            del state[name]
    for name, value in moved:
        if getattr(obj, name, _MISSING) is not value:
            object.__setattr__(out, name, value)
    return out


# --- walks -------------------------------------------------------------------------------------------


def walk(root: Any, name: str = "batch", skip: frozenset = _EMPTY) -> Iterator[tuple[str, Any, str]]:
    """Every tensor, module and container reachable from ``root`` as ``(path, value, kind)``, depth first.

    Each container is entered once (a shared container appears at its first path only; a cycle is not
    followed).  Tensors and modules are reported at every path where they appear; leaves are not
    reported (and cost no path).  Movable objects are entered too, for inspection.
    """
    entered: set[int] = set()
    stack: list[tuple[str, Any, str]] = [(name, root, kind_of(type(root)))]
    kinds = _KINDS
    while stack:
        path, obj, kind = stack.pop()
        if kind == LEAF:
            continue
        yield path, obj, kind
        if kind == TENSOR or kind == MODULE:
            continue
        oid = id(obj)
        if oid in entered:
            continue
        entered.add(oid)
        for k, v in reversed(children(obj, kind, skip)):
            vkind = kinds.get(type(v)) or kind_of(type(v))
            if vkind != LEAF:
                stack.append((path + suffix(obj, kind, k), v, vkind))


def iter_tensors(
    root: Any, name: str = "batch", skip: frozenset = _EMPTY
) -> Iterator[tuple[str, torch.Tensor]]:
    """``(path, tensor)`` for every tensor in ``root``, each tensor once (at its first path).

    ``PackedSequence.batch_sizes`` is left out: PyTorch requires it on the CPU.
    """
    seen: set[int] = set()
    for path, obj, kind in walk(root, name, skip):
        if kind == TENSOR and id(obj) not in seen:
            seen.add(id(obj))
            yield path, obj


class ReferenceCycle(LocalisedError, ValueError):
    """A container that contains itself was found; ``path`` is where, ``target`` the container it repeats."""

    def __init__(self, path: str, target: str) -> None:
        super().__init__(
            Message(
                f"reference cycle: {path} is the same object as {target}, which contains it",
                f"引用环：{path} 和包含它的 {target} 是同一个对象",
            )
        )
        self.path = path
        self.target = target


def find_cycle(root: Any, name: str = "batch", skip: frozenset = _EMPTY) -> tuple[str, str] | None:
    """``(path, target)`` of the first reference cycle in ``root`` (``path`` is ``target``), or ``None``."""
    on_path: dict[int, str] = {}
    done: set[int] = set()
    stack: list[tuple[str, Any, Iterator[tuple[Any, Any]] | None, str]] = [(name, root, None, "")]
    while stack:
        path, obj, it, kind = stack[-1]
        if it is None:
            oid = id(obj)
            if oid in on_path:
                return path, on_path[oid]
            kind = kind_of(type(obj))
            if oid in done or kind not in CONTAINER_KINDS and kind != MOVABLE:
                stack.pop()
                continue
            on_path[oid] = path
            it = iter(children(obj, kind, skip))
            stack[-1] = (path, obj, it, kind)
        nxt = next(it, None)
        if nxt is None:
            on_path.pop(id(obj), None)
            done.add(id(obj))
            stack.pop()
        else:
            key, child = nxt
            stack.append((path + suffix(obj, kind, key), child, None, ""))
    return None


_ON_PATH: Any = object()


def transform(
    root: Any,
    visit: Callable[[Any, str], Any],
    skip: frozenset = _EMPTY,
    notes: list[Message] | None = None,
    name: str = "batch",
) -> Any:
    """Rebuild ``root`` with ``visit(value, kind)`` applied to every tensor, module and movable object.

    Containers (``CONTAINER_KINDS``) are rebuilt with `rebuild`; leaves come back as the very same
    objects.  Like ``copy.deepcopy``, an object that appears twice is transformed once and the result
    appears twice.  Iterative: any depth works.  Raises `ReferenceCycle` for a cycle.
    """
    notes = [] if notes is None else notes
    memo: dict[int, Any] = {}
    keep: list[Any] = []  # values a Mapping computes on the fly: alive, so that their id() stays unique
    # frame: [obj, kind, children, next index, moved results, key in parent]
    stack: list[list[Any]] = []
    result: Any = _MISSING

    def _frame_path(frames: list[list[Any]], upto: int) -> str:
        # Built only when a cycle is found: paths of a 10,000-deep batch are not built per container.
        return name + "".join(
            suffix(frames[m - 1][0], frames[m - 1][1], frames[m][5]) for m in range(1, upto)
        )

    def start(obj: Any, key: Any) -> Any:
        """Return the transformed obj, or _MISSING after pushing a frame for a container."""
        kind = kind_of(type(obj))
        if kind == LEAF:
            return obj
        oid = id(obj)
        hit = memo.get(oid, _MISSING)
        if hit is _ON_PATH:
            target = next(i for i, f in enumerate(stack) if f[0] is obj)
            raise ReferenceCycle(
                _frame_path(stack, len(stack)) + suffix(stack[-1][0], stack[-1][1], key),
                _frame_path(stack, target + 1),
            )
        if hit is not _MISSING:
            return hit
        if kind not in CONTAINER_KINDS:
            out = visit(obj, kind)
            memo[oid] = out
            return out
        memo[oid] = _ON_PATH
        kids = children(obj, kind, skip)
        if kind == MAPPING and not isinstance(obj, dict):
            keep.extend(v for _, v in kids)
        stack.append([obj, kind, kids, 0, [], key])
        return _MISSING

    out = start(root, None)
    if out is not _MISSING:
        return out
    while stack:
        frame = stack[-1]
        obj, kind, kids, i, moved, _ = frame
        if i < len(kids):
            frame[3] = i + 1
            key, child = kids[i]
            value = start(child, key)
            if value is not _MISSING:
                moved.append((key, value))
            continue
        stack.pop()
        result = rebuild(obj, kind, moved, notes)
        memo[id(obj)] = result
        if stack:
            stack[-1][4].append((frame[5], result))

    return result
