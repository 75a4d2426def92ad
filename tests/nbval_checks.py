"""pytest plugin (loaded with `-p nbval_checks`): nbval runs each lab in its language, and a cell tagged
to raise must really raise. A plugin, not a conftest, because it must also apply to labs/ and solutions/."""

from __future__ import annotations

import os

import pytest

from devicekit.lang import language_of_path

try:
    from nbval.plugin import IPyNbCell
except ImportError:  # nbval not installed: notebooks are simply not collected
    IPyNbCell = None


# On the CPU runner a lab's trigger may be raised by devicekit's stand-in (`strict_devices`, a
# DeviceMismatchError, which is a RuntimeError) where an accelerator raises PyTorch's own RuntimeError:
# the same error for this check.
_SAME_ERROR = {"DeviceMismatchError": "RuntimeError"}


def _kinds(outputs) -> list[str]:
    names = [out.get("ename") for out in outputs or [] if out.get("output_type") == "error"]
    return [_SAME_ERROR.get(name, name) for name in names]


def _is_cell(item) -> bool:
    return IPyNbCell is not None and isinstance(item, IPyNbCell)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    # Runs before the notebook's kernel starts (in the first cell's setup), so the kernel inherits it.
    if _is_cell(item):
        os.environ["DEVICEKIT_LANG"] = language_of_path(str(item.path)) or "en"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    outcome = yield
    # nbval passes a cell tagged `raises-exception` whether or not it raised. A lab whose trigger cell
    # stopped raising teaches nothing, so that is a failure here.
    if _is_cell(item) and item.options.get("check_exception") and outcome.excinfo is None:
        raised, stored = _kinds(item.test_outputs), _kinds(item.cell.outputs)
        where = f"{item.path.name} cell {item.cell_num}"
        if not raised:
            outcome.force_exception(AssertionError(f"{where} is tagged raises-exception but did not raise"))
        elif stored and raised != stored:
            # Checked even when the cell's output comparison is off (nbval-ignore-output).
            message = f"{where} raised {raised}, the stored output shows {stored}"
            outcome.force_exception(AssertionError(message))
