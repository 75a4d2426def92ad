"""Every ATen op that touches a simulated GPU: CUDA's device rules first, then the op on the CPU.

`handle` is called for each op, by `SimulateDispatchMode` (in threads where a block is open; it also sees
ops with no simulated tensor, such as ``aten.ones(device=cuda:0)``) and by
``SimulatedTensor.__torch_dispatch__`` (everywhere else). For an op whose tensors are all on one
simulated GPU (the common case) it unwraps them, runs the op on their CPU tensors and wraps the results on
that GPU. Otherwise it decides as a CUDA build would: which kernel runs (a CUDA one as soon as one
argument is on a GPU), which device check that kernel makes (`_ops.OpInfo`), and raises that check's
error (`_rules`); transfers (``_to_copy``, ``copy_``) move data between the CPU and the simulated GPUs.

A device argument ``meta:N`` means ``cuda:N``: that is what C++ code asks for when it makes a tensor from
a simulated tensor's options, and what the function mode puts in place of ``cuda:N`` (see ``tensor.py``).
A ``meta`` device without an index is a real meta device.
"""

from __future__ import annotations

from typing import Any

import torch
from torch._C import DispatchKey
from torch.utils._python_dispatch import TorchDispatchMode, is_traceable_wrapper_subclass_type

from . import _rules, _state
from ._ops import OpInfo, info
from .tensor import SimulatedTensor, pinned, wrap

__all__ = ["SimulateDispatchMode", "handle"]

_CPU = torch.device("cpu")
_NO_TORCH_FUNCTION = torch._C.DisableTorchFunction
_aten = torch.ops.aten
_SET_STORAGE = _aten.set_.source_Storage_storage_offset


class SimulateDispatchMode(TorchDispatchMode):
    """The dispatch mode a `simulate` block pushes in each thread it runs in."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # PyTorch wraps a mode's __torch_dispatch__ in torch._disable_dynamo by default: a Python frame
        # switch per op that costs more than the rest of the simulation's bookkeeping
        return False

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if foreign(types):
            return NotImplemented
        # the function mode has nothing to do below the dispatcher; without this guard every .size() or
        # .stride() the simulation calls (backward runs with the function mode on) would go through it
        with _NO_TORCH_FUNCTION():
            return handle(func, args, kwargs or {})


def foreign(types: Any) -> bool:
    """Whether an op's tensor types include another wrapper subclass (a DTensor, one that flattens into
    inner tensors). That subclass decides first, as under ``FakeTensorMode`` (which returns
    ``NotImplemented`` for subclasses it does not know): its own ops on its inner tensors come back here
    with the simulation still on, and a DTensor met with a plain tensor raises DTensor's "got mixed
    torch.Tensor and DTensor", as on a GPU. ``FakeTensor`` (DTensor's sharding propagation) is no such
    subclass: it leaves every op to the modes on the stack, so the simulation handles it as before."""
    return any(t is not SimulatedTensor and is_traceable_wrapper_subclass_type(t) for t in types)


def _sim_index(device: Any) -> int | None:
    """The simulated GPU a device argument names (``meta:N`` or ``cuda:N``), else `None`."""
    if isinstance(device, torch.device):
        kind = device.type
        if kind == "cuda" or (kind == "meta" and device.index is not None):
            index = device.index if device.index is not None else _state.current_index()
            machine = _state.active()
            if _state.forked():
                exc = _rules.bad_fork_error()
                raise exc
            if machine is not None and index >= machine.count:
                exc = _rules.invalid_ordinal_error() if machine.count else _rules.no_gpus_error()
                raise exc
            return index
    return None


def handle(func: Any, args: tuple, kwargs: dict) -> Any:
    """Run one ATen op under the simulated GPUs' rules (see the module docstring)."""
    index = -1
    simple = True
    for value in (*args, *kwargs.values()) if kwargs else args:
        cls = type(value)
        if cls is SimulatedTensor:
            if index < 0:
                index = value._dk_index
            elif value._dk_index != index:
                simple = False
        elif cls is list or cls is tuple:
            for item in value:
                if type(item) is SimulatedTensor:
                    if index < 0:
                        index = item._dk_index
                    elif item._dk_index != index:
                        simple = False
                elif isinstance(item, torch.Tensor):
                    simple = False
        elif isinstance(value, (torch.Tensor, torch.Generator, torch.device)):
            simple = False
    op = info(func)
    if simple and index >= 0 and not op.slow:
        # every tensor on one simulated GPU: the op as on that GPU, run on the CPU tensors
        try:
            if kwargs:
                out = func(*[_unwrap(a) for a in args], **{k: _unwrap(v) for k, v in kwargs.items()})
            else:
                out = func(*[_unwrap(a) for a in args])
        except RuntimeError as exc:
            cuda = _with_cuda_wording(exc)
            if cuda is not None:
                raise cuda from None
            raise
        if op.write_alias:
            return _finish(op, out, args, kwargs, index)
        return _wrap_result(out, index)
    return _slow(func, op, args, kwargs)


