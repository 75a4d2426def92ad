"""Every op of PyTorch's OpInfo database on a simulated GPU: the same results and gradients as on the CPU?

For each op of ``torch.testing._internal.common_methods_invocations.op_db`` (random ops left out), its
first float32 sample inputs run on the CPU and again with every tensor moved to a simulated ``cuda:0``;
results are compared (simulated or not, shape, dtype, strides, values), and with ``--grad`` the gradients
of a backward through the outputs too. What differs is counted by reason, with examples. Expected
differences: factories called without a device (``arange``: a CPU result, as on CUDA), uninitialised
memory (``empty_like``), ``as_strided`` on an input whose layout ``.to("cuda")`` compacted, sparse
compressed layouts (not simulated), and ops whose CUDA kernel wants a CPU argument (``tensor_split``'s
indices: the simulator raises what CUDA raises).

Needs ``expecttest`` (imported by PyTorch's test utilities):
    pip install --target /tmp/deps expecttest
    PYTHONPATH=src:/tmp/deps .venv/bin/python benchmarks/simulate_opinfo_sweep.py [--grad]

Measured on this branch (torch 2.13.0+cpu, sparse ops left out: a simulated GPU refuses sparse layouts):
1209 samples agree without ``--grad`` (2 samples per op), 518 with ``--grad --samples 1``; the
differences are the expected ones above.
"""

from __future__ import annotations

import argparse
import collections
import sys
import warnings

import torch
from torch.utils._pytree import tree_flatten, tree_map

from devicekit.simulate import is_simulated, simulate

SKIP = ("rand", "normal", "bernoulli", "multinomial", "dropout", "sparse")


def _compare(expected: object, got: object) -> str | None:
    flat_expected, flat_got = tree_flatten(expected)[0], tree_flatten(got)[0]
    if len(flat_expected) != len(flat_got):
        return "structure"
    for x, y in zip(flat_expected, flat_got, strict=True):
        if not isinstance(x, torch.Tensor):
            continue
        if not isinstance(y, torch.Tensor):
            return "not a tensor"
        if not is_simulated(y):
            return "plain result"
        if x.shape != y.shape or x.dtype != y.dtype:
            return "shape or dtype"
        if x.layout == torch.strided and x.numel() > 1 and x.stride() != y.stride():
            return "strides"
        if not torch.allclose(x.to(torch.complex128), y.cpu().to(torch.complex128), 1e-4, 1e-5, True):
            return "values"
    return None


def _leaf(x: object, device: str, grad: bool) -> object:
    if not isinstance(x, torch.Tensor):
        return x
    y = x.detach().to(device)
    return y.requires_grad_(True) if grad and y.is_floating_point() else y


def _run(op: object, sample: object, device: str, grad: bool) -> object:
    args = tree_map(lambda x: _leaf(x, device, grad), (sample.input, sample.args, sample.kwargs))
    out = op(args[0], *args[1], **args[2])
    if not grad:
        return out
    outs = [o for o in tree_flatten(out)[0] if isinstance(o, torch.Tensor) and o.requires_grad]
    if not outs:
        return None
    sum(o.real.float().sum() for o in outs).backward()
    leaves = [x for x in tree_flatten(args)[0] if isinstance(x, torch.Tensor) and x.requires_grad]
    return [None if leaf.grad is None else leaf.grad for leaf in leaves]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grad", action="store_true", help="compare gradients instead of results")
    parser.add_argument("--samples", type=int, default=2)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    from torch.testing._internal.common_methods_invocations import op_db

    differ: collections.Counter[str] = collections.Counter()
    examples: dict[str, list[str]] = {}
    agree = 0
    with simulate():
        for op in op_db:
            if any(s in op.name for s in SKIP) or (args.grad and not op.supports_autograd):
                continue
            try:
                samples = list(op.sample_inputs("cpu", torch.float32, requires_grad=args.grad))
            except Exception:  # noqa: BLE001 - an op without float32 samples
                continue
            for sample in samples[: args.samples]:
                try:
                    expected = _run(op, sample, "cpu", args.grad)
                except Exception:  # noqa: BLE001 - a sample that fails on the CPU too
                    continue
                if expected is None:
                    continue
                try:
                    why = _compare(expected, _run(op, sample, "cuda", args.grad))
                    if args.grad and why == "plain result":
                        why = None  # gradients of CPU leaves are CPU tensors
                except Exception as exc:  # noqa: BLE001 - what the simulator raised is the datum
                    why = f"raised {type(exc).__name__}: {str(exc).splitlines()[0][:100]}"
                if why is None:
                    agree += 1
                else:
                    differ[why] += 1
                    examples.setdefault(why, []).append(op.name)
    print(f"{agree} samples agree ({'gradients' if args.grad else 'results'})")
    for why, count in differ.most_common():
        print(f"{count:4d}  {why}  e.g. {', '.join(sorted(set(examples[why]))[:5])}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
