"""Rules that follow modules through a function in statement order: DK007 (a loss holding a CPU weight),
DK009 (optimizer state loaded before the move), DK013 (DataParallel off `device_ids[0]`) and DK014 (DDP
without `set_device`).

The rules about where tensors meet (DK001 a batch never moved, DK002 `x.to(dev)` thrown away, DK010
`.numpy()` on a device tensor, DK201 a model never moved) are questions to the device-flow analysis
(`devicekit.lint.dataflow`) only: one walker, one set of places."""

from __future__ import annotations

import ast
import re

from devicekit.lint.core import Context
from devicekit.lint.index import walk
from devicekit.lint.names import (
    dotted,
    keyword,
    looks_like_device_name,
    looks_like_loader_name,
)
from devicekit.lint.values import Value, infer, move_of, placement_of

_MOVES = frozenset({"to", "cuda", "cpu"})
_MODEL_NAME = re.compile(r"(model|net|encoder|decoder|classifier|backbone|module)\w*$", re.I)

_OPTIMIZER_NAME = re.compile(r"(^|[._])(opt|optim\w*|optimizer\w*)$", re.I)
_SET_DEVICE = {
    "torch.cuda.set_device",
    "torch.accelerator.set_device_index",
    "torch.xpu.set_device",
    "torch.cuda.device",
    "torch.npu.set_device",
}
# Calls that surely do not move a module handed to them.
_HARMLESS_CALLS = frozenset({"print", "len", "isinstance", "repr", "str", "type", "id", "hasattr", "getattr"})
_LAUNCHERS = ("devicekit.distributed", "accelerate", "lightning", "pytorch_lightning", "deepspeed")
_FLOW_CODES = ("DK007", "DK009", "DK013", "DK014")


def check_flow(ctx: Context) -> None:
    """Run the flow rules on the module body, then on every function with the module's names in view."""
    if not ctx.wants(*_FLOW_CODES):
        return
    file_facts = _FileFacts(ctx)
    top = _Scope(ctx, {}, file_facts)
    top.run(ctx.tree.body)
    top.finish()
    known = set(top.env)
    seeds: dict[int, dict[str, Value]] = {}
    for function, cls in _functions(ctx.tree, ctx):
        if not _worth_reading(ctx, function, known):
            continue
        seed: dict[str, Value] = {}
        if cls is not None:
            if id(cls) not in seeds:
                seeds[id(cls)] = _seed(ctx, cls)
            seed = seeds[id(cls)]
        env = dict(top.env)
        env.update(seed)
        for arg in function.args.posonlyargs + function.args.args + function.args.kwonlyargs:
            env.pop(arg.arg, None)
            if function.name == "forward" and arg.arg != "self" and seed.get("__module_method__"):
                env[arg.arg] = Value("tensor", "unknown")
        scope = _Scope(ctx, env, file_facts)
        scope.params = {
            a.arg for a in function.args.posonlyargs + function.args.args + function.args.kwonlyargs
        }
        scope.run(function.body)
        scope.finish()
    if file_facts.ddp_calls and ctx.project is not None and len(ctx.project.files) > 1:  # type: ignore[attr-defined]
        # DDP set up across files: `init_process_group` in the entry point, DDP in the trainer
        file_facts.set_device, file_facts.sets_up_process_group = _project_process_facts(ctx)
    if file_facts.sets_up_process_group and not file_facts.set_device:
        for call in file_facts.ddp_calls:
            on_gpus = keyword(call, "device_ids") is not None or len(call.args) > 1
            if on_gpus or file_facts.indexless:
                ctx.report(call, "DK014")


#: Names of a module handed to a wrapper's constructor.
_WRAPPED = frozenset({"model", "module", "net", "network", "backbone", "encoder", "decoder", "base_model"})
_RELEVANT_ATTRS = frozenset({"to", "cuda", "cpu", "numpy", "load_state_dict"})
_RELEVANT_ENDINGS = ("DataParallel", "Loss", "Adagrad", "DataLoader")


def _worth_reading(ctx: Context, function: ast.AST, known: set[str]) -> bool:
    """Whether a function has anything these rules look at: a move, `.numpy()`, an optimizer's state, a
    loss, DataParallel, a DataLoader or a loop over one, `next(...)`, or a name the module's top level
    bound. One without any of these cannot fire a rule, and is not read."""
    names = ctx.names
    for call in ctx.function_calls.get(function, ()):
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in _RELEVANT_ATTRS:
            return True
        if isinstance(func, ast.Name) and (func.id in known or func.id == "next"):
            return True
        if (names.resolve(func) or "").endswith(_RELEVANT_ENDINGS):
            return True
    for loop in ctx.index.function_loops.get(function, ()):
        key = dotted(loop.iter) if not isinstance(loop.iter, ast.Call) else None  # type: ignore[attr-defined]
        if key is None or looks_like_loader_name(key) or key in known:
            return True
    return False


