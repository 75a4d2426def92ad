"""Mutation cases for lab 06 (checkpoints across devices). WRONG: (name, answer, hint substring in English),
the taught bug first; RIGHT: (name, answer), different right answers. The checks run on the CPU and on two
GPUs, real or simulated: the cases that write "cuda" (cuda:0) where the device is cuda:1, or whose values are
wrong on a GPU only, fail there."""

from __future__ import annotations

import torch
from torch.utils._pytree import tree_map

import devicekit
from devicekit_labs.lab06 import make_model, make_optimizer, make_scheduler, missing_cuda_device
from mutations import untouched

LAB = "06-checkpoints"


# --- load-for-device ---------------------------------------------------------------------------------------


def load_without_map_location(path, device):
    """The taught bug: torch.load restores every storage where the file says, on a GPU this machine lacks."""
    return torch.load(path)


def load_to_the_cpu_only(path, device):
    return torch.load(path, map_location="cpu")


def load_unsafely(path, device):
    return torch.load(path, map_location=device, weights_only=False)


def load_renaming_the_gpu_only(path, device):
    """A dict renames only the locations it lists: storages the file records on the CPU stay there."""
    return torch.load(path, map_location={missing_cuda_device(): str(device)})


def load_then_move_the_model(path, device):
    checkpoint = torch.load(path, map_location="cpu")
    checkpoint["model"] = {k: v.to(device) for k, v in checkpoint["model"].items()}
    return checkpoint


def load_the_model_only(path, device):
    return torch.load(path, map_location=device)["model"]


def load_to_cuda(path, device):
    """map_location="cuda" for any GPU: the current GPU (cuda:0), not the device asked for."""
    return torch.load(path, map_location="cuda" if torch.device(device).type == "cuda" else device)


def load_storage_cuda(path, device):
    """storage.cuda() in a map_location function: cuda:0 too."""
    if torch.device(device).type != "cuda":
        return torch.load(path, map_location=device)
    return torch.load(path, map_location=lambda storage, location: storage.cuda())


def load_ok(path, device):
    return torch.load(path, map_location=device)


def load_then_move_everything(path, device):
    """Correct too: to the CPU first, then every tensor moved (slower: each tensor is copied twice)."""
    checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    return tree_map(lambda v: v.to(device) if isinstance(v, torch.Tensor) else v, checkpoint)


def load_with_a_device_object(path, device):
    return torch.load(path, map_location=torch.device(device), weights_only=True)


def load_with_a_storage_function(path, device):
    """Right everywhere: a map_location function that moves each storage, its device given by keyword."""
    return torch.load(path, map_location=lambda storage, loc: storage.to(device=device))


def load_with_a_positional_storage_to(path, device):
    """Issue 39's hidden set lists this as right, but it raises on any device with torch 2.13: the storages
    torch.load hands over are UntypedStorage, whose ``to`` takes the device by keyword only
    (``def to(self, *, device, non_blocking=False)`` in torch/storage.py, v2.13.0). tests/test_lab06.py runs
    it outside the simulation."""
    return torch.load(path, map_location=lambda storage, loc: storage.to(device))


# --- resume ------------------------------------------------------------------------------------------------


def resume_state_before_the_move(path, device):
    """The taught bug (scenario 9): the optimizer's state is loaded while the model is still on the CPU."""
    checkpoint = torch.load(path, map_location="cpu")
    model = make_model()
    optimizer = make_optimizer(model)
    scheduler = make_scheduler(optimizer)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    model.to(device)
    return model, optimizer, scheduler


def resume_mapped_to_the_device(path, device):
    checkpoint = torch.load(path, map_location=device)
    model = make_model().to(device)
    model.load_state_dict(checkpoint["model"])
    optimizer = make_optimizer(model)
    scheduler = make_scheduler(optimizer)
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    return model, optimizer, scheduler


def resume_scheduler_created_last(path, device):
    checkpoint = torch.load(path, map_location="cpu")
    model = make_model()
    model.load_state_dict(checkpoint["model"])
    model.to(device)
    optimizer = make_optimizer(model)
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler = make_scheduler(optimizer)
    scheduler.load_state_dict(checkpoint["scheduler"])
    return model, optimizer, scheduler


def resume_without_scheduler_state(path, device):
    checkpoint = torch.load(path, map_location="cpu")
    model = make_model()
    model.load_state_dict(checkpoint["model"])
    model.to(device)
    optimizer = make_optimizer(model)
    scheduler = make_scheduler(optimizer)
    optimizer.load_state_dict(checkpoint["optimizer"])
    return model, optimizer, scheduler


def resume_without_optimizer_state(path, device):
    checkpoint = torch.load(path, map_location="cpu")
    model = make_model()
    model.load_state_dict(checkpoint["model"])
    model.to(device)
    optimizer = make_optimizer(model)
    scheduler = make_scheduler(optimizer)
    scheduler.load_state_dict(checkpoint["scheduler"])
    return model, optimizer, scheduler


def resume_without_the_weights(path, device):
    checkpoint = torch.load(path, map_location="cpu")
    model = make_model().to(device)
    optimizer = make_optimizer(model)
    scheduler = make_scheduler(optimizer)
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    return model, optimizer, scheduler


