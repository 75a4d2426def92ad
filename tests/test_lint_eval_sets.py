"""The frozen outsider evaluation sets for devicekit-lint and their one scorer (issue 43, "Measures").

``benchmarks/lint_eval_score.py`` scores every set in its ``SETS``; each set's ``score.py`` is a thin entry
point. Running the linter on the sets is a benchmark, not a test: these check that every frozen set is what
its README promises (size, scenarios, sources no other set uses, hashes that match its manifest), that each
entry point reaches the scorer, and that the scorer counts the way its docstring says, with a stand-in
linter. They never run the real linter.
"""

from __future__ import annotations

import importlib.util
import json
import re
import runpy
import shutil
import stat
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
_URL = re.compile(r"https://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/\d+")


def _load_score():
    spec = importlib.util.spec_from_file_location("lint_eval_score", BENCH / "lint_eval_score.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


score = _load_score()

# The benchmark folders each set promised (in its README) to share no source with. The first outsider set
# promised it only for the team's own set: it shares three sources with dryrun_eval, built later.
AVOIDS = {
    "outsider": ("lint_eval",),
    "fresh": ("lint_eval", "lint_eval_outsider", "dryrun_eval"),
    "third": ("lint_eval", "lint_eval_outsider", "lint_eval_fresh", "dryrun_eval"),
    "fourth": ("lint_eval", "lint_eval_outsider", "lint_eval_fresh", "lint_eval_third", "dryrun_eval"),
}
# Scenarios a set's README says it has fewer than two cases of, with the count it states.
SHORTFALLS = {"third": {6: 1}, "fourth": {6: 1, 12: 1, 13: 1}}
SET_KEYS = sorted(score.SETS)
MANIFEST_KEYS = [k for k in SET_KEYS if score.SETS[k].manifest]


def test_every_set_is_in_the_table_of_promises_and_has_its_entry_point():
    assert sorted(AVOIDS) == SET_KEYS
    for key in SET_KEYS:
        assert (score.SETS[key].root / "score.py").is_file()
        assert (score.SETS[key].root / "README.md").is_file()


def _case(bug_lines: dict[str, tuple[int, ...]]):
    return score.Case(
        "000-x", Path("."), "https://github.com/a/b/issues/1", 1, tuple(bug_lines), bug_lines, "w"
    )


@pytest.mark.parametrize("key", SET_KEYS)
def test_a_frozen_set_has_at_least_40_cases_and_2_per_scenario_but_its_stated_shortfalls(key):
    cases = score.load_cases(score.SETS[key].root)
    assert len(cases) >= 40
    per = Counter(c.scenario for c in cases)
    assert {s: per[s] for s in range(1, 16) if per[s] < 2} == SHORTFALLS.get(key, {})


@pytest.mark.parametrize("key", SET_KEYS)
def test_no_case_comes_from_a_source_of_a_set_it_promised_to_avoid(key):
    others = set()
    for name in AVOIDS[key]:
        for path in (BENCH / name).rglob("*"):
            if path.is_file() and path.suffix in {".json", ".md", ".py"}:
                others |= set(_URL.findall(path.read_text(encoding="utf-8", errors="replace")))
    assert len(others) > 20, "the other sets name their sources"
    assert [c.name for c in score.load_cases(score.SETS[key].root) if c.source in others] == []


@pytest.mark.parametrize("key", MANIFEST_KEYS)
def test_the_manifest_lists_every_case_file_with_its_current_hash(key):
    root = score.SETS[key].root
    score.check_manifest(root)  # raises on any difference
    listed = [line.split("  ", 1)[1] for line in (root / score.MANIFEST).read_text().splitlines()]
    assert listed == score.case_files(root)
    assert {rel.split("/", 1)[0] for rel in listed} == {c.name for c in score.load_cases(root)}


def _copy_set(tmp_path: Path, key: str = "fresh", cases: int = 2) -> Path:
    """A copy of the first ``cases`` case folders of a set, with a manifest written for them."""
    source_root = score.SETS[key].root
    root = tmp_path / "set"
    root.mkdir()
    for source in sorted(p for p in source_root.iterdir() if p.is_dir() and p.name[:1].isdigit())[:cases]:
        shutil.copytree(source, root / source.name)
    score.write_manifest(root)
    return root


def _first_py(root: Path) -> Path:
    return sorted(root.rglob("*.py"))[0]


@pytest.mark.parametrize(
    ("damage", "named"),
    [
        (lambda r: _first_py(r).write_text(_first_py(r).read_text() + "\n# edited\n"), "(changed)"),
        (
            lambda r: (next(r.glob("0*")) / "buggy" / "extra.py").write_text("x = 1\n"),
            "extra.py (not listed)",
        ),
        (lambda r: _first_py(r).unlink(), "(missing)"),
        (lambda r: (r / score.MANIFEST).write_text("not a manifest line\n"), "line 1"),
        (lambda r: (r / score.MANIFEST).unlink(), "cannot be read"),
    ],
    ids=["edited", "added", "deleted", "malformed", "absent"],
)
def test_an_edit_to_a_frozen_set_is_refused_in_both_languages_and_changes_nothing(tmp_path, damage, named):
    root = _copy_set(tmp_path)
    score.check_manifest(root)  # the untouched copy passes
    damage(root)
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    with pytest.raises(score.CaseError) as info:
        score.check_manifest(root)
    assert named in info.value.en
    assert score.MANIFEST in info.value.zh and info.value.en != info.value.zh
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before


def test_a_crlf_checkout_is_not_an_edit(tmp_path):
    root = _copy_set(tmp_path, cases=1)
    path = _first_py(root)
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    score.check_manifest(root)


def test_a_finding_counts_within_one_line_of_a_bug_line_in_that_file_only():
    case = _case({"a.py": (10,), "pkg/b.py": (3, 30)})
    assert score.bug_found(case, [score.Finding("a.py", 11, "DK1")])
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


@pytest.mark.skipif(sys.platform == "win32", reason="the stand-in linter is a shell script")
@pytest.mark.parametrize("key", SET_KEYS)
def test_a_case_is_found_and_its_twin_silent_with_a_stand_in_that_knows_the_bug_lines(tmp_path, key):
    case = score.load_cases(score.SETS[key].root, only=["001"])[0]
    rel, lines = next(iter(case.bug_lines.items()))
    hit = json.dumps([{"path": str(case.folder / "buggy" / rel), "line": lines[0], "code": "DK001"}])
    outcome = score.Outcome(
        case, buggy=score.run_linter(case.folder / "buggy", _fake_python(tmp_path, hit, 1))
    )
    outcome.fixed = score.run_linter(case.folder / "fixed", _fake_python(tmp_path, "[]", 0))
    assert outcome.found and outcome.silent
    outcome = score.evaluate(case, _fake_python(tmp_path, hit, 1), 30.0)  # its path lies outside fixed/
    assert outcome.error and not outcome.found and not outcome.silent


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


def _copy_case(tmp_path: Path, key: str) -> Path:
    source = next(p for p in sorted(score.SETS[key].root.iterdir()) if p.name.startswith("001-"))
    target = tmp_path / source.name
    shutil.copytree(source, target)
    return target


def _listed(folder: Path) -> str:
    """The first file the case's case.json lists (a path inside buggy/ and fixed/)."""
    return json.loads((folder / "case.json").read_text())["files"][0]


def _edit_json(folder: Path, **changes) -> None:
    data = json.loads((folder / "case.json").read_text())
    data.update(changes)
    (folder / "case.json").write_text(json.dumps(data))


@pytest.mark.parametrize("key", SET_KEYS)
@pytest.mark.parametrize(
    "damage",
    [
        lambda f: _edit_json(f, scenario=16),
        lambda f: _edit_json(f, source="https://example.com/x"),
        lambda f: _edit_json(f, why=""),
        lambda f: _edit_json(f, extra=1),
        lambda f: _edit_json(f, bug_lines={_listed(f): [9999]}),
        lambda f: _edit_json(f, bug_lines={"other.py": [1]}),
        lambda f: (f / "fixed" / _listed(f)).unlink(),
        lambda f: (f / "buggy" / _listed(f)).write_text("def broken(:\n"),
        lambda f: (f / "case.json").write_text("{not json"),
    ],
    ids=["scenario", "source", "why", "extra-key", "line", "file", "twin-missing", "syntax", "json"],
)
def test_a_malformed_case_is_refused_in_both_languages_and_left_alone(tmp_path, damage, key):
    folder = _copy_case(tmp_path, key)
    damage(folder)
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    with pytest.raises(score.CaseError) as info:
        score.load_case(folder)
    assert folder.name in info.value.en and folder.name in info.value.zh
    assert info.value.en != info.value.zh
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before


def _run_entry_point(key: str, argv: list[str], monkeypatch) -> int:
    """Run ``benchmarks/<set>/score.py`` as a script in this process and return its exit status."""
    monkeypatch.setattr(sys, "argv", ["score.py", *argv])
    monkeypatch.setattr(sys, "path", list(sys.path))  # the entry point adds benchmarks/ to it
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(score.SETS[key].root / "score.py"), run_name="__main__")
    return done.value.code


