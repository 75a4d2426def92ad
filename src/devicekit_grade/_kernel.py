"""Runs *inside* the kernel executing a submission: the untrusted side. Nothing here decides a score.

The grader adds two cells to its copy of a submission (never to the submission itself):

* first, `setup`: hides the kernel's ``/proc`` entries from other processes of its user;
* last, `serve`: connects to the grader's socket and answers the evaluator's one kind of request,
  ``probe``: run an exercise's probe, taken from the grader's own copy of the lab module (``probes``
  below), on the notebook's target object, and answer with the observations, plain data that crosses as
  `torch.save` bytes (`devicekit_grade.wire`). The judges run in the evaluator, a separate process this
  kernel never touches, and they take nothing from here but data: a forged answer can only be wrong data,
  judged like any other.
"""

from __future__ import annotations

import socket
import sys
from typing import Any

from devicekit_grade import wire

INJECTED = "# devicekit-grade: injected cell"


def setup() -> None:
    """First injected cell. Also asks `devicekit.distributed.spawn` to fork the ranks a notebook starts from
    a fork server that imported torch once (``DEVICEKIT_PRELOADED_RANKS``): the same fresh interpreters
    with the same preparation, without importing torch and Dynamo again in each (lab 8 starts six ranks, lab
    11 six, about 3 s of CPU each). The variable lives in this kernel only, and the fork server in its box."""
    import os

    os.environ["DEVICEKIT_PRELOADED_RANKS"] = "1"
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


def answer(request: Any, namespace: dict[str, Any], probes: dict[str, Any], timeout: float) -> dict[str, Any]:
    """The reply to one ``probe`` request: ``observations`` (plain data), ``missing`` (the notebook has no
    such name), or ``error`` with the exception's type and message (the probe itself failed, or ran past
    ``timeout`` seconds: ``ProbeTimeout``)."""
    try:
        if not isinstance(request, dict) or request.get("op") != "probe":
            raise ValueError(f"unknown request {request!r}"[:200])
        name, key = str(request["name"]), str(request["key"])
        if name not in namespace:
            return {"kind": "missing"}
        if key not in probes:
            raise LookupError(f"no probe {key!r}")
        observations = _with_time_limit(timeout, probes[key], namespace[name])
    except BaseException as exc:  # the probe failed in the kernel: say how, as data
        return {"kind": "error", "type": type(exc).__name__[:100], "message": str(exc)[:1000]}
    try:
        wire.decode(wire.encode(observations))  # what the evaluator will accept: plain data only
    except Exception as exc:
        return {"kind": "error", "type": "ProbeError", "message": str(exc)[:300]}
    return {"kind": "observations", "value": observations}


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
    namespace = get_ipython().user_ns
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
            reply = answer(request, namespace, table, timeout)
            try:
                wire.send(sock, reply)
            except Exception as exc:  # e.g. a value that could be saved once but not twice
                wire.send(sock, {"kind": "error", "type": "ProbeError", "message": str(exc)[:300]})
    finally:
        sock.close()
