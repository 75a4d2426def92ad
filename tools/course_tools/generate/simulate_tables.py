"""The tables `devicekit.simulate` reads, derived from the installed torch (never typed by hand).

* ``cuda_ops``: for every ATen op overload that has a CUDA kernel, the name of the kernel wrapper PyTorch's
  code generator writes (``wrapper_CUDA_addmm``, ``wrapper_CUDA__index_select``) and, when the op has a
  generated device check, the arguments it checks in order. It is computed with ``torchgen`` from the
  ``native_functions.yaml`` torch installs, the way ``torchgen/dest/register_dispatch_key.py`` does it:
  structured kernels are named by ``NativeSignature(prefix="wrapper_CUDA_")``, the others by
  ``DispatcherSignature(prefix=f"wrapper_CUDA_{overload}_")``; the checked arguments are the out arguments
  then the positional ones whose type is tensor-like, unless the op says ``device_check: NoCheck``.
* ``autocast``: CUDA's autocast op lists (``AT_FORALL_LOWER_PRECISION_FP``, ``AT_FORALL_FP32``,
  ``AT_FORALL_FP32_SET_OPT_DTYPE``, ``AT_FORALL_PROMOTE``), read from ``ATen/autocast_mode.h`` in torch's
  installed headers.

``python -m course_tools.generate.simulate_tables --write`` rewrites ``src/devicekit/simulate/tables.json``;
``tests/test_simulate_tables.py`` fails when the shipped file and the installed torch disagree.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import sys
from pathlib import Path

import torch

from course_tools.paths import ROOT

TABLES = ROOT / "src" / "devicekit" / "simulate" / "tables.json"
_AUTOCAST_LISTS = {
    "lower_precision_fp": "AT_FORALL_LOWER_PRECISION_FP",
    "fp32": "AT_FORALL_FP32",
    "fp32_set_opt_dtype": "AT_FORALL_FP32_SET_OPT_DTYPE",
    "promote": "AT_FORALL_PROMOTE",
}


def cuda_ops() -> dict[str, list]:
    """``{"addmm": ["wrapper_CUDA_addmm", ["self", "mat1", "mat2"]], "add.Tensor": [..., None], ...}``."""
    import torchgen
    from torchgen.api.types import DispatcherSignature, NativeSignature
    from torchgen.gen import get_grouped_native_functions, parse_native_yaml
    from torchgen.model import DeviceCheckType, DispatchKey, NativeFunctionsGroup

    root = os.path.join(os.path.dirname(torchgen.__file__), "packaged", "ATen", "native")
    parsed = parse_native_yaml(os.path.join(root, "native_functions.yaml"), os.path.join(root, "tags.yaml"))
    index = parsed.backend_indices[DispatchKey.CUDA]

    def checked(f) -> list[str] | None:
        if f.device_check == DeviceCheckType.NoCheck:
            return None
        args = itertools.chain(f.func.arguments.out, f.func.arguments.flat_positional)
        return [a.name for a in args if a.type.is_tensor_like()]

    table: dict[str, list] = {}
    for group in get_grouped_native_functions(parsed.native_functions):
        if isinstance(group, NativeFunctionsGroup) and group.structured:
            if index.get_kernel(group) is None:
                continue
            for f in group.functions():
                kernel = index.get_kernel(f)
                symint = kernel is not None and kernel.supports_symint()
                name = NativeSignature(f.func, prefix="wrapper_CUDA_", symint=symint).name()
                table[str(f.func.name)] = [name, checked(f)]
        else:
            functions = group.functions() if isinstance(group, NativeFunctionsGroup) else [group]
            for f in functions:
                if index.get_kernel(f) is None:
                    continue
                prefix = f"wrapper_CUDA_{f.func.name.overload_name}_"
                name = DispatcherSignature.from_schema(f.func, prefix=prefix).name()
                table[str(f.func.name)] = [name, checked(f)]
    return dict(sorted(table.items()))


def autocast_header() -> Path:
    """``ATen/autocast_mode.h`` in the installed torch's headers."""
    return Path(torch.__file__).parent / "include" / "ATen" / "autocast_mode.h"


def autocast_lists(header: Path | None = None) -> dict[str, list[str]]:
    """CUDA's autocast policies: op names (``name`` or ``name.overload``) per cast policy."""
    text = (header or autocast_header()).read_text(encoding="utf-8")
    lists: dict[str, list[str]] = {}
    for policy, macro in _AUTOCAST_LISTS.items():
        body = re.search(rf"#define {macro}\(_\)(.*?)\n\n", text, re.S)
        if body is None:
            raise SystemExit(f"{macro} not found in {header}")
        entries = re.findall(r"_\((\w+)(?:,\s*(\w+))?\)", body.group(1))
        lists[policy] = [f"{name}.{overload}" if overload else name for name, overload in entries]
    return lists


def build() -> dict:
    """Both tables, with the torch version they were read from."""
    return {
        "torch": torch.__version__.split("+")[0],
        "cuda_ops": cuda_ops(),
        "autocast": autocast_lists(),
    }


def main(argv: list[str]) -> int:
    data = build()
    text = json.dumps(data, indent=1, sort_keys=False) + "\n"
    if "--write" in argv:
        TABLES.write_text(text, encoding="utf-8")
        print(f"wrote {TABLES.relative_to(ROOT)}: {len(data['cuda_ops'])} CUDA ops")
        return 0
    current = TABLES.read_text(encoding="utf-8") if TABLES.exists() else ""
    print("up to date" if current == text else f"{TABLES.relative_to(ROOT)} is out of date: run with --write")
    return 0 if current == text else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
