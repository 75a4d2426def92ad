"""Rules read from an `nn.Module` subclass's own code: DK903 (opt-in: a tensor made in `forward` without a
device), DK004 (a plain tensor attribute), DK005 (submodules in a plain list or dict) and DK006 (an RNN
hidden state made without a device)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from devicekit.lint.caches import assigned_before_register, cached_attributes, device_aware
from devicekit.lint.core import Context
from devicekit.lint.meets import MeetScan
from devicekit.lint.names import (
    CPU_ONLY_FACTORIES,
    DEVICE_FACTORIES,
    FACTORIES,
    TENSOR_OPS,
    base_name,
    dotted,
    has_star_kwargs,
    keyword,
)
from devicekit.lint.plain_attrs import judge
from devicekit.lint.registered import container_detail, registered_containers

_HIDDEN_METHOD = re.compile(r"hidden|init_state|begin_state|initial_state|zero_state", re.I)
HIDDEN_NAME = re.compile(r"^((h|c)(_?(t|n|x|0))?\d*|hid|cell|hidden\w*|state\w*|init_h\w*)$", re.I)
# Methods that run on the module's device besides `forward`: Lightning's steps.
_STEP_METHOD = re.compile(r"^((training|validation|test|predict|shared)_step|_forward\w*|forward_\w+)$")
# Methods that put a freshly made tensor where it belongs: `torch.zeros(n).to(x.device)`.
_PLACING = frozenset({"to", "cuda", "type_as", "to_device", "xpu", "mps"})
#: A parameter that holds an index, an int in PyTorch's own API (`nn.Embedding(padding_idx=...)`).
_INDEX_NAME = re.compile(r"(^|_)(idx|index)$", re.I)
_NOT_TENSOR_METHODS = frozenset({"numpy", "tolist", "item", "size", "dim", "numel", "stride", "data_ptr"})


def check_modules(ctx: Context) -> None:
    """Run DK003–DK006 on every `nn.Module` subclass of the file."""
    if not ctx.wants("DK003", "DK903", "DK004", "DK005", "DK006"):
        return
    default_device = _sets_default_device(ctx)
    for cls in ctx.definitions:  # every definition: a notebook may define a class twice
        if isinstance(cls, ast.ClassDef) and cls.name in ctx.names.module_classes:
            _ModuleClass(ctx, cls, default_device).check()


def _sets_default_device(ctx: Context) -> bool:
    for node in ctx.calls:
        name = ctx.names.torch_function(node)
        if name in {"set_default_device", "set_default_tensor_type"}:
            arg = node.args[0] if node.args else None
            if not (isinstance(arg, ast.Constant) and str(arg.value).startswith(("cpu", "torch.Float"))):
                return True
    return False


def _methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {n.name: n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _self_attr(node: ast.AST) -> str | None:
    """`name` for `self.name`."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


