"""DK005's exception: a plain list or dict of submodules whose items the class registers another way.

`self.heads = []` filled with modules is a bug only when nothing else registers them. Real code often
keeps the plain list as a view for iteration and registers each item under a name of its own
(detectron2's `self.add_module(in_feature, self.scale_heads[-1])`), or keeps them in an `nn.ModuleList`
as well (`self.blocks = nn.ModuleList(self.stages)`): then `model.to()` moves them, and `parameters()`
and `state_dict()` hold them. This module finds the attributes a class registers so.
"""

from __future__ import annotations

import ast

from devicekit.lint.index import walk
from devicekit.messages import Message

_REGISTERS = frozenset({"add_module", "register_module"})
_CONTAINERS = frozenset({"ModuleList", "ModuleDict"})
_WALKERS = frozenset({"enumerate", "zip", "reversed", "list", "tuple"})


def _self_attr(node: ast.AST) -> str | None:
    """`name` for `self.name`, `self.name[-1]`, `self.name["p2"]` (the container a module comes from)."""
    while isinstance(node, (ast.Subscript, ast.Starred)):
        node = node.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _holds_modules(names, call: ast.Call) -> bool:
    """A call that builds a module, or a module container (`nn.ModuleList(...)`, `nn.ModuleDict(...)`)."""
    last = (names.resolve(call.func) or "").rsplit(".", 1)[-1]
    return names.is_module_constructor(call) or last in _CONTAINERS


def _walked(iterable: ast.AST) -> str | None:
    """The `self.x` a loop walks: `for m in self.x`, `for i, m in enumerate(self.x)`."""
    if (
        isinstance(iterable, ast.Call)
        and isinstance(iterable.func, ast.Name)
        and iterable.func.id in _WALKERS
    ):
        return next((o for o in map(_self_attr, iterable.args) if o is not None), None)
    return _self_attr(iterable)


def registered_containers(nodes, names) -> set[str]:
    """The `self.x` containers whose items the class's code (`nodes`, every node of the class) also
    registers (`names`: what the file's names mean): an item passed to `add_module` /
    `register_module` (`self.x[-1]`, or the variable of a loop over `self.x`), or the container handed
    to a module container (`nn.ModuleList(self.x)`, `nn.Sequential(*self.x)`), whatever attribute that
    is stored in."""
    found: set[str] = set()
    loops: dict[str, str] = {}  # loop variable -> the `self.x` it walks (`for m in self.x:`)
    nodes = list(nodes)
    for node in nodes:
        if isinstance(node, ast.For):
            owner = _walked(node.iter)
            if owner is not None:
                for target in walk(node.target):
                    if isinstance(target, ast.Name):
                        loops[target.id] = owner
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _REGISTERS and len(node.args) >= 2:
            item = node.args[1]
            owner = _self_attr(item)
            if owner is None and isinstance(item, ast.Name):
                owner = loops.get(item.id)
            if owner is not None:
                found.add(owner)
        elif _holds_modules(names, node):
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                owner = _self_attr(arg)
                if owner is not None:
                    found.add(owner)
    return found


def container_detail(attr: str) -> Message:
    """What DK005 says about the container it reports: its name, and what would have made it fine."""
    return Message(
        f"`self.{attr}` holds modules, and nothing in the class registers them "
        "(no `add_module`, no `nn.ModuleList` around it)",
        f"`self.{attr}` 里装的是模块，而类里没有任何地方注册它们"
        "（没有 `add_module`，也没有用 `nn.ModuleList` 包起来）",
    )