def _unwrap(value: Any) -> Any:
    cls = type(value)
    if cls is SimulatedTensor:
        return value._dk_inner
    if cls is list or cls is tuple:
        return cls(v._dk_inner if type(v) is SimulatedTensor else v for v in value)
    return value


def _wrap_result(out: Any, index: int) -> Any:
    if type(out) is SimulatedTensor:  # already on a simulated GPU (an op run op by op)
        return out
    if isinstance(out, torch.Tensor):
        if out.requires_grad:
            out = out.detach()
        return wrap(out, index)
    if isinstance(out, (tuple, list)):
        return type(out)(_wrap_result(o, index) for o in out)
    return out


def _device_of(value: torch.Tensor) -> str:
    return f"cuda:{value._dk_index}" if type(value) is SimulatedTensor else str(value.device)


def _tensors(op: OpInfo, args: tuple, kwargs: dict) -> list[tuple[str, torch.Tensor]]:
    """(argument name, tensor) of every tensor argument, in schema order (kwargs after positionals)."""
    found: list[tuple[str, torch.Tensor]] = []
    names = op.names
    for i, value in enumerate(args):
        name = names[i] if i < len(names) else f"#{i}"
        if isinstance(value, torch.Tensor):
            found.append((name, value))
        elif isinstance(value, (list, tuple)):
            found.extend((name, t) for t in value if isinstance(t, torch.Tensor))
    for name, value in kwargs.items():
        if isinstance(value, torch.Tensor):
            found.append((name, value))
        elif isinstance(value, (list, tuple)):
            found.extend((name, t) for t in value if isinstance(t, torch.Tensor))
    return found


def _slow(func: Any, op: OpInfo, args: tuple, kwargs: dict) -> Any:
    if op.packet.startswith("c10d::"):
        return _c10d(func, args, kwargs)
    special = _SPECIAL.get(op.key) or _SPECIAL.get(op.packet)
    if special is not None:
        return special(func, op, args, kwargs)
    return _slow_default(func, op, args, kwargs)


def _slow_default(func: Any, op: OpInfo, args: tuple, kwargs: dict) -> Any:
    tensors = _tensors(op, args, kwargs)
    sims = [t for _, t in tensors if type(t) is SimulatedTensor]
    target: int | None = None
    explicit_device = False
    if op.device_arg:
        device = kwargs.get("device")
        if device is None and "device" in op.names:
            position = op.names.index("device")
            if position < len(args):
                device = args[position]
        if device is not None:
            explicit_device = True
            target = _sim_index(device)
    if op.generator:
        _check_generator(op, args, kwargs, tensors, target, explicit_device)
    if not sims and target is None:
        return func(*args, **kwargs)  # nothing simulated: the op as on this machine
    if explicit_device and target is None:
        # a simulated tensor's *_like/new_* with a CPU (or meta) device: the result is a real tensor
        return func(*_unwrap_all(args), **_unwrap_kwargs(kwargs))
    if not op.transfer and sims:
        done = _check_devices(func, op, tensors, args, kwargs)
        if done is not _NOT_RUN:  # the op ran op by op (no CUDA kernel of its own): that is its result
            return _finish(op, done, args, kwargs, sims[0]._dk_index)
    if target is None:
        target = sims[0]._dk_index
    call_args = _unwrap_all(args)
    call_kwargs = _unwrap_kwargs(kwargs)
    if explicit_device:
        if "device" in call_kwargs or "device" not in op.names:
            call_kwargs["device"] = _CPU
        else:
            position = op.names.index("device")
            call_args = (*call_args[:position], _CPU, *call_args[position + 1 :])
        if call_kwargs.get("pin_memory"):
            call_kwargs["pin_memory"] = False
        _check_memory_for(func, call_args, call_kwargs, target)
    try:
        if op.seeded and call_kwargs.get("generator") is None:
            out = _with_device_generator(target, func, call_args, call_kwargs)
        else:
            out = func(*call_args, **call_kwargs)
    except RuntimeError as exc:
        cuda = _with_cuda_wording(exc)
        if cuda is not None:
            raise cuda from None
        raise
    return _finish(op, out, args, kwargs, target)


