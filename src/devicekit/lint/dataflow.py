"""The device-flow analysis: an abstract interpretation of each function that gives every expression a
place (`devicekit.lint.places`), and asks the rules' questions where values meet.

What it follows:

- assignments, tuple unpacking, `self.x` attributes (what `__init__` put there), augmented assignments;
- branches and loops, in statement order: after an `if`, a name holds what both paths agree on, else it
  is unknown; a loop body may not run at all;
- containers: tuples and lists element by element, dicts by constant key, comprehensions;
- calls within the project (the index of `devicekit.lint.project`): a function called with values whose
  places are known is analysed with them (what it returns, what it moves in place, what meets inside it);
  a module of a project class runs its `forward` the same way;
- the library calls that decide places: factories (`device=` or not, `with torch.device(...)`), `.to`,
  `.cuda`, `.cpu`, `.type_as`, `*_like`, `new_*`, `torch.from_numpy`, `torch.cat`/`stack` and the other
  `torch` functions, module construction and moves, DataLoader batches, transform pipelines, `state_dict()`
  values, `torch.load(..., map_location=...)`.

The questions (`Questions`) are asked where two places meet in an operation that checks devices, where a
host-only API (`.numpy()`, `np.*`) gets an accelerator tensor, and where a CPU tensor is indexed with an
accelerator index. Anything unknown stays silent: precision first.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable, Iterator

from devicekit.cpu_args import cpu_positions
from devicekit.lint import places as why
from devicekit.lint.guesses import batch_item, unread_model, unread_model_class
from devicekit.lint.index import walk
from devicekit.lint.labels import short_code
from devicekit.lint.meets import MEETING_METHODS, NOT_TENSOR, NOT_TENSOR_ATTRS, REDUCTIONS
from devicekit.lint.modules import HIDDEN_NAME, base_class
from devicekit.lint.names import (
    CPU_ONLY_FACTORIES,
    DEVICE_FACTORIES,
    DTYPES,
    STATELESS_NN,
    Names,
    dotted,
    keyword,
    looks_like_device_name,
    looks_like_lengths,
    looks_like_loader_name,
    looks_like_loss_class,
    looks_like_model_name,
)
from devicekit.lint.params import tensor_params
from devicekit.lint.places import (
    DEVICE,
    HOST,
    INPUT,
    UNKNOWN,
    UNKNOWN_PLACE,
    Place,
    Val,
    join,
    join_envs,
    replace,
)
from devicekit.lint.plain_attrs import judge
from devicekit.lint.project import Project, SourceFile
from devicekit.lint.weightless import builds_weightless

#: `torch.X` functions that give a value a place (a factory, a loader of checkpoints).
_PLACE_FUNCTIONS = (
    DEVICE_FACTORIES | CPU_ONLY_FACTORIES | {"tensor", "as_tensor", "from_numpy", "load", "device"}
)
#: What holds tensors directly: a tensor, or a batch (a tensor, or a structure of them).
_TENSORS = ("tensor", "batch")
#: Calls that wrap a module and leave it where it is.
_WRAPPERS = frozenset(
    {"DataParallel", "DistributedDataParallel", "FullyShardedDataParallel", "compile", "script", "trace"}
)
#: Calls that surely do not move a module handed to them.
_HARMLESS = frozenset(
    {"print", "len", "isinstance", "repr", "str", "type", "id", "hasattr", "getattr", "next", "iter"}
)
#: Methods that change a container in place.
_MUTATORS = frozenset(
    {"update", "append", "extend", "insert", "setdefault", "clear", "pop", "popitem", "remove"}
)
#: Top-level packages that are never the project's own code.
_NOT_PROJECT = frozenset(
    {"torch", "numpy", "np", "os", "sys", "math", "random", "re", "json", "time", "logging"}
)
#: Functions are followed this deep into calls, and this many call contexts per file at most.
MAX_DEPTH = 3
MAX_CONTEXTS = 400

#: Methods of `nn.Module` and of Lightning's `LightningModule` that a subclass calls on `self`.
_MODULE_METHODS = frozenset(
    {
        *("add_module", "apply", "to", "cuda", "cpu", "float", "half", "double", "bfloat16", "type"),
        *("train", "eval", "forward", "parameters", "buffers", "children", "modules", "state_dict"),
        *("load_state_dict", "zero_grad", "requires_grad_", "extra_repr", "to_empty", "share_memory"),
        *("print", "all_gather", "toggle_optimizer", "untoggle_optimizer", "manual_backward"),
        *("optimizers", "lr_schedulers", "save_hyperparameters", "backward", "clip_gradients"),
    }
)
#: A module attribute that holds the loss (`self.loss_fn`, `self.criterion`), judging by its name.
_LOSS_ATTR = re.compile(r"^(loss_?fn|loss_?func(tion)?|criterion|loss)$")
_ACCEL_STRING = re.compile(r"^(cuda|mps|xpu|npu|hpu|mtia)(:(\d+))?$")
_LIKE = re.compile(r"^(zeros|ones|empty|full|rand|randn|randint)_like$")
_NEW = re.compile(r"^new_(zeros|ones|empty|full|tensor)$")
_SAME_PLACE_ATTRS = frozenset({"data", "T", "mT", "H", "real", "imag", "grad"})
#: Fields of a model's output object (Hugging Face `ModelOutput`, DETR's outputs): tensors made where the
#: model ran.
_OUTPUT_FIELDS = frozenset(
    "logits loss last_hidden_state pooler_output hidden_states start_logits end_logits "
    "prediction_logits image_embeds text_embeds pred_logits pred_boxes".split()
)
_RUNTIME_METHOD = re.compile(
    r"^(forward|_forward\w*|forward_\w+|(training|validation|test|predict|shared)_step)$"
)
_LAUNCH_WRAPPERS = frozenset({"enumerate", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "iter"})
_TRANSFORM_MAKERS = re.compile(r"(^|\.)transforms(\.v2)?\.(Compose|ToTensor|PILToTensor|ToImage)$")
_NUMPY = re.compile(r"^numpy\.")
#: A dataset class of torchvision (`datasets.FashionMNIST(...)`): it gives CPU samples.
_DATASETS = re.compile(r"^torchvision\.datasets\.[A-Z]\w*$")
#: NumPy functions that do not read their argument's data (so a CUDA tensor is fine).
_NUMPY_HARMLESS = frozenset(
    {"numpy.shape", "numpy.ndim", "numpy.isscalar", "numpy.random.seed", "numpy.dtype"}
)


@functools.lru_cache(maxsize=4096)  # half the calls ask again for a node already shown (ast.unparse is slow);
# emptied after each file linted alone, or each project (`forget_labels`)
def _label(expr: ast.AST) -> str | None:
    """Short code for a message (`noise`, `batch["x"]`), or None when it would be long."""
    try:
        return short_code(expr, 40)
    except Exception:  # pragma: no cover - ast.unparse handles every expression
        return None


def _params(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[ast.arg]:
    args = function.args
    return [*args.posonlyargs, *args.args, *args.kwonlyargs]


class Questions:
    """The rules, asked of the analysis: each method gets what met and decides what to report.

    A report goes to the node in the file being linted; when the analysis is inside a function of another
    file, it is kept as an event that the call in this file that led there reports.
    """

    def __init__(self, analysis: FileAnalysis) -> None:
        self.analysis = analysis

    def meet(self, flow: Flow, node: ast.AST, values: list[Val], zero_dim_ok: bool) -> None:
        """Tensors of surely different places in one operation (`x + noise`, `torch.cat([a, b])`)."""
        kinds = (*_TENSORS, "moved")  # (a value moved whose kind is unknown, met in an operation, is data)
        tensors = [v for v in values if v is not None and v.kind in kinds and v.place.kind != UNKNOWN]
        hosts = [v for v in tensors if v.place.kind == HOST and not (zero_dim_ok and v.zero_dim)]
        others = [v for v in tensors if v.place.kind in (DEVICE, INPUT)]
        if not hosts and others:  # a CPU tensor made on another path (`w = torch.ones(n) if w is None`)
            for value in values:
                if value is not None and value.fallback is not None and value.place.kind != HOST:
                    rest = [o for o in others if o is not value]
                    if rest and not (zero_dim_ok and value.fallback.zero_dim):
                        self._mismatch(flow, node, value.fallback, rest[0])
                        return
        if not hosts:
            self.stages(flow, node, others)
        if not hosts or not others:
            return
        other = others[0]
        for host in hosts:
            if host.attribute:
                continue  # a plain tensor attribute: DK004 reports it where it is set
            self._mismatch(flow, node, host, other)

    def module_call(self, flow: Flow, node: ast.Call, module: Val, args: list[Val]) -> None:
        """A module called with tensors on another device than its weights (a loss without weights: its
        arguments against each other)."""
        if module.loss:
            self.meet(flow, node, args, zero_dim_ok=False)  # (without what may stay on the CPU)
            return
        tensors = [a for a in args if a is not None and a.kind in _TENSORS and a.place.kind != UNKNOWN]
        if module.place.kind == HOST and module.wrapper is not None:
            line, col = module.wrapper
            where = ast.Constant(value=None)
            where.lineno, where.col_offset = line, col
            flow.report(where, "DK013", module.place.why)
            return
        if module.place.kind == HOST and not module.moved and module.created is not None:
            # (a value moved whose kind is unknown, given to a model, is its data: `model(x.cuda())`)
            moved = [
                a for a in args if a is not None and a.kind in (*_TENSORS, "moved") and a.place.kind == DEVICE
            ]
            if moved:
                detail = _pair(module.label or "the model", module.place.why, moved[0])
                flow.report(node, "DK201", detail)
            return
        if module.place.kind == DEVICE and module.place.index is not None:
            stand_in = Val("tensor", module.place, label=module.label)
            if self.stages(flow, node, [*tensors, stand_in], into=module):
                return
        if module.place.kind in (DEVICE, INPUT) and not any(a.place.kind == HOST for a in tensors):
            # round 6: an argument that is a CPU tensor on another path (`x = batch["x"] if ... else
            # torch.zeros(n)`, or the same written as an `if` statement): on that path it meets the weights
            for arg in args:
                if arg is not None and arg.kind == "tensor" and arg.fallback is not None:
                    if arg.place.kind != HOST and not arg.fallback.attribute:
                        stand_in = Val("tensor", module.place, label=module.label, created=None)
                        self._mismatch(flow, node, arg.fallback, stand_in)
                        return
        if module.place.kind in (DEVICE, INPUT):
            for arg in tensors:
                if arg.place.kind == HOST and not arg.attribute:
                    stand_in = Val("tensor", module.place, label=module.label, created=None)
                    if module.place.kind == INPUT and module.label:
                        stand_in = replace(
                            stand_in, place=replace(module.place, why=why.submodule(module.label))
                        )
                        self._mismatch(flow, node, arg, stand_in, submodule=True)
                    else:
                        self._mismatch(flow, node, arg, stand_in)

    def stages(self, flow: Flow, node: ast.AST, values: list[Val], into: Val | None = None) -> bool:
        """Two accelerators the code names by index (`"cuda:0"`, `"cuda:1"`) meet: a model split over
        devices whose stage gets the previous stage's output unmoved, or labels on the first GPU against
        the last stage's output. Whether it reported."""
        placed = [
            v
            for v in values
            if v is not None and v.place.kind == DEVICE and v.place.index is not None and v.place.device
        ]
        for i, first in enumerate(placed):
            for second in placed[i + 1 :]:
                if first.place.index != second.place.index and _kind_of(first) == _kind_of(second):
                    if into is not None and first.place is into.place:
                        first, second = second, first
                    detail = _pair(first.label, first.place.why, second)
                    flow.report(node, "DK015", detail)
                    return True
        return False

    def wrapped(self, flow: Flow, call: ast.Call, full: str, inner: Val) -> Val | None:
        """A module on the CPU for sure (built and never moved) wrapped for several GPUs.

        `DistributedDataParallel(module, device_ids=[...])` raises at once for a CPU module ("device_ids
        and output_device arguments only work with single-device/multiple-device GPU modules or CPU
        modules", recorded case `ddp-device-ids-cpu-module`). `nn.DataParallel` moves the module itself
        when it is given one device id, and otherwise raises when it runs on a machine with several GPUs
        ("module must have its parameters and buffers on device cuda:0 (device_ids[0])",
        `torch/nn/parallel/data_parallel.py` (v2.13.0), `DataParallel.__init__` and `forward`): the
        wrapper it returns carries where it was wrapped, and a call of it while it is still on the CPU is
        reported there (`Flow._module_call`). What it returns is None when the usual rules apply."""
        if inner.kind != "module" or inner.place.kind != HOST or inner.loss or inner.moved:
            return None
        if inner.created is None and inner.place.why is None:
            return None
        ids = keyword(call, "device_ids")
        if ids is None and len(call.args) > 1:
            ids = call.args[1]
        name = inner.label or _label(call.args[0]) or "the model"
        detail = why.wrapped_on_cpu(name, inner.place.why, call.lineno)
        if "Distributed" in full:
            if ids is not None and not (isinstance(ids, ast.Constant) and ids.value is None):
                flow.report(call, "DK013", detail)
                return replace(inner, place=UNKNOWN_PLACE, created=None)
            return None
        if not full.endswith("DataParallel"):
            return None
        if isinstance(ids, (ast.List, ast.Tuple)) and len(ids.elts) == 1:
            return None  # one device id: DataParallel moves the module there itself
        here = flow.events is None and flow.source is self.analysis.source
        return replace(
            inner,
            created=None,
            wrapper=(call.lineno, call.col_offset) if here else None,
            label=None,
            place=replace(inner.place, why=detail),
        )

    def host_api(self, flow: Flow, node: ast.AST, value: Val | None, api: str) -> None:
        """`.numpy()` or a NumPy function on a tensor that is on an accelerator for sure."""
        for tensor in _tensors(value):
            if tensor.place.kind == DEVICE:
                name, name_zh = _named(
                    tensor.label or _label(_host_api_operand(node)), "the tensor", "这个张量"
                )
                if value is not None and value.kind == "seq" and value.label and value.label != tensor.label:
                    name = f"`{value.label}` holds {name}, which"  # a list filled in a loop
                    name_zh = (
                        f"`{value.label}` 里装的是{' ' if name_zh[:1] == '`' else ''}{name_zh.strip()}，它"
                    )
                detail = Message_(
                    f"{name} {_en(tensor.place.why)}, and goes to `{api}`",
                    f"{name_zh}{_zh(tensor.place.why)}，却交给了 `{api}`",
                )
                flow.report(node, "DK010", detail)
                return

    def index(self, flow: Flow, node: ast.Subscript, table: Val | None, index: Val | None) -> None:
        """A CPU tensor indexed with an accelerator index (`cpu_table[cuda_idx]`)."""
        if table is None or table.kind != "tensor" or table.place.kind != HOST:
            return
        for idx in _tensors(index):
            if idx.place.kind == DEVICE:
                detail = _pair(table.label or _label(node.value) or "the table", table.place.why, idx)
                flow.report(node, "DK011", detail)
                return

    def _mismatch(self, flow: Flow, node: ast.AST, host: Val, other: Val, submodule: bool = False) -> None:
        """A CPU tensor meets the device's: a batch never moved is DK001, a tensor made on the CPU DK003;
        a tensor the code moved to the CPU on purpose is left alone."""
        if host.batch:
            if host.label and looks_like_lengths(host.label):
                return  # sequence lengths belong on the CPU (`pack_padded_sequence`)
            flow.report(host.node or node, "DK001", _pair(host.label, host.place.why, other))
        elif host.made:
            if host.label and looks_like_lengths(host.label):
                return  # lengths for `pack_padded_sequence` or CTC belong on the CPU
            target = flow.creation_node(host) or node
            # an RNN's initial state made outside the module that runs it: DK006's bug, said as such
            code = (
                "DK006"
                if host.label and HIDDEN_NAME.match(host.label) and isinstance(node, ast.Call)
                else "DK003"
            )
            flow.report(target, code, _pair(host.label, host.place.why, other, meets_at=node))


