"""Undo PyTorch's one-way "CUDA was initialised" flag when a block closes (Linux; elsewhere a no-op).

Python calls that name a CUDA device (``torch.zeros(1, device="cuda")``, ``t.to("cuda")``) first run
``torch::utils::device_lazy_init`` (``torch/csrc/utils/device_lazy_init.cpp``), which calls
``torch.cuda._lazy_init`` once and then sets a flag that is never cleared. The simulation keeps C++ from
ever seeing a CUDA device where it can (its function mode rewrites it), but some code runs where no
function mode is in force (autograd's engine runs custom ``Function.backward`` code and hooks without
the thread's function modes; a Python-level torch function runs its body without them). If such code
named a CUDA device inside a block, the flag stayed set, and afterwards ``torch.zeros(1,
device="cuda")`` would raise "Could not run 'aten::empty.memory_format' with arguments from the 'CUDA'
backend" instead of the CPU build's "Torch not compiled with CUDA enabled".

So the replaced ``torch.cuda._lazy_init`` notes that it was called, and when the outermost block closes
the flag (the ``is_initialized`` array in an anonymous namespace of ``libtorch_python.so``) is set back to
false. It is found through the library's own symbol table: its address is the library's load address
(from the exported ``device_lazy_init``) plus the array's offset, and CUDA's slot is entry 1
(``c10::DeviceType::CUDA``). Nothing is written unless both symbols are found and the slot reads true.
"""

from __future__ import annotations

import ctypes
import functools
import struct
import sys
from pathlib import Path

import torch

__all__ = ["called", "reset"]

_FLAG = b"_ZN5torch5utils12_GLOBAL__N_114is_initializedE"
_ANCHOR = b"_ZN5torch5utils16device_lazy_initEN3c1010DeviceTypeE"
_CUDA = 1  # c10::DeviceType::CUDA
_state = {"called": False}


def called() -> None:
    """What the replaced ``torch.cuda._lazy_init`` does: remember that C++ asked for CUDA."""
    _state["called"] = True


def _symbols(path: Path, names: tuple[bytes, ...]) -> dict[bytes, int]:
    """``st_value`` of each name in the ELF64 file's ``.symtab`` (absent names are left out)."""
    with path.open("rb") as f:
        header = f.read(64)
        if header[:4] != b"\x7fELF" or header[4] != 2 or header[5] != 1:  # 64-bit little-endian only
            return {}
        (shoff,) = struct.unpack_from("<Q", header, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", header, 0x3A)
        f.seek(shoff)
        sections = [struct.unpack("<IIQQQQIIQQ", f.read(shentsize)[:64]) for _ in range(shnum)]
        symtab = next((s for s in sections if s[1] == 2), None)  # SHT_SYMTAB
        if symtab is None:
            return {}
        strtab = sections[symtab[6]]
        f.seek(strtab[4])
        strings = f.read(strtab[5])
        offsets = {}
        for name in names:
            at = strings.find(b"\0" + name + b"\0")
            if at >= 0:
                offsets[at + 1] = name
        f.seek(symtab[4])
        table = f.read(symtab[5])
    found: dict[bytes, int] = {}
    for st_name, _info, _other, _shndx, st_value, _size in struct.iter_unpack("<IBBHQQ", table):
        name = offsets.get(st_name)
        if name is not None:
            found[name] = st_value
    return found


@functools.lru_cache(maxsize=1)
def _flag_address() -> int | None:
    if not sys.platform.startswith("linux"):
        return None
    path = Path(torch.__file__).parent / "lib" / "libtorch_python.so"
    try:
        values = _symbols(path, (_FLAG, _ANCHOR))
        anchor = ctypes.cast(getattr(ctypes.CDLL(str(path)), _ANCHOR.decode()), ctypes.c_void_p).value
    except (OSError, AttributeError, struct.error):
        return None
    if _FLAG not in values or _ANCHOR not in values or not anchor:
        return None
    return anchor - values[_ANCHOR] + values[_FLAG] + _CUDA


def is_set() -> bool | None:
    """Whether PyTorch's C++ side believes CUDA was initialised (`None`: cannot tell on this platform)."""
    address = _flag_address()
    return None if address is None else bool(ctypes.c_bool.from_address(address).value)


def reset() -> bool:
    """Clear the flag if C++ asked for CUDA during the block; True when it was cleared."""
    if not _state["called"]:
        return False
    _state["called"] = False
    address = _flag_address()
    if address is None:
        return False
    flag = ctypes.c_bool.from_address(address)
    if not flag.value:
        return False
    flag.value = False
    return True
