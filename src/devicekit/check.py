"""Static pre-flight device check: `check_devices`.

Why static: the check looks at where every tensor *is* without running the model, so it costs about a
millisecond on a ResNet-50-sized model and can run before every epoch; and it finds the tensors that a
forward pass hides.  A forward pass on CUDA stops at the first mismatch, and some mixes never raise at all
(``torch.mm``/``@``/``F.linear`` without bias/``F.conv2d``/``F.embedding`` with a ``meta`` and a ``cpu``
tensor silently return a tensor on one of the two devices).

What it inspects (one walk over ``model.named_modules()``, reading ``_parameters``/``_buffers``/``__dict__``
directly):

* parameters and buffers, named as in ``model.named_parameters()`` / ``model.named_buffers()``;
* unregistered tensor attributes: ``self.mask = torch.tril(...)`` is a plain attribute, not a buffer, so
  ``model.to()`` skips it (also tensors inside plain list/tuple/dict attributes);
* hidden submodules: modules kept in a plain ``list``/``dict``/``tuple`` attribute instead of
  ``nn.ModuleList``/``nn.ModuleDict`` are not moved by ``model.to()``, not in ``parameters()`` (so the
  optimizer never trains them) and not in ``state_dict()``;
* extra modules passed with ``extra_modules=``: a loss or metric built *outside* the model, such as
  ``nn.CrossEntropyLoss(weight=w)``, keeps ``w`` as a buffer that ``model.to()`` never sees.  A loss that
  is an attribute of the model (``self.criterion = nn.CrossEntropyLoss(weight=w)``) is a registered
  submodule and is checked like any other submodule, so it needs nothing extra;
* the inputs, walked as `devicekit.traversal` defines a batch (the same walk as ``to_device``: nested
  mappings, sequences, sets, namedtuples, dataclasses, objects with their own ``.to()``) and named like
  ``inputs[0]['mask']`` or ``kw['labels']``.

Expected device: ``device=`` if given, else the device holding most parameter elements (then buffers,
then the inputs for a model without parameters and buffers).

Allowed, as PyTorch allows them: 0-dim CPU tensors (``torch.tensor(0.5)``) as inputs or attributes; they
combine with tensors on every device.  Also CPU integer lengths (``lengths``, ``*_lengths``, ``batch_sizes``
by ``forward`` parameter or key name), which ``pack_padded_sequence`` requires on the CPU.
"""

from __future__ import annotations

import inspect
import re
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from . import traversal
from .device import as_device
from .errors import DeviceMismatchError
from .messages import Message, Text, localised

__all__ = [
    "CPU_LENGTHS_NAME",
    "MODULE_INTERNALS",
    "DeviceFinding",
    "DeviceReport",
    "ModelScan",
    "check_devices",
    "forward_parameter_names",
    "is_cpu_scalar",
    "named_input_tensors",
]

#: Attributes every nn.Module has in its __dict__ (hook dicts, _parameters, ...): never user tensors.
MODULE_INTERNALS = frozenset(nn.Module().__dict__) | {"_compiled_call_impl"}
#: Names of inputs that PyTorch wants on the CPU: ``pack_padded_sequence(input, lengths)`` requires a CPU
#: int64 ``lengths``; ``ctc_loss`` accepts CPU ``input_lengths``/``target_lengths`` with inputs anywhere.
#: A CPU integer tensor of at most one dimension under such a name is not a mismatch.
CPU_LENGTHS_NAME = re.compile(r"(?:^|_)(?:lengths?|lens|batch_sizes)$")

_FIX_PARAM = Message(
    "model.to(device) moves parameters and buffers: call it after the model is complete "
    "(a layer created or replaced after .to() stays on its old device).",
    "model.to(device) 会移动参数和缓冲区：要在模型完整建好之后再调用它"
    "（在 .to() 之后才创建或替换的层，会留在原来的设备上）。",
)
_FIX_INPUT = Message(
    "move the batch with dm.to(batch) (or tensor.to(device)) before calling the model.",
    "调用模型之前，先用 dm.to(batch)（或 tensor.to(device)）移动这个批次。",
)
#: The kinds of `DeviceFinding`, in Chinese.
KIND_ZH = {
    "parameter": "参数",
    "buffer": "缓冲区",
    "attribute": "属性",
    "hidden_module": "隐藏子模块",
    "extra_module": "额外模块",
    "input": "输入",
}


