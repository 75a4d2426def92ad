"""Where a tensor made on the CPU inside a module's method meets the module's data (DK003's question).

A tensor created without `device=` in `forward` is a bug only when it meets a tensor on the module's
device in an operation that checks devices: `x + noise`, `torch.cat([x, pos])`, `self.embed(positions)`,
`F.cross_entropy(logits, target)`. Made and used on the CPU (a list of crop sizes turned into indices,
a tensor a test model returns), it is fine. So the scan follows, within one method, the names computed
from the new tensor (`hosts`) and from the method's inputs or its submodules' outputs (`inputs`), and
reports the operations where both meet.

Which operations raise is the course's stand-in table (`tools/course_tools/generate/standin.py`, CUDA
column; recorded cases in `results/cuda-messages.json`): element-wise operations and comparisons, matrix
products, `cat`/`stack`, `where`, index kernels given a CPU index (`index_select`, `gather`, `scatter`),
`masked_fill` with a CPU mask, losses, and every module call (its parameters are on the module's device).
Indexing with a CPU index or mask (`x[idx]`) does not raise, and neither does a 0-dim CPU tensor in an
element-wise operation.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from devicekit.lint.index import walk
from devicekit.lint.names import Names
from devicekit.lint.params import tensor_params

#: Methods that place a new tensor (`torch.arange(n).to(x.device)`): the result is not on the CPU.
PLACING = frozenset({"to", "cuda", "type_as", "to_device", "xpu", "mps"})
#: Tensor methods whose result is not a tensor on the tensor's device.
NOT_TENSOR = frozenset(
    {"numpy", "tolist", "item", "size", "dim", "numel", "stride", "data_ptr", "cpu", "get_device", "nelement"}
)
NOT_TENSOR_ATTRS = frozenset({"shape", "device", "dtype", "ndim", "is_cuda", "requires_grad"})
#: Reductions that give a 0-dim tensor when called without a dimension (a 0-dim CPU tensor mixes freely in
#: element-wise operations: stand-in table row 16).
REDUCTIONS = frozenset(
    {"sum", "mean", "max", "min", "prod", "norm", "std", "var", "amax", "amin", "all", "any"}
)
#: Tensor methods that check that a tensor argument is on their tensor's device (stand-in table rows 3-5,
#: 8, 10, 17, 18-21, 42, 45-49, 55).
MEETING_METHODS = frozenset(
    {
        "add",
        "add_",
        "sub",
        "sub_",
        "mul",
        "mul_",
        "div",
        "div_",
        "matmul",
        "mm",
        "bmm",
        "dot",
        "lerp",
        "lerp_",
        "maximum",
        "minimum",
        "clamp",
        "clamp_",
        "masked_fill",
        "masked_fill_",
        "index_select",
        "gather",
        "scatter",
        "scatter_",
        "scatter_add",
        "scatter_add_",
        "where",
    }
)
#: torch functions that do not compute with their tensor arguments' data on a device.
NOT_MEETING_FUNCTIONS = frozenset(
    {"is_tensor", "numel", "typename", "as_tensor", "tensor", "from_numpy", "save", "load", "manual_seed"}
)


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for name in ("body", "orelse", "finalbody"):
            yield from _statements(getattr(stmt, name, []) or [])
        for handler in getattr(stmt, "handlers", []) or []:
            yield from _statements(handler.body)


def _expressions(function: ast.AST) -> Iterator[ast.AST]:
    """Every node of the function's body, nested functions and classes left out."""
    todo = list(getattr(function, "body", []))
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                todo.append(child)


