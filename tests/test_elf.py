"""`course_tools.miners.elf.data_sections`: the string literals of a shared library without its code, and
any file it cannot read as ELF whole."""

from __future__ import annotations

import re
from pathlib import Path

import torch

from course_tools.miners.elf import data_sections

LIBC10 = next((Path(torch.__file__).resolve().parent / "lib").glob("libc10.so*"))


def test_a_library_gives_its_string_literals_and_not_its_code():
    data = data_sections(LIBC10)
    whole = LIBC10.read_bytes()
    assert len(data) < len(whole) / 2
    printable = re.compile(rb"[\x20-\x7e]{16,}")
    texts = {t for t in printable.findall(whole) if b" " in t and not t.startswith((b"GCC:", b"annobin"))}
    kept = set(printable.findall(data))
    assert b"Expected closing bracket ']' in ConfigTokenizer" in data  # one of c10's messages
    assert len(texts & kept) >= 0.98 * len(texts), sorted(texts - kept)[:20]


def test_a_file_that_is_not_a_64_bit_elf_comes_back_whole(tmp_path):
    script = tmp_path / "libfake.so"
    script.write_bytes(b"/* GNU ld script */\nINPUT(libreal.so)\n")
    assert data_sections(script) == script.read_bytes()
    truncated = tmp_path / "libcut.so"
    truncated.write_bytes(LIBC10.read_bytes()[:40])
    assert data_sections(truncated) == truncated.read_bytes()
    empty = tmp_path / "libempty.so"
    empty.write_bytes(b"")
    assert data_sections(empty) == b""
