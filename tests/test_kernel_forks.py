"""The grader's kernel zygote (`devicekit_grade.kernel_forks.serve_sandboxed`) fails closed: a request it
cannot read costs that one kernel, never the zygote; a client that ended gets no kernel; a kernel whose
client turns out not to be in a sandbox ends before it runs anything. (The class tests in test_grade.py
cover kernels forked into real sandboxes.)"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from devicekit_grade import kernel_forks, sandbox

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not (sys.platform.startswith("linux") and hasattr(os, "pidfd_open") and sandbox.running_as_root()),
        reason="the grader's zygote joins namespaces and switches users: Linux, as root",
    ),
]

UID = 2_000_017  # no one's: the kernel switches to it (the uid pool's range starts far above)
# the zygote without its warm-up (imports torch): these tests are about what it does with each order
SERVE = "from devicekit_grade import kernel_forks as k; k.warm = lambda: None; k.serve_sandboxed({fd})"


@pytest.fixture
def zygote(tmp_path):
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    log = open(tmp_path / "zygote.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVE.format(fd=theirs.fileno())],
        stdout=subprocess.PIPE, stderr=log, pass_fds=(theirs.fileno(),), cwd="/",
    )  # fmt: skip
    theirs.close()
    assert proc.stdout.readline().decode().strip() == kernel_forks.READY
    yield proc, ours
    ours.close()
    proc.kill()
    proc.wait()
    log.close()


@pytest.fixture
def bystander():
    """A process in this test's own namespaces (none of a sandbox's)."""
    proc = subprocess.Popen(["sleep", "600"])
    yield proc
    proc.kill()
    proc.wait()


def order(control: socket.socket, client_pid: int, send_request, sandboxed: bool = True, pidfd: int = -1):
    """Give the zygote one order for a client whose request ``send_request(sock)`` writes (``pidfd``: of the
    client, opened here when not given; closed here); the zygote's answer and the client's end."""
    client, zygote_end = socket.socketpair()
    send_request(client)
    pidfd = os.pidfd_open(client_pid) if pidfd < 0 else pidfd
    message = {"pid": client_pid, "uid": UID, "rlimits": [], "sandboxed": sandboxed}
    socket.send_fds(control, [json.dumps(message).encode()], [zygote_end.fileno(), pidfd])
    os.close(pidfd)
    zygote_end.close()
    control.settimeout(120)
    return json.loads(control.recv(4096)), client


def request(payload: bytes, hold_open: bool = False):
    def send(sock: socket.socket) -> None:
        null = os.open(os.devnull, os.O_RDWR)
        socket.send_fds(sock, [b"K"], [null, null, null])
        os.close(null)
        sock.sendall(payload)
        if not hold_open:
            sock.shutdown(socket.SHUT_WR)

    return send


VALID = json.dumps({"argv": ["--version"], "cwd": "/", "env": {"PATH": os.defpath}}).encode() + b"\n"


@pytest.mark.parametrize(
    "payload, hold_open",
    [(b"[1]\n", False), (b"[" * 100_000 + b"\n", False), (b'{"argv": [], "cwd": "/"', True)],
    ids=["a list", "nested past json's limit", "stalled"],
)
def test_a_request_it_cannot_read_costs_one_kernel_not_the_zygote(zygote, bystander, payload, hold_open):
    proc, control = zygote
    answer, client = order(control, bystander.pid, request(payload, hold_open))
    assert answer == {"pid": 0}
    assert client.makefile("rb").readline() == b"0\n", "the client is told: no kernel (it starts its own)"
    client.close()
    assert proc.poll() is None, "the zygote ended"
    answer, client = order(control, os.getpid(), request(VALID), sandboxed=False)
    client.close()
    assert proc.poll() is None and "pid" in answer, "the zygote still serves the next order"


def test_a_client_that_ended_gets_no_kernel(zygote):
    proc, control = zygote
    ended = subprocess.Popen(["sleep", "600"])
    pidfd = os.pidfd_open(ended.pid)  # held across its end, as the grader's would be
    ended.kill()
    ended.wait()
    answer, client = order(control, ended.pid, request(VALID), pidfd=pidfd)
    assert answer == {"pid": 0}
    client.close()


def test_a_kernel_whose_client_is_in_no_sandbox_ends_before_it_runs(zygote, bystander):
    # the client should have been in a sandbox (its own mount and PID namespaces) but is not: the kernel
    # stops with 125 before it takes its user or runs ipykernel (which would print its version and end 0)
    proc, control = zygote
    answer, client = order(control, bystander.pid, request(VALID), sandboxed=True)
    replies = client.makefile("rb")
    assert answer["pid"] > 0 and int(replies.readline()) == answer["pid"]
    client.settimeout(120)
    assert replies.readline() == b"125\n"
    client.close()
