"""An index of the whole code base being linted: which file defines which function and class, so that the
device-flow analysis can follow a call into a helper of another file (`from .utils import make_mask`).

Each file gets a dotted module name from its path (`src/pkg/model.py` is known as `src.pkg.model`,
`pkg.model` and `model`, so absolute imports resolve however the project is laid out), and its package
(for relative imports). A lookup that matches several files prefers the one nearest the importing file.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field

from devicekit.lint.names import Names

#: How many re-exports (`pkg/__init__.py` importing from `pkg.model`) a lookup follows.
_MAX_HOPS = 3


@dataclass
class SourceFile:
    """One parsed file of the project.

    Attributes:
        path: the path as given.
        tree: its syntax tree.
        package: the dotted package it sits in (for relative imports).
        names: its imports and classes, relative imports resolved.
        functions: its top-level functions by name.
        classes: its top-level classes by name.
        globals: names assigned at its top level.
        text: its source text, when the linter read it (None: read it again where needed).
    """

    path: str
    tree: ast.Module
    package: str
    known_names: Names | None = None
    text: str | None = None
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(init=False)
    classes: dict[str, ast.ClassDef] = field(init=False)

    @property
    def names(self) -> Names:
        """Its imports (relative ones resolved) and classes, read once when first asked for."""
        if self.known_names is None:
            self.known_names = Names(self.tree, _imports_and_definitions(self.tree), package=self.package)
        return self.known_names

    def __post_init__(self) -> None:
        self.functions = {}
        self.classes = {}
        for node in self.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = node


def _imports_and_definitions(tree: ast.Module) -> list[ast.AST]:
    """The imports and definitions of a file's top level (also under `if` and `try`: guarded imports);
    the bodies of its functions are not read (a file that is only called into needs no more)."""
    nodes: list[ast.AST] = []
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(
            node, (ast.Import, ast.ImportFrom, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        ):
            nodes.append(node)
        if isinstance(node, (ast.If, ast.Try)) or type(node).__name__ == "TryStar":  # guarded imports
            todo.extend(getattr(node, "body", []))
            todo.extend(getattr(node, "orelse", []))
            for handler in getattr(node, "handlers", []):
                todo.extend(handler.body)
    return nodes


def module_names(path: str) -> tuple[str, list[str]]:
    """The package of a file (the longest run of folders above it that are Python names) and every dotted
    name it may be imported as, longest first: `a/b/c.py` is `a.b.c`, `b.c` and `c`, in package `a.b`."""
    parts = [p for p in os.path.normpath(os.path.abspath(path)).replace("\\", "/").split("/") if p]
    stem = parts[-1].rsplit(".", 1)[0] if parts else ""
    folders = parts[:-1]
    start = len(folders)
    while start > 0 and folders[start - 1].isidentifier():
        start -= 1
    folders = folders[start:]
    package = ".".join(folders)
    dotted = folders if stem == "__init__" else [*folders, stem]
    if stem != "__init__" and not stem.isidentifier():
        return package, []
    return package, [".".join(dotted[i:]) for i in range(len(dotted))]


class Project:
    """The files being linted together, and lookups across them."""

    def __init__(self, files: list[SourceFile]) -> None:
        self.files = {f.path: f for f in files}
        self.modules: dict[str, list[SourceFile]] = {}
        for source in files:
            for name in module_names(source.path)[1]:
                self.modules.setdefault(name, []).append(source)
        self._module_classes: dict[int, bool] = {}
        #: What the device-flow analysis learns once for the whole project (keyed by its own tables).
        self.cache: dict[str, dict] = {}

    @classmethod
    def of(cls, path: str, tree: ast.Module, names: Names | None = None) -> tuple[Project, SourceFile]:
        """A project of one file (`lint_source`), whose names may be known already."""
        source = SourceFile(path, tree, module_names(path)[0], names)
        return cls([source]), source

    def module(self, name: str, near: SourceFile) -> SourceFile | None:
        """The file imported as `name`, the one nearest `near` when several match."""
        found = self.modules.get(name)
        if not found:
            return None
        if len(found) == 1:
            return found[0]
        here = os.path.dirname(os.path.abspath(near.path))
        return max(found, key=lambda f: len(os.path.commonpath([here, os.path.abspath(f.path)])))

    def lookup(self, full: str, source: SourceFile, hops: int = 0) -> tuple[SourceFile, ast.AST] | None:
        """The function or class that the dotted name `full` (as `source` resolves it) refers to."""
        if hops > _MAX_HOPS or not full:
            return None
        if "." not in full:
            node = source.functions.get(full) or source.classes.get(full)
            return (source, node) if node is not None else None
        owner, _, name = full.rpartition(".")
        target = self.module(owner, source)
        if target is not None:
            node = target.functions.get(name) or target.classes.get(name)
            if node is not None:
                return target, node
            again = target.names.aliases.get(name)  # re-exported: `from .model import Net` in __init__
            if again and again != full:
                return self.lookup(again, target, hops + 1)
            return None
        # `Class.method`, `module.Class`: look the owner up first
        found = self.lookup(owner, source, hops + 1)
        if found is not None and isinstance(found[1], ast.ClassDef):
            for node in found[1].body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                    return found[0], node
        return None

    def is_module_class(self, source: SourceFile, cls: ast.ClassDef, depth: int = 0) -> bool:
        """Whether `cls` is an `nn.Module` subclass, through bases defined anywhere in the project."""
        key = id(cls)
        if key in self._module_classes:
            return self._module_classes[key]
        self._module_classes[key] = False  # a cycle answers no
        answer = cls.name in source.names.module_classes
        if not answer and depth < 8:
            for base in cls.bases:
                full = source.names.resolve(base) or ""
                found = self.lookup(full, source)
                if found is not None and isinstance(found[1], ast.ClassDef):
                    if self.is_module_class(found[0], found[1], depth + 1):
                        answer = True
                        break
        self._module_classes[key] = answer
        return answer
