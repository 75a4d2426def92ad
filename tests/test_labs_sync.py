"""labs/ is generated from solutions/: in sync, stubs in the right shape, metadata for the grader."""

from __future__ import annotations

import sys

import nbformat
import pytest

from _paths import LABS, ROOT, SOLUTIONS, notebooks

sys.path.insert(0, str(ROOT / "tools"))
import labs as labtool  # noqa: E402


def test_labs_are_in_sync_with_solutions():
    assert labtool.out_of_date() == [], "run `make labs`"


def test_every_solution_has_a_lab_and_a_region():
    assert notebooks(SOLUTIONS), "no solution notebooks found"
    for solution in notebooks(SOLUTIONS):
        assert (LABS / solution.name).exists()
        text = solution.read_text(encoding="utf-8")
        assert labtool.BEGIN in text and labtool.END in text


@pytest.mark.parametrize("lab", notebooks(LABS), ids=lambda p: p.name)
def test_stubs_replace_every_solution(lab):
    nb = nbformat.read(lab, as_version=4)
    text = "\n".join(c.source for c in nb.cells)
    assert labtool.BEGIN not in text and labtool.END not in text
    lang = labtool.language_of(lab)
    solution = nbformat.read(SOLUTIONS / lab.name, as_version=4)
    regions = sum(c.source.count(labtool.BEGIN) for c in solution.cells)
    assert text.count(labtool.STUB[lang]) == regions
    assert nb.metadata["devicekit"]["role"] == "student"
    assert nb.metadata["devicekit"]["lang"] == lang


def test_stub_keeps_indentation_and_hint_language():
    source = "def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n"
    out, had = labtool.strip_solution(source, "zh", "t")
    assert had
    assert out.splitlines() == ["def f(x):", "    # TODO：在这里写你的代码", "    " + labtool.STUB["zh"]]


def test_top_level_stub_is_tagged_to_raise():
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell("### BEGIN SOLUTION\nanswer = 42\n### END SOLUTION"))
    lab = labtool.student_version(nb, "en", "t")
    assert "raises-exception" in lab.cells[0].metadata["tags"]


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ("### BEGIN SOLUTION\nx = 1\n", "never closed"),
        ("x = 1\n### END SOLUTION\n", "without"),
        ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION\n", "inside another"),
    ],
)
def test_malformed_regions_are_reported_with_their_place(source, error):
    with pytest.raises(labtool.LabSourceError, match=error):
        labtool.strip_solution(source, "en", "lab.ipynb, cell 3")


def test_install_command_uses_the_one_repository_setting():
    url = labtool.repo_url()
    for path in notebooks(SOLUTIONS) + notebooks(LABS):
        sources = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells)
        assert f'"devicekit @ git+{url}"' in sources, path.name


def test_stored_outputs_come_from_a_run():
    for path in notebooks(SOLUTIONS) + notebooks(LABS):
        nb = nbformat.read(path, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert all(c.execution_count is not None for c in code), f"{path.name} has unexecuted cells"
        errors = [o for c in code for o in c.outputs if o.output_type == "error"]
        assert errors, f"{path.name} shows no real error output"
        for out in (o for c in code for o in c.outputs):
            text = str(out.get("text", "")) + str(out.get("traceback", ""))
            assert "site-packages" not in text and "/home/" not in text and "/root/" not in text


def test_quoted_cpu_runner_message_is_the_stored_error():
    # The lab's prose quotes the error this runner printed; it must be the one in the stored outputs.
    import re

    for path in notebooks(SOLUTIONS):
        nb = nbformat.read(path, as_version=4)
        prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        quoted = {" ".join(q.split()) for q in re.findall(r"`(Tensor on device [^`]+)`", prose)}
        outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
        errors = {o.evalue for o in outputs if o.output_type == "error"}
        assert quoted, f"{path.name} quotes no CPU-runner message"
        assert quoted <= errors, f"{path.name} quotes {quoted - errors}, stored errors are {errors}"