def _gives_places(args: list[Val | None], kwargs: dict[str, Val | None]) -> bool:
    """Whether a call hands a function tensors on two known places, one of them the CPU: what meets
    inside it may be a mismatch even if the function itself places nothing."""
    kinds = {
        v.place.kind
        for v in _flatten([*args, *kwargs.values()])
        if v is not None and v.kind in (*_TENSORS, "moved")
    }
    return HOST in kinds and bool(kinds & {DEVICE, INPUT})


def _split_over_devices(cls: ast.ClassDef) -> bool:
    """Whether `__init__` puts parts of the module on accelerators it names by index (`.to("cuda:1")`,
    `.cuda(1)`): a model split over devices, whose methods pass tensors from one stage to the next."""
    init = _method(cls, "__init__")
    if init is None:
        return False
    for call in _calls_and_loops(init)[0]:
        if isinstance(call.func, ast.Attribute) and call.func.attr in ("to", "cuda") and call.args:
            arg = call.args[0]
            if isinstance(arg, ast.Constant) and (
                (isinstance(arg.value, str) and re.match(r"^[a-z]+:\d+$", arg.value))
                or (call.func.attr == "cuda" and isinstance(arg.value, int))
            ):
                return True
    return False


def _kind_of(value: Val) -> str:
    """The accelerator type a place names (`cuda` of `"cuda:1"`)."""
    return (value.place.device or "").strip("\"'").split(":", 1)[0]


def _tensors(value: Val | None) -> Iterable[Val]:
    if value is None:
        return
    if value.kind in (*_TENSORS, "moved"):
        yield value
    elif value.kind in ("seq", "dict"):
        for _, item in value.items or ():
            if item is not None:
                yield from _tensors(item)
        if value.item is not None:
            yield from _tensors(value.item)


def _en(message, place: Place | None = None) -> str:
    """A reason in English; when none was recorded, what the place itself says."""
    if message is not None:
        return message.en
    return why.default_reason(place or Place(HOST)).en


def _zh(message, place: Place | None = None) -> str:
    if message is not None:
        return message.zh
    return why.default_reason(place or Place(HOST)).zh


def Message_(en: str, zh: str):  # noqa: N802 - a tiny alias that keeps the lines short
    from devicekit.messages import Message

    return Message(en, zh)


def _named(label: str | None, en: str, zh: str) -> tuple[str, str]:
    """How a message names a value: its code in backticks (`noise`), or, when the analysis has no short
    code for it, plain words (`en`, `zh`) that cannot be taken for a variable's name."""
    return (f"`{label}`", f"`{label}` ") if label else (en, zh)


def _host_api_operand(node: ast.AST) -> ast.AST | None:
    """The tensor a host API reads: `pred` in `pred.numpy()` and in `np.sum(pred)`."""
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute) and not node.args:
            return node.func.value
        if node.args:
            return node.args[0]
    return None


def _is_cpu_device(names, expr: ast.AST) -> bool:
    """`"cpu"`, `torch.device("cpu")`: a device expression that is the host, whatever runs it."""
    if isinstance(expr, ast.Call) and (names.resolve(expr.func) or "") == "torch.device" and expr.args:
        expr = expr.args[0]
    return (
        isinstance(expr, ast.Constant) and isinstance(expr.value, str) and expr.value.split(":")[0] == "cpu"
    )


def _cpu_device_attributes(source: SourceFile, cls: ast.ClassDef) -> dict[str, Val]:
    """`self.x` that every assignment anywhere in the class binds to the CPU device (`self._cpu_device =
    torch.device("cpu")` in `reset`, not only in `__init__`): `.to(self._cpu_device)` moves to the host."""
    seen: dict[str, Val | None] = {}
    for node in walk(cls):
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
            if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)):
                continue
            if target.value.id != "self":
                continue
            if _is_cpu_device(source.names, node.value) and seen.get(target.attr, ...) is not None:
                seen[target.attr] = Val(
                    "device", Place(HOST, why=why.moved_to_cpu(node.lineno)), label=f"self.{target.attr}"
                )
            else:
                seen[target.attr] = None  # bound to something else too: the analysis of the method decides
    return {name: value for name, value in seen.items() if value is not None}


def _pair(label: str | None, reason, other: Val, meets_at: ast.AST | None = None):
    """ "`noise` is created on the CPU at line 3; `x` is an input of `forward`, on the module's device"."""
    first, first_zh = _named(label, "this tensor", "这个张量")
    second, second_zh = _named(other.label, "the other operand", "另一个操作数")
    line = f" (line {meets_at.lineno})" if meets_at is not None and hasattr(meets_at, "lineno") else ""
    line_zh = f"（第 {meets_at.lineno} 行）" if meets_at is not None and hasattr(meets_at, "lineno") else ""
    return Message_(
        f"{first} {_en(reason)}; it meets {second}{line}, which {_en(other.place.why, other.place)}",
        f"{first_zh}{_zh(reason)}；它与{' ' if other.label else ''}{second_zh}相遇{line_zh}，"
        f"而后者{_zh(other.place.why, other.place)}",
    )


class FileAnalysis:
    """The analysis of one file, with the project in view."""

    def __init__(self, ctx, project: Project, source: SourceFile) -> None:
        self.ctx = ctx
        self.project = project
        self.source = source
        self.questions = Questions(self)
        self.summaries: dict[tuple, Val | None] = {}
        self.active: set[int] = set()
        self.contexts = 0
        self.class_attrs: dict[int, dict[str, Val]] = {}
        self.default_device = _sets_default_device(source, ctx.calls)
        self.worth: dict[int, bool] = {}
        self.known_globals: set[str] = set()
        self._current: ast.AST | None = None

    def run(self) -> None:
        """Interpret the module's body, then every function and method with what it is known to receive."""
        top = Flow(self, self.source, self.source.tree, {})
        if self.worth_reading(self.source, self.source.tree):  # a script's top level
            top.run(self.source.tree.body)
        globals_ = {k: v for k, v in top.env.items() if "." not in k}
        self.known_globals = {k for k, v in globals_.items() if v.place.kind != UNKNOWN or v.kind == "module"}
        for node in self.source.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if self.worth_reading(self.source, node):
                    self._entry(node, dict(globals_), None)
            elif isinstance(node, ast.ClassDef):
                module = self.project.is_module_class(self.source, node)
                split = module and _split_over_devices(node)
                methods = [
                    item
                    for item in node.body
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and item.name != "__init__"
                    and (split or self.worth_reading(self.source, item))
                ]
                init = _method(node, "__init__")
                if module and init is not None and self._may_leave_a_cpu_tensor(node):
                    self.attributes(self.source, node, module)  # DK004 on what __init__ leaves on the CPU
                if not methods:
                    continue
                attrs = self.attributes(self.source, node, module)
                for item in methods:
                    self._entry(item, dict(globals_), (node, module, attrs))

    # --- which functions can say anything ------------------------------------------------------------

    def worth_reading(self, source: SourceFile, function: ast.AST) -> bool:
        """Whether a function holds anything that gives a value a known place: a factory on the CPU or on
        a device it names, a move, a host API, a DataLoader or its batches, a module built, a known global,
        or a call to a function of the project (or a method of its class) that is worth reading itself.
        One without any of these can only produce unknowns, and is not interpreted."""
        key = id(function)
        worth = self.worth if source is self.source else self.project.cache.setdefault("worth", {})
        if key in worth:
            return worth[key]
        worth[key] = False  # a recursive call answers no
        if source is self.source:
            calls = self.ctx.function_calls.get(function, [])
            loops = self.ctx.index.function_loops.get(function, [])
        else:
            calls, loops = self.calls_and_loops(function)
        outer, self._current = self._current, function
        try:
            answer = any(self._gives_a_place(source, call) for call in calls) or any(
                self._loops_over_a_loader(source, loop) for loop in loops
            )
        finally:
            self._current = outer
        worth[key] = answer
        return answer

    def _gives_a_place(self, source: SourceFile, call: ast.Call) -> bool:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in ("to", "cuda", "cpu", "type_as", "type", "numpy"):
            return True
        flag = keyword(call, "return_tensors")  # round 6: a tokenizer's CPU tensors (`_tokenizer_output`)
        if isinstance(flag, ast.Constant) and flag.value == "pt":
            return True
        if isinstance(func, ast.Name) and source is self.source and func.id in self.known_globals:
            return True
        full = source.names.resolve(func) or ""
        if full.startswith("torch."):
            if full[6:] in _PLACE_FUNCTIONS:  # a factory on the CPU, or on a device named here
                device = keyword(call, "device")
                return device is None or isinstance(device, (ast.Constant, ast.JoinedStr))
            return full.startswith("torch.nn.") and full.rsplit(".", 1)[-1][:1].isupper()
        if full in ("next", "DataLoader") or full.endswith(("DataLoader", ".Compose", ".ToTensor")):
            return True
        if full.split(".", 1)[0] in _NOT_PROJECT:
            return False
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in ("self", "cls")
        ):
            owner = _enclosing_class(source, self._current) if self._current is not None else None
            helper = _method(owner, func.attr) if owner is not None else None
            return helper is not None and self.worth_reading(source, helper)  # a helper that places things
        if source.names.is_module_constructor(call):
            return True
        found = self.project.lookup(full, source)
        if found is None:
            return False
        if isinstance(found[1], ast.ClassDef):
            return self.project.is_module_class(found[0], found[1])
        return self.worth_reading(found[0], found[1])

    def _loops_over_a_loader(self, source: SourceFile, loop: ast.AST) -> bool:
        iterable = loop.iter  # type: ignore[attr-defined]
        while isinstance(iterable, ast.Call) and iterable.args:
            if (source.names.resolve(iterable.func) or "") not in _LAUNCH_WRAPPERS:
                break
            iterable = iterable.args[0]
        key = dotted(iterable)
        return key is not None and (looks_like_loader_name(key) or key in self.known_globals)

    def _entry(self, function, env: dict[str, Val], owner) -> Flow:
        params = _params(function)
        for arg in params:
            env.pop(arg.arg, None)
        self_name = params[0].arg if owner is not None and params else None
        if owner is not None:
            cls, module, attrs = owner
            for key, value in attrs.items():
                env[f"{self_name}.{key}"] = value
            if module and _RUNTIME_METHOD.match(function.name):
                for name in tensor_params(function):
                    env[name] = Val("tensor", Place(INPUT, why=why.module_input(function.name)), label=name)
        for name, value in self.device_params(function).items():
            env.setdefault(name, value)
        flow = Flow(self, self.source, function, env, self_name=self_name)
        if owner is not None and owner[1]:
            flow.module_place = Place(INPUT, why=why.module_device())
        flow.run(function.body)
        return flow

    # --- classes ------------------------------------------------------------------------------------

    def attributes(self, source: SourceFile, cls: ast.ClassDef, module: bool) -> dict[str, Val]:
        """What `__init__` puts in `self.x`, as the other methods see it: submodules, buffers and parameters
        are where the module is (`input`), plain tensors stay where they were made."""
        key = id(cls)
        if key in self.class_attrs:
            return self.class_attrs[key]
        self.class_attrs[key] = {}
        attrs = self._own_attributes(source, cls, module)
        for name, value in [
            *_cpu_device_attributes(source, cls).items(),
            *self._inherited_devices(source, cls).items(),
        ]:
            attrs.setdefault(name, value)
        self.class_attrs[key] = attrs
        return attrs

    def _inherited_devices(self, source: SourceFile, cls: ast.ClassDef) -> dict[str, Val]:
        """What a base class of the project keeps in `self.x`. Its devices (`self._cpu_device =
        torch.device("cpu")` in the base's `__init__`): a subclass's methods read the same attribute, so
        `.to(self._cpu_device)` there is a move to the CPU, not to an accelerator the name might hold. And,
        when the subclass runs the base's `__init__` (it has none, or calls it) and does not set the name
        itself, everything else the base's `__init__` leaves there: a model it moved (`self.model =
        BertModel.from_pretrained(...).to(self.device)` in a wrapper's base class), a submodule."""
        found: dict[str, Val] = {}
        init = _method(cls, "__init__")
        runs_base_init = init is None or _calls_base_init(init)
        own = _assigned_attributes(init) if init is not None else set()
        for base in cls.bases:
            full = source.names.resolve(base) or dotted(base) or ""
            located = self.project.lookup(full, source) if full else None
            if located is None or not isinstance(located[1], ast.ClassDef) or located[1] is cls:
                continue
            parent_source, parent = located
            is_module = self.project.is_module_class(parent_source, parent)
            for name, value in self.attributes(parent_source, parent, is_module).items():
                if value.kind == "device":
                    found.setdefault(name, value)
                elif runs_base_init and name not in own:
                    # round 5: what the base's `__init__` put in `self.x` (a model moved there, a
                    # submodule, a tensor) is there for the subclass too, unless the subclass sets it
                    found.setdefault(name, value)
        return found

    def _own_attributes(self, source: SourceFile, cls: ast.ClassDef, module: bool) -> dict[str, Val]:
        """`attributes` from the class's own `__init__` (DK004 is reported here)."""
        init = next(
            (
                n
                for n in cls.body
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "__init__"
            ),
            None,
        )
        if init is None or not _params(init):
            return {}
        self_name = _params(init)[0].arg
        env: dict[str, Val] = {}
        for arg in _params(init)[1:]:
            if arg.arg in self.device_params(init):
                env[arg.arg] = self.device_params(init)[arg.arg]
        flow = Flow(self, source, init, env, self_name=self_name, quiet=True)
        flow.run(init.body)
        registered = _registered(self.ctx.class_nodes.get(cls) if source is self.source else None, cls)
        attrs: dict[str, Val] = {}
        prefix = f"{self_name}."
        indices = {
            value.place.index
            for name, value in flow.env.items()
            if name.startswith(prefix) and value.kind == "module" and value.place.kind == DEVICE
        } - {None}
        for name, value in flow.env.items():
            if not name.startswith(prefix) or "." in name[len(prefix) :]:
                continue
            attr = name[len(prefix) :]
            if module and value.kind == "module" and value.place.kind == DEVICE and len(indices) > 1:
                # a model split over devices (`self.seq2 = ....to("cuda:1")`): each stage where it was put
                attrs[attr] = replace(value, created=None, label=name, moved=True)
                continue
            if module and (value.kind == "module" or attr in registered):
                attrs[attr] = Val(
                    value.kind, Place(INPUT, why=why.submodule(f"{self_name}.{attr}")), label=name
                )
            elif value.kind == "tensor" and value.place.kind == HOST:
                if (
                    module
                    and value.made
                    and source is self.source
                    and isinstance(value.node, ast.AST)
                    and not self.moves_its_tensors(source, cls)
                ):
                    # DK004 through the analysis: `self.pe = torch.cat([...])`, `self.pe = make_table(n)`
                    report, fix = judge(cls, attr, lambda base: base_class(self.ctx, base))
                    detail = Message_(
                        f"`{name}` {_en(value.place.why)}, and stays there when the module moves",
                        f"`{name}` {_zh(value.place.why)}，模块移动时它仍留在原处",
                    )
                    if report:
                        self.ctx.report(value.node, "DK004", detail, fix)
                attrs[attr] = replace(value, attribute=module, created=None, label=name)
            elif value.kind in ("tensor", "device") or (
                not module and value.kind in ("moved", "module") and value.place.kind == DEVICE
            ):  # (a trainer's `self.model = model.to(DEVICE)`: a model on the device for its methods)
                attrs[attr] = replace(value, created=None, label=name)
            elif not module and value.kind == "module" and value.loss:
                # a trainer's `self.criterion = nn.CrossEntropyLoss()`: no weights, it compares its inputs
                attrs[attr] = replace(value, created=None, label=name)
        if module:
            for name in registered - set(attrs):  # `self.register_buffer("scale", ...)`
                attrs[name] = Val(
                    "tensor",
                    Place(INPUT, why=why.buffer_of(f"{self_name}.{name}")),
                    label=f"{self_name}.{name}",
                )
            for name in _optional_submodules(source, init, self_name) - set(attrs):
                label = f"{self_name}.{name}"
                attrs[name] = Val("module", Place(INPUT, why=why.submodule(label)), label=label)
            for name in self._unread_submodules(source, cls, init, self_name) - set(attrs):
                label = f"{self_name}.{name}"
                attrs[name] = Val("module", Place(INPUT, why=why.submodule(label)), label=label)
        return attrs

    def _unread_submodules(
        self, source: SourceFile, cls: ast.ClassDef, init: ast.AST, self_name: str
    ) -> set[str]:
        """Round 6: `self.embed = SaitsEmbedding(...)` in a module's `__init__`, the class imported from the
        project's own package but not in the code read (a partial checkout, one folder linted), and
        `self.embed(x, mask)` called with arguments in the class's methods: a submodule, on the module's
        device, as a `torch.nn` layer would be. Only a class-like name (CamelCase) from the package the
        file itself sits in (a relative import, or an absolute one through the same top package); a
        class the project defines is read instead, and a library's class is left unknown."""
        own_package = set(source.package.split(".")) - {""}
        built: dict[str, bool] = {}  # attribute -> every assignment in __init__ such a class
        for attr, value in _self_assignments(init, self_name):
            ok = isinstance(value, ast.Call) and isinstance(value.func, (ast.Name, ast.Attribute))
            if ok:
                full = source.names.resolve(value.func) or ""
                last = full.rsplit(".", 1)[-1]
                ok = (
                    "." in full
                    and full.split(".", 1)[0] in own_package
                    and _CLASS_NAME.match(last) is not None
                    and self.project.lookup(full, source) is None
                )
            built[attr] = built.get(attr, True) and ok
        candidates = {name for name, ok in built.items() if ok}
        if not candidates:
            return set()
        called = set()
        for node in walk(cls):
            if (
                isinstance(node, ast.Call)
                and (node.args or node.keywords)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.attr in candidates
            ):
                called.add(node.func.attr)
        return called

    def _may_leave_a_cpu_tensor(self, cls: ast.ClassDef) -> bool:
        """Whether `__init__` sets a `self.x` from a call that may make a CPU tensor: a `torch` function or
        one of the project's (a module built with `nn.*` cannot)."""
        for node in self.ctx.class_nodes.get(cls, ()):
            if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
                continue
            if not any(isinstance(t, ast.Attribute) for t in node.targets):
                continue
            full = self.source.names.resolve(node.value.func) or ""
            if full.startswith("torch.") and not full.startswith("torch.nn."):
                return True
            if self.project.lookup(full, self.source) is not None:
                return True
        return False

    def places_itself(self, source: SourceFile, cls: ast.ClassDef) -> bool:
        """Whether a project class puts itself on a device as it is built: its `__init__` takes a device
        (`device`, `use_gpu`, `gpu_ids`) or moves something (`.to(...)`, `.cuda()`)."""
        cache = self.project.cache.setdefault("places-itself", {})
        if id(cls) not in cache:
            init = _method(cls, "__init__")
            answer = False
            if init is not None:
                names = [a.arg for a in _params(init)]  # type: ignore[arg-type]
                answer = any(
                    looks_like_device_name(n) or n in ("use_gpu", "use_cuda", "gpu_ids") for n in names
                )
                answer = answer or any(
                    isinstance(c.func, ast.Attribute) and c.func.attr in ("to", "cuda")
                    for c in self.calls_and_loops(init)[0]
                )
            cache[id(cls)] = answer
        return cache[id(cls)]

    def calls_and_loops(self, function: ast.AST) -> tuple[list[ast.Call], list[ast.AST]]:
        """`_calls_and_loops` of a function of another file, kept for the project: each file that calls
        into it asks `worth_reading` and `places_itself` about the same functions again."""
        cache = self.project.cache.setdefault("calls-and-loops", {})
        if id(function) not in cache:
            cache[id(function)] = _calls_and_loops(function)
        return cache[id(function)]

    def changed_params(self, function: ast.AST) -> set[str]:
        """`_changed_params` of a function, kept for the project: the parameters it sets attributes on (a
        hook, a wrapped forward: what that does later, the analysis cannot see)."""
        cache = self.project.cache.setdefault("changed-params", {})
        if id(function) not in cache:
            cache[id(function)] = _changed_params(function)
        return cache[id(function)]

    def device_params(self, function: ast.AST) -> dict[str, Val]:
        """`_device_params` of a function, kept for the project (the same function is asked often)."""
        cache = self.project.cache.setdefault("device-params", {})
        if id(function) not in cache:
            cache[id(function)] = _device_params(function)
        return cache[id(function)]

    def moves_its_tensors(self, source: SourceFile, cls: ast.ClassDef, depth: int = 0) -> bool:
        """Whether the class (or a base of it in the project) overrides `_apply`, which `Module.to` calls:
        then it moves its plain tensor attributes itself (YOLOv5's `stride`)."""
        if _method(cls, "_apply") is not None:
            return True
        if depth > 6:
            return False
        for base in cls.bases:
            found = self.project.lookup(source.names.resolve(base) or "", source)
            if found is not None and isinstance(found[1], ast.ClassDef):
                if self.moves_its_tensors(found[0], found[1], depth + 1):
                    return True
        return False

    # --- calls into the project ---------------------------------------------------------------------

    def call(
        self,
        flow: Flow,
        node: ast.Call,
        target: tuple[SourceFile, ast.AST],
        args: list[Val | None],
        kwargs: dict[str, Val | None],
        self_val: Val | None,
    ) -> Val | None:
        """Analyse a project function (or a module's `forward`) called with these values; what it returns.

        A function of this file is analysed here, and what meets inside it is reported where it happens.
        One of another file is analysed once per project for each kind of arguments: what meets inside it
        is reported at this call, and the analysis is kept for the other files that call it alike.
        """
        source, function = target
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        if flow.depth >= MAX_DEPTH or id(function) in self.active or self.contexts >= MAX_CONTEXTS:
            return None
        if (
            not self.worth_reading(source, function)
            and not _gives_places(args, kwargs)
            and not (self_val is not None and self_val.kind == "object")
        ):
            return None  # (a helper given tensors whose places are known is read: `pick(table, idx)`)
        foreign = source is not self.source or flow.events is not None
        signature = (
            id(function),
            tuple(_signature(a) for a in args),
            tuple(sorted((k, _signature(v)) for k, v in kwargs.items())),
            _signature(self_val),
        )
        cache = self.project.cache.setdefault("calls", {}) if foreign else self.summaries
        if signature not in cache:
            cache[signature] = self._analyse(flow, node, source, function, args, kwargs, self_val, foreign)
        result, moves, events = cache[signature]
        for code, detail in events:
            if source is not self.source and flow.events is None:  # say which file it happened in
                name = source.path.replace("\\", "/").rsplit("/", 1)[-1]
                detail = Message_(f"in `{name}`: {detail.en}", f"在 `{name}` 里：{detail.zh}")
            flow.report(node, code, detail)
        for index, value in moves.items():  # a module moved in place in the callee is moved for the caller
            if index < len(node.args):
                key = dotted(node.args[index])
                if key is not None and key in flow.env:
                    flow.env[key] = replace(flow.env[key], place=value.place, moved=True)
        if result is not None and result.place.kind != UNKNOWN:
            reason = why.returned_by(function.name, node.lineno, result.place.why)
            result = replace(result, label=None, place=replace(result.place, why=reason))
        return result

    def _analyse(self, flow, node, source, function, args, kwargs, self_val, foreign):
        params = _params(function)
        env: dict[str, Val] = {}
        names = [p.arg for p in params]
        offset = 0
        self_name = None
        if self_val is not None and names:
            self_name = names[0]
            offset = 1
            if self_val.cls is not None:
                found = self.project.lookup(self_val.cls, source)
                if found is not None and isinstance(found[1], ast.ClassDef):
                    is_module = self.project.is_module_class(found[0], found[1])
                    for key, value in self.attributes(found[0], found[1], is_module).items():
                        if value.place.kind == INPUT and self_val.place.kind in (HOST, DEVICE):
                            value = replace(value, place=self_val.place)
                        env[f"{self_name}.{key}"] = value
        line = None if foreign else node.lineno
        bound: dict[str, int] = {}
        for i, value in enumerate(args):
            if i + offset < len(names) and value is not None:
                name = names[i + offset]
                env[name] = _as_param(value, name, line)
                bound[name] = i
        for key, value in kwargs.items():
            if key in names and value is not None:
                env[key] = _as_param(value, key, line)
        passed = {names[i + offset] for i in range(len(args)) if i + offset < len(names)} | set(kwargs)
        defaults = self.device_params(function)
        for name in names[offset:]:
            if name not in passed and name in defaults:  # not given: its default decides
                env[name] = defaults[name]
            elif name in passed and name not in env and looks_like_device_name(name):
                env[name] = Val("device", UNKNOWN_PLACE)  # given, but what is not known: no guess by name
        self.contexts += 1
        self.active.add(id(function))
        events: list = [] if foreign else None  # type: ignore[assignment]
        try:
            inner = Flow(
                self, source, function, env, events=events, self_name=self_name, depth=flow.depth + 1
            )
            if self_val is not None and self_val.kind == "module":
                inner.module_place = self_val.place
            inner.run(function.body)
        finally:
            self.active.discard(id(function))
        result = inner.returned()
        if result is not None and foreign:
            result = replace(result, created=None)
        moves = {}
        for name, index in bound.items():
            after = inner.env.get(name)
            if after is not None and after.kind == "module" and after.moved:
                moves[index] = after
        return result, moves, tuple(events or ())


