"""The trusted side: judge a submission's answers in a fresh process that no submitted code ever ran in.

The grader starts this module once per run with ``python -I -S`` (no ``PYTHONPATH``, no user or site
``.pth`` files), ``sys.path`` set to a copy of devicekit and the grader taken when the grader started, plus
the environment's site-packages for torch (see "How it starts" below). Each child receives the listening
socket the submission's kernel connects to (`devicekit_grade._kernel.serve`).

For each exercise (``@judged``) it asks the kernel to run the exercise's probe on the lab's ``target``;
the observations come back as `torch.save` bytes, loaded with ``weights_only=True`` and checked
(`devicekit_grade.observations`); then the public judge and the instructor's hidden judges (``--hidden``:
``HIDDEN = {key: judge}`` in ``labNN.py``) read them *here*. No learner object ever reaches this process.

Prints one JSON object on stdout: ``{"results": [...], "versions": {...}, "modules": [...]}``.

**How it starts** (`serve_forks`, the only way): the grader starts this module once per run with ``--zygote
FD``; it imports torch, devicekit, every lab's checks and the hidden judges, answers ``--probe``, and then
forks one child per submission. Each child is the fresh, submission-free process a new ``python -I -S``
would be (the zygote never talks to a kernel or reads a submission's data), without paying for Python and
torch to start again: about 1.5 s of CPU per submission.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import sys
import time
from typing import Any, NoReturn

from devicekit.messages import Message
from devicekit_grade import wire


class KernelGone(Exception):
    """The kernel stopped answering (time limit, crash, or a reply that is not plain data); ``message``
    says why."""

    def __init__(self, message: Message) -> None:
        super().__init__(message.en)
        self.message = message


class Channel:
    """The evaluator's end of the kernel's connection: one ``probe`` request, one reply, at a time."""

    def __init__(self, sock: socket.socket, timeout: float) -> None:
        self.sock, self.timeout = sock, timeout
        self.broken: Message | None = None  # why the channel broke; None while it works

    def probe(self, key: str, name: str) -> dict[str, Any]:
        """The kernel's reply to running the probe of exercise ``key`` on its variable ``name``: a dict
        whose ``kind`` is ``observations`` (with ``value``), ``missing`` or ``error`` (``type``,
        ``message``); `KernelGone` when the kernel does not answer with one of those."""
        if self.broken is not None:
            raise KernelGone(self.broken)
        try:
            self.sock.settimeout(self.timeout)  # (receiving with a deadline shortens it)
            wire.send(self.sock, {"op": "probe", "key": key, "name": name})
            reply = wire.receive(self.sock, deadline=time.monotonic() + self.timeout)
        except TimeoutError:
            self._break(
                Message(
                    f"the notebook's code did not answer within {self.timeout:.0f} s",
                    f"notebook 的代码在 {self.timeout:.0f} 秒内没有应答",
                )
            )
        except (OSError, wire.WireError) as exc:
            self._break(Message(f"the kernel stopped answering ({exc})", f"内核不再应答（{exc}）"))
        if isinstance(reply, dict) and reply.get("kind") in ("observations", "missing", "error"):
            return reply
        self._break(
            Message(
                "the kernel sent an answer the grader does not understand", "内核发来了评分器无法理解的应答"
            )
        )

    def _break(self, message: Message) -> NoReturn:
        self.broken = message
        raise KernelGone(message) from None


def load_hidden(folder: str | None) -> dict[str, dict[str, Any]]:
    """{lab: {key: hidden judge}} from the ``labNN.py`` files in ``folder`` (each declares ``LAB`` and
    ``HIDDEN = {key: judge}``). A file that does not load is an error: grading without it would be wrong.
    """
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


def evaluate(
    lab: str, channel: Channel | None, why_not: Message, hidden: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Each exercise of ``lab`` judged through ``channel``; without one, every exercise is not evaluated,
    for the reason ``why_not``. A row's ``why`` and ``why_zh`` say why it could not be checked."""
    import time

    from devicekit_labs import exercises_for

    hidden = hidden or {}
    out = []
    for ex in exercises_for(lab):
        started = time.monotonic()
        row: dict[str, Any] = {"key": ex.key, "number": ex.number, "target": ex.target}
        if not ex.target or ex.probe is None or ex.judge is None:
            row["status"] = "no-target"
        elif channel is None:
            row["status"], row["why"], row["why_zh"] = "not-evaluated", why_not.en, why_not.zh
        else:
            try:
                reply = channel.probe(ex.key, ex.target)
            except KernelGone as gone:
                reply = {"kind": "gone"}
                row["status"], row["why"], row["why_zh"] = "not-evaluated", gone.message.en, gone.message.zh
            if reply["kind"] == "missing":
                row["status"] = "target-missing"
            elif reply["kind"] == "error":
                kind, message = _text(reply.get("type"), 100), _text(reply.get("message"), 1000)
                row.update(_probe_failed(ex, kind, message))
            elif reply["kind"] == "observations":
                row.update(judge_observations(ex, reply.get("value"), hidden))
        row["seconds"] = round(time.monotonic() - started, 2)
        out.append(row)
    return out


