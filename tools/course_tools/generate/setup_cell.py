"""The install part of every lab's first cell, written once here and put into each solution by ``make labs``.

A setup cell must work before devicekit exists, so its install logic cannot be imported from devicekit: it
is code in the notebook. This module is its one source. ``install_block(lang, url)`` renders it for a
notebook's language; ``course_tools.generate.labs`` replaces the part of each solution's first code cell
before ``import torch`` with it (``sync``) and reports a solution whose block differs (``check``).

What the block does, in order, only when devicekit is not importable yet:

1. **torch first.** No torch in the kernel's Python: it stops and says so, with the course's range and
   the CPU-only index (``pip install`` of the wheel would otherwise download torch, on Linux the
   several-GB CUDA build, or fail offline and blame the wheel).
2. **The wheel beside the notebook, offline.** With every other requirement of the wheel importable it
   installs with ``--no-index``: no network needed. A missing requirement (numpy) makes it try the same
   wheel with the network, which downloads that requirement.
3. **The course repository** (``INSTALL_FROM``; empty in the lab zips without a students' repository).
4. Otherwise it stops with one message that names what is missing: the wheel (and the folder it looked
   in), or the requirement pip could not get, with the command that installs it. pip's own output is
   shown above the message.

The requirements and the torch range come from ``pyproject.toml`` (``[project] dependencies``) and the
Makefile (``course_tools.torch_versions``), so the cell names what the wheel really declares.
"""

from __future__ import annotations

import json
import re

from course_tools import torch_versions
from course_tools.paths import ROOT
from devicekit.messages import Message

#: Where the install block ends in a setup cell: the first line after it.
BLOCK_END = "\nimport torch\n"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"

DOCSTRING = Message(
    "Install devicekit: the devicekit-*.whl beside this notebook (offline), else the course repository.",
    "安装 devicekit：先用本 notebook 旁边的 devicekit-*.whl（无需联网），不行再从课程仓库安装。",
)
# The {placeholders} are filled in by the cell when it runs (str.format), so they stay in both languages.
NO_TORCH = Message(
    "PyTorch is not installed in the Python this notebook runs on ({python}), and devicekit needs it. "
    'Install it first: {python} -m pip install "{torch}" (a computer without an NVIDIA GPU: add '
    "--index-url " + CPU_INDEX + " for the CPU-only build, a few hundred MB instead of several GB), "
    "then restart the kernel and run this cell again.",
    "本 notebook 所用的 Python（{python}）里没有安装 PyTorch，而 devicekit 需要它。请先安装："
    '{python} -m pip install "{torch}"（没有 NVIDIA GPU 的电脑再加上 --index-url ' + CPU_INDEX + "，"
    "安装 CPU 版，只有几百 MB，而不是好几 GB），然后重启内核，再运行这个单元格。",
)
NO_WHEEL = Message(
    "devicekit is not installed, and there is no devicekit-*.whl file in {folder}, the folder this "
    "notebook runs in. Put the devicekit-*.whl file from the lab's zip next to this notebook, then run "
    "this cell again.",
    "devicekit 还没有安装，而本 notebook 运行所在的文件夹 {folder} 里没有 devicekit-*.whl 文件。"
    "请把实验压缩包里的 devicekit-*.whl 文件放到本 notebook 旁边，然后重新运行这个单元格。",
)
NO_WHEEL_NOR_NETWORK = Message(
    "devicekit is not installed: there is no devicekit-*.whl file in {folder}, the folder this notebook "
    "runs in, and installing it from the course repository failed (pip's message is above). Put the "
    "devicekit-*.whl file from the lab's zip next to this notebook, or connect to the internet, then run "
    "this cell again.",
    "devicekit 还没有安装：本 notebook 运行所在的文件夹 {folder} 里没有 devicekit-*.whl 文件，"
    "从课程仓库安装也失败了（pip 的报错见上方）。请把实验压缩包里的 devicekit-*.whl 文件放到本 notebook "
    "旁边，或者连上网络，然后重新运行这个单元格。",
)
WHEEL_FAILED = Message(
    "pip could not install {wheel} (its message is above): devicekit needs {missing}, which this Python "
    "({python}) lacks and pip could not download. Install it with {python} -m pip install {missing}, "
    "then run this cell again.",
    "pip 无法安装 {wheel}（报错见上方）：devicekit 需要 {missing}，而这个 Python（{python}）里没有，"
    "pip 也下载不到。请用 {python} -m pip install {missing} 安装，然后重新运行这个单元格。",
)
WHEEL_BROKEN = Message(
    "pip could not install {wheel}; its message above says why: a torch older than the course's "
    "{torch}, or a damaged file (take the wheel again from the lab's zip). Fix that, then run this cell "
    "again.",
    "pip 无法安装 {wheel}，原因见上方 pip 的报错：torch 版本低于课程要求的 {torch}，或者文件已损坏"
    "（请重新从实验压缩包中取出这个 wheel）。解决之后，再重新运行这个单元格。",
)
#: The cell's message constants, in the order the cell defines them.
MESSAGES = {
    "NO_TORCH": NO_TORCH,
    "NO_WHEEL": NO_WHEEL,
    "NO_WHEEL_NOR_NETWORK": NO_WHEEL_NOR_NETWORK,
    "WHEEL_FAILED": WHEEL_FAILED,
    "WHEEL_BROKEN": WHEEL_BROKEN,
}

