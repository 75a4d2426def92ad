"""The meta table of the "Labs without a GPU" page (`course_tools.generate.standin`, whose ``OPS`` is the one
source of truth): every row runs here and must do what the table says, on meta, under
``devicekit.strict_devices()`` and, on a CUDA runner, on the GPU; rows with a recorded case agree with
``results/cuda-messages.json``; and ``docs/standin.md`` / ``docs/standin.zh.md`` show exactly the table made
from ``OPS``.
"""

from __future__ import annotations

import json

import pytest
import torch

from course_tools.generate.standin import (
    CUDA_CASES,
    CUDA_RECORD,
    OPS,
    PAGES,
    outcome,
    page_table,
    render_table,
)
from devicekit import strict_devices

# --- the tests ---------------------------------------------------------------------------------------


def test_table_is_big_enough_and_well_formed():
    assert len(OPS) >= 30
    assert len({op.key for op in OPS}) == len(OPS), "keys are unique"
    for op in OPS:
        assert op.meta in {"raises", "cpu", "meta"}, op.key
        assert op.cuda in {"raises", "works"}, op.key
        assert "acc(" in op.code or "ACC" in op.code, f"{op.key} must involve the stand-in accelerator"


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.key)
def test_meta_outcome_is_as_documented(op):
    assert outcome(op, torch.device("meta")) == op.meta, (
        f"{op.code} on meta + CPU no longer gives {op.meta!r}: update OPS and the pages "
        "(python tests/test_standin_ops.py --write), and any lab that relies on it"
    )


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.key)
def test_strict_devices_on_meta_raises_exactly_where_cuda_does(op):
    """The pages say: on every row, ``strict_devices()`` on meta raises exactly where CUDA raises."""
    with strict_devices():
        got = outcome(op, torch.device("meta"))
    assert ("raises" if got == "raises" else "works") == op.cuda, (
        f"{op.code} under strict_devices on meta gave {got!r}, CUDA {op.cuda!r}: fix strict_devices or the "
        "'What strict_devices catches' section of docs/standin*.md"
    )


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the CUDA column needs a CUDA GPU")
@pytest.mark.parametrize("op", OPS, ids=lambda op: op.key)
def test_cuda_outcome_is_as_documented(op):
    got = outcome(op, torch.device("cuda", torch.cuda.current_device()))
    assert ("raises" if got == "raises" else "works") == op.cuda, f"{op.code} on CUDA gave {got!r}"


def test_recorded_cuda_outcomes_agree():
    """Every row with a recorded case says what the real GPU did (torch 2.11, results/cuda-messages.json)."""
    record = json.loads(CUDA_RECORD.read_text(encoding="utf-8"))
    assert record["torch"].startswith("2.11"), "the pages say 'torch 2.11': update them with the record"
    by_key = {op.key: op for op in OPS}
    assert set(CUDA_CASES) <= set(by_key), set(CUDA_CASES) - set(by_key)
    for key, case in CUDA_CASES.items():
        raised = record["cases"][case]["raised"]
        assert ("raises" if raised else "works") == by_key[key].cuda, f"{key}: case {case} raised={raised}"
        if raised:  # the same-device family: a RuntimeError, as outcome() expects
            assert record["cases"][case]["type"] == "builtins.RuntimeError", case


@pytest.mark.parametrize("lang", sorted(PAGES))
def test_pages_show_exactly_this_table(lang):
    assert page_table(PAGES[lang]) == render_table(lang), (
        f"{PAGES[lang].name}'s table differs from OPS: run python -m course_tools.generate.standin --write"
    )


def test_the_lab_1_trigger_is_one_meta_really_checks():
    """Lab 1 triggers with ``nn.Linear`` (bias) and a CPU batch: a row meta really raises for."""
    by_key = {op.key: op for op in OPS}
    assert by_key["Linear"].meta == "raises" and by_key["Linear-nobias"].meta == "cpu"
