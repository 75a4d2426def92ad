"""Execute one prepared notebook copy in a fresh kernel (started by `devicekit_grade.box`, once per
submission, inside the submission's `devicekit_grade.sandbox.Box`):
``_worker.py NOTEBOOK EVENTS --cell-timeout SECONDS``.

The worker makes itself a child subreaper first, so that processes the notebook detaches (``setsid``,
double fork) stay its descendants, where the grader finds and kills them.

The grader runs this in a subprocess so that a notebook-level time limit is a plain ``kill`` (no threads or
signals inside the grader) and a kernel crash cannot take the grader down with it. The worker reports what
happened as JSON lines appended to EVENTS, one line per event, flushed at once, so the grader can read
them even after killing the worker:

``{"event": "kernel", "pid": ...}``, ``{"event": "cell", "index": i}`` (a code cell starts),
``{"event": "error", "index": i, "ename": ..., "evalue": ..., "expected": bool}``,
``{"event": "timeout", "index": i}``, ``{"event": "truncated", "index": i}``,
``{"event": "dead", "index": i}``, ``{"event": "unresponsive", "index": i}`` (still busy a cell time limit
after a time-out's interrupt: the run stops there), ``{"event": "fatal", "message": ...}``,
``{"event": "done"}``.

Output kept in memory is capped per cell and per notebook: the grader scores checks, not printed text, and
a submission that prints 50 MB must not cost 50 MB per copy.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

#: nbformat validates with jsonschema, whose format checkers import ``rfc3987_syntax`` when it is installed
#: (JupyterLab brings it): that import builds a grammar, about 1 s of CPU in every process, for IRI formats
#: that no notebook schema uses. This worker skips it (an absent module to jsonschema).
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[assignment]

import nbformat  # noqa: E402
from nbclient import NotebookClient  # noqa: E402
from nbclient.exceptions import DeadKernelError  # noqa: E402

TIMEOUT_ENAME = "DevicekitGradeCellTimeout"
MAX_EVALUE = 500
START = time.monotonic()


def _size(output: Any) -> int:
    size = len(output.get("text", "") or "")
    for value in (output.get("data") or {}).values():
        size += len(value) if isinstance(value, str) else len(json.dumps(value))
    size += sum(len(line) for line in output.get("traceback", []) or [])
    return size


class KernelIgnoredInterrupt(Exception):
    """The kernel was still busy with a timed-out cell a cell time limit after its interrupt."""


class GradingClient(NotebookClient):
    """A NotebookClient that reports cell starts, errors and time-outs, and caps the output it keeps."""

    def __init__(
        self, nb: Any, *, events: Any, max_cell_chars: int, max_notebook_chars: int, **kw: Any
    ) -> None:
        super().__init__(
            nb,
            on_cell_execute=self._on_cell_execute,
            on_cell_error=self._on_cell_error,
            on_notebook_start=self._on_notebook_start,
            **kw,
        )
        self._events = events
        #: how long a kernel interrupted for time has to answer before the run stops (see
        #: `_stop_unless_it_answers`)
        self.answer_grace = float(self.timeout or 0) or 60.0
        self._max_cell, self._max_notebook = max_cell_chars, max_notebook_chars
        self._cell_chars = self._notebook_chars = 0
        self._cell_truncated = False
        self.current = -1

    def emit(self, **event: Any) -> None:
        event["t"] = round(time.monotonic() - START, 3)
        self._events.write(json.dumps(event, ensure_ascii=False) + "\n")
        self._events.flush()

    def _on_notebook_start(self, notebook: Any) -> None:
        provisioner = getattr(self.km, "provisioner", None)
        pid = getattr(provisioner, "pid", None) or getattr(getattr(provisioner, "process", None), "pid", None)
        self.emit(event="kernel", pid=pid)

    def _on_cell_execute(self, cell: Any, cell_index: int) -> None:
        self.current = cell_index
        self._cell_chars, self._cell_truncated = 0, False
        self.emit(event="cell", index=cell_index)

    def _on_cell_error(self, cell: Any, cell_index: int, execute_reply: dict[str, Any]) -> Any:
        content = execute_reply.get("content", {})
        ename = str(content.get("ename", "Error"))
        if ename == TIMEOUT_ENAME:
            self.emit(event="timeout", index=cell_index)
            if cell.metadata.get("devicekit-grade") in ("setup", "serve"):
                return None  # the grader's own cells: their stops are judged by the grader
            return self._stop_unless_it_answers(cell_index)  # awaited by nbclient
        evalue = str(content.get("evalue", ""))
        if len(evalue) > MAX_EVALUE:
            evalue = evalue[:MAX_EVALUE] + "…"
        # the lab's deliberate error: tagged, or (tags lost in a Colab copy) the same source as the released
        # lab's tagged cell, which the grader marked in its copy
        expected = "raises-exception" in cell.metadata.get("tags", []) or bool(
            cell.metadata.get("devicekit-grade-expected")
        )
        self.emit(event="error", index=cell_index, ename=ename[:100], evalue=evalue, expected=expected)

    async def _stop_unless_it_answers(self, cell_index: int) -> None:
        """After a time-out's interrupt: ask the kernel for its info (a shell request, answered only once the
        interrupted cell has ended) and wait up to another cell time limit. A kernel that stays busy
        ignores interrupts (``signal.SIG_IGN``, a native call that never returns): every later cell would
        wait behind it until the notebook's own limit, so the run stops here (`KernelIgnoredInterrupt`).
        A kernel that dies meanwhile (the interrupt killed it) raises ``DeadKernelError``: ``dead``."""
        from queue import Empty

        from nbclient.util import ensure_async

        assert self.kc is not None
        asked = self.kc.kernel_info()
        deadline = time.monotonic() + self.answer_grace
        while (left := deadline - time.monotonic()) > 0:
            try:
                msg = await ensure_async(self.kc.shell_channel.get_msg(timeout=min(left, 1.0)))
            except Empty:
                await self._async_check_alive()  # DeadKernelError when it is gone
                continue
            if msg.get("parent_header", {}).get("msg_id") == asked:
                return  # it answered: the next cells run as usual
        self.emit(event="unresponsive", index=cell_index)
        raise KernelIgnoredInterrupt(cell_index)

    def output(self, outs: list, msg: dict[str, Any], display_id: str | None, cell_index: int) -> Any:
        out = super().output(outs, msg, display_id, cell_index)
        if out is None:
            return out
        size = _size(out)
        room = min(self._max_cell - self._cell_chars, self._max_notebook - self._notebook_chars)
        if size <= room:
            self._cell_chars += size
            self._notebook_chars += size
            return out
        if outs and outs[-1] is out:
            outs.pop()
        if self._cell_truncated:
            return out
        self._cell_truncated = True
        if out.get("output_type") == "stream" and room > 0:  # keep the beginning of long printed text
            out["text"] = out["text"][:room]
            outs.append(out)
            self._cell_chars += room
            self._notebook_chars += room
        note = "\n[devicekit-grade: output truncated; the rest of this cell's output was not kept]\n"
        outs.append(nbformat.v4.new_output("stream", name="stderr", text=note))
        self.emit(event="truncated", index=cell_index)
        return out


def _become_subreaper() -> None:
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
            ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: /proc/<pid> private
        except Exception:
            pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Execute one prepared notebook copy for devicekit-grade.")
    parser.add_argument("notebook", type=Path)
    parser.add_argument("events", type=int, help="the descriptor of the grader's events pipe")
    parser.add_argument("--cell-timeout", type=int, required=True)
    parser.add_argument("--setup-timeout", type=int, default=120, help="for the grader's first cell")
    parser.add_argument("--kernel", default="python3")
    parser.add_argument("--max-cell-chars", type=int, default=100_000)
    parser.add_argument("--max-notebook-chars", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    _become_subreaper()
    with os.fdopen(args.events, "w", encoding="utf-8") as events:
        client = None
        try:
            nb = nbformat.read(args.notebook, as_version=4)
            client = GradingClient(
                nb,
                events=events,
                max_cell_chars=args.max_cell_chars,
                max_notebook_chars=args.max_notebook_chars,
                timeout=args.cell_timeout,
                # The grader's setup cell imports devicekit and torch: on a loaded machine that alone can take
                # longer than a short per-cell limit, and it is not the learner's time.
                timeout_func=lambda cell: (
                    max(args.cell_timeout, args.setup_timeout)
                    if cell.metadata.get("devicekit-grade") in ("setup", "serve")
                    else args.cell_timeout
                ),
                kernel_name=args.kernel,
                allow_errors=True,
                interrupt_on_timeout=True,
                shutdown_kernel="immediate",  # nothing to save in a grading kernel: do not wait for it
                error_on_timeout={"ename": TIMEOUT_ENAME, "evalue": "", "traceback": []},
                resources={"metadata": {"path": str(args.notebook.parent)}},
            )
            client.execute()
        except DeadKernelError:
            client.emit(event="dead", index=client.current)
        except KernelIgnoredInterrupt:
            pass  # reported as an ``unresponsive`` event; the kernel is killed as the client shuts it down
        except Exception as exc:  # reported to the grader, which turns it into the row's reason
            message = f"{type(exc).__name__}: {exc}"[:1000]
            events.write(json.dumps({"event": "fatal", "message": message}) + "\n")
        events.write(json.dumps({"event": "done", "t": round(time.monotonic() - START, 3)}) + "\n")
        events.flush()
    return 0


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Everything is reported and the kernel is shut down: skip the interpreter's teardown, which can wait
    # seconds on the ZeroMQ context of a kernel that died.
    os._exit(status)
