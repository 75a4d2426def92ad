"""Jupyter kernels forked from one warm process, for the notebook tests (nbval) only: every lab starts
in a fresh kernel, as a learner's does, without paying Python's, ipykernel's and torch's imports again.

A kernel of its own costs seconds before its first cell runs on a 2-core machine: the interpreter and
ipykernel (~1.3 s), ``import torch`` (~2.2 s) and the first meta op, which imports torch's reference
implementations (~2 s). The *zygote* (``serve``) pays them once per test process and then forks one child
per kernel; each child is an ordinary ``python -m ipykernel_launcher -f CONNECTION_FILE`` from there on,
in the working directory, environment and standard streams of the process Jupyter started, in a session
of its own. The zygote never runs a notebook's code: it imports, runs one meta op and forks.

Jupyter starts the *client* (``main connect``) as the kernel: it hands its streams, working directory and
environment to the zygote, forwards the signals Jupyter sends it (interrupt, terminate) to the kernel's
process group, and exits as the kernel does (with its exit code, or by its signal). When the client is
killed the kernel kills its own process group (it watches the client's end of their socket), so a kernel
never outlives what Jupyter holds.

Linux only (``fork`` of a process that imported torch but never used an accelerator); `tests/nbval_checks.py`
uses it unless ``DEVICEKIT_NBVAL_FRESH_KERNELS=1``. The client imports nothing beyond the standard library.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys

#: What the zygote prints when it is ready to fork kernels.
READY = "kernel-zygote-ready"
#: The signals the client passes on to the kernel (Jupyter interrupts with SIGINT, ends with SIGTERM).
FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")


def connect(address: str, kernel_argv: list[str]) -> int:
    """The client: have the zygote at ``address`` fork a kernel with ``kernel_argv``; wait for its end."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(address)
    socket.send_fds(sock, [b"K"], [0, 1, 2])
    request = {"argv": kernel_argv, "cwd": os.getcwd(), "env": dict(os.environ)}
    sock.sendall(json.dumps(request).encode() + b"\n")
    replies = sock.makefile("rb")
    pid = int(replies.readline() or 0)
    if not pid:
        return 1

    def forward(signum: int, frame: object) -> None:
        try:
            os.killpg(pid, signum)
        except OSError:  # ended meanwhile
            pass

    for name in FORWARDED:
        signal.signal(getattr(signal, name), forward)
    code = int(replies.readline() or 1)  # the zygote writes the kernel's exit code when it ends
    if code < 0:  # ended by a signal: end the same way, as Jupyter would see a kernel of its own end
        if -code != signal.SIGKILL:
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


def _warm() -> None:
    """What every kernel would otherwise import, imported once (no accelerator is touched)."""
    # not ipykernel.kernelapp: its class reads JPY_PARENT_PID from the environment when it is imported
    import ipykernel.ipkernel  # noqa: F401
    import torch

    torch.ones(2, device="meta") + 1  # imports the meta kernels and torch's reference ops


def serve(address: str) -> None:
    """The zygote: warm up, listen at ``address``, say `READY` on its standard output, and fork a kernel per
    client. Single-threaded, so that a fork copies no lock another thread holds. Ends when
    its parent (the test process) does."""
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG: end with the process that started it
    _warm()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(64)
    print(READY, flush=True)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    kernels: dict[int, socket.socket] = {}
    while True:
        ready, _, _ = select.select([listener, wake_r], [], [])
        if wake_r in ready:
            while True:
                try:
                    os.read(wake_r, 512)
                except BlockingIOError:
                    break
            _reap(kernels)
        if listener in ready:
            conn, _ = listener.accept()
            fds: list[int] = []
            try:
                _, fds, _, _ = socket.recv_fds(conn, 1, 3)
                request = json.loads(conn.makefile("rb").readline())
                if len(fds) != 3:
                    raise ValueError("a client hands over its three standard streams")
            except (OSError, ValueError):
                for fd in fds:
                    os.close(fd)
                conn.close()
                continue
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                listener.close()
                for fd in (wake_r, wake_w):
                    os.close(fd)
                for other in kernels.values():  # or their clients would not see them end
                    other.close()
                _become_kernel(conn, fds, request)  # never returns
            for fd in fds:
                os.close(fd)
            conn.sendall(f"{pid}\n".encode())
            kernels[pid] = conn


def _reap(kernels: dict[int, socket.socket]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = kernels.pop(pid, None)
        if conn is not None:
            try:
                conn.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
            except OSError:  # the client is gone
                pass
            conn.close()


def _become_kernel(conn: socket.socket, fds: list[int], request: dict) -> None:
    """In the forked child: take the client's streams, place and environment; run ipykernel's launcher as
    ``python -m ipykernel_launcher`` would; exit with its code."""
    import atexit
    import runpy
    import threading

    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for target, fd in zip((0, 1, 2), fds, strict=True):
        os.dup2(fd, target)
        os.close(fd)
    os.setsid()
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])

    def lifeline() -> None:  # the client's end closes only when it ends: then so does this kernel
        try:
            while conn.recv(64):
                pass
        except OSError:
            pass
        os.killpg(0, signal.SIGKILL)

    threading.Thread(target=lifeline, name="kernel-zygote-lifeline", daemon=True).start()
    sys.argv = [sys.argv[0], *request["argv"]]
    sys.path[0] = os.getcwd()  # as `python -m` starts (the launcher takes it out while it imports)
    code: object = 0
    try:
        runpy.run_module("ipykernel_launcher", run_name="__main__", alter_sys=True)
    except SystemExit as done:
        code = done.code
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code if isinstance(code, int) else (0 if code is None else 1))


def main(argv: list[str]) -> int:
    """``serve ADDRESS`` or ``connect ADDRESS KERNEL_ARGS...``."""
    if len(argv) >= 2 and argv[0] == "serve":
        serve(argv[1])
        return 0
    if len(argv) >= 2 and argv[0] == "connect":
        return connect(argv[1], argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
