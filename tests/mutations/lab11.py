"""Mutation cases for lab 11's self-checks: answers a learner writes, wrong (with the hint the check must
give) and right (which it must accept). Read by tests/test_lab11.py and the generic mutation test."""

from __future__ import annotations

import torch
import torch.distributed.checkpoint as dcp
from torch import nn
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
    get_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
    set_state_dict,
)

LAB = "11-sharded"

#: What the check says to `model.to("cpu")` before resuming. On a GPU the parameters end on the CPU and the
#: check names it. On a simulated GPU `Module.to("cpu")` replaces each parameter by a new object (a real
#: CUDA-to-CPU move keeps it: `Module._apply` swaps in place only when the *result* is a wrapper subclass),
#: so the optimizer holds the old ones and `get_state_dict` raises KeyError first: rejected either way.
# On a GPU, real or simulated, model.to("cpu") keeps the Parameter objects the optimizer holds, so the check
# sees where they went (the simulator keeps them as a GPU does: tests/test_simulate.py).
TO_CPU_HINT = "the parameters are on cpu"

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


def materialize_reset_loop_only(model, device):
    # the reviewers' case: right for linear layers and batch norms, blind to what has no reset_parameters()
    # (MultiheadAttention's in_proj, a model's own parameter, a non-persistent buffer)
    model.to_empty(device=device)
    for module in model.modules():
        if hasattr(module, "reset_parameters"):
            module.reset_parameters()
    return model


def materialize_with_private_resets(model, device):
    # also calls MultiheadAttention's _reset_parameters, but not what the model itself holds
    model.to_empty(device=device)
    for module in model.modules():
        for name in ("reset_parameters", "_reset_parameters"):
            if hasattr(module, name):
                getattr(module, name)()
    return model


def materialize_init_weights_only(model, device):
    model.to_empty(device=device)
    model.init_weights()  # the stack of linear layers has none: AttributeError
    return model


def materialize_random_normal(model, device):
    model.to_empty(device=device)
    with torch.no_grad():
        for tensor in [*model.parameters(), *model.buffers()]:
            if tensor.is_floating_point():
                tensor.normal_()
            else:
                tensor.zero_()
    return model


def materialize_device_type(model, device):
    # a hidden-set answer (issue 39): device.type drops the index, so "cuda" is the current GPU, cuda:0
    model.to_empty(device=device.type)
    if hasattr(model, "init_weights"):
        model.init_weights()
    else:
        for module in model.modules():
            if hasattr(module, "reset_parameters"):
                module.reset_parameters()
    return model


def materialize_ok(model, device):
    model.to_empty(device=device)
    if hasattr(model, "init_weights"):
        model.init_weights()  # the model's own: every value it holds
    else:
        for module in model.modules():
            if hasattr(module, "reset_parameters"):
                module.reset_parameters()
    return model


def materialize_ok_apply_then_init_weights(model, device):
    # every module's reset_parameters(), then the model's init_weights() on top: other random numbers than
    # init_weights() alone draws, from the same distributions
    model.to_empty(device=device)
    model.apply(lambda m: m.reset_parameters() if hasattr(m, "reset_parameters") else None)
    init_weights = getattr(model, "init_weights", None)
    if callable(init_weights):
        init_weights()
    return model


def materialize_ok_gpu_index(model, device):
    # written for a GPU job: a bare "cuda" becomes the current GPU; on the CPU runner the else branch runs
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    model.to_empty(device=device)
    if isinstance(model, nn.Sequential):
        for module in model.children():
            if hasattr(module, "reset_parameters"):
                module.reset_parameters()
    else:
        model.init_weights()
    return model


# --- Exercise 2: load_full(model, path, info) -------------------------------------------------------------

FULL = StateDictOptions(full_state_dict=True)
BROADCAST = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True)


def load_full_onto_own_gpu(model, path, info):
    # the taught bug: every rank puts the whole checkpoint on its own GPU, what FSDP exists to avoid
    full = torch.load(path, map_location=info.device, weights_only=True)
    set_model_state_dict(model, full, options=FULL)


def load_full_load_state_dict(model, path, info):
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))  # plain into DTensors


