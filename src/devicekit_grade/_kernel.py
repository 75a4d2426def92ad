"""Runs *inside* the kernel executing a submission: the untrusted side. Nothing here decides a score.

The grader adds two cells to its copy of a submission (never to the submission itself):

* first, `setup`: hides the kernel's ``/proc`` entries from other processes of its user;
* last, `serve`: connects to the grader's socket and answers the evaluator's requests about the notebook's
  final state. For a two-part (``@judged``) exercise the request is ``probe``: the kernel runs the
  exercise's probe, taken from the grader's own copy of the lab module (``probes`` below), on the
  notebook's target object and answers with the observations, plain data that crosses as `torch.save`
  bytes. For a legacy one-piece check the evaluator asks for the value of a name (``get``), calls an object
  (``call``), reads an attribute (``getattr``) or iterates (``iter``/``next``); an object that is not plain
  data comes back as a numbered handle. Every answer is plain data (see `devicekit_grade.wire`). The
  judges run in the evaluator, a separate process this kernel never touches, and they take nothing from
  here but data: a forged answer can only be wrong data, judged like any other.
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


def _load_probes(path: str, lab: str) -> dict[str, Any]:
    """{key: probe} of ``lab``: the installed checks, then the grader's copy of the lab module at ``path``
    (when given) executed over them, so the probes are the version the grader's judges expect."""
    import importlib.util

    import devicekit_labs

    exercises = {ex.key: ex for ex in devicekit_labs.exercises_for(lab)}
    if path:
        import sys

        name = f"devicekit_grade_probes_{lab[:2]}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is not None and spec.loader is not None:
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module  # dataclasses (and pickling) look their module up there
            spec.loader.exec_module(module)
            registry = getattr(devicekit_labs, "_REGISTRY", {})
            exercises.update({k: ex for (owner, k), ex in registry.items() if owner == lab})
    return {key: ex.probe for key, ex in exercises.items() if getattr(ex, "probe", None) is not None}


class ProbeTimeout(BaseException):
    """A probe ran past its time limit (raised by a timer signal inside the learner's code)."""


def _with_time_limit(seconds: float, fn: Any, *args: Any) -> Any:
    """``fn(*args)``, stopped with `ProbeTimeout` after ``seconds`` (a ``SIGALRM`` timer; main thread)."""
    import signal
    import threading

    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        return fn(*args)

    def expire(signum: int, frame: Any) -> None:
        raise ProbeTimeout(f"did not finish within {seconds:.0f} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class _Server:
    def __init__(
        self, namespace: dict[str, Any], probes: dict[str, Any] | None = None, timeout: float = 0
    ) -> None:
        self.namespace = namespace
        self.handles: dict[int, Any] = {}
        self.probes = probes or {}
        self.timeout = timeout

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
            if op == "probe":
                name, key = str(request["name"]), str(request["key"])
                if name not in self.namespace:
                    return {"kind": "missing"}
                if key not in self.probes:
                    return {"kind": "error", "type": "LookupError", "message": f"no probe {key!r}", "line": 0}
                try:
                    observations = _with_time_limit(self.timeout, self.probes[key], self.namespace[name])
                except ProbeTimeout as late:
                    return {"kind": "error", "type": "ProbeTimeout", "message": str(late), "line": 0}
                try:
                    wire.decode(wire.encode(observations))
                except Exception as exc:
                    return {"kind": "error", "type": "ProbeError", "message": str(exc)[:300], "line": 0}
                return {"kind": "observations", "value": observations}
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


def serve(address: str, lab: str = "", probes: str = "", timeout: float = 0) -> None:
    """Last injected cell: answer the evaluator until it says goodbye or hangs up. ``probes``: the grader's
    copy of the lab's check module (a file in the submission's box), whose probes ``probe`` runs, each
    stopped after ``timeout`` seconds so that one hanging answer costs its exercise only."""
    from IPython import get_ipython

    table: dict[str, Any] = {}
    if lab:
        try:
            table = _load_probes(probes, lab)
        except Exception:  # no probes: the evaluator reports the exercises as not checked
            table = {}
    server = _Server(get_ipython().user_ns, table, timeout)
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
