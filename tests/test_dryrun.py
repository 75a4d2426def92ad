"""``devicekit-dryrun``, the pytest plugin and ``%dryrun``: an unchanged script on simulated GPUs.

Each script runs in a process of its own (``python -m devicekit.dryrun``), as an engineer runs it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

SETUP = """\
import sys
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.body(x))


model = Net().to(device)
"""
BUG = SETUP + "x = torch.ones(3, 4)  # never moved\nout = model(x)\n"
FIXED = (
    SETUP
    + "x = torch.ones(3, 4).to(device)\nout = model(x)\n"
    + "print(out.device, out.sum().item() == out.cpu().sum().item())\n"
)


def dryrun(tmp_path: Path, source: str, *args: str, lang: str = "en", name: str = "train.py"):
    script = tmp_path / name
    script.write_text(textwrap.dedent(source), encoding="utf-8")
    env = {
        **os.environ,
        "DEVICEKIT_LANG": lang,
        "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", ""),
    }
    env.pop("CUDA_VISIBLE_DEVICES")
    return subprocess.run(
        [sys.executable, "-m", "devicekit.dryrun", *args, str(script)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )


def test_a_batch_left_on_the_cpu_is_found_at_its_line_with_cudas_message(tmp_path: Path) -> None:
    run = dryrun(tmp_path, BUG)
    assert run.returncode == 1, run.stderr
    err = run.stderr
    assert "Expected all tensors to be on the same device" in err
    assert "cuda:0" in err and "cpu" in err
    call = BUG.splitlines().index("out = model(x)") + 1
    raised = BUG.splitlines().index("        return self.head(self.body(x))") + 1
    report = err[err.index("devicekit-dryrun:") :]
    assert f"train.py, line {call}: `out = model(x)`" in report
    assert f"train.py, line {raised}: `return self.head(self.body(x))`  <- raised here" in report
    assert (
        "devicekit" + os.sep + "simulate" not in err and "runpy" not in err
    )  # reads as a GPU run's traceback
    assert "module 'body.0' (Linear) of Net" in err
    assert "[devicekit]" not in run.stdout


def test_the_fixed_twin_runs_clean_with_real_values(tmp_path: Path) -> None:
    run = dryrun(tmp_path, FIXED)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "cuda:0 True"
    assert "no device error" in run.stderr


def test_the_report_reads_in_chinese(tmp_path: Path) -> None:
    run = dryrun(tmp_path, BUG, lang="zh")
    assert run.returncode == 1
    assert "脚本在模拟 GPU 上遇到了设备错误" in run.stderr
    assert "train.py 第" in run.stderr and "在这里出错" in run.stderr


def test_the_script_runs_as_main_with_its_arguments_and_exit_status(tmp_path: Path) -> None:
    source = """\
    import sys, os
    assert __name__ == "__main__"
    assert sys.path[0] == os.path.dirname(os.path.abspath(__file__))
    import helper
    print(sys.argv[1:], helper.VALUE)
    sys.exit(int(sys.argv[1]))
    """
    (tmp_path / "helper.py").write_text("VALUE = 7\n")
    script = tmp_path / "main.py"
    script.write_text(textwrap.dedent(source))
    run = subprocess.run(
        [sys.executable, "-m", "devicekit.dryrun", "--gpus", "2", str(script), "3", "--flag"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "DEVICEKIT_LANG": "en"},
        timeout=300,
    )
    assert run.returncode == 3, run.stderr
    assert run.stdout.strip() == "['3', '--flag'] 7"
    assert "no device error on 2 simulated GPU(s) (H200). The script ended with status 3." in run.stderr


def test_sys_exit_zero_ends_like_a_script_that_just_ends(tmp_path: Path) -> None:
    run = dryrun(tmp_path, "import sys\n\ndef main():\n    return 0\n\nsys.exit(main())\n")
    assert run.returncode == 0, run.stderr
    assert run.stderr.strip().endswith("no device error on 1 simulated GPU(s) (H200).")


def test_two_gpus_make_cuda_1_real(tmp_path: Path) -> None:
    source = "import torch\nprint(torch.cuda.device_count(), torch.ones(2, device='cuda:1').device)\n"
    assert dryrun(tmp_path, source, "--gpus", "2").stdout.strip() == "2 cuda:1"


def test_an_error_that_is_not_about_devices_keeps_pythons_status_and_gets_no_report(tmp_path: Path) -> None:
    run = dryrun(tmp_path, "import torch\nraise KeyError('boom')\n")
    assert run.returncode == 1
    assert "KeyError: 'boom'" in run.stderr
    assert "hit a device error" not in run.stderr
    assert "no device error on 1 simulated GPU(s) (H200). The script ended with status 1." in run.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["missing.py"], "no such script"),
        (["--gpus", "0", "x.py"], "--gpus must be a positive number"),
        (["--profile", "NoSuchGPU", "x.py"], "NoSuchGPU"),
        (["broken.py"], "does not parse"),
    ],
)
def test_bad_input_is_a_usage_error_and_runs_nothing(tmp_path: Path, args: list[str], says: str) -> None:
    (tmp_path / "x.py").write_text("open('ran', 'w').write('yes')\n")
    (tmp_path / "broken.py").write_text("def f(:\n")
    run = subprocess.run(
        [sys.executable, "-m", "devicekit.dryrun", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "DEVICEKIT_LANG": "en"},
        timeout=300,
    )
    assert run.returncode == 2, run.stderr
    assert says in run.stderr
    assert not (tmp_path / "ran").exists()


def test_the_pytest_plugin_runs_gpu_tests_on_simulated_gpus(tmp_path: Path) -> None:
    from importlib.metadata import entry_points

    plugins = {e.name: e.value for e in entry_points(group="pytest11")}
    assert plugins.get("devicekit") == "devicekit.pytest_plugin", "reinstall devicekit (make setup)"
    (tmp_path / "test_gpu_code.py").write_text(
        textwrap.dedent(
            """\
            import pytest
            import torch

            needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")


            @needs_gpu
            def test_session_gpus():
                assert torch.cuda.device_count() == 2
                assert (torch.ones(2, device="cuda:1") * 2).sum().item() == 4.0


            @pytest.mark.simulate_gpus(1, profile="A100")
            def test_fixture(simulated_gpus):
                assert torch.cuda.device_count() == 1
                with pytest.raises(RuntimeError, match="same device"):
                    torch.ones(2, device="cuda") + torch.ones(2)
            """
        )
    )
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", str(tmp_path)]
    run = subprocess.run(
        [*base, "--simulate-gpus=2"], capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 passed" in run.stdout
    plain = subprocess.run(base, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert "1 passed, 1 skipped" in plain.stdout, plain.stdout


def test_the_cell_magic_runs_a_cell_on_simulated_gpus() -> None:
    pytest.importorskip("IPython")
    import torch
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        shell.run_line_magic("load_ext", "devicekit")
        shell.run_cell(
            "%%dryrun --gpus 2\nimport torch\nn = torch.cuda.device_count()\n", store_history=False
        )
        assert shell.user_ns["n"] == 2
        assert not torch.cuda.is_available()
    finally:
        shell.run_line_magic("unload_ext", "devicekit")
        InteractiveShell.clear_instance()
