"""What the linter's speed-ups rest on (issue 43, "Speed"), checked as behaviour rather than timed:

- `devicekit.lint.index.walk`, which the checks use instead of `ast.walk`, gives the same nodes in the
  same order, on every kind of syntax and on the repository's own code;
- linting a file leaves no reference cycle holding its tree, so reference counting frees it at once and
  Python's cycle collector has nothing to walk (the analysis and its questions used to refer to each
  other and kept every file's tree alive until the collector ran);
- `lint_source` gives the collector back as it found it;
- `split_lines` (without a regex for files without `\\r`) keeps the lines Python's parser counts.

The timings themselves are in `benchmarks/bench_lint.py` (not a test: the machine is shared).
"""

from __future__ import annotations

import ast
import dataclasses
import gc
import re
import textwrap
from pathlib import Path

import pytest

from devicekit.lint import DEFAULT_CODES, RULES, lint_paths, lint_source
from devicekit.lint import index as index_module
from devicekit.lint.index import TreeIndex, forget_walks, walk
from devicekit.lint.labels import short_code
from devicekit.lint.nbjson import split_lines
from devicekit.lint.places import DEVICE, HOST, UNKNOWN_PLACE, Place, Val, replace
from devicekit.messages import Message

SRC = Path(__file__).resolve().parents[1] / "src"

# Every kind of statement and expression of Python 3.11's grammar, in one module.
EVERY_SYNTAX = textwrap.dedent(
    '''
    """doc"""
    from __future__ import annotations
    import os.path as p, sys
    from .pkg import (a as b, c)
    from . import *
    x: int = 1
    y = z = [1, *w, (2, 3), {4: 5, **d}, {6, 7}]
    x += 1; del y[0], z.q
    @dec(1)
    async def f(a, /, b: int = 2, *args, c, d=3, **kw) -> None:  # type: ignore
        global g
        nonlocal_ = lambda q, *r, s=1, **t: q if r else s
        async with open(a) as h, ctx():
            async for i in aiter(h):
                await g(i)
        for j, k in enumerate(b):
            continue
        else:
            pass
        while not a and b or c:
            break
        try:
            raise ValueError("x") from None
        except (KeyError, IndexError) as e:
            assert e, f"{a!r:>{b}} {c=}"
        else:
            pass
        finally:
            return
        try:
            pass
        except* OSError:
            pass
        yield a
        yield from b
        with a as (m, n), b:
            pass
        match command.split():
            case [action, *rest] if rest:
                pass
            case {"k": 1, **others}:
                pass
            case Point(x=0, y=yy) | None:
                pass
            case str() as s:
                pass
            case True | 1 | -2 | 3 + 4j | "s" | b"b" | a.b:
                pass
            case _:
                pass
    class C(B, metaclass=M):
        attr: list[int] = []
        def m(self):
            def inner():
                nonlocal attr2
            return [i for i in range(3) if i > 1 for j in i], {i: j for i, j in z}, (i async for i in q)
    v = a[1:2, ::3, ...] @ b ** -c // d % e << f >> g & h | i ^ ~j
    w = (n := 10) if a < b <= c != d is e is not f in g not in h else {*s}
    '''
)


def _same(tree: ast.AST) -> None:
    expected = list(ast.walk(tree))
    got = list(walk(tree))
    assert len(got) == len(expected)
    assert all(a is b for a, b in zip(got, expected, strict=True))


def test_walk_gives_ast_walks_nodes_in_its_order_on_every_kind_of_syntax():
    tree = ast.parse(EVERY_SYNTAX, type_comments=True)
    _same(tree)
    for node in ast.walk(tree):  # and from every node inside, as the checks call it
        _same(node)
    kinds = {type(n).__name__ for n in walk(tree)}
    assert {"Match", "MatchClass", "TryStar", "AsyncFor", "NamedExpr", "Load", "Store", "BitXor"} <= kinds


def test_walk_gives_ast_walks_nodes_on_the_repositorys_own_code():
    files = sorted(SRC.rglob("*.py"))
    assert len(files) > 50
    for path in files:
        _same(ast.parse(path.read_text(encoding="utf-8")))


def test_walk_reads_a_field_it_does_not_know_about():
    # a node type of a newer Python (or a field added to a known one) is walked through all its fields
    class Future(ast.expr):
        _fields = ("name", "value")

    node = Future(name=ast.Name("n", ast.Load()), value=[ast.Constant(1)])
    assert [type(n).__name__ for n in walk(node)] == ["Future", "Name", "Constant", "Load"]


def test_walk_gives_the_node_itself_first():
    # (walk builds its list before the caller reads it: a caller that stops early does not save the
    # walk, which costs less than resuming a generator for each node did)
    tree = ast.parse("a = 1\nb = 2\n")
    first = next(iter(walk(tree)))
    assert first is tree


CLASSY = textwrap.dedent(
    """
    import torch
    import torch.nn as nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)
            self.cache = None

        def forward(self, x):
            noise = torch.randn(4)
            if self.cache is None:
                self.cache = torch.zeros(2)
            return self.fc(x + noise) + self.helper(x)

        def helper(self, x):
            return x.cpu().numpy()

    def train(model, loader, device):
        model.to(device)
        for batch in loader:
            out = model(batch)
            out.sum().backward()
    """
)


