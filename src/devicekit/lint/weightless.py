"""Round 6 of issue 43: project modules without weights of their own.

A class of the project on `nn.Module` whose code builds no layer, parameter or buffer (a formula, a
wrapper around `torch.softmax`, a `Maxish()` that only computes) has nothing for `.to(device)` to move:
called with tensors on a GPU it runs there, as `nn.ReLU()` does. DK201 ("a model built here is called
with a batch that was moved, but the model itself was never moved") is wrong for it. This module says
when a constructor call surely builds such a module: the class, its project bases and every project
class it builds are read, and each argument of the call is a constant or such a module itself; anything
the code does not show (a base from a library, an argument held in a variable) answers no.
"""

from __future__ import annotations

import ast

from devicekit.lint.index import walk
from devicekit.lint.names import dotted
from devicekit.lint.project import Project, SourceFile

#: Calls whose result is never a module with weights (for the constructor's arguments).
_PLAIN_CALLS = frozenset({"str", "int", "float", "bool", "len", "tuple", "list", "dict", "range", "repr"})
#: Methods that put a parameter, buffer or submodule on a module.
_REGISTERS = frozenset({"register_buffer", "register_parameter", "add_module", "register_module"})
_MAX_DEPTH = 4


def builds_weightless(project: Project, source: SourceFile, call: ast.Call, depth: int = 0) -> bool:
    """Whether `call` builds an instance of a project `nn.Module` class without weights (see above)."""
    if depth > _MAX_DEPTH:
        return False
    full = source.names.resolve(call.func) or dotted(call.func) or ""
    found = project.lookup(full, source) if full else None
    if found is None or not isinstance(found[1], ast.ClassDef):
        return False
    cls_source, cls = found
    if not project.is_module_class(cls_source, cls):
        return False
    for arg in [*call.args, *(kw.value for kw in call.keywords)]:
        if not _plain_argument(project, source, arg, depth):
            return False
    return _class_weightless(project, cls_source, cls, depth)


def _plain_argument(project: Project, source: SourceFile, arg: ast.AST, depth: int) -> bool:
    """A constant, a call that makes no module (`str(...)`), or a weightless project module."""
    if isinstance(arg, ast.Starred):
        return False
    if isinstance(arg, ast.Constant):
        return True
    if isinstance(arg, (ast.Tuple, ast.List)):
        return all(_plain_argument(project, source, e, depth) for e in arg.elts)
    if isinstance(arg, ast.Call):
        if isinstance(arg.func, ast.Name) and arg.func.id in _PLAIN_CALLS:
            return True
        return builds_weightless(project, source, arg, depth + 1)
    return False


def _class_weightless(project: Project, source: SourceFile, cls: ast.ClassDef, depth: int) -> bool:
    """No layer, parameter or buffer in the class's code, nor in its project bases'; its only base outside
    the project is `torch.nn.Module` itself; every project class it builds is weightless (called alike).
    A class with an empty body (`class Net(nn.Module): pass`) stands for code not shown: not weightless."""
    if all(
        isinstance(item, ast.Pass) or (isinstance(item, ast.Expr) and isinstance(item.value, ast.Constant))
        for item in cls.body
    ):
        return False
    for base in cls.bases:
        full = source.names.resolve(base) or dotted(base) or ""
        if full in ("torch.nn.Module", "torch.nn.modules.module.Module"):
            continue
        found = project.lookup(full, source) if full else None
        if found is None or not isinstance(found[1], ast.ClassDef) or found[1] is cls:
            return False
        if not _class_weightless(project, found[0], found[1], depth + 1):
            return False
    for node in walk(cls):
        if isinstance(node, ast.Attribute) and node.attr in _REGISTERS:
            return False
        if not isinstance(node, ast.Call):
            continue
        full = source.names.resolve(node.func) or ""
        if full.startswith("torch.nn.") and not full.startswith("torch.nn.functional."):
            return False  # a layer, `nn.Parameter`, `nn.ModuleList`: weights, or a place for them
        found = project.lookup(full, source) if full else None
        if found is not None and isinstance(found[1], ast.ClassDef):
            if project.is_module_class(found[0], found[1]) and not builds_weightless(
                project, source, node, depth + 1
            ):
                return False
        elif source.names.is_module_constructor(node):
            return False  # a model from a library (`timm.create_model`, `from_pretrained`)
    return True
