"""The notebook tests' forked kernels (`kernel_zygote`) behave as kernels of their own would: the same
`sys.path`, arguments, working directory and environment (of the moment Jupyter starts them, not of the
zygote's start), a session of their own, interrupts reach the running cell, and a kernel never outlives
the client Jupyter holds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from course_tools import kernel_zygote

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the zygote forks: Linux only"),
]

PROBE = """import json, os, random, sys, tempfile, numpy, torch
print(json.dumps({"draw": [random.random(), numpy.random.random(), torch.rand(()).item()],
    "path": sys.path, "argv": sys.argv[1:], "cwd": os.getcwd(), "name": __name__,
    "tmp": tempfile.gettempdir(),
    "main": repr(sys.modules["__main__"]), "marker": os.environ.get("ZYGOTE_TEST_MARKER"),
    "leader": os.getpgid(0) == os.getpid(), "pid": os.getpid()}))"""


@pytest.fixture(scope="module")
def zygote(tmp_path_factory):
    address = str(tmp_path_factory.mktemp("zygote") / "z.sock")
    server = subprocess.Popen(
        [sys.executable, kernel_zygote.__file__, "serve", address], stdout=subprocess.PIPE, text=True
    )
    assert server.stdout.readline().strip() == kernel_zygote.READY
    yield [sys.executable, "-I", kernel_zygote.__file__, "connect", address, "-f", "{connection_file}"]
    server.kill()
    server.wait()


def start(argv: list[str] | None, cwd: Path):
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    class Specs(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            import ipykernel.kernelspec

            spec = self.kernel_spec_class(
                resource_dir=ipykernel.kernelspec.RESOURCES, **ipykernel.kernelspec.get_kernel_dict()
            )
            if argv:
                spec.argv = argv
            return spec

    km = KernelManager(kernel_name="python3", kernel_spec_manager=Specs())
    km.start_kernel(cwd=str(cwd), stderr=subprocess.DEVNULL)
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=120)
    return km, kc


def run(kc, code: str, timeout: float = 120) -> tuple[str, list[dict]]:
    msg_id = kc.execute(code)
    text, errors = "", []
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            text += content["text"]
        elif kind == "error":
            errors.append(content)
        elif kind == "status" and content["execution_state"] == "idle":
            return text, errors


def probe(argv, cwd: Path) -> dict:
    km, kc = start(argv, cwd)
    try:
        text, errors = run(kc, PROBE)
        assert not errors, errors
        return json.loads(text)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)


def gone(pid: int, within: float = 60) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def test_a_forked_kernel_starts_as_a_kernel_of_its_own(zygote, tmp_path, monkeypatch):
    monkeypatch.setenv("ZYGOTE_TEST_MARKER", "set after the zygote started")
    kernel_tmp = tmp_path / "kernel-tmp"  # the zygote's TMPDIR was another one: tempfile must not keep it
    kernel_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(kernel_tmp))
    own, forked = probe(None, tmp_path), probe(zygote, tmp_path)
    assert forked["marker"] == "set after the zygote started"
    assert forked["tmp"] == own["tmp"] == str(kernel_tmp)
    assert forked["cwd"] == str(tmp_path)
    assert forked["leader"], "a kernel Jupyter starts leads a session of its own"
    again = probe(zygote, tmp_path)["draw"]
    different = [a != b for a, b in zip(forked["draw"], again, strict=True)]
    assert all(different), "each kernel draws its own random numbers (random, numpy.random, torch)"
    for key in ("path", "name", "main", "cwd", "marker", "leader", "tmp"):
        assert forked[key] == own[key], key
    assert forked["argv"][0] == own["argv"][0] == "-f"


@pytest.mark.parametrize("forked", [False, True], ids=["own", "forked"])
def test_an_interrupt_reaches_the_running_cell(zygote, tmp_path, forked):
    km, kc = start(zygote if forked else None, tmp_path)
    try:
        # stop_on_error=False: the kernel would drop the next request, sent as soon as this one failed
        msg_id = kc.execute("import time\ntime.sleep(120)", stop_on_error=False)
        time.sleep(2)
        km.interrupt_kernel()
        while True:
            msg = kc.get_iopub_msg(timeout=60)
            if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "error":
                assert msg["content"]["ename"] == "KeyboardInterrupt"
                break
        text, errors = run(kc, "print('still here')")
        assert text.strip() == "still here" and not errors
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_a_kernel_ends_with_its_client_and_the_client_with_its_kernel(zygote, tmp_path):
    km, kc = start(zygote, tmp_path)
    text, _ = run(kc, "import os, subprocess, sys\n"
                      "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
                      "print(os.getpid(), child.pid)")  # fmt: skip
    kernel, grandchild = map(int, text.split())
    kc.stop_channels()
    km.provisioner.process.kill()  # as Jupyter kills a kernel: SIGKILL to the process it started
    assert gone(kernel), "the kernel outlived its client"
    assert gone(grandchild), "a process the kernel started outlived it"

    km, kc = start(zygote, tmp_path)
    try:
        client = km.provisioner.process
        text, _ = run(kc, "import os\nprint(os.getpid())")
        os.kill(int(text), signal.SIGKILL)
        assert client.wait(timeout=60) == -signal.SIGKILL, "the client ends as its kernel did"
    finally:
        kc.stop_channels()
        km.cleanup_resources()


def test_a_kernel_outlives_its_zygote_and_its_client_waits_for_it(tmp_path):
    """When the zygote ends first, the kernels it forked go on, and each client still ends with its kernel
    (the kernel holds their connection open: the client reads its end only once the kernel has ended)."""
    address = str(tmp_path / "z.sock")
    server = subprocess.Popen(
        [sys.executable, kernel_zygote.__file__, "serve", address], stdout=subprocess.PIPE, text=True
    )
    assert server.stdout.readline().strip() == kernel_zygote.READY
    argv = [sys.executable, "-I", kernel_zygote.__file__, "connect", address, "-f", "{connection_file}"]
    km, kc = start(argv, tmp_path)
    try:
        client = km.provisioner.process
        server.kill()
        server.wait()
        text, errors = run(kc, "import os\nprint(os.getpid())")
        assert not errors and client.poll() is None, "the kernel and its client outlived the zygote"
        os.kill(int(text), signal.SIGKILL)
        assert client.wait(timeout=60) == 1, "the client ends when its kernel does"
    finally:
        kc.stop_channels()
        km.cleanup_resources()
        server.stdout.close()