def _as_param(value: Val, name: str, line: int | None) -> Val:
    """An argument as the callee sees it: under the parameter's name, coming from the caller."""
    if value.place.kind == UNKNOWN:
        return value.named(name)
    return replace(value, label=name, place=replace(value.place, why=why.from_caller(line, value.place.why)))


def _signature(value: Val | None) -> tuple | None:
    if value is None:
        return None
    return (
        value.kind,
        value.place.kind,
        value.place.device,
        value.batch,
        value.moved,
        value.cls,
        value.zero_dim,
    )


def _device_params(function: ast.AST) -> dict[str, Val]:
    """What the parameters named like a device (`device`, `args_device`, `local_rank`) hold when nothing
    else is known: an accelerator when they have no default or a device string as default (`"cuda"`, and
    since round 5 `"cpu"`: a trainer's `device="cpu"` is there to be given an accelerator, and what it
    moves there must all go); unknown when they default to something else, `None` above all (`if device
    is not None: x = x.to(device)`)."""
    args = function.args  # type: ignore[attr-defined]
    positional = [*args.posonlyargs, *args.args]
    defaults: dict[str, ast.AST | None] = dict.fromkeys(a.arg for a in [*positional, *args.kwonlyargs])
    for arg, default in zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True):
        defaults[arg.arg] = default
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        defaults[arg.arg] = default
    found = {}
    for name, default in defaults.items():
        if not looks_like_device_name(name):
            continue
        if default is None or (
            isinstance(default, ast.Constant)
            and isinstance(default.value, str)
            and (_ACCEL_STRING.match(default.value) or default.value == "cpu")
        ):
            found[name] = Val("device", Place(DEVICE, device=name))
        else:
            found[name] = Val("device", UNKNOWN_PLACE)
    return found


def _optional_submodules(source: SourceFile, init: ast.AST, self_name: str) -> set[str]:
    """Round 5: `self.bias = nn.Embedding(...)` on one path of `__init__` and `self.bias = None` on the
    other (or `nn.Linear(...) if flag else None`): where the code uses it, it is the submodule (the None
    path has nothing to call), on the module's device. The names whose every assignment in `__init__` is a
    `torch.nn` layer or None, at least one a layer."""
    names = source.names
    judged: dict[str, bool] = {}  # name -> every assignment a layer or None
    layers: set[str] = set()  # names assigned a layer at least once
    for attr, value in _self_assignments(init, self_name):
        options = [value.body, value.orelse] if isinstance(value, ast.IfExp) else [value]
        for option in options:
            if isinstance(option, ast.Call) and names.is_module_constructor(option):
                layers.add(attr)
            elif not (isinstance(option, ast.Constant) and option.value is None):
                judged[attr] = False  # something else: not judged
        judged.setdefault(attr, True)
    return {name for name, ok in judged.items() if ok and name in layers}


def _self_assignments(function: ast.AST, self_name: str) -> Iterator[tuple[str, ast.expr]]:
    """``(attribute, value)`` of every ``self.attribute = value`` in ``function`` (each target of a chained
    assignment), in the order of the code."""
    for node in walk(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == self_name
                ):
                    yield target.attr, node.value


def _calls_base_init(init: ast.AST) -> bool:
    """Whether an `__init__` runs its base class's (`super().__init__(...)`, `Base.__init__(self, ...)`)."""
    for node in walk(init):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "__init__"
        ):
            return True
    return False


def _assigned_attributes(function: ast.AST) -> set[str]:
    """The names `x` of every `self.x` a method assigns, augments or deletes (its first parameter's)."""
    params = _params(function)  # type: ignore[arg-type]
    if not params:
        return set()
    self_name = params[0].arg
    out = set()
    for node in walk(function):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, (ast.Store, ast.Del))
            and isinstance(node.value, ast.Name)
            and node.value.id == self_name
        ):
            out.add(node.attr)
    return out


def _registered(nodes: list[ast.AST] | None, cls: ast.ClassDef) -> set[str]:
    """Names given to `register_buffer` / `register_parameter` / `register_module` in the class (`nodes`:
    its calls, when the file's index has them)."""
    found = set()
    for node in nodes if nodes is not None else walk(cls):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in {"register_buffer", "register_parameter", "register_module", "add_module"}:
                if (
                    node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)
                ):
                    found.add(node.args[0].value)
    return found


def _sets_default_device(source: SourceFile, calls: list[ast.Call]) -> bool:
    """Whether the file makes an accelerator the default device (factories then land there)."""
    for node in calls:
        if isinstance(node.func, ast.Attribute) and node.func.attr in (
            "set_default_device",
            "set_default_tensor_type",
        ):
            arg = node.args[0] if node.args else None
            if not (isinstance(arg, ast.Constant) and str(arg.value).startswith(("cpu", "torch.Float"))):
                return True
    return False


