"""``strict_devices()``: raise at the first ATen op that mixes tensors on different devices.

Why: PyTorch checks devices per kernel, and not everywhere.  On CPU runners (where this course uses the
``meta`` device) ``torch.mm``, ``@``, ``F.linear`` without bias, ``F.conv2d``, ``F.embedding``, in-place ops
such as ``meta_t.add_(cpu_t)``, ``index_select`` with a 0-dim CPU index and ``torch.clamp`` with a 0-dim
CPU bound accept a ``meta`` tensor together with a ``cpu`` tensor and silently return a tensor on one of
the two devices, so the bug surfaces (if at all) far away.  Inside ``with strict_devices():`` every ATen
op is inspected before it runs, through a `TorchDispatchMode`, and an op that receives tensors on more
than one device raises `DeviceMismatchError` (a `RuntimeError`, in the
learner's language) naming the op, the devices and the schema names of the arguments.

What stays allowed, as on CUDA:

* one 0-dim CPU tensor (``torch.tensor(2.0)``) next to tensors on another device, only in the ops whose
  device check is TensorIterator's: those marked ``device_check: NoCheck   # TensorIterator`` (or a
  comment saying they delegate to TensorIterator: ``index_put``) in PyTorch's
  ``aten/src/ATen/native/native_functions.yaml`` (element-wise, binary, comparison ops such as ``add``,
  ``mul``, ``eq``, ``where``), read from the copy installed with torch (``torchgen``).  Every
  other op gets a device check generated from that file, which has no 0-dim exception: ``index_select(x,
  0, torch.tensor(1))`` and ``clamp(x, min=torch.tensor(0.5))`` raise on CUDA ("... (when checking
  argument in method wrapper_CUDA__index_select)"), and raise here.  TensorIterator allows one such
  tensor per op ("Trying to pass too many CPU scalars to non-CPU kernel!"), and so does this mode,
  except ``torch.where``, which moves each 0-dim CPU operand to the device itself
  (``aten/src/ATen/native/TensorCompare.cpp``, ``where_self_out``).
  Sources, torch v2.13.0: ``aten/src/ATen/TensorIterator.cpp`` (``compute_types``, ``allow_cpu_scalars``)
  and ``aten/src/ATen/native/native_functions.yaml``;
* ops whose job is to move data between devices: ``aten._to_copy`` (what ``t.to(device)`` and
  ``module.to(device)`` dispatch to), ``aten.copy_`` (``dst.copy_(src)``, ``dst[...] = src``), ``aten.to``,
  ``aten._copy_from`` and friends;
* CPU index tensors in indexing ops (``x[idx]`` with ``idx`` on the CPU and ``x`` on an accelerator);
* the CPU tensors PyTorch requires or accepts on the CPU: ``lengths`` of ``pack_padded_sequence``
  (``aten::_pack_padded_sequence`` raises unless it is a CPU int64 tensor), ``batch_sizes`` of packed RNN
  ops, ``input_lengths``/``target_lengths`` of ``ctc_loss`` (the CUDA kernels copy them to the CPU).

A ``generator=`` argument is checked too: a CPU `torch.Generator` for a result on another device raises
(CUDA: "Expected a 'cuda' device type for generator but found 'cpu'").

What it still misses or gets wrong:

* it sees ATen ops only: Python-side checks, custom C++/Triton kernels called outside the dispatcher and
  ops that ``torch.compile`` fuses are not inspected, and code outside the ``with`` block is never checked;
* tensors inside arguments other than tensors and lists/tuples of tensors (none in ATen schemas today)
  are not looked at;
* the 0-dim rule is by op, not by kernel: a TensorIterator op whose kernel does not allow CPU scalars
  (they are few; unary ops have a single input anyway) lets one through here; with no ``torchgen``
  installed, the op's ``torch.Tag.pointwise`` tag decides instead (a looser rule: ``clamp.Tensor`` is
  pointwise but checks devices on CUDA);
* a ``generator=`` is compared with the result's device type only (``device=`` argument, else the first
  tensor argument, else the default device), as CUDA's check does; the index is not compared.

The mode only exists inside the ``with`` block: nothing is patched globally and code outside the block pays
nothing.  Blocks nest (each level checks), and leaving a block by an exception restores the previous state.
Expect a slowdown inside the block (a Python call per op): use it to debug, not to train.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .device_rules import (
    ANY_CPU_SCALARS,
    CPU_ARGS,
    INDEX_OPS,
    TRANSFER_OPS,
    allows_cpu_scalar,
    schema_info,
    tensor_iterator_ops,
)
from .errors import DeviceMismatchError
from .messages import Message

__all__ = ["StrictDevicesMode", "allows_cpu_scalar", "strict_devices", "tensor_iterator_ops"]

# The device model strict mode shares with devicekit.simulate (src/devicekit/device_rules.py).
_TRANSFER_OPS = TRANSFER_OPS
_INDEX_OPS = INDEX_OPS
_CPU_ARGS = CPU_ARGS
_ANY_CPU_SCALARS = ANY_CPU_SCALARS
_schema_info = schema_info


def _describe(arg_index: int | None, name: str, item: int | None) -> Message:
    label = repr(name if item is None else f"{name}[{item}]")
    if arg_index is not None:
        return Message(f"arg {arg_index} {label}", f"第 {arg_index} 个参数 {label}")
    return Message(f"kwarg {label}", f"关键字参数 {label}")


def _is_cpu_scalar(t: torch.Tensor) -> bool:
    return t.device.type == "cpu" and t.dim() == 0


class StrictDevicesMode(TorchDispatchMode):
    """The dispatch mode behind `strict_devices`; use the function, it reads
    better in a ``with``."""

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        skip, names, cpu_ok = _schema_info(func)
        if not skip:
            first: torch.device | None = None
            suspect = False
            # Fast pass: more than one device, or a generator?  (No allocation in the common case.)
            for value in (*args, *kwargs.values()):
                if isinstance(value, torch.Tensor):
                    values: Any = (value,)
                elif isinstance(value, (list, tuple)):
                    values = value
                elif isinstance(value, torch.Generator):
                    suspect = True
                    continue
                else:
                    continue
                for t in values:
                    if isinstance(t, torch.Tensor):
                        d = t.device
                        if first is None:
                            first = d
                        elif d != first:
                            suspect = True
            if suspect:
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
        seen: dict[str, list[Message]] = {}  # device -> argument descriptions, in order of appearance
        scalars: list[Message] = []  # 0-dim CPU tensors: allowed or not, decided below
        generators: list[tuple[Message, torch.Generator]] = []
        target: torch.device | None = None  # the device= argument of a factory op
        labelled = [(i, names[i] if i < len(names) else f"#{i}", v) for i, v in enumerate(args)]
        labelled += [(None, k, v) for k, v in kwargs.items()]
        for index, name, value in labelled:
            if isinstance(value, torch.Tensor):
                items: list[tuple[int | None, Any]] = [(None, value)]
            elif isinstance(value, (list, tuple)):
                items = list(enumerate(value))
            elif isinstance(value, torch.Generator):
                generators.append((_describe(index, name, None), value))
                continue
            else:
                if name == "device" and isinstance(value, torch.device):
                    target = value
                continue
            for item, t in items:
                if not isinstance(t, torch.Tensor):
                    continue
                if name in cpu_ok and t.device.type == "cpu":
                    continue
                if _is_cpu_scalar(t):
                    scalars.append(_describe(index, name, item))
                    continue
                seen.setdefault(str(t.device), []).append(_describe(index, name, item))
        op = str(func)
        rejected: str | None = None
        if scalars and set(seen) - {"cpu"}:
            if not allows_cpu_scalar(func):
                rejected = "not_tensor_iterator"
            elif len(scalars) > 1 and func._schema.name not in _ANY_CPU_SCALARS:
                rejected = "too_many"
            if rejected:
                seen.setdefault("cpu", []).extend(scalars)
        if len(seen) >= 2:
            raise _mismatch(op, seen, rejected)
        if generators:
            if target is None:
                target = torch.device(next(iter(seen))) if seen else _default_device()
            for where, gen in generators:
                if gen.device.type != target.type:
                    raise _generator_mismatch(op, where, gen.device, target)


def _default_device() -> torch.device:
    get = getattr(torch, "get_default_device", None)  # torch >= 2.3
    return get() if get is not None else torch.device("cpu")


def _mismatch(op: str, seen: dict[str, list[Message]], rejected_scalar: str | None) -> DeviceMismatchError:
    parts_en = ", ".join(f"{dev} ({', '.join(w.en for w in where)})" for dev, where in seen.items())
    parts_zh = "、".join(f"{dev}（{'、'.join(w.zh for w in where)}）" for dev, where in seen.items())
    en = (
        f"strict_devices: {op} got tensors on different devices: {parts_en}. "
        "Move them to one device first (dm.to(...) / tensor.to(device)); outside strict_devices CUDA raises "
        "for most such mixes, but some devices (meta) let them through and return a tensor on one of them."
    )
    zh = (
        f"strict_devices：{op} 收到了不同设备上的张量：{parts_zh}。请先把它们移到同一个设备上"
        "（dm.to(...) 或 tensor.to(device)）；不在 strict_devices 里时，CUDA 对大多数这类混用会报错，"
        "但有些设备（meta）会放过它们，悄悄返回其中一个设备上的张量。"
    )
    if rejected_scalar == "too_many":
        en += (
            f" {op} lets one 0-dim CPU tensor join tensors on another device, not several "
            '(PyTorch: "Trying to pass too many CPU scalars to non-CPU kernel!").'
        )
        zh += (
            f"{op} 只允许一个 0 维 CPU 张量和其他设备上的张量一起用，不能有多个"
            '（PyTorch 会报 "Trying to pass too many CPU scalars to non-CPU kernel!"）。'
        )
    elif rejected_scalar:
        en += (
            f" A 0-dim CPU tensor may join tensors on another device only in element-wise (TensorIterator) "
            f"ops, one per op; {op} checks every argument's device, as it does on CUDA."
        )
        zh += (
            f"0 维 CPU 张量只有在逐元素（TensorIterator）运算里才能和其他设备上的张量一起用，每个运算最多"
            f"一个；{op} 会检查每个参数的设备，在 CUDA 上也一样。"
        )
    return DeviceMismatchError(Message(en, zh), op=op, devices=tuple(seen))


def _generator_mismatch(
    op: str, where: Message, gen_device: torch.device, target: torch.device
) -> DeviceMismatchError:
    cuda_says = "Expected a 'cuda' device type for generator but found 'cpu'"
    en = (
        f"strict_devices: {op} got a generator on {gen_device} ({where.en}) for a result on {target}. "
        f'A generator must be on the device it draws numbers for (CUDA raises "{cuda_says}"): create it '
        f"there, torch.Generator(device=...), or leave generator= out."
    )
    zh = (
        f"strict_devices：{op} 的随机数生成器在 {gen_device} 上（{where.zh}），结果却在 {target} 上。"
        f'生成器必须和它抽样的设备一致（CUDA 会报 "{cuda_says}"）：在那个设备上创建它，'
        "torch.Generator(device=...)，或者不传 generator=。"
    )
    return DeviceMismatchError(
        Message(en, zh), op=op, devices=tuple(dict.fromkeys((str(gen_device), str(target))))
    )


def strict_devices() -> StrictDevicesMode:
    """Context manager: raise as soon as one ATen op receives tensors on different devices.

    Example::

        with devicekit.strict_devices():
            loss = loss_fn(model(x), y)   # DeviceMismatchError at the first op that mixes devices
            loss.backward()               # backward ops are checked too

    The error is a `DeviceMismatchError` (a `RuntimeError`) whose English
    message starts with e.g. ``strict_devices: aten.mm.default got tensors on different devices: cpu (arg 0
    'self'), meta (arg 1 'mat2')``; ``err.op`` and ``err.devices`` hold the op name and the devices,
    ``err.en`` and ``err.zh`` the message in each language.  See the module docstring for what is allowed
    and what the mode does not see.
    """
    return StrictDevicesMode()
