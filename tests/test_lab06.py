"""Lab 06 self-checks: a correct answer passes, typical wrong ones fail with their hint, and the checkpoint
the lab writes really claims a CUDA device: PyTorch's own torch.load refuses it where that GPU is missing."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
import torch
from mutations import lab06 as cases
from mutations import named

from check_outcome import expect
from devicekit_labs import exercises_for, lab06, run
from devicekit_labs.lab06 import (
    gpu_run_checkpoint,
    make_model,
    missing_cuda_device,
    save_as_if_on,
)
from devicekit_labs.machine import probe_gpus

LAB = cases.LAB

#: The cases this lab's own test asserts, by name; each answer and its hint are in tests/mutations/lab06.py.
CASES = named(
    cases,
    [
        ("load-for-device", "map_location=device"),
        ("load-for-device", "weights_only=False"),
        ("load-for-device", "only the model moved afterwards"),
        ("load-for-device", "untouched stub"),
        ("resume", "the lesson's order"),
        ("resume", "optimizer state loaded before the move"),
        ("resume", "scheduler created after loading"),
        ("resume", "checkpoint mapped to the device"),
        ("resume", "optimizer state not restored"),
        ("resume", "scheduler state not restored"),
        ("resume", "untouched stub"),
    ],
)


@pytest.mark.parametrize(("key", "answer", "hint"), CASES)
def test_checks(key, answer, hint):
    expect(run(LAB, key, answer), hint)


def test_without_map_location_torch_load_names_the_missing_gpu():
    # the probe runs on two GPUs (real or simulated), so torch.load names the first missing one, cuda:2
    result = run(LAB, "load-for-device", cases.load_without_map_location)
    expect(result, "Attempting to deserialize object on CUDA device 2")


def test_the_checkpoint_claims_a_missing_cuda_device_and_torch_load_refuses_it(tmp_path):
    path = tmp_path / "gpu_run.pt"
    saved = gpu_run_checkpoint(path)
    location = missing_cuda_device()
    with zipfile.ZipFile(path) as archive:
        pickled = next(archive.read(n) for n in archive.namelist() if n.endswith("/data.pkl"))
    assert location.encode() in pickled and b"cpu" in pickled  # Adam's step counters stay "cpu"

    with pytest.raises(RuntimeError, match=r"^Attempting to deserialize object on (a )?CUDA device"):
        torch.load(path)
    seen = []
    loaded = torch.load(path, map_location=lambda storage, where: seen.append(where) or storage)
    assert set(seen) == {location, "cpu"}
    assert torch.equal(loaded["model"]["0.weight"], saved["model"]["0.weight"])


def test_on_one_gpu_the_lab_file_raises_the_message_a_real_gpu_printed(tmp_path):
    """The lab's section 3, on one GPU (simulated here): the file claims cuda:1, and torch.load raises the
    sentence recorded on an H200 (case load-cuda1-on-one-gpu, recorded for a file claiming cuda:9)."""
    import json

    from course_tools.paths import ROOT

    recorded = json.loads((ROOT / "results" / "cuda-messages.json").read_text())["cases"]
    want = recorded["load-cuda1-on-one-gpu"]["message"].replace("device 9 ", "device 1 ")
    with probe_gpus(1):
        assert missing_cuda_device() == "cuda:1"
        path = tmp_path / "gpu_run.pt"
        gpu_run_checkpoint(path)
        with pytest.raises(RuntimeError) as err:
            torch.load(path)
        assert str(err.value) == want
        loaded = torch.load(path, map_location=lambda storage, loc: storage.to(device="cuda:0"))
    assert loaded["model"]["0.weight"].device == torch.device("cuda", 0)


def test_a_storage_moves_by_keyword_only():
    """Why the mutation set rejects ``map_location=lambda storage, loc: storage.to(device)``: torch.load hands
    the function an UntypedStorage, whose ``to`` is ``def to(self, *, device, non_blocking=False)``
    (torch/storage.py, v2.13.0), so the positional call raises on any device; the keyword call works. Run on
    the real PyTorch, outside any simulation."""
    buffer = io.BytesIO()
    torch.save({"w": torch.arange(3.0)}, buffer)
    buffer.seek(0)
    with pytest.raises(TypeError, match="takes 1 positional argument"):
        torch.load(buffer, map_location=lambda storage, loc: storage.to("cpu"))
    buffer.seek(0)
    loaded = torch.load(buffer, map_location=lambda storage, loc: storage.to(device="cpu"))
    assert loaded["w"].tolist() == [0.0, 1.0, 2.0]


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU-only wording")
def test_the_cpu_only_message_is_pytorchs_own():
    buffer = io.BytesIO()
    save_as_if_on({"w": torch.ones(2)}, buffer, "cuda:0", [])
    buffer.seek(0)
    assert torch.load(buffer)["w"].device.type == "cpu"  # nothing claimed: nothing changes
    buffer = io.BytesIO()
    weight = torch.ones(2)
    save_as_if_on({"w": weight}, buffer, "cuda:0", [weight])
    buffer.seek(0)
    with pytest.raises(RuntimeError) as err:
        torch.load(buffer)
    assert str(err.value).startswith(
        "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False."
    )
    assert any(frame.name == "_validate_device" for frame in __import__("traceback").extract_tb(err.tb))


def test_save_as_if_on_refuses_a_bad_location():
    with pytest.raises(ValueError, match="location"):
        save_as_if_on({}, io.BytesIO(), "", [])


def test_each_claimed_storage_records_its_location_in_full():
    # PyTorch's CUDA tagger returns a new string per storage, so pickle writes each location in full; a
    # shared string object would be memoized (a back-reference) and data.pkl would differ from a real save's
    state = make_model().state_dict()
    buffer = io.BytesIO()
    save_as_if_on(state, buffer, "cuda:0", state.values())
    with zipfile.ZipFile(buffer) as archive:
        pickled = next(archive.read(n) for n in archive.namelist() if n.endswith("/data.pkl"))
    assert pickled.count(b"cuda:0") == len(state)


FIXTURE = Path(__file__).parent / "fixtures" / "lab06-h200-torch2.11-data.pkl"


@pytest.mark.skipif(
    not (2, 11) <= tuple(int(n) for n in torch.__version__.split(".")[:2]) <= (2, 13),
    reason="data.pkl recorded with torch 2.11 and checked up to 2.13; later state_dict layouts may differ",
)
def test_data_pkl_is_byte_for_byte_what_a_real_cuda_save_wrote(tmp_path, monkeypatch):
    # FIXTURE: data.pkl of the same three-step run, trained on cuda:0 of an H200 and saved by torch.save
    # (torch 2.11.0+cu130), recorded during the review of issue 12
    monkeypatch.setattr(lab06, "missing_cuda_device", lambda: "cuda:0")
    path = tmp_path / "gpu_run.pt"
    gpu_run_checkpoint(path)
    with zipfile.ZipFile(path) as archive:
        pickled = next(archive.read(n) for n in archive.namelist() if n.endswith("/data.pkl"))
    assert pickled == FIXTURE.read_bytes()


# --- the two-part check: observations are plain data, the judge decides from them alone -------------------


def _through_bytes(observations):
    import io

    buffer = io.BytesIO()
    torch.save(observations, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


@pytest.mark.parametrize("key", [e.key for e in exercises_for(LAB)])
def test_observations_survive_bytes_and_the_judge_alone_decides(key):
    """As the grader does it: the probe's data crosses a process boundary as bytes, the judge runs apart."""
    from devicekit_labs import Fail

    (ex,) = [e for e in exercises_for(LAB) if e.key == key]
    assert ex.probe is not None and ex.judge is not None, "a two-part (judged) check"
    ex.judge(_through_bytes(ex.probe(cases.RIGHT[key][0][1])))
    _name, wrong, hint = cases.WRONG[key][0]
    with pytest.raises(Fail) as caught:
        ex.judge(_through_bytes(ex.probe(wrong)))
    assert hint in caught.value.en
