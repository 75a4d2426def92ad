"""The trusted side: run the released checks of a lab against a submission's final state, in a fresh
process that no submitted code ever ran in.

The grader starts this module with ``python -I -S`` (no ``PYTHONPATH``, no user or site ``.pth`` files),
``sys.path`` set to a fresh copy of devicekit and the grader taken when the grader started, plus the
environment's site-packages for torch. It receives the listening socket the submission's kernel connects
to (`devicekit_grade._kernel.serve`). For each exercise it asks the kernel for the lab's ``target`` (the
learner's function or value) and runs the exercise's check on it *here*. A target that is plain data
arrives as data; a function arrives as a `Remote` stand-in: calling it sends the arguments to the kernel,
which calls the learner's function and sends back the result as data. So the learner's code computes the
answers, and the released checks, running where the learner's code cannot reach them, judge them.

Prints one JSON object on stdout: ``{"results": [...], "versions": {...}, "modules": [...]}``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import struct
import sys
from typing import Any

from devicekit_grade import wire

HANDLE = "__devicekit_grade_handle__"


class KernelGone(Exception):
    """The kernel stopped answering (time limit, crash, or a reply that is not plain data)."""


class NeedsReplay(Exception):
    """The check needs the learner's object itself, not data: the grader replays this exercise."""


#: Handles of these types are plain functions: calling them remotely with data is all a check needs.
FUNCTION_TYPES = ("function", "method", "builtin_function_or_method", "partial", "cython_function_or_method")


class Remote:
    """A learner's object that is not plain data (a function, a module...), living in the kernel."""

    _channel: Channel
    _id: int

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._channel.request({"op": "call", "id": self._id, "args": list(args), "kwargs": kwargs})

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_channel", "_id"):
            raise AttributeError(name)
        return self._channel.request({"op": "getattr", "id": self._id, "name": name})

    def __iter__(self):
        iterator = self._channel.request({"op": "iter", "id": self._id})
        while True:
            reply = iterator._channel.request({"op": "next", "id": iterator._id}, stop=True)
            if reply is StopIteration:
                return
            yield reply

    def __repr__(self) -> str:
        return f"<the notebook's {type(self).__name__}>"


def _known_class(mro: Any) -> type | None:
    """The first class of the learner's exception's MRO that this process already has (``pickle``'s
    ``UnpicklingError``, ``RuntimeError``...): looked up among modules already imported, never imported."""
    for entry in mro if isinstance(mro, list) else []:
        try:
            module, qualname = str(entry[0]), str(entry[1])
        except (IndexError, TypeError):
            continue
        value: Any = sys.modules.get(module)
        for part in qualname.split("."):
            value = getattr(value, part, None) if value is not None else None
        if isinstance(value, type) and issubclass(value, Exception):
            return value
    return None


def _raise_as_learner(kind: str, builtin: bool, message: str, line: int, mro: Any = None) -> None:
    """Raise the learner's exception, as the nearest class this process knows, so that its traceback ends
    at the learner's line number."""
    import builtins

    cls = _known_class(mro) or (getattr(builtins, kind, None) if builtin else None)
    exc: Exception | None = None
    if isinstance(cls, type) and issubclass(cls, Exception):
        try:
            exc = cls(message)
        except Exception:
            exc = None
    if exc is None:
        exc = type(kind if kind.isidentifier() else "Error", (Exception,), {})(message)
    code = compile("\n" * max(line - 1, 0) + "raise exc", "<notebook>", "exec")
    exec(code, {"exc": exc})


