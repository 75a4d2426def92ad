"""Runs *inside* the kernel executing a submission: the untrusted side. Nothing here decides a score.

The grader adds two cells to its copy of a submission (never to the submission itself):

* first, `setup`: hides the kernel's ``/proc`` entries from other processes of its user;
* last, `serve`: connects to the grader's socket and answers the evaluator's requests about the notebook's
  final state: the value of a name (``get``), calling an object (``call``), an attribute (``getattr``),
  iterating (``iter``/``next``). Every answer is plain data (see `devicekit_grade.wire`) or, for an object
  that is not plain data (a function, a module), a numbered handle the evaluator can call in turn. The
  checks themselves run in the evaluator, a separate process this kernel never touches.
"""

from __future__ import annotations

import builtins
import socket
import sys
import traceback
from typing import Any

from devicekit_grade import wire

INJECTED = "# devicekit-grade: injected cell"
HANDLE = "__devicekit_grade_handle__"


def setup() -> None:
    """First injected cell."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
        except Exception:
            pass


class _Server:
    def __init__(self, namespace: dict[str, Any]) -> None:
        self.namespace = namespace
        self.handles: dict[int, Any] = {}

    def _wrap(self, value: Any) -> dict[str, Any]:
        try:
            data = wire.encode(value)
            wire.decode(data)  # what the evaluator will accept: plain data only
            return {"kind": "data", "value": value}
        except Exception:
            number = len(self.handles) + 1
            self.handles[number] = value
            return {
                "kind": "handle",
                "id": number,
                "type": type(value).__name__[:100],
                "callable": callable(value),
            }

    def _unwrap(self, value: Any) -> Any:
        if isinstance(value, dict) and set(value) == {HANDLE}:
            return self.handles[int(value[HANDLE])]
        if isinstance(value, list):
            return [self._unwrap(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self._unwrap(v) for v in value)
        if isinstance(value, dict):
            return {k: self._unwrap(v) for k, v in value.items()}
        return value

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        try:
            if op == "get":
                name = str(request["name"])
                if name not in self.namespace:
                    return {"kind": "missing"}
                return self._wrap(self.namespace[name])
            target = self.handles[int(request["id"])]
            if op == "call":
                args = self._unwrap(list(request.get("args", [])))
                kwargs = self._unwrap(dict(request.get("kwargs", {})))
                return self._wrap(target(*args, **kwargs))
            if op == "getattr":
                return self._wrap(getattr(target, str(request["name"])))
            if op == "iter":
                return self._wrap(iter(target))
            if op == "next":
                try:
                    return self._wrap(next(target))
                except StopIteration:
                    return {"kind": "stop"}
            return {"kind": "error", "type": "ValueError", "message": f"unknown request {op!r}", "line": 0}
        except BaseException as exc:  # the learner's code failed: say how, as data
            frames = traceback.extract_tb(exc.__traceback__)
            line = frames[-1].lineno if frames else 0
            return {
                "kind": "error",
                "type": type(exc).__name__[:100],
                "mro": [[str(c.__module__)[:100], str(c.__qualname__)[:100]] for c in type(exc).__mro__][:20],
                "builtin": type(exc).__name__ in vars(builtins),
                "message": str(exc)[:1000],
                "line": int(line or 0),
            }


def serve(address: str) -> None:
    """Last injected cell: answer the evaluator until it says goodbye or hangs up."""
    from IPython import get_ipython

    server = _Server(get_ipython().user_ns)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(address)
    try:
        while True:
            try:
                request = wire.receive(sock)
            except (wire.WireError, OSError):
                return
            if not isinstance(request, dict) or request.get("op") == "bye":
                return
            reply = server.answer(request)
            try:
                wire.send(sock, reply)
            except Exception as exc:  # e.g. a value that could be saved once but not twice
                wire.send(sock, {"kind": "error", "type": "TypeError", "message": str(exc)[:300], "line": 0})
    finally:
        sock.close()
