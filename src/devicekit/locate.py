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

Submodules hidden in plain lists/dicts (see `check_devices`) are hooked too and
named like ``"heads[0]"``.

The report reads in the learner's language (`devicekit.lang`); its ``detail`` keeps both (`.en`, `.zh`).

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
from .check import KIND_ZH, MODULE_INTERNALS, ModelScan, is_cpu_scalar, named_input_tensors
from .errors import DeviceMismatchError
from .messages import Message, Text, localised

__all__ = ["MismatchReport", "locate_mismatch"]


@dataclass(frozen=True)
class MismatchReport:
    """Where a device mismatch happened, as found by `locate_mismatch`.

    Attributes:
        module: qualified name as in ``model.named_modules()`` (``""`` for the model itself).
        module_type: the class name of that module, e.g. ``"Linear"``.
        devices: the device strings involved, sorted, e.g. ``("cpu", "meta")``.
        detail: a human-readable explanation with a suggested fix (a `devicekit.messages.Text`: a `str`
            in the language current when the report was made, with `.en` and `.zh`).
        exception: the exception PyTorch raised, or ``None`` when devicekit stopped the forward pass
            itself (a silent mix such as ``meta @ cpu``).
    """

    module: str
    module_type: str
    devices: tuple[str, ...]
    detail: str
    exception: BaseException | None = field(default=None, compare=False)

    @property
    def message(self) -> Message:
        """This report in both languages."""
        kind = self.module_type
        if self.module:
            where = Message(f"module {self.module!r} ({kind})", f"模块 {self.module!r}（{kind}）")
        else:
            where = Message(f"the model itself (root module '') ({kind})", f"模型本身（根模块 ''，{kind}）")
        en = [f"Device mismatch in {where.en}; devices involved: {', '.join(self.devices)}"]
        zh = [f"设备不匹配，位置：{where.zh}；涉及的设备：{'、'.join(self.devices)}"]
        en += [f"  {line}" for line in getattr(self.detail, "en", self.detail).splitlines()]
        zh += [f"  {line}" for line in getattr(self.detail, "zh", self.detail).splitlines()]
        if self.exception is not None:
            exc = self.exception
            name = type(exc).__name__
            # devicekit's own errors (strict_devices) carry both texts; PyTorch's have only one.
            ours = hasattr(exc, "en") and hasattr(exc, "zh")
            said_en = _first_line(getattr(exc, "en", exc))
            said_zh = _first_line(getattr(exc, "zh", exc))
            if ours:
                en.append(f"  devicekit said: {name}: {said_en}")
                zh.append(f"  devicekit 的报错：{name}: {said_zh}")
            else:
                en.append(f"  PyTorch said: {name}: {said_en}")
                zh.append(f"  PyTorch 的报错：{name}: {said_zh}")
        return Message("\n".join(en), "\n".join(zh))

    def __str__(self) -> str:
        return str(self.message)


def _first_line(text: object) -> str:
    lines = str(text).strip().splitlines()
    return lines[0] if lines else ""


class _Stop(BaseException):
    """Private: raised by a pre-hook to end the forward pass once a mismatch is found.

    A BaseException so that a model's own ``except Exception:`` cannot swallow it.  It carries its
    tracer, so that a ``locate_mismatch`` running inside another one lets the outer one's signal pass.
    """

    def __init__(self, tracer: _Tracer) -> None:
        super().__init__(
            Message(
                "devicekit.locate_mismatch stopped the forward pass",
                "devicekit.locate_mismatch 停止了前向计算",
            )
        )
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


def _names(items: list[tuple[str, str, torch.Tensor]]) -> Message:
    names = [n for _, n, _ in items]
    return Message(", ".join(names), "、".join(names))


