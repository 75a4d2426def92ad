"""pytest plugin (loaded with ``-p xdist_scheduling``): under ``make test`` (xdist, ``--dist loadfile``) the
test files that share an artifact made once per run (`conftest.once_per_run`: a snapshot site build, the
graded class, the two-process DDP run) run on one worker, one after another.

With plain ``loadfile`` they land on whichever worker is free, and the second one to need the artifact
waits on the first one's lock doing nothing: up to a site build (~110 s) or the graded class (~400 s on a
busy 2-core machine) of one worker's time, more or less at random. Every other file is its own unit, as
with ``loadfile``. `tests/test_xdist_scheduling.py` checks that `SHARED` names every file using those
fixtures.
"""

from __future__ import annotations

import pytest

#: {unit: test files (relative to the repository) that request a fixture made by `conftest.once_per_run`}
SHARED: dict[str, tuple[str, ...]] = {
    "site builds": tuple(
        f"tests/{name}.py"
        for name in (
            "test_browser",
            "test_grade_site",
            "test_links",
            "test_lint_browser",
            "test_site",
            "test_site_downloads_and_reference",
        )
    ),  # fmt: skip
    "graded class": ("tests/test_grade.py", "tests/test_grade_judged.py"),
    "ddp run": ("tests/test_distributed.py", "tests/test_lab08.py"),
}
#: The fixtures of `tests/conftest.py` whose artifact is made once per run.
SHARED_FIXTURES = ("site", "site_full", "site_students", "site_students_repo", "graded_class", "ddp_run")
UNIT_OF = {path: unit for unit, paths in SHARED.items() for path in paths}


def unit_of(nodeid: str) -> str:
    """The scheduling unit of a test: its file's shared unit, else its file (as ``--dist loadfile``)."""
    path = nodeid.split("::", 1)[0]
    return UNIT_OF.get(path, path)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SharedArtifactScheduling(LoadFileScheduling):
        """``loadfile``, with the files of one `SHARED` unit as one unit."""

        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    return SharedArtifactScheduling(config, log)
