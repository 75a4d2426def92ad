"""devicekit.lint.nbjson: where each character of a cell's source sits in the `.ipynb` file, whatever the
JSON looks like (indented or not, source as one string or a list, escapes, non-ASCII)."""

from __future__ import annotations

import json

import pytest

from devicekit.lint.nbjson import cell_positions, file_position, split_lines

SOURCES = [
    ["import torch\n", 'x = torch.ones(2)  # 张量 "q" \\ \t\n', "y = '😀'; x.cuda()\n"],
    "a = 1\r\nb = 2\rc = 3\n",  # one string, mixed line ends
    ["first\nsecond\n", "third\n"],  # a list element that holds two lines
    "",  # an empty cell
    ["form\x0cfeed = 1\n", "after = 2\n"],  # a form feed is not a line end for Python
]


def _notebook(indent: int | None, ensure_ascii: bool) -> str:
    cells = [{"cell_type": "markdown", "metadata": {"tags": ["a", {"b": [1, 2]}]}, "source": '# t "x"'}]
    cells += [{"cell_type": "code", "metadata": {}, "outputs": [], "source": s} for s in SOURCES]
    cells.append({"cell_type": "raw", "metadata": {}})  # no source at all
    return json.dumps(
        {"cells": cells, "metadata": {}, "nbformat": 4}, indent=indent, ensure_ascii=ensure_ascii
    )


def _escape(text: str, offset: int) -> str:
    """The character the JSON escape at `offset` stands for (a surrogate pair read whole)."""
    if text[offset : offset + 2] != "\\u":
        return json.loads('"' + text[offset : offset + 2] + '"')
    pair = text[offset : offset + 12]
    return json.loads(
        '"' + (pair if pair[6:8] == "\\u" and 0xD800 <= int(pair[2:6], 16) < 0xDC00 else pair[:6]) + '"'
    )


def _offset(text: str, line: int, col: int) -> int:
    return sum(len(x) for x in text.splitlines(keepends=True)[: line - 1]) + col - 1


@pytest.mark.parametrize("indent", [None, 1, 4])
@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_every_character_is_found_where_the_file_holds_it(indent, ensure_ascii):
    text = _notebook(indent, ensure_ascii)
    positions = cell_positions(text)
    assert sorted(positions) == [1, 2, 3, 4, 5, 6, 7]
    assert positions[7] == []  # the raw cell without a source
    for index, source in enumerate(SOURCES, start=2):
        joined = "".join(source) if isinstance(source, list) else source
        assert len(positions[index]) == len(joined)
        for char, (line, col) in zip(joined, positions[index], strict=True):
            offset = _offset(text, line, col)
            # the character itself, or the escape that stands for it
            assert text[offset] == char or _escape(text, offset) == char, (char, text[offset : offset + 12])


def test_positions_of_lines_and_columns():
    text = _notebook(1, True)
    positions = cell_positions(text)
    source = "".join(SOURCES[0])
    # `x.cuda()` on the cell's third line: `y = '😀'; ` is 9 characters but 12 UTF-8 bytes before `x`
    line, col = file_position(positions[2], source, 3, 13)
    lines = text.splitlines()
    assert lines[line - 1][col - 1 :].startswith("x.cuda()")
    # the second cell: `c = 3` is the third line for Python (\r\n and \r both end a line)
    line, col = file_position(positions[3], SOURCES[1], 3, 1)
    assert lines[line - 1][col - 1 :].startswith("c = 3")
    # `third` is line 3 of a cell whose first list element holds two lines
    line, col = file_position(positions[4], "".join(SOURCES[2]), 3, 1)
    assert lines[line - 1][col - 1 :].startswith("third")
    # after a form feed, still line 2 is `after`
    line, col = file_position(positions[6], "".join(SOURCES[4]), 2, 1)
    assert lines[line - 1][col - 1 :].startswith("after")
    assert file_position(positions[2], source, 9, 1) is None
    assert file_position(positions[5], "", 1, 1) is None


def test_split_lines_counts_as_python_does():
    assert split_lines("a\r\nb\rc\nd\x0ce\u2028f") == ["a", "b", "c", "d\x0ce\u2028f"]
    assert split_lines("a\n", keepends=True) == ["a\n"]
    assert split_lines("") == []


@pytest.mark.parametrize("text", ["", "[]", '{"cells": [', '{"cells": [{"source": 3}]}', "{'cells': []}"])
def test_not_a_notebook_is_a_value_error(text):
    with pytest.raises(ValueError):
        cell_positions(text)
