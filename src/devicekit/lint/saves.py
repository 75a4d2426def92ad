"""When a `torch.load` without `map_location` is safe, as the code shows (DK008's exceptions).

`map_location` matters when a checkpoint written on a GPU machine is read on a machine without that GPU.
Two kinds of load in real code cannot meet that case:

- the function saved that very file a few lines above (`torch.save(state, path)` then
  `torch.load(path)`, a `BytesIO` buffer written and read back, `fabric.save(out_dir, ...)` then
  `torch.load(out_dir / "meta.pt")`): the same run, on the same machine, wrote it;
- tests: a test (`def test_...`) loads what it, its fixtures or the code it runs saved, on the machine it
  runs on (a test that needs a GPU runs where there is one); and in a test file that never names an
  accelerator, what anything loads was saved on the CPU;
- a file the same source file saves from the CPU (`torch.save(features.cpu(), ".../trainfeat.pth")`) and
  loads elsewhere by the same file name;
- data, not a model: a file the path names as a cache, features, a dataset, a vocabulary or a split
  (`cached_features_file`, `data_dir / "train.pt"`), which preparation scripts write from CPU tensors;
  and a scheduler's state (`scheduler.load_state_dict(torch.load(...))`), which holds numbers only.
"""

from __future__ import annotations

import ast
import re

from devicekit.lint.index import walk
from devicekit.lint.names import Names, dotted

#: Words that name an accelerator in code: a test file that says none of them runs on the CPU only.
_ACCELERATOR = re.compile(r"(?<![a-z])(cuda|mps|xpu|npu|hpu|accelerator|gpus?|device_map)(?![a-z])", re.I)
_TEST_FILE = re.compile(r"(^test_.*|.*_test|^conftest)\.py$")
_TEST_DIRS = frozenset({"test", "tests", "testing"})
#: Calls that write files: `torch.save`, `fabric.save`, `save_checkpoint`, `convert_lit_checkpoint`,
#: `create_random_text_data(path)` ...
_WRITER = re.compile(r"save|dump|write|export|convert|create|generate", re.I)
_FILE_NAME = re.compile(r"[\w.-]+\.\w+$")
_PATH_WRAPPERS = frozenset(
    {"str", "os.fspath", "pathlib.Path", "Path", "os.path.abspath", "os.path.expanduser"}
)


def is_test_file(path: str) -> bool:
    """`test_x.py`, `x_test.py`, `conftest.py`, or any file under a `tests/` folder."""
    parts = re.split(r"[\\/]", path)
    return bool(_TEST_FILE.match(parts[-1])) or any(part in _TEST_DIRS for part in parts[:-1])


def mentions_accelerator(text: str) -> bool:
    """Whether the code names an accelerator anywhere (`cuda`, `.cuda()`, `"mps"`, `min_cuda_gpus`,
    `device_map` ...)."""
    return bool(_ACCELERATOR.search(text))


class SavedHere:
    """Which loads of a scope read back what the same scope saved above them.

    Args:
        names: the file's names.
        scope: the function (or module) whose statements are looked at.
        calls: the calls of that scope, in source order.
    """

    def __init__(self, names: Names, scope: ast.AST, calls: list[ast.Call]) -> None:
        self.names = names
        self.assigned: dict[str, list[ast.AST]] = {}
        for node in walk(scope) if not isinstance(scope, ast.Module) else _module_statements(scope):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self.assigned.setdefault(target.id, []).append(node.value)
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if isinstance(item.optional_vars, ast.Name):
                        self.assigned.setdefault(item.optional_vars.id, []).append(item.context_expr)
        self.saves: list[tuple[tuple[int, int], set[str]]] = []
        for call in calls:
            name = (dotted(call.func) or "").rsplit(".", 1)[-1]
            if _WRITER.search(name):
                written: set[str] = set()
                for arg in [*call.args, *(kw.value for kw in call.keywords)]:
                    written |= self._exact(arg)
                self.saves.append(((call.lineno, call.col_offset), written))

    def covers(self, load: ast.Call) -> bool:
        """Whether `load` reads a file (or a folder's file, or a buffer) saved earlier in the scope."""
        path = load.args[0] if load.args else next((k.value for k in load.keywords if k.arg == "f"), None)
        if path is None:
            return False
        wanted = self._prefixes(path)
        where = (load.lineno, load.col_offset)
        return any(position < where and written & wanted for position, written in self.saves)

    # --- path expressions ---------------------------------------------------------------------------

    def _unwrap(self, expr: ast.AST) -> ast.AST:
        while isinstance(expr, ast.Call) and len(expr.args) == 1 and not expr.keywords:
            if (self.names.resolve(expr.func) or "") not in _PATH_WRAPPERS:
                break
            expr = expr.args[0]
        return expr

    def _exact(self, expr: ast.AST) -> set[str]:
        """The forms a path takes: itself, and what its name was assigned (each unwrapped from `str()`)."""
        expr = self._unwrap(expr)
        forms = {ast.dump(expr)}
        if isinstance(expr, ast.Name):
            for value in self.assigned.get(expr.id, [])[:4]:
                forms.add(ast.dump(self._unwrap(value)))
        return forms

    def _prefixes(self, expr: ast.AST, depth: int = 0) -> set[str]:
        """The forms of the path and of the folders it is built from (`out / "x.pt"`,
        `os.path.join(out, ...)`), a few steps deep (`path = os.path.join(path, "x")` names itself)."""
        expr = self._unwrap(expr)
        forms = self._exact(expr)
        if depth > 6:
            return forms
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Div):
            forms |= self._prefixes(expr.left, depth + 1)
        elif isinstance(expr, ast.Call) and expr.args:
            if (self.names.resolve(expr.func) or "") in {"os.path.join", "pathlib.Path.joinpath"}:
                forms |= self._prefixes(expr.args[0], depth + 1)
            elif isinstance(expr.func, ast.Attribute) and expr.func.attr == "joinpath":
                forms |= self._prefixes(expr.func.value, depth + 1)
        elif isinstance(expr, ast.Name):
            for value in self.assigned.get(expr.id, [])[:4]:
                unwrapped = self._unwrap(value)
                if not isinstance(unwrapped, ast.Name):
                    forms |= self._prefixes(unwrapped, depth + 1)
        return forms


