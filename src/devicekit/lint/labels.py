"""Short code for the analysis' messages (`noise`, `batch["x"]`): `ast.unparse` of an expression, given up
as soon as the text is too long to show.

The messages quote an expression only when its code is at most 40 characters on one line. `ast.unparse`
writes the whole expression first (a call with a lambda and a comprehension: hundreds of characters) to
learn that; about a third of the expressions the analysis names are too long. `short_code` stops writing
at the 41st character or at a line break, and otherwise gives exactly what `ast.unparse` gives.
"""

from __future__ import annotations

import ast

_Unparser = getattr(ast, "_Unparser", None)  # the class behind `ast.unparse` (Python 3.9 to 3.14)


class _TooLong(Exception):
    """The code written so far is already longer than the limit, or has a line break."""


if _Unparser is not None:

    class _ShortUnparser(_Unparser):  # type: ignore[misc, valid-type]
        """`ast.unparse`'s writer, counting what it writes into the result.

        The unparser writes into its `_source` list, or for a while into another list (`buffered`, for
        f-strings) that it then writes into the result; so only what reaches the result's list counts.
        Nothing is ever removed from that list, so once it holds more than `limit` characters, or a
        line break, the finished text would too.
        """

        def __init__(self, limit: int | None = None, **options: bool) -> None:
            # (for an f-string the unparser makes another of its own class, with an option and no
            # limit: what that one writes is written into this one's result, where it counts)
            super().__init__(**options)
            self._limit = limit
            self._written = 0
            self._result: list[str] = []

        def visit(self, node: ast.AST) -> str:
            self._source = self._result = []
            self.traverse(node)
            return "".join(self._source)

        def write(self, *text: str) -> None:
            super().write(*text)
            if self._limit is None or self._source is not self._result:
                return
            for piece in text:
                self._written += len(piece)
                if "\n" in piece:
                    raise _TooLong
            if self._written > self._limit:
                raise _TooLong


def short_code(expr: ast.AST, limit: int = 40) -> str | None:
    """`ast.unparse(expr)` when it is at most `limit` characters on one line, else None."""
    if _Unparser is None:  # pragma: no cover - a Python without the private class: the plain way
        text = ast.unparse(expr)
        return text if len(text) <= limit and "\n" not in text else None
    try:
        return _ShortUnparser(limit).visit(expr)
    except _TooLong:
        return None
