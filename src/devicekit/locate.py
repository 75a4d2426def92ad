"""``locate_mismatch(model, *args, **kwargs)``: which module is the device mix in?

Why: a device error from deep inside a model names an ATen op, not your layer.  ``locate_mismatch`` runs
ONE forward pass with temporary hooks on every submodule and answers with the qualified module name, as in
``model.named_modules()`` (e.g. ``"encoder.layers.1.attn"``; ``""`` is the model itself).

How it decides, for each module call:

* a forward pre-hook compares the module's inputs with the module's *own* tensors (its direct parameters,
  buffers and plain tensor attributes, not those of its children).  Inputs on another device, or own
  tensors split over several devices, are a mismatch even when PyTorch would not raise: ``meta @ cpu``
  silently returns garbage.  devicekit then stops the forward pass at once, by raising a private exception
  from the hook and catching it, so nothing downstream runs on garbage; the report is for that module.
  A module without own tensors (``nn.ReLU``, a container) is never blamed for tensors it just passes on.
* if the forward raises a device error (PyTorch's ``Expected all tensors to be on the same device``,
  ``Tensor on device meta is not on the expected device cpu!`` ...), the report names the innermost module
  whose forward was running when the exception left it: a stack of active modules is kept by the pre-hooks
  and by forward hooks registered with ``always_call=True`` (those run on the way out of a failing forward).
  A tensor created inside ``forward`` without ``device=`` is blamed on the module whose forward made it.
* when the mismatching tensor is the model's own input and the whole model sits on one other device, the
  report names the model itself (``module == ""``): the fix is at the call site (``dm.to(batch)``).

Submodules hidden in plain lists/dicts (see :func:`devicekit.check.check_devices`) are hooked too and
named like ``"heads[0]"``.

Guarantees: every hook is removed in a ``finally`` block, after success and after any error; nothing global
is patched, so the model's normal forward path carries no devicekit overhead.  An error that is not about
devices is re-raised unchanged (a note naming the innermost module is added on Python 3.11+).

Caveats: this is a real forward pass, so in ``train()`` mode BatchNorm running statistics are updated;
call ``model.eval()`` first if that matters.  A module that deliberately receives tensors on another device
and moves them itself (``x.to(self.weight.device)`` as its first line) is reported as a mismatch.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NoReturn

import torch
from torch import nn

from . import catalog
from .check import MODULE_INTERNALS, ModelScan, is_cpu_scalar, named_input_tensors
from .errors import DeviceMismatchError

__all__ = ["MismatchReport", "locate_mismatch"]


@dataclass(frozen=True)
class MismatchReport:
    """Where a device mismatch happened, as found by :func:`locate_mismatch`.

    Attributes:
        module: qualified name as in ``model.named_modules()`` (``""`` for the model itself).
        module_type: the class name of that module, e.g. ``"Linear"``.
        devices: the device strings involved, sorted, e.g. ``("cpu", "meta")``.
        detail: a human-readable explanation with a suggested fix.
        exception: the exception PyTorch raised, or ``None`` when devicekit stopped the forward pass
            itself (a silent mix such as ``meta @ cpu``).
    """

    module: str
    module_type: str
    devices: tuple[str, ...]
    detail: str
    exception: BaseException | None = field(default=None, compare=False)

    def __str__(self) -> str:
        where = f"module {self.module!r}" if self.module else "the model itself (root module '')"
        lines = [
            f"Device mismatch in {where} ({self.module_type}); devices involved: {', '.join(self.devices)}"
        ]
        lines += [f"  {line}" for line in self.detail.splitlines()]
        if self.exception is not None:
            first = str(self.exception).strip().splitlines()
            lines.append(f"  PyTorch said: {type(self.exception).__name__}: {first[0] if first else ''}")
        return "\n".join(lines)


class _Stop(BaseException):
    """Private: raised by a pre-hook to end the forward pass once a mismatch is found.

    A BaseException so that a model's own ``except Exception:`` cannot swallow it.  It carries its
    tracer, so that a ``locate_mismatch`` running inside another one lets the outer one's signal pass.
    """

    def __init__(self, tracer: _Tracer) -> None:
        super().__init__("devicekit.locate_mismatch stopped the forward pass")
        self.tracer = tracer


@dataclass
class _Frame:
    name: str
    module: nn.Module
    inputs: list[tuple[str, torch.Tensor]]
    done: bool = False


def _own_tensors(module: nn.Module) -> list[tuple[str, str, torch.Tensor]]:
    """(kind, name, tensor) for the module's direct parameters, buffers and plain tensor attributes."""
    own = [("parameter", n, t) for n, t in module._parameters.items() if t is not None]
    own += [("buffer", n, t) for n, t in module._buffers.items() if t is not None]
    own += [
        ("attribute", k, v)
        for k, v in module.__dict__.items()
        if isinstance(v, torch.Tensor) and k not in MODULE_INTERNALS
    ]
    return [(kind, n, t) for kind, n, t in own if not is_cpu_scalar(t)]


