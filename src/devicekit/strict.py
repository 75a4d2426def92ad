"""``strict_devices()``: make every device mix an error, op by op.

Why: PyTorch checks devices per kernel, and some kernels do not check.  On this course's stand-in
accelerator (the ``meta`` device) ``torch.mm``, ``@``, ``F.linear`` without bias, ``F.conv2d`` and
``F.embedding`` accept a ``meta`` tensor together with a ``cpu`` tensor and silently return a tensor on one
of the two devices, so the bug surfaces (if at all) far away.  Inside ``with strict_devices():`` every ATen
op is inspected before it runs, through a :class:`~torch.utils._python_dispatch.TorchDispatchMode`, and an op
that receives tensors on more than one device raises :class:`~devicekit.errors.DeviceMismatchError` (a
``RuntimeError``) naming the op, the devices and the schema names of the arguments.

What stays allowed, exactly as in PyTorch:

* 0-dim CPU tensors (``torch.tensor(2.0)``) next to tensors on any device;
* ops whose job is to move data between devices: ``aten._to_copy`` (what ``t.to(device)`` and
  ``module.to(device)`` dispatch to), ``aten.copy_`` (``dst.copy_(src)``, ``dst[...] = src``), ``aten.to``,
  ``aten._copy_from`` and friends;
* CPU index tensors in indexing ops (``x[idx]`` with ``idx`` on the CPU and ``x`` on an accelerator);
* the CPU tensors PyTorch requires or accepts on the CPU: ``lengths`` of ``pack_padded_sequence``
  (``aten::_pack_padded_sequence`` raises unless it is a CPU int64 tensor), ``batch_sizes`` of packed RNN
  ops, ``input_lengths``/``target_lengths`` of ``ctc_loss`` (the CUDA kernels copy them to the CPU).

The mode only exists inside the ``with`` block: nothing is patched globally and code outside the block pays
nothing.  Blocks nest (each level checks), and leaving a block by an exception restores the previous state.
Expect a slowdown inside the block (a Python call per op): use it to debug, not to train.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .errors import DeviceMismatchError

__all__ = ["StrictDevicesMode", "strict_devices"]

# Op packets (name without overload) whose purpose is to move or copy data across devices.
_TRANSFER_OPS = frozenset(
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
# Indexing ops: CPU tensors in their `indices` argument are allowed on any device.
_INDEX_OPS = frozenset(
    {
        "aten::index",
        "aten::index_put",
        "aten::index_put_",
        "aten::_index_put_impl_",
        "aten::_unsafe_index",
        "aten::_unsafe_index_put",
    }
)

# Arguments whose CPU tensors are allowed next to tensors on any device, per op packet.
_LENGTHS = frozenset({"input_lengths", "target_lengths"})
_CPU_ARGS: dict[str, frozenset[str]] = {
    **dict.fromkeys(_INDEX_OPS, frozenset({"indices"})),
    "aten::_pack_padded_sequence": frozenset({"lengths"}),
    **dict.fromkeys(
        (
            "aten::_pad_packed_sequence",
            "aten::_pack_padded_sequence_backward",
            "aten::lstm",
            "aten::gru",
            "aten::rnn_tanh",
            "aten::rnn_relu",
        ),
        frozenset({"batch_sizes"}),
    ),
    **dict.fromkeys(
        ("aten::ctc_loss", "aten::_ctc_loss", "aten::_cudnn_ctc_loss", "aten::_use_cudnn_ctc_loss"), _LENGTHS
    ),
}

# Per-op cache: (skip the op?, positional argument names, names whose CPU tensors are allowed)
_SchemaInfo = tuple[bool, tuple[str, ...], frozenset[str]]
_schema_cache: dict[Any, _SchemaInfo] = {}


def _schema_info(func: Any) -> _SchemaInfo:
    info = _schema_cache.get(func)
    if info is None:
        schema = func._schema
        name = schema.name
        names = tuple(a.name for a in schema.arguments)
        info = (name in _TRANSFER_OPS, names, _CPU_ARGS.get(name, frozenset()))
        _schema_cache[func] = info
    return info


def _describe(arg_index: int | None, name: str, item: int | None) -> str:
    label = name if item is None else f"{name}[{item}]"
    return f"arg {arg_index} {label!r}" if arg_index is not None else f"kwarg {label!r}"


class StrictDevicesMode(TorchDispatchMode):
    """The dispatch mode behind :func:`strict_devices`; use the function, it reads better in a ``with``."""

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        skip, names, cpu_ok = _schema_info(func)
        if not skip:
            first: torch.device | None = None
            mixed = False
            # Fast pass: is there more than one device at all?  (No allocation in the common case.)
            for value in (*args, *kwargs.values()):
                if isinstance(value, torch.Tensor):
                    values: Any = (value,)
                elif isinstance(value, (list, tuple)):
                    values = value
                else:
                    continue
                for t in values:
                    if isinstance(t, torch.Tensor) and not (t.device.type == "cpu" and t.dim() == 0):
                        d = t.device
                        if first is None:
                            first = d
                        elif d != first:
                            mixed = True
            if mixed:
                self._check_slow(func, names, cpu_ok, args, kwargs)
        return func(*args, **kwargs)

    @staticmethod
    def _check_slow(
        func: Any,
        names: tuple[str, ...],
        cpu_ok: frozenset[str],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> None:
        seen: dict[str, list[str]] = {}  # device -> argument descriptions, in order of appearance
        labelled = [(i, names[i] if i < len(names) else f"#{i}", v) for i, v in enumerate(args)]
        labelled += [(None, k, v) for k, v in kwargs.items()]
        for index, name, value in labelled:
            if isinstance(value, torch.Tensor):
                items: list[tuple[int | None, Any]] = [(None, value)]
            elif isinstance(value, (list, tuple)):
                items = list(enumerate(value))
            else:
                continue
            for item, t in items:
                if not isinstance(t, torch.Tensor) or (t.device.type == "cpu" and t.dim() == 0):
                    continue
                if name in cpu_ok and t.device.type == "cpu":
                    continue
                seen.setdefault(str(t.device), []).append(_describe(index, name, item))
        if len(seen) < 2:  # only CPU index tensors made the difference: allowed
            return
        parts = ", ".join(f"{dev} ({', '.join(where)})" for dev, where in seen.items())
        op = str(func)
        raise DeviceMismatchError(
            f"strict_devices: {op} got tensors on different devices: {parts}. "
            "Move them to one device first (dm.to(...) / tensor.to(device)); outside strict_devices PyTorch "
            "may not raise for this mix and silently return a tensor on one of the devices.",
            op=op,
            devices=tuple(seen),
        )


def strict_devices() -> StrictDevicesMode:
    """Context manager: raise as soon as one ATen op receives tensors on different devices.

    Example::

        with devicekit.strict_devices():
            loss = loss_fn(model(x), y)   # DeviceMismatchError at the first op that mixes devices
            loss.backward()               # backward ops are checked too

    The error is a :class:`~devicekit.errors.DeviceMismatchError` (a ``RuntimeError``) whose message starts
    with e.g. ``strict_devices: aten.mm.default got tensors on different devices: cpu (arg 0 'self'),
    meta (arg 1 'mat2')``; ``err.op`` and ``err.devices`` hold the op name and the devices.
    """
    return StrictDevicesMode()
