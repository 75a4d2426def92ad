"""Jupyter kernels forked from one warm process, for the notebook tests (nbval): every lab starts in a
fresh kernel, as a learner's does, without paying Python's, ipykernel's and torch's imports again.

The zygote (`serve`) listens at a Unix socket path, one per test process; Jupyter starts the client
(`devicekit_grade.kernel_forks.connect`, through ``main connect``) as the kernel. How a forked kernel
behaves like one of its own, and what the client does, is said in `devicekit_grade.kernel_forks`, which
the grader's sandboxed zygote shares. `tests/nbval_checks.py` uses this unless
``DEVICEKIT_NBVAL_FRESH_KERNELS=1``.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import sys

from devicekit_grade.kernel_forks import (
    READY,
    become_kernel,
    connect,
    drain,
    read_request,
    reap,
    wake_on_children,
    warm,
)

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
