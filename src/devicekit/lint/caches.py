"""DK004 in two more shapes of real code, read from an `nn.Module` subclass's own methods:

- a cache: `self.mask = None` in `__init__`, then `forward` (or a method it runs) stores a tensor there
  and reuses it on a later call (it reads the attribute before storing it, or stores it only under an
  `if`). `Module.to()` moves parameters and buffers, not plain attributes, so after the module moves the
  cached tensor is still where it was made. The fix is `self.register_buffer("mask", None,
  persistent=False)`. A cache that checks its device (`self.mask.device`) or moves itself
  (`self.mask.to(...)`) is left alone.
- a plain attribute set before `register_buffer` of the same name: `self.mask = make_mask()` then
  `self.register_buffer("mask", self.mask)` raises `KeyError: "attribute 'mask' already exists"` on
  today's PyTorch (`torch/nn/modules/module.py`, `register_buffer`, v2.13.0; the test runs it), and on old
  releases left the mask a plain attribute that `.to()` did not move.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable

from devicekit.lint.core import Context
from devicekit.lint.index import walk
from devicekit.messages import Message

_REGISTERS = frozenset({"register_buffer", "register_parameter"})


def _self_attr(node: ast.AST, self_name: str = "self") -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == self_name:
        return node.attr
    return None


def _none_in_init(init: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, ast.AST]:
    """`self.x = None` at the top level of `__init__`: the attribute and its target node."""
    found: dict[str, ast.AST] = {}
    for stmt in init.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant) and stmt.value.value is None:
            for target in stmt.targets:
                attr = _self_attr(target)
                if attr is not None:
                    found.setdefault(attr, target)
    return found


def _under_an_if(node: ast.AST, method: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    child = node
    while child in parents and child is not method:
        parent = parents[child]
        if isinstance(parent, ast.If) and child is not parent.test:
            return True
        child = parent
    return False


def cached_attributes(
    ctx: Context,
    cls: ast.ClassDef,
    registered: set[str],
    runtime: Iterable[ast.FunctionDef | ast.AsyncFunctionDef],
    is_tensor: Callable[[ast.AST, set[str]], bool],
    statements: Callable[[list[ast.stmt]], Iterable[ast.stmt]],
) -> None:
    """Report DK004 where `__init__` sets a cache to None that a runtime method fills with a tensor."""
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    if init is None:
        return
    candidates = {a: t for a, t in _none_in_init(init).items() if a not in registered}
    if not candidates:
        return
    careful = device_aware(ctx, cls)
    for method in runtime:
        local: set[str] = set()
        for stmt in statements(method.body):
            if not isinstance(stmt, ast.Assign):
                continue
            tensor = is_tensor(stmt.value, local)
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    (local.add if tensor else local.discard)(target.id)
                attr = _self_attr(target)
                if not tensor or attr not in candidates or attr in careful:
                    continue
                if _under_an_if(stmt, method, ctx.parents) or _read_before(method, attr, stmt.lineno):
                    ctx.report(candidates.pop(attr), "DK004", _cache_detail(attr, method.name, stmt.lineno))


def _read_before(method: ast.AST, attr: str, line: int) -> bool:
    for node in walk(method):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Load)
            and _self_attr(node) == attr
            and node.lineno < line
        ):
            return True
    return False


def device_aware(ctx: Context, cls: ast.ClassDef) -> set[str]:
    """Attributes whose device the class reads (`self.x.device`) or that it moves (`self.x.to(...)`)."""
    aware: set[str] = set()
    for node in walk(cls):
        if isinstance(node, ast.Attribute) and node.attr in ("device", "to", "cuda", "type_as"):
            attr = _self_attr(node.value)
            if attr is not None:
                aware.add(attr)
    return aware


def assigned_before_register(ctx: Context, cls: ast.ClassDef) -> None:
    """Report DK004 where `__init__` sets `self.x` before `self.register_buffer("x", ...)`."""
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    if init is None:
        return
    plain: dict[str, ast.AST] = {}
    for stmt in init.body:  # the top level of __init__, in order
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                attr = _self_attr(target)
                if attr is not None:
                    plain.setdefault(attr, target)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            call = stmt.value
            func = call.func
            if not (isinstance(func, ast.Attribute) and func.attr in _REGISTERS and call.args):
                continue
            if not (isinstance(func.value, ast.Name) and func.value.id == "self"):
                continue
            first = call.args[0]
            if isinstance(first, ast.Constant) and first.value in plain:
                name = first.value
                ctx.report(plain.pop(name), "DK004", _register_detail(name, func.attr, call.lineno))


def _cache_detail(attr: str, method: str, line: int) -> Message:
    return Message(
        f"`self.{attr}` starts as None in `__init__` and caches a tensor in `{method}` (line {line}): "
        "a plain attribute, so `.to()` leaves the cached tensor where it was made and the next call "
        "reuses it there",
        f"`self.{attr}` 在 `__init__` 中先设为 None，再在 `{method}` 中缓存张量（第 {line} 行）："
        "它是普通属性，`.to()` 不会移动缓存的张量，下一次调用仍在原来的设备上使用它",
    )


def _register_detail(attr: str, register: str, line: int) -> Message:
    return Message(
        f'`self.{attr}` is set as a plain attribute before `{register}("{attr}", ...)` at line {line}, '
        f"which then raises KeyError: \"attribute '{attr}' already exists\" (older PyTorch skipped it, and "
        "`.to()` left the tensor behind)",
        f'`self.{attr}` 先被设成普通属性，第 {line} 行的 `{register}("{attr}", ...)` 随后会抛出 '
        f"KeyError: \"attribute '{attr}' already exists\""
        "（旧版 PyTorch 会跳过它，`.to()` 也就不会移动这个张量）",
    )
