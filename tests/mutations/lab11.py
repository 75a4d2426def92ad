"""Mutation cases for lab 11's self-checks: answers a learner writes, wrong (with the hint the check must
give) and right (which it must accept). Read by tests/test_lab11.py and the generic mutation test."""

from __future__ import annotations

import torch
import torch.distributed.checkpoint as dcp
from torch import nn
from torch.distributed.checkpoint.state_dict import (
    get_model_state_dict,
    get_optimizer_state_dict,
    get_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
    set_state_dict,
)

LAB = "11-sharded"

# --- Exercise 1: materialize(model, device) ------------------------------------------------------------


def materialize_with_to(model, device):
    return model.to(device)  # the taught bug: a meta tensor has no data to copy


def materialize_without_init(model, device):
    return model.to_empty(device=device)  # storage, but no values


def materialize_on_the_cpu(model, device):
    model.to_empty(device="cpu")
    for module in model.modules():
        if hasattr(module, "reset_parameters"):
            module.reset_parameters()
    return model


def materialize_linear_only(model, device):
    model.to_empty(device=device)
    for module in model.modules():
        if isinstance(module, nn.Linear):
            module.reset_parameters()  # the batch norm's weight and running statistics stay unset
    return model


def materialize_root_reset(model, device):
    model.to_empty(device=device)
    model.reset_parameters()  # nn.Sequential has none
    return model


def materialize_with_zeros(model, device):
    model.to_empty(device=device)
    with torch.no_grad():
        for tensor in [*model.parameters(), *model.buffers()]:
            tensor.zero_()
    return model


def materialize_in_place_returns_nothing(model, device):
    model.to_empty(device=device)
    for module in model.modules():
        if hasattr(module, "reset_parameters"):
            module.reset_parameters()


def materialize_untouched(model, device):
    return model  # still on meta: nothing materialised


def materialize_rebuild_and_copy(model, device):
    # a second whole model on the device, copied in: what meta init exists to avoid (the check calls this
    # with meta as the default device, so the rebuilt model is on meta and .to() fails)
    fresh = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2)).to(device)
    model.to_empty(device=device)
    model.load_state_dict(fresh.state_dict())
    return model


def materialize_rebuild_assign(model, device):
    fresh = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2)).to(device)
    model.load_state_dict(fresh.state_dict(), assign=True)
    return model


def materialize_ok(model, device):
    model.to_empty(device=device)
    for module in model.modules():
        if hasattr(module, "reset_parameters"):
            module.reset_parameters()
    return model


def materialize_ok_apply(model, device):
    model.to_empty(device=device)
    return model.apply(lambda m: m.reset_parameters() if hasattr(m, "reset_parameters") else None)


def materialize_ok_gpu_index(model, device):
    # written for a GPU job: a bare "cuda" becomes the current GPU; on the CPU runner the else branch runs
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    model.to_empty(device=device)
    for module in model.children():
        if hasattr(module, "reset_parameters"):
            module.reset_parameters()
    return model


# --- Exercise 2: map_location_for(info) ----------------------------------------------------------------


def location_cuda_0(info):
    return "cuda:0"  # the taught bug: every rank's copy on the first GPU


def location_none(info):
    return None


def location_global_rank(info):
    return torch.device("cuda", info.rank) if info.backend == "nccl" else torch.device("cpu")


def location_always_a_gpu(info):
    return torch.device("cuda", info.local_rank)


def location_cpu(info):
    return "cpu"


def location_dict_of_devices(info):
    return {"cuda:0": info.device}  # torch.load: TypeError, a dict's values must be strings


def location_dict_keyed_by_device(info):
    return {torch.device("cuda:0"): str(info.device)}  # torch.load: the key never matches "cuda:0"


def location_bare_cuda(info):
    return "cuda" if info.backend == "nccl" else "cpu"  # the current GPU: cuda:0 without set_device


def location_function_positional(info):
    return lambda storage, loc: storage.to(info.device)  # UntypedStorage.to takes device= only: TypeError


def location_function_always_cuda_0(info):
    return lambda storage, loc: storage.cuda(0) if info.backend == "nccl" else storage


def location_ok(info):
    return info.device


def location_ok_string(info):
    return str(info.device)


def location_ok_dict(info):
    return {"cuda:0": str(info.device)}


def location_ok_by_backend(info):
    return f"cuda:{info.local_rank}" if info.backend == "nccl" else "cpu"


def location_ok_function(info):
    return lambda storage, loc: storage.to(device=info.device)  # lesson 8: a function works too


def location_ok_function_cuda(info):
    return lambda storage, loc: storage.cuda(info.local_rank) if info.backend == "nccl" else storage


def location_ok_default_restore(info):
    # torch's own restore: on a GPU machine this restores onto info.device; the check's stand-in storage has
    # no CUDA, so the check answers for it (a CPU-only build raises "torch.cuda.is_available() is False")
    return lambda storage, loc: torch.serialization.default_restore_location(storage, str(info.device))


# --- Exercise 3: resume(model, optimizer, checkpoint_dir) -----------------------------------------------


def resume_with_optimizer_state_dict(model, optimizer, checkpoint_dir):
    # the taught bug: a plain optimizer.state_dict() numbers the parameters and matches nothing in DCP
    dcp.load({"model": model.state_dict(), "optim": optimizer.state_dict()}, checkpoint_id=checkpoint_dir)


def resume_model_only(model, optimizer, checkpoint_dir):
    dcp.load({"model": model.state_dict()}, checkpoint_id=checkpoint_dir)


def resume_with_torch_load(model, optimizer, checkpoint_dir):
    model.load_state_dict(torch.load(checkpoint_dir))