def test_linting_a_file_leaves_no_reference_cycle_behind():
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        findings = lint_source(CLASSY, "net.py", RULES)
        unreachable = gc.collect()
    finally:
        if was:
            gc.enable()
    assert findings  # the analysis ran (and found the noise on the CPU)
    # before: the analysis and its questions referred to each other and held the whole tree (316
    # objects here with `main` at 3792e18; 0 since) until the cycle collector found them
    assert unreachable < 50


def test_linting_keeps_nothing_of_the_file_alive():
    # the labels the analysis keeps for a file's nodes are dropped after the file: kept, they held the
    # nodes alive (68 objects more after this file; 23,000 after the 190 files of bench_lint.py, which
    # made every later collection of the process slower)
    lint_source(CLASSY, "warm.py", RULES)  # caches of the process itself (names, fields) filled
    gc.collect()
    before = len(gc.get_objects())
    lint_source(CLASSY, "net.py", RULES)
    gc.collect()
    assert len(gc.get_objects()) - before < 20


@pytest.mark.parametrize("enabled", [True, False])
def test_lint_source_gives_the_cycle_collector_back_as_it_found_it(enabled):
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        lint_source(CLASSY, "net.py", DEFAULT_CODES)
        assert gc.isenabled() is enabled
        with pytest.raises(SyntaxError):
            lint_source("def (:\n", "bad.py")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


@pytest.mark.parametrize(
    "text",
    ["", "\n", "a", "a\n", "a\n\nb", "a\r\nb\rc\n", "\n\n", "x\x0cy\n", "x\u2028y\n", "é\n\t\n", "a\r"],
)
def test_split_lines_keeps_the_parsers_lines(text):
    found = _LINE.findall(text)
    assert split_lines(text) == [line.rstrip("\r\n") for line in found]
    assert split_lines(text, keepends=True) == found


# --- round 2 (lintspeed2): the index, kept walks, labels and replace give what they replaced ----------

_LEAF = (ast.expr_context, ast.operator, ast.cmpop, ast.unaryop, ast.boolop)


def _reference_index(tree: ast.Module) -> dict[str, object]:
    """`TreeIndex`'s tables, written the plain way: a recursive pre-order walk over `ast.iter_child_nodes`."""
    tables: dict[str, object] = {
        "parents": {},
        "calls": [],
        "owned": {},
        "function_calls": {},
        "function_loops": {},
        "class_nodes": {},
        "constants": [],
        "definitions": [],
        "imports": [],
    }

    def add(table: str, key: ast.AST, node: ast.AST) -> None:
        tables[table].setdefault(key, []).append(node)  # type: ignore[union-attr]

    def visit(node: ast.AST, owner, function, cls) -> None:
        if isinstance(node, ast.stmt):
            owner = node
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                tables["imports"].append(node)  # type: ignore[union-attr]
        elif isinstance(node, (ast.Call, ast.Compare, ast.BinOp)) and owner is not None:
            add("owned", owner, node)
        if isinstance(node, ast.Call):
            tables["calls"].append(node)  # type: ignore[union-attr]
            add("function_calls", function or tree, node)
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            add("function_loops", function or tree, node)
        if isinstance(node, (ast.Call, ast.Assign)) and cls is not None:
            add("class_nodes", cls, node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            function = node
            if not isinstance(node, ast.Lambda):
                tables["definitions"].append(node)  # type: ignore[union-attr]
        elif isinstance(node, ast.ClassDef):
            cls = node
            tables["definitions"].append(node)  # type: ignore[union-attr]
        if isinstance(node, ast.Constant):
            tables["constants"].append(node)  # type: ignore[union-attr]
            return
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, _LEAF):
                tables["parents"][child] = node  # type: ignore[index]
                visit(child, owner, function, cls)

    visit(tree, None, None, None)
    return tables


def _same_index(tree: ast.Module) -> None:
    index = TreeIndex(tree)
    expected = _reference_index(tree)
    assert index.parents == expected["parents"]
    for name in ("calls", "constants", "definitions", "imports"):
        got, want = getattr(index, name), expected[name]
        assert len(got) == len(want) and all(a is b for a, b in zip(got, want, strict=True)), name
    for name in ("owned", "function_calls", "function_loops", "class_nodes"):
        got, want = getattr(index, name), expected[name]
        assert list(got) == list(want), name  # the same keys, in the same order
        for key, nodes in want.items():
            assert all(a is b for a, b in zip(got[key], nodes, strict=True)), name


def test_tree_index_is_a_plain_pre_order_walk_on_every_kind_of_syntax():
    _same_index(ast.parse(EVERY_SYNTAX, type_comments=True))


def test_tree_index_is_a_plain_pre_order_walk_on_the_repositorys_own_code():
    for path in sorted(SRC.rglob("*.py")):
        _same_index(ast.parse(path.read_text(encoding="utf-8")))


