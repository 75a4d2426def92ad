"""The install part of every lab's first cell (course_tools/generate/setup_cell.py), run for real.

The block is exec'd as the notebook would run it (without its ``%xmode`` magic), with ``find_spec`` and
``subprocess.run`` replaced so each case (torch missing, numpy missing, no wheel, pip failing) is shown
without installing anything. Every message must name what is missing, in English and in Chinese.
"""

from __future__ import annotations

import importlib.util
import subprocess

import nbformat
import pytest

from course_tools import torch_versions
from course_tools.generate import labs as labtool
from course_tools.generate import setup_cell
from course_tools.paths import LABS, ROOT, SOLUTIONS, notebooks

WHEEL = "devicekit-0.1.0-py3-none-any.whl"


def _block(url: str = "") -> dict:
    """The install block as the zips ship it (``url`` empty: no course repository), exec'd: its namespace."""
    code = setup_cell.install_block("en", "https://example.org/course")
    code = code.replace(
        '"devicekit @ git+https://example.org/course"', repr(f"devicekit @ git+{url}" if url else "")
    )
    code = "\n".join(line for line in code.splitlines() if not line.startswith("%"))
    namespace: dict = {}
    exec(code, namespace)  # devicekit is importable here, so the block's last line installs nothing
    return namespace


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """A fake machine: ``absent`` modules are not importable, ``pip`` answers ``pip_rc``, calls recorded."""
    state = {"absent": set(), "pip_rc": 0, "calls": []}
    real = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        return None if name in state["absent"] else real(name, *args, **kwargs)

    def run(args, **kwargs):
        state["calls"].append(args[5:])  # what follows `python -m pip install -q`
        return subprocess.CompletedProcess(args, state["pip_rc"], stdout="", stderr="pip says why\n")

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(subprocess, "run", run)
    monkeypatch.chdir(tmp_path)
    return state


def _wheel(folder) -> None:
    (folder / WHEEL).write_bytes(b"")


def test_without_torch_it_stops_before_pip_and_says_torch_is_missing(machine, tmp_path):
    _wheel(tmp_path)
    machine["absent"] = {"torch", "numpy"}
    with pytest.raises(RuntimeError) as info:
        _block()["install_devicekit"]()
    message = str(info.value)
    assert machine["calls"] == [], "pip would download torch (on Linux the several-GB CUDA build)"
    assert "PyTorch is not installed" in message and "没有安装 PyTorch" in message
    assert f'-m pip install "{torch_versions.course_spec()}"' in message
    assert "devicekit-*.whl" not in message, "the wheel is there: it is not what is missing"


def test_with_torch_and_numpy_the_wheel_installs_offline(machine, tmp_path):
    _wheel(tmp_path)
    _block()["install_devicekit"]()
    assert machine["calls"] == [[WHEEL, "--no-index"]]


def test_without_numpy_the_wheel_may_download_it_and_the_message_names_it(machine, tmp_path, capsys):
    _wheel(tmp_path)
    machine["absent"], machine["pip_rc"] = {"numpy"}, 1
    with pytest.raises(RuntimeError) as info:
        _block()["install_devicekit"]()
    assert machine["calls"] == [[WHEEL]], "with numpy missing, pip must be allowed to fetch it"
    message = str(info.value)
    numpy = setup_cell.requirements()["numpy"]
    assert f'devicekit needs "{numpy}"' in message and f'devicekit 需要 "{numpy}"' in message
    assert f'-m pip install "{numpy}"' in message
    assert "pip says why" in capsys.readouterr().err, "pip's own message is shown above"


def test_without_the_wheel_it_says_where_it_looked(machine, tmp_path):
    with pytest.raises(RuntimeError) as info:
        _block()["install_devicekit"]()
    message = str(info.value)
    assert machine["calls"] == []
    assert f"no devicekit-*.whl file in {tmp_path}" in message
    assert f"{tmp_path} 里没有 devicekit-*.whl 文件" in message
    assert "PyTorch" not in message, "torch is there: it is not what is missing"


def test_without_the_wheel_it_tries_the_repository_then_says_both_failed(machine):
    machine["pip_rc"] = 1
    with pytest.raises(RuntimeError) as info:
        _block("https://example.org/course")["install_devicekit"]()
    assert machine["calls"] == [["devicekit @ git+https://example.org/course"]]
    message = str(info.value)
    assert (
        "installing it from the course repository failed" in message and "从课程仓库安装也失败了" in message
    )


def test_a_wheel_pip_refuses_with_everything_there_is_reported(machine, tmp_path):
    _wheel(tmp_path)
    machine["pip_rc"] = 1
    with pytest.raises(RuntimeError) as info:
        _block()["install_devicekit"]()
    message = str(info.value)
    assert machine["calls"] == [[WHEEL, "--no-index"]]
    assert f"pip could not install {WHEEL}" in message and f"pip 无法安装 {WHEEL}" in message


def test_the_first_install_that_works_ends_it(machine):
    _block("https://example.org/course")["install_devicekit"]()
    assert machine["calls"] == [["devicekit @ git+https://example.org/course"]]


def test_requirements_are_the_wheels_with_the_courses_torch_range():
    needs = setup_cell.requirements()
    assert needs["torch"] == torch_versions.course_spec()
    assert needs["numpy"].startswith("numpy>=")
    assert f'"{needs["numpy"]}"' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(setup_cell.MESSAGES))
def test_messages_are_wrapped_without_changing_a_character(name):
    message = setup_cell.MESSAGES[name]
    namespace: dict = {}
    literal = setup_cell.literal(name, message)
    exec(literal, namespace)
    assert namespace[name] == message.en + "\n" + message.zh
    lines = literal.splitlines()
    assert max(setup_cell._columns(line) for line in lines) <= setup_cell.WIDTH, literal


def test_chinese_messages_use_full_width_punctuation():
    for name, message in setup_cell.MESSAGES.items():
        assert not any(mark in message.zh for mark in ("(", ")", ", ", ": ")), name
        assert " （" not in message.zh and " ：" not in message.zh, name


@pytest.mark.parametrize(
    "path", notebooks(SOLUTIONS) + notebooks(LABS), ids=lambda p: p.parent.name + "/" + p.name
)
def test_every_notebook_starts_with_the_generated_block(path):
    setup = next(c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
    head, _ = setup_cell.split(setup.source)
    assert head == setup_cell.install_block(labtool.language_of(path), labtool.repo_url()), "run `make labs`"


def test_a_setup_cell_without_import_torch_is_reported():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(1)")])
    with pytest.raises(labtool.LabSourceError, match="lab.ipynb: the setup cell never imports torch"):
        labtool.set_setup_cell(nb, "en", "https://example.org/course", "lab.ipynb")
