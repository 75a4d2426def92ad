"""Where the installed packages the grader snapshots live, found without importing them: ``devicekit``'s
``__init__`` imports torch, about three seconds of CPU that the grader's own process never needs (the
evaluator and the kernels import torch; the process that schedules them and writes the grades does not)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import locale
import os
import site
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def package_folder(name: str) -> Path | None:
    """The folder of the installed package ``name`` (its first search location), or None when it is not
    installed (or is a single-file module)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def labs_manifest() -> list[dict[str, Any]]:
    """The ``labs`` list of the installed course manifest (``devicekit_labs/manifest.json``), read as a file:
    [] when devicekit_labs or its manifest is missing or unreadable."""
    folder = package_folder("devicekit_labs")
    if folder is None:
        return []
    try:
        data = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    labs = data.get("labs") if isinstance(data, dict) else None
    return [lab for lab in labs if isinstance(lab, dict) and "id" in lab] if isinstance(labs, list) else []


# --- what a submission's kernel must see --------------------------------------------------------------------

#: The packages every sandbox needs whatever else is installed: the grader's worker and kernel code and the
#: course's checks (found where the grader's own interpreter finds them).
GRADER_PACKAGES = ("devicekit", "devicekit_labs", "devicekit_grade")


@dataclass(frozen=True)
class Needs:
    """What a submission's kernel loads from, as the grader's interpreter sees it: ``trees`` are shown
    whole (the Python installation, its site-packages, and folders of installed distributions that a
    ``.pth`` file adds); ``packages`` one by one (a package folder or a single-file module outside those,
    e.g. an editable install's source): never the folder that holds them, which in a course checkout also
    holds ``solutions/`` and ``grading/hidden/``."""

    trees: tuple[str, ...]
    packages: tuple[str, ...]
    #: the site folders and the folders of distributions their ``.pth`` files add, in ``sys.path`` order:
    #: where the evaluator (``python -I -S``, no ``site``) finds torch and the other third-party packages
    libraries: tuple[str, ...] = ()

    @property
    def paths(self) -> list[str]:
        return [*self.trees, *self.packages]


def inside(path: str, folders: list[str] | tuple[str, ...]) -> bool:
    """Whether ``path`` is one of ``folders`` or inside one."""
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


def _both(path: str) -> list[str]:
    """``path`` made absolute, and where it really is when a symbolic link leads elsewhere: the kernel opens
    the first, and what it reports (``__file__``, ``sys.executable``) may name the second."""
    given = os.path.abspath(path)
    real = os.path.realpath(given)
    return [given] if real == given else [given, real]


def site_dirs() -> list[str]:
    """The site-packages folders a fresh interpreter of this Python processes (``.pth`` files included);
    not the user's own (``~/.local``): submissions run with ``PYTHONNOUSERSITE=1``."""
    found = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    found += [sysconfig.get_paths()[key] for key in ("purelib", "platlib")]
    return [d for d in dict.fromkeys(os.path.abspath(d) for d in found) if os.path.isdir(d)]


def pth_entries(folder: str) -> list[str]:
    """The folders that the ``.pth`` files of the site folder ``folder`` add to ``sys.path``, in the order
    `site.addpackage` adds them: each line that names an existing folder (relative to ``folder``); ``import``
    lines run code and add no folder here (editable-install finders: `finder_paths`)."""
    out = []
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".pth") and not n.startswith("."))
    except OSError:
        return []
    for name in names:
        try:
            data = Path(folder, name).read_bytes()
        except OSError:
            continue
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = data.decode(locale.getpreferredencoding(False), "replace")
        for line in text.splitlines():
            if not line.strip() or line.startswith("#") or line.startswith(("import ", "import\t")):
                continue
            path = os.path.join(folder, line.rstrip())
            if os.path.isdir(path):
                out.append(os.path.abspath(path))
    return list(dict.fromkeys(out))


