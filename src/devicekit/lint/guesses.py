"""What a name probably holds when the code that makes it is not read: guesses from names alone, used by
the device-flow analysis (`devicekit.lint.dataflow`) only where a wrong guess stays silent or where the
pattern is the course's own example of the bug.

- `batch["tokens"]`: an item of a batch-like container, or under a key that names tensor data, is a tensor
  (its place unknown): `.to(device)` on it as a statement moves nothing (DK002).
- `model = Classifier()` with `Classifier` neither defined nor imported in the file (a reduced snippet, a
  notebook cell whose class came from elsewhere): a module built here, on the CPU (DK201). A class
  imported from another package is not guessed: it may place itself (`SentenceTransformer(...)`).
- `output = model(x)` with `model` unknown and `x` on a device: the output is on that device (a model
  called with a device tensor ran there, or the line already failed).
"""

from __future__ import annotations

import ast
import re

from devicekit.lint.names import Names, dotted, keyword, looks_like_model_name

# `batch["tokens"]`: an item of a batch-like container, or under a key that names tensor data.
_BATCH_CONTAINER = re.compile(r"(^|_)(batch|sample|example|inputs|feed)\w*$", re.I)
_TENSOR_KEY = re.compile(
    r"^(\w*_)?(ids|mask|masks|labels?|targets?|tokens?|images?|pixel_values|inputs?|x|y|features?|audio)$",
    re.I,
)
_LOSS_NAME = re.compile(r"(loss|criterion)", re.I)
_MOVES = frozenset({"to", "cuda", "cpu"})


def batch_item(expr: ast.AST | None) -> bool:
    """`batch["tokens"]`, `inputs["input_ids"]`: a tensor taken out of a batch, judging by the names."""
    if not isinstance(expr, ast.Subscript):
        return False
    index = expr.slice
    if not (isinstance(index, ast.Constant) and isinstance(index.value, str)):
        return False
    if looks_like_model_name(index.value) or _LOSS_NAME.search(index.value):
        return False
    container = (dotted(expr.value) or "").rsplit(".", 1)[-1]
    return bool(_BATCH_CONTAINER.search(container) or _TENSOR_KEY.match(index.value))


def unread_model_class(target: str, expr: ast.AST | None, names: Names) -> bool:
    """`model = Classifier()`: a model-like name bound to a call of a capitalised name that the file
    neither defines nor imports (and no `from x import *` could supply), without `device=` or
    `device_map=`, and not around another model (`Wrapper(model)` is where that model is)."""
    if not (looks_like_model_name(target) and isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name)):
        return False
    name = expr.func.id
    if not (name[:1].isupper() and name[1:2].islower()):
        return False
    if name in names.aliases or name in names.bound or names.star_import:
        return False
    if keyword(expr, "device") is not None or keyword(expr, "device_map") is not None:
        return False
    for arg in [*expr.args, *(kw.value for kw in expr.keywords)]:
        key = dotted(arg)
        if key is not None and looks_like_model_name(key):
            return False  # `ModelWithHead(backbone)`: around a model that is somewhere already
    return True


def unread_model(func: ast.AST) -> str | None:
    """The name of a callee that looks like a model (`model`, `net`, `self.encoder`), else None."""
    key = dotted(func)
    return key if key is not None and looks_like_model_name(key) else None
