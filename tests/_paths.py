"""Where things live, for the tests."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS, LABS, SOLUTIONS = ROOT / "docs", ROOT / "labs", ROOT / "solutions"


def notebooks(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.ipynb"))


def english(paths):
    return [p for p in paths if ".zh." not in p.name]


def zh_twin(path: Path) -> Path:
    return path.with_name(path.name.replace(path.suffix, ".zh" + path.suffix, 1))
