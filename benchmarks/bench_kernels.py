"""Benchmark: a notebook test's kernel forked from the warm zygote against a kernel of its own (not part of
the test suite).

nbval starts a fresh kernel per notebook. Each round starts one kernel each way, alternating, runs the
first cell every lab's stand-in needs (``import torch`` and one meta op) and shuts it down; it prints the
median seconds from "start the kernel" to that cell's end, and their ratio. The peer is the kernel nbval
starts without the zygote: ``python -m ipykernel_launcher`` (``DEVICEKIT_NBVAL_FRESH_KERNELS=1``).

Run:  .venv/bin/python benchmarks/bench_kernels.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

from course_tools import kernel_zygote

FIRST_CELL = "import torch\ntorch.ones(2, device='meta') + 1"


def kernel_seconds(argv: list[str] | None) -> float:
    """Start a kernel (forked when ``argv`` is the zygote client's), run `FIRST_CELL`, shut it down."""
    import ipykernel.kernelspec

    class Specs(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            spec = self.kernel_spec_class(
                resource_dir=ipykernel.kernelspec.RESOURCES, **ipykernel.kernelspec.get_kernel_dict()
            )
            if argv:
                spec.argv = argv
            return spec

    started = time.perf_counter()
    km = KernelManager(kernel_name="python3", kernel_spec_manager=Specs())
    km.start_kernel(stderr=subprocess.DEVNULL)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=300)
        reply = kc.execute_interactive(FIRST_CELL, timeout=300, output_hook=lambda msg: None)
        assert reply["content"]["status"] == "ok", reply["content"]
        return time.perf_counter() - started
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="bench-zygote-")
    address = os.path.join(folder, "z.sock")
    warm_started = time.perf_counter()
    server = subprocess.Popen(
        [sys.executable, kernel_zygote.__file__, "serve", address], stdout=subprocess.PIPE, text=True
    )
    try:
        if server.stdout is None or server.stdout.readline().strip() != kernel_zygote.READY:
            print("the zygote did not start", file=sys.stderr)
            return 1
        warm = time.perf_counter() - warm_started
        client = [sys.executable, "-I", kernel_zygote.__file__, "connect", address, "-f", "{connection_file}"]
        own, forked = [], []
        for _ in range(args.rounds):
            own.append(kernel_seconds(None))
            forked.append(kernel_seconds(client))
    finally:
        server.kill()
        server.wait()
    a, b = statistics.median(own), statistics.median(forked)
    print(f"kernel start + first meta op, median of {args.rounds} rounds (s)")
    print(f"the zygote's one-off warm-up: {warm:.2f} s")
    print("| kernel | s | ratio |")
    print("|---|---:|---:|")
    print(f"| own interpreter (peer: python -m ipykernel_launcher) | {a:.2f} | 1.00 |")
    print(f"| forked from the zygote | {b:.2f} | {b / a:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
