"""`%devicelint` in an IPython shell: the current cell, a cell without running it, the history, and the
optional hook that lints every cell before it runs."""

from __future__ import annotations

import pytest

pytest.importorskip("IPython")

from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from devicekit import ipython as ext
from devicekit.lint import magic


@pytest.fixture
def shell(monkeypatch):
    monkeypatch.setenv("DEVICEKIT_LANG", "en")
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    existed = InteractiveShell.initialized()
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    sh = InteractiveShell.instance(config=config)
    ext.load_ipython_extension(sh)
    yield sh
    ext.unload_ipython_extension(sh)
    assert "devicelint" not in sh.magics_manager.magics["line"]
    assert not magic._hooks(sh)
    if not existed:
        InteractiveShell.clear_instance()


def test_magic_lints_the_current_cell(shell, capsys):
    result = shell.run_cell("%devicelint\nx = torch.zeros(3)\nx.to('cpu')\n", store_history=True)
    out = capsys.readouterr().out
    assert "cell:3:1: DK002 the result of `Tensor.to()`" in out
    assert result.error_in_exec is not None  # the cell itself still ran (torch is not imported here)


def test_cell_magic_lints_without_running(shell, capsys):
    shell.run_cell("%%devicelint\nstate = torch.load('ckpt.pt')\nraise SystemExit('ran')\n")
    out = capsys.readouterr().out
    assert "cell:1:9: DK008" in out and "ran" not in out


def test_clean_cell(shell, capsys):
    shell.run_cell("%%devicelint\nx = 1\n")
    assert "no device problems found" in capsys.readouterr().out


def test_all_lints_the_history_as_one_program(shell, capsys):
    shell.run_cell("def worker(rank):\n    pass\n", store_history=True)
    shell.run_cell("import torch.multiprocessing as mp", store_history=True)
    capsys.readouterr()
    shell.run_cell("%devicelint --all", store_history=True)
    out = capsys.readouterr().out
    assert "DK214" not in out  # nothing spawned yet
    shell.run_cell("if False:\n    mp.spawn(worker, nprocs=2)\n", store_history=True)
    count = shell.execution_count - 1
    shell.run_cell("%devicelint --all --lang zh", store_history=True)
    out = capsys.readouterr().out
    assert f"In[{count}]:2:5: DK214" in out and "子进程" in out


def test_on_lints_every_cell_before_it_runs(shell, capsys):
    shell.run_cell("%devicelint --on")
    shell.run_cell("%devicelint --on")  # twice: still one hook
    assert len(magic._hooks(shell)) == 1
    capsys.readouterr()
    result = shell.run_cell("y = 2\nstate = None if True else torch.load('p')\n")
    out = capsys.readouterr().out
    assert "[devicelint] cell:2:27: DK008" in out and result.success  # linted first, then run
    shell.run_cell("%devicelint --off")
    assert not magic._hooks(shell)
    capsys.readouterr()
    shell.run_cell("state = None if True else torch.load('p')\n")
    assert "DK008" not in capsys.readouterr().out


def test_bad_options(shell, capsys):
    shell.run_cell("%devicelint --select DK777")
    assert "matches no devicelint rule" in capsys.readouterr().err