class _FileFacts:
    def __init__(self, ctx: Context) -> None:
        self.set_device = False
        self.sets_up_process_group = False
        self.any_module_moved = False
        self.ddp_calls: list[ast.Call] = []
        self.indexless = False
        self.uses_accelerator = False
        names = ctx.names
        for node in ctx.calls:
            full = names.resolve(node.func) or ""
            if full in _SET_DEVICE:
                self.set_device = True
            elif full.endswith("DistributedDataParallel"):
                self.ddp_calls.append(node)
            elif full.endswith("init_process_group"):
                backend = keyword(node, "backend") or (node.args[0] if node.args else None)
                if not (isinstance(backend, ast.Constant) and backend.value == "gloo"):  # gloo: CPU ranks
                    self.sets_up_process_group = True
            elif isinstance(node.func, ast.Attribute) and node.func.attr == "cuda":
                self.uses_accelerator = True
                if not node.args and not node.keywords:
                    self.indexless = True
            elif isinstance(node.func, ast.Attribute) and node.func.attr == "to":
                placement = move_of(node, {}, names)
                self.uses_accelerator |= placement is not None and placement.device == "accel"
            for arg in [*node.args, *(kw.value for kw in node.keywords)]:
                if isinstance(arg, ast.Constant) and arg.value == "cuda":
                    self.indexless = True
        if any(node.value == "CUDA_VISIBLE_DEVICES" for node in ctx.constants):
            self.set_device = True
        # Launch helpers that set the device themselves (devicekit.distributed.setup calls set_device).
        if any(v.startswith(_LAUNCHERS) for v in names.aliases.values()):
            self.set_device = True


def _process_facts(tree: ast.Module, names) -> tuple[bool, bool]:
    """(sets the device or hands that to a launcher, starts a process group not on gloo) for one file."""
    set_device = any(v.startswith(_LAUNCHERS) for v in names.aliases.values())
    group = False
    for node in walk(tree):
        if isinstance(node, ast.Constant) and node.value == "CUDA_VISIBLE_DEVICES":
            set_device = True
        if not isinstance(node, ast.Call):
            continue
        full = names.resolve(node.func) or ""
        if full in _SET_DEVICE:
            set_device = True
        elif full.endswith("init_process_group"):
            backend = keyword(node, "backend") or (node.args[0] if node.args else None)
            group = group or not (isinstance(backend, ast.Constant) and backend.value == "gloo")
    return set_device, group


_PROCESS_WORDS = re.compile(
    r"set_device|init_process_group|CUDA_VISIBLE_DEVICES|accelerate|lightning|deepspeed|devicekit"
)


def _project_process_facts(ctx: Context) -> tuple[bool, bool]:
    """`_process_facts` over every file of the project linted with this one (computed once; a file whose
    text names none of these calls is not walked)."""
    cache = ctx.project.cache  # type: ignore[attr-defined]
    if "process-facts" not in cache:
        facts = []
        for source in ctx.project.files.values():  # type: ignore[attr-defined]
            text = source.text  # (what `lint_paths` read; else the file is read again)
            if text is None:
                try:
                    with open(source.path, encoding="utf-8") as handle:
                        text = handle.read()
                except (OSError, UnicodeDecodeError):
                    text = None
            if text is None or _PROCESS_WORDS.search(text):
                facts.append(_process_facts(source.tree, source.names))
        cache["process-facts"] = (any(a for a, _ in facts), any(b for _, b in facts))
    return cache["process-facts"]


def _functions(tree: ast.Module, ctx: Context):
    """Every function of the file, with its class (None for a plain function)."""
    methods_of_classes = {id(n) for cls in ctx.definitions if isinstance(cls, ast.ClassDef) for n in cls.body}
    for node in ctx.definitions:
        if isinstance(node, ast.ClassDef):
            for method in node.body:
                if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield method, node
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and id(node) not in methods_of_classes:
            yield node, None


