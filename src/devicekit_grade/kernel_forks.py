"""Jupyter kernels forked from one warm process: a fresh kernel in a fraction of a second instead of ~5 s.

A kernel of its own costs seconds before its first cell runs on a 2-core machine: the interpreter and
ipykernel (~1.3 s), ``import torch`` (~2.2 s) and the first meta op, which imports torch's reference
implementations and ``torch._dynamo`` (~2 s). A *zygote* pays them once and then forks one child per
kernel; each child is an ordinary ``python -m ipykernel_launcher -f CONNECTION_FILE`` from there on, in the
working directory, environment and standard streams of the process Jupyter started, in a session of its
own. The zygote never runs a notebook's code: it imports, runs one meta op and forks.

Jupyter starts the *client* (`connect`) as the kernel: it hands its streams, working directory and
environment to the zygote, forwards the signals Jupyter sends it (interrupt, terminate) to the kernel's
process group, and exits as the kernel does (with its exit code, or by its signal). When the client is
killed the kernel kills its own process group (it watches the client's end of their socket), so a kernel
never outlives what Jupyter holds. When no forked kernel can be had (no zygote, or it refused), the client
becomes an ordinary kernel itself: slower, never wrong.

Two zygotes use this: the notebook tests' (`course_tools.kernel_zygote`, one per test process) and the
grader's (`serve_sandboxed`), which puts each kernel inside a submission's sandbox: the grader hands it the
connection of the sandbox's client and a pidfd of that client; the zygote forks a child that reads the
client's request (the zygote never holds a client's bytes, which later kernels would inherit), joins the
client's namespaces through the pidfd (mount, PID, IPC, UTS, network, cgroup: bubblewrap's view of the file
system and processes) and forks the kernel there, which checks it is not in the zygote's mount or PID
namespace and takes the submission's resource limits, no-new-privileges and user before it runs anything.
Every failure ends that child or kernel, never the zygote; the client then starts a kernel of its own, or
Jupyter sees the kernel die. No process of a submission can reach this zygote: the grader accepts one
connection per sandbox, from the client, and closes that socket at once, before the kernel exists.

Linux only (``fork`` of a process that imported torch but never used an accelerator). This module imports
nothing beyond the standard library: the client runs as ``python -I -S kernel_forks.py connect ...``.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import sys

#: What a zygote prints when it is ready to fork kernels.
READY = "kernel-zygote-ready"
#: The signals the client passes on to the kernel (Jupyter interrupts with SIGINT, ends with SIGTERM).
FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")
#: The longest request line a zygote reads from a client (argv, working directory, environment).
MAX_REQUEST = 1 << 20
#: Namespaces a sandboxed kernel joins when its client's differ from the zygote's (name: CLONE_ flag).
NAMESPACES = {"ipc": 0x08000000, "uts": 0x04000000, "net": 0x40000000, "cgroup": 0x02000000,
              "pid": 0x20000000, "mnt": 0x00020000}  # fmt: skip
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 4, 36, 38
#: The longest a sandboxed client may take to send its request (it sends it at once).
REQUEST_S = 10
#: The grader's zygote's kernels: pid -> the client's connection, told the kernel's exit code (`reap`).
_KERNELS: dict[int, socket.socket] = {}


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


def become_kernel(conn: socket.socket, fds: list[int], request: dict, drop=None) -> None:
    """In the forked child: take the client's streams, place and environment; run ipykernel's launcher as
    ``python -m ipykernel_launcher`` would; exit with its code. ``drop``: called once the streams are
    taken and the session is new, before anything else (the sandbox's limits and user)."""
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
    if drop is not None:
        drop()
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


def _namespace_flags() -> int:
    """The CLONE_ flags of every namespace (of `NAMESPACES`) this Linux has, all joined at once through the
    client's pidfd: the sandbox's where it has one of its own, the zygote's own where it has not."""
    return sum(flag for name, flag in NAMESPACES.items() if os.path.exists(f"/proc/self/ns/{name}"))


def _namespace_ids() -> dict[str, int]:
    """This process's mount and PID namespaces (inode numbers); a kernel in a sandbox must have others."""
    return {name: os.stat(f"/proc/self/ns/{name}").st_ino for name in ("mnt", "pid")}


def _sandboxed_drop(uid: int, rlimits: list[list[int]], outside: dict[str, int] | None):
    """What a sandboxed kernel does as root before anything else: limits, no new privileges, its user.
    ``outside``: the zygote's namespaces, which the kernel must not share (None: the client has none of its
    own). Any of these steps failing ends the kernel (125) before it runs anything."""

    def drop() -> None:
        import ctypes
        import resource

        if outside is not None and set(_namespace_ids().items()) & set(outside.items()):
            os._exit(125)  # not in the sandbox after all
        for which, value in rlimits:
            resource.setrlimit(which, (value, value))
        if ctypes.CDLL(None).prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            os._exit(125)
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        if os.getuid() != uid or os.geteuid() != uid or os.getgid() != uid or _status("CapEff") != "0" * 16:
            os._exit(125)
        ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)

    return drop