@dataclass(frozen=True)
class DeviceFinding:
    """One tensor that is not on the expected device.

    ``kind`` is one of ``"parameter"``, ``"buffer"``, ``"attribute"`` (unregistered tensor attribute),
    ``"hidden_module"`` (parameter/buffer of a submodule kept in a plain list/dict/tuple),
    ``"extra_module"`` (parameter/buffer of a module passed with ``extra_modules=``) or ``"input"``.
    ``fix`` is a `devicekit.messages.Text`: a `str` that also has `.en` and `.zh`.
    """

    kind: str
    name: str
    device: str
    expected: str
    fix: str

    @property
    def message(self) -> Message:
        """This finding in both languages."""
        return Message(
            f"{self.kind} {self.name!r} is on {self.device}, expected {self.expected}",
            f"{KIND_ZH.get(self.kind, self.kind)} {self.name!r} 在 {self.device} 上，应在 {self.expected} 上",
        )

    def __str__(self) -> str:
        return str(self.message)


@dataclass(frozen=True)
class DeviceReport:
    """What `check_devices` returns when every tensor is on the expected device.

    ``device`` is the expected device (``None`` when the model and inputs hold no tensor at all);
    ``source`` says where it came from: ``"argument"``, ``"parameters"``, ``"buffers"``, ``"inputs"``
    or ``"none"``.  ``warnings`` lists problems that do not break *this* call but will break after the
    next ``model.to()``: unregistered tensor attributes and hidden submodules that happen to be on the
    right device now (each a `devicekit.messages.Text`: a `str` with `.en` and `.zh`).
    """

    device: torch.device | None
    source: str
    n_parameters: int
    n_buffers: int
    n_inputs: int
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Always ``True``: a report is only returned when nothing is off (otherwise an error is raised)."""
        return True

    @property
    def message(self) -> Message:
        """This report in both languages."""
        if self.device is None:
            where = Message("no tensors to check", "没有要检查的张量")
        else:
            where = Message(f"all on {self.device}", f"全部在 {self.device} 上")
        en = (
            f"check_devices: OK, {self.n_parameters} parameters, {self.n_buffers} buffers, "
            f"{self.n_inputs} input tensors: {where.en}"
        )
        zh = (
            f"check_devices：正常。参数 {self.n_parameters} 个、缓冲区 {self.n_buffers} 个、"
            f"输入张量 {self.n_inputs} 个，{where.zh}。"
        )
        if self.warnings:
            en += "\nWarnings (fine now, wrong after the next model.to()):\n" + "\n".join(
                f"  - {getattr(w, 'en', w)}" for w in self.warnings
            )
            zh += "\n警告（现在没问题，下一次 model.to() 之后就会出错）：\n" + "\n".join(
                f"  - {getattr(w, 'zh', w)}" for w in self.warnings
            )
        return Message(en, zh)

    def __str__(self) -> str:
        return str(self.message)


# ----------------------------------------------------------------------------------------------------------
# The model side (shared with devicekit.locate); batches are walked by devicekit.traversal


def forward_parameter_names(model: nn.Module, n_positional: int) -> list[str | None]:
    """The names of ``model.forward``'s parameters that ``n_positional`` positional inputs bind to."""
    try:
        params = inspect.signature(model.forward).parameters.values()
    except (TypeError, ValueError):
        params = []  # type: ignore[assignment]
    names: list[str | None] = []
    for p in params:
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            break
        names.append(p.name)
    return (names + [None] * n_positional)[:n_positional]


_LAST_KEY = re.compile(r"(?:\['([^']*)'\]|\.(\w+))$")


def named_input_tensors(
    model: nn.Module,
    inputs: tuple[Any, ...],
    kw_inputs: Mapping[str, Any],
    skip: frozenset,
    labels: tuple[str, str] = ("inputs", "kw"),
) -> list[tuple[str, torch.Tensor, bool]]:
    """``(name, tensor, cpu_ok)`` for every tensor in a model's inputs, named ``inputs[0]['mask']``,
    ``kw['labels']``.  ``cpu_ok``: a CPU lengths tensor PyTorch wants on the CPU (see ``CPU_LENGTHS_NAME``).
    Inputs whose forward-parameter name or keyword is in ``skip`` are left out, as are mapping keys in it.
    """
    named: list[tuple[str, str | None, Any]] = [
        (f"{labels[0]}[{i}]", pname, x)
        for i, (pname, x) in enumerate(zip(forward_parameter_names(model, len(inputs)), inputs, strict=True))
    ]
    named += [(f"{labels[1]}[{k!r}]", k, x) for k, x in kw_inputs.items()]
    found = []
    for root, pname, value in named:
        if skip and pname is not None and pname in skip:
            continue
        for path, t in traversal.iter_tensors(value, root, skip):
            cpu_ok = False
            if t.device.type == "cpu" and t.dim() <= 1 and not (t.is_floating_point() or t.is_complex()):
                last = _LAST_KEY.search(path[len(root) :]) if len(path) > len(root) else None
                key = (last.group(1) or last.group(2)) if last else pname
                cpu_ok = bool(key and CPU_LENGTHS_NAME.search(key))
            found.append((path, t, cpu_ok))
    return found


