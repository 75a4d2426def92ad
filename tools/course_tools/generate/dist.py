"""``make dist``: one zip per lab for instructors to hand out, usable offline.

    python -m course_tools.generate.dist [--out dist]

Each ``dist/NN-slug.zip`` holds, in a folder ``NN-slug/``:

* ``NN-slug.ipynb`` and ``NN-slug.zh.ipynb``, the student notebooks, whose links to the course repository
  (which holds the solutions) go to ``COURSE_STUDENTS_REPO_URL`` or nowhere (see ``students.py``);
* ``devicekit-X.Y.Z-py3-none-any.whl``, devicekit built from this checkout: the lab's setup cell installs
  it from the wheel beside the notebook, so the lab works where PyPI and GitHub cannot be reached;
* ``README.txt``: how to run the lab (the commands that install what it needs: the course's torch range
  and devicekit's other requirements, as the first cell checks them, from ``setup_cell.requirements``)
  and how to hand it in (file name, *Restart & Run All*), in English and Chinese, with the devicekit
  version the lab was written for.

Zips are reproducible: fixed timestamps and order, and the wheel is built with ``SOURCE_DATE_EPOCH``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from course_tools import course
from course_tools.generate import setup_cell
from course_tools.generate.students import for_students, students_repo
from course_tools.paths import ROOT

EPOCH = (2020, 1, 1, 0, 0, 0)
SOURCE_DATE_EPOCH = "1577836800"  # 2020-01-01, the same instant as EPOCH

README = """{title_en}
{title_zh}

== Run the lab ==
You need Python 3.10 or newer with PyTorch, NumPy and Jupyter. In a fresh environment (a venv):

    python -m pip install "{torch}"
    python -m pip install {others} jupyterlab

On Linux without an NVIDIA GPU add --index-url https://download.pytorch.org/whl/cpu to the first
command: CPU-only torch, a few hundred MB instead of several GB. Colab and most notebook platforms
have torch and NumPy already.
Then open {lab}.ipynb (English) or {lab}.zh.ipynb (Chinese) in Jupyter (jupyter lab), or upload it
together with {wheel} to Colab or your notebook platform, and run the cells from the top. The first
cell installs devicekit {version}, the course's helper library, from {wheel} in this folder, with no
internet needed; it stops and says so when torch or the wheel is missing.
Needs: {needs_en}.

== Hand it in ==
1. Save your work under the lab's name plus yours: {lab}-YOURNAME.ipynb ({lab}-YOURNAME.zh.ipynb for the
   Chinese notebook). Keep "{lab}" in the name.
2. Kernel -> Restart Kernel and Run All Cells (Colab: Runtime -> Restart and run all). Check that every
   self-check prints its line: the grader runs your notebook the same way, from the top, in a fresh kernel.
3. Save, then upload the .ipynb file itself: not a link, not a .txt or .json copy, not a zip of a folder.
   Do not edit the check cells: the grader uses its own copy of the checks.

== 运行实验 ==
需要 Python 3.10 或更高版本，并装好 PyTorch、NumPy 和 Jupyter。在一个新的环境（venv）里运行：

    python -m pip install "{torch}"
    python -m pip install {others} jupyterlab

没有 NVIDIA GPU 的 Linux 电脑请在第一条命令后加上 --index-url https://download.pytorch.org/whl/cpu：
这样装的是 CPU 版 torch，只有几百 MB，而不是好几 GB。
Colab 和大多数 notebook 平台已经装好了 torch 和 NumPy。
然后用 Jupyter（jupyter lab）打开 {lab}.zh.ipynb（中文）或 {lab}.ipynb（英文），
也可以把它和 {wheel} 一起上传到 Google Colab 或你使用的 notebook 平台，
从第一个单元格开始依次运行。第一个单元格会从本文件夹中的 {wheel} 安装 devicekit {version}
（课程配套的工具库），无需联网；缺少 torch 或这个 wheel 时，它会停下来说明缺了什么。
需要：{needs_zh}。

== 提交作业 ==
1. 把文件保存为“实验名-你的名字”：{lab}-你的名字.zh.ipynb（英文 notebook 为 {lab}-你的名字.ipynb），
   文件名里要保留“{lab}”。
2. 选择“内核 → 重启内核并运行所有单元格”（Colab：代码执行程序 → 重启并运行所有单元格），确认每个自测
   单元格都输出了结果：评分器也是这样在全新的内核里从头运行你的 notebook。
