"""What the simulated GPU knows about one ATen op overload, computed once per op and cached.

The CUDA facts come from ``tables.json`` (``course_tools.generate.simulate_tables``: the kernel wrapper
PyTorch's code generator writes for the op's CUDA kernel and the arguments its device check reads), the
shared device model from `devicekit.device_rules` (transfer ops, CPU arguments, TensorIterator ops), and
the op's own schema (which results alias which arguments, whether it takes a ``device`` or a
``generator``).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..device_rules import ANY_CPU_SCALARS, allows_cpu_scalar, op_key, schema_info

__all__ = ["OpInfo", "info", "tables"]

_TABLES = Path(__file__).with_name("tables.json")


@functools.lru_cache(maxsize=1)
def tables() -> dict[str, Any]:
    """The shipped tables (CUDA kernel wrappers and checked arguments, CUDA's autocast lists)."""
    return json.loads(_TABLES.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class OpInfo:
    """One op overload, as the simulation needs it.

    Attributes:
        key: ``name.overload`` (``add.Tensor``).
        packet: ``aten::add``.
        names: the schema's argument names, in order.
        transfer: the op moves data between devices (``_to_copy``, ``copy_`` ...): no device check.
        cpu_ok: argument names whose CPU tensors may join tensors on a GPU (``indices``, ``lengths`` ...).
        cpu_scalar: a 0-dim CPU tensor may join (TensorIterator's check).
        any_scalars: any number of 0-dim CPU tensors may join (``where``).
        wrapper: the CUDA kernel wrapper's name, or `None` when the op has no CUDA kernel of its own.
        checked: the arguments the generated device check reads, in order; `None` when it has none.
        composite: the op has a ``CompositeExplicitAutograd`` kernel (it can be run op by op).
        device_arg: the op takes a ``device`` argument (a factory or a ``*_like``/``new_*`` op).
        generator: the op takes a ``generator`` argument.
        write_alias: (result index, argument position, argument name) of results that are arguments
            written in place (``add_``'s ``self``, an ``out=`` tensor).
        seeded: the op draws random numbers (PyTorch's ``nondeterministic_seeded`` tag).
        slow: the op always takes the careful path (it is random, moves data, takes a device, or has a
            rule of its own), even when all its tensors are on one simulated GPU.
    """

    key: str
    packet: str
    names: tuple[str, ...]
    transfer: bool
    cpu_ok: frozenset[str]
    cpu_scalar: bool
    any_scalars: bool
    wrapper: str | None
    checked: tuple[str, ...] | None
    composite: bool
    device_arg: bool
    generator: bool
    write_alias: tuple[tuple[int, int, str], ...]
    seeded: bool = False
    slow: bool = False


_cache: dict[Any, OpInfo] = {}


def info(func: Any) -> OpInfo:
    """The `OpInfo` of an ATen op overload (cached)."""
    found = _cache.get(func)
    if found is not None:
        return found
    schema = func._schema
    transfer, names, cpu_ok = schema_info(func)
    key = op_key(func)
    entry = tables()["cuda_ops"].get(key)
    write_alias = []
    for r, ret in enumerate(schema.returns):
        alias = ret.alias_info
        if alias is None or not alias.is_write:
            continue
        for a, arg in enumerate(schema.arguments):
            if arg.alias_info is not None and arg.alias_info.before_set == alias.before_set:
                write_alias.append((r, a, arg.name))
                break
    from ._dispatch import SPECIAL_KEYS

    seeded = torch.Tag.nondeterministic_seeded in getattr(func, "tags", ())
    found = OpInfo(
        key=key,
        packet=schema.name,
        names=names,
        transfer=transfer,
        cpu_ok=cpu_ok,
        cpu_scalar=allows_cpu_scalar(func),
        any_scalars=schema.name in ANY_CPU_SCALARS,
        wrapper=entry[0] if entry else None,
        checked=tuple(entry[1]) if entry and entry[1] is not None else None,
        composite=torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), "CompositeExplicitAutograd"),
        device_arg="device" in names,
        generator="generator" in names,
        write_alias=tuple(write_alias),
        seeded=seeded,
        slow=seeded or transfer or "device" in names or key in SPECIAL_KEYS or schema.name in SPECIAL_KEYS,
    )
    _cache[func] = found
    return found
