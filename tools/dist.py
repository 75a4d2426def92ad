"""``make dist``: one zip per lab for instructors to hand out (student notebooks only, both languages).

    python tools/dist.py [--out dist]

Each ``dist/NN-slug.zip`` holds ``NN-slug.ipynb``, ``NN-slug.zh.ipynb`` and a short bilingual
``README.txt``. Zips are reproducible: fixed timestamps and order, so the same labs give the same bytes.
"""

from __future__ import annotations

import argparse
import sys
import zipfile
from pathlib import Path

import course

ROOT = Path(__file__).resolve().parent.parent
EPOCH = (2020, 1, 1, 0, 0, 0)

README = """{title_en}
{title_zh}

Open the notebook in Jupyter (or upload it to Google Colab) and run the cells from the top.
The first cell installs devicekit, the course's helper library, when it is missing.
Needs: {needs_en}.

用 Jupyter 打开 notebook（或上传到 Google Colab），从第一个单元格开始依次运行。
第一个单元格会在缺少 devicekit（课程配套的工具库）时自动安装。
需要：{needs_zh}。
"""


def build(out: Path, root: Path = ROOT) -> list[Path]:
    """Write one zip per lab into ``out``; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for lab in course.labs(root):
        files = [root / "labs" / f"{lab.id}.ipynb", root / "labs" / f"{lab.id}.zh.ipynb"]
        missing = [str(f.relative_to(root)) for f in files if not f.exists()]
        if missing:
            raise FileNotFoundError(f"{', '.join(missing)} missing: run `make labs` first")
        readme = README.format(
            title_en=lab.titles["en"],
            title_zh=lab.titles["zh"],
            needs_en=" · ".join(lab.badges("en")),
            needs_zh=" · ".join(lab.badges("zh")),
        )
        target = out / f"{lab.id}.zip"
        with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for name, data in [("README.txt", readme.encode()), *((f.name, f.read_bytes()) for f in files)]:
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