def _sorted_devices(devices: Any) -> tuple[str, ...]:
    found = {str(d) for d in devices}
    # "cuda" from an error text adds nothing when "cuda:0" is known
    found -= {d for d in found if ":" not in d and any(o.startswith(d + ":") for o in found)}
    return tuple(sorted(found))


def _names(items: list[tuple[str, str, torch.Tensor]]) -> str:
    return ", ".join(n for _, n, _ in items)


class _Tracer:
    def __init__(self, model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.model = model
        scan = ModelScan()
        scan.scan(model, "", "parameter", "buffer", "")
        counts: Counter[torch.device] = Counter()
        for e in scan.tensors:
            counts[e[2].device] += e[2].numel()
        self.model_devices = set(counts)
        self.majority = counts.most_common(1)[0][0] if counts else None
        scan.scan_hidden()
        self.hidden_fix = {id(m): (name, fix) for name, m, fix in scan.hidden_found}
        self.hidden_roots = [(name, m) for name, m, _ in scan.hidden_found]
        self.root_inputs = {id(t): n for n, t, _ in named_input_tensors(model, args, kwargs, frozenset())}
        self.stack: list[_Frame] = []
        self.report: MismatchReport | None = None
        self.blame: dict[int, tuple[BaseException, _Frame]] = {}

    # ---- hooks
    def pre(self, name: str, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if self.report is not None:  # a model that swallowed the stop signal: keep stopping
            raise _Stop(self)
        found = named_input_tensors(module, args, kwargs, frozenset(), labels=("args", "kwargs"))
        inputs = [(n, t) for n, t, cpu_ok in found if not is_cpu_scalar(t) and not cpu_ok]
        frame = _Frame(name, module, inputs)
        self.stack.append(frame)
        own = _own_tensors(module)
        if not own:
            return
        own_devices = list(dict.fromkeys(t.device for _, _, t in own))
        if len(own_devices) > 1:
            self._stop(frame, self._split_detail(module, own), [*own_devices])
        bad = [(n, t) for n, t in inputs if t.device != own_devices[0]]
        if bad:
            self._input_mismatch(frame, own, own_devices[0], bad)

    def mark_done(self, module: nn.Module, args: Any, kwargs: Any, output: Any) -> None:
        if self.stack and self.stack[-1].module is module:
            self.stack[-1].done = True

    def post(self, module: nn.Module, args: Any, kwargs: Any, output: Any) -> None:
        # Runs on normal exit and, thanks to always_call=True, on the way out of a failing forward.
        while self.stack:
            frame = self.stack.pop()
            if frame.module is module:
                break
        else:
            return
        if not frame.done:
            exc = sys.exc_info()[1]
            if exc is not None and id(exc) not in self.blame:  # the first module to see it is innermost
                self.blame[id(exc)] = (exc, frame)

    # ---- reports
    def _stop(
        self, frame: _Frame, detail: str, devices: list[torch.device], module_name: str | None = None
    ) -> NoReturn:
        module = self.model if module_name == "" else frame.module
        name = frame.name if module_name is None else module_name
        self.report = MismatchReport(name, type(module).__name__, _sorted_devices(devices), detail, None)
        raise _Stop(self)

    def _where(self, frame: _Frame) -> str:
        return f"{frame.name!r} ({type(frame.module).__name__})" if frame.name else "the model itself"

    def _split_detail(self, module: nn.Module, own: list[tuple[str, str, torch.Tensor]]) -> str:
        parts = "; ".join(f"{kind} {n} on {t.device}" for kind, n, t in own)
        hint = self._hidden_hint(module)
        attrs = [n for kind, n, _ in own if kind == "attribute"]
        if attrs:
            hint += (
                f"\nPlain tensor attributes ({', '.join(attrs)}) are not moved by model.to(): register them "
                f"with self.register_buffer({attrs[0]!r}, ...)."
            )
        return (
            f"This module's own tensors are split across devices: {parts}.\n"
            "devicekit stopped the forward pass before this module ran." + hint
        )

    def _hidden_hint(self, module: nn.Module) -> str:
        hidden = self.hidden_fix.get(id(module))
        return f"\nThis module is hidden: {hidden[1]}" if hidden else ""

    def _input_mismatch(
        self,
        frame: _Frame,
        own: list[tuple[str, str, torch.Tensor]],
        own_device: torch.device,
        bad: list[tuple[str, torch.Tensor]],
    ) -> None:
        devices = [own_device, *(t.device for _, t in bad)]
        bad_text = ", ".join(f"{n} on {t.device}" for n, t in bad)
        from_root = [self.root_inputs[id(t)] for _, t in bad if id(t) in self.root_inputs]
        if len(from_root) == len(bad) and self.model_devices == {own_device}:
            detail = (
                f"The model input {', '.join(from_root)} is on {bad[0][1].device}, but the whole model is on "
                f"{own_device} (first used by {self._where(frame)}).\n"
                "Move the batch with dm.to(batch) (or x.to(device)) before calling the model "
                "- or move the model with model.to(...)."
            )
            self._stop(frame, detail, devices, module_name="")
        detail = (
            f"Inputs of this module: {bad_text}; its own tensors ({_names(own)}) are on {own_device}.\n"
            "PyTorch does not always raise for such a mix (meta/cpu matmul silently returns garbage), so "
            "devicekit stopped the forward pass before this module ran."
        )
        if id(frame.module) in self.hidden_fix:
            pass  # the hidden-module hint below says why it did not move
        elif self.majority is not None and own_device != self.majority:
            detail += (
                f"\nMost of the model is on {self.majority}, this module is on {own_device}: it was probably "
                "created or replaced after model.to(...). Call model.to(device) after the last change."
            )
        elif from_root:
            detail += f"\n{', '.join(from_root)} is the model's input: move the batch with dm.to(batch)."
        else:
            detail += (
                "\nThe input was produced earlier on another device: devicekit.check_devices(model, ...) "
                "lists tensors that did not move; strict_devices() names the op that mixed them."
            )
        attrs = [n for kind, n, _ in own if kind == "attribute"]
        if attrs:
            detail += f"\nNote: {', '.join(attrs)} are plain tensor attributes; prefer register_buffer."
        self._stop(frame, detail + self._hidden_hint(frame.module), devices)

    def exception_report(self, exc: BaseException) -> MismatchReport:
        entry = self.blame.get(id(exc))
        if entry is not None and entry[0] is exc:
            frame = entry[1]
            name, module = frame.name, frame.module
        else:  # raised outside every hooked forward (cannot normally happen: the root is hooked)
            frame, name, module = None, "", self.model
        own = _own_tensors(module)
        inputs = frame.inputs if frame is not None else []
        known = dict.fromkeys([*(t.device for _, _, t in own), *(t.device for _, t in inputs)])
        mentioned = [d for d in catalog.extract_devices(str(exc)) if _is_device_name(d)]
        devices = _sorted_devices([*known, *mentioned])
        others = [d for d in _sorted_devices(mentioned) if d not in {str(k) for k in known}]
        in_text = ", ".join(f"{n} on {t.device}" for n, t in inputs) or "no tensor inputs"
        detail = f"PyTorch raised a device error inside this module's forward (its inputs: {in_text}"
        detail += f"; its own tensors: {_names(own)} on {own[0][2].device})." if own else ")."
        if len(known) <= 1 and others:
            detail += (
                f"\nEverything this module received is on {next(iter(known), 'one device')}, so a tensor "
                f"on {', '.join(others)} was made inside its forward: e.g. torch.zeros(n) or torch.arange(n) "
                "without device=. Create it with device=x.device, or register it as a buffer."
            )
        elif not own and len({t.device for _, t in inputs}) > 1:
            from_root = [self.root_inputs[id(t)] for _, t in inputs if id(t) in self.root_inputs]
            detail += "\nThis module combines inputs that arrive on different devices."
            if from_root:
                detail += f" Model inputs involved: {', '.join(from_root)}; move the batch with dm.to(batch)."
        detail += self._hidden_hint(module)
        return MismatchReport(name, type(module).__name__, devices, detail, exc)


def _is_device_name(text: str) -> bool:
    try:
        torch.device(text)
    except (RuntimeError, ValueError):
        return False
    return True


def _is_device_error(exc: BaseException) -> bool:
    """devicekit's own mismatch errors, or what the catalog classifies as tensors on different devices."""
    return isinstance(exc, DeviceMismatchError) or catalog.is_device_error(str(exc))


def locate_mismatch(model: nn.Module, *args: Any, **kwargs: Any) -> MismatchReport | None:
    """Run ``model(*args, **kwargs)`` once and report the innermost module where devices mix.

    Returns ``None`` when the forward pass succeeds with no device mix, else a :class:`MismatchReport`
    (``print(report)`` explains it).  The model output is discarded.  Errors that are not device errors
    propagate unchanged.  See the module docstring for how modules are blamed.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"locate_mismatch expects an nn.Module, got {type(model).__name__}")
    tracer = _Tracer(model, args, kwargs)
    modules = list(model.named_modules())
    seen = {id(m) for _, m in modules}
    for hname, hmod in tracer.hidden_roots:
        for name, m in hmod.named_modules(prefix=hname):
            if id(m) not in seen:
                seen.add(id(m))
                modules.append((name, m))
    handles = []
    try:
        for name, m in modules:
            handles.append(m.register_forward_pre_hook(partial(tracer.pre, name), with_kwargs=True))
            handles.append(m.register_forward_hook(tracer.mark_done, with_kwargs=True))
            handles.append(m.register_forward_hook(tracer.post, with_kwargs=True, always_call=True))
        try:
            model(*args, **kwargs)
        except _Stop as stop:
            if stop.tracer is not tracer:  # the signal of an enclosing locate_mismatch: not ours
                raise
            return tracer.report
        except Exception as exc:
            if not _is_device_error(exc):
                entry = tracer.blame.get(id(exc))
                if entry is not None and hasattr(exc, "add_note"):
                    frame = entry[1]
                    exc.add_note(
                        f"devicekit.locate_mismatch: not a device error; raised inside module {frame.name!r} "
                        f"({type(frame.module).__name__})"
                    )
                raise
            return tracer.exception_report(exc)
        return tracer.report  # not None when the model swallowed the stop signal (a bare except:)
    finally:
        for h in handles:
            h.remove()
        tracer.stack.clear()
        tracer.blame.clear()
