"""Runs the PyTorch facts behind the verdicts in `judged-stop46.md`, on the CPU (a benchmark aid, not a test).

Each check is a reduction of the judged code to what matters for the device, with `meta` standing in for an
accelerator where only "does it move with the module" is asked. A check that fails raises AssertionError,
so a verdict whose ground changed in a later torch shows up here. Run:

    .venv/bin/python benchmarks/lint_precision/verify_verdicts.py
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
import torchgen
from torch import nn

ROOT = Path(__file__).resolve().parents[2]


def submodules_in_list_and_add_module() -> str:
    """detectron2 semantic_seg.py:212 (DK005): a list whose items are also `add_module`d moves and saves."""

    class Head(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale_heads = []
            for name in ("p2", "p3"):
                self.scale_heads.append(nn.Sequential(nn.Conv2d(2, 2, 3)))
                self.add_module(name, self.scale_heads[-1])

    head = Head().to("meta")
    assert all(p.device.type == "meta" for h in head.scale_heads for p in h.parameters())
    assert len(list(head.parameters())) == 4
    assert "p2.0.weight" in head.state_dict()
    return "list items registered with add_module: moved by .to(), in parameters() and state_dict()"


def cpu_device_attribute_then_numpy() -> str:
    """detectron2 cityscapes_evaluation.py:152 (DK010): `.to(self._cpu_device)` with `torch.device("cpu")`."""
    cpu_device = torch.device("cpu")
    out = torch.randn(3, 4, 4).argmax(dim=0).to(cpu_device).numpy()
    assert out.shape == (4, 4)
    return ".to(torch.device('cpu')).numpy() is the documented way to reach NumPy"


def register_buffer_on_a_property_name() -> str:
    """Lightning GAN example :127 (DK004): `example_input_array` is a LightningModule property.

    The fix the message suggests, `register_buffer("example_input_array", ...)`, is refused by nn.Module
    for a name the class already defines (Lightning's property: src/lightning/pytorch/core/module.py:248
    at 7f0c3436), and Lightning moves the example itself (model_summary.py:345-347, module.py:1504-1507).
    """

    class WithProperty(nn.Module):
        @property
        def example_input_array(self) -> torch.Tensor | None:
            return getattr(self, "_example", None)

        @example_input_array.setter
        def example_input_array(self, value: torch.Tensor) -> None:
            self._example = value

    module = WithProperty()
    module.example_input_array = torch.zeros(2, 3)
    try:
        module.register_buffer("example_input_array", torch.zeros(2, 3))
    except KeyError as exc:
        return f"register_buffer on the property's name raises KeyError: {exc}"
    raise AssertionError("register_buffer accepted a property's name")


def type_as_moves_to_the_weight() -> str:
    """Lightning GAN example :125 (DK004): `validation_z.type_as(weight)` follows the weight's device."""
    weight = nn.Linear(3, 3).to("meta").weight
    z = torch.randn(8, 3).type_as(weight)
    assert z.device == weight.device
    return "type_as(weight) puts the plain attribute on the weight's device before it is used"


def cpu_indices_into_a_device_tensor() -> str:
    """fairseq sequence_generator.py:89/400 (DK004): `lprobs[:, cpu_long_indices] = -inf` with CUDA lprobs.

    torch 2.13's own native_functions.yaml (shipped in torchgen) declares index_put_ and _index_put_impl_
    `device_check: NoCheck` (no same-device check on the indices), and reading a CUDA tensor with CPU
    indices was recorded working on an H200 (results/cuda-messages.json, index-cuda-tensor-cpu-indices-ok).
    The assignment itself was not run on a GPU in this session (no device was lent to it).
    """
    yaml = Path(torchgen.__file__).parent / "packaged" / "ATen" / "native" / "native_functions.yaml"
    text = yaml.read_text(encoding="utf-8")
    for op in ("index_put_(Tensor(a!) self", "_index_put_impl_(Tensor(a!) self"):
        block = text[text.index(f"- func: {op}") :].split("\n- func:", 1)[0]
        assert "device_check: NoCheck" in block, op
    recorded = json.loads((ROOT / "results" / "cuda-messages.json").read_text(encoding="utf-8"))
    case = next(v for k, v in _walk(recorded) if k == "index-cuda-tensor-cpu-indices-ok")
    assert case["raised"] is False
    return f"index_put_ has no device check on indices (torch {torch.__version__}); CUDA[CPU idx] recorded ok"


def _walk(data: object):
    """Every (key, value) pair of nested dicts, so the recorded case is found wherever it sits."""
    if isinstance(data, dict):
        for k, v in data.items():
            yield k, v
            yield from _walk(v)


CHECKS = (
    submodules_in_list_and_add_module,
    cpu_device_attribute_then_numpy,
    register_buffer_on_a_property_name,
    type_as_moves_to_the_weight,
    cpu_indices_into_a_device_tensor,
)


if __name__ == "__main__":
    for check in CHECKS:
        print(f"{check.__name__}: {check()}")
