"""The trusted side: judge a submission's answers in a fresh process that no submitted code ever ran in.

The grader starts this module with ``python -I -S`` (no ``PYTHONPATH``, no user or site ``.pth`` files),
``sys.path`` set to a fresh copy of devicekit and the grader taken when the grader started, plus the
environment's site-packages for torch. It receives the listening socket the submission's kernel connects
to (`devicekit_grade._kernel.serve`).

* A two-part exercise (``@judged``): it asks the kernel to run the exercise's probe on the lab's
  ``target``; the observations come back as `torch.save` bytes, loaded with ``weights_only=True`` and
  checked (`devicekit_grade.observations`); then the public judge and the instructor's hidden judges
  (``--hidden``: ``HIDDEN = {key: judge}`` in ``labNN.py``) read them *here*. No learner object ever
  reaches this process.
* A legacy one-piece check (``@exercise``, kept while the labs are converted): the check runs here on a
  `Remote` stand-in of the target, whose calls run in the kernel and return data. A check that needs the
  learner's object itself (not plain data) is *not scored* (there is no replay): the row says so.

Prints one JSON object on stdout: ``{"results": [...], "versions": {...}, "modules": [...]}``.

**Zygote** (``--zygote FD``, `serve_forks`): the grader starts this module once per run; it imports torch,
devicekit, every lab's checks and the hidden judges, answers ``--probe``, then forks one fresh child per
submission on request. Each child is the same fresh, submission-free process a new ``python -I -S`` would be,
without paying for Python and torch to start again (about 2 s of CPU per submission on a laptop).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import struct
import sys
from typing import Any, NoReturn

from devicekit_grade import wire

HANDLE = "__devicekit_grade_handle__"


class KernelGone(Exception):
    """The kernel stopped answering (time limit, crash, or a reply that is not plain data); ``args``: why,
    in English and in Chinese."""

    def __init__(self, en: str, zh: str) -> None:
        super().__init__(en, zh)
        self.en, self.zh = en, zh

    def __str__(self) -> str:
        return self.en


class NeedsObject(Exception):
    """A legacy check needs the learner's object itself, not data: it cannot be scored here."""


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
        self.sock, self.timeout = sock, timeout
        self.broken, self.broken_zh = "", ""  # why the channel broke (en, zh); empty while it works
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
            raise KernelGone(self.broken, self.broken_zh)
        for key in ("args", "kwargs"):
            if key in message:
                message[key] = self._plain(message[key])
                try:
                    wire.decode(wire.encode(message[key]))
                except Exception:
                    self.nondata = True
                    raise NeedsObject("the check passes an object that is not plain data") from None
        try:
            wire.send(self.sock, message)
            reply = wire.receive(self.sock)
        except TimeoutError:
            self._break(
                f"the notebook's code did not answer within {self.timeout:.0f} s",
                f"notebook 的代码在 {self.timeout:.0f} 秒内没有应答",
            )
        except (OSError, wire.WireError) as exc:
            self._break(f"the kernel stopped answering ({exc})", f"内核不再应答（{exc}）")
        kind = reply.get("kind") if isinstance(reply, dict) else None
        if kind in ("data", "observations"):
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
        self._break(
            "the kernel sent an answer the grader does not understand", "内核发来了评分器无法理解的应答"
        )

    def _break(self, en: str, zh: str) -> NoReturn:
        self.broken, self.broken_zh = en, zh
        raise KernelGone(en, zh) from None


_MISSING = object()


_HIDDEN_LOADED: dict[str, dict[str, dict[str, Any]]] = {}


