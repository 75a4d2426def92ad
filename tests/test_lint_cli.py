"""`devicekit-lint` on the command line: output formats, exit status, files that do not parse, `--fix`,
the flake8 plugin and the pre-commit hook's definition."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from course_tools.paths import ROOT
from devicekit.lint import RULES
from devicekit.lint.cli import main, parser

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


# `file:line:col: ` as flake8, editors' problem matchers and CI annotations read it.
FILE_LINE_COL = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>[A-Z]+\d+) (?P<message>.+)$")


def _lab(tmp_path: Path, indent: int | None = 1) -> Path:
    """A notebook whose cells hold their source as a list of lines, as one string, and a cell that does
    not parse; written with or without indentation."""
    nb = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": "# lab"},
            {
                "cell_type": "code",
                "metadata": {},
                "outputs": [],
                "execution_count": None,
                "source": ["import torch\n", "x = torch.ones(2)  # 张量\n", 's = "\\t"; x.cuda()\n'],
            },
            {
                "cell_type": "code",
                "metadata": {},
                "outputs": [],
                "execution_count": None,
                "source": "def f(:\n",
            },
            {
                "cell_type": "code",
                "metadata": {},
                "outputs": [],
                "execution_count": None,
                "source": "y = torch.ones(1)\nstate = torch.load(p)\n",
            },
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "lab.ipynb"
    path.write_text(json.dumps(nb, indent=indent, ensure_ascii=False), encoding="utf-8")
    return path


def _spot(path: Path, needle: str) -> tuple[int, int]:
    """The 1-based line and column of `needle` in the file, found by reading the file."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if needle in line:
            return number, line.index(needle) + 1
    raise AssertionError(needle)


@pytest.mark.parametrize("indent", [1, None])
def test_notebook_text_lines_parse_as_file_line_col(tmp_path, capsys, indent):
    path = _lab(tmp_path, indent)
    code, out, _ = run(capsys, "--lang", "en", str(path))
    assert code == 2  # a cell does not parse
    lines = out.strip().splitlines()
    matches = [FILE_LINE_COL.match(line) for line in lines]
    assert all(matches), lines
    found = {m["code"]: m for m in matches if m}
    assert (int(found["DK002"]["line"]), int(found["DK002"]["col"])) == _spot(path, "x.cuda()")
    assert found["DK002"]["message"].startswith("(cell 2, line 3) the result of")
    assert (int(found["DK008"]["line"]), int(found["DK008"]["col"])) == _spot(path, "torch.load(p)")
    assert found["DK008"]["message"].startswith("(cell 4, line 2) ")
    assert found["E999"]["file"] == str(path) and found["E999"]["message"].startswith("(cell 3, line 1) ")
    assert int(found["E999"]["line"]) == _spot(path, "def f(:")[0]
    _, out, _ = run(capsys, "--lang", "zh", str(path))
    assert "（单元格 2，第 3 行）" in out and "(cell" not in out