def _seed(ctx: Context, cls: ast.ClassDef) -> dict[str, Value]:
    """What `self.x` holds in the methods of a class (read from its `__init__`)."""
    seed: dict[str, Value] = {}
    if cls.name in ctx.names.module_classes:
        seed["__module_method__"] = Value("marker")
    init = next(
        (
            m
            for m in cls.body
            if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name == "__init__"
        ),
        None,
    )
    if init is not None:
        scope = _Scope(ctx, {}, None)
        scope.run(init.body)
        for key, value in scope.env.items():
            if key.startswith("self."):
                # `model.to(device)` moves submodules after __init__: only a placement made in
                # __init__ itself (`self.model = net.cuda()`) is known in the other methods.
                if value.kind == "module" and value.device == "cpu":
                    value = Value("module", "unknown", loss=value.loss)
                seed[key] = value
    return seed


class _Scope:
    """One pass over a body in statement order, keeping what each name holds."""

    def __init__(self, ctx: Context, env: dict[str, Value], facts: _FileFacts | None) -> None:
        self.ctx = ctx
        self.names = ctx.names
        self.env = env
        self.facts = facts
        self.module_moves: list[tuple[int, str]] = []
        self.optimizer_loads: list[ast.Call] = []
        self.losses: dict[str, ast.AST] = {}
        self.parallel_first: dict[str, int] = {}
        self.device_blocks = 0
        self.assigned: set[str] = set()  # names this scope assigned (not from a loop over a loader)
        self.params: set[str] = set()  # the function's parameters (what the caller gives)

    # --- statements -----------------------------------------------------------------------------

    def run(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.statement(stmt)

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return
        bare_move = None
        if isinstance(stmt, ast.Expr):
            call = stmt.value
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr in _MOVES
            ):
                bare_move = call
        self.scan_owned(stmt, bare_move)
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                self.bind(target, stmt.value)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self.bind(stmt.target, stmt.value)
        elif bare_move is not None:
            self.bare_move(bare_move)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            self.bind_loop(stmt.target, stmt.iter)
            self.run(stmt.body)
            self.run(stmt.orelse)
        elif isinstance(stmt, (ast.While, ast.If)):
            # in statement order: `if torch.cuda.is_available(): x = x.cuda()` leaves `x` on the GPU, the
            # path where `.numpy()` after it fails (the device-flow analysis joins the paths instead)
            self.run(stmt.body)
            self.run(stmt.orelse)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            block = any(  # `with torch.device("cuda"):`, `with EmptyInitOnDevice(device="cuda"):`
                isinstance(item.context_expr, ast.Call)
                and (
                    (self.names.resolve(item.context_expr.func) or "") == "torch.device"
                    or keyword(item.context_expr, "device") is not None
                )
                for item in stmt.items
            )
            for item in stmt.items:
                if item.optional_vars is not None:
                    self.forget(item.optional_vars)
            self.device_blocks += block  # `with torch.device("cuda"):` builds modules there
            self.run(stmt.body)
            self.device_blocks -= block
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            self.run(stmt.body)  # type: ignore[attr-defined]
            for handler in stmt.handlers:  # type: ignore[attr-defined]
                self.run(handler.body)
            self.run(stmt.orelse)  # type: ignore[attr-defined]
            self.run(stmt.finalbody)  # type: ignore[attr-defined]

    def forget(self, target: ast.AST) -> None:
        for node in walk(target):
            key = dotted(node)
            if key is not None:
                self.env.pop(key, None)

    def bind(self, target: ast.AST, value_expr: ast.AST) -> None:
        for node in walk(target):
            name = dotted(node)
            if name is not None:
                self.assigned.add(name)
        if isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value_expr, (ast.Tuple, ast.List)) and len(value_expr.elts) == len(target.elts):
                values = [infer(v, self.env, self.names) for v in value_expr.elts]
                for t, v, e in zip(target.elts, values, value_expr.elts, strict=True):
                    self._set(t, v, e)
            else:
                value = infer(value_expr, self.env, self.names)
                self.forget(target)
                # `_, predicted = torch.max(out, 1)`, `values, idx = out.topk(5)`: a torch function or a
                # tensor's method gives tensors; another function's tuple (`vae, history = fit(vae)`) may not
                if value is not None and value.kind == "tensor" and self._gives_tensors(value_expr):
                    for element in target.elts:
                        if isinstance(element, ast.Name):
                            self.env[element.id] = Value("tensor", value.device)
            return
        self._set(target, infer(value_expr, self.env, self.names), value_expr)

    def _set(self, target: ast.AST, value: Value | None, value_expr: ast.AST) -> None:
        key = dotted(target)
        if key is None:
            if isinstance(target, ast.Starred):
                self.forget(target)
            return
        full = self.names.resolve(value_expr.func) if isinstance(value_expr, ast.Call) else None
        if full == "torch.optim.Adagrad":  # its state (`sum`) is created in __init__, on the params' device
            self.optimizer_loads.append(value_expr)  # type: ignore[arg-type]
        if isinstance(value_expr, ast.Call) and _is_data_parallel(full):
            first = _first_device_id(value_expr, self.env, self.names)
            if first is not None:
                self.parallel_first[key] = first
        if key in self.parallel_first and isinstance(value_expr, ast.Call) and value_expr.func is not None:
            self._moved_parallel(key, value_expr)
        old = self.env.get(key)
        if _MODEL_NAME.search(key.rsplit(".", 1)[-1]):
            value = _probably_module(value, value_expr)
        if value is not None and value.kind == "module" and value.device == "cpu":
            if self.device_blocks or _places_itself(self.ctx, value_expr) or self._wraps(value_expr):
                # built under `with torch.device(...)`, by a class that picks its own device, or around
                # a module that is already somewhere (`ModelWithIntermediateLayers(model, ...)`)
                value = Value("module", "unknown", loss=value.loss)
        if value is None:
            self.env.pop(key, None)
        else:
            self.env[key] = value
            wrapped = bool(full) and full.endswith("DataParallel")  # (DDP too) a wrapper is no move
            if value.kind == "module" and value.device != "cpu" and old is not None and old.kind == "module":
                if not wrapped:
                    self.module_moves.append((target.lineno, key))
            elif value.kind == "module" and value.device != "cpu" and _is_move_chain(value_expr):
                self.module_moves.append((target.lineno, key))
        self.losses.pop(key, None)
        if isinstance(value_expr, ast.Call) and self.names.is_loss_constructor(value_expr):
            weight = keyword(value_expr, "weight") or keyword(value_expr, "pos_weight")
            weight_value = infer(weight, self.env, self.names)
            if weight_value is not None and weight_value.kind == "tensor" and weight_value.device == "cpu":
                self.losses[key] = value_expr

    def _wraps(self, expr: ast.AST) -> bool:
        """A module built around a module it is given (`Wrapper(model)`): it is where that module is."""
        if not isinstance(expr, ast.Call):
            return False
        for arg in [*expr.args, *(kw.value for kw in expr.keywords)]:
            key = dotted(arg)
            value = self.env.get(key) if key is not None else None
            if value is not None and value.kind == "module":
                return True
            # a model the caller gives is already somewhere (a name no one sets is not known to be one)
            last = (key or "").rsplit(".", 1)[-1].lower()
            given = (key or "").split(".", 1)[0] in self.params
            if given and (last in _WRAPPED or last.endswith(("_model", "_net"))):
                return True
        return False

    def _gives_tensors(self, expr: ast.AST) -> bool:
        if not isinstance(expr, ast.Call):
            return False
        if (self.names.resolve(expr.func) or "").startswith("torch."):
            return True
        if isinstance(expr.func, ast.Attribute):
            receiver = infer(expr.func.value, self.env, self.names)
            return receiver is not None and receiver.kind == "tensor"
        return False

    def bind_loop(self, target: ast.AST, iterable: ast.AST) -> None:
        """A loop's variables (batches, items): nothing these rules follow."""
        self.forget(target)

    # --- expressions ----------------------------------------------------------------------------

    def bare_move(self, call: ast.Call) -> None:
        assert isinstance(call.func, ast.Attribute)
        receiver_expr = call.func.value
        receiver = infer(receiver_expr, self.env, self.names)
        key = dotted(receiver_expr)
        placement = move_of(call, self.env, self.names)
        item = _item_name(receiver_expr)
        if receiver is None and item and _MODEL_NAME.search(item) and placement is not None:
            self.module_moves.append((call.lineno, f"[{item}]"))  # `state["model"].to(device)`
            return
        if receiver is not None and receiver.kind == "tensor":
            if key is not None:  # (DK002 is the device-flow analysis'; a whole batch may move in place)
                self.env[key] = Value("tensor", "unknown")
            return
        if receiver is None and key is not None and placement is not None:
            if _MODEL_NAME.search(key.rsplit(".", 1)[-1]):
                receiver = Value("module", "cpu")
        if key in self.parallel_first:
            self._moved_parallel(key, call)
        if receiver is not None and receiver.kind == "module" and key is not None and placement is not None:
            self.env[key] = Value(
                "module", placement.device, placement.index, placement.indexless, loss=receiver.loss
            )
            self.module_moves.append((call.lineno, key))
            self.losses.pop(key, None)

    def _moved_parallel(self, key: str, expr: ast.Call) -> None:
        """`model = nn.DataParallel(model)` then `model.to("cuda:1")`: not `device_ids[0]`."""
        if not (isinstance(expr.func, ast.Attribute) and expr.func.attr in {"to", "cuda"}):
            return
        if dotted(expr.func.value) != key:
            return
        placement = move_of(expr, self.env, self.names)
        if (
            placement is not None
            and placement.index is not None
            and placement.index != self.parallel_first[key]
        ):
            self.ctx.report(expr, "DK013")

    def scan_owned(self, stmt: ast.stmt, skip: ast.AST | None = None) -> None:
        """Check the calls and operations in the statement's own expressions, outermost first."""
        for node in self.ctx.owned.get(stmt, ()):
            if node is skip:
                continue
            if isinstance(node, ast.Call):
                self.call(node)

    def call(self, call: ast.Call) -> None:
        func = call.func
        if isinstance(func, ast.Attribute):
            if func.attr == "load_state_dict":
                key = dotted(func.value) or _item_name(func.value) or ""
                value = self.env.get(key)
                if (value is not None and value.kind == "optimizer") or (
                    value is None and _OPTIMIZER_NAME.search(key)
                ):
                    self.optimizer_loads.append(call)
            elif func.attr in _MOVES:
                key = dotted(func.value)
                value = self.env.get(key) if key else None
                if key and value is not None and value.kind == "module":
                    self.losses.pop(key, None)
                    self.module_moves.append((call.lineno, key))
        full = self.names.resolve(func) or ""
        if _is_data_parallel(full):
            self._data_parallel(call)
        elif self.ctx.project is not None and self.ctx.source is not None and full:
            self._loads_in_a_helper(call, full)
        self._hand_over(call)

    def _loads_in_a_helper(self, call: ast.Call, full: str) -> None:
        """`load_epoch(save_dir, epoch, model, optm)`, a function of the project (another file too) that
        calls `optm.load_state_dict(...)` on the optimizer it is given: the state is loaded here, at the
        call. A helper that also touches the state itself (`for s in optm.state.values(): ...to(device)`)
        moves it, and is no load before the move."""
        if not any(self._is_optimizer(arg) for arg in [*call.args, *(kw.value for kw in call.keywords)]):
            return  # (checked first: a lookup for every call costs a tenth of the linting)
        found = self.ctx.project.lookup(full, self.ctx.source)  # type: ignore[attr-defined]
        if found is None or not isinstance(found[1], (ast.FunctionDef, ast.AsyncFunctionDef)):
            return
        function = found[1]
        params = [a.arg for a in function.args.posonlyargs + function.args.args]
        given = {params[i]: arg for i, arg in enumerate(call.args) if i < len(params)}
        given.update({kw.arg: kw.value for kw in call.keywords if kw.arg in params})
        for param, arg in given.items():
            if not self._is_optimizer(arg):
                continue
            if _loads_state_of(function, param):
                self.optimizer_loads.append(call)
                return

    def _is_optimizer(self, arg: ast.AST) -> bool:
        """An optimizer built here, or a name that says it is one (`optm`, `optimizer`)."""
        key = dotted(arg) or ""
        value = self.env.get(key)
        return (value is not None and value.kind == "optimizer") or (
            value is None and bool(_OPTIMIZER_NAME.search(key))
        )

    def _data_parallel(self, call: ast.Call) -> None:
        if not call.args:
            return
        model = infer(call.args[0], self.env, self.names)
        ids = keyword(call, "device_ids")
        if ids is None and len(call.args) > 1:
            ids = call.args[1]
        first = _first_device_id(call, self.env, self.names)
        if model is None or model.kind != "module" or model.device != "accel" or first is None:
            return
        if model.index is not None and model.index != first:
            self.ctx.report(call, "DK013")

    def _hand_over(self, call: ast.Call) -> None:
        """A module handed to code we cannot see may be moved there (a part of it too: `model.linear1`)."""
        full_name = self.names.resolve(call.func) or ""
        if full_name.endswith("DataParallel") or full_name in _HARMLESS_CALLS:
            return
        for arg in [*call.args, *(kw.value for kw in call.keywords)]:
            key = dotted(arg)
            for name in (key, key.split(".", 1)[0]) if key is not None else ():
                value = self.env.get(name)
                if value is not None and value.kind == "module" and value.device == "cpu":
                    self.env[name] = Value("module", "unknown", loss=value.loss)

    # --- end of the body ------------------------------------------------------------------------

    def finish(self) -> None:
        module_moves = [line for line, key in self.module_moves if not self.env.get(key, Value("?")).loss]
        for load in self.optimizer_loads:
            # (a model already moved before the load, `Model(cfg).to(device)`, has its parameters there: the
            # state is cast to them, and a later `.to(device)` moves nothing)
            if any(line > load.lineno for line in module_moves) and not any(
                line < load.lineno for line in module_moves
            ):
                self.ctx.report(load, "DK009")
        any_moved = bool(self.module_moves) or (
            self.facts is not None and (self.facts.any_module_moved or self.facts.uses_accelerator)
        )
        if self.facts is not None and self.module_moves:
            self.facts.any_module_moved = True
        if any_moved:
            for node in self.losses.values():
                self.ctx.report(node, "DK007")


