"""The "labs without a GPU" page (``docs/standin.md`` and its Chinese twin) shows what really runs.

Every ```python block of the page runs, in order, in one namespace, in the page's language, and each marked
output block is what something real prints:

* ``<!-- output: cpu-runner -->``: every line is printed by the page's own snippets (the simulated GPU, the
  facts about ``meta``);
* ``<!-- output: use_gpus -->``: the line a lab's setup cell prints under a simulated GPU
  (`devicekit_labs.machine.gpus_line`);
* ``<!-- output: simulate_fidelity -->``: lines that ``benchmarks/simulate_fidelity.py`` prints (on the
  pinned torch release, the one whose run the page quotes).

The op table and its claims about ``meta`` are asserted by ``tests/test_standin_ops.py``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re

import pytest
import torch
from twins import python_blocks

from course_tools.generate.standin import META_VERSION, PAGES
from course_tools.paths import ROOT
from devicekit.lang import using_language

pytestmark = pytest.mark.integration

MARKED = re.compile(r"<!-- output: ([\w-]+) -->\s*\n\s*```text\n(.*?)\n\s*```", re.DOTALL)
LANGS = sorted(PAGES)


def _marked(lang: str, kind: str) -> list[str]:
    """The lines of the page's output blocks marked ``kind``."""
    text = PAGES[lang].read_text(encoding="utf-8")
    blocks = [body for name, body in MARKED.findall(text) if name == kind]
    assert blocks, f"{PAGES[lang].name} has no output block marked {kind!r}"
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def _missing(shown: list[str], printed: str) -> list[str]:
    return [line for line in shown if line not in printed]


@pytest.mark.skipif(torch.cuda.is_available(), reason="devicekit.simulate refuses to start beside a real GPU")
@pytest.mark.parametrize("lang", LANGS)
def test_the_page_snippets_run_and_print_what_the_page_shows(lang: str) -> None:
    page = PAGES[lang]
    blocks = python_blocks(page.read_text(encoding="utf-8"))
    assert len(blocks) >= 3, f"{page.name}: the simulated GPU, meta without data, meta's mixes"
    namespace: dict = {"__name__": f"page_{page.stem}"}
    printed = io.StringIO()
    with using_language(lang), contextlib.redirect_stdout(printed):
        for number, block in enumerate(blocks, start=1):
            exec(compile(block, f"{page.name} block {number}", "exec"), namespace)
    missing = _missing(_marked(lang, "cpu-runner"), printed.getvalue())
    assert not missing, f"{page.name} shows lines its snippets never print: {missing}"


@pytest.mark.skipif(torch.cuda.is_available(), reason="devicekit.simulate refuses to start beside a real GPU")
@pytest.mark.parametrize("lang", LANGS)
def test_the_setup_line_is_the_one_a_lab_prints(lang: str) -> None:
    from devicekit.simulate import simulate
    from devicekit_labs.machine import gpus_line

    with simulate(gpus=1):
        line = gpus_line(1, simulated=True).text(lang)
    assert _marked(lang, "use_gpus") == [line]


@pytest.mark.skipif(
    not torch.__version__.startswith(META_VERSION + "."),
    reason=f"the page quotes the benchmark's run on torch {META_VERSION}",
)
def test_the_fidelity_lines_are_what_the_benchmark_prints() -> None:
    path = ROOT / "benchmarks" / "simulate_fidelity.py"
    spec = importlib.util.spec_from_file_location("simulate_fidelity", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert bench.main([]) == 0
    for lang in LANGS:
        shown = _marked(lang, "simulate_fidelity")
        assert len(shown) >= 2, f"{PAGES[lang].name}: the benchmark's first line and its summary"
        missing = _missing(shown, printed.getvalue())
        assert not missing, f"{PAGES[lang].name} quotes lines the benchmark did not print: {missing}"


def test_the_marked_block_check_can_fail() -> None:
    """A line the snippets never printed is reported, a printed one is not."""
    assert _missing(["printed", "never printed"], "something printed\n") == ["never printed"]
