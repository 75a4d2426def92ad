"""labs/ is generated from solutions/: in sync, stubs in the right shape, metadata for the grader."""

from __future__ import annotations

import re

import nbformat
import pytest

from course_tools.generate import labs as labtool
from course_tools.paths import LABS, ROOT, SOLUTIONS, notebooks


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
    # each region becomes one stub: the general one, or the region's own ### HINT
    assert len(re.findall(r"^\s*raise NotImplementedError\(", text, re.MULTILINE)) == regions
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
            text = str(out.get("text", "")) + str(out.get("evalue", "")) + str(out.get("traceback", ""))
            assert "site-packages" not in text and "/home/" not in text and "/root/" not in text
            assert not re.search(r"ipykernel_\d", text), f"{path.name} stores this run's cell file name"


def test_stored_outputs_name_no_cell_file_of_this_run():
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("f()")
    where = 'File "/tmp/ipykernel_14294/2542620439.py", line 4, in rotate_buggy'
    cell.outputs = [
        nbformat.v4.new_output("error", ename="E", evalue=where, traceback=[where]),
        nbformat.v4.new_output("stream", name="stdout", text=where + "\n"),
    ]
    nb.cells.append(cell)
    labtool.scrub_outputs(nb)
    stored = 'File "/tmp/ipykernel_<pid>/<cell>.py", line 4, in rotate_buggy'
    assert [cell.outputs[0].evalue, *cell.outputs[0].traceback] == [stored, stored]
    assert cell.outputs[1].text == stored + "\n"


def test_quoted_cpu_runner_message_is_the_stored_error():
    # The lab's prose quotes the error this runner printed; it must be the one in the stored outputs.
    import re

    for path in notebooks(SOLUTIONS):
        nb = nbformat.read(path, as_version=4)
        prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        found = re.findall(r"`((?:Tensor on device|strict_devices: |strict_devices：)[^`]+)`", prose)
        quoted = {" ".join(q.split()) for q in found}
        outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
        errors = {" ".join(o.evalue.split()) for o in outputs if o.output_type == "error"}
        # A quote is needed where a trigger's message differs between the CPU runner and a GPU (its cell
        # ignores its output); lab 8's DDP errors are PyTorch's own and read the same on both.
        differs = any(
            {"raises-exception", "nbval-ignore-output"} <= set(c.metadata.get("tags", []))
            for c in nb.cells
            if c.cell_type == "code"
        )
        assert quoted or not differs, f"{path.name} quotes no CPU-runner message"
        unmatched = {q for q in quoted if not any(e.startswith(q) for e in errors)}
        assert not unmatched, f"{path.name} quotes {unmatched}, stored errors are {errors}"


def test_lab_1_stubs_carry_their_own_hints():
    for name in ("01-devices.ipynb", "01-devices.zh.ipynb"):
        nb = nbformat.read(LABS / name, as_version=4)
        stubs = [
            line.strip()
            for cell in nb.cells
            for line in cell.source.splitlines()
            if line.strip().startswith("raise NotImplementedError(")
        ]
        assert len(stubs) == 3 and len(set(stubs)) == 3, f"{name}: one specific hint per exercise"
        assert all(stub != labtool.STUB[labtool.language_of(LABS / name)] for stub in stubs)
        assert "True or False" in stubs[2] or "True 或 False" in stubs[2], "exercise 3 states its format"


def test_hint_line_becomes_the_stub_message():
    source = "\n".join(
        [
            "def f():",
            "    ### BEGIN SOLUTION",
            '    ### HINT: return "x", quoted',
            "    return 1",
            "    ### END SOLUTION",
        ]
    )
    out, _ = labtool.strip_solution(source, "en", "t")
    assert out.splitlines()[-1] == '    raise NotImplementedError("return \\"x\\", quoted")'
    with pytest.raises(NotImplementedError, match='return "x", quoted'):
        namespace: dict = {}
        exec(out, namespace)
        namespace["f"]()


def test_lab_1_setup_cell_declares_the_notebook_language():
    for path in (SOLUTIONS / "01-devices.ipynb", SOLUTIONS / "01-devices.zh.ipynb"):
        nb = nbformat.read(path, as_version=4)
        lang = nb.metadata["devicekit"]["lang"]
        assert f'set_language("{lang}")' in nb.cells[2].source, path.name
        assert nb.metadata["devicekit"]["minutes"]["cpu"] >= 20, "a newcomer needs about 25 minutes"


# What the setup cell's install block does when it runs: tests/test_setup_cell.py.


def test_make_lab_passes_extra_arguments_to_jupyter():
    import shutil
    import subprocess

    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    done = subprocess.run(
        ["make", "-n", "-o", "setup", "-o", ".venv/.installed", "lab", "ARGS=--allow-root"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "jupyter lab labs/ --allow-root" in done.stdout


def test_lab_1_read_first_links_work_outside_the_site():
    """Inside Jupyter or Colab the site's relative link cannot resolve: the repository URL must be there."""
    url = labtool.repo_url()
    for name, page in (("01-devices.ipynb", "01-devices.md"), ("01-devices.zh.ipynb", "01-devices.zh.md")):
        first = nbformat.read(SOLUTIONS / name, as_version=4).cells[0].source
        assert f"{url}/blob/main/docs/lessons/{page}" in first, name
        assert (ROOT / "docs" / "lessons" / page).exists()


def _install_block(path) -> str:
    """The part of a notebook's setup cell before ``import torch``: the install logic every lab shares."""
    nb = nbformat.read(path, as_version=4)
    setup = next(cell for cell in nb.cells if cell.cell_type == "code")
    head, found, _ = setup.source.partition("\nimport torch")
    assert found, f"{path.name}: the setup cell never imports torch"
    return head


def test_every_lab_installs_devicekit_the_way_lab_1_does():
    """One install block, copied into every lab (a setup cell must work before devicekit exists): lab 1's
    block in each language is the reference, and a lab that drifts from it fails here."""
    reference = {
        lang: _install_block(SOLUTIONS / f"01-devices{suffix}.ipynb")
        for lang, suffix in (("en", ""), ("zh", ".zh"))
    }
    drifted = [
        path.name
        for path in sorted(SOLUTIONS.glob("*.ipynb"))
        if _install_block(path) != reference["zh" if path.name.endswith(".zh.ipynb") else "en"]
    ]
    assert not drifted, f"setup cells that install devicekit differently from lab 1: {drifted}"
