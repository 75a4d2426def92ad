"""``%load_ext devicekit``: explanations appear under the traceback, once; the cell still fails."""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("IPython")

from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

import devicekit
from devicekit import ipython as ext

DEVICE_ERROR = "torch.ones(2, device='meta') + torch.ones(2)"
MARK = "[devicekit]"


def _device_error() -> RuntimeError:
    import torch

    try:
        torch.ones(2, device="meta") + torch.ones(2)
    except RuntimeError as exc:
        return exc
    raise AssertionError("mixing meta and cpu tensors did not raise")


@pytest.fixture
def lang(monkeypatch: pytest.MonkeyPatch):
    """Set the learner's language (``None``: unknown) without a notebook file name in the way."""
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)

    def set_lang(value: str | None) -> None:
        if value is None:
            monkeypatch.delenv("DEVICEKIT_LANG", raising=False)
        else:
            monkeypatch.setenv("DEVICEKIT_LANG", value)

    set_lang(None)
    return set_lang


@pytest.fixture
def shell(lang):
    """An in-process IPython shell with the extension loaded; unloaded again afterwards."""
    existed = InteractiveShell.initialized()
    config = Config()
    config.HistoryManager.hist_file = ":memory:"  # leave ~/.ipython alone
    sh = InteractiveShell.instance(config=config)
    sh.run_cell("import torch", store_history=False)
    ext.load_ipython_extension(sh)
    yield sh
    ext.unload_ipython_extension(sh)
    assert not ext._registered(sh)
    if not existed:  # later tests in this process must not find a get_ipython() shell
        InteractiveShell.clear_instance()


# --- the text -------------------------------------------------------------------------------------


def test_explanation_text_follows_the_language(lang):
    pytest.importorskip("devicekit.explain")
    from devicekit.explain import explain

    error = _device_error()
    expected = explain(error)
    assert expected.family is not None

    lang("en")
    text = ext.explanation_text(error)
    assert text is not None and expected.en in text and expected.zh not in text
    lang("zh")
    text = ext.explanation_text(error)
    assert text is not None and expected.zh in text and expected.en not in text
    lang(None)  # unknown (Colab, a plain script): both, English first
    text = ext.explanation_text(error)
    assert text is not None and text.index(expected.en) < text.index(expected.zh)
    where_en, where_zh = ext.where_text(error)
    assert ext.explanation_text(error, lang="zh") == f"{MARK} {expected.zh}\n{where_zh}"
    assert "你的代码" in where_zh and "torch.ones(2" in where_zh, "names the learner's own line"


def test_no_text_for_other_errors(lang):
    pytest.importorskip("devicekit.explain")
    assert ext.explanation_text(ValueError("not a device problem")) is None
    assert ext.explanation_text(KeyboardInterrupt()) is None  # type: ignore[arg-type]


# --- in an IPython shell --------------------------------------------------------------------------


def test_load_twice_registers_once(shell):
    ext.load_ipython_extension(shell)
    ext.load_ipython_extension(shell)
    assert len(ext._registered(shell)) == 1
    ext.unload_ipython_extension(shell)
    ext.unload_ipython_extension(shell)  # not loaded any more: no error
    assert not ext._registered(shell)


def test_explanation_printed_once_under_the_traceback(shell, lang, capsys):
    pytest.importorskip("devicekit.explain")
    lang("en")
    ext.load_ipython_extension(shell)  # a second load: still one explanation
    result = shell.run_cell(DEVICE_ERROR, store_history=False)
    out = capsys.readouterr().out
    # The error is not swallowed: the cell failed with the real exception, which IPython recorded.
    assert not result.success
    assert isinstance(result.error_in_exec, RuntimeError)
    assert sys.last_value is result.error_in_exec
    assert shell.custom_exceptions == ()  # the extension leaves set_custom_exc to the learner
    # The traceback comes first, the explanation after it, once.
    assert out.count(MARK) == 1
    assert "Traceback" in out or "RuntimeError" in out
    assert out.index("RuntimeError") < out.index(MARK)
    assert "[same-device]" in out[out.index(MARK) :]


def test_nothing_printed_for_other_errors_or_success(shell, lang, capsys):
    pytest.importorskip("devicekit.explain")
    lang("en")
    result = shell.run_cell("raise ValueError('not a device problem')", store_history=False)
    assert isinstance(result.error_in_exec, ValueError)
    assert shell.run_cell("x = torch.ones(2) + 1", store_history=False).success
    assert MARK not in capsys.readouterr().out


def test_nothing_printed_after_unload(shell, lang, capsys):
    ext.unload_ipython_extension(shell)
    shell.run_cell(DEVICE_ERROR, store_history=False)
    assert MARK not in capsys.readouterr().out


def test_a_failing_explain_adds_no_second_traceback(shell, lang, capsys, monkeypatch: pytest.MonkeyPatch):
    explain_mod = pytest.importorskip("devicekit.explain")

    def broken(_error: object) -> None:
        raise KeyError("catalog missing")

    monkeypatch.setattr(explain_mod, "explain", broken)
    result = shell.run_cell(DEVICE_ERROR, store_history=False)
    captured = capsys.readouterr()
    assert isinstance(result.error_in_exec, RuntimeError)
    assert "KeyError" not in captured.out + captured.err
    assert MARK not in captured.out