def _check_memory_for(func: Any, args: tuple, kwargs: dict, index: int) -> None:
    """A factory on a simulated GPU: its size, computed on ``meta`` first, must fit the profile's memory
    (so a 1 TiB ``torch.empty`` raises CUDA's out-of-memory error instead of asking the CPU for it)."""
    meta_kwargs = dict(kwargs)
    meta_kwargs["device"] = torch.device("meta")
    try:
        shaped = func(*args, **meta_kwargs)
    except Exception:  # noqa: BLE001 - the real call will raise its own error
        return
    outputs = shaped if isinstance(shaped, (tuple, list)) else (shaped,)
    nbytes = sum(t.untyped_storage().nbytes() for t in outputs if isinstance(t, torch.Tensor))
    _check_memory(index, nbytes)


def _check_memory(index: int, nbytes: int) -> None:
    machine = _state.active()
    if machine is None or nbytes == 0:
        return
    rounded = -(-nbytes // 512) * 512
    allocated = machine.allocated.get(index, 0)
    if allocated + rounded > machine.profile.total_memory:
        exc = _rules.oom_error(rounded, index, machine.profile.total_memory, allocated)
        raise exc


def _with_device_generator(index: int, func: Any, args: tuple, kwargs: dict) -> Any:
    """Run a random op with simulated GPU ``index``'s default generator in place of the CPU's, so
    ``torch.cuda.manual_seed`` governs what simulated tensors draw and the CPU's stream is untouched."""
    generators = torch.cuda.default_generators
    if index >= len(generators):
        return func(*args, **kwargs)
    device_generator = generators[index]
    cpu = torch.random.default_generator
    saved = cpu.get_state()
    cpu.set_state(device_generator.cpu_state())
    try:
        return func(*args, **kwargs)
    finally:
        device_generator.set_cpu_state(cpu.get_state())
        cpu.set_state(saved)


def _unwrap_all(args: tuple) -> tuple:
    return tuple(_unwrap(a) for a in args)


def _unwrap_kwargs(kwargs: dict) -> dict:
    return {k: _unwrap(v) for k, v in kwargs.items()}


def _finish(op: OpInfo, out: Any, args: tuple, kwargs: dict, index: int) -> Any:
    """Wrap the results on ``index``; results that are arguments written in place are those arguments."""
    if not op.write_alias:
        return _wrap_result(out, index)
    results = list(out) if isinstance(out, (tuple, list)) else [out]
    for r, position, name in op.write_alias:
        original = args[position] if position < len(args) else kwargs.get(name)
        if isinstance(original, torch.Tensor):
            if type(original) is SimulatedTensor:
                _sync_metadata(original)
            results[r] = original
    for i, value in enumerate(results):
        if (
            isinstance(value, torch.Tensor)
            and type(value) is not SimulatedTensor
            and not _is_argument(value, args, kwargs)
        ):
            results[i] = _wrap_result(value, index)
    if isinstance(out, (tuple, list)):
        return type(out)(results)
    return results[0]


def _is_argument(value: torch.Tensor, args: tuple, kwargs: dict) -> bool:
    return any(value is a for a in args) or any(value is v for v in kwargs.values())


def _sync_metadata(tensor: SimulatedTensor) -> None:
    """After an in-place op changed the CPU tensor's shape (``resize_``, ``out=``, ``unsqueeze_``), give the
    simulated tensor the same sizes, strides and offset (the Meta kernel of ``set_`` on its own storage)."""
    inner = tensor._dk_inner
    if (
        tensor.shape == inner.shape
        and tensor.stride() == inner.stride()
        and tensor.storage_offset() == inner.storage_offset()
    ):
        return
    storage = torch.Tensor.untyped_storage(tensor)
    _SET_STORAGE._op_dk(
        DispatchKey.Meta, tensor, storage, inner.storage_offset(), inner.size(), inner.stride()
    )


def _check_generator(
    op: OpInfo,
    args: tuple,
    kwargs: dict,
    tensors: list[tuple[str, torch.Tensor]],
    target: int | None,
    explicit_device: bool,
) -> None:
    """``at::check_generator``: the generator's device type must be the kernel's."""
    generator = kwargs.get("generator")
    if generator is None and "generator" in op.names:
        position = op.names.index("generator")
        if position < len(args):
            generator = args[position]
    if generator is None:
        return
    if explicit_device:
        kernel = "cuda" if target is not None else "cpu"
    elif tensors:
        kernel = "cuda" if any(type(t) is SimulatedTensor for _, t in tensors) else tensors[0][1].device.type
    else:
        kernel = torch.get_default_device().type
    found = "cuda" if _state.generator_index() is not None else generator.device.type
    if kernel != found:
        exc = _rules.generator_error(kernel, found)
        raise exc


_NOT_RUN = object()


def _check_devices(
    func: Any, op: OpInfo, tensors: list[tuple[str, torch.Tensor]], args: tuple, kwargs: dict
) -> Any:
    """Raise what the CUDA kernel of ``func`` raises for these devices (a simulated tensor is present).

    Returns ``_NOT_RUN``, or the op's result when it had to be run op by op to find out (an op with no
    CUDA kernel of its own, whose inner ops accepted the mix): it must not run a second time."""
    devices = {_device_of(t) for name, t in tensors if name not in op.cpu_ok or t.device.type != "cpu"}
    if op.packet in _INDEX_PACKETS:
        _check_indices(tensors)
    if len(devices) <= 1:
        return _NOT_RUN
    if op.checked is not None:
        _check_arguments(op, tensors)
        return _NOT_RUN
    if op.wrapper is None and op.composite and not op.cpu_scalar and func not in _decomposing:
        try:
            return _decompose(func, args, kwargs)
        except RuntimeError as exc:
            if "meta" not in str(exc):
                raise
            # a check inside a C++ composite compared devices itself and saw meta (the C++ device of a
            # simulated tensor): no CUDA text can come from it, so give TensorIterator's
    _check_like_tensor_iterator(op, tensors)
    return _NOT_RUN


def _check_indices(tensors: list[tuple[str, torch.Tensor]]) -> None:
    indexed = next((t for name, t in tensors if name == "self"), None)
    if indexed is None:
        return
    where = _device_of(indexed)
    for name, t in tensors:
        if name == "indices" and t.device.type != "cpu" and _device_of(t) != where:
            exc = _rules.indices_error(where)
            raise exc


def _check_arguments(op: OpInfo, tensors: list[tuple[str, torch.Tensor]]) -> None:
    """``check_and_update_common_device``: the first checked tensor's device against each next one."""
    by_name: dict[str, list[torch.Tensor]] = {}
    for name, t in tensors:
        by_name.setdefault(name, []).append(t)
    common: str | None = None
    for name in op.checked or ():
        for t in by_name.get(name, ()):
            where = _device_of(t)
            if common is None:
                common = where
            elif where != common:
                exc = _rules.argument_error(name, where, common, op.wrapper or "")
                raise exc


def _check_like_tensor_iterator(op: OpInfo, tensors: list[tuple[str, torch.Tensor]]) -> None:
    """TensorIterator's ``compute_types``: outputs, then inputs; the first non-CPU device is the common
    one; at most one 0-dim CPU input may join it (any number for ``where``)."""
    outputs = {name for _, _, name in op.write_alias} or {"out"}
    ordered = [(n, t, True) for n, t in tensors if n in outputs]
    ordered += [(n, t, False) for n, t in tensors if n not in outputs or n == "self"]
    common: str | None = None
    for _, t, _ in ordered:
        where = _device_of(t)
        if not where.startswith("cpu"):
            common = where
            break
    if common is None:
        return
    scalars = 0
    for name, t, is_output in ordered:
        where = _device_of(t)
        if name in op.cpu_ok and where == "cpu":
            continue
        if op.cpu_scalar and not is_output and where == "cpu" and t.dim() == 0:
            scalars += 1
            if scalars > 1 and not op.any_scalars:
                exc = _rules.too_many_scalars_error()
                raise exc
            continue
        if where != common:
            exc = _rules.generic_error(common, where)
            raise exc


def _decompose(func: Any, args: tuple, kwargs: dict) -> Any:
    """An op with no CUDA kernel of its own runs its composite kernel on CUDA: run it op by op on the
    simulated tensors so the ops inside make their own checks (an error propagates; on success the
    result is the op's result).

    The C++ composite runs first: it is the code CUDA runs, so its inner ops are CUDA's. PyTorch's Python
    decomposition (``torch._decomp``) is written for tracing and may call other ops: ``embedding``'s
    indexes ``weight[indices]`` for indices of two or more dimensions, which accepts CPU indices, where
    ``embedding_symint`` (``aten/src/ATen/native/Embedding.cpp``, v2.13.0) calls ``index_select`` on the
    reshaped indices, which does not. It is used only when the C++ composite compared devices itself and
    saw ``meta`` (the C++ device of a simulated tensor), so no CUDA text could come from it."""
    from torch._decomp import decomposition_table

    _decomposing.add(func)  # a decomposition that comes back to the same op gets the generic check
    try:
        with SimulateDispatchMode(), torch.no_grad():
            try:
                return func._op_dk(DispatchKey.CompositeExplicitAutograd, *args, **kwargs)
            except RuntimeError as exc:
                python = decomposition_table.get(func)
                if python is None or "meta" not in str(exc):
                    raise
                return python(*args, **kwargs)
    finally:
        _decomposing.discard(func)


_decomposing: set[Any] = set()


_INDEX_PACKETS = frozenset({"aten::index", "aten::index_put", "aten::index_put_", "aten::_index_put_impl_"})


# --- ops with a rule of their own ------------------------------------------------------------------


def _to_copy(func: Any, op: OpInfo, args: tuple, kwargs: dict) -> Any:
    source = args[0]
    device = kwargs.get("device")
    target = _sim_index(device) if device is not None else None
    call = dict(kwargs)
    if call.get("pin_memory"):
        call["pin_memory"] = False
    inner = source._dk_inner if type(source) is SimulatedTensor else source
    if target is not None:
        dtype = call.get("dtype") or inner.dtype
        _check_memory(target, inner.numel() * torch.empty((), dtype=dtype, device="meta").element_size())
        call["device"] = _CPU
        out = func(inner, **call)
        if out is inner:
            out = out.clone()
        return wrap(out.detach() if out.requires_grad else out, target)
    if device is None and type(source) is SimulatedTensor:
        out = func(inner, **call)
        if out is inner:
            out = out.clone()
        return wrap(out.detach() if out.requires_grad else out, source._dk_index)
    out = func(inner, **call)
    if out is inner and type(source) is SimulatedTensor:
        out = out.clone()
    return out


def _copy_(func: Any, op: OpInfo, args: tuple, kwargs: dict) -> Any:
    dst = args[0]
    func(*_unwrap_all(args), **_unwrap_kwargs(kwargs))
    if type(dst) is SimulatedTensor:
        _sync_metadata(dst)
    return dst


def _set_(func: Any, op: OpInfo, args: tuple, kwargs: dict) -> Any:
    dst = args[0]
    if type(dst) is not SimulatedTensor:
        sources = [a for a in args[1:] if type(a) is SimulatedTensor]
        if sources:
            exc = _rules.generic_error(_device_of(sources[0]), str(dst.device))
            raise exc
        return func(*args, **kwargs)
    func(*_unwrap_all(args), **_unwrap_kwargs(kwargs))
    _sync_metadata(dst)
    return dst


def _pack_padded(func: Any, op: OpInfo, args: tuple, kwargs: dict) -> Any:
    lengths = args[1] if len(args) > 1 else kwargs.get("lengths")
    if type(lengths) is SimulatedTensor:
        exc = _rules.lengths_error(lengths)
        raise exc
    tensors = _tensors(op, args, kwargs)
    sims = [t for _, t in tensors if type(t) is SimulatedTensor]
    out = func(*_unwrap_all(args), **_unwrap_kwargs(kwargs))
    if not sims:
        return out
    data, batch_sizes = out  # batch_sizes stays a CPU tensor, as on CUDA
    return wrap(data, sims[0]._dk_index), batch_sizes


def _pin(func: Any, op: OpInfo, args: tuple, kwargs: dict) -> Any:
    source = args[0]
    if type(source) is SimulatedTensor:
        exc = _rules.pin_error(source.type())
        raise exc
    out = source.clone()
    pinned.add(out.untyped_storage())
    return out


def _is_pinned(func: Any, op: OpInfo, args: tuple, kwargs: dict) -> Any:
    source = args[0]
    if type(source) is SimulatedTensor or source.device.type != "cpu":
        return False
    return source.untyped_storage() in pinned


def _nothing(func: Any, op: OpInfo, args: tuple, kwargs: dict) -> Any:
    return None


def _to_cpu_scalar(func: Any, op: OpInfo, args: tuple, kwargs: dict) -> Any:
    return func(*_unwrap_all(args), **_unwrap_kwargs(kwargs))


def _convolution(func: Any, op: OpInfo, args: tuple, kwargs: dict) -> Any:
    """``aten.convolution``: CUDA picks a backend from the input (``_select_conv_backend`` in
    ``aten/src/ATen/native/Convolution.cpp``) and each backend checks devices its own way. A simulated
    input with cuDNN enabled goes to cuDNN, which first compares the input's type with the weight's and
    the bias's (``check_input_same_type_as_parameters``); otherwise the slow kernels run, whose generated
    wrapper names the first argument on another device (``wrapper_CUDA___slow_conv2d_forward``)."""
    names = ("input", "weight", "bias")
    given = dict(zip(names, args[:3], strict=False))
    tensors = [(n, t) for n, t in given.items() if isinstance(t, torch.Tensor)]
    if any(type(t) is SimulatedTensor for _, t in tensors):
        _check_convolution(given, args)  # also with one device: cuDNN compares dtypes in the same words
    return _slow_default(func, op, args, kwargs)


def _type_name(t: torch.Tensor) -> str:
    return t.type()


def _check_convolution(given: dict, args: tuple) -> None:
    data, weight, bias = given.get("input"), given.get("weight"), given.get("bias")
    transposed = bool(args[6]) if len(args) > 6 else False
    dilation = args[5] if len(args) > 5 else (1,)
    if type(data) is SimulatedTensor and torch.backends.cudnn.enabled:
        for name, other in (("weight", weight), ("bias", bias)):
            if isinstance(other, torch.Tensor) and _type_name(data) != _type_name(other):
                exc = _rules.conv_type_error(_type_name(data), name, _type_name(other))
                raise exc
        kernel = "cudnn_convolution_transpose" if transposed else "cudnn_convolution"
        tensors = [("self", data), ("weight", weight)]
    else:
        dims = weight.dim() - 2 if isinstance(weight, torch.Tensor) else 2
        dilated = any(d != 1 for d in dilation)
        if transposed:
            kernel = "slow_conv_transpose3d" if dims == 3 else "slow_conv_transpose2d"
        elif dilated:
            kernel = "slow_conv_dilated3d" if dims == 3 else "slow_conv_dilated2d"
        else:
            kernel = "slow_conv3d_forward" if dims == 3 else "_slow_conv2d_forward"
        tensors = [("self", data), ("weight", weight), ("bias", bias)]
    if len({_device_of(t) for _, t in tensors if isinstance(t, torch.Tensor)}) <= 1:
        return
    entry = _tables_entry(kernel)
    if entry is None:
        return
    wrapper, checked = entry
    fake = OpInfo(
        key=kernel,
        packet=f"aten::{kernel}",
        names=tuple(checked),
        transfer=False,
        cpu_ok=frozenset(),
        cpu_scalar=False,
        any_scalars=False,
        wrapper=wrapper,
        checked=tuple(checked),
        composite=False,
        device_arg=False,
        generator=False,
        write_alias=(),
    )
    _check_arguments(fake, [(n, t) for n, t in tensors if isinstance(t, torch.Tensor)])
    if isinstance(bias, torch.Tensor) and _device_of(bias) != _device_of(data):
        exc = _rules.generic_error(_device_of(data), _device_of(bias))
        raise exc


def _masked_fill(func: Any, op: OpInfo, args: tuple, kwargs: dict) -> Any:
    """``masked_fill``/``masked_fill_``: CUDA's kernel (``masked_fill__cuda``, which the out-of-place
    composite also reaches after cloning ``self``) is no TensorIterator check: it compares ``self``'s
    device with the mask's itself, so a 0-dim CPU mask is refused too; a value tensor may be a 0-dim CPU
    tensor (it is read with ``item()``), but ``self`` must not be on the CPU."""
    names = ("self", "mask", "value")
    given = dict(zip(names, args, strict=False))
    given.update({k: v for k, v in kwargs.items() if k in names})
    data, mask, value = given.get("self"), given.get("mask"), given.get("value")
    tensors = [t for t in (data, mask, value) if isinstance(t, torch.Tensor)]
    if not any(type(t) is SimulatedTensor for t in tensors):
        return func(*args, **kwargs)
    if (
        type(data) is not SimulatedTensor
        and isinstance(value, torch.Tensor)
        and type(mask) is not SimulatedTensor
    ):
        exc = _rules.masked_fill_cpu_self_error()  # only the value is on a GPU: the Tensor overload's check
        raise exc
    if (
        isinstance(data, torch.Tensor)
        and isinstance(mask, torch.Tensor)
        and _device_of(data) != _device_of(mask)
    ):
        exc = _rules.mask_device_error(_device_of(mask), _device_of(data))
        raise exc
    out = func(*_unwrap_all(args), **_unwrap_kwargs(kwargs))
    return _finish(op, out, args, kwargs, data._dk_index)


def _deep(value: Any, leaf: Any) -> Any:
    """``value`` with ``leaf`` applied to every tensor in it, however deep its lists and tuples nest."""
    if isinstance(value, torch.Tensor):
        return leaf(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_deep(v, leaf) for v in value)
    return value


def _c10d(func: Any, args: tuple, kwargs: dict) -> Any:
    """A ``torch.distributed`` collective (``c10d::allreduce_``, ``c10d::allgather_`` ... whose tensors come
    in lists of lists): on a simulated NCCL group (`_distributed`) every tensor must be on a simulated GPU
    (else NCCL's "No backend type associated with device type cpu"); the simulated tensors' CPU data goes
    to the gloo group underneath, and the tensors it returns are wrapped back on their GPU."""
    from . import _distributed

    found: list[torch.Tensor] = []
    _deep((args, kwargs), found.append)
    sims = [t for t in found if type(t) is SimulatedTensor]
    if any(_distributed.is_simulated_nccl(a) for a in args if isinstance(a, torch.ScriptObject)):
        plain = next((t for t in found if type(t) is not SimulatedTensor), None)
        if plain is not None:
            exc = _rules.no_backend_error(plain.device.type)
            raise exc
    if not sims:
        return func(*args, **kwargs)
    index = sims[0]._dk_index
    out = func(*_deep(args, _unwrap), **_deep(kwargs, _unwrap))
    return _deep(out, lambda t: t if type(t) is SimulatedTensor else wrap(t, index))


def _tables_entry(key: str) -> tuple[str, list[str]] | None:
    from ._ops import tables

    entry = tables()["cuda_ops"].get(key)
    return (entry[0], entry[1] or []) if entry else None


# CPU kernels that check the same condition as the CUDA kernel in other words: the CUDA text is raised
# (aten/src/ATen/native/cuda/Blas.cpp: "expected mat1 and mat2 to have the same dtype, but got: ...";
# recorded: results/cuda-messages.json, autocast-output-meets-fp32).
_CUDA_WORDING = (
    ("expected m1 and m2 to have the same dtype", "expected mat1 and mat2 to have the same dtype"),
)


def _with_cuda_wording(exc: RuntimeError) -> BaseException | None:
    text = str(exc)
    for cpu_text, cuda_text in _CUDA_WORDING:
        if text.startswith(cpu_text):
            return _rules.note(RuntimeError(cuda_text + text[len(cpu_text) :]))
    return None


_SPECIAL = {
    "convolution": _convolution,
    "aten::masked_fill": _masked_fill,
    "aten::masked_fill_": _masked_fill,
    "_to_copy": _to_copy,
    "copy_": _copy_,
    "aten::set_": _set_,
    "_pack_padded_sequence": _pack_padded,
    "_pin_memory": _pin,
    "pin_memory": _pin,
    "is_pinned": _is_pinned,
    "record_stream": _nothing,
    "_local_scalar_dense": _to_cpu_scalar,
    "is_same_size": _to_cpu_scalar,
}
SPECIAL_KEYS = frozenset(_SPECIAL)