class Flow:
    """One pass over a function's body in statement order, keeping what each name holds.

    Args:
        analysis: the file's analysis (questions, project, summaries).
        source: the file the function is in.
        function: the function (or the module, for its top level).
        env: what names hold on entry.
        events: where to keep what it finds, when `function` is in another file than the one being
            linted (the call that led there reports it); None to report in place.
        self_name: the name of `self` in a method.
        quiet: ask no questions (a class's `__init__`, read for its attributes).
        depth: how many calls deep.
    """

    def __init__(
        self,
        analysis: FileAnalysis,
        source: SourceFile,
        function: ast.AST,
        env: dict[str, Val],
        events: list | None = None,
        self_name: str | None = None,
        quiet: bool = False,
        depth: int = 0,
    ) -> None:
        self.analysis = analysis
        self.source = source
        self.names: Names = source.names
        self.function = function
        self.env = env
        self.events = events
        self.self_name = self_name
        self.quiet = quiet
        self.depth = depth
        self.returns: list[Val | None] = []
        #: for each of `returns`, the path of a test of whether the machine has a GPU it was made on
        #: (`"gpu"`, `"cpu"`), or None: what a GPU machine gets is what the function returns (round 5)
        self.return_paths: list[str | None] = []
        self.path: str | None = None
        self.device_blocks: list[Place] = []
        self.bound: set[str] = set()  # the names this function has assigned so far
        self.module_place: Place | None = None  # in a module's method: where the module is
        #: `pbar = tqdm(enumerate(loader))`: names bound to a wrapper of an iterable, for `for ... in pbar`
        self.wrapped_iterables: dict[str, ast.Call] = {}
        self.name = getattr(function, "name", None)

    # --- reports ------------------------------------------------------------------------------------

    def report(self, node: ast.AST, code: str, detail) -> None:
        if self.quiet:
            return
        if self.events is not None:
            self.events.append((code, detail))
            return
        if self.source is not self.analysis.source:
            return
        target = node
        if code == "DK003":  # an RNN's hidden state made on the CPU is DK006's, said where it is made
            where = (getattr(target, "lineno", 1), getattr(target, "col_offset", 0) + 1)
            if (*where, "DK006") in self.analysis.ctx.found:
                return
        self.analysis.ctx.report(target, code, detail)

    def creation_node(self, value: Val) -> ast.AST | None:
        """Where a CPU tensor of this file was made (DK003 is reported at the factory call)."""
        if value.created is None or self.events is not None:
            return None
        line, col = value.created
        node = ast.Constant(value=None)
        node.lineno, node.col_offset = line, col
        return node

    def returned(self) -> Val | None:
        if not self.returns:
            return None
        returns = self.returns
        if "gpu" in self.return_paths:  # `if torch.cuda.is_available(): return torch.device("cuda:0")`
            returns = [v for v, path in zip(self.returns, self.return_paths, strict=True) if path != "cpu"]
        result = returns[0]
        for value in returns[1:]:
            result = join(result, value)
        return result

    # --- statements ---------------------------------------------------------------------------------

    def run(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.statement(stmt)

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.env.pop(stmt.name, None)
        elif isinstance(stmt, ast.Assign):
            value = self.ev(stmt.value)
            for target in stmt.targets:
                self.bind(target, value, stmt.value)
                if isinstance(target, ast.Name):
                    wrapper = stmt.value
                    if (
                        isinstance(wrapper, ast.Call)
                        and wrapper.args
                        and (self.names.resolve(wrapper.func) or "") in _LAUNCH_WRAPPERS
                    ):
                        self.wrapped_iterables[target.id] = wrapper
                    else:
                        self.wrapped_iterables.pop(target.id, None)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self.bind(stmt.target, self.ev(stmt.value), stmt.value)
        elif isinstance(stmt, ast.AugAssign):
            left = self.ev(stmt.target)
            right = self.ev(stmt.value)
            self.analysis.questions.meet(self, stmt, [left, right], zero_dim_ok=True)
            key = dotted(stmt.target)
            if key is not None and left is None:
                self.env.pop(key, None)
        elif isinstance(stmt, ast.Expr):
            self.expression_statement(stmt.value)
        elif isinstance(stmt, ast.Return):
            self.returns.append(self.ev(stmt.value) if stmt.value is not None else None)
            self.return_paths.append(self.path)
        elif isinstance(stmt, ast.If):
            self.ev(stmt.test)
            side = _gpu_side(stmt.test, self.names)
            if side is not None:
                self.gpu_branches(stmt, side)
            else:
                narrowed = self._tensor_test(stmt.test)
                self.branches(
                    [stmt.body, stmt.orelse],
                    fallback=not _about_devices(stmt.test),
                    narrowed={0: narrowed} if narrowed else None,
                )
                self._default_filled(stmt)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            before = dict(self.env)
            self.bind_loop(stmt.target, stmt.iter)
            self.run(stmt.body)
            self.env = join_envs(before, self.env, before)
            self.run(stmt.orelse)
        elif isinstance(stmt, ast.While):
            self.ev(stmt.test)
            before = dict(self.env)
            self.run(stmt.body)
            self.env = join_envs(before, self.env, before)
            self.run(stmt.orelse)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            pushed = 0
            expects_an_error = False
            for item in stmt.items:
                place = self.device_block(item.context_expr)
                if place is not None:
                    self.device_blocks.append(place)
                    pushed += 1
                else:
                    expects_an_error = expects_an_error or _expects_an_error(item.context_expr)
                    self.ev(item.context_expr)
                if item.optional_vars is not None:
                    self.forget(item.optional_vars)
            quiet, self.quiet = self.quiet, self.quiet or expects_an_error  # `pytest.raises`: on purpose
            try:
                self.run(stmt.body)
            finally:
                self.quiet = quiet
            for _ in range(pushed):
                self.device_blocks.pop()
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            # the body, or a handler after it failed somewhere: the paths joined (a handler that raises
            # again does not reach the join)
            self.branches([stmt.body, *(handler.body for handler in stmt.handlers)])  # type: ignore[attr-defined]
            self.run(stmt.orelse)  # type: ignore[attr-defined]
            self.run(stmt.finalbody)  # type: ignore[attr-defined]
        elif isinstance(stmt, ast.Delete):
            for target in stmt.targets:
                self.forget(target)
        elif isinstance(stmt, (ast.Global, ast.Nonlocal, ast.Import, ast.ImportFrom, ast.Pass, ast.Break)):
            return
        else:
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.expr):
                    self.ev(child)

    def branches(
        self,
        bodies: list[list[ast.stmt]],
        fallback: bool = False,
        narrowed: dict[int, dict[str, Val]] | None = None,
    ) -> None:
        before, bound = self.env, self.bound
        results: list[tuple[dict[str, Val], set[str]]] = []
        assigned: set[str] = set()
        for i, body in enumerate(bodies):
            self.env, self.bound = dict(before), set(bound)
            if narrowed and i in narrowed:  # `if torch.is_tensor(x):` — in its body, `x` is a tensor
                self.env.update(narrowed[i])
            self.run(body)
            assigned |= self.bound
            if not _leaves(body):
                results.append((self.env, self.bound - bound))
        self.bound = bound | assigned
        if not results:
            self.env = dict(before)
            return
        self.env, names = results[0]
        for other, other_names in results[1:]:
            self.env = join_envs(self.env, other, before, names, other_names, fallback)
            names = names | other_names

    def gpu_branches(self, stmt: ast.If, side: int) -> None:
        """An `if` whose test says whether this machine has a GPU (`torch.cuda.is_available()`, `use_cuda`,
        `args.device == "cpu"`): device bugs show on the GPU path, so after it each name holds what the GPU
        path left, marked `gpu_only` where the other path differs. Inside the CPU path, what only the GPU
        path placed is unknown (a `.numpy()` in `else:` of the same test reads a CPU tensor)."""
        bodies = [stmt.body, stmt.orelse]
        gpu_body, cpu_body = bodies[side], bodies[1 - side]
        if _leaves(gpu_body):
            if self.path is None and isinstance(gpu_body[-1], ast.Return):
                # round 5: a function that returns on the GPU path (`get_device()`) gives a GPU machine
                # that value; the rest of the function, the `else:` included, is the CPU path
                start = len(self.returns)
                outer = self.path
                self.path = "gpu"
                try:
                    self.branches([gpu_body, []])
                finally:
                    self.path = outer
                for i in range(start, len(self.returns)):
                    value = self.returns[i]
                    if value is not None and value.place.kind == DEVICE and not value.place.gpu_only:
                        reason = why.on_gpu_path(value.place.why, stmt.lineno)
                        self.returns[i] = replace(
                            value, place=replace(value.place, why=reason, gpu_only=True)
                        )
                self.path = "cpu"
                self.run(cpu_body)
                return
            self.branches(bodies)
            return
        before, bound = self.env, self.bound
        self.env, self.bound = dict(before), set(bound)
        self.run(gpu_body)
        gpu_env, assigned = self.env, self.bound
        self.env = {k: v for k, v in before.items() if not v.place.gpu_only}
        self.bound = set(bound)
        self.run(cpu_body)
        cpu_env, cpu_leaves = self.env, _leaves(cpu_body)
        self.bound = bound | assigned | self.bound
        out: dict[str, Val] = {}
        for key, value in gpu_env.items():
            other = cpu_env.get(key)
            if cpu_leaves or other == value:
                out[key] = value
            elif value.place.kind in (DEVICE, HOST, INPUT):
                reason = value.place.why
                if value.place.kind == DEVICE and not value.place.gpu_only:
                    reason = why.on_gpu_path(reason, stmt.lineno)
                out[key] = replace(value, place=replace(value.place, why=reason, gpu_only=True))
        self.env = out

    def expression_statement(self, expr: ast.AST) -> None:
        """`model.to(device)` moves a module in place; `x.to(device)` alone moves nothing (DK002 says so)."""
        if (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr in ("to", "cuda", "cpu")
        ):
            receiver = self.ev(expr.func.value)
            place = self.move(expr)
            key = dotted(expr.func.value)
            if receiver is not None and receiver.kind == "module" and key is not None:
                if place is not None:
                    self.env[key] = receiver.at(place, moved=True)
                elif not self.dtype_only(expr):
                    self.env[key] = receiver.at(UNKNOWN_PLACE, moved=True)
            elif (
                receiver is None
                and place is not None
                and key is not None
                and key in self.bound
                and looks_like_model_name(key)
            ):  # `model_restoration = MPRNet()` from unread code, then `model_restoration.cuda()`
                self.env[key] = Val("moved", place, label=key, moved=True)
            elif receiver is None and place is not None and batch_item(expr.func.value):
                self.report(expr, "DK002", _dropped(Val("tensor"), expr))  # `batch["tokens"].to(device)`
            elif (
                receiver is not None
                and receiver.kind in _TENSORS
                and (place is not None or (receiver.kind == "tensor" and self._names_a_device(expr)))
            ):
                if receiver.whole:  # a whole batch may move in place (a tokenizer's `BatchEncoding`)
                    if key is not None:
                        self.env[key] = receiver.at(UNKNOWN_PLACE, moved=True)
                else:
                    self.report(expr, "DK002", _dropped(receiver, expr))
            self.args(expr)
            return
        self.ev(expr)

    def bind(self, target: ast.AST, value: Val | None, expr: ast.AST | None) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            items = _elements(value, len(target.elts))
            for element, item in zip(target.elts, items, strict=True):
                if isinstance(element, ast.Starred):
                    self.forget(element)
                else:
                    self.bind(element, item, None)
            return
        key = dotted(target)
        if key is None:
            if isinstance(target, ast.Subscript):
                self.store_item(target, value)
            return
        self.bound.add(key)
        if value is None:
            value = self.guess(key, expr)
        if value is None:
            self.env.pop(key, None)
            prefix = key + "."
            for name in [k for k in self.env if k.startswith(prefix)]:
                del self.env[name]
            return
        label = key if len(key) <= 40 else None
        if value.fallback is not None and (value.fallback.label is None or "(" in value.fallback.label):
            value = replace(value, fallback=value.fallback.named(label))  # `w = ... if w is None else w`
        if self.self_name is not None and key.startswith(self.self_name + "."):
            self.env[key] = replace(value, label=label, node=target)  # where an attribute is set (DK004)
        else:
            self.env[key] = value.named(label)

    def guess(self, key: str, expr: ast.AST | None) -> Val | None:
        """What a name bound to code the analysis cannot read probably holds (`devicekit.lint.guesses`):
        a tensor out of a batch (`tokens = batch["tokens"]`), or a model of a class this file neither
        defines nor imports, built here on the CPU."""
        if batch_item(expr):
            return Val("tensor", UNKNOWN_PLACE)
        if not self.device_blocks and unread_model_class(key, expr, self.names):
            assert isinstance(expr, ast.Call)
            return Val(
                "module",
                Place(HOST, why=why.built_here(expr.lineno)),
                created=(expr.lineno, expr.col_offset),
            )
        return None

    def store_item(self, target: ast.Subscript, value: Val | None) -> None:
        """`d[k] = v`: a container's content changes (a tensor written into stays where it is)."""
        container = self.ev(target.value)
        key = dotted(target.value)
        if container is None or key is None or container.kind == "tensor":
            return
        if (
            container.kind == "dict"
            and isinstance(target.slice, ast.Constant)
            and container.items is not None
        ):
            items = tuple((k, v) for k, v in container.items if k != target.slice.value)
            items += ((target.slice.value, value),)
            self.env[key] = replace(container, items=items, item=_common([v for _, v in items]))
        else:
            self.env.pop(key, None)  # written by a key the analysis cannot follow: unknown from now on

    def forget(self, target: ast.AST) -> None:
        for node in walk(target):
            key = dotted(node)
            if key is not None:
                self.env.pop(key, None)

    def bind_loop(self, target: ast.AST, iterable: ast.AST) -> None:
        if isinstance(iterable, ast.Name) and iterable.id in self.wrapped_iterables:
            iterable = self.wrapped_iterables[iterable.id]  # round 5: `for i, (x, y) in pbar`
        source = iterable
        enumerated = False
        while isinstance(source, ast.Call) and source.args:
            full = self.names.resolve(source.func) or ""
            if full not in _LAUNCH_WRAPPERS:
                break
            enumerated = enumerated or full == "enumerate"
            source = source.args[0]
        value = self.ev(source)
        if value is None and not self.names.imports_torch_geometric:
            key = dotted(source)
            # a name set here from code the analysis cannot read (`accelerator.prepare(...)`) is no guess
            if key is not None and key not in self.bound and looks_like_loader_name(key):
                value = Val("loader", Place(HOST), label=key)
        if enumerated and isinstance(target, ast.Tuple) and len(target.elts) == 2:
            self.forget(target.elts[0])
            target = target.elts[1]
        if (
            isinstance(source, ast.Call)
            and (self.names.resolve(source.func) or "") == "zip"
            and isinstance(target, ast.Tuple)
            and len(target.elts) == len(source.args)
            and not source.keywords
            and not any(isinstance(a, ast.Starred) for a in source.args)
        ):  # `for (x, y), (u, v) in zip(loader_a, loader_b)`: each target from its own iterable
            for element, iterable_ in zip(target.elts, source.args, strict=True):
                self.bind_loop(element, iterable_)
            return
        if value is not None and value.kind == "loader":
            line = getattr(iterable, "lineno", 0)
            batch = Val(
                "batch",
                Place(HOST, why=why.batch_from(value.label or "the DataLoader", line)),
                batch=True,
                whole=isinstance(target, ast.Name),
            )
            self.bind(target, batch, None)
            return
        element = None
        if value is not None and value.kind in ("seq", "dict"):
            element = value.item
        self.bind(target, element, None)

    # --- expressions --------------------------------------------------------------------------------

    def ev(self, expr: ast.AST | None) -> Val | None:
        """What `expr` holds (None when unknown), asking the questions of the operations in it."""
        kind = type(expr)
        if kind is ast.Name:  # the most common expression: a plain lookup
            value = self.env.get(expr.id)  # type: ignore[union-attr]
            if value is not None and value.batch:
                return replace(value, node=expr)
            return value
        if expr is None:
            return None
        if kind is ast.Attribute:
            key = dotted(expr)
            if key is not None and key in self.env:
                value = self.env[key]
                return replace(value, node=expr) if value.batch else value
            inner = self.ev(expr.value)  # type: ignore[union-attr]
            if inner is None:
                return None
            if expr.attr in _SAME_PLACE_ATTRS and inner.kind == "tensor":  # type: ignore[union-attr]
                return inner
            if (
                expr.attr in _OUTPUT_FIELDS  # type: ignore[union-attr]
                and inner.kind == "tensor"
                and inner.place.kind in (DEVICE, INPUT)
                and not inner.batch
            ):  # `model(**inputs).logits`: a model's output object holds tensors where it ran
                return replace(inner, label=_label(expr), zero_dim=None)
            if expr.attr == "device" and inner.kind in ("tensor", "module"):  # type: ignore[union-attr]
                return Val("device", inner.place)
            if expr.attr in ("weight", "bias") and inner.kind == "module" and inner.place.kind == INPUT:  # type: ignore[union-attr]
                # round 5: a submodule's parameters are where the module is (`self.emb.weight.device`)
                return Val("tensor", inner.place, label=_label(expr), zero_dim=False)
            if inner.kind == "batch" and expr.attr not in NOT_TENSOR_ATTRS:  # type: ignore[union-attr]
                return replace(inner, kind="tensor", label=_label(expr))
            return None
        if kind is ast.Constant:
            value = expr.value  # type: ignore[union-attr]
            if isinstance(value, str) and (value == "cpu" or _ACCEL_STRING.match(value)):
                return Val("device", self.place_of(expr, getattr(expr, "lineno", 0)) or UNKNOWN_PLACE)
            return None
        if isinstance(expr, ast.BinOp):
            left, right = self.ev(expr.left), self.ev(expr.right)
            if isinstance(expr.op, ast.Mod) and isinstance(expr.left, (ast.Constant, ast.JoinedStr)):
                return None
            self.analysis.questions.meet(
                self, expr, [left, right], zero_dim_ok=not isinstance(expr.op, ast.MatMult)
            )
            return _result([left, right], expr)
        if isinstance(expr, ast.Compare):
            values = [self.ev(expr.left), *(self.ev(c) for c in expr.comparators)]
            self.analysis.questions.meet(self, expr, values, zero_dim_ok=True)
            return _result(values, expr)
        if isinstance(expr, ast.BoolOp):
            values = [self.ev(v) for v in expr.values]
            return None
        if isinstance(expr, ast.UnaryOp):
            return self.ev(expr.operand)
        if isinstance(expr, ast.IfExp):
            self.ev(expr.test)
            body, orelse = self.ev(expr.body), self.ev(expr.orelse)
            # `"cuda" if torch.cuda.is_available() else "cpu"`: the code is written for the accelerator,
            # the path on which a device bug shows (as `place_of` reads the same expression)
            options = [v for v in (body, orelse) if v is not None and v.kind == "device"]
            if len(options) == 2 and any(v.place.kind == DEVICE for v in options):
                return next(v for v in options if v.place.kind == DEVICE)
            side = _gpu_side(expr.test, self.names)
            if side is not None:  # `x.cuda() if use_cuda else x`: what a machine with a GPU gets
                gpu, cpu = (body, orelse)[side], (body, orelse)[1 - side]
                if gpu is None or gpu == cpu or gpu.place.kind == UNKNOWN:
                    return gpu
                reason = gpu.place.why
                if gpu.place.kind == DEVICE and not gpu.place.gpu_only:
                    reason = why.on_gpu_path(reason, expr.lineno)
                return replace(gpu, place=replace(gpu.place, why=reason, gpu_only=True))
            if not _about_devices(expr.test):
                # `torch.ones(n) if w is None else w`: the caller's tensor, or one made on the CPU
                for made, other in ((body, orelse), (orelse, body)):
                    if other is None and made is not None and made.kind == "tensor" and made.made:
                        return Val("tensor", UNKNOWN_PLACE, fallback=made)
            return join(body, orelse, fallback=not _about_devices(expr.test))
        if isinstance(expr, ast.Subscript):
            return self.subscript(expr)
        if isinstance(expr, (ast.Tuple, ast.List)):
            items = [self.ev(e) for e in expr.elts if not isinstance(e, ast.Starred)]
            if any(isinstance(e, ast.Starred) for e in expr.elts):
                return None
            return Val("seq", items=tuple(enumerate(items)), item=_common(items))
        if isinstance(expr, ast.Dict):
            pairs = []
            for key, value in zip(expr.keys, expr.values, strict=True):
                item = self.ev(value)
                if key is not None and isinstance(key, ast.Constant):
                    pairs.append((key.value, item))
                elif key is None:
                    return None
            return Val("dict", items=tuple(pairs), item=_common([v for _, v in pairs]))
        if isinstance(expr, (ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)):
            return self.comprehension(expr)
        if isinstance(expr, ast.Call):
            value = self.call(expr)
            if value is not None and value.label is None:
                value = replace(value, label=_label(expr))
            return value
        if isinstance(expr, ast.Starred):
            return self.ev(expr.value)
        if isinstance(expr, ast.NamedExpr):
            value = self.ev(expr.value)
            self.bind(expr.target, value, expr.value)
            return value
        return None

    def subscript(self, expr: ast.Subscript) -> Val | None:
        base = self.ev(expr.value)
        index = self.ev(expr.slice) if not isinstance(expr.slice, ast.Slice) else None
        if base is None:
            return None
        if base.kind == "tensor":
            self.analysis.questions.index(self, expr, base, index)
            if base.place.kind == HOST and any(i.place.kind == DEVICE for i in _tensors(index)):
                return None  # DK011's, said once: what the failing index would give is not a CPU tensor
            parts = expr.slice.elts if isinstance(expr.slice, ast.Tuple) else [expr.slice]
            slices = all(
                isinstance(p, ast.Slice) or (isinstance(p, ast.Constant) and p.value in (None, Ellipsis))
                for p in parts
            )
            return replace(base, label=_label(expr), zero_dim=base.zero_dim if slices else None, node=expr)
        if base.kind == "batch":
            return replace(base, kind="tensor", label=_label(expr), node=expr, whole=False)
        if base.kind == "dataset":  # `test_data[0]`: one sample, as the dataset makes it (on the CPU)
            reason = why.sample_of(base.label or "the dataset", expr.lineno)
            return Val("batch", Place(HOST, why=reason), batch=True, node=expr)
        if base.kind in ("seq", "dict"):
            if isinstance(expr.slice, ast.Constant):
                for key, item in base.items or ():
                    if key == expr.slice.value:
                        return item.named(_label(expr)) if item is not None else None
                if base.kind == "dict" and base.items is not None:
                    return None
            if isinstance(expr.slice, ast.Slice):
                return base if base.kind == "seq" else None
            return base.item.named(_label(expr)) if base.item is not None else None
        if base.kind == "any":
            return Val("any", base.place, label=_label(expr))
        return None

    def comprehension(self, expr: ast.AST) -> Val | None:
        saved = dict(self.env)
        for generator in expr.generators:  # type: ignore[attr-defined]
            iterable = self.ev(generator.iter)
            element = None
            if iterable is not None:
                if iterable.kind == "loader":
                    element = Val("batch", Place(HOST), batch=True)
                elif iterable.kind in ("seq", "dict"):
                    element = iterable.item
                elif iterable.kind == "items":
                    element = Val("seq", items=((0, None), (1, iterable.item)), item=None)
            self.bind(generator.target, element, None)
        try:
            if isinstance(expr, ast.DictComp):
                item = self.ev(expr.value)
                return Val("dict", item=item)
            item = self.ev(expr.elt)  # type: ignore[attr-defined]
            return Val("seq", item=item)
        finally:
            self.env = saved

    def device_block(self, expr: ast.AST) -> Place | None:
        """`with torch.device("cuda"):` makes factories without `device=` land there, and so does a
        context that is given a device (`with EmptyInitOnDevice(device="cuda"):`, lit-llama's), or a
        device itself (`with device:`, a `torch.device` is a context manager): where is unknown unless the
        analysis knows that device."""
        if isinstance(expr, (ast.Name, ast.Attribute)):
            key = dotted(expr)
            value = self.env.get(key) if key is not None else None
            if value is not None and value.kind == "device":
                if value.place.kind != DEVICE:
                    return value.place
                line = getattr(expr, "lineno", 0)
                return replace(value.place, why=why.made_under(key or "device", line))
            return UNKNOWN_PLACE if key is not None and looks_like_device_name(key) else None
        if not isinstance(expr, ast.Call):
            return None
        target = None
        if (self.names.resolve(expr.func) or "") == "torch.device" and expr.args:
            target = expr.args[0]
        elif keyword(expr, "device") is not None:
            target = keyword(expr, "device")
        if target is None:
            return None
        line = getattr(expr, "lineno", 0)
        place = self.place_of(target, line) or UNKNOWN_PLACE
        if place.kind == DEVICE:
            place = replace(place, why=why.made_under(_label(target) or "device", line))
        return place

    def place_of(self, expr: ast.AST | None, line: int) -> Place | None:
        """The place a device expression denotes (`"cuda:1"`, `device`, `x.device`, `torch.device(...)`)."""
        if expr is None:
            return None
        if isinstance(expr, ast.Constant):
            if isinstance(expr.value, str):
                if expr.value.startswith("cpu"):
                    return Place(HOST, why=why.moved_to_cpu(line))
                match = _ACCEL_STRING.match(expr.value)
                if match:
                    index = int(match.group(3)) if match.group(3) else None
                    return Place(DEVICE, device=expr.value, index=index)
                return None
            if isinstance(expr.value, int) and not isinstance(expr.value, bool):
                return Place(DEVICE, device=f"cuda:{expr.value}", index=expr.value)
            return None
        if (
            isinstance(expr, ast.Call)
            and (self.names.resolve(expr.func) or "") == "torch.device"
            and expr.args
        ):
            return self.place_of(expr.args[0], line)
        if isinstance(expr, ast.IfExp):
            body, orelse = self.place_of(expr.body, line), self.place_of(expr.orelse, line)
            for option in (body, orelse):
                if option is not None and option.kind == DEVICE:
                    return option
            return body or orelse
        if isinstance(expr, ast.JoinedStr) and expr.values:
            first = expr.values[0]
            if isinstance(first, ast.Constant) and str(first.value).startswith(("cuda", "xpu", "npu")):
                return Place(DEVICE, device=_label(expr))
            return None
        value = self.ev(expr)
        if value is not None:
            if value.kind == "device":
                return value.place
            if value.kind == "tensor":  # `.to(other)`: where `other` is
                return value.place
            return None
        key = dotted(expr)
        if key is None:
            return None
        full = self.names.resolve(expr) or ""
        if full.startswith("torch.") and full[6:] in DTYPES:
            return None
        if self.module_place is not None and key == f"{self.self_name}.device":  # Lightning's, and others'
            return self.module_place
        if key in self.bound:  # a name the function set, whose value the analysis lost: no guess by its name
            return None
        root = key.split(".", 1)[0]
        if key.endswith(".device") and root in self.bound and root not in self.env:
            return None  # `hessian.device` of a local the analysis lost: where `hessian` is, not a guess
        if looks_like_device_name(key):
            return Place(DEVICE, device=key)
        return None

    def move(self, call: ast.Call) -> Place | None:
        """Where `x.to(...)`, `x.cuda()`, `x.cpu()` puts `x` (None: a dtype-only `.to`, or unknown)."""
        attr = call.func.attr if isinstance(call.func, ast.Attribute) else None
        line = call.lineno
        if attr == "cpu":
            return Place(HOST, why=why.moved_to_cpu(line))
        if attr == "cuda":
            if call.args:
                place = self.place_of(call.args[0], line) or Place(DEVICE, device="cuda")
            else:
                place = Place(DEVICE, device="cuda", index=0)
        elif attr == "to":
            target = keyword(call, "device")
            if target is None and call.args:
                target = call.args[0]
            place = self.place_of(target, line)
        elif attr == "type_as" and call.args:
            value = self.ev(call.args[0])
            place = value.place if value is not None and value.kind == "tensor" else None
        elif attr == "type" and call.args:  # `x.type(torch.cuda.FloatTensor)`, `x.type(Tensor)`
            text = self.names.resolve(call.args[0]) or ""
            if isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
                text = call.args[0].value
            if ".cuda." in text:
                place = Place(DEVICE, device="cuda")
            elif text.startswith("torch.") and (text[6:] in DTYPES or text.endswith("Tensor")):
                return None  # a dtype: where it was
            else:
                return UNKNOWN_PLACE  # a tensor type the code picks at run time (often CUDA's)
        else:
            return None
        if place is None:
            return None
        if place.kind == DEVICE:
            named = call.args[0] if call.args else None
            named = named if isinstance(named, (ast.Name, ast.Attribute)) else None
            shown = (_label(named) if named is not None else None) or place.device or "the device"
            return replace(place, why=why.moved_to(shown, line))
        return place

    def dtype_only(self, call: ast.Call) -> bool:
        """`x.to(torch.float16)`, `x.to(dtype=...)`, `x.type(torch.float32)`: a conversion that does not
        move (`move` said None for it)."""
        if isinstance(call.func, ast.Attribute) and call.func.attr == "type":
            return True
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "to"):
            return False
        if keyword(call, "device") is not None:
            return False
        if not call.args:
            return keyword(call, "dtype") is not None
        first = call.args[0]
        full = self.names.resolve(first) or ""
        if full.startswith("torch.") and full[6:] in DTYPES:
            return True
        key = dotted(first) or ""
        return key.rsplit(".", 1)[-1] in ("dtype", "float_dtype", "compute_dtype", "torch_dtype")

    def args(self, call: ast.Call) -> tuple[list[Val | None], dict[str, Val | None]]:
        positional = [self.ev(a) for a in call.args]
        named = {kw.arg: self.ev(kw.value) for kw in call.keywords if kw.arg is not None}
        for kw in call.keywords:
            if kw.arg is None:
                self.ev(kw.value)
        return positional, named

    def call(self, call: ast.Call) -> Val | None:
        func = call.func
        full = self.names.resolve(func) or ""
        line = call.lineno
        if isinstance(func, ast.Attribute):
            attr = func.attr
            if attr in ("to", "cuda", "cpu", "type_as") or (attr == "type" and call.args):
                receiver = self.ev(func.value)
                self.args(call)
                place = self.move(call)
                if receiver is None:
                    return Val("moved", place) if place is not None else None
                if place is None:
                    if self.dtype_only(call):  # `.to(torch.float16)`: still where it was
                        return receiver
                    return receiver.at(UNKNOWN_PLACE, moved=True)  # moved, but where is not known
                if receiver.kind in ("tensor", "module", "batch", "moved"):
                    moved = receiver.at(place, moved=True)
                    return replace(moved, kind="tensor") if receiver.kind == "batch" else moved
                if receiver.kind in ("seq", "dict"):
                    return None
                return receiver
            if attr == "numpy" and not call.args:
                receiver = self.ev(func.value)
                self.analysis.questions.host_api(self, call, receiver, "numpy()")
                return None
        tokenized = self._tokenizer_output(call, full) or self._token_ids(call)
        if tokenized is not None:
            return tokenized
        if _NUMPY.match(full) and full not in _NUMPY_HARMLESS:
            args, kwargs = self.args(call)
            for value in [*args, *kwargs.values()]:
                self.analysis.questions.host_api(self, call, value, full.replace("numpy.", "np.", 1))
            return None
        if full.startswith("torch.") and not full.startswith(("torch.nn.", "torch.optim.", "torch.utils.")):
            return self.torch_call(call, full)
        if full == "torch.nn.utils.rnn.pad_sequence":
            # round 5: one tensor padded from a list of tensors, where they are (as `torch.stack`)
            args, kwargs = self.args(call)
            sequences = args[0] if args else kwargs.get("sequences")
            if sequences is not None and sequences.kind == "seq" and sequences.item is not None:
                return _result([sequences.item], call)
            return None
        if full.startswith("torch.nn.functional."):
            args, kwargs = self.args(call)
            values = [*args, *kwargs.values()]
            # (CTC's lengths may stay on the CPU: `devicekit.cpu_args`, the simulator's table too)
            self.analysis.questions.meet(self, call, _flatten(_judged(full, args, kwargs)), zero_dim_ok=False)
            return _result(values, call)
        if (full in ("torch.utils.data.DataLoader", "DataLoader") or full.endswith(".DataLoader")) and not (
            self.names.imports_torch_geometric  # PyG's batches move in place: `data.to(device)` is right
        ):
            self.args(call)
            if keyword(call, "collate_fn") is not None:
                return Val("custom-loader")  # its collate_fn may move the batches: where they are is unknown
            return Val("loader", Place(HOST), label=None)
        if _DATASETS.match(full):  # a torchvision dataset: its samples are CPU tensors (or images)
            self.args(call)
            return Val("dataset", Place(HOST))
        if _TRANSFORM_MAKERS.search(full):
            self.args(call)
            makes = "ToTensor" in full or "PILToTensor" in full or "ToImage" in full
            if not makes and call.args and isinstance(call.args[0], (ast.List, ast.Tuple)):
                makes = any(
                    re.search(r"(ToTensor|PILToTensor|ToImage)$", self.names.resolve(e.func) or "")
                    for e in call.args[0].elts
                    if isinstance(e, ast.Call)
                )
            return Val("transform", Place(HOST), to_tensor=makes)
        if full == "next" and call.args:
            inner = call.args[0]
            if (
                isinstance(inner, ast.Call)
                and (self.names.resolve(inner.func) or "") == "iter"
                and inner.args
            ):
                inner = inner.args[0]
            value = self.ev(inner)
            key = dotted(inner)
            if (
                value is None
                and key is not None
                and key not in self.bound
                and looks_like_loader_name(key)
                and not self.names.imports_torch_geometric
            ):  # `next(iter(self.valid_dataloader))`: as a loop over it would read it
                value = Val("loader", Place(HOST), label=key)
            if value is not None and value.kind == "loader":
                return Val(
                    "batch",
                    Place(HOST, why=why.batch_from(value.label or "the DataLoader", line)),
                    batch=True,
                )
            return None
        if (
            full.rsplit(".", 1)[-1] in _WRAPPERS and call.args
        ):  # DDP(model), torch.compile(model): where it is
            args, _ = self.args(call)
            inner = args[0]
            if inner is None or inner.kind not in ("module", "moved"):
                return None
            wrapped = self.analysis.questions.wrapped(self, call, full, inner)
            if wrapped is not None:
                return wrapped
            # DataParallel on a CPU module is DK013's (its own rule and message), not a model never moved
            if full.endswith("DataParallel") and (
                "Distributed" not in full or keyword(call, "device_ids") is not None or len(call.args) > 1
            ):
                # it scatters its inputs to its device: what it is called with is not its concern (and a
                # DataParallel around a CPU module is DK013's)
                return replace(inner, place=UNKNOWN_PLACE, created=None)
            return inner
        if self.names.is_loss_constructor(call) or self.names.is_module_constructor(call):
            args, kwargs = self.args(call)
            return self._built(call, full, [*args, *kwargs.values()])
        if looks_like_loss_class(full) and self._project_target(call) is None:
            # `losses.CharbonnierLoss()` from code not read: a loss, whose output is where its inputs are
            self.args(call)
            return Val("module", UNKNOWN_PLACE, label=_label(func), loss=True, cls=full)
        if isinstance(func, ast.Attribute):
            key = dotted(func)
            if key is not None and key in self.env:  # `self.encoder(x)`: an attribute that holds a module
                return self.plain_call(call, full)
            if (
                self.self_name is not None
                and key == f"{self.self_name}.{func.attr}"
                and _LOSS_ATTR.match(func.attr)
            ):
                # `self.loss_fn(predict, target)` in a module's step, or `self.criterion(out, labels)` in a
                # trainer (round 5), the loss set by code not read: a loss compares its inputs' devices (a
                # CTC loss, whose lengths may stay on the CPU, is not named so)
                args, kwargs = self.args(call)
                values = [*args, *kwargs.values()]
                self.analysis.questions.meet(self, call, _flatten(values), zero_dim_ok=False)
                return _result(values, call)
            return self.method_call(call, func)
        return self.plain_call(call, full)

    def torch_call(self, call: ast.Call, full: str) -> Val | None:
        short = full[6:]
        line = call.lineno
        args, kwargs = self.args(call)
        if "." in short:
            if short.startswith(("cuda.", "backends.", "distributed.", "autograd.grad", "jit.", "compile")):
                return None
        if short in CPU_ONLY_FACTORIES:
            return self._made(
                call,
                short,
                Place(HOST, why=why.from_numpy(line) if short == "from_numpy" else why.created_on_cpu(line)),
            )
        if short in DEVICE_FACTORIES or short in ("tensor", "as_tensor"):
            device = keyword(call, "device")
            if short in ("tensor", "as_tensor"):
                data = call.args[0] if call.args else None
                if device is None:
                    if isinstance(data, ast.Constant) or (
                        isinstance(data, ast.UnaryOp) and isinstance(data.operand, ast.Constant)
                    ):
                        return Val("tensor", self._default(line), zero_dim=True)  # 0-dim: mixes freely
                    if not isinstance(data, (ast.List, ast.Tuple, ast.ListComp)):
                        inner = args[0] if args else None
                        if short == "as_tensor" and inner is not None and inner.kind == "tensor":
                            return inner
                        if inner is not None and inner.kind == "data" and not self.analysis.default_device:
                            # round 6: Python data on the host (`tokenizer.encode(prompt)`): a CPU tensor
                            made = self._made(call, short, replace(inner.place, kind=HOST))
                            return made if not self.device_blocks else None
                        return None
            if device is None:
                if any(kw.arg is None for kw in call.keywords):
                    return None
                return self._made(call, short, self._default(line))
            place = self.place_of(device, line)
            if place is None:
                return Val("tensor", UNKNOWN_PLACE)
            if place.kind == DEVICE:
                place = replace(place, why=why.made_on(place.device or "the device", line))
            return Val(
                "tensor",
                place,
                zero_dim=False if short not in ("tensor", "as_tensor", "scalar_tensor") else None,
            )
        if _LIKE.match(short) or short in ("empty_like", "clone"):
            first = args[0] if args else None
            device = keyword(call, "device")
            if device is not None:
                place = self.place_of(device, line)
                return Val("tensor", place or UNKNOWN_PLACE)
            return (
                replace(first, created=None, batch=False)
                if first is not None and first.kind == "tensor"
                else None
            )
        if short == "device":
            first = call.args[0] if call.args else keyword(call, "type")
            place = self.place_of(first, line) if first is not None else None
            return Val("device", place) if place is not None else None
        if short in ("load",):
            location = keyword(call, "map_location")
            if location is None and len(call.args) > 1:
                location = call.args[1]
            place = self.place_of(location, line) if location is not None else None
            return Val("any", place) if place is not None else None
        if short in (
            "save",
            "manual_seed",
            "is_tensor",
            "numel",
            "set_default_device",
            "set_default_tensor_type",
        ):
            return None
        values = [*args, *kwargs.values()]
        flat = _flatten(_judged(full, args, kwargs))
        zero_ok = short in (
            "where",
            "add",
            "sub",
            "mul",
            "div",
            "maximum",
            "minimum",
            "eq",
            "ne",
            "lt",
            "gt",
            "pow",
        )
        self.analysis.questions.meet(self, call, flat, zero_dim_ok=zero_ok)
        return _result(values, call)

    def _default(self, line: int) -> Place:
        if self.device_blocks:
            return self.device_blocks[-1]
        if self.analysis.default_device:
            return UNKNOWN_PLACE
        return Place(
            HOST, why=why.created_on_cpu(line, self.name if self.events is not None or self.depth else None)
        )

    def _made(self, call: ast.Call, short: str, place: Place) -> Val:
        here = place.kind == HOST and self.source is self.analysis.source
        return Val(
            "tensor",
            place,
            zero_dim=short == "scalar_tensor",
            made=place.kind == HOST,
            created=(call.lineno, call.col_offset) if here else None,
        )

    def method_call(self, call: ast.Call, func: ast.Attribute) -> Val | None:
        attr = func.attr
        receiver = self.ev(func.value)
        args, kwargs = self.args(call)
        if receiver is None:
            target = self._project_target(call)
            if target is not None:
                return self._call_project(call, target, args, kwargs)
            if self._inherited_submodule(func):
                module = Val(
                    "module", Place(INPUT, why=why.submodule(_label(func) or attr)), label=_label(func)
                )
                return self._module_call(call, module, args, kwargs)
            self.hand_over(call)
            return self._output_of_unread_model(call, args)
        if receiver.kind == "tensor":
            if attr in NOT_TENSOR or attr in ("tolist", "item", "__len__"):
                return None
            if attr in MEETING_METHODS:
                self.analysis.questions.meet(
                    self, call, [receiver, *_flatten([*args, *kwargs.values()])], zero_dim_ok=False
                )
            if _NEW.match(attr):
                device = keyword(call, "device")
                if device is not None:
                    return Val("tensor", self.place_of(device, call.lineno) or UNKNOWN_PLACE)
                return replace(receiver, created=None, batch=False, label=None, zero_dim=False)
            zero = True if attr in REDUCTIONS and not call.args and not call.keywords else receiver.zero_dim
            return replace(receiver, label=_label(call), zero_dim=zero)
        if receiver.kind == "object":
            target = self._method_target(receiver, attr)
            known = [v for v in _flatten([*args, *kwargs.values()]) if v is not None]
            if target is not None and any(v.place.kind in (DEVICE, INPUT) for v in known):
                return self.analysis.call(self, call, target, args, kwargs, receiver)
            return None
        if receiver.kind == "module":
            if attr in ("state_dict", "parameters", "buffers", "named_parameters"):
                return Val("dict" if attr == "state_dict" else "seq", item=Val("tensor", receiver.place))
            if attr in ("eval", "train", "half", "float", "double", "requires_grad_", "bfloat16"):
                return receiver
            if attr in ("forward",):
                return self._module_call(call, receiver, args, kwargs)
            target = self._method_target(receiver, attr)
            if target is not None:
                return self.analysis.call(self, call, target, args, kwargs, receiver)
            if attr == "generate" and receiver.loss is False:
                # round 6: a library model's `generate(input_ids=...)` (transformers) runs the model on
                # the ids as they are, as a call would (AIDungeon#56, evalplus#298: CPU ids, GPU model)
                return self._module_call(call, receiver, args, kwargs)
            return None
        if receiver.kind == "batch" and attr not in ("items", "values", "keys", "get", *_MUTATORS):
            receiver = replace(receiver, kind="tensor")  # a method of the tensor the batch is
        if receiver.kind in ("dict", "seq", "batch") and attr in _MUTATORS:
            key = dotted(func.value)
            if key is not None:
                self.env.pop(key, None)
                grown = self._accumulated(receiver, attr, args)
                if grown is not None:
                    self.env[key] = grown
            return None
        if receiver.kind == "dict" and attr in ("items",):
            return Val("items", item=receiver.item)
        if receiver.kind == "dict" and attr in ("values",):
            return Val("seq", item=receiver.item)
        if receiver.kind == "dict" and attr == "get" and call.args and isinstance(call.args[0], ast.Constant):
            for key, item in receiver.items or ():
                if key == call.args[0].value:
                    return item
            return receiver.item
        if receiver.kind == "batch":
            if attr in ("items",):
                return Val("items", item=Val("tensor", receiver.place, batch=True))
            if attr in ("values",):
                return Val("seq", item=Val("tensor", receiver.place, batch=True))
            return None
        if receiver.kind == "any" and attr == "get":
            return Val("any", receiver.place)
        return None

    @staticmethod
    def _accumulated(receiver: Val, attr: str, args: list[Val | None]) -> Val | None:
        """`losses.append(loss)` on a list that was empty (`losses = []`) or holds only what was appended
        before: a list whose every element is where the appended tensors are (what `np.mean(losses)` then
        reads). Anything else it was given, or another change, makes its content unknown (None)."""
        if receiver.kind != "seq" or attr != "append" or len(args) != 1 or args[0] is None:
            return None
        value = args[0]
        if value.kind not in _TENSORS or value.place.kind == UNKNOWN:
            return None
        if receiver.items == () and receiver.item is None:
            return replace(receiver, items=None, item=value)
        if receiver.items is None and receiver.item is not None:
            item = join(receiver.item, value)
            return replace(receiver, item=item) if item is not None else None
        return None

    def _inherited_submodule(self, func: ast.Attribute) -> bool:
        """`self.emb(pos)` in a module's runtime method, `emb` neither a method of the class nor assigned
        anywhere in it (a base class or a builder set it): a submodule, whose weights are on the module's
        device."""
        if not (
            self.module_place is not None
            and isinstance(func.value, ast.Name)
            and func.value.id == self.self_name
            and _RUNTIME_METHOD.match(self.name or "")
        ):
            return False
        if func.attr in _MODULE_METHODS or func.attr.startswith(("register_", "named_", "get_", "log")):
            return False  # `self.register_buffer(...)`, Lightning's `self.log(...)`: methods, not submodules
        cls = _enclosing_class(self.source, self.function)
        if cls is None or _method(cls, func.attr) is not None:
            return False
        for node in walk(cls):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == func.attr
                and not isinstance(node.ctx, ast.Load)
            ):
                return False  # assigned here to something the analysis did not place: unknown
            if isinstance(node, ast.Constant) and node.value == func.attr:
                return False  # `setattr(self, "emb", ...)`, `register_buffer("emb", ...)`
        return True

    def plain_call(self, call: ast.Call, full: str) -> Val | None:
        func = call.func
        callee = self.ev(func)
        args, kwargs = self.args(call)
        if (
            callee is None
            and isinstance(func, ast.Name)
            and func.id == self.self_name
            and self.module_place is not None
        ):  # `self(x1, x2)` in a module's step: its own output, on its own device
            return Val("tensor", replace(self.module_place, why=why.own_output()), label=_label(call))
        if callee is not None:
            if callee.kind == "module":
                return self._module_call(call, callee, args, kwargs)
            if callee.kind == "moved" and callee.place.kind != UNKNOWN:  # `Net().to(device)`, `Net` unknown
                return self._module_call(call, replace(callee, kind="module", moved=True), args, kwargs)
            if callee.kind == "transform":
                arg = args[0] if args else None
                if arg is not None and arg.kind == "tensor":
                    return replace(arg, created=None, label=None)
                if callee.to_tensor:
                    return Val("tensor", Place(HOST, why=why.transform_output(call.lineno)), made=True)
                return None
            return None
        target = self._project_target(call)
        if target is not None:
            return self._call_project(call, target, args, kwargs)
        if full not in _HARMLESS:
            self.hand_over(call)
        if isinstance(func, ast.Name) and _LOSS_ATTR.match(func.id) and self._unread_name(func.id):
            # round 5: `criterion(output, labels)` with the loss handed in by code not read (a parameter):
            # a loss compares its inputs' devices, as `self.criterion(...)` does
            values = [*args, *kwargs.values()]
            self.analysis.questions.meet(self, call, _flatten(values), zero_dim_ok=False)
            return _result(values, call)
        return self._output_of_unread_model(call, args)

    def _default_filled(self, stmt: ast.If) -> None:
        """Round 5: `if device is None: device = self.emb.weight.device` for a parameter the analysis knows
        nothing about: the code fills the default with a device (a module's own, an accelerator), so the
        name holds that place after the test, as a caller that passes nothing gets it. A default filled
        with the CPU is not followed (a caller may pass an accelerator)."""
        test = stmt.test
        if stmt.orelse or len(stmt.body) != 1 or not isinstance(stmt.body[0], ast.Assign):
            return
        if not (
            isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name)
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Is)
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None
        ):
            return
        assign = stmt.body[0]
        name = test.left.id
        if len(assign.targets) != 1 or not (
            isinstance(assign.targets[0], ast.Name) and assign.targets[0].id == name
        ):
            return
        current = self.env.get(name)
        if not looks_like_device_name(name) or (current is not None and current.place.kind != UNKNOWN):
            return
        function = self.function
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return
        if name not in {a.arg for a in _params(function)}:
            return
        value = self.ev(assign.value)
        if value is not None and value.kind == "device" and value.place.kind in (DEVICE, INPUT):
            self.env[name] = value

    def _tensor_test(self, test: ast.AST) -> dict[str, Val]:
        """Round 5: `torch.is_tensor(x)`, `isinstance(x, torch.Tensor)`: in the body of the test, `x` (a
        name the analysis knows nothing about) is a tensor, whose place is unknown. Only where the function
        is read on its own: read for a call, a parameter the call does not give holds its default (a list),
        and the branch is not the call's path."""
        if self.events is not None or self.depth or not isinstance(test, ast.Call) or len(test.args) < 1:
            return {}
        full = self.names.resolve(test.func) or ""
        subject = test.args[0]
        if full == "torch.is_tensor" and len(test.args) == 1:
            pass
        elif full == "isinstance" and len(test.args) == 2:
            kinds = test.args[1].elts if isinstance(test.args[1], ast.Tuple) else [test.args[1]]
            if not all((self.names.resolve(k) or "") == "torch.Tensor" for k in kinds):
                return {}
        else:
            return {}
        key = dotted(subject)
        if key is None or key in self.env:
            return {}
        return {key: Val("tensor", UNKNOWN_PLACE, label=key)}

    def _names_a_device(self, call: ast.Call) -> bool:
        """`x.to(device)`, `x.to(other.device)`, `x.cuda()`: a move to a device, wherever that is (not a
        dtype-only `.to(torch.float16)`)."""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in ("cuda", "cpu"):
            return True
        target = call.args[0] if call.args else keyword(call, "device")
        if target is None:
            return False
        value = self.ev(target)
        if value is not None:
            return value.kind == "device"
        key = dotted(target)
        return key is not None and (key.endswith(".device") or looks_like_device_name(key))

    def _tokenizer_output(self, call: ast.Call, full: str) -> Val | None:
        """Round 5: `tokenizer(text, return_tensors="pt")`, `processor(..., return_tensors="pt")`,
        `tokenizer.encode(prompt, return_tensors="pt")` from a library (not the project's own code): PyTorch
        tensors made on the CPU, never moved yet, like a DataLoader's batch. `encode` and
        `apply_chat_template` give one tensor of ids; the others a `BatchEncoding` (a dict of tensors whose
        `.to(device)` moves it in place, so a whole one is no dropped move)."""
        flag = keyword(call, "return_tensors")
        if not (isinstance(flag, ast.Constant) and flag.value == "pt"):
            return None
        if self._project_target(call) is not None or any(kw.arg is None for kw in call.keywords):
            return None
        self.args(call)
        callee = _label(call.func) or "the tokenizer"
        reason = Message_(
            f'is made on the CPU by `{callee}(..., return_tensors="pt")` at line {call.lineno}',
            f'在第 {call.lineno} 行由 `{callee}(..., return_tensors="pt")` 生成，在 CPU 上',
        )
        one_tensor = isinstance(call.func, ast.Attribute) and call.func.attr in (
            "encode",
            "apply_chat_template",
        )
        if one_tensor:
            if keyword(call, "return_dict") is not None:
                return None
            return Val("tensor", Place(HOST, why=reason), batch=True, node=call)
        return Val("batch", Place(HOST, why=reason), batch=True, whole=True, node=call)

    def _token_ids(self, call: ast.Call) -> Val | None:
        """Round 6: `tokenizer.encode(prompt)` without `return_tensors` (Hugging Face, tiktoken,
        SentencePiece, a tokenizer class the code does not show): a Python list of ids, on the host.
        `torch.tensor(ids)` of it is a CPU tensor (`_tensor_of_data`). Only for a receiver named as a
        tokenizer: a model's `encode(images)` gives tensors wherever the model is."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr in _TOKEN_ID_METHODS):
            return None
        receiver = (dotted(func.value) or "").rsplit(".", 1)[-1]
        if not _TOKENIZER_NAME.search(receiver) or keyword(call, "return_tensors") is not None:
            return None
        if self._project_target(call) is not None or any(kw.arg is None for kw in call.keywords):
            return None
        self.ev(func.value)
        self.args(call)
        callee = _label(func) or "the tokenizer"
        reason = Message_(
            f"is made on the CPU from the token ids of `{callee}(...)` (line {call.lineno})",
            f"由 `{callee}(...)`（第 {call.lineno} 行）给出的词元编号在 CPU 上生成",
        )
        return Val("data", Place(HOST, why=reason))

    def _unread_name(self, name: str) -> bool:
        """A name the file neither defines nor imports (a parameter, or set from code not read)."""
        names = self.names
        return not (
            name in names.functions or name in names.classes or name in names.aliases or names.star_import
        )

    def _output_of_unread_model(self, call: ast.Call, args: list) -> Val | None:
        """`pred = model(x)` with `model` from code not read (a parameter) and `x` on a device: once the
        line has run, the model ran there, and so is its output (`devicekit.lint.guesses`). The same for
        `self.model(x)` in a class that is not a module (a trainer given its model; round 5)."""
        func = call.func
        name = None
        if isinstance(func, ast.Name):
            name = unread_model(func)
        elif (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == self.self_name
            and self.self_name is not None
            and self.module_place is None
        ):
            name = unread_model(func)
        if name is None or name in self.names.functions or name in self.names.classes:
            return None
        places = [
            a for a in args if a is not None and a.kind in (*_TENSORS, "moved") and a.place.kind == DEVICE
        ]
        if not places or any(not places[0].place.same(a.place) for a in places[1:]):
            return None
        arg = places[0]
        reason = why.output_of(name, why.called_with(arg.label or "its input", arg.place.why))
        return Val("tensor", replace(arg.place, why=reason), label=_label(call))

    def hand_over(self, call: ast.Call, parts_only: bool = False) -> None:
        """A module (or a part of one: `model.linear1`) given to code the analysis cannot read may be moved
        there (`add_hook_to_module(model.linear1, AlignDevicesHook(0))`): where it is becomes unknown.
        With `parts_only`, only for parts: where a whole module goes in a function the analysis read is
        known."""
        for arg in [*call.args, *(kw.value for kw in call.keywords)]:
            key = dotted(arg)
            if key is None or (parts_only and "." not in key):
                continue
            for name in (key, key.split(".", 1)[0]):
                value = self.env.get(name)
                if value is not None and value.kind == "module" and value.place.kind == HOST:
                    self.env[name] = value.at(UNKNOWN_PLACE, moved=True)

    def _built(self, call: ast.Call, full: str, args: list[Val | None] = ()) -> Val:  # type: ignore[assignment]
        cls = None
        target = self._project_target(call)
        if target is not None and isinstance(target[1], ast.ClassDef):
            cls = self._qualified(target)
        label = _label(call.func)
        if full.startswith("torch.nn.") and full.rsplit(".", 1)[-1] in STATELESS_NN:
            # no weights: it runs where its input is, and so is its output (`_module_call`)
            return Val("module", UNKNOWN_PLACE, label=label, moved=True, cls=full)
        if target is not None and builds_weightless(self.analysis.project, self.source, call):
            # round 6: a project module with no layer, parameter or buffer (`Until(Identity("x"), ...)`):
            # nothing to move, it runs where its input is
            self.analysis.project.cache.setdefault("weightless", set()).add(cls)
            return Val("module", UNKNOWN_PLACE, label=label, moved=True, cls=cls)
        if self.device_blocks:  # built under `with torch.device(...)`: its weights are there
            return Val("module", self.device_blocks[-1], label=label, moved=True, cls=cls)
        placed = keyword(call, "device_map") or keyword(call, "device")
        if placed is not None:  # `from_pretrained(..., device_map=...)`, `nn.Linear(2, 2, device=...)`
            place = self.place_of(placed, call.lineno) if keyword(call, "device") is not None else None
            return Val("module", place or UNKNOWN_PLACE, label=label, moved=True, cls=cls)
        if self.names.is_loss_constructor(call) or (cls is not None and looks_like_loss_class(cls)):
            weighted = keyword(call, "weight") is not None or keyword(call, "pos_weight") is not None
            place = UNKNOWN_PLACE if weighted else Place(HOST)
            return Val("module", place, label=label, loss=not weighted, cls=full)
        # `Wrapper(model, ...)`: around a module that is already somewhere (modules built right here and
        # never moved, `nn.Sequential(nn.Linear(...))`, leave it on the CPU)
        wraps = any(
            v is not None
            and v.kind == "module"
            and not (v.place.kind == HOST and v.created is not None)
            and not _stateless(v)  # (`nn.ReLU()` in `nn.Sequential(...)` is nowhere in particular)
            and not (v.place.kind == UNKNOWN and v.cls in self.analysis.project.cache.get("weightless", ()))
            for v in _flatten(args)
        )
        if wraps or (
            target is not None
            and isinstance(target[1], ast.ClassDef)
            and self.analysis.places_itself(*target)
        ):
            # around a module that is already somewhere, or a class of the project that picks its own
            # device (`PerceptualLoss(use_gpu=True)`)
            return Val("module", UNKNOWN_PLACE, label=label, moved=True, cls=cls)
        return Val(
            "module",
            Place(HOST, why=why.built_here(call.lineno)),
            label=label,
            created=(call.lineno, call.col_offset),
            cls=cls,
        )

    def _qualified(self, target: tuple[SourceFile, ast.AST]) -> str:
        source, node = target
        from devicekit.lint.project import module_names

        names = module_names(source.path)[1]
        prefix = names[-1] if names else ""
        return f"{prefix}.{node.name}" if prefix else node.name  # type: ignore[attr-defined]

    def _module_call(self, call: ast.Call, module: Val, args: list, kwargs: dict) -> Val | None:
        flat = _flatten([*args, *kwargs.values(), *self._spread_batches(call)])
        judged = _flatten(_judged(_table_name(module.cls), args, kwargs)) if module.loss else flat
        self.analysis.questions.module_call(self, call, module, judged)
        if module.loss:
            self._refine_by_loss(call, module, args)
            return _result(flat, call)
        if _stateless(module) or (
            module.place.kind == UNKNOWN and module.cls in self.analysis.project.cache.get("weightless", ())
        ):  # (round 6: a project module without weights runs where its input is, as `nn.ReLU()` does)
            return _result(flat, call)
        result = None
        if module.cls is not None and module.place.kind in (HOST, DEVICE):
            source = self.source
            found = self.analysis.project.lookup(module.cls, source)
            if found is None:
                for candidate in self.analysis.project.files.values():
                    node = candidate.classes.get(module.cls.rsplit(".", 1)[-1])
                    if node is not None:
                        found = (candidate, node)
                        break
            if found is not None and isinstance(found[1], ast.ClassDef):
                forward = next(
                    (
                        n
                        for n in found[1].body
                        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "forward"
                    ),
                    None,
                )
                if forward is not None:
                    result = self.analysis.call(self, call, (found[0], forward), args, kwargs, module)
        if module.place.kind == INPUT:
            reason = why.submodule_output(module.label) if module.label else module.place.why
            return Val("tensor", replace(module.place, why=reason), label=_label(call))
        if module.place.kind in (HOST, DEVICE):
            reason = why.output_of(module.label or "the model", module.place.why)
            return Val("tensor", replace(module.place, why=reason), label=_label(call))
        return result if result is not None and result.kind == "tensor" else None

    def _spread_batches(self, call: ast.Call) -> list[Val]:
        """`model(**batch)` with a DataLoader's whole batch that nothing moved: its tensors are the
        model's inputs, on the CPU (a batch moved in place, `batch.to(device)`, is no longer one)."""
        spread = []
        for kw in call.keywords:
            key = dotted(kw.value) if kw.arg is None else None
            value = self.env.get(key) if key is not None else None
            if value is not None and value.batch and value.whole and value.place.kind == HOST:
                spread.append(replace(value, kind="tensor", label=key, node=kw.value))
        return spread

    def _refine_by_loss(self, call: ast.Call, module: Val, args: list) -> None:
        """`criterion(outputs, labels.to(device))` with `outputs` from code not read (`net(x)`, `net` a
        parameter): a loss checks that its inputs share a device, so once the line has run `outputs` is
        where `labels` is. Only a name this function bound, whose place is unknown, next to exactly one
        known accelerator place, learns it; nothing is learnt from a CPU operand (it may be the bug)."""
        if cpu_positions(_table_name(module.cls)) is not None or self.events is not None:
            return
        known = [
            v
            for v in args
            if v is not None and v.kind in ("tensor", "moved") and v.place.kind == DEVICE and not v.zero_dim
        ]
        if not known or any(not known[0].place.same(v.place) for v in known[1:]):
            return
        other = known[0]
        for expr, value in zip(call.args, args, strict=False):
            key = expr.id if isinstance(expr, ast.Name) else None
            if key is None or key not in self.bound:
                continue
            if value is not None and not (value.kind in _TENSORS and value.place.kind == UNKNOWN):
                continue
            reason = why.met_in_loss(other.label or "the other input", call.lineno, other.place.why)
            self.env[key] = Val("tensor", replace(other.place, why=reason), label=key)

    def _project_target(self, call: ast.Call) -> tuple[SourceFile, ast.AST] | None:
        func = call.func
        if (
            isinstance(func, ast.Attribute)
            and self.self_name is not None
            and isinstance(func.value, ast.Name)
        ):
            if func.value.id == self.self_name:
                cls = _enclosing_class(self.source, self.function)
                if cls is not None:
                    for node in cls.body:
                        if (
                            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                            and node.name == func.attr
                        ):
                            return self.source, node
                return None
        full = self.names.resolve(func)
        if not full:
            return None
        if full.split(".", 1)[0] in ("torch", "numpy", "np", "os", "sys", "math", "random", "re", "json"):
            return None
        return self.analysis.project.lookup(full, self.source)

    def _method_target(self, receiver: Val, attr: str) -> tuple[SourceFile, ast.AST] | None:
        if receiver.cls is None:
            return None
        found = self.analysis.project.lookup(f"{receiver.cls}.{attr}", self.source)
        return found

    def _call_project(self, call: ast.Call, target, args, kwargs) -> Val | None:
        source, node = target
        if isinstance(node, ast.ClassDef):
            if self.analysis.project.is_module_class(source, node):
                return self._built(call, self.names.resolve(call.func) or "", [*args, *kwargs.values()])
            if _method(node, "__init__") is not None and not any(
                v is not None and v.kind in ("module", "moved") for v in [*args, *kwargs.values()]
            ):
                # an object of a project class (a diffusion schedule, a trainer built from plain values):
                # its methods are read with what its `__init__` put in `self.x`
                return Val("object", label=_label(call.func), cls=self._qualified(target))
            return None
        if isinstance(call.func, ast.Attribute) and self.self_name is not None:
            if isinstance(call.func.value, ast.Name) and call.func.value.id == self.self_name:
                return self._self_method(call, node, args, kwargs)
        result = self.analysis.call(self, call, target, args, kwargs, None)
        self.hand_over(call, parts_only=True)  # the analysis follows a module given whole, not a part of one
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            # a module it is given and sets attributes on (a hook): its place becomes unknown (what the
            # function changes is read only when it is given a module: reading it walks the function)
            names = [p.arg for p in _params(node)]
            given = [*zip(names, call.args, strict=False), *((k.arg, k.value) for k in call.keywords)]
            modules = [(name, dotted(arg)) for name, arg in given if self._holds_module(dotted(arg))]
            changed = self.analysis.changed_params(node) if modules else set()
            for name, key in modules:
                if name in changed:
                    self.env[key] = self.env[key].at(UNKNOWN_PLACE, moved=True)
        return result

    def _holds_module(self, key: str | None) -> bool:
        value = self.env.get(key) if key is not None else None
        return value is not None and value.kind == "module"

    def _self_method(self, call: ast.Call, node, args, kwargs) -> Val | None:
        """`self.helper(...)`: the helper runs with this method's `self.x` and the arguments' places."""
        known = [a for a in [*args, *kwargs.values()] if a is not None and a.place.kind != UNKNOWN]
        params = _params(node)
        env = {k: v for k, v in self.env.items() if self.self_name and k.startswith(self.self_name + ".")}
        if params:
            env = {params[0].arg + k[len(self.self_name or "") :]: v for k, v in env.items()}
        for i, value in enumerate(args):
            if i + 1 < len(params) and value is not None:
                env[params[i + 1].arg] = (
                    _as_param(value, params[i + 1].arg, call.lineno)
                    if value.place.kind != INPUT
                    else value.named(params[i + 1].arg)
                )
        for key, value in kwargs.items():
            if value is not None and any(p.arg == key for p in params):
                env[key] = value.named(key)
        if (
            self.depth >= MAX_DEPTH
            or id(node) in self.analysis.active
            or self.analysis.contexts >= MAX_CONTEXTS
        ):
            return None
        signature = (
            "self",
            id(node),
            tuple(_signature(a) for a in args),
            tuple(sorted((k, _signature(v)) for k, v in kwargs.items())),
            id(self.events) if self.events is not None else None,
        )
        if signature in self.analysis.summaries and not self.quiet:
            return self.analysis.summaries[signature]
        if (
            not known
            and not any(True for _ in env)
            and not self.quiet
            and not self.analysis.worth_reading(self.source, node)  # (a helper that makes a CPU mask)
        ):
            return None
        self.analysis.contexts += 1
        self.analysis.active.add(id(node))
        try:
            inner = Flow(
                self.analysis,
                self.source,
                node,
                env,
                events=self.events,
                self_name=params[0].arg if params else None,
                depth=self.depth + 1,
                # a module's method that is not run on its data (`sequence_length()` called in
                # `__init__`) calls its `forward` while the module may still be on the CPU: no report
                quiet=self.quiet
                or (self.module_place is not None and not _RUNTIME_METHOD.match(self.name or "")),
            )
            inner.module_place = self.module_place
            inner.run(node.body)
        finally:
            self.analysis.active.discard(id(node))
        if self.quiet and self.self_name is not None and params:
            # `__init__` calling `self.set_model()`: what the helper puts in `self.x` is there afterwards
            prefix = params[0].arg + "."
            for key, value in inner.env.items():
                if key.startswith(prefix):
                    self.env[self.self_name + key[len(params[0].arg) :]] = value
        result = inner.returned()
        self.analysis.summaries[signature] = result
        return result