def is_cpu_scalar(t: torch.Tensor) -> bool:
    """A 0-dim CPU tensor: PyTorch lets it combine with tensors on any device."""
    return t.device.type == "cpu" and t.dim() == 0


def _only_leaves(items: Any) -> bool:
    kind_of, leaf = traversal.kind_of, traversal.LEAF
    return all(kind_of(type(x)) == leaf for x in items)


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _where(prefix: str) -> Message:
    if prefix:
        return Message(f"module {prefix!r}", f"模块 {prefix!r}")
    return Message("the root module", "根模块")


def _weight_norm_names(mod: nn.Module) -> set[str]:
    # torch.nn.utils.weight_norm / spectral_norm (hook versions) recompute a plain `weight` attribute in a
    # forward pre-hook; it is stale between .to() and the next forward, by design.  Not a user bug.
    return {n for h in mod._forward_pre_hooks.values() if isinstance(n := getattr(h, "name", None), str)}


class ModelScan:
    """Collects every tensor reachable from some modules, without running them (shared with ``locate``)."""

    def __init__(self) -> None:
        self.seen_modules: set[int] = set()
        self.seen_tensors: set[int] = set()
        # (kind, name, tensor, fix)
        self.tensors: list[tuple[str, str, torch.Tensor, Text]] = []
        # (name, tensor, owner module, attribute key, owner name)
        self.attrs: list[tuple[str, torch.Tensor, nn.Module, str, str]] = []
        # (name, module, owner module, attribute key, container type or None, owner name)
        self.hidden: list[tuple[str, nn.Module, nn.Module, str, type | None, str]] = []
        # hidden submodules actually scanned: (name, module, fix)
        self.hidden_found: list[tuple[str, nn.Module, Text]] = []

    def scan(self, root: nn.Module, prefix: str, param_kind: str, buffer_kind: str, fix: str) -> None:
        seen_modules, seen_tensors, out = self.seen_modules, self.seen_tensors, self.tensors
        for mprefix, mod in root.named_modules(prefix=prefix):
            mid = id(mod)
            if mid in seen_modules:
                continue
            seen_modules.add(mid)
            for n, t in mod._parameters.items():
                if t is not None and id(t) not in seen_tensors:
                    seen_tensors.add(id(t))
                    out.append((param_kind, _join(mprefix, n), t, fix))
            for n, t in mod._buffers.items():
                if t is not None and id(t) not in seen_tensors:
                    seen_tensors.add(id(t))
                    out.append((buffer_kind, _join(mprefix, n), t, fix))
            skip = _weight_norm_names(mod) if mod._forward_pre_hooks else ()
            for key, value in mod.__dict__.items():
                if key in MODULE_INTERNALS or key in skip:
                    continue
                kind = traversal.kind_of(type(value))
                if kind == traversal.LEAF or (kind == traversal.SEQUENCE and _only_leaves(value)):
                    continue  # e.g. kernel_size=(3, 3): the common case, kept cheap
                container = None if kind in (traversal.TENSOR, traversal.MODULE) else type(value)
                for name, obj, okind in traversal.walk(value, _join(mprefix, key)):
                    if okind == traversal.TENSOR:
                        self.attrs.append((name, obj, mod, key, mprefix))
                    elif okind == traversal.MODULE:
                        self.hidden.append((name, obj, mod, key, container, mprefix))

    def scan_hidden(self) -> list[Text]:
        """Scan the hidden submodules found so far (and those they hide); return one warning for each."""
        warnings: list[Text] = []
        i = 0
        while i < len(self.hidden):  # scanning may discover more hidden modules: a work list
            name, mod, owner, key, container, oname = self.hidden[i]
            i += 1
            if id(mod) in self.seen_modules:  # an alias of a registered module (self.blocks = [self.a]): fine
                continue
            fix = _hidden_fix(name, owner, key, container, oname)
            kind = type(mod).__name__
            warnings.append(Text(Message(f"{name} ({kind}): {fix.en}", f"{name}（{kind}）：{fix.zh}")))
            self.hidden_found.append((name, mod, fix))
            self.scan(mod, name, "hidden_module", "hidden_module", fix)
        return warnings

    def live_attrs(self) -> list[tuple[str, torch.Tensor, nn.Module, str, str]]:
        # A tensor attribute that *is* a registered parameter/buffer is an alias refreshed by the module
        # itself (nn.LSTM._flat_weights): not a bug.
        seen = self.seen_tensors
        return [a for a in self.attrs if id(a[1]) not in seen]