def test_walk_keeps_the_nodes_of_a_function_until_told_to_forget():
    tree = ast.parse(CLASSY)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef))
    first, again = list(walk(cls)), list(walk(cls))
    assert all(a is b for a, b in zip(first, again, strict=True)) and len(first) == len(again)
    assert index_module._WALKED  # kept
    tree.body.remove(cls)  # (never done by the linter: shows that the second walk read the kept list)
    cls.body.clear()
    assert len(list(walk(cls))) == len(first)
    forget_walks()
    assert not index_module._WALKED
    assert len(list(walk(cls))) < len(first)  # walked anew
    forget_walks()


def test_linting_forgets_the_walks_of_its_files(tmp_path):
    lint_source(CLASSY, "net.py", RULES)
    assert not index_module._WALKED
    (tmp_path / "net.py").write_text(CLASSY, encoding="utf-8")
    (tmp_path / "main.py").write_text("from net import train\ntrain(1, 2, 'cuda')\n", encoding="utf-8")
    lint_paths([str(tmp_path)])
    assert not index_module._WALKED


# --- round 3 (lintspeed3): what a project keeps until all its files are linted ----------------------


def test_a_project_keeps_its_labels_until_all_its_files_are_linted(tmp_path, monkeypatch):
    """The labels of messages (`_label`, `ast.unparse` of a node) are kept while a project is linted:
    the other files' calls into a file ask for the same nodes again. They are dropped at its end, and
    after each file linted alone, whose tree would otherwise stay alive."""
    from devicekit.lint import dataflow, engine

    kept: list[int] = []

    def forget_labels() -> None:
        kept.append(dataflow._label.cache_info().currsize)
        dataflow.forget_labels()

    monkeypatch.setattr(engine, "forget_labels", forget_labels)
    (tmp_path / "net.py").write_text(CLASSY, encoding="utf-8")
    (tmp_path / "main.py").write_text("from net import train\ntrain(1, 2, 'cuda')\n", encoding="utf-8")
    lint_paths([str(tmp_path)])
    assert kept and kept[0] > 0  # still there when the last file was done
    assert dataflow._label.cache_info().currsize == 0
    lint_source(CLASSY, "net.py", RULES)
    assert dataflow._label.cache_info().currsize == 0


def test_the_calls_and_loops_of_a_function_are_read_once_per_project():
    from devicekit.lint.core import Context
    from devicekit.lint.dataflow import FileAnalysis, _calls_and_loops
    from devicekit.lint.project import Project

    tree = ast.parse(CLASSY)
    ctx = Context(tree=tree, lines=CLASSY.splitlines(), codes=frozenset(RULES), path="net.py")
    project, source = Project.of("net.py", tree, ctx.names)
    analysis = FileAnalysis(ctx, project, source)
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef):
            first = analysis.calls_and_loops(function)
            assert analysis.calls_and_loops(function) is first
            assert first == _calls_and_loops(function)
    forget_walks()


def _labels_match(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        if isinstance(node, ast.expr):
            text = ast.unparse(node)
            assert short_code(node, 40) == (text if len(text) <= 40 and "\n" not in text else None), text


def test_short_code_is_ast_unparse_within_the_limit_on_every_kind_of_syntax():
    tree = ast.parse(EVERY_SYNTAX)
    _labels_match(tree)
    fstrings = ast.parse('f"{a!r:>{b}} {c=}" + f"{x!s:^10}" + f\'{"q"}\' + f"{ {1: 2}[1] }" + f"a\\nb"')
    _labels_match(fstrings)
    assert short_code(ast.parse("f(" + "a, " * 30 + "b)").body[0].value) is None  # type: ignore[attr-defined]
    assert short_code(ast.parse("x[1]").body[0].value, 4) == "x[1]"  # type: ignore[attr-defined]
    assert short_code(ast.parse("x[1]").body[0].value, 3) is None  # type: ignore[attr-defined]


def test_short_code_is_ast_unparse_within_the_limit_on_the_repositorys_own_code():
    for path in sorted(SRC.rglob("*.py")):
        _labels_match(ast.parse(path.read_text(encoding="utf-8")))


def test_replace_gives_what_dataclasses_replace_gives():
    place = Place(HOST, why=Message("made here", "在这里创建"))
    value = Val("tensor", place, label="x", items=((0, None),), node=ast.Name("x"))
    for changes in (
        {},
        {"label": "y"},
        {"place": UNKNOWN_PLACE, "moved": True},
        {"node": None, "cls": "m.C"},
    ):
        got, want = replace(value, **changes), dataclasses.replace(value, **changes)
        assert got == want and got is not value
        assert got.__dict__ == want.__dict__  # every field, `node` (not compared) too
    assert replace(place, kind=DEVICE) == dataclasses.replace(place, kind=DEVICE)
    with pytest.raises(TypeError):
        replace(value, colour="red")  # not a field: dataclasses.replace's own error
    message = Message("a", "甲")
    assert replace(message, en="b") == Message("b", "甲")  # another dataclass: dataclasses.replace
