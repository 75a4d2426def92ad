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
import gc
import re
import textwrap
from pathlib import Path

import pytest

from devicekit.lint import DEFAULT_CODES, RULES, lint_source
from devicekit.lint.index import walk
from devicekit.lint.nbjson import split_lines

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


def test_walk_stops_where_the_caller_stops():
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
