"""The GitHub Actions workflows: valid for GitHub, clean for zizmor, and doing what the course needs.

A broken workflow is only noticed on GitHub, after a push; these checks run offline, with every test run:
check-jsonschema's bundled GitHub-workflow schema (``vendor.github-workflows``, no download) and zizmor's
offline audits (unpinned actions, credentials left in the checkout, template injection, excessive
permissions, ...). Both come with the ``test`` extra, so a missing tool is a failure, not a skip. Each tool
is also shown a bad workflow, so a tool that silently audits nothing cannot pass.

The remaining tests pin down the decisions the workflows carry: actions pinned by commit SHA, checkouts
without persisted credentials, least-privilege permissions, the CPU matrix, the GPU runner, Pages.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from course_tools import torch_versions
from course_tools.paths import ROOT

WORKFLOWS = ROOT / ".github" / "workflows"
EXPECTED = {"tests.yml", "gpu.yml", "pages.yml"}
USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(\S+)(.*)$", re.MULTILINE)
PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")
VERSION_COMMENT = re.compile(r"^\s+# v\d+(\.\d+)*\b")


SCHEMA = ["--builtin-schema", "vendor.github-workflows"]
ZIZMOR = ["--offline", "--no-progress", "--format", "plain"]


def _tool(name: str) -> str:
    """The executable next to this interpreter (the venv's), else on PATH; fail if there is none."""
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed; it is part of the test extra: pip install -e '.[test]'")
    return found


def _run(cmd: list[str], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("GH_TOKEN", None)  # offline means offline, also where a token happens to be set
    env.pop("GITHUB_TOKEN", None)
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def _files() -> list[Path]:
    return sorted(WORKFLOWS.glob("*.yml")) + sorted(WORKFLOWS.glob("*.yaml"))


def _load(name: str) -> dict:
    data = yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as True
    return data


def _steps(workflow: dict) -> list[dict]:
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


def _runs(workflow: dict) -> str:
    return "\n".join(step.get("run", "") for step in _steps(workflow))


BAD_WORKFLOW = """\
name: bad
on: pull_request_target
jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
        with:
          ref: ${{ github.event.pull_request.head.sha }}
      - run: echo "${{ github.event.pull_request.title }}"
"""


def test_the_workflows_exist():
    assert EXPECTED <= {p.name for p in _files()}


@pytest.mark.integration
def test_workflows_match_githubs_schema():
    done = _run([_tool("check-jsonschema"), *SCHEMA, *map(str, _files())])
    print(done.stdout, done.stderr)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.integration
def test_the_schema_check_rejects_a_broken_workflow(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text("name: broken\non: push\njobs:\n  build:\n    steps: 5\n", encoding="utf-8")
    done = _run([_tool("check-jsonschema"), *SCHEMA, str(broken)])
    assert done.returncode != 0, done.stdout


@pytest.mark.integration
def test_zizmor_offline_finds_nothing():
    done = _run([_tool("zizmor"), *ZIZMOR, str(WORKFLOWS)])
    print(done.stdout, done.stderr)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.integration
def test_zizmor_catches_a_bad_workflow(tmp_path):
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    (folder / "bad.yml").write_text(BAD_WORKFLOW, encoding="utf-8")
    done = _run([_tool("zizmor"), *ZIZMOR, str(folder)], cwd=tmp_path)
    assert done.returncode != 0
    for audit in ("unpinned-uses", "artipacked", "template-injection", "dangerous-triggers"):
        assert audit in done.stdout, f"zizmor did not report {audit}:\n{done.stdout}"


def test_actions_are_pinned_by_full_sha_with_the_version_in_a_comment():
    seen: dict[str, set[str]] = {}
    for path in _files():
        for ref, rest in USES.findall(path.read_text(encoding="utf-8")):
            assert PINNED.match(ref), f"{path.name}: {ref} is not pinned to a 40-hex commit SHA"
            assert VERSION_COMMENT.match(rest), f"{path.name}: {ref} lacks its `# vX.Y.Z` comment"
            action, sha = ref.split("@")
            seen.setdefault(action, set()).add(sha)
    mixed = {action: shas for action, shas in seen.items() if len(shas) > 1}
    assert not mixed, f"one action, several commits (update them together): {mixed}"


def test_checkouts_do_not_keep_credentials():
    for path in _files():
        for step in _steps(_load(path.name)):
            if step.get("uses", "").startswith("actions/checkout@"):
                assert step.get("with", {}).get("persist-credentials") is False, path.name


def test_permissions_are_least_privilege():
    """Every workflow sets permissions; only the Pages deploy job may write (pages, id-token)."""
    for path in _files():
        workflow = _load(path.name)
        assert "permissions" in workflow, f"{path.name} has no top-level permissions"
        scopes = [("workflow", workflow["permissions"])]
        scopes += [(name, job.get("permissions", {})) for name, job in workflow["jobs"].items()]
        for where, permissions in scopes:
            assert isinstance(permissions, dict), f"{path.name} {where}: use a mapping, not {permissions!r}"
            writes = {scope for scope, level in permissions.items() if level == "write"}
            allowed = {"pages", "id-token"} if (path.name, where) == ("pages.yml", "deploy") else set()
            assert writes <= allowed, f"{path.name} {where} writes {writes - allowed}"


def test_cpu_tests_cover_linux_and_macos_on_python_310_to_313():
    workflow = _load("tests.yml")
    jobs = {name: job for name, job in workflow["jobs"].items() if name != "versions"}
    assert {job["runs-on"] for job in jobs.values()} == {"ubuntu-latest", "macos-latest"}
    for job in jobs.values():
        assert job["strategy"]["matrix"]["python"] == ["3.10", "3.11", "3.12", "3.13"]
        assert any(step.get("run", "").strip() == "make test" for step in job["steps"])
    linux = next(job for job in jobs.values() if job["runs-on"] == "ubuntu-latest")
    assert linux["env"]["DEVICEKIT_REQUIRE_BROWSER"] == "1"
    assert "chromium fonts-noto-cjk" in _runs({"jobs": {"linux": linux}})
    macos = next(job for job in jobs.values() if job["runs-on"] == "macos-latest")
    setup = next(s for s in macos["steps"] if s.get("uses", "").startswith("actions/setup-python@"))
    assert setup["with"]["cache"] == "pip" and setup["with"]["cache-dependency-path"] == "pyproject.toml"
    assert "pull_request" in workflow["on"]


def test_every_ci_run_of_make_test_runs_the_chinese_notebooks_too():
    """Locally nbval skips a Chinese twin whose code is the English one's (tests/nbval_checks.py); CI not."""
    jobs = [*_load("tests.yml")["jobs"].values(), _load("pages.yml")["jobs"]["build"]]
    for job in jobs:
        if "make test" in _runs({"jobs": {"job": job}}):
            assert job.get("env", {}).get("DEVICEKIT_NBVAL_ALL") == "1", job.get("name")
    assert "export DEVICEKIT_NBVAL_ALL=1" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_the_suite_runs_on_the_floor_the_pinned_release_and_the_newest_torch():
    """The versions the Makefile names are the ones CI tests: the floor (outputs not compared), the pinned
    release (outputs compared: they come from it), and the newest the range admits (the plain `make test` of
    the linux and macos jobs, whose TORCH_SPEC is the Makefile's)."""
    workflow = _load("tests.yml")
    job = workflow["jobs"]["versions"]
    matrix = {entry["role"]: entry for entry in job["strategy"]["matrix"]["include"]}
    assert set(matrix) == {"floor", "pinned"}
    assert matrix["floor"]["torch"] == f"{torch_versions.floor()}.*"
    assert matrix["floor"]["pytest-args"] == "--nbval-lax"
    assert matrix["pinned"]["torch"] == f"{torch_versions.pinned()}.*"
    assert matrix["pinned"]["pytest-args"] == "", "the stored outputs come from the pinned release"
    assert job["env"]["TORCH_VERSION"] == "${{ matrix.torch }}"
    assert 'make test TORCH_SPEC="torch==$TORCH_VERSION" PYTEST_ARGS="$NBVAL_ARGS"' in _runs(
        {"jobs": {"v": job}}
    )
    newest = [j for name, j in workflow["jobs"].items() if name != "versions"]
    for other in newest:
        assert "TORCH_SPEC" not in _runs({"jobs": {"j": other}}) + str(other.get("env", {})), (
            "newest: the range"
        )
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert f'dependencies = ["torch>={torch_versions.floor()}", ' in pyproject, (
        "pyproject and Makefile disagree"
    )


def test_every_workflow_that_installs_torch_uses_the_courses_range():
    """A `pip install "torch..."` in a workflow installs the Makefile's range, not a copy that drifts."""
    spec = torch_versions.course_spec()
    for path in _files():
        for found in re.findall(r'pip install "(torch[<>=][^"]*)"', path.read_text(encoding="utf-8")):
            assert found == spec, f"{path.name} installs {found}, the course's range is {spec} (Makefile)"


def test_gpu_workflow_runs_gpu_check_on_the_gpu_runner_and_keeps_the_result():
    workflow = _load("gpu.yml")
    assert not {"pull_request", "pull_request_target"} & set(workflow["on"]), "forks must not reach our GPU"
    (job,) = workflow["jobs"].values()
    assert job["runs-on"] == ["self-hosted", "gpu"]
    assert "scripts/gpu-check" in _runs(workflow)
    upload = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["with"]["path"] == "results/gpu-check.json" and upload["if"] == "always()"


def test_pages_tests_then_builds_deploys_and_keeps_the_students_site():
    workflow = _load("pages.yml")
    assert workflow["on"]["push"]["branches"] == ["main"]
    assert workflow["concurrency"]["cancel-in-progress"] is False
    build, deploy = workflow["jobs"]["build"], workflow["jobs"]["deploy"]
    runs = [step.get("run", "").split("#")[0].strip() for step in build["steps"]]
    assert runs.index("make test") < runs.index("make build") < runs.index("make students")
    uses = [step.get("uses", "").split("@")[0] for step in build["steps"]]
    assert "actions/upload-pages-artifact" in uses and "actions/upload-artifact" in uses
    students = next(s for s in build["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert students["with"]["path"] == "site-students"
    assert deploy["needs"] == "build" and deploy["environment"]["name"] == "github-pages"
    assert [s["uses"].split("@")[0] for s in deploy["steps"]] == ["actions/deploy-pages"]


@pytest.mark.parametrize("script", ["gpu-check", "prepare-gpu-wheels"])
def test_the_scripts_the_workflows_call_are_executable(script):
    path = ROOT / "scripts" / script
    assert os.access(path, os.X_OK), f"chmod +x scripts/{script}"
    assert path.read_text(encoding="utf-8").startswith("#!/usr/bin/env python3\n")
