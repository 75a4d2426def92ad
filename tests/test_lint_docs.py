"""The devicelint pages: the rules part is what the registry generates, every example on the page is
linted as it appears there, the nav lists the page in both languages, and the claims the page makes
about PyTorch hold."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from course_tools.generate.lint_docs import PAGES, main, rules_markdown
from course_tools.paths import ROOT
from devicekit.lint import RULES, lint_source

_SECTION = re.compile(r"^### (DK\d{3}) .*?$(.*?)(?=^### |<!-- rules:end -->)", re.S | re.M)
_PYTHON = re.compile(r"```python\n(.*?)```", re.S)


def test_pages_are_up_to_date():
    assert main(["--check"]) == 0, "run: python -m course_tools.generate.lint_docs"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_rule_has_a_section_whose_examples_behave(lang):
    page = PAGES[lang].read_text(encoding="utf-8")
    assert rules_markdown(lang) in page
    sections = dict(_SECTION.findall(page))
    assert list(sections) == list(RULES)
    for code, body in sections.items():
        bad, good = _PYTHON.findall(body)
        assert code in {f.code for f in lint_source(bad, codes=RULES, notebook=True)}, code
        assert code not in {f.code for f in lint_source(good, codes=RULES, notebook=True)}, code


def test_rules_markdown_rejects_unknown_language():
    with pytest.raises(ValueError, match="unknown language"):
        rules_markdown("fr")


def test_nav_lists_the_page_in_both_languages():
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("", lambda loader, suffix, node: None)  # !ENV, !!python/... tags
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)
    entries = [e for e in config["nav"] if isinstance(e, dict) and "lint.md" in e.values()]
    assert entries == [{"Lint before you run": "lint.md"}]
    nav = config["nav"]
    assert nav.index(entries[0]) == nav.index("atlas.md") + 1
    i18n = next(p["i18n"] for p in config["plugins"] if isinstance(p, dict) and "i18n" in p)
    zh = next(lang for lang in i18n["languages"] if lang["locale"] == "zh")
    assert zh["nav_translations"]["Lint before you run"] == "运行前先检查"


# --- the claims the page makes ----------------------------------------------------------------------


def test_adagrad_makes_its_state_when_built_and_a_move_leaves_it_behind():
    torch = pytest.importorskip("torch")
    model = torch.nn.Linear(2, 2)
    adagrad = torch.optim.Adagrad(model.parameters())
    state = next(iter(adagrad.state.values()))
    assert {"sum", "step"} <= set(state) and state["sum"].device.type == "cpu"
    model.to("meta")
    assert next(model.parameters()).device.type == "meta"
    assert next(iter(adagrad.state.values()))["sum"].device.type == "cpu"
    adam = torch.optim.Adam(torch.nn.Linear(2, 2).parameters())
    assert len(adam.state) == 0  # made at the first step(), after the move


def test_random_sampler_makes_a_cpu_generator_whatever_the_default_device():
    torch = pytest.importorskip("torch")
    import inspect

    from torch.utils.data import RandomSampler

    source = inspect.getsource(RandomSampler.__iter__)
    assert "generator = torch.Generator()" in source
    assert "torch.randperm(n, generator=generator)" in source
    with torch.device("meta"):
        assert torch.Generator().device.type == "cpu"
        assert torch.zeros(1).device.type == "meta"
    recorded = json.loads((ROOT / "results" / "cuda-messages.json").read_text(encoding="utf-8"))
    quoted = "Expected a 'cuda' device type for generator but found 'cpu'"
    assert quoted in json.dumps(recorded)
    assert quoted in PAGES["en"].read_text(encoding="utf-8") and quoted in PAGES["zh"].read_text(
        encoding="utf-8"
    )


def test_the_capstone_page_says_what_the_linter_finds_in_its_script():
    """Lesson 9 states: 8 of 11 planted bugs found statically (these rules), nothing on the fixed script; the
    metric's `.numpy()` is among them since round 5 of issue 43 (`RunningAccuracy(device="cpu")` creates its
    tensors on the `device` it is given, and a device parameter defaulting to "cpu" is read as a device)."""
    import nbformat

    from devicekit.lint import lint_source

    nb = nbformat.read(ROOT / "solutions" / "09-capstone.ipynb", as_version=4)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    buggy = next(s for s in code if s.startswith("# train.py"))
    fixed = next(s for s in code if s.startswith("### BEGIN SOLUTION"))
    found = {f.code for f in lint_source(buggy)}
    assert found == {"DK002", "DK003", "DK004", "DK005", "DK006", "DK007", "DK009", "DK010"}
    assert lint_source(fixed.replace("### BEGIN SOLUTION", "").replace("### END SOLUTION", "")) == []
    page = (ROOT / "docs" / "lessons" / "09-capstone.md").read_text(encoding="utf-8")
    assert "8 of the script's 11 planted bugs" in page and all(code in page for code in found)


def test_pack_padded_sequence_wants_its_lengths_on_the_cpu():
    """DK001 leaves `lengths` unmoved: PyTorch wants them on the CPU (the page quotes the CUDA error)."""
    torch = pytest.importorskip("torch")
    import inspect

    from torch.nn.utils.rnn import pack_padded_sequence

    assert "must be on the CPU if provided as a tensor" in inspect.getsource(pack_padded_sequence)
    packed = pack_padded_sequence(torch.zeros(2, 3, 4, device="meta"), torch.tensor([3, 2]), batch_first=True)
    assert packed.data.device.type == "meta"  # CPU lengths, data on the other device: fine
    with pytest.raises(RuntimeError, match="'lengths' argument should be a 1D CPU int64 tensor"):
        pack_padded_sequence(torch.zeros(2, 3, 4), torch.tensor([3, 2], device="meta"), batch_first=True)
    recorded = json.loads((ROOT / "results" / "cuda-messages.json").read_text(encoding="utf-8"))
    quoted = recorded["cases"]["pack-padded-cuda-lengths"]["message"]
    assert quoted == "'lengths' argument should be a 1D CPU int64 tensor, but got 1D cuda:0 Long tensor"
    for page in PAGES.values():
        assert quoted in page.read_text(encoding="utf-8")


def test_dk003_meeting_operations_raise_on_cuda_in_the_stand_in_table():
    """Every operation DK003 treats as a meeting is a row of the stand-in table whose CUDA column raises,
    and the mixes it lets pass (a CPU index, a CPU mask, a 0-dim CPU tensor) are rows that work."""
    from course_tools.generate.standin import OPS
    from devicekit.lint.meets import MEETING_METHODS

    raising = " ".join(op.code for op in OPS if op.cuda == "raises")
    elementwise = {"add", "sub", "mul", "div", "minimum"}  # rows 1-7: element-wise operations
    for method in {m.rstrip("_") for m in MEETING_METHODS} - elementwise:
        assert re.search(rf"\b{method}\(", raising) or (method == "matmul" and " @ " in raising), method
    for code in (
        "acc(3) + cpu(3)",
        "cpu(3).add_(",
        "acc(3).mul_(",
        "torch.cat(",
        "torch.stack(",
        "nn.Linear",
    ):
        assert code in raising, code
    works = {op.code for op in OPS if op.cuda == "works"}
    assert {"acc(5)[torch.tensor([0, 1])]", "acc(3)[cpu(3) > 0]", "torch.tensor(2.0) + acc(3)"} <= works


def test_the_page_quotes_a_real_finding():
    """The example finding on the page (both languages) is what the linter says about this code."""
    source = (
        "\n"
        "def score(boxes1, boxes2):\n"
        "    c2 = torch.zeros(boxes1.shape[0])\n"
        "    return boxes1 + c2\n"
        "\n"
        "def main(loader, device):\n"
        "    for boxes, other in loader:\n"
        "        boxes = boxes.to(device)\n"
        "        score(boxes, other)\n"
    )
    [finding] = lint_source(source, path="train.py")
    assert (finding.line, finding.col, finding.code) == (3, 10, "DK003")
    for lang, page in PAGES.items():  # compared without whitespace: the page breaks the long line
        text = "".join(page.read_text(encoding="utf-8").split())
        detail = finding.detail.zh if lang == "zh" else finding.detail.en
        assert "".join(f"train.py:3:10: DK003 ... {detail}".split()) in text, lang
