"""The outsider-built evaluation set for devicekit-lint (benchmarks/lint_eval_outsider, issue 43).

The benchmark itself (running the linter on 90 folders) is not a test; these check that the frozen set is
what its README promises and that score.py counts the way its docstring says, with a stand-in linter.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import stat
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SET = ROOT / "benchmarks" / "lint_eval_outsider"


def _load_score():
    spec = importlib.util.spec_from_file_location("lint_eval_outsider_score", SET / "score.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


score = _load_score()


def _case(bug_lines: dict[str, tuple[int, ...]]):
    return score.Case(
        "000-x", Path("."), "https://github.com/a/b/issues/1", 1, tuple(bug_lines), bug_lines, "w"
    )


def test_the_frozen_set_has_at_least_40_cases_and_2_per_scenario():
    cases = score.load_cases()
    assert len(cases) >= 40
    per = Counter(c.scenario for c in cases)
    assert {s: per[s] for s in range(1, 16) if per[s] < 2} == {}


def test_no_case_comes_from_a_source_of_the_teams_own_set():
    own = set()
    for path in (ROOT / "benchmarks" / "lint_eval").rglob("*"):
        if path.is_file():
            own |= set(
                re.findall(r"https://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/\d+", path.read_text())
            )
    assert own, "the team's set names its sources"
    assert [c.name for c in score.load_cases() if c.source in own] == []


def test_a_finding_counts_within_one_line_of_a_bug_line_in_that_file_only():
    case = _case({"a.py": (10,), "pkg/b.py": (3, 30)})
    hit = score.Finding("a.py", 11, "DK1")
    assert score.bug_found(case, [hit])
    assert score.bug_found(case, [score.Finding("pkg/b.py", 29, "DK1")])
    assert not score.bug_found(case, [score.Finding("a.py", 12, "DK1")])  # two lines away
    assert not score.bug_found(case, [score.Finding("pkg/b.py", 10, "DK1")])  # the line of another file
    assert not score.bug_found(case, [score.Finding("c.py", 10, "DK1")])
    assert not score.bug_found(case, [])


def test_findings_get_paths_relative_to_the_linted_folder(tmp_path):
    (tmp_path / "pkg").mkdir()
    out = json.dumps(
        [
            {"path": str(tmp_path / "pkg" / "m.py"), "line": 4, "code": "DK003"},
            {"path": "top.py", "line": 1, "code": "DK001", "cell": None},
        ]
    )
    assert score.parse_findings(out, tmp_path) == [
        score.Finding("pkg/m.py", 4, "DK003"),
        score.Finding("top.py", 1, "DK001"),
    ]
    with pytest.raises(ValueError):
        score.parse_findings(json.dumps([{"path": "/elsewhere/x.py", "line": 1}]), tmp_path)
    with pytest.raises(ValueError):
        score.parse_findings(json.dumps({"path": "x.py"}), tmp_path)


def _fake_python(tmp_path: Path, stdout: str, status: int) -> str:
    """An executable that ignores its arguments, prints ``stdout`` and exits with ``status``."""
    script = tmp_path / "fake-python"
    script.write_text(f"#!/bin/sh\ncat <<'EOF'\n{stdout}\nEOF\nexit {status}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


@pytest.mark.skipif(sys.platform == "win32", reason="the stand-in linter is a shell script")
def test_run_linter_reads_the_json_of_exit_0_and_1_and_rejects_anything_else(tmp_path):
    folder = tmp_path / "buggy"
    folder.mkdir()
    findings = json.dumps([{"path": str(folder / "m.py"), "line": 2, "code": "DK005"}])
    assert score.run_linter(folder, _fake_python(tmp_path, findings, 1)) == [
        score.Finding("m.py", 2, "DK005")
    ]
    assert score.run_linter(folder, _fake_python(tmp_path, "[]", 0)) == []
    with pytest.raises(RuntimeError, match="exit status 2"):
        score.run_linter(folder, _fake_python(tmp_path, "usage", 2))
    with pytest.raises(RuntimeError, match="unexpected output"):
        score.run_linter(folder, _fake_python(tmp_path, "not json", 1))


def test_a_failed_run_is_neither_found_nor_silent():
    case = _case({"a.py": (1,)})
    outcomes = [
        score.Outcome(case, buggy=[score.Finding("a.py", 1, "DK1")], fixed=[]),
        score.Outcome(case, buggy=[score.Finding("a.py", 1, "DK1")], fixed=[], error="boom"),
        score.Outcome(case, buggy=[], fixed=[score.Finding("a.py", 5, "DK2")]),
    ]
    summary = score.summarise(outcomes)
    assert (summary["cases"], summary["found"], summary["silent"], summary["errors"]) == (3, 1, 1, 1)
    assert summary["per_scenario"] == {1: {"cases": 3, "found": 1, "silent": 1}}


def _copy_case(tmp_path: Path) -> Path:
    source = next(p for p in sorted(SET.iterdir()) if p.name.startswith("001-"))
    target = tmp_path / source.name
    shutil.copytree(source, target)
    return target


def _edit_json(folder: Path, **changes) -> None:
    data = json.loads((folder / "case.json").read_text())
    data.update(changes)
    (folder / "case.json").write_text(json.dumps(data))


@pytest.mark.parametrize(
    "damage",
    [
        lambda f: _edit_json(f, scenario=16),
        lambda f: _edit_json(f, source="https://example.com/x"),
        lambda f: _edit_json(f, why=""),
        lambda f: _edit_json(f, extra=1),
        lambda f: _edit_json(f, bug_lines={"quickstart.py": [9999]}),
        lambda f: _edit_json(f, bug_lines={"other.py": [1]}),
        lambda f: (f / "fixed" / "quickstart.py").unlink(),
        lambda f: (f / "buggy" / "quickstart.py").write_text("def broken(:\n"),
        lambda f: (f / "case.json").write_text("{not json"),
    ],
    ids=["scenario", "source", "why", "extra-key", "line", "file", "twin-missing", "syntax", "json"],
)
def test_a_malformed_case_is_refused_in_both_languages_and_left_alone(tmp_path, damage):
    folder = _copy_case(tmp_path)
    damage(folder)
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    with pytest.raises(score.CaseError) as info:
        score.load_case(folder)
    assert folder.name in info.value.en and folder.name in info.value.zh
    assert info.value.en != info.value.zh
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before


def test_check_mode_validates_the_set_without_running_the_linter(capsys):
    assert score.main(["--check"]) == 0
    assert re.search(r"\d+ cases, all well-formed", capsys.readouterr().out)
    assert score.main(["--check", "--case", "999"]) == 2
