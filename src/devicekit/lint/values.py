"""What a name holds at a point of a function: a module (moved or not), a tensor (on which device), a
device, an optimizer, a DataLoader. Unknown values are None, and the rules stay silent on them."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace

from devicekit.lint.names import (
    CPU_ONLY_FACTORIES,
    DEVICE_FACTORIES,
    DTYPES,
    Names,
    dotted,
    keyword,
    looks_like_device_name,
)

_CUDA = re.compile(r"^(cuda|mps|xpu|npu|hpu|meta|mtia)(:(\d+))?$")
_MODEL_CALLEE = re.compile(
    r"(model|net|encoder|decoder|classifier|backbone|module|head|layer|block|generator|discriminator)\w*$",
    re.I,
)
_NOT_TENSOR_METHODS = frozenset(
    {
        "numpy",
        "tolist",
        "item",
        "size",
        "dim",
        "numel",
        "parameters",
        "named_parameters",
        "state_dict",
        "keys",
        "values",
        "items",
        "__len__",
        "stride",
        "data_ptr",
        "get_device",
    }
)
_SAME_DEVICE_ATTRS = frozenset({"data", "T", "mT", "H", "real", "imag", "grad"})
_BUILTINS = frozenset(
    {
        "len",
        "print",
        "isinstance",
        "str",
        "int",
        "float",
        "list",
        "tuple",
        "dict",
        "range",
        "zip",
        "enumerate",
        "type",
        "repr",
        "bool",
        "sum",
        "max",
        "min",
        "sorted",
        "id",
    }
)


@dataclass(frozen=True)
class Value:
    """What an expression holds.

    Attributes:
        kind: `module`, `tensor`, `device`, `optimizer`, `loader` or `moved` (moved somewhere, kind unknown).
        device: `cpu`, `accel` (an accelerator, or a device variable that probably is one) or `unknown`.
        index: the accelerator index when it is written (`"cuda:1"` → 1, `.cuda()` → 0).
        indexless: placed with a bare `"cuda"` / `.cuda()`: the current device, GPU 0 unless set.
        loss: a loss module (`nn.CrossEntropyLoss(...)`).
        batch: a tensor that came out of a DataLoader and was not moved since.
        whole: a DataLoader's whole batch (`for batch in loader`), which may be a dict-like object whose
            `.to()` moves in place (a tokenizer's `BatchEncoding`, a PyG `Data`).
    """

    kind: str
    device: str = "unknown"
    index: int | None = None
    indexless: bool = False
    loss: bool = False
    batch: bool = False
    whole: bool = False


@dataclass(frozen=True)
class Placement:
    """Where a `.to(...)` / `.cuda()` / `torch.device(...)` / `device=` puts things."""

    device: str
    index: int | None = None
    indexless: bool = False


def placement_of(expr: ast.AST | None, env: dict[str, Value], names: Names) -> Placement | None:
    """The device an expression denotes (`"cuda:1"`, `torch.device("cpu")`, `device`), or None."""
    if expr is None:
        return None
    if isinstance(expr, ast.Constant):
        if isinstance(expr.value, str):
            if expr.value.startswith("cpu"):
                return Placement("cpu")
            match = _CUDA.match(expr.value)
            if match:
                index = int(match.group(3)) if match.group(3) else None
                return Placement("accel", 0 if index is None else index, indexless=index is None)
            return None
        if isinstance(expr.value, int) and not isinstance(expr.value, bool):
            return Placement("accel", expr.value)
        return None
    if isinstance(expr, ast.JoinedStr) and expr.values:
        first = expr.values[0]
        if isinstance(first, ast.Constant) and str(first.value).startswith(("cuda", "xpu", "npu")):
            return Placement("accel")
        return None
    if isinstance(expr, ast.IfExp):
        options = [placement_of(expr.body, env, names), placement_of(expr.orelse, env, names)]
        for option in options:
            if option is not None and option.device == "accel":
                return option
        return options[0] or options[1]
    if isinstance(expr, ast.Call):
        full = names.resolve(expr.func) or ""
        if full == "torch.device" and expr.args:
            inner = placement_of(expr.args[0], env, names)
            if inner is not None and len(expr.args) > 1 and isinstance(expr.args[1], ast.Constant):
                return replace(inner, index=expr.args[1].value, indexless=False)
            return inner
        return None
    key = dotted(expr)
    if key is None:
        return None
    if key in env:
        value = env[key]
        if value.kind == "device":
            return Placement(value.device, value.index, value.indexless)
        return None
    full = names.resolve(expr) or ""
    if full.startswith("torch.") and full[6:] in DTYPES:
        return None
    if looks_like_device_name(key):
        return Placement("accel")
    return None


def move_of(call: ast.Call, env: dict[str, Value], names: Names) -> Placement | None:
    """Where `x.to(...)`, `x.cuda()` or `x.cpu()` moves `x`; None for a dtype-only `.to` or an unknown."""
    attr = call.func.attr if isinstance(call.func, ast.Attribute) else None
    if attr == "cpu":
        return Placement("cpu")
    if attr == "cuda":
        if call.args:
            return placement_of(call.args[0], env, names) or Placement("accel")
        device = keyword(call, "device")
        return placement_of(device, env, names) if device is not None else Placement("accel", 0, True)
    if attr == "to":
        target = keyword(call, "device")
        if target is None and call.args:
            target = call.args[0]
        return placement_of(target, env, names)
    return None


def infer(expr: ast.AST | None, env: dict[str, Value], names: Names) -> Value | None:
    """What `expr` holds, or None when unsure."""
    if expr is None:
        return None
    key = dotted(expr)
    if key is not None:
        if key not in env and isinstance(expr, ast.Attribute) and expr.attr in _SAME_DEVICE_ATTRS:
            inner = infer(expr.value, env, names)
            return inner if inner is not None and inner.kind == "tensor" else None
        return env.get(key)
    if isinstance(expr, ast.Subscript):
        inner = infer(expr.value, env, names)
        return inner if inner is not None and inner.kind == "tensor" else None
    if isinstance(expr, ast.BinOp):
        sides = [infer(expr.left, env, names), infer(expr.right, env, names)]
        tensors = [s for s in sides if s is not None and s.kind == "tensor"]
        if not tensors:
            return None
        device = "accel" if any(t.device == "accel" for t in tensors) else tensors[0].device
        return Value("tensor", device=device)
    if isinstance(expr, ast.Call):
        return _infer_call(expr, env, names)
    return None


def _infer_call(call: ast.Call, env: dict[str, Value], names: Names) -> Value | None:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in {"to", "cuda", "cpu"}:
        receiver = infer(func.value, env, names)
        placement = move_of(call, env, names)
        if placement is None:
            return receiver if receiver is None else replace(receiver, batch=False)
        if receiver is None:
            return Value("moved", placement.device, placement.index, placement.indexless)
        if receiver.kind in {"module", "tensor", "moved"}:
            return replace(
                receiver,
                device=placement.device,
                index=placement.index,
                indexless=placement.indexless,
                batch=False,
            )
        return receiver
    full = names.resolve(func) or ""
    short = full[6:] if full.startswith("torch.") and full.count(".") == 1 else None
    if short in CPU_ONLY_FACTORIES:
        return Value("tensor", "cpu")
    if short in DEVICE_FACTORIES:
        device = keyword(call, "device")
        if device is None:
            return Value("tensor", "cpu")
        placement = placement_of(device, env, names)
        return Value("tensor", placement.device if placement else "unknown")
    if short == "device":
        placement = placement_of(call, env, names)
        if placement is None:
            return Value("device")
        return Value("device", placement.device, placement.index, placement.indexless)
    if full.endswith("DataParallel") and call.args:
        # DataParallel, and DDP given `device_ids`, scatter their inputs to the device: a CPU batch is
        # fine. Where the wrapped module is stays DK013's question (read from the call itself).
        scatters = "Distributed" not in full or keyword(call, "device_ids") is not None or len(call.args) > 1
        inner = infer(call.args[0], env, names)
        if scatters or inner is None or inner.kind != "module":
            return Value("module", "unknown")
        return replace(inner, loss=False)
    if names.is_loss_constructor(call):
        return Value("module", "cpu", loss=True)
    if names.is_module_constructor(call):
        if keyword(call, "device_map") is not None or keyword(call, "device") is not None:
            return Value("module", "unknown")  # placed as it is built (`from_pretrained(device_map=...)`)
        return Value("module", "cpu")
    if full.startswith("torch.optim.") and full.rsplit(".", 1)[-1][:1].isupper():
        return Value("optimizer")
    if full in {"torch.utils.data.DataLoader", "DataLoader"}:
        return Value("custom-loader") if keyword(call, "collate_fn") is not None else Value("loader")
    if full in {"enumerate", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "iter"} and call.args:
        return infer(call.args[0], env, names)
    if full == "next" and call.args:
        inner = infer(call.args[0], env, names)
        return Value("tensor", "cpu", batch=True) if inner is not None and inner.kind == "loader" else None
    callee = infer(func, env, names)
    if callee is not None and callee.kind in {"module", "moved"}:
        if callee.loss:
            return Value("tensor", callee.device)
        return Value("tensor", callee.device if callee.device != "unknown" else "unknown")
    if isinstance(func, ast.Attribute) and callee is None:
        receiver = infer(func.value, env, names)
        if receiver is not None and receiver.kind == "tensor":
            if func.attr in _NOT_TENSOR_METHODS:
                return None
            return replace(receiver, batch=False) if receiver.device != "cpu" else Value("tensor", "cpu")
    if full in _BUILTINS:
        return None
    # an unknown callable given an accelerator tensor gives one back when it is a torch function or looks
    # like a model (`self.model(data)`); a helper of another file may return it on the CPU
    # (`non_max_suppression` moves its detections there)
    if not (full.startswith("torch.") or _MODEL_CALLEE.search((dotted(func) or "").rsplit(".", 1)[-1])):
        return None
    args = [infer(a, env, names) for a in call.args]
    if any(a is not None and a.kind in {"tensor", "moved"} and a.device == "accel" for a in args):
        return Value("tensor", "accel")
    return None
