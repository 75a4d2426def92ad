"""Every lab runs from its zip in a fresh environment with exactly what the zip's README and first cell say.

What a learner does, for every lab: unzip ``dist/NN-slug.zip``, make a virtual environment, run the
README's ``pip install`` commands, open the notebook and run every cell from the top; the first cell
installs devicekit from the wheel beside the notebook. The environment is one venv for all labs, kept
affordable: torch (and only torch with its own requirements) comes from the course environment through
a ``.pth`` file pointing at a folder of links, so the README's torch command finds it installed and
downloads nothing; everything else the README names is installed by pip as a learner's would be. The
notebook's kernel runs with an index that does not answer, so the wheel must install offline.

Errors are expected only in cells tagged ``raises-exception`` (the lab's deliberate mismatches and the
top-level exercise stubs) and as the student's stubs' ``NotImplementedError``; anything else (a
``ModuleNotFoundError`` for a requirement the wheel does not declare, a crash in a worker) fails.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
import venv
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from course_tools import course
from course_tools.generate import dist, setup_cell
from course_tools.paths import LABS, ROOT

pytestmark = pytest.mark.integration  # builds the zips and a venv, runs every lab in real kernels

README_PIP = re.compile(r"^\s+python -m pip install (.+)$", re.MULTILINE)
#: Runs in the fresh environment: every notebook given, in its own folder and its own kernel.
DRIVER = r"""
import json, sys, time
import nbformat
from nbclient import NotebookClient

results = []
for path in sys.argv[1:]:
    nb = nbformat.read(path, as_version=4)
    started = time.monotonic()
    folder = path.rsplit("/", 1)[0]
    NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": folder}}).execute()
    errors = [
        {"cell": i, "ename": o.ename, "evalue": o.evalue[-600:], "tags": c.metadata.get("tags", [])}
        for i, c in enumerate(nb.cells) if c.cell_type == "code"
        for o in c.outputs if o.output_type == "error"
    ]
    setup = next(c for c in nb.cells if c.cell_type == "code")
    stderr = "".join(o.get("text", "") for o in setup.outputs if o.get("name") == "stderr")
    results.append({"path": path, "errors": errors, "setup_stderr": stderr[-2000:],
                    "seconds": round(time.monotonic() - started, 1)})
print(json.dumps(results))
"""


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment of a learner's shell: nothing that points Python at this checkout or its venv."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    return {**env, "PYTHONNOUSERSITE": "1", **extra}


def _torch_only(folder: Path) -> Path:
    """A folder of links to torch and the distributions it requires (transitively), from this environment.

    A ``.pth`` naming it gives a fresh venv this very torch, and nothing else of the course environment
    (no numpy: torch does not require it).
    """
    from packaging.requirements import Requirement

    folder.mkdir()
    seen: set[str] = set()
    todo = ["torch"]
    while todo:
        name = todo.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        seen.add(key)
        try:
            dist_ = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # a requirement for another platform (markers are checked below)
        for requirement in dist_.requires or []:
            req = Requirement(requirement)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
        for file in dist_.files or []:
            top = file.parts[0]
            source = Path(dist_.locate_file(top))
            if top not in ("..", "__pycache__") and source.exists() and not (folder / top).exists():
                (folder / top).symlink_to(source)
    return folder


def _site_packages(python: Path) -> Path:
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return Path(
        subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    )


@pytest.fixture(scope="module")
def zips(tmp_path_factory) -> dict[str, Path]:
    """Every lab's zip, unpacked: lab id -> its folder (notebooks, wheel, README.txt)."""
    if any(not (LABS / f"{lab.id}.ipynb").exists() for lab in course.labs(ROOT)):
        pytest.skip("a lab is not generated yet: run `make labs`")
    out = tmp_path_factory.mktemp("zips")
    folders = {}
    for path in dist.build(out / "dist", students=""):
        with zipfile.ZipFile(path) as zf:
            zf.extractall(out / "unpacked")
        folders[path.stem] = out / "unpacked" / path.stem
    return folders