def load_hidden(folder: str | None) -> dict[str, dict[str, Any]]:
    """{lab: {key: hidden judge}} from the ``labNN.py`` files in ``folder`` (each declares ``LAB`` and
    ``HIDDEN = {key: judge}``). A file that does not load is an error: grading without it would be wrong.
    Loaded once per process (the zygote loads them before it forks)."""
    if folder and folder in _HIDDEN_LOADED:
        return _HIDDEN_LOADED[folder]
    import importlib.util
    import re
    from pathlib import Path

    out: dict[str, dict[str, Any]] = {}
    if not folder:
        return out
    for path in sorted(Path(folder).glob("lab[0-9][0-9].py")):
        spec = importlib.util.spec_from_file_location(f"devicekit_grade_hidden_{path.stem}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        hidden = getattr(module, "HIDDEN", None)
        if not isinstance(hidden, dict):
            raise ValueError(f"{path.name}: no HIDDEN = {{key: judge}} dict")
        lab = getattr(module, "LAB", None)
        if not isinstance(lab, str):
            match = re.match(r"lab(\d\d)$", path.stem)
            from devicekit_labs import known_labs

            lab = next((k for k in known_labs() if match and k.startswith(match.group(1) + "-")), path.stem)
        out[lab] = {str(k): v for k, v in hidden.items() if callable(v)}
    _HIDDEN_LOADED[folder] = out
    return out


def judge_observations(ex: Any, observations: Any, hidden: dict[str, Any]) -> dict[str, Any]:
    """The row of a judged exercise: the public judge, then the hidden one, on checked observations."""
    from devicekit_grade.observations import BadObservations, check_observations
    from devicekit_labs import Fail

    def verdict(passed: bool, en: str, zh: str) -> dict[str, Any]:
        mark = "✓" if passed else "✗"
        return {
            "status": "checked",
            "how": "judged",
            "passed": passed,
            "en": f"{mark} Exercise {ex.number} ({ex.title_en}): {en}",
            "zh": f"{mark} 练习 {ex.number}（{ex.title_zh}）：{zh}",
        }

    try:
        check_observations(observations)
    except BadObservations as bad:
        row = verdict(
            False,
            f"the grader could not read what your answer produced ({bad}).",
            f"评分器无法读取你的答案产生的结果（{bad}）。",
        )
        row["flag"] = "bad-observations"
        return row
    judges = [ex.judge] + ([hidden[ex.key]] if ex.key in hidden else [])
    for number, judge in enumerate(judges):
        try:
            judge(observations)
        except Fail as fail:
            row = verdict(False, str(fail.en), str(fail.zh))
            if number:
                row["tier"] = "hidden"
            return row
        except Exception as exc:  # a judge that cannot read these observations: not a pass
            row = verdict(
                False,
                "the grader could not judge what your answer produced; your instructor will look at it.",
                "评分器无法判定你的答案产生的结果，老师会人工查看。",
            )
            row.update(flag="judge-error", why=f"{type(exc).__name__}: {exc}"[:300])
            return row
    return verdict(True, "passed.", "通过。")


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


def evaluate(
    lab: str, channel: Channel | None, why_not: tuple[str, str], hidden: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Each exercise of ``lab`` judged through ``channel``; without one, every exercise is not evaluated,
    for the reason ``why_not`` (en, zh). A row's ``why`` and ``why_zh`` say why it could not be checked."""
    from devicekit_labs import exercises_for, run

    hidden = hidden or {}
    out = []
    import time

    for ex in exercises_for(lab):
        started = time.monotonic()
        row: dict[str, Any] = {"key": ex.key, "number": ex.number, "target": ex.target}
        is_judged = ex.probe is not None and ex.judge is not None
        if not is_judged:
            row["legacy"] = True
        if not ex.target:
            row["status"] = "no-target"
        elif channel is None:
            row["status"], row["why"], row["why_zh"] = "not-evaluated", *why_not
        elif is_judged:
            try:
                value = channel.request({"op": "probe", "key": ex.key, "name": ex.target})
            except KernelGone as gone:
                row["status"], row["why"], row["why_zh"] = "not-evaluated", gone.en, gone.zh
                row["seconds"] = round(time.monotonic() - started, 2)
                out.append(row)
                continue
            except Exception as exc:  # the probe itself failed in the kernel (not the learner's call)
                row.update(status="checked", how="judged", passed=False)
                if type(exc).__name__ == "ProbeTimeout":
                    row["en"] = (
                        f"✗ Exercise {ex.number} ({ex.title_en}): your code {exc} (an endless loop, or "
                        "waiting for something that never comes); the check was stopped."
                    )
                    row["zh"] = (
                        f"✗ 练习 {ex.number}（{ex.title_zh}）：你的代码运行超时（{exc}），可能是死循环，"
                        "或在等待永远不会到来的东西；检查已被中止。"
                    )
                    row["seconds"] = round(time.monotonic() - started, 2)
                    out.append(row)
                    continue
                row["en"] = (
                    f"✗ Exercise {ex.number} ({ex.title_en}): the check could not run on your answer "
                    f"({type(exc).__name__}: {str(exc)[:300]})."
                )
                row["zh"] = (
                    f"✗ 练习 {ex.number}（{ex.title_zh}）：检查无法在你的答案上运行"
                    f"（{type(exc).__name__}: {str(exc)[:300]}）。"
                )
                row["seconds"] = round(time.monotonic() - started, 2)
                out.append(row)
                continue
            if value is _MISSING:
                row["status"] = "target-missing"
            else:
                row.update(judge_observations(ex, value, hidden))
        else:
            try:
                value = channel.request({"op": "get", "name": ex.target})
            except KernelGone as gone:
                row["status"], row["why"], row["why_zh"] = "not-evaluated", gone.en, gone.zh
                row["seconds"] = round(time.monotonic() - started, 2)
                out.append(row)
                continue
            except Exception as exc:  # getting the name raised in the kernel
                value, row["raised"] = None, f"{type(exc).__name__}: {exc}"
            if value is _MISSING:
                row["status"] = "target-missing"
            else:
                result = run(lab, ex.key, value)
                if not result.passed and (channel.nondata or channel.raised) and not channel.broken:
                    # the legacy check needs the learner's object itself, or state of the learner's process
                    # (a strict_devices() block) that a remote call does not carry: a fail here may be
                    # wrong, and nothing is ever replayed, so the exercise is not scored, and says so
                    row["status"] = "not-evaluated"
                    row["why"] = (
                        "this exercise still has a legacy one-piece check, which needs the notebook's own "
                        "objects; the grader judges only data (update devicekit_labs to the two-part checks)"
                    )
                    row["why_zh"] = (
                        "这道练习仍是旧式的一体自测，需要 notebook 里的对象本身，而评分器只判定数据"
                        "（请把 devicekit_labs 更新为两段式自测）"
                    )
                else:
                    row.update(status="checked", how="legacy", passed=result.passed)
                    row.update(en=result.en, zh=result.zh)
                if channel.broken:
                    row["why"], row["why_zh"] = channel.broken, channel.broken_zh
            channel.nondata = channel.raised = False
        row["seconds"] = round(time.monotonic() - started, 2)
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
    parser.add_argument("--hidden", help="folder of the hidden judges (labNN.py with HIDDEN)")
    parser.add_argument("--zygote", type=int, help="answer --probe, then fork a child per request on this fd")
    args = parser.parse_args(argv)
    if args.zygote is not None:
        return serve_forks(args.zygote, args.hidden)
    result: dict[str, Any] = {}
    if args.probe:
        from devicekit_labs import exercises_for, known_labs

        hidden = load_hidden(args.hidden)
        result["labs"] = {
            lab: [
                {
                    "key": e.key,
                    "number": e.number,
                    "target": e.target,
                    "title_en": e.title_en,
                    "title_zh": e.title_zh,
                    "judged": e.probe is not None and e.judge is not None,
                    "hidden": e.key in hidden.get(lab, {}),
                }
                for e in exercises_for(lab)
            ]
            for lab in known_labs()
        }
        result["hidden_unknown"] = sorted(
            f"{lab}:{key}"
            for lab, keys in hidden.items()
            for key in keys
            if key not in {e["key"] for e in result["labs"].get(lab, [])}
        )
    else:
        listener = socket.socket(fileno=args.fd)
        channel, why = None, ("", "")
        try:
            conn = _accept(listener, args.uid, args.connect_timeout)
            conn.settimeout(args.timeout)
            channel = Channel(conn, args.timeout)
        except TimeoutError:
            why = (
                "the notebook never reached the end of its run, so its answers could not be collected",
                "notebook 没有运行到最后，所以收集不到它的答案",
            )
        except OSError as exc:
            why = (f"no connection from the kernel ({exc})", f"内核没有连上评分器（{exc}）")
        result["results"] = evaluate(args.lab, channel, why, load_hidden(args.hidden).get(args.lab, {}))
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


#: The placeholder for the listening socket's descriptor in a request to the zygote (its number differs
#: between the grader and the zygote, which receives a copy of it).
FD_PLACEHOLDER = "@listener"


def serve_forks(control_fd: int, hidden: str | None) -> int:
    """The zygote's loop: answer ``--probe`` on stdout (one JSON line: this loads torch, every lab's checks
    and the hidden judges), then, for each request on the ``AF_UNIX`` ``SOCK_SEQPACKET`` socket
    ``control_fd`` (``{"args": [...]}`` plus three descriptors: the listening socket, and the write ends of
    the child's stdout and stderr pipes), fork a child that runs `main` with those arguments and exits.

    The child writes its pid as the first line of its stdout (the grader kills it when it runs out of time),
    then `main`'s JSON. The zygote never runs a request itself and never talks to a kernel; it exits when
    the grader closes its end of the socket."""
    import signal
    import traceback

    main(["--probe", *(["--hidden", hidden] if hidden else [])])
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel, never zombies
    control = socket.socket(fileno=control_fd)
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 1 << 16, 3)
        except (OSError, InterruptedError):
            message, fds = b"", []
        if not message:  # the grader is done: end at once (torch's interpreter teardown takes seconds)
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
        try:
            request = json.loads(message)
            listener, out, err = fds
        except (ValueError, TypeError):
            for fd in fds:
                os.close(fd)
            continue
        pid = os.fork()
        if pid == 0:  # the child: a fresh evaluator for one submission
            code = 1
            try:
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                control.close()
                os.dup2(out, 1)
                os.dup2(err, 2)
                os.close(out)
                os.close(err)
                os.write(1, f"{os.getpid()}\n".encode())
                import torch

                torch.set_num_threads(1)  # tiny tensors; and no OpenMP pool inherited across the fork
                args = [str(listener) if a == FD_PLACEHOLDER else str(a) for a in request["args"]]
                code = main(args)
            except BaseException:
                traceback.print_exc()
            finally:
                with contextlib.suppress(Exception):
                    sys.stdout.flush()
                    sys.stderr.flush()
                os._exit(code)
        for fd in fds:
            os.close(fd)


if __name__ == "__main__":
    code = main()
    os._exit(code)