def _status(field: str) -> str:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return line.split()[1]
    return ""


def _fork_into(pidfd: int, conn: socket.socket, order: dict, outside: dict[str, int]) -> int:
    """Fork a kernel into the namespaces of the process ``pidfd`` refers to; its pid (this zygote's view),
    or 0 when that failed. The kernel becomes this zygote's child (it is a child subreaper).

    A middle child reads the client's request (so this zygote never holds a client's bytes, which every
    later kernel would inherit), joins the namespaces, forks the kernel there and ends. Joining goes
    through the pidfd alone: if the client has ended, ``setns`` fails and there is no kernel."""
    report_r, report_w = os.pipe()
    middle = os.fork()
    if middle == 0:
        try:
            os.close(report_r)
            _KERNELS.clear()  # the other kernels' pids and connections are not this one's business
            signal.alarm(REQUEST_S)  # a client that stalls its request ends this child, not the zygote
            fds, request = read_request(conn)
            signal.alarm(0)
            if _setns(pidfd, _namespace_flags()) != 0:
                os._exit(2)
            drop = _sandboxed_drop(
                order["uid"], order["rlimits"], outside if order.get("sandboxed") else None
            )
            kernel = os.fork()
            if kernel == 0:
                os.close(report_w)
                become_kernel(conn, fds, request, drop)
            os.write(report_w, f"{kernel}\n".encode())
        except BaseException as exc:
            print(f"kernel zygote: no kernel for this client ({type(exc).__name__}: {exc})", file=sys.stderr)
        finally:
            sys.stderr.flush()
            os._exit(0)
    os.close(report_w)
    line = b""
    try:
        ready, _, _ = select.select([report_r], [], [], 2 * REQUEST_S)
        line = os.read(report_r, 64) if ready else b""
    finally:
        os.close(report_r)
        if not line:
            with contextlib.suppress(OSError):
                os.kill(middle, signal.SIGKILL)
        os.waitpid(middle, 0)
    return int(line or 0)


def _setns(fd: int, flags: int) -> int:
    """``setns(2)``; 0 on success."""
    import ctypes

    return ctypes.CDLL(None, use_errno=True).setns(fd, flags)


def _inner_pid(pid: int) -> int:
    """The pid of ``pid`` in its innermost PID namespace (what the client, in the sandbox, signals)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("NSpid:"):
                return int(line.split()[-1])
    return pid


def serve_sandboxed(control_fd: int) -> None:
    """The grader's zygote: warm up, say `READY`, then for each order on ``control_fd`` (a SEQPACKET socket
    to the grader: JSON ``{"pid", "uid", "rlimits"}`` with the client's connection and a pidfd of the
    client) fork a kernel into the client's sandbox and answer ``{"pid"}`` (0: none). Runs as root;
    single-threaded, so that a fork copies no lock another thread holds; ends when the grader closes
    ``control_fd`` or ends."""
    import ctypes

    libc = ctypes.CDLL(None)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # kernels come back here when their forker ends
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    control = socket.socket(fileno=control_fd)
    warm()
    outside = _namespace_ids()
    print(READY, flush=True)
    wake_r = wake_on_children()
    while True:
        ready, _, _ = select.select([control, wake_r], [], [])
        if wake_r in ready:
            drain(wake_r)
            reap(_KERNELS)
        if control not in ready:
            continue
        try:
            message, passed, _, _ = socket.recv_fds(control, 65536, 2)
        except OSError:
            return
        if not message:
            return  # the grader closed its end
        if len(passed) != 2:
            for fd in passed:
                os.close(fd)
            continue
        conn = socket.socket(fileno=passed[0])
        pid = 0
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            pid = _fork_into(passed[1], conn, json.loads(message), outside)
        except Exception as exc:  # noqa: BLE001 - whatever one order does, the zygote serves the next
            print(f"kernel zygote: no kernel for this client ({type(exc).__name__}: {exc})", file=sys.stderr)
        finally:
            os.close(passed[1])
        inner = 0
        with contextlib.suppress(OSError):
            inner = _inner_pid(pid) if pid else 0
            conn.sendall(f"{inner}\n".encode())
        try:
            control.send(json.dumps({"pid": inner}).encode())  # the grader counts the kernels it got
        except OSError:
            return
        if inner:
            _KERNELS[pid] = conn
        else:
            conn.close()
        reap(_KERNELS)


def main(argv: list[str]) -> int:
    """``connect ADDRESS KERNEL_ARGS...`` or ``serve-sandboxed FD``."""
    if len(argv) >= 2 and argv[0] == "connect":
        return connect(argv[1], argv[2:])
    if len(argv) == 2 and argv[0] == "serve-sandboxed":
        serve_sandboxed(int(argv[1]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