def load_full_without_full_state_dict(model, path, info):
    set_model_state_dict(model, torch.load(path, map_location="cpu", weights_only=True))


def load_full_no_map_location(model, path, info):
    set_model_state_dict(model, torch.load(path, weights_only=True), options=FULL)


def load_full_bare_cuda(model, path, info):
    where = "cuda" if info.backend == "nccl" else "cpu"  # the current GPU of each rank: still a whole copy
    set_model_state_dict(model, torch.load(path, map_location=where, weights_only=True), options=FULL)


def load_full_rank0_on_its_gpu(model, path, info):
    full = torch.load(path, map_location=info.device, mmap=True, weights_only=True) if info.rank == 0 else {}
    set_model_state_dict(model, full, options=BROADCAST)


def load_full_empty_without_broadcast(model, path, info):
    # ranks other than 0 pass nothing, but without broadcast_from_rank0 nobody sends them anything
    full = torch.load(path, map_location="cpu", mmap=True, weights_only=True) if info.rank == 0 else {}
    set_model_state_dict(model, full, options=FULL)


def load_full_assign(model, path, info):
    # would replace the sharded parameters by the file's plain tensors; FSDP2's load_state_dict refuses
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True), assign=True)


def load_full_rank0_only(model, path, info):
    if info.rank != 0:
        return  # "rank 0 loads it": the others never get the values
    set_model_state_dict(model, torch.load(path, map_location="cpu", weights_only=True), options=FULL)


def load_full_inverted_rank_test(model, path, info):
    full = torch.load(path, map_location="cpu", mmap=True, weights_only=True) if info.rank != 0 else {}
    set_model_state_dict(model, full, options=BROADCAST)


def load_full_cpu_then_each_to_gpu(model, path, info):
    # read onto the CPU, then every value onto this rank's GPU: a whole copy per GPU all the same (review 47)
    full = torch.load(path, map_location="cpu", mmap=True, weights_only=True)
    full = {k: v.to(info.device) for k, v in full.items()}
    set_model_state_dict(model, full, options=FULL)


def load_full_rank0_cpu_then_cuda(model, path, info):
    # rank 0 reads onto the CPU, then .cuda() of each value before broadcasting: rank 0's GPU holds it all
    full = torch.load(path, map_location="cpu") if info.rank == 0 else {}
    full = {k: v.cuda() if info.device.type == "cuda" else v for k, v in full.items()}
    set_model_state_dict(model, full, options=BROADCAST)


def load_full_plain_model_to_gpu(model, path, info):
    # a plain model loaded from the CPU copy, then moved whole to the rank's GPU and handed to DCP
    from devicekit_labs.sharded_workers import make_model

    plain = make_model()
    plain.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    plain.to(info.device)
    set_model_state_dict(model, plain.state_dict(), options=FULL)


def load_full_whole_dict_to_gpu_then_distribute(model, path, info):
    # no DCP at all: the whole dict onto this rank's GPU, then sharded by hand, tensor by tensor
    from torch.distributed.tensor import distribute_tensor

    full = torch.load(path, map_location="cpu", weights_only=True)
    full = {k: v.to(info.device) for k, v in full.items()}
    mine = model.state_dict()
    model.load_state_dict(
        {k: distribute_tensor(full[k].to(v.device), v.device_mesh, v.placements) for k, v in mine.items()}
    )


def load_full_ok_distribute_by_hand(model, path, info):
    # each tensor in turn onto the mesh's device and sharded there: never the whole checkpoint at once
    from torch.distributed.tensor import distribute_tensor

    full = torch.load(path, map_location="cpu", mmap=True, weights_only=True)
    mine = model.state_dict()
    model.load_state_dict(
        {
            k: distribute_tensor(full[k].to(v.device_mesh.device_type), v.device_mesh, v.placements)
            for k, v in mine.items()
        }
    )


def load_full_ok(model, path, info):
    full = torch.load(path, map_location="cpu", mmap=True, weights_only=True)
    set_model_state_dict(model, full, options=FULL)