class _ModuleClass:
    def __init__(self, ctx: Context, cls: ast.ClassDef, default_device: bool) -> None:
        self.ctx = ctx
        self.cls = cls
        self.default_device = default_device
        self.methods = _methods(cls)
        self.registered: set[str] = set()
        self.rnn_attrs: set[str] = set()
        self.tensor_methods: set[str] = set()
        for node in ctx.class_nodes.get(cls, ()):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if (
                    node.func.attr in {"register_buffer", "register_parameter", "register_module"}
                    and node.args
                ):
                    first = node.args[0]
                    if isinstance(first, ast.Constant) and isinstance(first.value, str):
                        self.registered.add(first.value)
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                if ctx.names.is_rnn_constructor(node.value):
                    self.rnn_attrs.update(a for a in map(_self_attr, node.targets) if a)

    def check(self) -> None:
        self.tensor_methods = {
            name
            for name, method in self.methods.items()
            if name != "__init__" and self._returns_tensor(method)
        }
        init = self.methods.get("__init__")
        if init is not None and self.ctx.wants("DK004") and not _overrides_apply(self.ctx, self.cls):
            # (a module that overrides `_apply`, which `Module.to` calls, moves its plain attributes itself)
            self._plain_tensor_attributes(init)
            assigned_before_register(self.ctx, self.cls)
            cached_attributes(
                self.ctx,
                self.cls,
                self.registered,
                list(self._runtime_methods()),
                self._is_tensor_expr,
                _statements,
            )
        if self.ctx.wants("DK005"):
            self._plain_containers()
        if self.ctx.wants("DK903", "DK006") and not self.default_device:
            self._runtime_factories(list(self._runtime_methods()))

    # --- DK004 ----------------------------------------------------------------------------------

    def _is_tensor_expr(self, node: ast.AST, local: set[str]) -> bool:
        names = self.ctx.names
        if isinstance(node, ast.Name):
            return node.id in local
        if isinstance(node, ast.Subscript):
            return self._is_tensor_expr(node.value, local)
        if isinstance(node, ast.BinOp):
            return self._is_tensor_expr(node.left, local) or self._is_tensor_expr(node.right, local)
        if not isinstance(node, ast.Call):
            return False
        function = names.torch_function(node)
        if function in FACTORIES:
            return not _scalar_tensor(node, function)
        if function in TENSOR_OPS:  # (`torch.cat((a, b))`: the elements of a tuple or list too)
            args = [e for a in node.args for e in (a.elts if isinstance(a, (ast.Tuple, ast.List)) else [a])]
            return any(self._is_tensor_expr(arg, local) for arg in args)
        if _self_attr(node.func) in self.tensor_methods:
            return True
        if isinstance(node.func, ast.Attribute) and node.func.attr not in _NOT_TENSOR_METHODS:
            return self._is_tensor_expr(node.func.value, local)
        return False

    def _returns_tensor(self, method: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """A helper such as `def one_hot(self, n): ... return y` whose every `return` gives a new tensor."""
        local: set[str] = set()
        returns = []
        for stmt in _statements(method.body):
            if isinstance(stmt, ast.Assign):
                tensor = self._is_tensor_expr(stmt.value, local)
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        (local.add if tensor else local.discard)(target.id)
            elif isinstance(stmt, ast.Return):
                returns.append(stmt.value is not None and self._is_tensor_expr(stmt.value, local))
        return bool(returns) and all(returns)

    def _plain_tensor_attributes(self, init: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        # a parameter annotated `Tensor` is one (`def __init__(self, feature_set: Tensor)`), unless the class
        # reads its device or moves it itself (`self.alpha.to(x.device)` in `forward`), or its name says it
        # is an index (`padding_idx: Tensor` in pytext's LightConvRepresentation, used as an int: round 5)
        aware: set[str] | None = None  # read only when a given tensor is kept (a walk of the class)
        local: set[str] = {
            arg.arg
            for arg in [*init.args.posonlyargs, *init.args.args, *init.args.kwonlyargs]
            if arg.annotation is not None
            and (self.ctx.names.resolve(arg.annotation) or "") in ("torch.Tensor", "Tensor")
            and not _INDEX_NAME.search(arg.arg)
        }
        for stmt in _statements(init.body):
            if not isinstance(stmt, (ast.Assign, ast.AnnAssign)) or stmt.value is None:
                continue
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            tensor = self._is_tensor_expr(stmt.value, local)
            for target in targets:
                if isinstance(target, ast.Name):
                    (local.add if tensor else local.discard)(target.id)
                attr = _self_attr(target)
                if tensor and attr is not None and attr not in self.registered:
                    if isinstance(stmt.value, ast.Name):
                        aware = device_aware(self.ctx, self.cls) if aware is None else aware
                        if attr in aware:
                            continue  # a given tensor whose device the class handles
                    report, fix = judge(self.cls, attr, self._base_class)
                    if report:
                        self.ctx.report(target, "DK004", fix=fix)

    def _base_class(self, base: ast.expr) -> ast.ClassDef | None:
        """The class a base expression names, in this file or (with a project) elsewhere in it."""
        return base_class(self.ctx, base)

    # --- DK005 ----------------------------------------------------------------------------------

    def _is_module_expr(self, node: ast.AST, local: set[str]) -> bool:
        if isinstance(node, ast.Call):
            return self.ctx.names.is_module_constructor(node)
        return isinstance(node, ast.Name) and node.id in local

    def _holds_modules(self, node: ast.AST, local: set[str]) -> bool:
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return any(self._is_module_expr(e, local) for e in node.elts)
        if isinstance(node, ast.Dict):
            return any(self._is_module_expr(v, local) for v in node.values)
        if isinstance(node, (ast.ListComp, ast.SetComp)):
            return self._is_module_expr(node.elt, local)
        if isinstance(node, ast.DictComp):
            return self._is_module_expr(node.value, local)
        return False

    def _plain_containers(self) -> None:
        empty: set[str] = set()
        # registered another way (`self.add_module(name, self.x[-1])`, `nn.ModuleList(self.x)`): a view
        reported: set[str] = registered_containers(ast.walk(self.cls), self.ctx.names)
        for method in self.methods.values():
            reported |= self._wrapped_later(method)  # `self.blocks = nn.Sequential(*self.blocks)`
            added = _added_modules(self.ctx.function_calls.get(method, ()))
            local: set[str] = set()
            for stmt in _statements(method.body):
                if isinstance(stmt, ast.Assign):
                    for target in stmt.targets:
                        attr = _self_attr(target)
                        if isinstance(target, ast.Name) and isinstance(stmt.value, ast.Call):
                            if self.ctx.names.is_module_constructor(stmt.value):
                                local.add(target.id)
                        if attr is None:
                            if isinstance(target, ast.Subscript):
                                owner = _self_attr(target.value)
                                if owner in empty and owner not in reported:
                                    if self._is_module_expr(stmt.value, local):
                                        reported.add(owner)
                                        self.ctx.report(stmt, "DK005", container_detail(owner))
                            continue
                        if self._holds_modules(stmt.value, local):
                            if attr not in reported:
                                self.ctx.report(target, "DK005", container_detail(attr))
                            reported.add(attr)
                        elif isinstance(stmt.value, (ast.List, ast.Dict)) and not (
                            getattr(stmt.value, "elts", None) or getattr(stmt.value, "keys", None)
                        ):
                            empty.add(attr)
                elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                    call = stmt.value
                    if isinstance(call.func, ast.Attribute) and call.func.attr in {
                        "append",
                        "extend",
                        "insert",
                    }:
                        owner = _self_attr(call.func.value)
                        if owner in empty and owner not in reported and call.args:
                            arg = call.args[-1]
                            if any(isinstance(n, ast.Name) and n.id in added for n in ast.walk(arg)):
                                continue  # registered as well (`self.add_module(name, stage)`): a view
                            if self._is_module_expr(arg, local) or self._holds_modules(arg, local):
                                reported.add(owner)
                                self.ctx.report(stmt, "DK005", container_detail(owner))

    def _wrapped_later(self, method: ast.AST) -> set[str]:
        """Attributes the method puts in a module container from themselves: `self.x = nn.Sequential(*self.x)`
        makes the plain list of a line above a proper submodule."""
        wrapped = set()
        for stmt in _statements(method.body):  # type: ignore[attr-defined]
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
                if not self.ctx.names.is_module_constructor(stmt.value):
                    continue
                used = {_self_attr(n) for n in ast.walk(stmt.value)}
                wrapped |= {a for a in map(_self_attr, stmt.targets) if a and a in used}
        return wrapped

    # --- DK003 / DK006 --------------------------------------------------------------------------

    def _runtime_methods(self) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
        """`forward`, the methods it calls (`self.helper(...)`), and methods that build a hidden state."""
        seen: set[str] = set()
        todo = [
            name
            for name in self.methods
            if name == "forward" or _HIDDEN_METHOD.search(name) or _STEP_METHOD.match(name)
        ]
        while todo:
            name = todo.pop()
            if name in seen or name not in self.methods or name == "__init__":
                continue
            seen.add(name)
            method = self.methods[name]
            yield method
            parents = self.ctx.parents
            for node in self.ctx.function_calls.get(method, ()):
                if _self_attr(node.func) in self.methods:
                    if not _placed(node, parents):  # `self.mask(n).to(x.device)`: the caller places it
                        todo.append(node.func.attr)  # type: ignore[union-attr]

    def _runtime_factories(self, methods: list[ast.FunctionDef | ast.AsyncFunctionDef]) -> None:
        """DK006 for hidden states made without a device; DK003 for other tensors made without one that
        meet the module's data in an operation that checks devices (in the method, or, for a helper that
        returns the tensor, where the helper's result is used)."""
        loose = {method.name: self._factories(method) for method in methods}
        helpers = {
            name: found
            for name, found in loose.items()
            if found and name in self.tensor_methods and name != "forward"
        }
        known = set(self.methods)
        for method in methods:
            if not loose[method.name] and not self._calls_a_helper(method, helpers):
                continue  # nothing made on the CPU here: nothing can meet
            scan = MeetScan(method, self.ctx.names, loose[method.name], helpers, known)
            own, from_helpers = scan.reported()
            for node in [*(c for c in loose[method.name] if id(c) in own), *from_helpers]:
                # opt-in (issue 43, round 3): read from the method's shape, right 0 of 3 times on real code;
                # where the tensor is followed to a meet, the place analysis reports DK003
                self.ctx.report(node, "DK903")

    def _calls_a_helper(self, method: ast.AST, helpers: dict[str, list[ast.Call]]) -> bool:
        return bool(helpers) and any(
            _self_attr(call.func) in helpers for call in self.ctx.function_calls.get(method, ())
        )

    def _factories(self, method: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Call]:
        """Report DK006 for hidden states made without a device; the other such factory calls, for DK003."""
        names = self.ctx.names
        candidates = []
        for node in self.ctx.function_calls.get(method, ()):
            function = names.torch_function(node)
            if function not in FACTORIES or _has_device(node, function) or _scalar_tensor(node, function):
                continue
            if function in {"tensor", "as_tensor"} and not _literal_data(node):
                continue
            candidates.append(node)
        if not candidates:
            return []
        loose: list[ast.Call] = []
        parents = self.ctx.parents
        moved_later = _names_moved(method)
        index_only = _index_only_names(method, parents)
        hidden_method = bool(_HIDDEN_METHOD.search(method.name))
        for node in candidates:
            if _placed(node, parents) or _inside_device_block(node, parents):
                continue
            assigned = _assigned_name(node, parents)
            if assigned is not None and (assigned in moved_later or assigned in index_only):
                continue
            if _unpacked_names(node, parents) & moved_later:
                continue  # `a, b = torch.meshgrid(torch.arange(h), ...)`, then `torch.cat([a, b]).type(t)`
            hidden = hidden_method or (
                bool(self.rnn_attrs)
                and (
                    (assigned is not None and HIDDEN_NAME.match(assigned)) or self._fed_to_rnn(node, parents)
                )
            )
            if hidden:
                self.ctx.report(node, "DK006")
            else:
                loose.append(node)
        return loose

    def _fed_to_rnn(self, node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
        while node in parents:
            node = parents[node]
            if isinstance(node, ast.Call) and _self_attr(node.func) in self.rnn_attrs:
                return True
            if isinstance(node, ast.stmt):
                return False
        return False


def _added_modules(calls) -> set[str]:
    """Local names a method registers as submodules (`self.add_module(name, stage)`), from its calls."""
    added = set()
    for node in calls:
        if isinstance(node.func, ast.Attribute) and len(node.args) >= 2:
            if node.func.attr in ("add_module", "register_module") and isinstance(node.args[1], ast.Name):
                added.add(node.args[1].id)
    return added


def _overrides_apply(ctx: Context, cls: ast.ClassDef, depth: int = 0) -> bool:
    """The class, or a base class of this file, defines `_apply` (which `Module.to` calls)."""
    if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "_apply" for n in cls.body):
        return True
    for base in cls.bases:
        parent = ctx.names.classes.get(base_name(base) or "")
        if (
            parent is not None
            and parent is not cls
            and depth < 8
            and _overrides_apply(ctx, parent, depth + 1)
        ):
            return True
    return False


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of a body in order, those of nested blocks included (not nested functions)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for name in ("body", "orelse", "finalbody"):
            yield from _statements(getattr(stmt, name, []) or [])
        for handler in getattr(stmt, "handlers", []) or []:
            yield from _statements(handler.body)


def _has_device(call: ast.Call, function: str) -> bool:
    if function in CPU_ONLY_FACTORIES:
        return False
    return function in DEVICE_FACTORIES and (keyword(call, "device") is not None or has_star_kwargs(call))


def _scalar_tensor(call: ast.Call, function: str | None) -> bool:
    """`torch.tensor(0.5)`: a 0-dim CPU tensor mixes with accelerator tensors without an error."""
    if function not in {"tensor", "as_tensor", "scalar_tensor"} or not call.args:
        return function == "scalar_tensor"
    arg = call.args[0]
    if isinstance(arg, ast.UnaryOp):
        arg = arg.operand
    return isinstance(arg, ast.Constant) and isinstance(arg.value, (int, float, bool))


def _literal_data(call: ast.Call) -> bool:
    """`torch.tensor([...])`: data that is surely not already a tensor on some device."""
    return bool(call.args) and isinstance(call.args[0], (ast.List, ast.Tuple, ast.ListComp, ast.Constant))


def _placed(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """The new tensor is moved or used as an index on the spot: `torch.arange(n).to(x.device)`, `x[idx]`."""
    while node in parents:
        parent = parents[node]
        if isinstance(parent, ast.Attribute) and parent.value is node:
            if parent.attr in _PLACING or _type_to_runtime(parents.get(parent)):
                return True
            node = parent
            continue
        if isinstance(parent, ast.Call) and parent.func is not node:
            name = base_name(parent.func) or ""
            if name == "Variable":
                node = parent
                continue
            if name.startswith("pack_padded") or name in {"Parameter", "register_buffer"}:
                return True
            return False
        if isinstance(parent, ast.Call):
            node = parent
            continue
        if isinstance(parent, ast.Subscript) and parent.slice is node:
            return True
        if isinstance(parent, ast.Tuple) and parent in parents and isinstance(parents[parent], ast.Subscript):
            return parents[parent].slice is parent  # type: ignore[attr-defined]
        return False
    return False


def _inside_device_block(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                expr = item.context_expr
                if isinstance(expr, ast.Call) and (dotted(expr.func) or "").endswith("device"):
                    return True
    return False


def _assigned_name(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> str | None:
    """`name` when the call (or a method chain on it) is assigned to a name: `name = torch.zeros(...)`."""
    while node in parents:
        parent = parents[node]
        if isinstance(parent, (ast.Attribute, ast.Call, ast.BinOp, ast.UnaryOp)):
            node = parent
            continue
        if isinstance(parent, ast.Assign) and parent.value is node:
            names = [t.id for t in parent.targets if isinstance(t, ast.Name)]
            return names[0] if names else None
        return None
    return None


def _unpacked_names(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> set[str]:
    """The names of a tuple target the call (or what it is an argument of) is unpacked into."""
    while node in parents:
        parent = parents[node]
        if isinstance(parent, (ast.Attribute, ast.Call, ast.BinOp, ast.UnaryOp)):
            node = parent
            continue
        if isinstance(parent, ast.Assign) and parent.value is node:
            return {
                n.id
                for t in parent.targets
                if isinstance(t, (ast.Tuple, ast.List))
                for n in ast.walk(t)
                if isinstance(n, ast.Name)
            }
        return set()
    return set()


def _index_only_names(function: ast.AST, parents: dict[ast.AST, ast.AST]) -> set[str]:
    """Names used only as an index (`x[:, r]`): a CPU index tensor works on any device."""
    uses: dict[str, list[bool]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            parent = parents.get(node)
            if isinstance(parent, ast.Tuple):
                parent_of_tuple = parents.get(parent)
                in_index = isinstance(parent_of_tuple, ast.Subscript) and parent_of_tuple.slice is parent
            else:
                in_index = isinstance(parent, ast.Subscript) and parent.slice is node
            uses.setdefault(node.id, []).append(in_index)
    return {name for name, flags in uses.items() if flags and all(flags)}


def _names_moved(function: ast.AST) -> set[str]:
    """Names placed somewhere in the function (`name.to(...)`, `.cuda()`, `.type_as(...)`), directly or
    through the names computed from them (`ind = torch.arange(n)`, `out[0] = ind`, `out.to(device)`)."""
    feeds: dict[str, set[str]] = {}
    for node in ast.walk(function):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            sinks = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            for source in ast.walk(node.value):
                if isinstance(source, ast.Name):
                    feeds.setdefault(source.id, set()).update(sinks - {source.id})
    moved = _names_placed(function)
    changed = True
    while changed:
        changed = False
        for source, sinks in feeds.items():
            if source not in moved and sinks & moved:
                moved.add(source)
                changed = True
    return moved


def _type_to_runtime(call: ast.AST) -> bool:
    """`.type(dtype)` with `dtype = x.data.type()`: a type string read at run time ("torch.cuda.FloatTensor"
    on the GPU), which moves the tensor there; `.type(torch.float32)` and `.type("torch.FloatTensor")` do
    not move it."""
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "type"
        and len(call.args) == 1
        and isinstance(call.args[0], (ast.Name, ast.Call))
        and not (dotted(call.args[0]) or "").startswith("torch.")
    )


def _names_placed(function: ast.AST) -> set[str]:
    moved = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and _type_to_runtime(node.value):
            moved.update(n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _PLACING:
            if isinstance(node.func.value, ast.Name):
                moved.add(node.func.value.id)
        elif isinstance(node, ast.Call) and base_name(node.func) == "register_buffer":
            moved.update(a.id for a in node.args if isinstance(a, ast.Name))
    return moved


def base_class(ctx: Context, base: ast.expr) -> ast.ClassDef | None:
    """The class a base expression (`Base`, `pkg.Base`) names, in the file or in the project."""
    local = ctx.names.classes.get(base_name(base) or "")
    if isinstance(local, ast.ClassDef):
        return local
    project, source = ctx.project, ctx.source
    if project is None or source is None:
        return None
    found = project.lookup(ctx.names.resolve(base) or "", source)  # type: ignore[attr-defined]
    return found[1] if found is not None and isinstance(found[1], ast.ClassDef) else None
