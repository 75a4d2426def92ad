"""How heavy the site's pages are and how long the strict bilingual build takes (not part of the tests).

Prints, for a fresh output folder:

1. A clean strict build with the render cache cold (``COURSE_SITE_CACHE`` pointed at an empty folder:
   every notebook converted, jieba's dictionary parsed from scratch), then one with the cache warm (what
   ``make build`` costs after the first time). Wall time and the CPU time of the build process.
2. The HTML weight of every lab and solution page in both languages, and the stylesheet they share.
3. With ``--serve``: how long ``mkdocs serve`` (with and without ``--dirty``) takes to rebuild after a page
   is touched.

Timings depend on the machine and on what else runs on it; compare runs made on the same machine.

Run:  .venv/bin/python benchmarks/bench_site.py [--serve] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from course_tools.paths import ROOT

MKDOCS = [sys.executable, "-m", "mkdocs"]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_build(site: Path, cache: Path) -> tuple[float, float, str]:
    """One strict build into an empty ``site``; (wall s, CPU s, log)."""
    shutil.rmtree(site, ignore_errors=True)
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "COURSE_SITE_CACHE": str(cache)}
    cpu, start = _children_cpu(), time.perf_counter()
    run = subprocess.run(
        [*MKDOCS, "build", "--strict", "-d", str(site)], cwd=ROOT, env=env, capture_output=True, text=True
    )
    wall, cpu = time.perf_counter() - start, _children_cpu() - cpu
    log = run.stdout + run.stderr
    if run.returncode != 0:
        print(f"  (the strict build failed; figures are for a failed build)\n{_warnings(log)}")
    return wall, cpu, log


def _warnings(log: str) -> str:
    return "\n".join(f"    {line}" for line in log.splitlines() if "WARNING" in line or "Error" in line)


def page_weights(site: Path) -> None:
    pages = sorted(
        p
        for folder in ("labs", "solutions")
        for lang in ("", "zh")
        for p in (site / lang / folder).glob("*/index.html")
    )
    if not pages:
        print("  no lab pages built")
        return
    print(f"  {'page':<44} {'HTML KB':>8} {'inline CSS KB':>14}")
    for page in pages:
        html = page.read_text(encoding="utf-8")
        inline = sum(len(m) for m in re.findall(r"<style[^>]*>.*?</style>", html, re.DOTALL))
        name = str(page.parent.relative_to(site))
        print(f"  {name:<44} {len(html.encode()) / 1000:8.1f} {inline / 1000:14.1f}")
    for css in sorted((site / "assets" / "jupyter").glob("*.css")):
        print(f"  shared, cached once: {css.relative_to(site)}  {css.stat().st_size / 1000:.1f} KB")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_reload(page: Path, dirty: bool, timeout: float = 120.0) -> float | None:
    """Seconds from touching ``page`` until ``mkdocs serve`` has rebuilt (its log says so).

    ``dirty``: ``--dirty``, as ``make serve`` runs it (only the edited pages are rebuilt).
    """
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    cmd = [*MKDOCS, "serve", *(["--dirty"] if dirty else []), "-a", f"127.0.0.1:{_free_port()}"]
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
        try:
            if not _wait_for(log, "Serving on", timeout):
                return None
            time.sleep(2)  # let the watcher settle
            seen = _read(log).count("Documentation built in")
            start = time.perf_counter()
            os.utime(page)  # a modification event, content unchanged
            deadline = start + timeout
            while time.perf_counter() < deadline:
                if _read(log).count("Documentation built in") > seen:
                    return time.perf_counter() - start
                time.sleep(0.05)
            return None
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def _read(log) -> str:
    log.seek(0)
    return log.read()


def _wait_for(log, text: str, timeout: float) -> bool:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if text in _read(log):
            return True
        time.sleep(0.1)
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", action="store_true", help="also time a mkdocs serve rebuild")
    parser.add_argument("--keep", type=Path, help="build into this folder and keep it")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-site-") as tmp:
        site = args.keep or Path(tmp) / "site"
        cache = Path(tmp) / "cache"
        print(f"strict bilingual build ({os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f})")
        for label in ("cold cache", "warm cache"):
            wall, cpu, log = timed_build(site, cache)
            misses = log.count("Cache miss")
            print(f"  {label}: {wall:5.1f} s wall, {cpu:5.1f} s CPU  ({misses} notebooks converted)")
        print("page weight")
        page_weights(site)
    if args.serve:
        for dirty in (True, False):
            seconds = serve_reload(ROOT / "docs" / "index.zh.md", dirty=dirty)
            shown = "no rebuild seen (does the strict build pass?)" if seconds is None else f"{seconds:.1f} s"
            print(
                f"mkdocs serve{' --dirty' if dirty else ''}: rebuild after touching docs/index.zh.md: {shown}"
            )


if __name__ == "__main__":
    main()