TEMPLATE = '''%xmode Minimal
import importlib.util
import pathlib
import subprocess
import sys

INSTALL_FROM = "devicekit @ git+{url}"
NEEDS = {needs}  # import name -> pip requirement
# In both languages: these show before devicekit (which picks one) is installed.
{messages}


def install_devicekit():
    """{docstring}"""
    python = sys.executable
    if importlib.util.find_spec("torch") is None:
        raise RuntimeError(NO_TORCH.format(python=python, torch=NEEDS["torch"]))
    missing = [spec for name, spec in NEEDS.items() if importlib.util.find_spec(name) is None]
    wheels = sorted(pathlib.Path().glob("devicekit-*.whl"))[-1:]
    tries = [[str(wheel)] + ([] if missing else ["--no-index"]) for wheel in wheels]
    for args in tries + ([[INSTALL_FROM]] if INSTALL_FROM else []):
        done = subprocess.run([python, "-m", "pip", "install", "-q", *args], capture_output=True, text=True)
        if done.returncode == 0:
            importlib.invalidate_caches()
            return
        print(done.stdout[-2000:] + done.stderr[-2000:], file=sys.stderr)
    if not wheels:
        message = NO_WHEEL_NOR_NETWORK if INSTALL_FROM else NO_WHEEL
        raise RuntimeError(message.format(folder=pathlib.Path().resolve()))
    needed = " ".join(f'"{{spec}}"' for spec in missing)
    details = {{"wheel": wheels[0].name, "missing": needed, "python": python, "torch": NEEDS["torch"]}}
    raise RuntimeError((WHEEL_FAILED if missing else WHEEL_BROKEN).format(**details))


if importlib.util.find_spec("devicekit") is None:
    install_devicekit()
'''
WIDTH = 100  # columns of a string-literal line in the cell (a CJK character counts as two)


def _columns(text: str) -> int:
    return sum(2 if ord(ch) > 0x2E80 else 1 for ch in text)


def _chunks(line: str, width: int) -> list[str]:
    """``line`` cut into pieces of at most ``width`` columns, after a space or full-width punctuation."""
    pieces, current = [], ""
    for token in re.findall(r"[^ ，。：、（）]*[ ，。：、（）]?", line):
        if current and _columns(current + token) > width:
            pieces.append(current)
            current = ""
        current += token
    return [*pieces, current] if current else pieces


def literal(name: str, message: Message) -> str:
    """``NAME = ( "..." "..." )``: the message, English line then Chinese line, as a wrapped string literal.

    Both languages: the cell shows the message before devicekit, which would pick one, exists.
    """
    lines = []
    for text in (message.en + "\n", message.zh):
        lines += [f"    {json.dumps(piece, ensure_ascii=False)}" for piece in _chunks(text, WIDTH - 6)]
    return f"{name} = (\n" + "\n".join(lines) + "\n)"


def requirements(root=ROOT) -> dict[str, str]:
    """The wheel's requirements as the cell checks them: importable name -> pip requirement.

    torch's requirement is the course's range (the Makefile's ``TORCH_SPEC``), which the learner is told to
    install; the others are ``[project] dependencies`` of ``pyproject.toml`` as written.
    """
    text = (root / "pyproject.toml").read_text(encoding="utf-8")
    match = re.search(r"^dependencies = \[(.*?)\]", text, re.MULTILINE | re.DOTALL)
    if not match:
        raise ValueError("pyproject.toml has no [project] dependencies list")
    specs = re.findall(r'"([^"]+)"', match.group(1))
    needs = {re.match(r"[A-Za-z0-9_.-]+", spec).group(0).lower().replace("-", "_"): spec for spec in specs}
    if "torch" not in needs:
        raise ValueError("pyproject.toml's dependencies do not name torch")
    needs["torch"] = torch_versions.course_spec(root / "Makefile")
    return needs


def install_block(lang: str, url: str, root=ROOT) -> str:
    """The install part of a setup cell for a notebook in ``lang`` whose fallback is ``url``'s repository.

    The messages are in both languages whatever ``lang`` (they are shown before devicekit can pick one);
    the docstring is in the notebook's language.
    """
    text = TEMPLATE.format(
        url=url,
        needs=json.dumps(requirements(root)),
        messages="\n".join(literal(name, message) for name, message in MESSAGES.items()),
        docstring=DOCSTRING.text(lang),
    )
    return text.rstrip("\n")


def split(source: str) -> tuple[str, str]:
    """A setup cell's source as (install block without its blank lines, the rest from ``import torch`` on).

    ValueError when no line is ``import torch``."""
    head, found, tail = source.partition(BLOCK_END)
    if not found:
        raise ValueError("the setup cell never imports torch on a line of its own")
    return head.rstrip("\n"), "import torch\n" + tail