def test_package_exports_the_extension_hooks():
    """``%load_ext devicekit`` looks the hooks up on the package itself."""
    assert devicekit.load_ipython_extension is ext.load_ipython_extension
    assert devicekit.unload_ipython_extension is ext.unload_ipython_extension


# --- in a real Jupyter kernel ---------------------------------------------------------------------


def _run_notebook(cells: list[str]) -> list:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True).execute()
    return nb.cells


def _kinds(cell) -> list[str]:
    return [o.output_type if o.output_type != "stream" else f"stream:{o.name}" for o in cell.outputs]


@pytest.mark.integration
def test_real_kernel_prints_under_the_error_output(lang):
    """nbclient runs a notebook in a real ipykernel, the way Jupyter, VS Code and Colab do."""
    pytest.importorskip("devicekit.explain")
    lang("zh")  # the kernel inherits the environment: a Chinese notebook
    # The package name when the lead has exported the hooks, else the module (same functions).
    name = "devicekit" if hasattr(devicekit, "load_ipython_extension") else "devicekit.ipython"
    cells = _run_notebook(
        [
            f"%load_ext {name}\nimport devicekit.ipython as _e\n_e.load_ipython_extension(get_ipython())",
            f"import torch\nprint('before')\n{DEVICE_ERROR}",
            "import sys\nprint(type(sys.last_value).__name__)",
            f"%xmode Minimal\n{DEVICE_ERROR}",
            "import os\nos.environ['DEVICEKIT_LANG'] = 'en'\n" + DEVICE_ERROR,
            "raise ValueError('not a device problem')",
            "print('still running')",
        ]
    )
    load, full, last, minimal, english, other, after = cells

    assert not any(o.output_type == "error" for o in load.outputs)
    # The error output (the traceback) first, then one stream output with the explanation.
    assert _kinds(full) == ["stream:stdout", "error", "stream:stdout"]
    assert full.outputs[1].ename == "RuntimeError"
    assert len(full.outputs[1].traceback) > 1  # the full traceback is still there
    explanation = full.outputs[2].text
    assert explanation.count(MARK) == 1 and "[same-device]" in explanation
    assert "张量不在同一个设备上" in explanation and "What happened" not in explanation
    assert last.outputs[0].text.strip() == "RuntimeError"  # sys.last_value is the real error

    # %xmode Minimal shortens the traceback; the explanation still follows it.
    assert _kinds(minimal)[-2:] == ["error", "stream:stdout"]
    assert minimal.outputs[-1].text.count(MARK) == 1

    # The language is read at each error: switching DEVICEKIT_LANG switches the explanation.
    assert _kinds(english) == ["error", "stream:stdout"]
    assert "What happened" in english.outputs[1].text and "张量" not in english.outputs[1].text

    assert _kinds(other) == ["error"]  # not a device error: nothing added
    assert after.outputs[0].text == "still running\n"


def test_the_setup_cells_language_wins_over_an_unknown_name(shell, capsys):
    """Colab and nbconvert give the kernel no file name: the lab's setup cell says the language."""
    from devicekit.lang import set_language

    try:
        shell.run_cell("from devicekit.lang import set_language; set_language('zh')", store_history=False)
        capsys.readouterr()
        shell.run_cell(DEVICE_ERROR, store_history=False)
        out = capsys.readouterr().out
        assert MARK in out and out.count(MARK) == 1, "one explanation, in one language"
    finally:
        set_language(None)


def test_a_renamed_chinese_copy_still_gets_chinese(shell, capsys, monkeypatch):
    from devicekit.explain import explain

    monkeypatch.setenv("JPY_SESSION_NAME", "/home/learner/01-devices.zh (1).ipynb")
    shell.run_cell(DEVICE_ERROR, store_history=False)
    out = capsys.readouterr().out
    expected = explain(_device_error())
    assert expected.zh.splitlines()[0] in out and expected.en.splitlines()[0] not in out


# --- which line the explanation names (the zh reviewer, item 4) ---------------------------------------


def test_a_cell_line_is_quoted_not_claimed_to_be_this_cell(shell):
    """The line is the learner's own, quoted; no "this cell" or In[n], which depend on the run order."""
    shell.run_cell(
        "def mix():\n    a = torch.ones(2, device='meta')\n    return a + torch.ones(2)\n", store_history=True
    )
    shell.run_cell("try:\n    mix()\nexcept Exception as e:\n    caught = e\n", store_history=True)
    en, zh = ext.where_text(shell.user_ns["caught"])
    assert en == "In your code: line 3 of a notebook cell: `return a + torch.ones(2)`"
    assert zh == "你的代码：单元格中的第 3 行：`return a + torch.ones(2)`"
    assert "In[" not in en + zh and "本单元格" not in zh


def test_a_line_of_a_file_is_named_by_the_file():
    code = compile(
        "import torch\n\ndef mix():\n    return torch.ones(2, device='meta') + torch.ones(2)\n",
        "/tmp/learner/train.py",
        "exec",
    )
    namespace: dict = {}
    exec(code, namespace)
    with pytest.raises(RuntimeError) as info:
        namespace["mix"]()
    en, zh = ext.where_text(info.value)
    assert en.startswith("In your code: train.py, line 4") and zh.startswith("你的代码：train.py 第 4 行")
