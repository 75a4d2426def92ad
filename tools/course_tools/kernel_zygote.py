"""Jupyter kernels forked from one warm process, for the notebook tests (nbval): every lab starts in a
fresh kernel, as a learner's does, without paying Python's, ipykernel's and torch's imports again.

The zygote (`serve`) listens at a Unix socket path, one per test process; Jupyter starts the client
(`connect`, through ``main connect``) as the kernel. The client hands its streams, working directory and
environment to the zygote, forwards the signals Jupyter sends it (interrupt, terminate) to the kernel's
process group, and exits as the kernel does; when the client is killed the kernel kills its own process
group, so a kernel never outlives what Jupyter holds. When no forked kernel can be had, the client becomes
an ordinary kernel itself: slower, never wrong. The zygote never runs a notebook's code, and runs no
untrusted code at all: the grader starts every kernel fresh in its sandbox (issue 42). Linux only.
`tests/nbval_checks.py` uses this unless ``DEVICEKIT_NBVAL_FRESH_KERNELS=1``.
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
#: The longest request line the zygote reads from a client (argv, working directory, environment).
MAX_REQUEST = 1 << 20
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 4, 36, 38


# --- the client: what Jupyter starts as the kernel ------------------------------------------------------


def connect(address: str, kernel_argv: list[str]) -> int:
    """The client: have the zygote at ``address`` fork a kernel with ``kernel_argv``; wait for its end.
    Without an answer from a zygote, become an ordinary kernel (``python -m ipykernel_launcher``)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(address)
        socket.send_fds(sock, [b"K"], [0, 1, 2])
        request = {"argv": kernel_argv, "cwd": os.getcwd(), "env": dict(os.environ)}
        sock.sendall(json.dumps(request).encode() + b"\n")
        replies = sock.makefile("rb")
        pid = int(replies.readline() or 0)
    except (OSError, ValueError):
        pid = 0
    if not pid:
        sock.close()
        print("devicekit: no forked kernel available; starting a kernel of its own", file=sys.stderr)
        sys.stderr.flush()
        os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *kernel_argv])

    def forward(signum: int, frame: object) -> None:
        try:
            os.killpg(pid, signum)
        except OSError:  # ended meanwhile
            pass

    for name in FORWARDED:
        signal.signal(getattr(signal, name), forward)
    try:  # the zygote writes the kernel's exit code when it ends; the kernel holds the connection open too,
        code = int(replies.readline() or 1)  # so without a zygote the line is empty only once it has ended
    except (OSError, ValueError):
        code = 1
    if code < 0:  # ended by a signal: end the same way, as Jupyter would see a kernel of its own end
        if -code != signal.SIGKILL:
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


# --- the zygote's parts ------------------------------------------------------------------------------------


def warm() -> None:
    """What every kernel would otherwise import, imported once (no accelerator is touched)."""
    # not ipykernel.kernelapp: its class reads JPY_PARENT_PID from the environment when it is imported
    import ipykernel.ipkernel  # noqa: F401
    import torch

    torch.ones(2, device="meta") + 1  # imports the meta kernels, torch's reference ops and torch._dynamo


def read_request(conn: socket.socket) -> tuple[list[int], dict]:
    """A client's three standard streams and its request (``argv``, ``cwd``, ``env``), checked; raises
    ValueError (or OSError) for anything else, after closing what it received."""
    fds: list[int] = []
    try:
        _, fds, _, _ = socket.recv_fds(conn, 1, 3)
        line = conn.makefile("rb").readline(MAX_REQUEST)
        request = json.loads(line)
        argv, cwd, env = request.get("argv"), request.get("cwd"), request.get("env")
        if len(fds) != 3:
            raise ValueError("a client hands over its three standard streams")
        if not (isinstance(argv, list) and all(isinstance(a, str) for a in argv) and isinstance(cwd, str)):
            raise ValueError("argv must be a list of strings, cwd a string")
        if not (
            isinstance(env, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
        ):
            raise ValueError("env must map strings to strings")
    except Exception as exc:  # a list instead of an object, nesting too deep for json, ...
        for fd in fds:
            os.close(fd)
        if isinstance(exc, (OSError, ValueError)):
            raise
        raise ValueError(f"unreadable request ({type(exc).__name__})") from None
    return fds, {"argv": argv, "cwd": cwd, "env": env}


def reap(kernels: dict[int, socket.socket]) -> None:
    """Collect ended children; tell each kernel's client its exit code."""
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
                conn.send(f"{os.waitstatus_to_exitcode(status)}\n".encode(), socket.MSG_DONTWAIT)
            except OSError:  # the client is gone, or does not read
                pass
            conn.close()


def _close_other_fds(keep: set[int]) -> None:
    """Close every descriptor of this process but ``keep`` (a kernel holds nothing of its zygote's)."""
    try:
        open_fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:  # no /proc: every possible descriptor
        low = 0
        for fd in [*sorted(keep), os.sysconf("SC_OPEN_MAX")]:
            os.closerange(low, fd)
            low = fd + 1
        return
    for fd in open_fds:
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def become_kernel(conn: socket.socket, fds: list[int], request: dict) -> None:
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
    _close_other_fds({0, 1, 2, conn.fileno()})
    os.set_inheritable(conn.fileno(), False)  # the lifeline is the kernel's, not its children's
    os.setsid()
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    if "tempfile" in sys.modules:  # it chose its folder from the zygote's TMPDIR: choose again from this one
        sys.modules["tempfile"].tempdir = None
    # seeded once in the zygote, every kernel would draw the same numbers (``random`` reseeds itself after a
    # fork; Python's hash seed cannot change after start: it is the zygote's, as PYTHONHASHSEED would fix it)
    if "numpy.random" in sys.modules:
        sys.modules["numpy.random"].seed()
    if "torch" in sys.modules:
        # CPU now; CUDA's is queued until CUDA starts (torch/random.py seed -> torch/cuda/random.py
        # manual_seed_all -> _lazy_call, v2.13.0): no accelerator is touched here
        sys.modules["torch"].seed()

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


def wake_on_children() -> int:
    """A non-blocking pipe whose read end becomes readable when a child ends (SIGCHLD); returns it."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    return wake_r


def drain(fd: int) -> None:
    while True:
        try:
            if not os.read(fd, 512):
                return
        except BlockingIOError:
            return


# --- the grader's zygote: kernels inside a submission's sandbox ---------------------------------------------


__all__ = ["READY", "connect", "main", "serve"]


def serve(address: str) -> None:
    """The zygote: warm up, listen at ``address``, say `READY` on its standard output, and fork a kernel per
    client. Single-threaded, so that a fork copies no lock another thread holds. Ends when
    its parent (the test process) does."""
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG: end with the process that started it
    warm()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(64)
    print(READY, flush=True)
    wake_r = wake_on_children()
    kernels: dict[int, socket.socket] = {}
    while True:
        ready, _, _ = select.select([listener, wake_r], [], [])
        if wake_r in ready:
            drain(wake_r)
            reap(kernels)
        if listener in ready:
            conn, _ = listener.accept()
            try:
                fds, request = read_request(conn)
            except (OSError, ValueError):
                conn.close()
                continue
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                become_kernel(conn, fds, request)  # never returns; it closes the zygote's descriptors
            for fd in fds:
                os.close(fd)
            conn.sendall(f"{pid}\n".encode())
            kernels[pid] = conn


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
