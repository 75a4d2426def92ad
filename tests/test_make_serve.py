"""The README's first command, `make serve`, serves the site in both languages (it once aborted: a dirty
build prints a warning, and strict mode counted it)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request

import pytest

from course_tools.paths import ROOT

pytestmark = pytest.mark.integration  # runs `make serve`: a real server process


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode("utf-8")


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_serve_serves_english_and_chinese(tmp_path):
    stamp = ROOT / ".venv" / ".installed"
    if not stamp.exists():
        pytest.skip("runs inside the course environment that `make setup` made (.venv)")
    port = _free_port()
    # --old-file: the environment is already set up (the suite runs in it); never reinstall from a test
    command = ["make", "--no-print-directory", f"--old-file={stamp}", "serve", f"PORT={port}"]
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 600  # a first full bilingual build on a busy 2-core laptop
        english = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                english = _get(f"http://127.0.0.1:{port}/")
                break
            except OSError:
                time.sleep(1)
        assert english is not None, (tmp_path / "serve.log").read_text()[-3000:]
        chinese = _get(f"http://127.0.0.1:{port}/zh/")
        assert "<html" in english and 'lang="en"' in english
        assert 'lang="zh"' in chinese and "课程" in chinese
        assert "Aborted" not in (tmp_path / "serve.log").read_text()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
        log.close()