def _module_statements(module: ast.Module):
    """The module's statements outside functions and classes (a script's top level)."""
    todo = list(module.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield node
        todo.extend(ast.iter_child_nodes(node))


def scope_of(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.AST | None:
    """The function that contains `node`, or None at the module's top level."""
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return node
    return None


def test_function(scope: ast.AST | None) -> bool:
    """`def test_...():` — a pytest or unittest test."""
    return isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and scope.name.startswith("test")


def _on_cpu(expr: ast.AST) -> bool:
    """`t.cpu()`, `{k: v.cpu() for ...}`: what is saved is on the CPU for sure."""
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        return expr.func.attr == "cpu"
    if isinstance(expr, ast.DictComp):
        return _on_cpu(expr.value)
    if isinstance(expr, ast.Dict):
        return bool(expr.values) and all(_on_cpu(v) for v in expr.values)
    return False


def file_names(expr: ast.AST) -> set[str]:
    """The file names written as constants in a path expression (`"trainfeat.pth"`)."""
    found = set()
    for node in walk(expr):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _FILE_NAME.search(node.value):
            found.add(re.split(r"[\\/]", node.value)[-1])
    return found


def saved_on_cpu(names: Names, calls: list[ast.Call]) -> set[str]:
    """The file names a source file saves CPU tensors to (`torch.save(x.cpu(), ".../name.pth")`)."""
    found: set[str] = set()
    for call in calls:
        if (names.resolve(call.func) or "") != "torch.save":
            continue
        obj = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "obj"), None)
        path = (
            call.args[1]
            if len(call.args) > 1
            else next((k.value for k in call.keywords if k.arg == "f"), None)
        )
        if obj is not None and path is not None and _on_cpu(obj):
            found |= file_names(path)
    return found


#: Words that name data rather than a model's or an optimizer's state, in a path's names and strings.
_DATA = re.compile(
    r"(^|[_\W])(cache|cached|features?|feats?|dataset|datasets|data|vocab|vocabulary|corpus|tokeni[sz]ed|"
    r"train|test|val|valid|validation|dev|split|samples?|examples?)([_\W.]|$)",
    re.I,
)


def loads_data(path: ast.AST) -> bool:
    """Whether a path names data (`cached_features_file`, `os.path.join(data_dir, "train.pt")`)."""
    for node in walk(path):
        text = None
        if isinstance(node, ast.Name):
            text = node.id
        elif isinstance(node, ast.Attribute):
            text = node.attr
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.rsplit("/", 1)[-1]
        if text and _DATA.search(text):
            return True
    return False


def loads_a_schedule(load: ast.Call, parents: dict[ast.AST, ast.AST]) -> bool:
    """`scheduler.load_state_dict(torch.load(...))`: a learning-rate schedule's state, numbers only."""
    parent = parents.get(load)
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute):
        if parent.func.attr == "load_state_dict":
            owner = (dotted(parent.func.value) or "").rsplit(".", 1)[-1].lower()
            return "sched" in owner
    return False
