"""Where each character of a notebook cell's source sits in the `.ipynb` file itself.

A finding in a notebook is found at a line of a cell; tools that read `file:line:col` (editors, CI
annotations, GitHub code scanning through SARIF) need the line and column in the notebook *file*, which
is JSON. This module reads that JSON once more, keeping positions: for each cell, the file position of
every character of its `source`, whether the source is one string or a list of lines, and whatever
escapes (`\\"`, `\\n`, `\\u4e2d`) the strings hold.
"""

from __future__ import annotations

import bisect
import functools
import re

from devicekit.messages import Message, localised

_WHITESPACE = " \t\n\r"
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


@functools.lru_cache(maxsize=1)
def _decoder():
    """A JSON decoder, made (and `json` imported) only when a notebook is read: linting `.py` files, the
    usual case, does not pay for importing `json` at start-up."""
    import json

    return json.JSONDecoder()


#: For each character of a cell's source: its (line, column) in the file, both 1-based, columns counted
#: in characters.
Positions = list[tuple[int, int]]


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_lines(text: str, keepends: bool = False) -> list[str]:
    """The lines of `text` as Python's parser counts them (`\n`, `\r\n`, `\r`; not `str.splitlines`'s
    form feed or U+2028, which would shift every later line number)."""
    if not keepends and "\r" not in text:  # the usual file: the same lines, at a tenth of the time
        lines = text.split("\n")
        if lines[-1] == "":  # text ends with a newline, or is empty: no line after it
            lines.pop()
        return lines
    found = _LINE.findall(text)
    return found if keepends else [line.rstrip("\r\n") for line in found]


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0]
        self.starts.extend(i + 1 for i, ch in enumerate(text) if ch == "\n")

    def where(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.starts, offset)
        return line, offset - self.starts[line - 1] + 1

    def skip_space(self, i: int) -> int:
        text = self.text
        while i < len(text) and text[i] in _WHITESPACE:
            i += 1
        return i

    def expect(self, i: int, char: str) -> int:
        i = self.skip_space(i)
        if i >= len(self.text) or self.text[i] != char:
            expected = Message(f"expected {char!r} at offset {i}", f"位置 {i} 处应为 {char!r}")
            raise localised(ValueError, expected)
        return i + 1

    def skip_value(self, i: int) -> int:
        _, end = _decoder().raw_decode(self.text, self.skip_space(i))
        return end

    def string(self, i: int) -> tuple[str, list[int], int]:
        """The JSON string starting at `i` (after spaces): its text, each character's offset in the file,
        and the offset after its closing quote."""
        text = self.text
        i = self.expect(i, '"')
        chars: list[str] = []
        offsets: list[int] = []
        while True:
            ch = text[i]
            if ch == '"':
                return "".join(chars), offsets, i + 1
            if ch != "\\":
                chars.append(ch)
                offsets.append(i)
                i += 1
                continue
            escape = text[i + 1]
            if escape == "u":
                code = int(text[i + 2 : i + 6], 16)
                end = i + 6
                if 0xD800 <= code < 0xDC00 and text[end : end + 2] == "\\u":  # a surrogate pair
                    low = int(text[end + 2 : end + 6], 16)
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    end += 6
                chars.append(chr(code))
                offsets.append(i)
                i = end
            else:
                chars.append(_ESCAPES[escape])
                offsets.append(i)
                i += 2

    def members(self, i: int):
        """The members of the object starting at `i`: yields (key, offset of its value); the caller
        returns the offset after the value it read (or None to have it skipped)."""
        i = self.expect(i, "{")
        i = self.skip_space(i)
        if self.text[i] == "}":
            return i + 1
        while True:
            key, _, i = self.string(i)
            i = self.expect(i, ":")
            end = yield key, i
            i = end if end is not None else self.skip_value(i)
            i = self.skip_space(i)
            if self.text[i] == "}":
                return i + 1
            i = self.expect(i, ",")

    def elements(self, i: int):
        """Like `members`, for an array: yields the offset of each element."""
        i = self.expect(i, "[")
        i = self.skip_space(i)
        if self.text[i] == "]":
            return i + 1
        while True:
            end = yield i
            i = end if end is not None else self.skip_value(i)
            i = self.skip_space(i)
            if self.text[i] == "]":
                return i + 1
            i = self.expect(i, ",")


def _walk(generator, handle) -> int:
    """Drive a `members`/`elements` generator, letting `handle(item)` read an item (returning the offset
    after it) or skip it (returning None); the offset after the whole container."""
    try:
        item = next(generator)
        while True:
            item = generator.send(handle(item))
    except StopIteration as stop:
        return stop.value


def cell_positions(text: str) -> dict[int, Positions]:
    """For each cell (1-based, counting every cell as the linter does), where each character of its
    source is in the file `text`.

    Raises:
        ValueError: `text` is not a notebook's JSON.
    """
    import json  # imported here: linting `.py` files never needs it (start-up time)

    reader = _Reader(text)
    cells: dict[int, Positions] = {}

    def source(i: int) -> tuple[Positions, int]:
        i = reader.skip_space(i)
        offsets: list[int] = []
        if text[i] == '"':
            _, offsets, end = reader.string(i)
        else:

            def piece(j: int) -> int:
                _, found, after = reader.string(j)
                offsets.extend(found)
                return after

            end = _walk(reader.elements(i), piece)
        return [reader.where(o) for o in offsets], end

    def cell(i: int) -> int:
        index = len(cells) + 1
        cells[index] = []

        def member(item: tuple[str, int]) -> int | None:
            key, j = item
            if key != "source":
                return None
            cells[index], after = source(j)
            return after

        return _walk(reader.members(i), member)

    def top(item: tuple[str, int]) -> int | None:
        key, j = item
        return _walk(reader.elements(j), cell) if key == "cells" else None

    try:
        _walk(reader.members(0), top)
    except (IndexError, KeyError, json.JSONDecodeError) as exc:
        raise localised(
            ValueError, Message(f"not a notebook's JSON: {exc}", f"这不是 notebook 的 JSON：{exc}")
        ) from None
    return cells


def file_position(positions: Positions, source: str, line: int, col: int) -> tuple[int, int] | None:
    """Where line `line`, column `col` (1-based; columns in UTF-8 bytes, as `ast` counts them) of a cell
    whose source is `source` sits in the file; None when the cell has no such place."""
    lines = split_lines(source, keepends=True)
    if not 0 < line <= len(lines):
        return None
    start = sum(len(text) for text in lines[: line - 1])
    prefix = lines[line - 1].encode("utf-8")[: max(col - 1, 0)].decode("utf-8", errors="ignore")
    offset = start + len(prefix)
    if offset >= len(positions):
        return positions[-1] if positions else None
    return positions[offset]