3. 保存后上传 .ipynb 文件本身：不要上传链接、.txt 或 .json 副本，也不要上传压缩的文件夹。
   不要修改自测单元格：评分器使用它自己的自测副本。

devicekit {version} · {wheel}
"""


def version(root: Path = ROOT) -> str:
    """devicekit's version, as pinned in ``src/devicekit/__init__.py``."""
    text = (root / "src" / "devicekit" / "__init__.py").read_text(encoding="utf-8")
    match = re.search(r'^__version__\s*=\s*"([^"]+)"', text, re.MULTILINE)
    if not match:
        raise ValueError("src/devicekit/__init__.py has no __version__")
    return match.group(1)


def build_wheel(root: Path, folder: Path) -> Path:
    """Build devicekit's wheel from ``root`` into ``folder`` offline (no build isolation, no downloads).

    The build runs on a copy of ``pyproject.toml``, ``README.md`` and ``src/``, so it leaves no ``build/``
    folder in the checkout and two builds at once do not share one.
    """
    source = folder / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(root / name, source / name)
    shutil.copytree(root / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    env = {**os.environ, "SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH, "PIP_NO_INDEX": "1"}
    cmd = [
        sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
        "-w", str(folder), str(source),
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wheels = sorted(folder.glob("devicekit-*.whl"))
    if done.returncode != 0 or len(wheels) != 1:
        raise RuntimeError(f"building the devicekit wheel failed:\n{done.stdout}\n{done.stderr}"[-3000:])
    return wheels[0]


def _normalised_wheel(wheel: Path) -> bytes:
    """The wheel's bytes with fixed timestamps and order, so the same source gives the same zip."""
    out = tempfile.SpooledTemporaryFile()
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as dst:
        for name in sorted(src.namelist(), key=lambda n: (".dist-info/" in n, n)):
            info = zipfile.ZipInfo(name, date_time=EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = src.getinfo(name).external_attr
            dst.writestr(info, src.read(name))
    out.seek(0)
    return out.read()


def repo_url(root: Path = ROOT) -> str:
    """``repo_url`` of ``mkdocs.yml``: the course repository, which holds the solutions."""
    match = re.search(r"^repo_url:\s*(\S+)", (root / "mkdocs.yml").read_text(encoding="utf-8"), re.MULTILINE)
    if not match:
        raise ValueError("mkdocs.yml has no repo_url")
    return match.group(1)


def build(out: Path, root: Path = ROOT, students: str | None = None) -> list[Path]:
    """Write one zip per lab into ``out``; returns their paths.

    ``students``: the solution-free repository the notebooks may link to (default: the
    ``COURSE_STUDENTS_REPO_URL`` environment variable; unset, they link to no repository).
    """
    out.mkdir(parents=True, exist_ok=True)
    students = students if students is not None else students_repo()
    repo = repo_url(root)
    pinned = version(root)
    needs = setup_cell.requirements(root)
    with tempfile.TemporaryDirectory() as tmp:
        wheel = build_wheel(root, Path(tmp))
        wheel_bytes = _normalised_wheel(wheel)
        wheel_name = wheel.name
    if f"-{pinned}-" not in wheel_name:
        raise RuntimeError(f"{wheel_name} is not devicekit {pinned}")
    written = []
    for lab in course.labs(root):
        files = [root / "labs" / f"{lab.id}.ipynb", root / "labs" / f"{lab.id}.zh.ipynb"]
        missing = [str(f.relative_to(root)) for f in files if not f.exists()]
        if missing:
            raise FileNotFoundError(f"{', '.join(missing)} missing: run `make labs` first")
        readme = README.format(
            torch=needs["torch"],
            others=" ".join(f'"{spec}"' for name, spec in needs.items() if name != "torch"),
            lab=lab.id,
            version=pinned,
            wheel=wheel_name,
            title_en=lab.titles["en"],
            title_zh=lab.titles["zh"],
            needs_en=" · ".join(lab.badges("en")),
            needs_zh=" · ".join(lab.badges("zh")),
        )
        target = out / f"{lab.id}.zip"
        entries = [
            ("README.txt", readme.encode()),
            *((f.name, for_students(f.read_text(encoding="utf-8"), repo, students).encode()) for f in files),
            (wheel_name, wheel_bytes),
        ]
        with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for name, data in entries:
                info = zipfile.ZipInfo(f"{lab.id}/{name}", date_time=EPOCH)
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, data)
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist")
    args = parser.parse_args(argv)
    for path in build(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