def _on(items: list[tuple[str, torch.Tensor]]) -> Message:
    """``"x on cpu, y on meta"`` / ``"x 在 cpu 上、y 在 meta 上"``."""
    return Message(
        ", ".join(f"{n} on {t.device}" for n, t in items),
        "、".join(f"{n} 在 {t.device} 上" for n, t in items),
    )


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
        self, frame: _Frame, detail: Message, devices: list[torch.device], module_name: str | None = None
    ) -> NoReturn:
        module = self.model if module_name == "" else frame.module
        name = frame.name if module_name is None else module_name
        self.report = MismatchReport(
            name, type(module).__name__, _sorted_devices(devices), Text(detail), None
        )
        raise _Stop(self)

    def _where(self, frame: _Frame) -> Message:
        if not frame.name:
            return Message("the model itself", "模型本身")
        kind = type(frame.module).__name__
        return Message(f"{frame.name!r} ({kind})", f"{frame.name!r}（{kind}）")

    def _split_detail(self, module: nn.Module, own: list[tuple[str, str, torch.Tensor]]) -> Message:
        parts = Message(
            "; ".join(f"{kind} {n} on {t.device}" for kind, n, t in own),
            "；".join(f"{KIND_ZH.get(kind, kind)} {n} 在 {t.device} 上" for kind, n, t in own),
        )
        hint = self._hidden_hint(module)
        attrs = [n for kind, n, _ in own if kind == "attribute"]
        if attrs:
            hint += Message(
                f"\nPlain tensor attributes ({', '.join(attrs)}) are not moved by model.to(): register them "
                f"with self.register_buffer({attrs[0]!r}, ...).",
                f"\n普通张量属性（{'、'.join(attrs)}）不会被 model.to() 移动：请用 "
                f"self.register_buffer({attrs[0]!r}, ...) 注册它们。",
            )
        return (
            Message(
                f"This module's own tensors are split across devices: {parts.en}.\n"
                "devicekit stopped the forward pass before this module ran.",
                f"这个模块自己的张量分散在不同设备上：{parts.zh}。\n"
                "devicekit 在这个模块运行之前停止了前向计算。",
            )
            + hint
        )

    def _hidden_hint(self, module: nn.Module) -> Message:
        hidden = self.hidden_fix.get(id(module))
        if not hidden:
            return Message("", "")
        fix = hidden[1]
        return Message(
            f"\nThis module is hidden: {getattr(fix, 'en', fix)}",
            f"\n这个模块是隐藏的：{getattr(fix, 'zh', fix)}",
        )

    def _input_mismatch(
        self,
        frame: _Frame,
        own: list[tuple[str, str, torch.Tensor]],
        own_device: torch.device,
        bad: list[tuple[str, torch.Tensor]],
    ) -> None:
        devices = [own_device, *(t.device for _, t in bad)]
        bad_text = _on(bad)
        from_root = [self.root_inputs[id(t)] for _, t in bad if id(t) in self.root_inputs]
        roots = Message(", ".join(from_root), "、".join(from_root))
        if len(from_root) == len(bad) and self.model_devices == {own_device}:
            where = self._where(frame)
            detail = Message(
                f"The model input {roots.en} is on {bad[0][1].device}, but the whole model is on "
                f"{own_device} (first used by {where.en}).\n"
                "Move the batch with dm.to(batch) (or x.to(device)) before calling the model "
                "- or move the model with model.to(...).",
                f"模型输入 {roots.zh} 在 {bad[0][1].device} 上，而整个模型在 {own_device} 上；"
                f"最先用到它的是{' ' if frame.name else ''}{where.zh}。\n"
                "调用模型之前先用 dm.to(batch)（或 x.to(device)）移动这个批次，"
                "或者用 model.to(...) 移动模型。",
            )
            self._stop(frame, detail, devices, module_name="")
        names = _names(own)
        detail = Message(
            f"Inputs of this module: {bad_text.en}; its own tensors ({names.en}) are on {own_device}.\n"
            "PyTorch does not always raise for such a mix (meta/cpu matmul silently returns garbage), so "
            "devicekit stopped the forward pass before this module ran.",
            f"这个模块的输入：{bad_text.zh}；它自己的张量（{names.zh}）在 {own_device} 上。\n"
            "PyTorch 对这种混用不一定报错（meta 与 cpu 的矩阵乘法会悄悄返回无意义的结果），"
            "所以 devicekit 在这个模块运行之前停止了前向计算。",
        )
        if id(frame.module) in self.hidden_fix:
            pass  # the hidden-module hint below says why it did not move
        elif self.majority is not None and own_device != self.majority:
            detail += Message(
                f"\nMost of the model is on {self.majority}, this module is on {own_device}: it was probably "
                "created or replaced after model.to(...). Call model.to(device) after the last change.",
                f"\n模型的大部分在 {self.majority} 上，这个模块却在 {own_device} 上："
                "它多半是在 model.to(...) 之后才创建或替换的。请在最后一次改动之后再调用 model.to(device)。",
            )
        elif from_root:
            detail += Message(
                f"\n{roots.en} is the model's input: move the batch with dm.to(batch).",
                f"\n{roots.zh} 是模型的输入：请用 dm.to(batch) 移动这个批次。",
            )
        else:
            detail += Message(
                "\nThe input was produced earlier on another device: devicekit.check_devices(model, ...) "
                "lists tensors that did not move; strict_devices() names the op that mixed them.",
                "\n这个输入是前面在另一个设备上算出来的：devicekit.check_devices(model, ...) 会列出没有移动的"
                "张量；strict_devices() 会指出把它们混在一起的那个运算。",
            )
        attrs = [n for kind, n, _ in own if kind == "attribute"]
        if attrs:
            detail += Message(
                f"\nNote: {', '.join(attrs)} are plain tensor attributes; prefer register_buffer.",
                f"\n注意：{'、'.join(attrs)} 是普通张量属性，最好改用 register_buffer。",
            )
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
        mentioned = [d for d in catalog.extract_devices(str(getattr(exc, "en", exc))) if _is_device_name(d)]
        devices = _sorted_devices([*known, *mentioned])
        others = [d for d in _sorted_devices(mentioned) if d not in {str(k) for k in known}]
        in_text = _on(inputs) if inputs else Message("no tensor inputs", "没有张量输入")
        names = _names(own)
        # strict_devices' DeviceMismatchError carries both texts: then devicekit raised it, not PyTorch
        who = Message("devicekit", "devicekit") if hasattr(exc, "zh") else Message("PyTorch", "PyTorch")
        detail = Message(
            f"{who.en} raised a device error inside this module's forward (its inputs: {in_text.en}",
            f"{who.zh} 在这个模块的 forward 里报了设备错误（它的输入：{in_text.zh}",
        )
        if own:
            dev = own[0][2].device
            detail += Message(
                f"; its own tensors: {names.en} on {dev}).", f"；它自己的张量：{names.zh}，在 {dev} 上）。"
            )
        else:
            detail += Message(").", "）。")
        if len(known) <= 1 and others:
            first = next(iter(known), None)
            same = (
                Message(str(first), str(first)) if first is not None else Message("one device", "同一个设备")
            )
            detail += Message(
                f"\nEverything this module received is on {same.en}, so a tensor "
                f"on {', '.join(others)} was made inside its forward: e.g. torch.zeros(n) or torch.arange(n) "
                "without device=. Create it with device=x.device, or register it as a buffer.",
                f"\n这个模块收到的一切都在 {same.zh} 上，所以 {'、'.join(others)} 上的张量是在它的 forward 里"
                "创建的：比如没有传 device= 的 torch.zeros(n) 或 torch.arange(n)。"
                "请用 device=x.device 创建它，或者把它注册为缓冲区。",
            )
        elif not own and len({t.device for _, t in inputs}) > 1:
            from_root = [self.root_inputs[id(t)] for _, t in inputs if id(t) in self.root_inputs]
            detail += Message(
                "\nThis module combines inputs that arrive on different devices.",
                "\n这个模块把来自不同设备的输入合在了一起。",
            )
            if from_root:
                detail += Message(
                    f" Model inputs involved: {', '.join(from_root)}; move the batch with dm.to(batch).",
                    f"涉及的模型输入：{'、'.join(from_root)}；请用 dm.to(batch) 移动这个批次。",
                )
        detail += self._hidden_hint(module)
        return MismatchReport(name, type(module).__name__, devices, Text(detail), exc)