def test_notebook_sarif_points_into_the_notebook_file(tmp_path, capsys):
    path = _lab(tmp_path)
    _, out, _ = run(capsys, "--format", "sarif", "--lang", "en", str(path))
    [sarif_run] = json.loads(out)["runs"]
    by_rule = {r["ruleId"]: r for r in sarif_run["results"]}
    location = by_rule["DK002"]["locations"][0]
    region = location["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == _spot(path, "x.cuda()")
    assert location["physicalLocation"]["artifactLocation"]["uri"] == str(path)
    assert location["message"]["text"] == "cell 2, line 3, column 11"
    assert by_rule["DK002"]["properties"] == {"cell": 2, "lineInCell": 3, "columnInCell": 11}
    region = by_rule["DK008"]["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == _spot(path, "torch.load(p)")
    [notification] = sarif_run["invocations"][0]["toolExecutionNotifications"]
    region = notification["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] == _spot(path, "def f(:")[0] and notification["properties"]["cell"] == 3


def test_sarif_version_and_rule_help_links(files, capsys):
    import devicekit
    from devicekit.lint.sarif import INFO_URI, SITE_URL

    for lang, folder in (("en", ""), ("zh", "zh/")):
        _, out, _ = run(capsys, "--format", "sarif", "--lang", lang, str(files / "pkg" / "buggy.py"))
        driver = json.loads(out)["runs"][0]["tool"]["driver"]
        assert driver["version"] == devicekit.__version__
        for rule in driver["rules"]:
            assert rule["helpUri"] == f"{SITE_URL}{folder}lint/#{rule['id'].lower()}"
    # the anchors exist on both pages, and the site is GitHub Pages of the repository mkdocs.yml names
    for page in ("lint.md", "lint.zh.md"):
        text = (ROOT / "docs" / page).read_text(encoding="utf-8")
        for code in RULES:
            assert f"{{ #{code.lower()} }}" in text, (page, code)
    repo_url = re.search(r"^repo_url:\s*(\S+)", (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), re.M)[1]
    assert repo_url.rstrip("/") == INFO_URI
    owner, name = INFO_URI.rstrip("/").split("/")[-2:]
    assert SITE_URL == f"https://{owner}.github.io/{name}/"


def _has_chinese(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


USAGE_ERRORS = [
    ["--format", "xml", "x.py"],
    ["--bogus", "x.py"],
    ["--select", "DK777", "x.py"],
    ["--format"],
    [],
]


@pytest.mark.parametrize("args", USAGE_ERRORS, ids=lambda a: " ".join(a) or "no-paths")
def test_usage_errors_speak_one_language(capsys, monkeypatch, args):
    monkeypatch.delenv("DEVICEKIT_LANG", raising=False)
    for lang in ("en", "zh"):
        try:
            status = main(["--lang", lang, *args])
        except SystemExit as exc:
            status = exc.code
        out, err = capsys.readouterr()
        assert status == 2 and out == ""
        if lang == "zh":
            assert err.splitlines()[-1].startswith("devicekit-lint：错误：")
            assert "error" not in err and "usage" not in err and "invalid" not in err and "matches" not in err
        else:
            assert err.splitlines()[-1].startswith("devicekit-lint: error: ") and not _has_chinese(err)


def test_usage_error_language_from_the_environment(capsys, monkeypatch):
    monkeypatch.setenv("DEVICEKIT_LANG", "zh")
    with pytest.raises(SystemExit):
        main(["--format", "xml", "x.py"])
    err = capsys.readouterr().err
    assert err.startswith("用法：") and "错误" in err and "error" not in err


def test_help_in_the_chosen_language(capsys, monkeypatch):
    monkeypatch.delenv("DEVICEKIT_LANG", raising=False)
    monkeypatch.setenv("COLUMNS", "200")  # one line per option: each help text whole
    with pytest.raises(SystemExit):
        main(["--lang", "zh", "--help"])
    zh = capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--help"])
    en = capsys.readouterr().out
    assert zh.startswith("用法：devicekit-lint") and "位置参数：" in zh and "选项：" in zh
    assert en.startswith("usage: devicekit-lint") and not _has_chinese(en)
    # no English sentence of the help is left in the Chinese one
    english = parser("en")
    sentences = [english.description, "positional arguments", "options"]
    sentences += [action.help for action in english._actions if action.help]
    assert len(sentences) == 11
    for sentence in sentences:
        assert sentence in en and sentence not in zh, sentence


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


def test_code_that_recurses_deeply_is_reported_not_a_crash(tmp_path, capsys):
    """A path named after itself (found on microsoft/LoRA: a crash) and expressions nested beyond what
    Python's parser or the checks recurse into: a finding or an E999, never a traceback."""
    loops = tmp_path / "loops.py"
    loops.write_text(
        "def f(path):\n    path = os.path.join(path, 'x')\n    path = os.path.join(path, 'y')\n"
        "    return torch.load(path)\n",
        encoding="utf-8",
    )
    deep = tmp_path / "deep.py"
    deep.write_text("x = 1\ny = " + " + ".join(["x"] * 5000) + "\n", encoding="utf-8")
    nested = tmp_path / "nested.py"
    nested.write_text(
        "x = torch.zeros(3)\ny = " + " + ".join(["x"] * 600) + "\nx.to(device)\n", encoding="utf-8"
    )
    code, out, _ = run(capsys, "--lang", "en", str(tmp_path))
    assert code == 2
    assert f"{deep}:0:0: E999 nested too deeply for Python's parser" in out
    assert f"{loops}:4:12: DK008" in out and f"{nested}:3:1: DK002" in out
