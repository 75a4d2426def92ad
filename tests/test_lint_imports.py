"""The lint path imports no torch: `import devicekit.lint` and `python -m devicekit.lint` in a fresh
interpreter leave torch out of `sys.modules`, while `import devicekit` keeps every public name reachable
(imported from its submodule when first touched)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import devicekit

pytestmark = pytest.mark.integration  # each test starts interpreters of its own


def python(code: str, *, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )


def test_import_devicekit_lint_leaves_torch_out():
    done = python(
        """
        import sys
        import devicekit.lint
        from devicekit.lint import lint_source
        from devicekit.lint.cli import main
        from devicekit.lint.sarif import to_sarif
        print(sorted(m for m in ("torch", "numpy", "IPython") if m in sys.modules))
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_python_m_devicekit_lint_never_imports_torch(tmp_path):
    """`python -m devicekit.lint` with a `torch` that ends the process with status 97 when imported (and
    an `IPython` that ends it with 98: the language lookup used to import it, a fifth of a second)."""
    for name, status in (("torch", 97), ("IPython", 98)):
        stub = tmp_path / "stub" / name
        stub.mkdir(parents=True)
        (stub / "__init__.py").write_text(f"import os\nos._exit({status})\n", encoding="utf-8")
    code = tmp_path / "train.py"
    code.write_text("import torch\nx = torch.ones(3)\nx.to(device)\n", encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(stub.parent), env.get("PYTHONPATH", "")])
    env.pop("DEVICEKIT_LANG", None)
    for args in (["--format", "sarif"], ["--lang", "zh"], ["--list-rules"], ["--help"]):
        done = subprocess.run(
            [sys.executable, "-m", "devicekit.lint", *args, str(code)],
            capture_output=True,
            text=True,
            check=False,
            env=env,
        )
        assert done.returncode in (0, 1), (args, done.returncode, done.stderr)
    # the stub works: importing devicekit's torch-using names does end the process
    done = subprocess.run(
        [sys.executable, "-c", "import devicekit; devicekit.to_device"], env=env, check=False
    )
    assert done.returncode == 97


def test_import_devicekit_is_lazy_and_every_public_name_works():
    done = python(
        """
        import json, sys
        import devicekit
        before = "torch" in sys.modules
        names = {}
        for name in devicekit.__all__:
            value = getattr(devicekit, name)
            names[name] = getattr(value, "__module__", None) or type(value).__name__
        from devicekit import *  # noqa: F403
        star = all(name in globals() for name in devicekit.__all__)
        print(json.dumps({"before": before, "after": "torch" in sys.modules, "star": star, "names": names}))
        """
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["before"] is False and result["after"] is True and result["star"] is True
    assert set(result["names"]) == set(devicekit.__all__)
    assert result["names"]["to_device"] == "devicekit.transfer"
    assert result["names"]["explain"] == "devicekit.explain"


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        devicekit.no_such_name  # noqa: B018
    assert "to_device" in dir(devicekit)


def test_submodule_import_keeps_the_function_of_the_same_name():
    """`import devicekit.prepare` sets the package's `prepare`; it must stay the function, as with the
    eager imports (and `devicekit.explain` likewise)."""
    done = python(
        """
        import devicekit.prepare, devicekit.explain, types
        from devicekit import prepare, explain
        assert not isinstance(prepare, types.ModuleType), prepare
        assert not isinstance(explain, types.ModuleType), explain
        assert prepare is devicekit.prepare and callable(prepare)
        import sys
        assert isinstance(sys.modules["devicekit.prepare"], types.ModuleType)
        print("ok")
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_all_matches_the_lazy_table():
    assert sorted(devicekit.__all__) == sorted([*devicekit._SOURCES, *devicekit._SIMULATE])
    source = Path(devicekit.__file__).read_text(encoding="utf-8")
    for name, module in devicekit._SOURCES.items():
        assert hasattr(importlib.import_module(f"devicekit.{module}"), name), name
        assert f"from devicekit.{module} import" in source, name  # the TYPE_CHECKING block names it too