def load_full_ok_broadcast(model, path, info):
    if info.rank == 0:
        full = torch.load(path, map_location="cpu", mmap=True, weights_only=True)
    else:
        full = {}  # rank 0 sends every tensor; this rank keeps its shard
    set_model_state_dict(model, full, options=BROADCAST)


def load_full_ok_dict_location(model, path, info):
    full = torch.load(path, map_location={"cuda:0": "cpu"}, weights_only=True)
    set_model_state_dict(model, full, options=StateDictOptions(full_state_dict=True, strict=True))


def load_full_ok_set_state_dict(model, path, info):
    full = torch.load(path, map_location=lambda storage, location: storage, weights_only=True)  # the CPU
    set_state_dict(model, [], model_state_dict=full, optim_state_dict={}, options=FULL)


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
    # the tensors of a plain model's (and plain Adam's) state dicts from get_state_dict are the model's and
    # the optimizer's own, so dcp.load fills them in place; but the learning rate and the other
    # hyper-parameters come back only in the dict's param_groups, which set_state_dict hands to the optimizer
    # (and a sharded model, or options such as cpu_offload, gets copies of the tensors too)
    model_sd, optim_sd = get_state_dict(model, optimizer)
    dcp.load({"model": model_sd, "optim": optim_sd}, checkpoint_id=checkpoint_dir)


def resume_moments_by_hand(model, optimizer, checkpoint_dir):
    # restores the tensors (shared with the model and Adam) but never hands back the hyper-parameters
    model_sd, optim_sd = get_state_dict(model, optimizer)
    dcp.load({"model": model_sd, "optim": optim_sd}, checkpoint_id=checkpoint_dir)
    for name, param in model.named_parameters():
        optimizer.state[param].update(optim_sd["state"][name])


def resume_onto_the_cpu(model, optimizer, checkpoint_dir):
    # a hidden-set answer (issue 39): the model leaves its GPU before loading, and stays on the CPU
    model.to("cpu")
    model_sd, optim_sd = get_state_dict(model, optimizer)
    state = {"model": model_sd, "optim": optim_sd}
    dcp.load(state, checkpoint_id=checkpoint_dir)
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])


def resume_onto_cuda(model, optimizer, checkpoint_dir):
    # .cuda() is the current GPU, cuda:0: a model on cuda:1 moves to another GPU
    model.cuda()
    model_sd, optim_sd = get_state_dict(model, optimizer)
    state = {"model": model_sd, "optim": optim_sd}
    dcp.load(state, checkpoint_id=checkpoint_dir)
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])


