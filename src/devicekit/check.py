"""Static pre-flight device check: :func:`check_devices`.

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
* the inputs, walked as :mod:`devicekit.traversal` defines a batch (the same walk as ``to_device``: nested
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

_FIX_PARAM = (
    "model.to(device) moves parameters and buffers: call it after the model is complete "
    "(a layer created or replaced after .to() stays on its old device)."
)
_FIX_INPUT = "move the batch with dm.to(batch) (or tensor.to(device)) before calling the model."


@dataclass(frozen=True)
class DeviceFinding:
    """One tensor that is not on the expected device.

    ``kind`` is one of ``"parameter"``, ``"buffer"``, ``"attribute"`` (unregistered tensor attribute),
    ``"hidden_module"`` (parameter/buffer of a submodule kept in a plain list/dict/tuple),
    ``"extra_module"`` (parameter/buffer of a module passed with ``extra_modules=``) or ``"input"``.
    """

    kind: str
    name: str
    device: str
    expected: str
    fix: str

    def __str__(self) -> str:
        return f"{self.kind} {self.name!r} is on {self.device}, expected {self.expected}"


@dataclass(frozen=True)
class DeviceReport:
    """What :func:`check_devices` returns when every tensor is on the expected device.

    ``device`` is the expected device (``None`` when the model and inputs hold no tensor at all);
    ``source`` says where it came from: ``"argument"``, ``"parameters"``, ``"buffers"``, ``"inputs"``
    or ``"none"``.  ``warnings`` lists problems that do not break *this* call but will break after the
    next ``model.to()``: unregistered tensor attributes and hidden submodules that happen to be on the
    right device now.
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

    def __str__(self) -> str:
        where = "no tensors to check" if self.device is None else f"all on {self.device}"
        text = (
            f"check_devices: OK, {self.n_parameters} parameters, {self.n_buffers} buffers, "
            f"{self.n_inputs} input tensors: {where}"
        )
        if self.warnings:
            text += "\nWarnings (fine now, wrong after the next model.to()):\n" + "\n".join(
                f"  - {w}" for w in self.warnings
            )
        return text


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


def _where(prefix: str) -> str:
    return f"module {prefix!r}" if prefix else "the root module"


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
        self.tensors: list[tuple[str, str, torch.Tensor, str]] = []
        # (name, tensor, owner module, attribute key, owner name)
        self.attrs: list[tuple[str, torch.Tensor, nn.Module, str, str]] = []
        # (name, module, owner module, attribute key, container type or None, owner name)
        self.hidden: list[tuple[str, nn.Module, nn.Module, str, type | None, str]] = []
        # hidden submodules actually scanned: (name, module, fix)
        self.hidden_found: list[tuple[str, nn.Module, str]] = []

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

    def scan_hidden(self) -> list[str]:
        """Scan the hidden submodules found so far (and those they hide); return one warning for each."""
        warnings: list[str] = []
        i = 0
        while i < len(self.hidden):  # scanning may discover more hidden modules: a work list
            name, mod, owner, key, container, oname = self.hidden[i]
            i += 1
            if id(mod) in self.seen_modules:  # an alias of a registered module (self.blocks = [self.a]): fine
                continue
            fix = _hidden_fix(name, owner, key, container, oname)
            warnings.append(f"{name} ({type(mod).__name__}): {fix}")
            self.hidden_found.append((name, mod, fix))
            self.scan(mod, name, "hidden_module", "hidden_module", fix)
        return warnings

    def live_attrs(self) -> list[tuple[str, torch.Tensor, nn.Module, str, str]]:
        # A tensor attribute that *is* a registered parameter/buffer is an alias refreshed by the module
        # itself (nn.LSTM._flat_weights): not a bug.
        seen = self.seen_tensors
        return [a for a in self.attrs if id(a[1]) not in seen]


def _hidden_fix(name: str, owner: nn.Module, key: str, container: type | None, oname: str) -> str:
    where = f"{type(owner).__name__} ({_where(oname)})"
    if container is None:
        return (
            f"attribute {key!r} of {where} bypasses nn.Module registration: assign it with self.{key} = ... "
            "so model.to(), parameters() and state_dict() see it."
        )
    wrapper = "nn.ModuleDict" if issubclass(container, dict) else "nn.ModuleList"
    return (
        f"attribute {key!r} of {where} is a plain {container.__name__}: use {wrapper} so model.to(), "
        "parameters() (the optimizer) and state_dict() see it."
    )


