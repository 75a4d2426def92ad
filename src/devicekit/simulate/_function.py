"""The simulation's `TorchFunctionMode`: what must happen before a call reaches C++.

* ``device="cuda"`` / ``"cuda:N"`` / ``torch.device("cuda", N)`` / an int in ``.to(N)`` / ``.cuda(N)``
  becomes ``meta:N`` (``N`` the current device when no index is given; an index past the simulated count
  raises CUDA's "invalid device ordinal"): C++ then never asks for a CUDA device, so PyTorch's one-way
  lazy CUDA initialisation (``torch/csrc/utils/device_lazy_init.cpp``) never runs, and the dispatch mode
  makes a simulated tensor from ``meta:N``.
* ``pin_memory()`` / ``is_pinned()`` answer as on a CUDA machine (a CPU build cannot pin).
* the RNN functions check their input, hidden states and parameters as PyTorch's ``check_attributes``
  does (``aten/src/ATen/native/RNN.cpp``), with the CUDA devices in the text.
* ``torch.autocast("cuda")``: CUDA's cast policy is applied here (`_amp`), above autograd, as CUDA's
  ``AutocastCUDA`` kernels are.

The mode is thread-local, as every torch function mode is: a `simulate` block pushes it in the thread that
opens the block and in the threads started inside it.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.utils._device as _device
from torch.overrides import TorchFunctionMode

from . import _amp, _legacy, _rules, _state
from .tensor import SimulatedTensor, pinned

__all__ = ["SimulateFunctionMode", "resolve"]

_Tensor = torch.Tensor
_META = [torch.device("meta", i) for i in range(64)]
_RNN = frozenset({"lstm", "gru", "rnn_tanh", "rnn_relu"})


def resolve(device: Any) -> Any:
    """``meta:N`` for a CUDA device argument (validated against the simulated count), else ``device``."""
    if isinstance(device, str):
        if not device.startswith("cuda"):
            return device
        device = torch.device(device)
    elif isinstance(device, int) and not isinstance(device, bool):
        device = torch.device("cuda", device)
    if not isinstance(device, torch.device) or device.type != "cuda":
        return device
    machine = _state.active()
    if _state.forked():
        exc = _rules.bad_fork_error()
        raise exc
    index = _state.current_index() if device.index is None else device.index
    if machine is None or index >= machine.count:
        exc = (
            _rules.no_gpus_error()
            if machine is None or machine.count == 0
            else _rules.invalid_ordinal_error()
        )
        raise exc
    return _META[index]


class SimulateFunctionMode(TorchFunctionMode):
    """The function mode a `simulate` block pushes in each thread it runs in."""

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        special = _SPECIAL.get(func)
        if special is not None:
            return special(func, args, kwargs)
        device = kwargs.get("device")
        if device is None:
            device = _default_cuda_device(func)
        if device is not None:
            kwargs = dict(kwargs)
            kwargs["device"] = resolve(device)
        name = getattr(func, "__name__", "")
        if name in _RNN:
            _check_rnn(args)
        generator = kwargs.get("generator")
        try:
            if generator is not None and hasattr(generator, "_dk_index"):
                # the dispatcher hands __torch_dispatch__ a new Python object for a generator: remember
                # here that this call's generator belongs to a simulated GPU
                with _state.simulated_generator(generator._dk_index):
                    return _call(func, name, args, kwargs)
            return _call(func, name, args, kwargs)
        except (RuntimeError, ValueError, IndexError, TypeError) as exc:
            renamed = _rules.with_cuda_names(exc)
            if renamed is None:
                raise
            renamed = renamed.with_traceback(exc.__traceback__)
            raise renamed from None


def _call(func: Any, name: str, args: tuple, kwargs: dict) -> Any:
    if _amp.enabled():
        return _amp.call(func, name, args, kwargs)
    return func(*args, **kwargs)


def _default_cuda_device(func: Any) -> Any:
    """The default device for a factory under ``torch.set_default_device("cuda")`` or ``with
    torch.device("cuda"):``. PyTorch's ``DeviceContext`` mode sits at the bottom of the mode stack
    (``torch/utils/_device.py``), so it adds ``device="cuda"`` after this mode has run; it is added here
    instead, so C++ never sees ``cuda``."""
    if func not in _device._device_constructors():
        return None
    for mode in torch.overrides._get_current_function_mode_stack():
        if isinstance(mode, _device.DeviceContext) and mode.device.type == "cuda":
            return mode.device
    return None


def _to(func: Any, args: tuple, kwargs: dict) -> Any:
    self, rest = args[0], args[1:]
    if rest and not isinstance(rest[0], (torch.dtype, _Tensor)):
        rest = (resolve(rest[0]), *rest[1:])
    if "device" in kwargs:
        kwargs = dict(kwargs)
        kwargs["device"] = resolve(kwargs["device"])
    return func(self, *rest, **kwargs)


def _cuda(func: Any, args: tuple, kwargs: dict) -> Any:
    self = args[0]
    device = args[1] if len(args) > 1 else kwargs.get("device")
    target = resolve(torch.device("cuda") if device is None else _as_cuda(device))
    options = {k: v for k, v in kwargs.items() if k in ("non_blocking", "memory_format")}
    if len(args) > 2:
        options["non_blocking"] = args[2]
    return _Tensor.to(self, target, **options)


def _as_cuda(device: Any) -> Any:
    if isinstance(device, int) and not isinstance(device, bool):
        return torch.device("cuda", device)
    return device


def _pin_memory(func: Any, args: tuple, kwargs: dict) -> Any:
    self = args[0]
    if type(self) is SimulatedTensor or self.device.type != "cpu" or self.layout != torch.strided:
        exc = _rules.pin_error(self.type())
        raise exc
    if self.untyped_storage() in pinned:
        return self
    out = self.clone()
    pinned.add(out.untyped_storage())
    return out


def _is_pinned(func: Any, args: tuple, kwargs: dict) -> Any:
    self = args[0]
    if type(self) is SimulatedTensor or self.device.type != "cpu" or self.layout != torch.strided:
        return False
    return self.untyped_storage() in pinned


def _from_data(func: Any, args: tuple, kwargs: dict) -> Any:
    """``torch.tensor(data, device="cuda")`` and its kin: C++ builds these on the target device with every
    mode excluded (a meta target would keep no values), so build on the CPU and move the result.

    ``t.new_tensor(data)`` takes ``t``'s device and dtype unless given (``new_tensor`` in
    ``torch/csrc/utils/tensor_new.cpp``), so a simulated ``t`` means a simulated target. Simulated tensors
    inside a list or tuple (``torch.tensor([x.sum(), x.mean()])``) are read by C++ element by element with
    every mode excluded (``item()`` of a meta tensor fails): their CPU values stand in for them, as CUDA
    copies each element's value to the host.
    """
    if len(args) > 1 and isinstance(args[1], (list, tuple)):
        args = (args[0], _host_values(args[1]), *args[2:])
    elif args and isinstance(args[0], (list, tuple)):
        args = (_host_values(args[0]), *args[1:])
    device = kwargs.get("device")
    if device is None and func is _Tensor.new_tensor and args and type(args[0]) is SimulatedTensor:
        kwargs = dict(kwargs)
        device = kwargs["device"] = args[0].device
        if kwargs.get("dtype") is None:
            kwargs["dtype"] = args[0].dtype
    if device is None:
        device = _default_cuda_device(func)  # torch.tensor(data) under a default device "cuda"
    if device is None:
        return func(*args, **kwargs)
    target = resolve(device)
    if not (isinstance(target, torch.device) and target.type == "meta" and target.index is not None):
        return func(*args, **kwargs)
    call = dict(kwargs)
    call["device"] = "cpu"
    requires_grad = bool(call.pop("requires_grad", False))
    call.pop("pin_memory", None)
    out = func(*args, **call).to(target)
    if requires_grad:
        out.requires_grad_(True)
    return out


def _host_values(data: Any) -> Any:
    """``data`` (nested lists and tuples) with each simulated tensor replaced by its CPU tensor."""
    if type(data) is SimulatedTensor:
        return data._dk_inner
    if isinstance(data, (list, tuple)):
        return type(data)(_host_values(item) for item in data) if type(data) in (list, tuple) else data
    return data


def _check_rnn(args: tuple) -> None:
    """``check_attributes`` of ``aten/src/ATen/native/RNN.cpp``: hidden states first, then parameters."""
    if len(args) < 3 or not isinstance(args[0], _Tensor):
        return
    data = args[0]
    if len(args) > 3 and isinstance(args[3], (list, tuple)):  # packed: data, batch_sizes, hx, params
        hidden, params = args[2], args[3]
    else:
        hidden, params = args[1], args[2]
    hiddens = list(hidden) if isinstance(hidden, (list, tuple)) else [hidden]
    where = _device_name(data)
    for kind, group in (("hidden", hiddens), ("parameter", params)):
        if not isinstance(group, (list, tuple)):
            continue
        for t in group:
            if isinstance(t, _Tensor) and _device_name(t) != where:
                exc = _rules.rnn_error(kind, where, _device_name(t))
                raise exc


def _device_name(t: _Tensor) -> str:
    return str(t.device)


def _device_object(func: Any, args: tuple, kwargs: dict) -> Any:
    """``torch.device(1)``: an index alone names a device of the current accelerator, which a CUDA build
    answers with ``cuda:1`` (``c10/core/Device.cpp``'s parser gets the type from the accelerator, which
    this CPU build does not have). Everything else is PyTorch's own constructor."""
    if len(args) == 1 and not kwargs and isinstance(args[0], int) and not isinstance(args[0], bool):
        return func("cuda", args[0])
    return func(*args, **kwargs)


_SPECIAL = {
    torch.device: _device_object,
    torch.tensor: _from_data,
    torch.as_tensor: _from_data,
    torch.asarray: _from_data,
    _Tensor.new_tensor: _from_data,
    _Tensor.to: _to,
    _Tensor.cuda: _cuda,
    _Tensor.pin_memory: _pin_memory,
    _Tensor.is_pinned: _is_pinned,
    _Tensor.type: _legacy.retype,
}