def resume_into_a_copy(model, optimizer, checkpoint_dir):
    copy = {key: value.clone() for key, value in model.state_dict().items()}
    dcp.load({"model": copy}, checkpoint_id=checkpoint_dir)  # loaded, never handed to the model


def resume_wrong_key(model, optimizer, checkpoint_dir):
    model_sd, optim_sd = get_state_dict(model, optimizer)
    state = {"model_state": model_sd, "optimizer": optim_sd}  # not the keys the ranks saved under
    dcp.load(state, checkpoint_id=checkpoint_dir)
    set_state_dict(
        model, optimizer, model_state_dict=state["model_state"], optim_state_dict=state["optimizer"]
    )


def resume_without_set_state_dict(model, optimizer, checkpoint_dir):
    # correct for THIS model only: a plain model's (and plain Adam's) state dicts from get_state_dict share
    # their tensors with the model and the optimizer, so dcp.load fills them in place. A sharded model (or
    # options such as cpu_offload) gets copies, and then set_state_dict is what puts the values back.
    model_sd, optim_sd = get_state_dict(model, optimizer)
    dcp.load({"model": model_sd, "optim": optim_sd}, checkpoint_id=checkpoint_dir)


def resume_ok(model, optimizer, checkpoint_dir):
    model_sd, optim_sd = get_state_dict(model, optimizer)
    state = {"model": model_sd, "optim": optim_sd}
    dcp.load(state, checkpoint_id=checkpoint_dir)
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])


def resume_ok_separate_calls(model, optimizer, checkpoint_dir):
    state = {
        "model": get_model_state_dict(model),
        "optim": get_optimizer_state_dict(model, optimizer),
    }
    dcp.load(state, checkpoint_id=checkpoint_dir)
    set_model_state_dict(model, state["model"])
    set_optimizer_state_dict(model, optimizer, state["optim"])


def resume_ok_in_place_model(model, optimizer, checkpoint_dir):
    state = {"model": model.state_dict(), "optim": get_optimizer_state_dict(model, optimizer)}
    dcp.load(state, checkpoint_id=checkpoint_dir)  # the model's own tensors, filled in place
    set_optimizer_state_dict(model, optimizer, state["optim"])


WRONG = {
    "materialize": [
        ("moves with .to()", materialize_with_to, "to_empty(device=device)"),
        ("to_empty without init", materialize_without_init, "reset_parameters()"),
        ("storage on the cpu", materialize_on_the_cpu, "not on a fixed one"),
        ("linear layers only", materialize_linear_only, "'1."),
        ("reset on the root", materialize_root_reset, "AttributeError"),
        ("zeros everywhere", materialize_with_zeros, "does not hold the values"),
        ("returns nothing", materialize_in_place_returns_nothing, "return the model you were given"),
        ("handed back on meta", materialize_untouched, "still on meta"),
        ("a second model, copied in", materialize_rebuild_and_copy, "to_empty(device=device)"),
        ("a second model, assign=True", materialize_rebuild_assign, "to_empty(device=device)"),
        ("stub", lambda model, device: (_ for _ in ()).throw(NotImplementedError()), "not done yet"),
    ],
    "map-location": [
        ("cuda:0 for every rank", location_cuda_0, "would land on cuda:0"),
        ("no map_location", location_none, "without map_location"),
        ("global rank", location_global_rank, "rank 5"),
        ("a GPU even for gloo", location_always_a_gpu, "this rank computes on cpu"),
        ("always the cpu", location_cpu, "this rank computes on cuda:0"),
        ("a dict of torch.device values", location_dict_of_devices, "not a string"),
        ("a dict keyed by a torch.device", location_dict_keyed_by_device, "never matches"),
        ("bare 'cuda'", location_bare_cuda, "set_device(local_rank)"),
        ("function, storage.to positional", location_function_positional, "TypeError"),
        ("function, always cuda:0", location_function_always_cuda_0, "would land on cuda:0"),
        ("stub", lambda info: (_ for _ in ()).throw(NotImplementedError()), "not done yet"),
    ],
    "resume": [
        ("optimizer.state_dict() into dcp.load", resume_with_optimizer_state_dict, "the optimizer was not"),
        ("model only", resume_model_only, "the optimizer was not"),
        ("torch.load of the folder", resume_with_torch_load, "IsADirectoryError"),
        ("loads into a copy", resume_into_a_copy, "not the checkpoint's"),
        ("keys the ranks did not save", resume_wrong_key, "CheckpointException"),
        ("stub", lambda model, optimizer, path: (_ for _ in ()).throw(NotImplementedError()), "not done yet"),
    ],
}

RIGHT = {
    "materialize": [
        ("to_empty and reset_parameters", materialize_ok),
        ("to_empty and apply", materialize_ok_apply),
        ("GPU-style device index, children", materialize_ok_gpu_index),
    ],
    "map-location": [
        ("info.device", location_ok),
        ("str(info.device)", location_ok_string),
        ("a dict from cuda:0", location_ok_dict),
        ("by backend", location_ok_by_backend),
        ("a function, storage.to(device=)", location_ok_function),
        ("a function, storage.cuda(local_rank)", location_ok_function_cuda),
        ("a function, torch's default_restore_location", location_ok_default_restore),
    ],
    "resume": [
        ("get_state_dict, dcp.load, set_state_dict", resume_ok),
        ("model and optimizer calls apart", resume_ok_separate_calls),
        ("model in place, optimizer by name", resume_ok_in_place_model),
        ("get_state_dict and dcp.load, no set_state_dict (this plain model)", resume_without_set_state_dict),
    ],
}