@pytest.fixture(scope="module")
def fresh(zips, tmp_path_factory) -> Path:
    """A fresh venv with torch linked in and the README's commands run: its python."""
    root = tmp_path_factory.mktemp("fresh")
    started = time.monotonic()
    venv.EnvBuilder(with_pip=True).create(root / "venv")
    python = root / "venv" / "bin" / "python"
    if not python.exists():
        pytest.skip("venv layout of this platform")
    links = _torch_only(root / "torch-only")
    (_site_packages(python) / "course_torch.pth").write_text(f"{links}\n", encoding="utf-8")
    readme = (next(iter(zips.values())) / "README.txt").read_text(encoding="utf-8")
    commands = README_PIP.findall(readme.split("== 运行实验 ==")[0])
    assert len(commands) >= 2, f"the README names no pip commands:\n{readme}"
    for args in commands:
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", *shlex.split(args)],
            capture_output=True, text=True, env=_clean_env(), timeout=900,
        )  # fmt: skip
        assert done.returncode == 0, f"README's `pip install {args}` failed:\n{done.stderr[-3000:]}"
    print(f"fresh venv ready in {time.monotonic() - started:.0f} s")
    return python


def test_the_readme_commands_install_no_torch_of_their_own(fresh):
    """The README's torch command found the linked torch: the venv's torch is this environment's."""
    code = "import torch, sys; print(torch.__version__); print(torch.__file__)"
    done = subprocess.run([str(fresh), "-c", code], capture_output=True, text=True, env=_clean_env())
    version, location = done.stdout.split()
    assert version == metadata.version("torch") and str(fresh.parents[1]) not in location


def test_without_torch_the_first_cell_says_torch_is_missing(zips, tmp_path):
    """A venv with nothing in it: the first cell stops before pip and names torch, not the wheel."""
    venv.EnvBuilder(with_pip=False).create(tmp_path / "bare")
    lab = zips["01-devices"]
    setup = next(
        c for c in json.loads((lab / "01-devices.ipynb").read_text())["cells"] if c["cell_type"] == "code"
    )
    block, _ = setup_cell.split("".join(setup["source"]))
    code = "\n".join(line for line in block.splitlines() if not line.startswith("%"))
    done = subprocess.run(
        [str(tmp_path / "bare" / "bin" / "python"), "-c", code], cwd=lab, capture_output=True, text=True,
        env=_clean_env(),
    )  # fmt: skip
    assert done.returncode != 0
    assert "PyTorch is not installed" in done.stderr and "没有安装 PyTorch" in done.stderr, done.stderr[
        -2000:
    ]
    assert "devicekit-*.whl" not in done.stderr.splitlines()[-1]


def test_every_lab_runs_from_its_zip(zips, fresh):
    """Every student notebook, top to bottom, each in its unzipped folder; the first installs devicekit."""
    notebooks = [str(folder / f"{lab}.ipynb") for lab, folder in sorted(zips.items())]
    notebooks.append(str(zips["01-devices"] / "01-devices.zh.ipynb"))
    started = time.monotonic()
    env = _clean_env(PIP_INDEX_URL="http://127.0.0.1:9/simple", PIP_RETRIES="0", PIP_TIMEOUT="5")
    done = subprocess.run(
        [str(fresh), "-c", DRIVER, *notebooks], capture_output=True, text=True, env=env, timeout=1800,
        cwd=fresh.parents[1],
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{len(results)} notebooks in {time.monotonic() - started:.0f} s:")
    unexpected = []
    for result in results:
        print(f"  {Path(result['path']).name}: {result['seconds']} s")
        for error in result["errors"]:
            if "raises-exception" not in error["tags"] and error["ename"] != "NotImplementedError":
                unexpected.append(f"{Path(result['path']).name}, cell {error['cell']}: {error}")
    assert not unexpected, "errors a learner would meet:\n" + "\n".join(unexpected)
    assert results[0]["setup_stderr"] == "", "installing the wheel offline printed an error"
    code = "import devicekit; print(devicekit.__version__); print(devicekit.__file__)"
    done = subprocess.run([str(fresh), "-c", code], capture_output=True, text=True, env=_clean_env())
    version, location = done.stdout.split()
    assert version == dist.version() and location.startswith(str(fresh.parents[1])), (
        "installed from the wheel"
    )
    assert sys.prefix not in location
