"""`devicekit-lint` on the command line: output formats, exit status, files that do not parse, `--fix`,
the flake8 plugin and the pre-commit hook's definition."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from course_tools.paths import ROOT
from devicekit.lint import RULES
from devicekit.lint.cli import main

BUGGY = "import torch\nx = torch.ones(3)\nx.to(device)\nstate = torch.load(path)\n"
CLEAN = "import torch\nx = torch.ones(3).to(device)\n"


@pytest.fixture
def files(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "buggy.py").write_text(BUGGY, encoding="utf-8")
    (tmp_path / "pkg" / "clean.py").write_text(CLEAN, encoding="utf-8")
    (tmp_path / "clean.py").write_text(CLEAN, encoding="utf-8")
    (tmp_path / "broken.py").write_text("def broken(:\n", encoding="utf-8")
    return tmp_path


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_text_output_and_exit_status(files, capsys):
    code, out, _ = run(capsys, "--lang", "en", str(files / "pkg"))
    assert code == 1
    lines = out.strip().splitlines()
    buggy = files / "pkg" / "buggy.py"
    assert lines[0].startswith(f"{buggy}:3:1: DK002 the result of `Tensor.to()`")
    assert lines[1].startswith(f"{buggy}:4:9: DK008 `torch.load` without `map_location`")
    assert len(lines) == 2
    assert run(capsys, str(files / "clean.py")) == (0, "", "")


def test_chinese_messages(files, capsys):
    _, out, _ = run(capsys, "--lang", "zh", str(files / "pkg" / "buggy.py"))
    assert RULES["DK002"].title_zh in out and RULES["DK002"].title_en not in out


def test_parse_error_is_reported_and_the_rest_linted(files, capsys):
    code, out, _ = run(capsys, "--lang", "en", str(files / "broken.py"), str(files / "pkg"))
    assert code == 2
    assert f"{files / 'broken.py'}:1:12: E999" in out
    assert "DK002" in out and "DK008" in out


def test_json(files, capsys):
    code, out, _ = run(capsys, "--format", "json", "--lang", "en", str(files / "pkg"))
    assert code == 1
    items = json.loads(out)
    assert [(i["line"], i["col"], i["code"], i["scenario"]) for i in items] == [
        (3, 1, "DK002", 2),
        (4, 9, "DK008", 8),
    ]
    assert set(items[0]) >= {"path", "line", "col", "code", "message", "scenario"}


def test_sarif(files, capsys):
    code, out, _ = run(capsys, "--format", "sarif", str(files / "pkg" / "buggy.py"), str(files / "broken.py"))
    assert code == 2
    log = json.loads(out)
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    [sarif_run] = log["runs"]
    driver = sarif_run["tool"]["driver"]
    assert driver["name"] == "devicekit-lint" and [r["id"] for r in driver["rules"]] == list(RULES)
    results = sarif_run["results"]
    assert [r["ruleId"] for r in results] == ["DK002", "DK008"]
    for result in results:
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["message"]["text"]
        region = result["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] >= 1 and region["startColumn"] >= 1
    [invocation] = sarif_run["invocations"]
    assert invocation["executionSuccessful"] is False
    assert "broken.py" in invocation["toolExecutionNotifications"][0]["message"]["text"]


def test_select_ignore_and_usage_errors(files, capsys):
    buggy = str(files / "pkg" / "buggy.py")
    assert "DK008" not in run(capsys, "--ignore", "DK008", buggy)[1]
    code, out, _ = run(capsys, "--select", "DK008", buggy)
    assert code == 1 and "DK002" not in out and "DK008" in out
    code, out, _ = run(capsys, "--select", "DK9", buggy)
    assert code == 0 and out == ""
    assert run(capsys, "--select", "DK777", buggy)[0] == 2
    assert run(capsys)[0] == 2
    assert run(capsys, str(files / "missing.py"))[0] == 2
    with pytest.raises(SystemExit) as exc:
        main(["--format", "xml", buggy])
    assert exc.value.code == 2


def test_notebook_location(tmp_path, capsys):
    nb = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": "# lab"},
            {
                "cell_type": "code",
                "metadata": {},
                "outputs": [],
                "execution_count": None,
                "source": "import torch\nx = torch.ones(2)\nx.cuda()\n",
            },
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "lab.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    code, out, _ = run(capsys, "--lang", "en", str(path))
    assert code == 1 and out.startswith(f"{path}:cell 2:3:1: DK002 ")


def test_list_rules(capsys):
    code, out, _ = run(capsys, "--list-rules", "--lang", "en")
    assert code == 0 and len(out.strip().splitlines()) == len(RULES)


@pytest.mark.integration  # runs the command in a process of its own
def test_python_m_and_console_script(files):
    buggy = str(files / "pkg" / "buggy.py")
    done = subprocess.run(
        [sys.executable, "-m", "devicekit.lint", "--format", "json", buggy],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert [i["code"] for i in json.loads(done.stdout)] == ["DK002", "DK008"]
    script = Path(sys.executable).with_name("devicekit-lint")
    if not script.exists():
        pytest.skip("devicekit-lint is not installed in this environment (pip install -e .)")
    done = subprocess.run([str(script), str(files / "clean.py")], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout) == (0, "")


# --- --fix ------------------------------------------------------------------------------------------


def test_fix_keeps_formatting(tmp_path, capsys):
    pytest.importorskip("libcst")
    source = (
        "import torch\n\n"
        "x = torch.ones(3)  # keep me\n"
        "x.to(device)   # moved\n"
        "state = torch.load(\n    path,\n)\n"
        "other = torch.load(path, weights_only=True)\n"
    )
    path = tmp_path / "fixme.py"
    path.write_text(source, encoding="utf-8")
    code, out, err = run(capsys, "--fix", "--lang", "en", str(path))
    assert code == 0 and out == "" and "fixed 3" in err
    assert path.read_text(encoding="utf-8") == (
        "import torch\n\n"
        "x = torch.ones(3)  # keep me\n"
        "x = x.to(device)   # moved\n"
        'state = torch.load(\n    path,\n    map_location="cpu",\n)\n'
        'other = torch.load(path, weights_only=True, map_location="cpu")\n'
    )


def test_fix_leaves_unfixable_findings(tmp_path, capsys):
    pytest.importorskip("libcst")
    path = tmp_path / "model.py"
    source = "class Net(nn.Module):\n    def forward(self, x):\n        return x + torch.randn(3)\n"
    path.write_text(source, encoding="utf-8")
    code, out, _ = run(capsys, "--fix", str(path))
    assert code == 1 and "DK003" in out and path.read_text(encoding="utf-8") == source


def test_fix_without_libcst_says_how_to_get_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "libcst", None)
    path = tmp_path / "a.py"
    path.write_text(BUGGY, encoding="utf-8")
    code, _, err = run(capsys, "--fix", str(path))
    assert code == 2 and 'pip install "devicekit[lint-fix]"' in err
    assert path.read_text(encoding="utf-8") == BUGGY


# --- flake8 and pre-commit -------------------------------------------------------------------------


@pytest.mark.integration  # runs the command in a process of its own
def test_flake8_plugin(files):
    flake8 = shutil.which("flake8", path=str(Path(sys.executable).parent))
    if flake8 is None:
        pytest.skip("flake8 is not installed (it is in the test extra)")
    buggy = str(files / "pkg" / "buggy.py")
    done = subprocess.run([flake8, "--select", "DK", buggy], capture_output=True, text=True, check=False)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.strip().splitlines()
    assert [line.split(": ", 1)[1].split()[0] for line in lines] == ["DK002", "DK008"]
    assert lines[0].startswith(f"{buggy}:3:1: DK002 ")
    done = subprocess.run([flake8, "--select", "DK9", buggy], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout == ""


def test_pre_commit_hook_definition():
    import yaml

    [hook] = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert hook["id"] == "devicekit-lint" and hook["entry"] == "devicekit-lint"
    assert hook["language"] == "python" and set(hook["types_or"]) == {"python", "jupyter"}
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["scripts"]["devicekit-lint"] == "devicekit.lint.cli:console"
    assert project["entry-points"]["flake8.extension"]["DK"].startswith("devicekit.lint.flake8_plugin:")