def _attr_fix(owner: nn.Module, key: str, oname: str) -> str:
    return (
        f"{type(owner).__name__}.{key} ({_where(oname)}) is a plain tensor attribute, so model.to() skips "
        f"it: register it with self.register_buffer({key!r}, ...) in __init__ "
        "(persistent=False keeps it out of state_dict), or create it in forward with device=x.device."
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
        raise TypeError(f"extra_modules must be a module, a list or a dict of modules, not {extra_modules!r}")
    for name, m in items:
        if not isinstance(m, nn.Module):
            raise TypeError(f"extra_modules: {name} is {type(m).__name__}, not an nn.Module")
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
        device: the expected device (read by :func:`devicekit.as_device`).  Default: the device holding
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
        A :class:`DeviceReport` when everything is on the expected device.  Its ``warnings`` list the
        unregistered tensor attributes and hidden submodules that are fine *now* but will not follow the
        next ``model.to()``.

    Raises:
        DeviceMismatchError: listing each offending parameter/buffer/attribute/input with its device, the
            expected device and how to fix that kind of problem; ``err.findings`` holds them as
            :class:`DeviceFinding` objects.
        TypeError: ``model`` is not an ``nn.Module``.
        UnknownDeviceError: ``device`` is not a device.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"check_devices expects an nn.Module, got {type(model).__name__}")
    wanted = None if device is None else as_device(device, origin="check_devices(device=...): ")
    skip = traversal.skip_set(skip_keys)

    scan = ModelScan()
    scan.scan(model, "", "parameter", "buffer", _FIX_PARAM)
    n_params = sum(1 for e in scan.tensors if e[0] == "parameter")
    n_buffers = len(scan.tensors) - n_params
    model_end = len(scan.tensors)
    for ename, emod in _extra_items(extra_modules):
        fix = (
            f"{ename} ({type(emod).__name__}) is not part of the model, so model.to() does not move it: "
            f"call {ename}.to(device) too."
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
    attr_warnings: list[str] = []
    for (name, _t, owner, key, oname), d in zip(attrs, attr_devices, strict=True):
        fix = _attr_fix(owner, key, oname)
        if _matches(d, target):
            attr_warnings.append(f"{name}: {fix}")
        else:
            findings.append(DeviceFinding("attribute", name, str(d), expected, fix))
    for (name, _t), d in zip(input_tensors, input_devices, strict=True):
        if not _matches(d, target):
            findings.append(DeviceFinding("input", name, str(d), expected, _FIX_INPUT))

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
    "argument": "the device= argument",
    "parameters": "where most of the model's parameters are",
    "buffers": "where most of the model's buffers are (it has no parameters)",
    "inputs": "where most inputs are (the model has no parameters or buffers)",
    "other tensors": "where most tensors are",
}
_MAX_LISTED = 40
_KIND_ORDER = {
    k: i for i, k in enumerate(("parameter", "buffer", "attribute", "hidden_module", "extra_module", "input"))
}


def _format_error(findings: list[DeviceFinding], expected: str, source: str) -> str:
    n = len(findings)
    lines = [
        f"check_devices: {n} tensor{'s' if n != 1 else ''} not on the expected device {expected} "
        f"(expected = {_SOURCE_TEXT[source]}):"
    ]
    width = min(max(len(f.name) for f in findings), 48)
    for f in findings[:_MAX_LISTED]:
        lines.append(f"  - {f.kind:<13} {f.name:<{width}}  on {f.device}, expected {expected}")
    if n > _MAX_LISTED:
        lines.append(f"  ... and {n - _MAX_LISTED} more (all of them are in err.findings)")
    lines.append("How to fix:")
    for fix in dict.fromkeys(f.fix for f in findings):
        kinds = sorted({f.kind for f in findings if f.fix == fix})
        lines.append(f"  - {'/'.join(kinds)}: {fix}")
    return "\n".join(lines)