def _hidden_fix(name: str, owner: nn.Module, key: str, container: type | None, oname: str) -> Text:
    where, owner_type = _where(oname), type(owner).__name__
    if container is None:
        return Text(
            Message(
                f"attribute {key!r} of {owner_type} ({where.en}) bypasses nn.Module registration: assign it "
                f"with self.{key} = ... so model.to(), parameters() and state_dict() see it.",
                f"{owner_type}（{where.zh}）的属性 {key!r} 绕过了 nn.Module 的注册：请用 self.{key} = ... "
                "赋值，这样 model.to()、parameters() 和 state_dict() 才能看到它。",
            )
        )
    wrapper = "nn.ModuleDict" if issubclass(container, dict) else "nn.ModuleList"
    plain = container.__name__
    return Text(
        Message(
            f"attribute {key!r} of {owner_type} ({where.en}) is a plain {plain}: use {wrapper} so "
            "model.to(), parameters() (the optimizer) and state_dict() see it.",
            f"{owner_type}（{where.zh}）的属性 {key!r} 是普通的 {plain}：请改用 {wrapper}，"
            "这样 model.to()、parameters()（优化器）和 state_dict() 才能看到它。",
        )
    )


def _attr_fix(owner: nn.Module, key: str, oname: str) -> Text:
    where, owner_type = _where(oname), type(owner).__name__
    return Text(
        Message(
            f"{owner_type}.{key} ({where.en}) is a plain tensor attribute, so model.to() skips "
            f"it: register it with self.register_buffer({key!r}, ...) in __init__ "
            "(persistent=False keeps it out of state_dict), or create it in forward with device=x.device.",
            f"{owner_type}.{key}（{where.zh}）是普通的张量属性，model.to() 会跳过它：请在 __init__ 里用 "
            f"self.register_buffer({key!r}, ...) 注册它（persistent=False 让它不进 state_dict），"
            "或者在 forward 里用 device=x.device 创建它。",
        )
    )


def _extra_items(extra_modules: Any) -> list[tuple[str, nn.Module]]:
    if extra_modules is None:
        return []
    if isinstance(extra_modules, nn.Module):
        return [("extra_modules[0]", extra_modules)]
    if isinstance(extra_modules, Mapping):
        items = [(str(k), m) for k, m in extra_modules.items()]
    elif isinstance(extra_modules, Iterable):
        items = [(f"extra_modules[{i}]", m) for i, m in enumerate(extra_modules)]
    else:
        raise localised(
            TypeError,
            Message(
                f"extra_modules must be a module, a list or a dict of modules, not {extra_modules!r}",
                f"extra_modules 必须是一个模块，或者由模块组成的列表或字典，而不是 {extra_modules!r}",
            ),
        )
    for name, m in items:
        if not isinstance(m, nn.Module):
            kind = type(m).__name__
            raise localised(
                TypeError,
                Message(
                    f"extra_modules: {name} is {kind}, not an nn.Module",
                    f"extra_modules：{name} 是 {kind}，不是 nn.Module",
                ),
            )
    return items


def _majority(devices: Iterable[torch.device], weights: Iterable[int]) -> torch.device | None:
    counts: Counter[torch.device] = Counter()
    for d, w in zip(devices, weights, strict=True):
        counts[d] += w
    return counts.most_common(1)[0][0] if counts else None


def _resolve_index(target: torch.device, seen: Iterable[torch.device]) -> torch.device:
    """``cuda`` -> the ``cuda:N`` most tensors use, so ``device="cuda"`` matches tensors on ``cuda:0``."""
    if target.index is not None or target.type in ("cpu", "meta"):
        return target
    same = Counter(d for d in seen if d.type == target.type)
    return same.most_common(1)[0][0] if same else target


def _matches(dev: torch.device, target: torch.device) -> bool:
    return dev == target or (target.index is None and dev.type == target.type)