class Channel:
    def __init__(self, sock: socket.socket, timeout: float) -> None:
        self.sock, self.timeout, self.broken = sock, timeout, ""
        self.nondata = False  # set when the current check met an object that is not plain data
        self.raised = False  # set when the learner's code raised (other than the lab's stub)

    def _plain(self, value: Any) -> Any:
        if isinstance(value, Remote):
            return {HANDLE: value._id}
        if isinstance(value, list):
            return [self._plain(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self._plain(v) for v in value)
        if isinstance(value, dict):
            return {k: self._plain(v) for k, v in value.items()}
        return value

    def request(self, message: dict[str, Any], stop: bool = False) -> Any:
        if self.broken:
            raise KernelGone(self.broken)
        for key in ("args", "kwargs"):
            if key in message:
                message[key] = self._plain(message[key])
                try:
                    wire.decode(wire.encode(message[key]))
                except Exception:
                    self.nondata = True
                    raise NeedsReplay("the check passes an object that is not plain data") from None
        try:
            wire.send(self.sock, message)
            reply = wire.receive(self.sock)
        except TimeoutError:
            self.broken = f"the notebook's code did not answer within {self.timeout:.0f} s"
            raise KernelGone(self.broken) from None
        except (OSError, wire.WireError) as exc:
            self.broken = f"the kernel stopped answering ({exc})"
            raise KernelGone(self.broken) from None
        kind = reply.get("kind") if isinstance(reply, dict) else None
        if kind == "data":
            return reply.get("value")
        if kind == "handle":
            name = str(reply.get("type") or "object")
            if name not in FUNCTION_TYPES:
                self.nondata = True
            cls = type(name if name.isidentifier() else "object", (Remote,), {})
            obj = object.__new__(cls)
            object.__setattr__(obj, "_channel", self)
            object.__setattr__(obj, "_id", int(reply["id"]))
            return obj
        if kind == "stop" and stop:
            return StopIteration
        if kind == "missing":
            return _MISSING
        if kind == "error":
            self.raised |= reply.get("type") != "NotImplementedError"
            _raise_as_learner(
                str(reply.get("type", "Error")),
                bool(reply.get("builtin")),
                str(reply.get("message", "")),
                int(reply.get("line") or 0),
                reply.get("mro"),
            )
        self.broken = "the kernel sent an answer the grader does not understand"
        raise KernelGone(self.broken)


_MISSING = object()


def _accept(listener: socket.socket, uid: int | None, timeout: float) -> socket.socket:
    listener.settimeout(timeout)
    while True:
        conn, _ = listener.accept()
        if uid is None:
            return conn
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        if struct.unpack("3i", creds)[1] == uid:
            return conn
        conn.close()  # not the submission's own kernel


def evaluate(lab: str, channel: Channel | None, why_not: str) -> list[dict[str, Any]]:
    from devicekit_labs import exercises_for, run

    out = []
    for ex in exercises_for(lab):
        row: dict[str, Any] = {"key": ex.key, "number": ex.number, "target": ex.target}
        if not ex.target:
            row["status"] = "no-target"
        elif channel is None:
            row["status"], row["why"] = "not-evaluated", why_not
        else:
            try:
                value = channel.request({"op": "get", "name": ex.target})
            except KernelGone as gone:
                row["status"], row["why"] = "not-evaluated", str(gone)
                out.append(row)
                continue
            except Exception as exc:  # getting the name raised in the kernel
                value, row["raised"] = None, f"{type(exc).__name__}: {exc}"
            if value is _MISSING:
                row["status"] = "target-missing"
            else:
                result = run(lab, ex.key, value)
                # Not plain data, or the learner's code raised: the check may depend on state of its own
                # process (a strict_devices() block, a default device) that a remote call does not carry.
                # A pass here is final; otherwise the exercise is replayed with the learner's objects.
                if not result.passed and (channel.nondata or channel.raised) and not channel.broken:
                    row["status"] = "replay"
                else:
                    row.update(status="checked", passed=result.passed, en=result.en, zh=result.zh)
                if channel.broken:
                    row["why"] = channel.broken
            channel.nondata = channel.raised = False
        out.append(row)
    return out


def versions() -> dict[str, str]:
    import torch

    import devicekit
    from devicekit.device import mismatch_device

    return {
        "devicekit": str(getattr(devicekit, "__version__", "?")),
        "torch": torch.__version__,
        "check_device": str(mismatch_device()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lab")
    parser.add_argument("--fd", type=int)
    parser.add_argument("--uid", type=int)
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--connect-timeout", type=float, default=60)
    parser.add_argument("--probe", action="store_true", help="load every lab's checks, list the modules")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {}
    if args.probe:
        from devicekit_labs import exercises_for, known_labs

        result["labs"] = {
            lab: [{"key": e.key, "number": e.number, "target": e.target} for e in exercises_for(lab)]
            for lab in known_labs()
        }
    else:
        listener = socket.socket(fileno=args.fd)
        channel, why = None, ""
        try:
            conn = _accept(listener, args.uid, args.connect_timeout)
            conn.settimeout(args.timeout)
            channel = Channel(conn, args.timeout)
        except TimeoutError:
            why = "the notebook never reached the end of its run, so its answers could not be collected"
        except OSError as exc:
            why = f"no connection from the kernel ({exc})"
        result["results"] = evaluate(args.lab, channel, why)
        if channel is not None:
            try:
                wire.send(channel.sock, {"op": "bye"})
            except OSError:
                pass
    result["versions"] = versions()
    result["modules"] = sorted(
        {str(getattr(m, "__file__", "") or "") for m in list(sys.modules.values())} - {""}
    )
    sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    code = main()
    os._exit(code)