def _changed_params(function: ast.AST) -> set[str]:
    """Parameters the function sets attributes on (`module._hf_hook = hook`, `setattr(module, ...)`)."""
    names = {a.arg for a in _params(function)}  # type: ignore[arg-type]
    changed = set()
    for node in walk(function):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
            targets = node.args[:1]
        for target in targets:
            while isinstance(target, (ast.Attribute, ast.Subscript)):
                target = target.value
                if isinstance(target, ast.Name) and target.id in names:
                    changed.add(target.id)
    return changed


_DEVICE_WORDS = re.compile(r"cpu|cuda|device|gpu|mps|xpu|accelerat", re.I)


#: Flags that say a GPU is used (`use_cuda`, `args.cuda`), or that it is not (`args.no_cuda`, `force_cpu`).
_GPU_FLAGS = re.compile(r"^(use_?|with_?|has_?|on_?)?(cuda|gpu|gpus)(_available)?$", re.I)
_CPU_FLAGS = re.compile(r"^(no_?cuda|no_?gpu|cpu|use_?cpu|force_?cpu|cpu_?only|only_?cpu)$", re.I)
#: A class's name: CamelCase, not all capitals (`SaitsEmbedding`, `MLP2d`; not `CONFIG`, `dataclass`).
_CLASS_NAME = re.compile(r"^[A-Z](?=[A-Za-z0-9]*[a-z])[A-Za-z0-9]*$")
#: Methods of a tokenizer that give a Python list of token ids (without `return_tensors`).
_TOKEN_ID_METHODS = frozenset({"encode", "encode_ordinary", "convert_tokens_to_ids", "EncodeAsIds"})
#: A receiver named as a tokenizer (`tokenizer`, `self.tok`, `enc`, `bpe`, `sp_model`).
_TOKENIZER_NAME = re.compile(r"(^|_)(tokenizer|tok|enc|bpe|sp|sp_model|spm)$|tokenizer", re.I)
#: A count of the machine's GPUs (`args.n_gpu`, `num_gpus`, `ngpu`), compared with a number.
_GPU_COUNT = re.compile(r"^(n_?|num_?|number_of_?)(gpu|gpus|cuda_devices)$", re.I)
#: Calls that ask whether the machine has an accelerator.
_AVAILABLE = frozenset(
    {"torch.cuda.is_available", "torch.backends.mps.is_available", "torch.xpu.is_available"}
)


