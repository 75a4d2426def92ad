"""The frozen real-bug set for the dry run (benchmarks/dryrun_eval, issue 38) and its scorer.

The set is checked for shape (every case complete, every scenario of the course's list present, each
bug_line pointing at the recorded code) and for truth: each case's expected key phrase must be in the
CUDA message recorded on a GPU for the case its evidence names (results/cuda-messages.json), or, where no
recorded case raises (DataParallel with two GPUs), in the PyTorch source that raises it. The scorer is run
end to end against a stand-in dry-run module written here (it runs the script and prints the traceback),
since devicekit.dryrun is another engineer's work.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from course_tools.paths import ROOT

EVAL = ROOT / "benchmarks" / "dryrun_eval"
CASES = sorted(p for p in EVAL.iterdir() if p.is_dir() and re.match(r"\d\d-", p.name))
RECORDED = json.loads((ROOT / "results" / "cuda-messages.json").read_text(encoding="utf-8"))["cases"]


def _score_module():
    spec = importlib.util.spec_from_file_location("dryrun_eval_score", EVAL / "score.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


score = _score_module()


def _case(folder: Path) -> dict:
    return json.loads((folder / "case.json").read_text(encoding="utf-8"))


def test_the_set_has_at_least_36_cases_and_covers_all_15_scenarios():
    assert len(CASES) >= 36
    assert {_case(p)["scenario"] for p in CASES} == set(range(1, 16))
    assert {_case(p)["gpus"] for p in CASES} == {1, 2}


@pytest.mark.parametrize("folder", CASES, ids=[p.name for p in CASES])
def test_each_case_is_complete_and_its_bug_line_is_the_recorded_code(folder):
    case = score.load_case(folder)  # raises on a missing field or script
    data = _case(folder)
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+", data["source"])
    bug = (folder / "bug.py").read_text(encoding="utf-8")
    fixed = (folder / "fixed.py").read_text(encoding="utf-8")
    assert data["source"] in bug and data["source"] in fixed
    assert bug.splitlines()[case.bug_line - 1].strip() == data["bug_code"]
    assert bug != fixed
    assert data["expect"]["type"] in {"RuntimeError", "TypeError", "ValueError"}
    # the device is picked the way real code picks it, so the script runs unchanged under a simulated GPU
    assert "torch.cuda.is_available()" in bug or "torch.cuda.device_count()" in bug


@pytest.mark.parametrize("folder", CASES, ids=[p.name for p in CASES])
def test_each_expected_phrase_is_what_cuda_or_pytorch_prints(folder):
    expect = _case(folder)["expect"]
    named = re.search(r"results/cuda-messages\.json case ([\w-]+)", expect["evidence"])
    assert named, "the evidence names a recorded case"
    recorded = RECORDED[named.group(1)]
    if recorded["raised"]:
        assert recorded["type"] == f"builtins.{expect['type']}"
        assert expect["phrase"] in recorded["message"]
    else:
        # DataParallel with a CPU module raised nothing on the one-GPU H200; the text is DataParallel's own
        from torch.nn.parallel import DataParallel

        assert named.group(1) == "data-parallel-module-on-cpu"
        assert _case(folder)["gpus"] == 2
        source = inspect.getsource(DataParallel.forward)
        assert '"module must have its parameters and buffers "' in source
        assert 'f"on device {self.src_device_obj} (device_ids[0]) but found one of "' in source
        # src_device_obj is cuda:<device_ids[0]>, and device_ids[0] is 0 in both cases
        assert (
            expect["phrase"] == "module must have its parameters and buffers on device cuda:0 (device_ids[0])"
        )


@pytest.mark.parametrize(
    ("output", "line", "named"),
    [
        ('File "/tmp/x/bug.py", line 25, in forward', 25, True),
        ("bug.py:25: RuntimeError", 25, True),
        ("at bug.py:25", 25, True),
        ('File "/tmp/x/bug.py", line 250, in forward', 25, False),
        ("bug.py:2", 25, False),
        ("bug.py:255", 25, False),
        ("inline 25", 25, False),
        ("", 1, False),
    ],
)
def test_the_location_is_read_as_bug_py_colon_line_or_line_n(output, line, named):
    assert score.names_line(output, line) is named


def test_a_case_json_without_its_fields_is_refused_in_both_languages(tmp_path):
    folder = tmp_path / "01-broken"
    folder.mkdir()
    (folder / "case.json").write_text('{"source": "https://github.com/a/b/issues/1"}', encoding="utf-8")
    with pytest.raises(ValueError) as info:
        score.load_case(folder)
    assert info.value.en == "01-broken/case.json: missing fields: scenario, gpus, bug_line, expect, notes"
    assert info.value.zh == "01-broken/case.json：缺少字段：scenario、gpus、bug_line、expect、notes"


STAND_IN = textwrap.dedent(
    """
    # stand-in for devicekit.dryrun's interface: --gpus N script.py; exit 1 with the traceback on an error
    import runpy, sys, traceback
    assert sys.argv[1] == "--gpus" and sys.argv[2] in ("1", "2")
    script = sys.argv[3]
    sys.argv = [script]
    try:
        runpy.run_path(script, run_name="__main__")
    except Exception:
        traceback.print_exc()
        sys.exit(1)
    """
)


def _tiny_set(root: Path) -> None:
    """Three cases: one caught at its line, one raising at another line, one whose twin is not clean."""
    specs = {
        "01-caught": (
            "x = 1\nraise RuntimeError('Expected all tensors to be on the same device')\n",
            2,
            "x = 1\n",
        ),
        "02-wrong-line": ("raise RuntimeError('boom')\n", 5, "pass\n"),
        "03-twin-fails": ("import sys\nsys.exit(1)\n", 2, "import sys\nsys.exit(3)\n"),
    }
    for name, (bug, line, fixed) in specs.items():
        folder = root / name
        folder.mkdir()
        (folder / "bug.py").write_text(bug, encoding="utf-8")
        (folder / "fixed.py").write_text(fixed, encoding="utf-8")
        case = {
            "source": "https://github.com/a/b/issues/1",
            "scenario": 1,
            "gpus": 1,
            "bug_line": line,
            "expect": {"type": "RuntimeError", "phrase": "Expected all tensors to be on the same device"},
            "notes": "",
        }
        (folder / "case.json").write_text(json.dumps(case), encoding="utf-8")


@pytest.mark.integration
def test_the_scorer_end_to_end_against_a_stand_in_dry_run(tmp_path, monkeypatch, capsys):
    (tmp_path / "standin_dryrun.py").write_text(STAND_IN, encoding="utf-8")
    cases = tmp_path / "cases"
    cases.mkdir()
    _tiny_set(cases)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("DEVICEKIT_LANG", "en")
    out_json = tmp_path / "rows.json"
    args = ["--root", str(cases), "--module", "standin_dryrun", "--timeout", "60", "--json", str(out_json)]
    assert score.main(args) == 1  # 1 of 3 caught, 2 of 3 clean: goals missed
    rows = {r["case"]: r for r in json.loads(out_json.read_text(encoding="utf-8"))}
    assert rows["01-caught"]["bug_status"] == 1 and rows["01-caught"]["line_named"]
    assert rows["01-caught"]["phrase_seen"] and rows["01-caught"]["fixed_status"] == 0
    assert rows["02-wrong-line"]["bug_status"] == 1 and not rows["02-wrong-line"]["line_named"]
    assert rows["03-twin-fails"]["fixed_status"] == 3
    printed = capsys.readouterr().out
    assert "bugs caught at their line: 1/3 = 33.3% (goal >= 90%)" in printed
    assert "fixed twins clean: 2/3 = 66.7% (goal >= 95%)" in printed
    assert "02-wrong-line: bug.py exited with 1 but the output does not name line 5" in printed
    assert "03-twin-fails: fixed.py exited with 3, not 0" in printed
    # the set itself is never written: the runs happen in copies
    assert sorted(p.name for p in (cases / "01-caught").iterdir()) == ["bug.py", "case.json", "fixed.py"]

    assert score.main(["--root", str(cases), "--module", "standin_dryrun", "--only", "01"]) == 0


@pytest.mark.integration
def test_the_scorer_says_so_and_exits_2_when_the_dry_run_module_does_not_exist(capsys):
    assert score.main(["--module", "devicekit.no_such_dryrun_module"]) == 2
    err = capsys.readouterr().err
    assert "devicekit.no_such_dryrun_module does not exist yet" in err
    assert "devicekit.no_such_dryrun_module 尚不存在" in err


@pytest.mark.integration
def test_a_case_runs_clean_on_the_cpu_with_cuda_hidden(capsys):
    # the whole set: score.py --cpu-check (about 7 minutes on 2 cores); here one case, both twins
    assert score.main(["--cpu-check", "--only", "01"]) == 0
    assert "01-meta-target-not-moved" in capsys.readouterr().out


def _gpu_check_module(monkeypatch):
    monkeypatch.syspath_prepend(str(EVAL))  # gpu_check imports score by name, as when run as a script
    spec = importlib.util.spec_from_file_location("dryrun_eval_gpu_check", EVAL / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.integration
def test_the_gpu_check_reads_the_innermost_bug_py_frame_of_a_real_traceback(tmp_path, monkeypatch):
    gpu_check = _gpu_check_module(monkeypatch)
    script = tmp_path / "bug.py"
    script.write_text(
        "def helper(x):\n"
        "    return x.numpy()\n"
        "\n"
        "class Wrapped:\n"
        "    def numpy(self):\n"
        '        raise TypeError("can\'t convert cuda:0 device type tensor to numpy. Use Tensor.cpu()")\n'
        "\n"
        "try:\n"
        "    {}['missing']\n"
        "except KeyError:\n"
        "    helper(Wrapped())\n",
        encoding="utf-8",
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert done.returncode == 1
    # two chained tracebacks; the last bug.py frame printed is the innermost of the final exception
    assert gpu_check.innermost_frame(done.stderr) == 6
    error_type, message = gpu_check.final_exception(done.stderr)
    assert error_type == "TypeError"
    assert message.startswith("can't convert cuda:0 device type tensor to numpy")
    case = score.Case(
        "x", tmp_path, "", 10, 1, bug_line=6, phrase="can't convert cuda:0", error_type="TypeError"
    )
    verdict = gpu_check.Verdict("x", 1, 6, error_type, message, 0)
    assert verdict.verified(case)
    assert not gpu_check.Verdict("x", 1, 2, error_type, message, 0).verified(case)  # another frame
    assert not gpu_check.Verdict("x", 1, 6, "RuntimeError", message, 0).verified(case)  # another type
    assert not gpu_check.Verdict("x", 1, 6, error_type, message, 1).verified(case)  # twin not clean


def test_the_gpu_check_refuses_to_run_without_a_gpu(monkeypatch, capsys):
    gpu_check = _gpu_check_module(monkeypatch)
    monkeypatch.setattr(gpu_check, "gpu_count", lambda python: 0)
    assert gpu_check.main(["--only", "01"]) == 2
    assert "no CUDA GPU here" in capsys.readouterr().err