def _loads_state_of(function: ast.AST, param: str) -> bool:
    """`param.load_state_dict(...)` in `function`, and no `param.state` read there (a move of the state)."""
    loads = False
    for node in walk(function):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == param:
            if node.attr == "state":
                return False
            loads = loads or node.attr == "load_state_dict"
    return loads


def _places_itself(ctx: Context, expr: ast.AST) -> bool:
    """`PerceptualLoss(use_gpu=True)`: a class of this file whose `__init__` takes a device (`device`,
    `use_gpu`, `gpu_ids`) or moves something, so it is not on the CPU for sure once built."""
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name)):
        return False
    cls = ctx.names.classes.get(expr.func.id)
    init = (
        next(
            (
                n
                for n in cls.body
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "__init__"
            ),
            None,
        )
        if cls is not None
        else None
    )
    if init is None:
        return False
    names = [a.arg for a in init.args.posonlyargs + init.args.args + init.args.kwonlyargs]
    if any(looks_like_device_name(n) or n in ("use_gpu", "use_cuda", "gpu_ids") for n in names):
        return True
    return any(
        isinstance(c.func, ast.Attribute) and c.func.attr in ("to", "cuda")
        for c in ctx.function_calls.get(init, ())
    )


def _first_device_id(call: ast.Call, env: dict[str, Value], names) -> int | None:
    """`device_ids[0]` of a `DataParallel(...)` call: the first listed id, 0 when none are given."""
    ids = keyword(call, "device_ids")
    if ids is None and len(call.args) > 1:
        ids = call.args[1]
    if ids is None:
        return 0  # every visible GPU, starting at cuda:0
    if isinstance(ids, (ast.List, ast.Tuple)) and ids.elts:
        placement = placement_of(ids.elts[0], env, names)
        return placement.index if placement is not None else None
    return None