def _gpu_side(test: ast.AST, names: Names) -> int | None:
    """Which path of an `if` a machine with a GPU takes: 0 for its body (`if torch.cuda.is_available():`,
    `if use_cuda:`, `if args.device == "cuda":`), 1 for its `else` (`if args.no_cuda:`, `if device ==
    "cpu":`), None when the test says something else (`x.is_cuda` asks about one tensor, not the machine)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        side = _gpu_side(test.operand, names)
        return None if side is None else 1 - side
    if isinstance(test, ast.BoolOp):
        # round 6: `if device == "cuda" and torch.cuda.is_available():` — a machine with a GPU (and the
        # rest true) takes the body; `if args.no_cuda or not torch.cuda.is_available():` — it takes the
        # `else`. The other way round (`no_cuda and x`) a path holds both machines: not a test of the GPU.
        sides = {_gpu_side(value, names) for value in test.values} - {None}
        if len(sides) != 1:
            return None
        side = sides.pop()
        return side if side == (0 if isinstance(test.op, ast.And) else 1) else None
    if isinstance(test, ast.Call):
        return 0 if (names.resolve(test.func) or "") in _AVAILABLE and not test.args else None
    if isinstance(test, (ast.Name, ast.Attribute)):
        name = test.id if isinstance(test, ast.Name) else test.attr
        if _GPU_FLAGS.match(name):
            return 0
        return 1 if _CPU_FLAGS.match(name) else None
    count = _gpu_count_side(test)
    if count is not None:
        return count
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq)):
        left, right = test.left, test.comparators[0]
        const, other = (right, left) if isinstance(right, ast.Constant) else (left, right)
        if not isinstance(const, ast.Constant) or not isinstance(const.value, str):
            return None
        if "device" not in (dotted(other) or "").lower():  # `device`, `args.device`, `device.type`
            return None
        if const.value in ("cuda", "gpu") or const.value.startswith("cuda:"):
            side = 0
        elif const.value == "cpu":
            side = 1
        else:
            return None
        return side if isinstance(test.ops[0], ast.Eq) else 1 - side
    return None


def _gpu_count_side(test: ast.AST) -> int | None:
    """Round 6: a count of GPUs compared with a number: `if args.n_gpu > 0:`, `if num_gpus >= 1:`, `if
    n_gpu == 1:` — 0 (the body is what a machine with a GPU runs; `n_gpu > 1`, several GPUs, too); `if
    n_gpu == 0:`, `if num_gpus < 1:` — 1. A GPU flag only as `args.cuda > 0` / `>= 1`: `args.gpu == 0`
    may name GPU 0 (an id, -1 for the CPU), so an equality with a flag says nothing."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if not (isinstance(right, ast.Constant) and type(right.value) is int and right.value >= 0):
        return None
    name = left.id if isinstance(left, ast.Name) else left.attr if isinstance(left, ast.Attribute) else ""
    count = _GPU_COUNT.match(name) is not None
    if not (count or _GPU_FLAGS.match(name)):
        return None
    n = right.value
    if isinstance(op, ast.Gt) or (isinstance(op, ast.GtE) and n >= 1):
        return 0
    if not count:
        return None
    if isinstance(op, ast.Eq):
        return 0 if n >= 1 else 1
    if (isinstance(op, ast.Lt) and n == 1) or (isinstance(op, ast.LtE) and n == 0):
        return 1
    return None