def resume_ok_through_the_cpu(model, optimizer, checkpoint_dir):
    # the state dicts as copies on the CPU (cpu_offload): dcp.load fills them, set_state_dict copies them
    # into the model and the optimizer where they are, on the GPU
    options = StateDictOptions(cpu_offload=True)
    model_sd, optim_sd = get_state_dict(model, optimizer, options=options)
    state = {"model": model_sd, "optim": optim_sd}
    dcp.load(state, checkpoint_id=checkpoint_dir)
    set_state_dict(
        model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"], options=options
    )


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
        ("to_empty without init", materialize_without_init, "was never set"),
        ("storage on the cpu", materialize_on_the_cpu, "not on a fixed one"),
        ("linear layers only", materialize_linear_only, "'1.weight' was never set"),
        ("reset on the root", materialize_root_reset, "AttributeError"),
        ("zeros everywhere", materialize_with_zeros, "does not hold the values"),
        ("returns nothing", materialize_in_place_returns_nothing, "return the model you were given"),
        ("handed back on meta", materialize_untouched, "still on meta"),
        ("a second model, copied in", materialize_rebuild_and_copy, "to_empty(device=device)"),
        ("a second model, assign=True", materialize_rebuild_assign, "to_empty(device=device)"),
        ("reset_parameters() loop only", materialize_reset_loop_only, "has no reset_parameters()"),
        (
            "also _reset_parameters, not the model's own",
            materialize_with_private_resets,
            "'gain' was never set",
        ),
        ("init_weights() without a fallback", materialize_init_weights_only, "AttributeError"),
        ("normal_ everywhere", materialize_random_normal, "does not hold the values"),
        ("to_empty(device=device.type)", materialize_device_type, 'not on cuda:1: "cuda" (or device.type)'),
        ("stub", lambda model, device: (_ for _ in ()).throw(NotImplementedError()), "not done yet"),
    ],
    "load-full": [
        ("every rank onto its own GPU", load_full_onto_own_gpu, "whole copy of the model"),
        ("load_state_dict into DTensors", load_full_load_state_dict, "set_model_state_dict"),
        (
            "set_model_state_dict without full_state_dict",
            load_full_without_full_state_dict,
            "full_state_dict=True",
        ),
        ("no map_location", load_full_no_map_location, "without map_location"),
        ("bare 'cuda'", load_full_bare_cuda, "whole checkpoint on cuda"),
        ("rank 0 reads onto its GPU", load_full_rank0_on_its_gpu, "whole checkpoint on cuda:0"),
        (
            "empty dict without broadcast_from_rank0",
            load_full_empty_without_broadcast,
            "broadcast_from_rank0",
        ),
        ("assign=True", load_full_assign, "AttributeError"),
        ("other ranks do nothing", load_full_rank0_only, "neither read the file"),
        ("the rank test inverted", load_full_inverted_rank_test, "Missing key(s)"),
        (
            "onto the CPU, then .to(info.device) of each value",
            load_full_cpu_then_each_to_gpu,
            "put the whole checkpoint on cuda:0 before loading it",
        ),
        (
            "rank 0 onto the CPU, then .cuda(), broadcast",
            load_full_rank0_cpu_then_cuda,
            "put the whole checkpoint on cuda:0 before loading it",
        ),
        (
            "a plain model from the CPU copy, moved to the GPU",
            load_full_plain_model_to_gpu,
            "put the whole checkpoint on cuda:0 before loading it",
        ),
        (
            "the whole dict onto the GPU, then distribute_tensor",
            load_full_whole_dict_to_gpu_then_distribute,
            "as much as the whole checkpoint",
        ),
        ("stub", lambda model, path, info: (_ for _ in ()).throw(NotImplementedError()), "not done yet"),
    ],
    "resume": [
        ("optimizer.state_dict() into dcp.load", resume_with_optimizer_state_dict, "the optimizer was not"),
        ("model only", resume_model_only, "the optimizer was not"),
        ("torch.load of the folder", resume_with_torch_load, "IsADirectoryError"),
        ("loads into a copy", resume_into_a_copy, "not the checkpoint's"),
        ("keys the ranks did not save", resume_wrong_key, "CheckpointException"),
        ("get_state_dict and dcp.load, no set_state_dict", resume_without_set_state_dict, "learning rate"),
        ("moments copied by hand", resume_moments_by_hand, "learning rate"),
        ('model.to("cpu") before loading', resume_onto_the_cpu, TO_CPU_HINT),
        ("model.cuda() before loading", resume_onto_cuda, "but the model was on cuda:1"),
        ("stub", lambda model, optimizer, path: (_ for _ in ()).throw(NotImplementedError()), "not done yet"),
    ],
}

RIGHT = {
    "materialize": [
        ("init_weights, else reset_parameters", materialize_ok),
        ("apply, then init_weights where there is one", materialize_ok_apply_then_init_weights),
        ("GPU-style device index, children", materialize_ok_gpu_index),
    ],
    "load-full": [
        ("every rank onto the CPU, mmap", load_full_ok),
        ("rank 0 reads, broadcast_from_rank0", load_full_ok_broadcast),
        ("a dict from cuda:0 to cpu", load_full_ok_dict_location),
        ("a function keeping the storage, set_state_dict", load_full_ok_set_state_dict),
        ("distribute_tensor key by key, load_state_dict", load_full_ok_distribute_by_hand),
    ],
    "resume": [
        ("get_state_dict, dcp.load, set_state_dict", resume_ok),
        ("model and optimizer calls apart", resume_ok_separate_calls),
        ("model in place, optimizer by name", resume_ok_in_place_model),
        ("state dicts offloaded to the CPU, set back on the GPU", resume_ok_through_the_cpu),
    ],
}