def resume_optimizer_of_another_model(path, device):
    checkpoint = torch.load(path, map_location="cpu")
    model = make_model()
    model.load_state_dict(checkpoint["model"])
    model.to(device)
    optimizer = make_optimizer(make_model().to(device))
    scheduler = make_scheduler(optimizer)
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    return model, optimizer, scheduler


def resume_with_model_cuda(path, device):
    """model.cuda() for any GPU: the model lands on cuda:0 whatever device it was given."""
    checkpoint = torch.load(path, map_location="cpu")
    model = make_model()
    model.load_state_dict(checkpoint["model"])
    model = model.cuda() if torch.device(device).type == "cuda" else model.to(device)
    optimizer = make_optimizer(model)
    scheduler = make_scheduler(optimizer)
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    return model, optimizer, scheduler


def resume_weights_on_the_cpu_path_only(path, device):
    """A GPU branch that forgets the weights: right places everywhere, wrong values on a GPU only."""
    checkpoint = torch.load(path, map_location="cpu")
    model = make_model()
    if torch.device(device).type == "cpu":
        model.load_state_dict(checkpoint["model"])
    model.to(device)
    optimizer = make_optimizer(model)
    scheduler = make_scheduler(optimizer)
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    return model, optimizer, scheduler


def resume_ok(path, device):
    checkpoint = torch.load(path, map_location="cpu")
    model = make_model()
    model.load_state_dict(checkpoint["model"])
    model.to(device)
    optimizer = make_optimizer(model)
    scheduler = make_scheduler(optimizer)
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    return model, optimizer, scheduler


def resume_optimizer_built_before_the_move(path, device):
    """Right on a GPU: Module.to keeps the parameter objects, and the state is loaded after the move."""
    checkpoint = torch.load(path, map_location="cpu")
    model = make_model()
    optimizer = make_optimizer(model)
    scheduler = make_scheduler(optimizer)
    model.load_state_dict(checkpoint["model"])
    model.to(device)
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    return model, optimizer, scheduler


def resume_weights_after_the_move(path, device):
    """Right on a GPU: load_state_dict copies into the moved tensors, wherever they are."""
    checkpoint = torch.load(path, map_location="cpu")
    model = make_model().to(device)
    model.load_state_dict(checkpoint["model"])
    optimizer = make_optimizer(model)
    scheduler = make_scheduler(optimizer)
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    return model, optimizer, scheduler


def resume_repaired_by_prepare(path, device):
    checkpoint = torch.load(path, map_location="cpu")
    model = make_model()
    optimizer = make_optimizer(model)
    scheduler = make_scheduler(optimizer)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    devicekit.prepare(model, device, optimizer)
    return model, optimizer, scheduler


WRONG = {
    "load-for-device": [
        ("no map_location", load_without_map_location, "Attempting to deserialize"),
        ("always to the CPU", load_to_the_cpu_only, "came back on cpu"),
        ("weights_only=False", load_unsafely, "arbitrary Python object"),
        (
            "a dict that renames the GPU only",
            load_renaming_the_gpu_only,
            "the ones the file records on the CPU too",
        ),
        ("only the model moved afterwards", load_then_move_the_model, "came back on cpu"),
        ("the model's state_dict only", load_the_model_only, "expected the checkpoint dict"),
        ('map_location="cuda"', load_to_cuda, "came back on cuda:0"),
        ("storage.cuda() in a map_location function", load_storage_cuda, "came back on cuda:0"),
        ("storage.to(device), positional", load_with_a_positional_storage_to, "takes 1 positional argument"),
        ("untouched stub", untouched, "not done yet"),
    ],
    "resume": [
        (
            "optimizer state loaded before the move",
            resume_state_before_the_move,
            "optimizer state of a parameter",
        ),
        ("checkpoint mapped to the device", resume_mapped_to_the_device, "step counters"),
        ("scheduler created after loading", resume_scheduler_created_last, "learning rate after resuming"),
        ("scheduler state not restored", resume_without_scheduler_state, "scheduler does not continue"),
        ("optimizer state not restored", resume_without_optimizer_state, "no state"),
        ("weights never loaded", resume_without_the_weights, "differs from the run that never stopped"),
        ("optimizer of another model", resume_optimizer_of_another_model, "not the parameters of the model"),
        ("model.cuda() for any GPU", resume_with_model_cuda, "for device=cuda:1, the model's"),
        (
            "weights loaded on the CPU path only",
            resume_weights_on_the_cpu_path_only,
            "for device=cuda:0, one training step after resuming",
        ),
        ("untouched stub", untouched, "not done yet"),
    ],
}

RIGHT = {
    "load-for-device": [
        ("map_location=device", load_ok),
        ("to the CPU, then every tensor moved", load_then_move_everything),
        ("a torch.device, weights_only spelled out", load_with_a_device_object),
        ("map_location=lambda storage, loc: storage.to(device=device)", load_with_a_storage_function),
    ],
    "resume": [
        ("the lesson's order", resume_ok),
        ("optimizer built before the move, state loaded after it", resume_optimizer_built_before_the_move),
        ("weights loaded after the move", resume_weights_after_the_move),
        ("wrong order repaired by devicekit.prepare", resume_repaired_by_prepare),
    ],
}