def _about_devices(test: ast.AST) -> bool:
    """A test that asks about devices (`x.is_cuda`, `device == "cpu"`, `torch.cuda.is_available()`):
    its paths are chosen by where things are, so a CPU tensor on one of them may be right."""
    for node in walk(test):
        if isinstance(node, ast.Name) and _DEVICE_WORDS.search(node.id):
            return True
        if isinstance(node, ast.Attribute) and _DEVICE_WORDS.search(node.attr):
            return True
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and _DEVICE_WORDS.search(node.value)
        ):
            return True
    return False


def _expects_an_error(expr: ast.AST) -> bool:
    """`pytest.raises(...)`, `self.assertRaises(...)`: a block that fails on purpose."""
    if not isinstance(expr, ast.Call):
        return False
    name = (dotted(expr.func) or "").rsplit(".", 1)[-1]
    return name in ("raises", "assertRaises", "assertRaisesRegex", "assertRaisesRegexp")


def _calls_and_loops(function: ast.AST) -> tuple[list[ast.Call], list[ast.AST]]:
    calls, loops = [], []
    for node in walk(function):
        if isinstance(node, ast.Call):
            calls.append(node)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            loops.append(node)
    return calls, loops


def _method(cls: ast.ClassDef, name: str) -> ast.AST | None:
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
    return None