@pytest.mark.parametrize("key", SET_KEYS)
def test_each_sets_entry_point_checks_that_set_without_running_the_linter(key, capsys, monkeypatch):
    monkeypatch.setenv("DEVICEKIT_LANG", "en")  # the report follows the reader's language; read it in English
    count = len(score.load_cases(score.SETS[key].root))
    assert _run_entry_point(key, ["--check"], monkeypatch) == 0
    out = capsys.readouterr().out
    assert f"{count} cases, all well-formed" in out
    assert ("every hash in MANIFEST.sha256 matches" in out) == score.SETS[key].manifest
    assert _run_entry_point(key, ["--check", "--case", "999"], monkeypatch) == 2
    assert "no case matches 999" in capsys.readouterr().err


def test_the_shared_scorer_needs_a_set_and_scores_the_one_named(capsys, monkeypatch):
    monkeypatch.setenv("DEVICEKIT_LANG", "en")
    with pytest.raises(SystemExit):
        score.main(["--check"])  # no --set: a usage error
    assert "--set" in capsys.readouterr().err
    assert score.main(["--set", "outsider", "--check"]) == 0
    assert "45 cases, all well-formed\n" in capsys.readouterr().out


def test_check_mode_refuses_an_edited_set_with_a_manifest(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("DEVICEKIT_LANG", "en")
    root = _copy_set(tmp_path)
    edited = _first_py(root)
    edited.write_text(edited.read_text() + "\n# edited\n")  # still a well-formed case
    copy = score.EvalSet("copy", root, True, score.SETS["fresh"].title)
    assert score.main(["--check"], evalset=copy) == 2
    assert "the frozen set was edited" in capsys.readouterr().err
    unchecked = score.EvalSet("copy", root, False, score.SETS["fresh"].title)
    assert score.main(["--check"], evalset=unchecked) == 0  # a set without a manifest skips the hashes
