"""pytest plugin (loaded with `-p nbval_checks`): nbval runs each lab in its language, and a cell tagged
to raise must really raise. A plugin, not a conftest, because it must also apply to labs/ and solutions/.

A Chinese notebook of `labs/` or `solutions/` whose code cells are its English twin's (compared as
`tests/test_parity.py` compares them) is skipped, as it runs the same code: unless `DEVICEKIT_NBVAL_ALL=1`
(CI sets it, so CI runs both) or the notebook is named on the command line.

On Linux each notebook's fresh kernel is forked from a warm process of this test process
(`course_tools.kernel_zygote`: seconds saved per notebook); ``DEVICEKIT_NBVAL_FRESH_KERNELS=1`` starts each
kernel as its own interpreter instead.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

#: nbformat validates with jsonschema, whose format checkers import ``rfc3987_syntax`` when it is installed
#: (JupyterLab brings it): building its grammar costs about 3 s of every pytest start (nbval imports
#: nbformat) and checks IRI formats that no notebook schema uses. This plugin, loaded by ``-p`` before
#: nbval's entry point, makes it an absent module to jsonschema, as the grader's worker does.
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[assignment]

import pytest  # noqa: E402
from twins import RUN_ALL, same_code_reason  # noqa: E402  (RUN_ALL=1: every Chinese twin runs, as in CI)

from devicekit.lang import language_of_path  # noqa: E402

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


TWIN_FOLDERS = ("labs", "solutions")


def twin_skip_reason(path: Path) -> str | None:
    """Why nbval may skip this notebook, or None: a Chinese twin in `labs/` or `solutions/` whose code cells
    are the English notebook's (same code, same tags, strings translated and comments aside)."""
    from twins import notebook_code_differences

    english = path.with_name(path.name.replace(".zh.ipynb", ".ipynb"))
    if not path.name.endswith(".zh.ipynb") or path.parent.name not in TWIN_FOLDERS or not english.exists():
        return None
    if notebook_code_differences(english, path):
        return None  # different code: it runs (and tests/test_parity.py fails)
    return same_code_reason(f"{path.parent.name}/{path.name}", "code cells", english.name)


def pytest_collection_modifyitems(config, items):
    if os.environ.get(RUN_ALL) == "1":
        return
    named = {(config.invocation_params.dir / arg.split("::")[0]).resolve() for arg in config.args}
    reasons: dict[Path, str | None] = {}
    for item in items:
        if not _is_cell(item):
            continue
        path = Path(item.path).resolve()
        if path in named:  # asked for by name: it runs
            continue
        if path not in reasons:
            reasons[path] = twin_skip_reason(path)
        if reasons[path]:
            item.add_marker(pytest.mark.skip(reason=reasons[path]))


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


#: Set to 1 to start every notebook's kernel as an interpreter of its own (no zygote).
FRESH_KERNELS = "DEVICEKIT_NBVAL_FRESH_KERNELS"
_zygote: dict[str, object] = {}


def _zygote_argv() -> list[str] | None:
    """The kernel command line of this process's zygote, started at its first use; None where there is
    none (not Linux, turned off, or it failed to start: then kernels start as usual, with a warning)."""
    if "argv" in _zygote:
        return _zygote["argv"]  # type: ignore[return-value]
    _zygote["argv"] = None
    if not sys.platform.startswith("linux") or os.environ.get(FRESH_KERNELS) == "1":
        return None
    from course_tools import kernel_zygote

    folder = tempfile.mkdtemp(prefix="devicekit-zygote-")
    address = os.path.join(folder, "zygote.sock")
    server = subprocess.Popen(
        [sys.executable, kernel_zygote.__file__, "serve", address],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip

    def stop() -> None:
        server.kill()
        server.wait()
        shutil.rmtree(folder, ignore_errors=True)

    atexit.register(stop)
    first = server.stdout.readline() if server.stdout else ""
    if first.strip() != kernel_zygote.READY:
        rest = server.stdout.read() if server.stdout and server.poll() is not None else ""
        why = (first + rest)[-500:]
        warnings.warn(f"the kernel zygote did not start ({why!r}): fresh kernels instead", stacklevel=2)
        return None
    client = [sys.executable, "-I", kernel_zygote.__file__, "connect", address]
    _zygote["argv"] = [*client, "-f", "{connection_file}"]
    return _zygote["argv"]  # type: ignore[return-value]


def pytest_configure(config):
    try:
        from nbval import kernel
    except ImportError:
        return
    original = kernel.NbvalKernelspecManager.get_kernel_spec

    def get_kernel_spec(self, kernel_name):
        spec = original(self, kernel_name)
        argv = _zygote_argv() if kernel_name == kernel.CURRENT_ENV_KERNEL_NAME else None
        if argv:
            spec.argv = argv
        return spec

    kernel.NbvalKernelspecManager.get_kernel_spec = get_kernel_spec
