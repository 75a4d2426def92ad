"""MkDocs hooks for the "paste your code" page (`docs/lint-playground.md`, `.zh.md`).

The page lints in the browser with the same Python code as `devicekit-lint`, run by Pyodide, and both are
served from the site itself (no CDN: the page works offline and from mainland China):

- `assets/devicelint/sources.json`: the source of `devicekit.lint` (and an empty `devicekit/__init__.py`,
  so torch is never imported), which `docs/assets/lint-playground.js` writes into Pyodide's file system;
- `assets/pyodide/*`: Pyodide's core files, copied from the npm package (`npm install` with the repository's
  `package.json` puts it in `node_modules/pyodide`; `DEVICEKIT_PYODIDE_DIR` may name another folder).
  Without them the site still builds and the page says that the in-browser linter is not bundled.

Only that page loads the script; nothing is added to the other pages.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

from course_tools.paths import ROOT
LINT_PACKAGE = ROOT / "src" / "devicekit" / "lint"
SOURCES_PATH = "assets/devicelint/sources.json"
#: The modules of devicekit the linter imports besides its own package (neither imports torch).
LINT_NEEDS = ("messages.py", "lang.py", "cpu_args.py")
PYODIDE_FILES = ("pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")
log = logging.getLogger("mkdocs.hooks.lint_page")


def lint_sources() -> str:
    """JSON `{path in the Pyodide file system: source}` of the linter, without the rest of devicekit."""
    files = {"devicekit/__init__.py": '"""devicekit, reduced to its linter for the browser."""\n'}
    for path in sorted(LINT_PACKAGE.glob("*.py")):
        files[f"devicekit/lint/{path.name}"] = path.read_text(encoding="utf-8")
    # the linter's bilingual messages: devicekit.messages and devicekit.lang (standard library only)
    for name in LINT_NEEDS:
        files[f"devicekit/{name}"] = (LINT_PACKAGE.parent / name).read_text(encoding="utf-8")
    return json.dumps(files, ensure_ascii=False)


def pyodide_dir(config) -> Path | None:
    """The folder with Pyodide's core files, or None when it is not installed."""
    candidates = [os.environ.get("DEVICEKIT_PYODIDE_DIR", "")]
    candidates.append(str(Path(config.config_file_path).resolve().parent / "node_modules" / "pyodide"))
    candidates.append(str(ROOT / "node_modules" / "pyodide"))
    for candidate in candidates:
        if candidate and all((Path(candidate) / name).is_file() for name in PYODIDE_FILES):
            return Path(candidate)
    return None


def _replace(files, config, path: str, content: str | bytes) -> None:
    existing = files.get_file_from_path(path)
    if existing is not None:
        files.remove(existing)
    files.append(File.generated(config, path, content=content))


@event_priority(-110)  # after mkdocs-static-i18n's on_files (-100), like course_tools/site/atlas_hooks.py
def on_files(files, config):
    _replace(files, config, SOURCES_PATH, lint_sources())
    folder = pyodide_dir(config)
    if folder is None:
        log.info("Pyodide not found (npm install, or DEVICEKIT_PYODIDE_DIR): the paste page will say so")
        return files
    for name in PYODIDE_FILES:
        _replace(files, config, f"assets/pyodide/{name}", (folder / name).read_bytes())
    return files
