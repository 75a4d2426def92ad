"""Where things live in the repository: computed once here, imported everywhere else.

The tools are installed in editable mode from ``tools/`` (``make setup``), so this file sits at
``<root>/tools/course_tools/paths.py`` and the root is two folders up.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
LABS = ROOT / "labs"
SOLUTIONS = ROOT / "solutions"
SRC = ROOT / "src"
LESSONS = DOCS / "lessons"
#: Evidence recorded on real hardware (GPU runs, CUDA messages); lessons cite it by path.
RESULTS = ROOT / "results"
#: Data the tools and tests read: mined messages, the glossary, the catalog's sources.
DATA = Path(__file__).resolve().parent / "data"
MKDOCS_YML = ROOT / "mkdocs.yml"
#: The course manifest: generated from the solutions' metadata, shipped with the labs package.
MANIFEST = SRC / "devicekit_labs" / "manifest.json"


def notebooks(folder: Path) -> list[Path]:
    """The notebooks of ``folder`` in name order (both languages)."""
    return sorted(folder.glob("*.ipynb"))


def english(paths: list[Path]) -> list[Path]:
    """The English notebooks or pages among ``paths``."""
    return [p for p in paths if ".zh." not in p.name]


def zh_twin(path: Path) -> Path:
    """The Chinese twin of an English page or notebook: ``x.md`` -> ``x.zh.md``."""
    return path.with_name(path.name.replace(path.suffix, ".zh" + path.suffix, 1))
