"""The tables devicekit.simulate ships are what the installed torch says, and its CUDA texts are PyTorch's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from course_tools.generate import simulate_tables
from devicekit.simulate import _amp, _rules

RECORD = json.loads((Path(__file__).resolve().parent.parent / "results" / "cuda-messages.json").read_text())


def test_the_shipped_tables_are_the_installed_torchs():
    shipped = json.loads(simulate_tables.TABLES.read_text(encoding="utf-8"))
    assert shipped == simulate_tables.build(), "run: python -m course_tools.generate.simulate_tables --write"


def test_kernel_wrapper_names_are_the_ones_recorded_on_the_h200():
    ops = simulate_tables.cuda_ops()
    names = {entry[0] for entry in ops.values()}
    for case in RECORD["cases"].values():
        message = case.get("message", "")
        if "(when checking argument in method " in message:
            assert message.rsplit("method ", 1)[1].rstrip(")") in names
    assert ops["addmm"] == ["wrapper_CUDA_addmm", ["self", "mat1", "mat2"]]
    assert ops["index_select"][0] == "wrapper_CUDA__index_select"
    assert ops["add.Tensor"] == ["wrapper_CUDA_add_Tensor", None]  # TensorIterator: no generated check


def test_the_autocast_lists_come_from_the_header():
    lists = simulate_tables.autocast_lists()
    assert "mm" in lists["lower_precision_fp"] and "mse_loss" in lists["fp32"]
    assert "softmax.int" in lists["fp32_set_opt_dtype"] and "cat" not in lists["promote"]


def _binary_text() -> bytes:
    lib = Path(torch.__file__).parent / "lib"
    return b"".join(p.read_bytes() for p in lib.glob("libtorch_*.so*")) or pytest.skip("no libtorch_*.so")


def test_texts_not_recorded_on_a_gpu_are_format_strings_of_the_installed_torch():
    blob = _binary_text()
    for text in (
        "Trying to pass too many CPU scalars to non-CPU kernel!",
        "No CUDA GPUs are available",
        ") and bias type (",
        "Attempted to call `variable.set_data(tensor)`, but `variable` and `tensor` have incompatible tensor",
        _amp._BANNED.encode().decode(),
    ):
        assert text.encode() in blob, text


def test_every_rule_text_starts_as_recorded_or_as_in_the_binary():
    assert str(_rules.generic_error("cuda:0", "cpu")) == RECORD["cases"]["add-cpu-first"]["message"]
    assert (
        str(_rules.argument_error("tensors", "cpu", "cuda:0", "wrapper_CUDA_cat"))
        == (RECORD["cases"]["cat"]["message"])
    )
    assert str(_rules.indices_error("cpu")) == RECORD["cases"]["index-cpu-tensor-cuda-indices"]["message"]
    assert str(_rules.generator_error("cuda", "cpu")) == RECORD["cases"]["generator-cpu-for-cuda"]["message"]
    assert str(_rules.pin_error("torch.cuda.FloatTensor")) == RECORD["cases"]["pin-cuda-tensor"]["message"]
    assert str(_rules.rnn_error("hidden", "cuda:0", "cpu")) == RECORD["cases"]["lstm-cpu-hidden"]["message"]
    assert (
        str(_rules.conv_type_error("torch.cuda.FloatTensor", "weight", "torch.FloatTensor"))
        == (RECORD["cases"]["conv-cuda-input-cpu-weight"]["message"])
    )