def _is_device_name(text: str) -> bool:
    try:
        torch.device(text)
    except (RuntimeError, ValueError):
        return False
    return True


def _is_device_error(exc: BaseException) -> bool:
    """devicekit's own mismatch errors, or what the catalog classifies as tensors on different devices."""
    return isinstance(exc, DeviceMismatchError) or catalog.is_device_error(str(getattr(exc, "en", exc)))


def locate_mismatch(model: nn.Module, *args: Any, **kwargs: Any) -> MismatchReport | None:
    """Run ``model(*args, **kwargs)`` once and report the innermost module where devices mix.

    Returns ``None`` when the forward pass succeeds with no device mix, else a
    `MismatchReport`
    (``print(report)`` explains it).  The model output is discarded.  Errors that are not device errors
    propagate unchanged.  See the module docstring for how modules are blamed.
    """
    if not isinstance(model, nn.Module):
        kind = type(model).__name__
        raise localised(
            TypeError,
            Message(
                f"locate_mismatch expects an nn.Module, got {kind}",
                f"locate_mismatch 需要一个 nn.Module，收到的是 {kind}",
            ),
        )
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
                    kind = type(frame.module).__name__
                    note = Message(
                        f"devicekit.locate_mismatch: not a device error; raised inside module {frame.name!r} "
                        f"({kind})",
                        f"devicekit.locate_mismatch：这不是设备错误；"
                        f"它是在模块 {frame.name!r}（{kind}）里抛出的",
                    )
                    exc.add_note(str(note))
                raise
            return tracer.exception_report(exc)
        return tracer.report  # not None when the model swallowed the stop signal (a bare except:)
    finally:
        for h in handles:
            h.remove()
        tracer.stack.clear()
        tracer.blame.clear()
