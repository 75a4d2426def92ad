"""What several test modules share, made once per test run: the two snapshot site builds and one real
two-process DDP run.

- ``site_full``: ``mkdocs build --strict`` of the whole course, cold (nothing rendered before). Used by
  ``test_site.py``, ``test_links.py`` and ``test_browser.py`` (through the ``site`` fixture).
- ``site_students``: the students-only build (``COURSE_STUDENTS_ONLY=1``), used by ``test_site.py`` and
  ``test_grade_site.py``; ``site_students_repo`` the same with a solution-free repository to link to
  (``COURSE_STUDENTS_REPO_URL``), used by ``test_grade_site.py``. Both start from a copy of the full build's
  render cache (``.cache/``, keyed by each notebook's bytes), as a second ``make build`` would: their logs
  show that the cache hits (``test_site.py``), and they cost a warm build instead of a cold one.
- ``ddp_run``: ``devicekit_labs.workers.ddp_train_step`` on two CPU processes (gloo), used by
  ``test_distributed.py`` and ``test_lab08.py``, which only inspect what the run produced.

Each site is built from a copy of the checkout's source files (git's list: tracked and new, not ignored) in
the test run's temporary folder, never in the checkout: a build writes the notebook mirrors into
``docs/``, and the students-only build deletes ``docs/solutions``. Under pytest-xdist every worker asks
for the same folder (the run's temporary folder, named after a hash of the inputs); a file lock lets the
first one make it while the others wait, so each thing is made once per run, however many workers.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from course_tools.paths import ROOT

#: The longest a worker waits for another one to finish making a shared thing (a cold double site build
#: on a busy 2-core machine takes minutes).
WAIT_FOR_SHARED_S = 1800
#: The longest the two DDP workers may take on a busy machine.
DDP_DEADLINE_S = 300


# --- the layers (pyproject.toml's markers) -------------------------------------------------------------

#: Fixtures that make a test part of a layer: whoever uses one is marked so, without a decorator.
LAYER_FIXTURES = {
    "site": {"site", "site_full", "site_students", "site_students_repo"},
    "integration": {"ddp_run"},
}


def pytest_unconfigure(config):
    """Leave the run's objects to the operating system at exit: with ~700,000 of them after the unit layer,
    the garbage collections of interpreter shutdown (IPython's exit handler runs one) took 13-15 s after
    the last test. Exit handlers and ``weakref.finalize`` callbacks (temporary folders) still run."""
    gc.freeze()


def pytest_collection_modifyitems(items):
    for item in items:
        for marker, fixtures in LAYER_FIXTURES.items():
            if fixtures & set(getattr(item, "fixturenames", ())):
                item.add_marker(marker)


# --- once per run, shared by xdist workers ---------------------------------------------------------------


def run_folder(request: pytest.FixtureRequest) -> Path:
    """The test run's temporary folder: the same for every xdist worker of one run (a worker's own folder
    is inside it)."""
    base = request.getfixturevalue("tmp_path_factory").getbasetemp()
    return base.parent if hasattr(request.config, "workerinput") else base


def once_per_run(request: pytest.FixtureRequest, name: str, key: str, make: Callable[[Path], None]) -> Path:
    """``make(folder)`` once per test run, even under pytest-xdist; returns ``folder``.

    The first caller takes a file lock and makes the folder; the others wait on the lock and reuse it. A
    failure is recorded next to the folder, so every test that needs it fails with the same message instead
    of making it again.
    """
    from filelock import FileLock  # a dependency of torch

    base = run_folder(request)
    folder = base / f"{name}-{key}"
    done = base / f"{name}-{key}.done"
    with FileLock(str(base / f"{name}-{key}.lock"), timeout=WAIT_FOR_SHARED_S):
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)  # a half-made folder of a worker that died
            folder.mkdir(parents=True)
            try:
                make(folder)
            except BaseException as exc:  # recorded for the other tests, then raised here
                done.write_text(f"{name} failed: {type(exc).__name__}: {exc}", encoding="utf-8")
                raise
            done.write_text("ok", encoding="utf-8")
    status = done.read_text(encoding="utf-8")
    if status != "ok":
        pytest.fail(status, pytrace=False)
    return folder


# --- the snapshot site builds --------------------------------------------------------------------------

#: Never copied into the build's snapshot: git, environments, build outputs at the top, the notebook mirrors.
_NOT_SOURCE_TOP = {
    ".git", ".venv", "venv", "site", "site-students", "build", "dist", "wheels", ".cache", ".pytest_cache",
    ".ruff_cache", ".hypothesis", "node_modules",
}  # fmt: skip
#: ... and caches at any depth (a folder named ``site`` deeper down, like ``course_tools/site``, is source).
_NOT_SOURCE_ANYWHERE = {"__pycache__", ".ipynb_checkpoints"}
_MIRRORS = {"docs/labs", "docs/solutions"}
#: Variables that choose what the site holds or where it caches: each flavour sets its own.
_SITE_ENV = ("COURSE_STUDENTS_ONLY", "COURSE_STUDENTS_REPO_URL", "COURSE_SITE_CACHE")
MKDOCS_BUILD = [sys.executable, "-m", "mkdocs", "build", "--strict"]


def _is_source(name: str) -> bool:
    parts = name.split("/")
    if len(parts) > 1 and parts[0] in _NOT_SOURCE_TOP:
        return False
    if any(p in _NOT_SOURCE_ANYWHERE or p.endswith(".egg-info") for p in parts[:-1]):
        return False
    return not any(name.startswith(mirror + "/") for mirror in _MIRRORS)


def source_files() -> list[str]:
    """The checkout's files, as git sees them (tracked or new, not ignored); a plain walk without git."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout.decode("utf-8")
        files = [name for name in listed.split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for folder, dirs, names in os.walk(ROOT):
            here = Path(folder).relative_to(ROOT)
            dirs[:] = [d for d in dirs if _is_source((here / d / "-").as_posix())]
            files += [(here / name).as_posix() for name in names]
    return sorted(f for f in files if _is_source(f) and (ROOT / f).is_file())


def _inputs_key(files: list[str], env: dict[str, str]) -> str:
    digest = hashlib.sha256(json.dumps(env, sort_keys=True).encode())
    for name in files:
        digest.update(name.encode() + b"\0" + (ROOT / name).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class SiteBuild:
    """A site built from a snapshot of the checkout: ``source`` (the copy it was built from, with its
    notebook mirrors and render cache), ``site`` (the output), the build's ``log`` and the variables that
    chose the flavour (``env``)."""

    source: Path
    site: Path
    log: str
    env: dict[str, str]


def build_site(
    request: pytest.FixtureRequest, flavour: str, env: dict[str, str], cache: Path | None = None
) -> SiteBuild:
    """``mkdocs build --strict`` of a snapshot, once per run; ``cache``: a render cache (another snapshot's
    ``.cache/``) that the snapshot starts with."""
    files = source_files()
    build_env = {k: v for k, v in os.environ.items() if k not in _SITE_ENV}
    build_env.update({"NO_MKDOCS_2_WARNING": "1", **env})

    def make(folder: Path) -> None:
        source = folder / "source"
        for name in files:
            target = source / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target)
        if cache is not None and cache.is_dir():
            shutil.copytree(cache, source / ".cache")
        started = time.monotonic()
        run = subprocess.run(
            [*MKDOCS_BUILD, "-d", str(folder / "site")],
            cwd=source,
            env=build_env,
            capture_output=True,
            text=True,
        )
        log = run.stdout + run.stderr
        (folder / "build.log").write_text(log, encoding="utf-8")
        if run.returncode != 0:
            raise RuntimeError(f"mkdocs build ({flavour}) failed:\n{log[-6000:]}")
        print(f"{flavour} site: {time.monotonic() - started:.0f} s", file=sys.stderr)

    folder = once_per_run(request, f"site-{flavour}", _inputs_key(files, env), make)
    log = (folder / "build.log").read_text(encoding="utf-8")
    return SiteBuild(source=folder / "source", site=folder / "site", log=log, env=env)


@pytest.fixture(scope="session")
def site_full(request) -> SiteBuild:
    """The whole course, built with a cold render cache."""
    return build_site(request, "full", {})


@pytest.fixture(scope="session")
def site_students(request, site_full: SiteBuild) -> SiteBuild:
    """The students-only site, as ``make students`` builds it (no ``COURSE_STUDENTS_REPO_URL``), starting
    from the full build's render cache."""
    return build_site(request, "students", {"COURSE_STUDENTS_ONLY": "1"}, cache=site_full.source / ".cache")


@pytest.fixture(scope="session")
def site_students_repo(request, site_full: SiteBuild) -> SiteBuild:
    """The students-only site that links to a solution-free repository (``COURSE_STUDENTS_REPO_URL``)."""
    env = {
        "COURSE_STUDENTS_ONLY": "1",
        "COURSE_STUDENTS_REPO_URL": "https://github.com/example/device-course-labs",
    }
    return build_site(request, "students-repo", env, cache=site_full.source / ".cache")


@pytest.fixture(scope="session")
def site(site_full: SiteBuild) -> Path:
    """The output folder of the full site."""
    return site_full.site


# --- one graded class ----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def graded_class(request) -> dict:
    """The class of `grade_attacks.classroom`, graded once per run (shared by test_grade.py and
    test_grade_judged.py, on whichever workers they land): ``run.json``'s record plus ``root``, the class
    folder (``subs/``, ``grades/``, ``victims/``). Tests read it; none may change it."""
    from grade_attacks.classroom import grade_class

    folder = once_per_run(request, "grade", "class", grade_class)
    record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    record["root"] = folder
    return record


# --- one real two-process DDP run ----------------------------------------------------------------------


@pytest.fixture(scope="session")
def ddp_run(request) -> dict:
    """``ddp_train_step`` on two processes (``spawn``, gloo), and what became of the processes.

    Returns ``{"results": [rank 0's dict, rank 1's dict], "exitcodes", "alive", "reaped",
    "parent_in_group"}``: ``reaped`` holds, per worker, whether the kernel no longer knows it as a child of
    the process that started it (checked there, right after the join); ``parent_in_group`` whether that
    process joined a process group.
    """
    pytest.importorskip("torch.distributed")

    def make(folder: Path) -> None:
        import torch.distributed as dist

        from devicekit.distributed import spawn
        from devicekit_labs import workers as dist_workers

        if not dist.is_available():
            raise RuntimeError("this PyTorch build has no torch.distributed")
        context = spawn(dist_workers.ddp_train_step, nprocs=2, args=(2, folder / "ranks"), join=False)
        pids = [p.pid for p in context.processes]
        deadline = time.monotonic() + DDP_DEADLINE_S
        while not context.join(timeout=5):
            if time.monotonic() > deadline:
                for process in context.processes:
                    process.kill()
                raise TimeoutError(f"the DDP workers did not finish in {DDP_DEADLINE_S} s")
        reaped = []
        for pid in pids:
            try:
                os.waitpid(pid, os.WNOHANG)
                reaped.append(False)
            except ChildProcessError:
                reaped.append(True)
        record = {
            "results": dist_workers.collect_results(folder / "ranks"),
            "exitcodes": [p.exitcode for p in context.processes],
            "alive": [p.is_alive() for p in context.processes],
            "reaped": reaped,
            "parent_in_group": dist.is_initialized(),
        }
        (folder / "run.json").write_text(json.dumps(record, indent=1), encoding="utf-8")

    folder = once_per_run(request, "ddp", "ddp_train_step-2x2", make)
    return json.loads((folder / "run.json").read_text(encoding="utf-8"))


@pytest.fixture(autouse=True)
def _no_language_left_behind():
    """Each test starts with no notebook language declared (a test that sets one cannot leak it into the
    next test on the same worker, whose English assertions would then read Chinese messages)."""
    from devicekit.lang import set_language

    set_language(None)
    yield
    set_language(None)