def _text(value: Any, limit: int) -> str:
    """A text the kernel sent, cut to ``limit`` characters; anything but a ``str`` by its type's name only
    (``str()`` of the kernel's data is not safe: a list nested 100,000 deep makes it raise)."""
    return value[:limit] if type(value) is str else f"<{type(value).__name__}>"


def _probe_failed(ex: Any, kind: str, message: str) -> dict[str, Any]:
    """The row of an exercise whose probe failed in the kernel: it ran past its time limit
    (``ProbeTimeout``), or could not run on the answer."""
    row: dict[str, Any] = {"status": "checked", "how": "judged", "passed": False}
    head_en, head_zh = f"✗ Exercise {ex.number} ({ex.title_en}): ", f"✗ 练习 {ex.number}（{ex.title_zh}）："
    if kind == "ProbeTimeout":
        row["en"] = head_en + (
            f"your code {message} (an endless loop, or waiting for something that never comes); the check "
            "was stopped."
        )
        row["zh"] = head_zh + (
            f"你的代码运行超时（{message}），可能是死循环，或在等待永远不会到来的东西；检查已被中止。"
        )
    else:
        row["en"] = head_en + f"the check could not run on your answer ({kind}: {message[:300]})."
        row["zh"] = head_zh + f"检查无法在你的答案上运行（{kind}: {message[:300]}）。"
    return row


def versions() -> dict[str, str]:
    import torch

    import devicekit

    real = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return {
        "devicekit": str(getattr(devicekit, "__version__", "?")),
        "torch": torch.__version__,
        # where the probes ran: this machine's GPUs, or two simulated ones (devicekit_labs.machine)
        "check_gpus": f"{real} real" if real else "2 simulated",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lab")
    parser.add_argument("--fd", type=int)
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
        channel, why = None, Message("", "")
        try:
            listener.settimeout(args.connect_timeout)
            conn, _ = listener.accept()  # only the box's own sandbox sees the socket
            conn.settimeout(args.timeout)
            channel = Channel(conn, args.timeout)
        except TimeoutError:
            why = Message(
                "the notebook never reached the end of its run, so its answers could not be collected",
                "notebook 没有运行到最后，所以收集不到它的答案",
            )
        except OSError as exc:
            why = Message(f"no connection from the kernel ({exc})", f"内核没有连上评分器（{exc}）")
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
    """The zygote's loop: answer ``--probe`` on stdout (one JSON line; this loads torch, every lab's checks
    and the hidden judges), then, for each request on the ``AF_UNIX`` ``SOCK_SEQPACKET`` socket
    ``control_fd`` (``{"args": [...]}`` plus three descriptors: the listening socket and the write ends of
    the child's stdout and stderr pipes), fork a child that runs `main` with those arguments and exits.

    The child writes its pid as the first line of its stdout (the grader kills it when it runs out of time),
    then `main`'s JSON. The zygote never runs a request itself and never talks to a kernel; it exits when
    the grader closes its end of the socket."""
    import signal
    import traceback

    _preload_dynamo()
    main(["--probe", *(["--hidden", hidden] if hidden else [])])
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel, never zombies
    control = socket.socket(fileno=control_fd)
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 1 << 16, 3)
        except OSError:
            message, fds = b"", []
        if not message:  # the grader is done: end at once (torch's interpreter teardown takes seconds)
            sys.stdout.flush()
            os._exit(0)
        try:
            request = json.loads(message)
            listener, out, err = fds
        except (ValueError, TypeError):
            for fd in fds:
                os.close(fd)
            continue
        args = [*request["args"], *(["--hidden", hidden] if hidden else [])]  # each child runs them too
        if os.fork() == 0:
            _child(control, args, listener, out, err, traceback.print_exc)
        for fd in fds:
            os.close(fd)


def _preload_dynamo() -> None:
    """Import Dynamo once in the zygote, before its ``--probe`` (so its files are in the fingerprint too).

    Every optimizer's ``add_param_group`` and ``load_state_dict`` are wrapped by ``torch._disable_dynamo``,
    which imports ``torch._dynamo`` at its first call (``torch/_compile.py``, ``torch/optim/optimizer.py``,
    v2.13.0): a judge that builds an optimizer for its reference (lab 6's checkpoint, trained with Adam)
    paid about 1.4 s of CPU for that import in every forked child, once per submission. Imported here, the
    children share it; no judge compiles anything, and the import starts no thread
    (`tests/test_grade_evaluator_preload.py`).
    """
    import torch._dynamo  # noqa: F401


def _child(
    control: socket.socket, args: list[str], listener: int, out: int, err: int, report: Any
) -> NoReturn:
    """A forked evaluator for one submission: its stdout and stderr are the grader's pipes."""
    import signal

    import torch

    code = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        control.close()
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.close(out)
        os.close(err)
        os.write(1, f"{os.getpid()}\n".encode())
        torch.set_num_threads(1)  # tiny tensors; and no OpenMP pool inherited across the fork
        code = main([str(listener) if a == FD_PLACEHOLDER else str(a) for a in args])
    except BaseException:
        report()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


if __name__ == "__main__":
    code = main()
    os._exit(code)
