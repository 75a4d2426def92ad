"""One walk of a module's tree that every check reads from (walking it once per check was the linter's
largest cost)."""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator

_STMT, _OPERATION, _CALL, _CLASS_NODE, _FUNCTION, _CLASS, _CONSTANT, _IMPORT, _LOOP = (
    1 << i for i in range(9)
)
# The fields of each node type that hold a string, a number or a constant, never a node (Python's ASDL
# grammar, `Parser/Python.asdl`); `walk` does not read them. A field not named here is read, so a node
# type or field of a newer Python (`type_params`) is still walked.
_SCALAR_FIELDS: dict[str, tuple[str, ...]] = {
    "FunctionDef": ("name", "type_comment"),
    "AsyncFunctionDef": ("name", "type_comment"),
    "ClassDef": ("name",),
    "ExceptHandler": ("name",),
    "MatchAs": ("name",),
    "MatchStar": ("name",),
    "alias": ("name", "asname"),
    "Name": ("id",),
    "Attribute": ("attr",),
    "Constant": ("value", "kind"),
    "MatchSingleton": ("value",),
    "Global": ("names",),
    "Nonlocal": ("names",),
    "ImportFrom": ("module", "level"),
    "arg": ("arg", "type_comment"),
    "keyword": ("arg",),
    "Assign": ("type_comment",),
    "For": ("type_comment",),
    "AsyncFor": ("type_comment",),
    "With": ("type_comment",),
    "AsyncWith": ("type_comment",),
    "AnnAssign": ("simple",),
    "FormattedValue": ("conversion",),
    "comprehension": ("is_async",),
    "MatchClass": ("kwd_attrs",),
    "MatchMapping": ("rest",),
    "TypeIgnore": ("lineno", "tag"),
}
_WALK_FIELDS: dict[type, tuple[str, ...]] = {}


#: The only fields of Python's grammar that hold the leaf nodes `TreeIndex` leaves out (`Load`, `Store`,
#: `Add`, `Eq`, `Not`, `And` ...: `expr_context`, `operator`, `cmpop`, `unaryop`, `boolop`).
_LEAF_FIELDS = frozenset({"ctx", "op", "ops"})
_INDEX_FIELDS: dict[type, tuple[str, ...]] = {}


def _walk_fields(node_type: type) -> tuple[str, ...]:
    skip = _SCALAR_FIELDS.get(node_type.__name__, ()) if node_type.__module__ == "ast" else ()
    fields = _WALK_FIELDS[node_type] = tuple(f for f in node_type._fields if f not in skip)
    return fields


def _index_fields(node_type: type) -> tuple[str, ...]:
    """The fields `TreeIndex` reads: those that may hold a node, less those that hold only leaves."""
    walked = _WALK_FIELDS.get(node_type) or _walk_fields(node_type)
    fields = _INDEX_FIELDS[node_type] = tuple(f for f in walked if f not in _LEAF_FIELDS)
    return fields


#: The nodes of each function and class walked so far, by `id` (with the node, so that an `id` reused by
#: another object is never mistaken for it); `forget_walks` empties it after each file or project.
_WALKED: dict[int, tuple[ast.AST, list[ast.AST]]] = {}
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes of `node`'s tree, `node` first: the same nodes in the same order (breadth first) as
    `ast.walk`, which the checks called 10,042 times linting the 190 files of `benchmarks/bench_lint.py`
    as one project (the walks alone: 400 ms of CPU time with `ast.walk`, 221 ms with this one).

    It is faster because it skips the fields that never hold a node and the two generators
    (`ast.iter_child_nodes`, `ast.iter_fields`) `ast.walk` runs for every node. The nodes of a function
    or a class are kept until `forget_walks`: the checks walk the same ones again and again (on those 190
    files, 220,000 of the 414,000 nodes walked were of a function or class walked before), and reading a
    kept list costs a fraction of walking the tree.
    """
    if type(node) not in _DEFINITIONS:
        return iter(_nodes(node))
    kept = _WALKED.get(id(node))
    if kept is None or kept[0] is not node:
        kept = _WALKED[id(node)] = (node, _nodes(node))
    return iter(kept[1])


def forget_walks() -> None:
    """Drop the nodes `walk` keeps (the linter calls it when a file, or a project, is done).

    Linting in two threads at once stays right: a walk dropped while another file is linted is walked
    again, and a kept list is only used for the very node it was made from.
    """
    _WALKED.clear()


def _nodes(node: ast.AST) -> list[ast.AST]:
    """`node` and every node below it, breadth first (a list: a generator's resumption per node cost more
    than the walk itself)."""
    is_node = ast.AST
    table = _WALK_FIELDS
    todo = [node]
    append, extend = todo.append, todo.extend
    for current in todo:  # the list grows while it is read: breadth first, as `ast.walk`'s queue
        fields = table.get(type(current))
        if fields is None:
            fields = _walk_fields(type(current))
        for name in fields:
            value = getattr(current, name, None)
            if isinstance(value, is_node):
                append(value)
            elif isinstance(value, list):
                extend([item for item in value if isinstance(item, is_node)])
    return todo


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
        index_fields = _INDEX_FIELDS
        is_node = ast.AST
        name_type = ast.Name
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
            fields = index_fields.get(node_type)
            if fields is None:
                fields = _index_fields(node_type)
            if not fields:  # a name, a constant, an alias: no children
                continue
            children: list[ast.AST] = []
            for name in fields:
                value = getattr(node, name, None)
                if isinstance(value, list):
                    children.extend([v for v in value if isinstance(v, is_node)])
                elif isinstance(value, is_node):
                    children.append(value)
            for child in reversed(children):
                parents[child] = node
                if type(child) is not name_type:  # a name has nothing to index and no children
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
