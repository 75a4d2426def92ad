"""Runs the PyTorch facts behind the verdicts in `judged-stop46b.md` on the CPU (a benchmark aid, no test).

All 32 findings of that run are DK008 (`torch.load` without `map_location`). The verdicts rest on three
facts, each run here on a machine without CUDA (a check that fails raises AssertionError):

1. A file whose storages were saved from a CUDA device does not load on a machine without CUDA unless
   `map_location` is given; with `map_location="cpu"` it loads. The file is made on the CPU by tagging
   its storages `cuda:0` the way `torch.save` does for a tensor on a GPU (a tagger registered with
   `torch.serialization.register_package`), so the loader takes the same path as for a real GPU file.
2. A file holding only CPU tensors and plain numbers (torchtune's `recipe_state.pt`) loads without
   `map_location` there.
3. `nn.CrossEntropyLoss().cuda()` does not fail without CUDA: a module without parameters or buffers
   has nothing to move, so DeepSpeedExamples' ViT script reaches its `torch.load` on the CPU path.
4. `torch.cuda.synchronize()` raises without CUDA: DeepSpeedExamples' GAN scripts call it whatever
   `--cuda` says, so they never run on a machine without a GPU.

Run: .venv/bin/python benchmarks/lint_precision/verify_verdicts_stop46b.py
"""

from __future__ import annotations

import io

import torch
from torch import nn

_TAG_AS_CUDA = {"on": False}


def _tagger(storage: object) -> str | None:
    """Tags every storage `cuda:0` while switched on, as `torch.save` tags a storage on the first GPU."""
    return "cuda:0" if _TAG_AS_CUDA["on"] else None


def _deserializer(storage: object, location: str) -> None:
    """Leaves restoring to PyTorch's own CPU and CUDA deserializers."""
    return None


torch.serialization.register_package(0, _tagger, _deserializer)


def _saved(obj: object, as_cuda: bool) -> bytes:
    buffer = io.BytesIO()
    _TAG_AS_CUDA["on"] = as_cuda
    try:
        torch.save(obj, buffer)
    finally:
        _TAG_AS_CUDA["on"] = False
    return buffer.getvalue()


def gpu_checkpoint_needs_map_location_without_cuda() -> str:
    """Fact 1: a GPU-saved state_dict fails to load without CUDA unless map_location is given."""
    assert not torch.cuda.is_available(), "run on a machine without CUDA"
    data = _saved(nn.Linear(2, 2).state_dict(), as_cuda=True)
    try:
        torch.load(io.BytesIO(data), weights_only=True)
    except RuntimeError as error:
        message = str(error)
    else:
        raise AssertionError("a cuda-tagged file loaded without map_location on a CPU-only machine")
    assert "Attempting to deserialize object on a CUDA device" in message, message
    state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    nn.Linear(2, 2).load_state_dict(state)
    return f"without map_location: {message.splitlines()[0][:90]}...; with map_location='cpu': loads"


def cpu_only_state_loads_without_map_location() -> str:
    """Fact 2: torchtune's recipe_state.pt (ints, None, a loader state) loads on the CPU as it is."""
    state = {
        "seed": 0,
        "epochs_run": 1,
        "total_epochs": 3,
        "max_steps_per_epoch": 10,
        "steps_run": 5,
        "total_training_steps": 30,
        "dataloader": {"_num_yielded": 5, "_sampler_iter_state": None},
        "val_dataloader": None,
    }
    loaded = torch.load(io.BytesIO(_saved(state, as_cuda=False)), weights_only=True)
    assert loaded == state
    return "a dict of ints and None round-trips with weights_only=True and no map_location"


def parameterless_module_cuda_without_cuda() -> str:
    """Fact 3: `.cuda()` on a module with no tensors moves nothing and does not raise without CUDA."""
    assert not torch.cuda.is_available(), "run on a machine without CUDA"
    criterion = nn.CrossEntropyLoss().cuda(None)
    assert isinstance(criterion, nn.CrossEntropyLoss)
    return "nn.CrossEntropyLoss().cuda(None) returns the module on a machine without CUDA"


def cuda_synchronize_needs_cuda() -> str:
    """Fact 4: `torch.cuda.synchronize()` raises on a machine without CUDA."""
    assert not torch.cuda.is_available(), "run on a machine without CUDA"
    try:
        torch.cuda.synchronize()
    except (AssertionError, RuntimeError) as error:
        return f"torch.cuda.synchronize() raises {type(error).__name__}: {error}"
    raise AssertionError("torch.cuda.synchronize() did not raise without CUDA")


def main() -> None:
    print(f"torch {torch.__version__}")
    for check in (
        gpu_checkpoint_needs_map_location_without_cuda,
        cpu_only_state_loads_without_map_location,
        parameterless_module_cuda_without_cuda,
        cuda_synchronize_needs_cuda,
    ):
        print(f"{check.__name__}: {check()}")


if __name__ == "__main__":
    main()
