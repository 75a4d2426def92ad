"""The data sections of a shared library, where its string literals live: what a reader of torch's error
texts needs from ``libtorch_cpu.so`` (18 MB of its 434 MB: the rest is code, unwind tables and symbols).

Reads the section headers of a 64-bit little-endian ELF file and returns its ``.rodata*`` and ``.data*``
sections, each followed by a NUL so that no text runs from one into the next. Any other file (a Mach-O
``.dylib``, a 32-bit or big-endian ELF, a linker script named ``.so``) is returned whole, so a caller never
sees less text than the file holds.
"""

from __future__ import annotations

import struct
from pathlib import Path

_ELF64_LE = b"\x7fELF\x02\x01"
_SHT_NOBITS = 8  # .bss: no bytes in the file


def _wanted(name: bytes) -> bool:
    return name == b".rodata" or name.startswith((b".rodata.", b".data"))


def data_sections(path: str | Path) -> bytes:
    """The bytes of ``path``'s read-only and writable data sections (or the whole file if it is not a
    64-bit little-endian ELF file with section headers)."""
    with open(path, "rb") as file:
        header = file.read(64)
        if len(header) < 64 or not header.startswith(_ELF64_LE):
            return header + file.read()
        (shoff,) = struct.unpack_from("<Q", header, 0x28)
        entsize, count, names_index = struct.unpack_from("<HHH", header, 0x3A)
        if not shoff or entsize < 64 or not count or names_index >= count:
            file.seek(0)
            return file.read()
        file.seek(shoff)
        table = file.read(entsize * count)
        sections = [struct.unpack_from("<IIQQQQ", table, i * entsize) for i in range(count)]
        _, _, _, _, names_offset, names_size = sections[names_index]
        file.seek(names_offset)
        names = file.read(names_size)
        chunks = []
        for name_at, kind, _, _, offset, size in sections:
            name = names[name_at : names.find(b"\0", name_at)]
            if kind != _SHT_NOBITS and _wanted(name):
                file.seek(offset)
                chunks.append(file.read(size))
    return b"\0".join(chunks) + b"\0"