def _only_slices(index: ast.AST) -> bool:
    """`t[:, :n]`, `t[..., None]`: the result keeps its dimensions (an integer index may leave a 0-dim)."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return all(
        isinstance(p, ast.Slice) or (isinstance(p, ast.Constant) and p.value in (None, Ellipsis))
        for p in parts
    )


class MeetScan:
    """The places in one method where a tensor made there on the CPU meets the module's data.

    Args:
        function: the method.
        names: the file's names (to resolve `torch.` and `F.` calls).
        candidates: the factory calls of the method that made a tensor without a device.
        helpers: for the module's own methods that return a CPU tensor they made (`self.mask(n)`), the
            candidates in them.
        submodule_calls: `self.<name>(...)` calls of the module that run a submodule (anything that is not
            one of its methods).
        methods: the names of the module's methods.
    """

    def __init__(
        self,
        function: ast.FunctionDef | ast.AsyncFunctionDef,
        names: Names,
        candidates: list[ast.Call],
        helpers: dict[str, list[ast.Call]],
        methods: set[str],
    ) -> None:
        self.function = function
        self.names = names
        self.candidates = {id(c): c for c in candidates}
        self.helpers = helpers
        self.methods = methods
        args = function.args
        params = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
        if args.vararg:
            params.append(args.vararg.arg)
        # the parameters that take the module's data (`self` is the module itself; an int is no data)
        self.inputs: set[str] = tensor_params(function) | ({args.vararg.arg} if args.vararg else set())
        self.self_name = params[0] if params else "self"
        self.hosts: dict[str, frozenset[int]] = {}
        self.helper_hosts: dict[int, list[ast.Call]] = {}
        self._derive()

    # --- what an expression holds ------------------------------------------------------------------

    def host(self, expr: ast.AST) -> frozenset[int]:
        """The candidates whose CPU tensor `expr` holds (or computes from, on the CPU)."""
        if id(expr) in self.candidates:
            return frozenset({id(expr)})
        if isinstance(expr, ast.Name):
            return self.hosts.get(expr.id, frozenset())
        if isinstance(expr, ast.UnaryOp):
            return self.host(expr.operand)
        if isinstance(expr, ast.BinOp):
            if self.input(expr.left) or self.input(expr.right):
                return frozenset()
            return self.host(expr.left) | self.host(expr.right)
        if isinstance(expr, ast.Subscript):
            return self.host(expr.value) if _only_slices(expr.slice) else frozenset()
        if isinstance(expr, ast.Call):
            func = expr.func
            helper = self._helper(expr)
            if helper is not None:
                self.helper_hosts[id(expr)] = self.helpers[helper]
                return frozenset({id(expr)})
            if isinstance(func, ast.Attribute):
                if func.attr in PLACING or func.attr in NOT_TENSOR:
                    return frozenset()
                if func.attr in REDUCTIONS and not expr.args and not expr.keywords:
                    return frozenset()  # 0-dim
                if self.names.torch_function(expr) is None and not self._torch_call(expr):
                    return self.host(func.value)
            if self._torch_call(expr):
                args = self._tensor_args(expr)
                if any(self.input(a) for a in args):
                    return frozenset()
                found: frozenset[int] = frozenset()
                for arg in args:
                    found |= self.host(arg)
                return found
        return frozenset()

    def input(self, expr: ast.AST) -> bool:
        """Whether `expr` holds the module's data: computed from an input or a submodule's output."""
        if isinstance(expr, ast.Name):
            return expr.id in self.inputs
        if isinstance(expr, ast.Attribute):
            if expr.attr in NOT_TENSOR_ATTRS:
                return False
            return self.input(expr.value)
        if isinstance(expr, ast.Subscript):
            return self.input(expr.value)
        if isinstance(expr, ast.UnaryOp):
            return self.input(expr.operand)
        if isinstance(expr, ast.BinOp):
            return self.input(expr.left) or self.input(expr.right)
        if isinstance(expr, ast.Call):
            func = expr.func
            if self._submodule_call(expr):
                return True
            if isinstance(func, ast.Attribute) and not self._torch_call(expr):
                if func.attr in NOT_TENSOR or func.attr in REDUCTIONS and not expr.args:
                    return func.attr in REDUCTIONS and self.input(func.value)  # a 0-dim on the device
                return self.input(func.value)
            if self._torch_call(expr):
                return any(self.input(a) for a in self._tensor_args(expr))
        return False

    # --- the scan -----------------------------------------------------------------------------------

    def meetings(self) -> list[tuple[ast.AST, frozenset[int]]]:
        """Each operation where CPU candidates meet the module's data, with the candidates."""
        found = []
        for node in _expressions(self.function):
            hosts = self._meets(node)
            if hosts:
                found.append((node, hosts))
        return found

    def reported(self) -> tuple[set[int], list[ast.Call]]:
        """The candidates of this method that meet the module's data, and the helpers' candidates that do."""
        own: set[int] = set()
        helpers: list[ast.Call] = []
        for _, hosts in self.meetings():
            for key in hosts:
                if key in self.candidates:
                    own.add(key)
                elif key in self.helper_hosts:
                    helpers.extend(self.helper_hosts[key])
        return own, helpers

    def _meets(self, node: ast.AST) -> frozenset[int]:
        if isinstance(node, ast.BinOp) and not isinstance(node.left, (ast.Constant, ast.JoinedStr)):
            return self._pair(node.left, node.right)
        if isinstance(node, ast.Compare) and len(node.comparators) == 1:
            return self._pair(node.left, node.comparators[0])
        if not isinstance(node, ast.Call):
            return frozenset()
        args = self._tensor_args(node)
        if self._submodule_call(node):
            found: frozenset[int] = frozenset()
            for arg in args:
                found |= self.host(arg)
            return found
        if self._torch_call(node):
            full = self.names.resolve(node.func) or ""
            if full.rsplit(".", 1)[-1] in NOT_MEETING_FUNCTIONS:
                return frozenset()
            if any(self.input(a) for a in args):
                found = frozenset()
                for arg in args:
                    found |= self.host(arg)
                return found
            return frozenset()
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in MEETING_METHODS:
            if self.input(func.value):
                found = frozenset()
                for arg in args:
                    found |= self.host(arg)
                return found
            if self.host(func.value) and any(self.input(a) for a in args):
                return self.host(func.value)
        return frozenset()

    def _pair(self, left: ast.AST, right: ast.AST) -> frozenset[int]:
        if self.input(left):
            return self.host(right)
        if self.input(right):
            return self.host(left)
        return frozenset()

    # --- helpers ------------------------------------------------------------------------------------

    def _derive(self) -> None:
        """Fill `hosts` and `inputs` from the method's assignments, until nothing changes."""
        assignments: list[tuple[list[ast.AST], ast.AST]] = []
        for stmt in _statements(self.function.body):
            if isinstance(stmt, ast.Assign):
                assignments.append((stmt.targets, stmt.value))
            elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) and stmt.value is not None:
                assignments.append(([stmt.target], stmt.value))
            elif isinstance(stmt, (ast.For, ast.AsyncFor)):
                assignments.append(([stmt.target], stmt.iter))
            elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                for item in stmt.items:
                    if item.optional_vars is not None:
                        assignments.append(([item.optional_vars], item.context_expr))
        for _ in range(6):
            changed = False
            for targets, value in assignments:
                hosts = self.host(value)
                is_input = self.input(value)
                for target in targets:
                    for node in walk(target):
                        if not isinstance(node, ast.Name):
                            continue
                        if is_input and node.id not in self.inputs:
                            self.inputs.add(node.id)
                            changed = True
                        if hosts and not hosts <= self.hosts.get(node.id, frozenset()):
                            self.hosts[node.id] = self.hosts.get(node.id, frozenset()) | hosts
                            changed = True
            if not changed:
                break
        for name in self.inputs & set(self.hosts):  # computed from both: not a CPU tensor for sure
            del self.hosts[name]

    def _torch_call(self, call: ast.Call) -> bool:
        full = self.names.resolve(call.func) or ""
        return full.startswith("torch.") and not full.startswith(("torch.nn.Module", "torch.optim"))

    def _self_attr(self, node: ast.AST) -> str | None:
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == self.self_name
        ):
            return node.attr
        return None

    def _helper(self, call: ast.Call) -> str | None:
        name = self._self_attr(call.func)
        return name if name in self.helpers else None

    def _submodule_call(self, call: ast.Call) -> bool:
        """`self.embed(x)`, `self(x)`: a module runs with its parameters on its device."""
        if isinstance(call.func, ast.Name) and call.func.id == self.self_name:
            return True
        name = self._self_attr(call.func)
        return name is not None and name not in self.methods

    def _tensor_args(self, call: ast.Call) -> list[ast.AST]:
        args: list[ast.AST] = []
        for arg in [*call.args, *(kw.value for kw in call.keywords if kw.arg != "device")]:
            if isinstance(arg, ast.Starred):
                arg = arg.value
            if isinstance(arg, (ast.List, ast.Tuple)):
                args.extend(arg.elts)
            else:
                args.append(arg)
        return args
