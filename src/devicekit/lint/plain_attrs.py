"""When DK004 (a plain tensor attribute of an `nn.Module`) is wrong, and when its usual fix is.

Three shapes of real code that the rule's surface misreads (issue 43, the judge's report on code nobody
tuned on):

- a framework attribute that is not module state: Lightning's `example_input_array`, which Lightning
  moves itself before it runs it, and which `register_buffer` refuses (a property of `LightningModule`);
- a tensor the class moves every time it reads it (`self.state.to(device=self.device)` before each use,
  an RL observation replaced at every step): where the module is does not matter to it;
- a name a base class of the project already declares (a property, a class attribute): the rule may be
  right, but `register_buffer("name", ...)` raises `KeyError` there, and a per-step input that the
  class replaces at run time is not state for a buffer either; the fix says what to do instead.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from devicekit.lint.index import walk
from devicekit.messages import Message

#: Attributes a framework's module class declares, moves itself and does not take as a buffer:
#: `LightningModule.example_input_array` (a property; Lightning moves it before the model summary and
#: ONNX export).
FRAMEWORK_ATTRIBUTES = frozenset({"example_input_array"})
#: Calls that put a tensor on a device wherever it is read: `self.x.to(...)`, `self.x.cuda()`,
#: `to_device(self.x, ...)`.
_MOVES = frozenset({"to", "cuda"})
_MOVE_FUNCTIONS = frozenset({"to_device", "move_to_device", "move_data_to_device"})


def _is_self_attr(node: ast.AST, attr: str) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == attr
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def _is_move_of(node: ast.AST, attr: str) -> bool:
    """`self.x.to(...)`, `self.x.cuda()`, `to_device(self.x, ...)`."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in _MOVES:
        return _is_self_attr(func.value, attr)
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name in _MOVE_FUNCTIONS and bool(node.args) and _is_self_attr(node.args[0], attr)


def _methods(cls: ast.ClassDef) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def moved_at_every_read(cls: ast.ClassDef, attr: str) -> bool:
    """Every read of `self.attr` outside `__init__` is a move of it (`self.x.to(dev)`), or comes after
    the method rebound it to such a move (`self.x = self.x.to(dev)`; read in source order), and there is
    at least one such read. Then where the module is does not matter to the tensor."""
    reads = 0
    for method in _methods(cls):
        if method.name == "__init__":
            continue
        parents = {child: node for node in walk(method) for child in ast.iter_child_nodes(node)}
        events = []  # (line, col, kind): "moved" / "plain" binding, "read"
        for node in walk(method):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(_is_self_attr(t, attr) for t in targets):
                    kind = "moved" if _is_move_of(node.value, attr) else "plain"
                    end = getattr(node, "end_lineno", node.lineno)
                    events.append((end, 10**6, kind))  # bound after its right-hand side is read
            elif _is_self_attr(node, attr) and isinstance(node.ctx, ast.Load):
                parent = parents.get(node)
                grand = parents.get(parent) if parent is not None else None
                through = (isinstance(parent, ast.Attribute) and _is_move_of(grand, attr)) or _is_move_of(
                    parent, attr
                )
                events.append((node.lineno, node.col_offset, "through" if through else "read"))
        moved = False
        for _, _, kind in sorted(events):
            if kind in ("moved", "plain"):
                moved = kind == "moved"
            elif kind == "through":
                reads += 1
            else:
                if not moved:
                    return False
                reads += 1
    return reads > 0


def rebound_at_run_time(cls: ast.ClassDef, attr: str) -> int | None:
    """The line where a method other than `__init__` binds `self.attr` to a new value (a per-step input
    such as an environment's observation), or None."""
    for method in _methods(cls):
        if method.name == "__init__":
            continue
        for node in walk(method):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(_is_self_attr(t, attr) for t in targets) and not _is_move_of(node.value, attr):
                    return node.lineno
    return None


def declared_by_base(
    cls: ast.ClassDef, attr: str, lookup: Callable[[ast.expr], ast.ClassDef | None], depth: int = 0
) -> str | None:
    """The name of a base class (of the project) that declares `attr` itself, as a property or a class
    attribute with a value: `register_buffer(attr, ...)` raises `KeyError` there."""
    if depth > 6:
        return None
    for base in cls.bases:
        parent = lookup(base)
        if parent is None or parent is cls:
            continue
        for node in parent.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == attr:
                return parent.name
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == attr for t in node.targets
            ):
                return parent.name
            if (
                isinstance(node, ast.AnnAssign)
                and node.value is not None
                and isinstance(node.target, ast.Name)
                and node.target.id == attr
            ):
                return parent.name
        found = declared_by_base(parent, attr, lookup, depth + 1)
        if found is not None:
            return found
    return None


def judge(
    cls: ast.ClassDef, attr: str, lookup: Callable[[ast.expr], ast.ClassDef | None]
) -> tuple[bool, Message | None]:
    """Whether DK004 reports `self.attr` of `cls`, and the fix to give instead of the rule's
    `register_buffer` where that would fail or be the wrong tool (None: the rule's own fix)."""
    if attr in FRAMEWORK_ATTRIBUTES or moved_at_every_read(cls, attr):
        return False, None
    owner = declared_by_base(cls, attr, lookup)
    if owner is not None:
        return True, Message(
            f"move the tensor where it is used (`self.{attr}.to(x.device)`), or register it as a buffer "
            f'under another name; `{owner}` already declares `{attr}`, so `register_buffer("{attr}", ...)` '
            "raises `KeyError`",
            f"在用到它的地方移动这个张量（`self.{attr}.to(x.device)`），或者换个名字注册成缓冲区；"
            f'`{owner}` 已经声明了 `{attr}`，`register_buffer("{attr}", ...)` 会抛出 `KeyError`',
        )
    line = rebound_at_run_time(cls, attr)
    if line is not None:
        return True, Message(
            f"move it to the module's device where it is used (`self.{attr}.to(self.device)`); a buffer "
            f"does not fit a value the class replaces at run time (line {line}), an input, not module state",
            f"在用到它的地方把它移到模块所在的设备上（`self.{attr}.to(self.device)`）；"
            f"它在运行时会被替换（第 {line} 行），是输入而不是模块状态，不适合用缓冲区",
        )
    return True, None