def check_devices(
    model: nn.Module,
    *inputs: Any,
    device: torch.device | str | int | None = None,
    extra_modules: nn.Module | Iterable[nn.Module] | Mapping[str, nn.Module] | None = None,
    skip_keys: Iterable[Hashable] | str = (),
    **kw_inputs: Any,
) -> DeviceReport:
    """Check, without running it, that ``model``, its inputs and its helpers all sit on one device.

    Args:
        model: the module to check.  It is never called.
        *inputs: the positional inputs you are about to pass to ``model`` (any nesting of
            dict/list/tuple/namedtuple/dataclass); named ``inputs[0]``, ``inputs[0]['mask']`` ...
        device: the expected device (read by `as_device`).  Default: the device holding
            most parameter elements (then buffers, then inputs).  ``"cuda"`` without an index matches the
            ``cuda:N`` the tensors use.
        extra_modules: modules that work with the model but are not part of it, typically the loss:
            ``extra_modules=criterion``, ``[criterion, metric]`` or ``{"criterion": criterion}`` (the
            dict keys name them in messages).
        skip_keys: inputs that are not checked: mapping keys at any depth, names of ``model.forward``'s
            parameters, or keyword-input names (as in ``to_device(..., skip_keys=...)``).  Not needed for
            lengths: a CPU integer tensor (at most 1-D) whose parameter or key name is ``lengths``,
            ``*_lengths``, ``lens`` or ``batch_sizes`` is accepted, because PyTorch wants those on the CPU
            (``pack_padded_sequence`` requires it, ``ctc_loss`` accepts it).
        **kw_inputs: the keyword inputs you are about to pass, named ``kw['labels']``.  (Three names are
            taken by this function: an input called ``device``, ``extra_modules`` or ``skip_keys`` cannot
            be checked this way; pass it inside a dict instead.)

    Returns:
        A `DeviceReport` when everything is on the expected device.  Its ``warnings`` list the
        unregistered tensor attributes and hidden submodules that are fine *now* but will not follow the
        next ``model.to()``.

    Raises:
        DeviceMismatchError: listing each offending parameter/buffer/attribute/input with its device, the
            expected device and how to fix that kind of problem; ``err.findings`` holds them as
            `DeviceFinding` objects.
        TypeError: ``model`` is not an ``nn.Module``.
        UnknownDeviceError: ``device`` is not a device.
    """
    if not isinstance(model, nn.Module):
        kind = type(model).__name__
        raise localised(
            TypeError,
            Message(
                f"check_devices expects an nn.Module, got {kind}",
                f"check_devices 需要一个 nn.Module，收到的是 {kind}",
            ),
        )
    origin = Message("check_devices(device=...): ", "check_devices(device=...)：")
    wanted = None if device is None else as_device(device, origin=origin)
    skip = traversal.skip_set(skip_keys)

    scan = ModelScan()
    scan.scan(model, "", "parameter", "buffer", Text(_FIX_PARAM))
    n_params = sum(1 for e in scan.tensors if e[0] == "parameter")
    n_buffers = len(scan.tensors) - n_params
    model_end = len(scan.tensors)
    for ename, emod in _extra_items(extra_modules):
        etype = type(emod).__name__
        fix = Text(
            Message(
                f"{ename} ({etype}) is not part of the model, so model.to() does not move it: "
                f"call {ename}.to(device) too.",
                f"{ename}（{etype}）不属于模型，model.to() 不会移动它：也要调用 {ename}.to(device)。",
            )
        )
        scan.scan(emod, ename, "extra_module", "extra_module", fix)
    hidden_warnings = scan.scan_hidden()

    entries = scan.tensors
    devices = [e[2].device for e in entries]
    attrs = [a for a in scan.live_attrs() if not is_cpu_scalar(a[1])]
    attr_devices = [a[1].device for a in attrs]
    input_tensors = named_input_tensors(model, inputs, kw_inputs, skip)
    n_inputs = len(input_tensors)
    input_tensors = [(n, t) for n, t, cpu_ok in input_tensors if not is_cpu_scalar(t) and not cpu_ok]
    input_devices = [t.device for _, t in input_tensors]

    # ---- the expected device
    if wanted is not None:
        target: torch.device | None = _resolve_index(wanted, [*devices, *input_devices, *attr_devices])
        source = "argument"
    elif n_params:
        is_param = [e[0] == "parameter" for e in entries[:model_end]]
        target = _majority(
            [d for d, p in zip(devices, is_param, strict=False) if p],
            [e[2].numel() for e, p in zip(entries, is_param, strict=False) if p],
        )
        source = "parameters"
    elif model_end:
        target = _majority(devices[:model_end], [e[2].numel() for e in entries[:model_end]])
        source = "buffers"
    elif input_devices:
        target = _majority(input_devices, [1] * len(input_devices))
        source = "inputs"
    else:
        target = _majority([*devices, *attr_devices], [1] * (len(devices) + len(attr_devices)))
        source = "other tensors" if target is not None else "none"
    if target is None:
        return DeviceReport(None, "none", n_params, n_buffers, n_inputs, tuple(hidden_warnings))

    # ---- compare
    expected = str(target)
    findings: list[DeviceFinding] = []
    for (kind, name, _t, fix), d in zip(entries, devices, strict=True):
        if not _matches(d, target):
            findings.append(DeviceFinding(kind, name, str(d), expected, fix))
    attr_warnings: list[Text] = []
    for (name, _t, owner, key, oname), d in zip(attrs, attr_devices, strict=True):
        fix = _attr_fix(owner, key, oname)
        if _matches(d, target):
            attr_warnings.append(Text(Message(f"{name}: {fix.en}", f"{name}：{fix.zh}")))
        else:
            findings.append(DeviceFinding("attribute", name, str(d), expected, fix))
    for (name, _t), d in zip(input_tensors, input_devices, strict=True):
        if not _matches(d, target):
            findings.append(DeviceFinding("input", name, str(d), expected, Text(_FIX_INPUT)))

    if findings:
        findings.sort(key=lambda f: _KIND_ORDER[f.kind])  # stable: model order within a kind
        raise DeviceMismatchError(
            _format_error(findings, expected, source),
            findings=tuple(findings),
            devices=tuple(sorted({expected, *(f.device for f in findings)})),
        )
    return DeviceReport(
        target, source, n_params, n_buffers, n_inputs, tuple(dict.fromkeys(attr_warnings + hidden_warnings))
    )