def _item_name(expr: ast.AST) -> str | None:
    """`"model"` for `state["model"]`."""
    if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
        value = expr.slice.value
        return value if isinstance(value, str) else None
    return None


def _probably_module(value: Value | None, expr: ast.AST) -> Value | None:
    """`model = Net().to(device)` with `Net` defined elsewhere: a module, judging by both names."""
    if value is not None and value.kind == "moved":
        if value.device == "cpu":  # `model = model.to("cpu")`: moved, not built here (DK201 is about those)
            return Value("module", "unknown")
        return Value("module", value.device, value.index, value.indexless)
    if value is None:
        call = expr
        while (
            isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in _MOVES
        ):
            call = call.func.value
        if isinstance(call, ast.Call) and call is expr:
            last = (dotted(call.func) or "").rsplit(".", 1)[-1]
            if last[:1].isupper() and last[1:2].islower():
                if keyword(call, "device") is not None or keyword(call, "device_map") is not None:
                    return Value("module", "unknown")  # `DetectMultiBackend(weights, device=device)`
                return Value("module", "cpu")
    return value


def _is_data_parallel(full: str | None) -> bool:
    return bool(full) and full.endswith("DataParallel") and "Distributed" not in full  # type: ignore[union-attr]


def _is_move_chain(expr: ast.AST) -> bool:
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        if expr.func.attr in {"to", "cuda"}:
            return True
        expr = expr.func.value
    return False
