"""The device model that `strict_devices` and `devicekit.simulate` share: which ATen ops may mix devices.

PyTorch checks devices per kernel. What both tools need to know, op by op:

* *transfer ops* (``aten._to_copy``, ``aten.copy_``, ...) exist to move data between devices and may mix;
* *index ops* (``aten.index``, ``aten.index_put_``, ...) take CPU tensors in their ``indices`` argument
  next to tensors on any device;
* some arguments must or may stay on the CPU: ``lengths`` of ``aten::_pack_padded_sequence``,
  ``batch_sizes`` of the packed RNN ops, ``input_lengths``/``target_lengths`` of ``ctc_loss``
  (`CPU_ARGS`, with `INDEX_OPS` in the torch-free `devicekit.cpu_args`, which the linter reads too);
* a 0-dim CPU tensor (``torch.tensor(2.0)``) may join tensors on another device only in ops whose device
  check is TensorIterator's (`allows_cpu_scalar`), one per op, except ``aten::where``, which moves each
  0-dim CPU operand itself (`ANY_CPU_SCALARS`).

Sources, torch v2.13.0: ``aten/src/ATen/TensorIterator.cpp`` (``compute_types``, ``allow_cpu_scalars``),
``aten/src/ATen/native/native_functions.yaml`` (``device_check: NoCheck   # TensorIterator``, read from
the copy torch installs with ``torchgen``) and ``aten/src/ATen/native/TensorCompare.cpp``
(``where_self_out``: "allow CPU scalars on non-cpu device").
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
from typing import Any

import torch

from .cpu_args import CPU_ARGS, INDEX_OPS

__all__ = [
    "ANY_CPU_SCALARS",
    "CPU_ARGS",
    "INDEX_OPS",
    "TRANSFER_OPS",
    "allows_cpu_scalar",
    "schema_info",
    "tensor_iterator_ops",
]

# Op packets (name without overload) whose purpose is to move or copy data across devices.
TRANSFER_OPS = frozenset(
    {
        "aten::_to_copy",
        "aten::to",
        "aten::copy_",
        "aten::copy",
        "aten::_copy_from",
        "aten::_copy_from_and_resize",
        "aten::lift_fresh",
        "aten::lift_fresh_copy",
        "aten::set_",
        "aten::_has_compatible_shallow_copy_type",
    }
)
# Ops that move every 0-dim CPU operand to the result's device themselves before TensorIterator sees it
# (aten/src/ATen/native/TensorCompare.cpp, where_self_out: "allow CPU scalars on non-cpu device").
ANY_CPU_SCALARS = frozenset({"aten::where"})

# Per-op cache: (transfer op?, positional argument names, names whose CPU tensors are allowed)
SchemaInfo = tuple[bool, tuple[str, ...], frozenset[str]]
_schema_cache: dict[Any, SchemaInfo] = {}


def schema_info(func: Any) -> SchemaInfo:
    """(is a transfer op, the schema's argument names, the names whose CPU tensors may stay) of an op."""
    info = _schema_cache.get(func)
    if info is None:
        schema = func._schema
        name = schema.name
        names = tuple(a.name for a in schema.arguments)
        info = (name in TRANSFER_OPS, names, CPU_ARGS.get(name, frozenset()))
        _schema_cache[func] = info
    return info


_YAML_ENTRY = re.compile(r"^- func: ([\w.]+)\(")
_TENSOR_ITERATOR_CHECK = re.compile(r"^\s+device_check: NoCheck\s+#.*TensorIterator")


def native_functions_yaml() -> str | None:
    """The path of ``native_functions.yaml`` installed with torch (``torchgen``), or `None`."""
    spec = importlib.util.find_spec("torchgen")
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        path = os.path.join(root, "packaged", "ATen", "native", "native_functions.yaml")
        if os.path.exists(path):
            return path
    return None


@functools.lru_cache(maxsize=1)
def tensor_iterator_ops() -> frozenset[str] | None:
    """``name.overload`` of every op whose device check is TensorIterator's, from the installed torch.

    Read from ``torchgen/packaged/ATen/native/native_functions.yaml`` (shipped with torch, the same file
    the op registrations are generated from): the entries marked ``device_check: NoCheck`` with a comment
    naming TensorIterator.  `None` when that file is not installed.
    """
    path = native_functions_yaml()
    if path is None:
        return None
    found: set[str] = set()
    current: str | None = None
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            entry = _YAML_ENTRY.match(line)
            if entry:
                current = entry.group(1)
            elif current is not None and _TENSOR_ITERATOR_CHECK.match(line):
                found.add(current)
    return frozenset(found)


def op_key(func: Any) -> str:
    """``name.overload`` of an ATen op overload, as native_functions.yaml spells it (``add.Tensor``)."""
    schema = func._schema
    short = schema.name.split("::", 1)[-1]
    return f"{short}.{schema.overload_name}" if schema.overload_name else short


_scalar_cache: dict[Any, bool] = {}


def allows_cpu_scalar(func: Any) -> bool:
    """Whether ``func`` (an ATen op overload) lets a 0-dim CPU tensor combine with another device."""
    known = _scalar_cache.get(func)
    if known is None:
        ops = tensor_iterator_ops()
        if ops is not None:
            known = op_key(func) in ops
        else:
            known = torch.Tag.pointwise in getattr(func, "tags", ())
        _scalar_cache[func] = known
    return known