_SOURCE_TEXT = {
    "argument": Message("the device= argument", "device= 参数指定的设备"),
    "parameters": Message("where most of the model's parameters are", "模型大部分参数所在的设备"),
    "buffers": Message(
        "where most of the model's buffers are (it has no parameters)",
        "模型大部分缓冲区所在的设备，因为模型没有参数",
    ),
    "inputs": Message(
        "where most inputs are (the model has no parameters or buffers)",
        "大部分输入所在的设备，因为模型没有参数和缓冲区",
    ),
    "other tensors": Message("where most tensors are", "大部分张量所在的设备"),
}
_MAX_LISTED = 40
_KIND_ORDER = {
    k: i for i, k in enumerate(("parameter", "buffer", "attribute", "hidden_module", "extra_module", "input"))
}


def _format_error(findings: list[DeviceFinding], expected: str, source: str) -> Message:
    n = len(findings)
    src = _SOURCE_TEXT[source]
    en = [
        f"check_devices: {n} tensor{'s' if n != 1 else ''} not on the expected device {expected} "
        f"(expected = {src.en}):"
    ]
    zh = [f"check_devices：有 {n} 个张量不在预期的设备 {expected} 上（预期设备：{src.zh}）："]
    width = min(max(len(f.name) for f in findings), 48)
    for f in findings[:_MAX_LISTED]:
        en.append(f"  - {f.kind:<13} {f.name:<{width}}  on {f.device}, expected {expected}")
        zh.append(f"  - {KIND_ZH.get(f.kind, f.kind)} {f.name}：在 {f.device} 上，应在 {expected} 上")
    if n > _MAX_LISTED:
        en.append(f"  ... and {n - _MAX_LISTED} more (all of them are in err.findings)")
        zh.append(f"  ……还有 {n - _MAX_LISTED} 个（全部在 err.findings 里）")
    en.append("How to fix:")
    zh.append("解决方法：")
    fixes: dict[str, Text] = {}
    for f in findings:
        fixes.setdefault(getattr(f.fix, "en", f.fix), f.fix)  # type: ignore[arg-type]
    for key, fix in fixes.items():
        kinds = sorted({f.kind for f in findings if getattr(f.fix, "en", f.fix) == key})
        en.append(f"  - {'/'.join(kinds)}: {getattr(fix, 'en', fix)}")
        zh.append(f"  - {'、'.join(KIND_ZH.get(k, k) for k in kinds)}：{getattr(fix, 'zh', fix)}")
    return Message("\n".join(en), "\n".join(zh))