def _is_store(folder: str) -> bool:
    """Whether a ``.pth`` folder holds installed distributions (a ``*.dist-info``: another site-packages),
    rather than a project's sources (an editable install of a ``src/`` or flat layout)."""
    try:
        return any(n.endswith(".dist-info") for n in os.listdir(folder))
    except OSError:
        return False


def importable_children(folder: str) -> list[str]:
    """What ``import NAME`` can load from ``folder`` on ``sys.path``: packages (folders with an
    ``__init__``) and modules; not data folders such as ``solutions/`` or ``*.egg-info``."""
    suffixes = tuple(importlib.machinery.all_suffixes())
    out = []
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return []
    for entry in entries:
        if not entry.name.split(".", 1)[0].isidentifier():
            continue
        if entry.is_dir():
            init = (os.path.join(entry.path, "__init__" + suffix) for suffix in suffixes)
            if entry.name.isidentifier() and any(os.path.isfile(path) for path in init):
                out.append(entry.path)
        elif entry.name.endswith(suffixes):
            out.append(entry.path)
    return out


def finder_paths(meta_path: list[Any] | None = None) -> list[str]:
    """Where the editable-install finders on ``sys.meta_path`` load packages from: setuptools'
    ``__editable___*_finder`` (``MAPPING``: name → package folder or module file; ``NAMESPACES``: name →
    folders) and the ``editables`` library's ``RedirectingFinder`` (``_redirections``: name → file)."""
    out: list[str] = []
    for finder in sys.meta_path if meta_path is None else meta_path:
        module = sys.modules.get(getattr(finder, "__module__", "") or "")
        tables = [getattr(module, "MAPPING", None), getattr(finder, "_redirections", None)]
        for table in tables:
            if isinstance(table, dict):
                out += [str(p) for p in table.values() if isinstance(p, (str, os.PathLike))]
        spaces = getattr(module, "NAMESPACES", None)
        if isinstance(spaces, dict):
            out += [str(p) for paths in spaces.values() if isinstance(paths, list) for p in paths]
    found = []
    for path in out:
        path = os.path.abspath(path)
        if os.path.basename(path).split(".", 1)[0] == "__init__":
            path = os.path.dirname(path)  # a package given by its __init__ file
        if os.path.exists(path):
            found.append(path)
    return list(dict.fromkeys(found))


def kernel_needs(sites: list[str] | None = None, meta_path: list[Any] | None = None) -> Needs:
    """`Needs` of this Python: its installation and site folders; what their ``.pth`` files add (a folder of
    distributions whole, a project's source folder package by package); what editable-install finders
    map; and `GRADER_PACKAGES` where the grader itself loads them. Found without importing any of them."""
    import nbclient  # the worker's own import: already loaded by the grader

    paths = sysconfig.get_paths()
    trees: list[str] = []
    for path in (
        sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
        os.path.dirname(os.path.realpath(sys.executable)), paths["stdlib"], paths["platstdlib"],
    ):  # fmt: skip
        trees += _both(path)
    sites = site_dirs() if sites is None else sites
    packages: list[str] = []
    libraries = list(sites)
    for folder in sites:
        trees += _both(folder)
        for entry in pth_entries(folder):
            if _is_store(entry):
                trees += _both(entry)
                libraries.append(entry)
            else:
                for child in importable_children(entry):
                    packages += _both(child)
    for path in finder_paths(meta_path):
        packages += _both(path)
    for name in GRADER_PACKAGES:
        found = package_folder(name)
        if found is not None:
            packages += _both(str(found))
    packages += _both(os.path.dirname(nbclient.__file__))
    trees = [t for t in dict.fromkeys(trees) if os.path.exists(t)]
    packages = [p for p in dict.fromkeys(packages) if os.path.exists(p) and not inside(p, trees)]
    packages = [p for p in packages if not inside(p, [q for q in packages if q != p])]
    return Needs(tuple(trees), tuple(packages), tuple(dict.fromkeys(libraries)))
