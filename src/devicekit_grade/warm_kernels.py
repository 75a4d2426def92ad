"""The grader's side of its kernel zygote (`devicekit_grade.kernel_forks.serve_sandboxed`): each submission's
kernel is forked, already warm, into that submission's sandbox, instead of starting Python and importing
torch again (about 5 s of CPU per notebook on a 2-core machine).

Only when the grader runs as root under bubblewrap, with a user per submission (`run.Context` decides):
the zygote must be allowed to join the sandbox's namespaces and to switch to the submission's user. The
grader gives each sandbox a kernelspec whose command is the client (`kernel_forks.connect`) and a socket
of its own for it; it accepts one connection there, checks that the peer is a process of that submission's
user under that submission's worker, and hands the connection and a pidfd of the peer to the zygote. Then
it closes the socket, before the kernel exists: no code of a submission can reach the zygote. Whatever goes
wrong on the way, the client starts a kernel of its own, as before (`DEVICEKIT_GRADE_FRESH_KERNELS=1` makes
the grader do that for every notebook).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path

from devicekit_grade import kernel_forks, sandbox

#: The kernelspec a sandbox gets when its kernel is forked (the notebook's own kernelspec is not used).
KERNEL_NAME = "devicekit-grade-forked"
#: Set to 1 to start every submission's kernel as a Python of its own.
FRESH_KERNELS = "DEVICEKIT_GRADE_FRESH_KERNELS"
_SCRIPT = Path(kernel_forks.__file__)
#: The longest the grader waits for the zygote's answer to one order (it reads the client's request, which
#: the client sends at once, and forks twice).
ANSWER_S = 30


def available(uid_per_box: bool, kernel: str) -> bool:
    """Whether this run can fork kernels into its sandboxes: Linux, root with a user per submission, the
    default kernel, pidfds, and not turned off."""
    return (
        uid_per_box
        and kernel == "python3"
        and sys.platform.startswith("linux")
        and sandbox.running_as_root()
        and hasattr(os, "pidfd_open")
        and hasattr(socket, "send_fds")
        and os.environ.get(FRESH_KERNELS) != "1"
    )


class KernelZygote:
    """The zygote process and the grader's end of its control socket; `start` begins warming it up (it
    runs beside the evaluator's), `wait_ready` says whether it came up."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self._env, self._log = env, log
        self._proc: subprocess.Popen | None = None
        self._control: socket.socket | None = None
        self._lock = threading.Lock()
        self._stalled = False  # an answer came too late: no more orders
        self.offered = 0  # sandboxes given the client's kernelspec
        self.forked = 0  # of which got a forked kernel (the others started one of their own)

    def start(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        run = "import runpy, sys; runpy.run_path(sys.argv.pop(1), run_name='__main__')"
        cmd = [sys.executable, "-c", run, str(_SCRIPT), "serve-sandboxed", str(theirs.fileno())]
        try:
            with open(self._log, "wb") as err:
                self._proc = subprocess.Popen(
                    cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, env=self._env,
                    cwd="/", pass_fds=(theirs.fileno(),),
                )  # fmt: skip
        except OSError:
            ours.close()
            return
        finally:
            theirs.close()
        self._control = ours

    def wait_ready(self, timeout: float = 600) -> bool:
        """Whether the zygote said it is ready (within ``timeout``); stops it when it did not."""
        if self._proc is None or self._proc.stdout is None:
            return False
        ready, _, _ = select.select([self._proc.stdout], [], [], timeout)
        line = self._proc.stdout.readline(200).decode("utf-8", "replace") if ready else ""
        if line.strip() != kernel_forks.READY:
            self.close()
            return False
        return True

    @property
    def alive(self) -> bool:
        return (
            not self._stalled
            and self._control is not None
            and self._proc is not None
            and self._proc.poll() is None
        )

    def kernelspec(self, home: Path, address: str) -> None:
        """Write the client's kernelspec into a sandbox's Jupyter data folder (``home`` is the box's)."""
        with self._lock:
            self.offered += 1
        folder = home / ".local" / "share" / "jupyter" / "kernels" / KERNEL_NAME
        folder.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-I", "-S", str(_SCRIPT), "connect", address, "-f", "{connection_file}"]
        spec = {"argv": argv, "display_name": "Python 3 (devicekit-grade)", "language": "python"}
        (folder / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")

    def hand_over(
        self, listener: socket.socket, worker: int, uid: int, rlimits: list[tuple[int, int]], sandboxed: bool
    ) -> bool:
        """Accept the client's connection on ``listener``, then close and remove ``listener`` (before any
        kernel exists); when the peer is a process of ``uid`` below ``worker``, pass the connection and a
        pidfd of the peer to the zygote. ``sandboxed``: the client has mount and PID namespaces of its own
        (the kernel checks it is in others than the zygote's). False when nothing was handed over (the
        client, seeing its connection close, starts a kernel of its own)."""
        conn, _ = listener.accept()
        address = listener.getsockname()
        listener.close()
        with contextlib.suppress(OSError):
            os.unlink(address)
        pidfd = -1
        try:
            creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            pid, peer_uid, _ = struct.unpack("3i", creds)
            pidfd = os.pidfd_open(pid)
            # checked after the pidfd is open: if that pid was reused meanwhile, the pidfd is of a process
            # that ended, and the zygote's setns fails
            if peer_uid != uid or sandbox.real_uid(pid) != uid or pid not in sandbox.descendants(worker):
                return False
            order = {"pid": pid, "uid": uid, "rlimits": [list(p) for p in rlimits], "sandboxed": sandboxed}
            with self._lock:
                if not self.alive:
                    return False
                socket.send_fds(self._control, [json.dumps(order).encode()], [conn.fileno(), pidfd])
                self._control.settimeout(ANSWER_S)
                try:
                    answer = json.loads(self._control.recv(4096) or b"{}")
                except TimeoutError:  # a late answer would be taken for the next order's: no more orders
                    self._stalled = True  # (the zygote stays: the kernels it forked are running)
                    return False
                if answer.get("pid"):
                    self.forked += 1
                    return True
            return False
        except (OSError, ValueError, AttributeError):
            return False
        finally:
            if pidfd >= 0:
                os.close(pidfd)
            conn.close()

    def summary(self) -> str:
        """What the run's last lines say about its kernels (en · zh)."""
        return (
            f"{self.forked} of {self.offered} kernel(s) forked from a warm process "
            f"({FRESH_KERNELS}=1 starts each on its own) · {self.offered} 个内核中有 {self.forked} 个"
            f"由预热进程 fork 而来（设置 {FRESH_KERNELS}=1 则每个内核单独启动）"
        )

    def close(self) -> None:
        if self._control is not None:
            with contextlib.suppress(OSError):
                self._control.close()
            self._control = None
        if self._proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=10)
            if self._proc.poll() is None:
                self._proc.kill()
                self._proc.wait()
            if self._proc.stdout is not None:
                self._proc.stdout.close()
            self._proc = None