def _enclosing_class(source: SourceFile, function: ast.AST) -> ast.ClassDef | None:
    """The class whose body defines `function` (top-level classes only)."""
    owners = source.__dict__.get("_owners")
    if owners is None:
        owners = {id(item): cls for cls in source.classes.values() for item in cls.body}
        source.__dict__["_owners"] = owners
    return owners.get(id(function))


def _leaves(body: list[ast.stmt]) -> bool:
    """The block ends by leaving (return, raise, continue, break): its names do not reach the join."""
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def _elements(value: Val | None, count: int) -> list[Val | None]:
    if value is None:
        return [None] * count
    if value.kind == "seq" and value.items is not None and len(value.items) == count:
        return [item for _, item in value.items]
    if value.kind == "seq":
        return [value.item] * count
    if value.kind == "batch":  # each part of a batch: a tensor, or a dict or list of them
        return [replace(value, label=None, whole=False)] * count
    if value.kind == "tensor":
        return [replace(value, label=None)] * count  # `_, predicted = torch.max(out, 1)`
    return [None] * count


def _stateless(module: Val) -> bool:
    """A `torch.nn` module without parameters or buffers (`nn.ReLU()`): it runs where its input is."""
    cls = module.cls or ""
    return cls.startswith("torch.nn.") and cls.rsplit(".", 1)[-1] in STATELESS_NN


def _table_name(cls: str | None) -> str:
    """The name `devicekit.cpu_args` knows a loss class by: any `...CTCLoss` is `torch.nn.CTCLoss`."""
    return "torch.nn.CTCLoss" if (cls or "").endswith("CTCLoss") else (cls or "")


def _judged(function: str, args: list[Val | None], kwargs: dict[str, Val | None]) -> list[Val | None]:
    """The arguments of a call whose devices must agree: all, except those `devicekit.cpu_args` (the table
    the simulator and strict mode read too) lets stay on the CPU (`ctc_loss`'s lengths,
    `pack_padded_sequence`'s `lengths`)."""
    allowed = cpu_positions(function)
    if allowed is None:
        return [*args, *kwargs.values()]
    positions, names = allowed
    kept = [value for i, value in enumerate(args) if i not in positions]
    return kept + [value for name, value in kwargs.items() if name not in names]


def _flatten(values: Iterable[Val | None]) -> list[Val | None]:
    out: list[Val | None] = []
    for value in values:
        if value is not None and value.kind == "seq" and value.items is not None:
            out.extend(item for _, item in value.items)
        elif value is not None and value.kind == "seq" and value.item is not None:
            out.append(value.item)
        else:
            out.append(value)
    return out


def _common(items: list[Val | None]) -> Val | None:
    if not items:
        return None
    result = items[0]
    for item in items[1:]:
        result = join(result, item)
    return result


def _result(values: list[Val | None], expr: ast.AST) -> Val | None:
    """The tensor an operation gives: where its tensor operands are when they agree, else unknown."""
    # (a value moved whose kind is unknown, in arithmetic or a comparison, is a tensor)
    tensors = [v for v in _flatten(values) if v is not None and v.kind in ("tensor", "moved")]
    if not tensors:
        return None
    place = tensors[0].place
    for tensor in tensors[1:]:
        if not place.same(tensor.place):
            if place.kind == HOST and tensor.place.kind != UNKNOWN:
                place = tensor.place
            elif tensor.place.kind == HOST and place.kind != UNKNOWN:
                continue
            else:
                return Val("tensor", UNKNOWN_PLACE, label=_label(expr))
    zero = all(t.zero_dim for t in tensors) if all(t.zero_dim is not None for t in tensors) else None
    created = (
        tensors[0].created
        if len(tensors) == 1 or all(t.created == tensors[0].created for t in tensors)
        else None
    )
    batch = all(t.batch for t in tensors)
    made = place.kind == HOST and any(t.made for t in tensors if t.place.kind == HOST)
    fallback = next((t.fallback for t in tensors if t.fallback is not None), None)
    return Val(
        "tensor",
        place,
        label=_label(expr),
        zero_dim=zero,
        batch=batch and place.kind == HOST,
        made=made,
        created=created if made else None,
        fallback=fallback if place.kind != HOST else None,
    )


def _dropped(receiver: Val, call: ast.Call):
    name, name_zh = _named(receiver.label or _label(call.func.value), "the tensor", "这个张量")  # type: ignore[attr-defined]
    return Message_(
        f"{name} {_en(receiver.place.why) if receiver.place.kind != UNKNOWN else 'is a tensor'}, "
        "and stays where it is",
        f"{name_zh}{_zh(receiver.place.why) if receiver.place.kind != UNKNOWN else '是张量'}，并且留在原处",
    )


#: The rules that the analysis answers.
FLOW_CODES = ("DK001", "DK002", "DK003", "DK010", "DK011", "DK015", "DK201")


def check_dataflow(ctx) -> None:
    """Run the device-flow analysis on the file of `ctx` (with its project, when it has one)."""
    if not ctx.wants(*FLOW_CODES):
        return
    project, source = ctx.project, ctx.source
    if project is None or source is None:
        project, source = Project.of(ctx.path, ctx.tree, ctx.names)
    elif source.known_names is None:
        source.known_names = ctx.names
    analysis = FileAnalysis(ctx, project, source)
    try:
        analysis.run()
    finally:
        # the analysis and its questions refer to each other: without this cycle, reference counting
        # frees the file's tree and tables at once instead of Python's cycle collector walking them later
        analysis.questions = None  # type: ignore[assignment]
        if ctx.project is None:  # alone: the labels kept for this file's nodes would keep those nodes
            forget_labels()  # alive, and every collection of a program that lints would walk them


def forget_labels() -> None:
    """Drop the labels `_label` keeps. A file linted alone drops them when it is done; a project
    (`lint_paths`) keeps them until all its files are: its trees stay alive until then anyway, and the
    other files' calls into a file ask for the labels of the same nodes again."""
    _label.cache_clear()


def places(source: str, function: str | None = None, path: str = "<string>") -> dict[str, Val]:
    """What each name holds at the end of a function of `source` (or of its top level), as the analysis
    sees it: for tests and for reading what the analysis thinks.

    Args:
        source: the code.
        function: `name` of a top-level function, `Class.method` for a method, None for the top level.
        path: the file name the code is given.
    """
    from devicekit.lint.core import Context
    from devicekit.lint.rules import RULES

    tree = ast.parse(source)
    ctx = Context(tree=tree, lines=source.splitlines(), codes=frozenset(RULES), path=path)
    project, file = Project.of(path, tree, ctx.names)
    analysis = FileAnalysis(ctx, project, file)
    if function is None:
        flow = Flow(analysis, file, tree, {})
        flow.run(tree.body)
        return flow.env
    owner_name, _, name = function.rpartition(".")
    top = Flow(analysis, file, tree, {})
    top.run(tree.body)
    analysis.known_globals = {k for k in top.env if "." not in k}
    if owner_name:
        cls = file.classes[owner_name]
        node = _method(cls, name)
        module = project.is_module_class(file, cls)
        owner = (cls, module, analysis.attributes(file, cls, module))
    else:
        node, owner = file.functions[name], None
    env = {k: v for k, v in top.env.items() if "." not in k}
    return analysis._entry(node, env, owner).env
