"""One walk of a module's tree that every check reads from (walking it once per check was the linter's
largest cost)."""

from __future__ import annotations

import ast
from collections import defaultdict

_STMT, _OPERATION, _CALL, _CLASS_NODE, _FUNCTION, _CLASS, _CONSTANT, _IMPORT, _LOOP = (
    1 << i for i in range(9)
)
# Fields that can hold child nodes, for the most common node types; others use `_fields`.
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {
    ast.Name: (),
    ast.Constant: (),
    ast.alias: (),
    ast.Attribute: ("value",),
    ast.keyword: ("value",),
    ast.arg: ("annotation",),
    ast.Call: ("func", "args", "keywords"),
    ast.Subscript: ("value", "slice"),
    ast.BinOp: ("left", "right"),
    ast.UnaryOp: ("operand",),
    ast.Compare: ("left", "comparators"),
    ast.BoolOp: ("values",),
}
_LEAVES = (ast.expr_context, ast.operator, ast.cmpop, ast.unaryop, ast.boolop)


def _kinds() -> dict[type, int]:
    kinds: dict[type, int] = {}
    todo = [ast.AST]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        kind = 0
        if issubclass(cls, ast.stmt):
            kind |= _STMT
        if cls in (ast.Call, ast.Compare, ast.BinOp):
            kind |= _OPERATION
        if cls is ast.Call:
            kind |= _CALL
        if cls in (ast.Call, ast.Assign):
            kind |= _CLASS_NODE
        if cls in (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda):
            kind |= _FUNCTION
        if cls is ast.ClassDef:
            kind |= _CLASS
        if cls is ast.Constant:
            kind |= _CONSTANT
        if cls in (ast.Import, ast.ImportFrom):
            kind |= _IMPORT
        if cls in (ast.For, ast.AsyncFor, ast.comprehension):
            kind |= _LOOP
        kinds[cls] = kind
    return kinds


_KIND = _kinds()


class TreeIndex:
    """The nodes of a module, found in one pre-order walk (source order).

    Attributes:
        parents: each node's parent.
        calls: every call.
        owned: for each statement, the calls and operations of its own expressions (not of the
            statements nested in it), outermost first.
        function_calls: for each function (or lambda), the calls in its body outside nested functions; for
            the module itself, the calls of its top level.
        function_loops: for each function (the module itself for its top level), its `for` loops and
            comprehensions (what they iterate over tells a DataLoader batch).
        class_nodes: for each class, the calls and assignments anywhere in it.
        constants: every constant.
        definitions: functions and classes, in source order.
        imports: the import statements.
    """

    def __init__(self, tree: ast.AST) -> None:
        parents: dict[ast.AST, ast.AST] = {}
        calls: list[ast.Call] = []
        owned: dict[ast.AST, list[ast.AST]] = defaultdict(list)
        function_calls: dict[ast.AST, list[ast.Call]] = defaultdict(list)
        function_loops: dict[ast.AST, list[ast.AST]] = defaultdict(list)
        class_nodes: dict[ast.AST, list[ast.AST]] = defaultdict(list)
        constants: list[ast.Constant] = []
        definitions: list[ast.AST] = []
        imports: list[ast.AST] = []
        kinds = _KIND
        child_fields = _CHILD_FIELDS
        stack: list[tuple[ast.AST, ast.AST | None, ast.AST | None, ast.AST | None]] = [
            (tree, None, None, None)
        ]
        pop, push = stack.pop, stack.append
        while stack:
            node, owner, function, cls = pop()
            node_type = type(node)
            kind = kinds.get(node_type, 0)
            if kind:
                if kind & _STMT:
                    owner = node
                    if kind & _IMPORT:
                        imports.append(node)
                elif kind & _OPERATION and owner is not None:
                    owned[owner].append(node)
                if kind & _CALL:
                    calls.append(node)  # type: ignore[arg-type]
                    function_calls[function if function is not None else tree].append(node)  # type: ignore[arg-type]
                if kind & _LOOP:
                    function_loops[function if function is not None else tree].append(node)
                if kind & _CLASS_NODE and cls is not None:
                    class_nodes[cls].append(node)
                if kind & _FUNCTION:
                    function = node
                    if node_type is not ast.Lambda:
                        definitions.append(node)
                elif kind & _CLASS:
                    cls = node
                    definitions.append(node)
                if kind & _CONSTANT:
                    constants.append(node)  # type: ignore[arg-type]
                    continue
            fields = child_fields.get(node_type)
            if fields is None:
                fields = node._fields
            elif not fields:  # a name, an alias: no children
                continue
            children: list[ast.AST] = []
            for name in fields:
                value = getattr(node, name, None)
                if isinstance(value, list):
                    children.extend(
                        [v for v in value if isinstance(v, ast.AST) and not isinstance(v, _LEAVES)]
                    )
                elif isinstance(value, ast.AST) and not isinstance(value, _LEAVES):
                    children.append(value)
            for child in reversed(children):
                parents[child] = node
                push((child, owner, function, cls))
        self.parents = parents
        self.calls = calls
        self.owned = owned
        self.function_calls = function_calls
        self.function_loops = function_loops
        self.class_nodes = class_nodes
        self.constants = constants
        self.definitions = definitions
        self.imports = imports
