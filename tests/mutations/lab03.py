"""Mutation cases for lab 03 (how devices propagate); format in ``tests/mutations/__init__.py``."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader

from mutations import untouched

LAB = "03-propagation"

# --- exercise 1: predict-mixes ------------------------------------------------------------------------------

RIGHT_PREDICTIONS = {
    "a": "x", "b": "x", "c": "error", "d": "error", "e": "error", "f": "x",
    "g": "error", "h": "x", "i": "x", "j": "cpu", "k": "x", "l": "error",
}  # fmt: skip


def predicted(**changes):
    return lambda: {**RIGHT_PREDICTIONS, **changes}


# --- exercise 2: lookup -------------------------------------------------------------------------------------


def lookup_ids_to_cpu(table, ids):
    return table[ids.cpu()]  # the taught bug: the ids copied to the host


def lookup_ids_to_cpu_and_back(table, ids):
    return table[ids.cpu()].to(ids.device)  # right devices, but a device-to-host copy every call


def lookup_not_moved(table, ids):
    return table[ids]


def lookup_hard_cpu(table, ids):
    return table.to("cpu")[ids]


def lookup_tolist(table, ids):
    return table[torch.tensor(ids.tolist())].to(ids.device)


def lookup_cuda_table(table, ids):
    return table.cuda()[ids] if ids.is_cuda else table[ids]  # .cuda() is cuda:0, whatever GPU the ids are on


def lookup_first_column(table, ids):
    return table.to(ids.device)[ids][..., 0]


def lookup_first_id_only(table, ids):
    return table.to(ids.device)[ids[..., :1]]


def lookup_moved_table(table, ids):
    return table.to(ids.device)[ids]


def lookup_embedding(table, ids):
    return torch.nn.functional.embedding(ids, table.to(ids.device))


def lookup_index_select(table, ids):
    rows = table.to(ids.device).index_select(0, ids.reshape(-1))
    return rows.reshape(*ids.shape, table.shape[-1])


# --- exercise 3: to-numpy -----------------------------------------------------------------------------------


def numpy_no_copy(t):
    return t.detach().numpy()  # the taught bug: NumPy cannot read device memory


def numpy_tolist(t):
    return np.array(t.tolist())  # reviewers: float32 becomes float64


def numpy_no_detach(t):
    return t.cpu().numpy()


def numpy_float(t):
    return t.detach().cpu().float().numpy()


def numpy_list(t):
    return t.detach().cpu().tolist()


def numpy_no_copy_no_detach(t):
    return t.numpy()


def numpy_ok(t):
    return t.detach().cpu().numpy()


def numpy_cpu_then_detach(t):
    return t.cpu().detach().numpy()


def numpy_force(t):
    return t.numpy(force=True)


def numpy_asarray(t):
    return np.asarray(t.cpu().detach())


def numpy_to_cpu_copy(t):
    return t.detach().to("cpu", copy=True).numpy()


# --- exercise 4: default-device -----------------------------------------------------------------------------


def build_leaks(device):
    torch.set_default_device(device)  # the taught bug: never given back
    model = nn.Linear(4, 2)
    loader = DataLoader(list(range(8)), batch_size=4, shuffle=True)
    return model, loader


def build_moved(device):
    model = nn.Linear(4, 2).to(device)  # reviewers: the task says no .to()
    return model, DataLoader(list(range(8)), batch_size=4, shuffle=True)


def build_restores_cpu(device):
    torch.set_default_device(device)
    model = nn.Linear(4, 2)
    torch.set_default_device("cpu")  # gives back the CPU, not what was there
    return model, DataLoader(list(range(8)), batch_size=4, shuffle=True)


def build_on_cpu(device):
    return nn.Linear(4, 2), DataLoader(list(range(8)), batch_size=4, shuffle=True)


def build_to_empty(device):
    model = nn.Linear(4, 2)
    model.to(device)  # Module.to in place, still a copy from the CPU
    return model, DataLoader(list(range(8)), batch_size=4, shuffle=True)


def build_device_type(device):
    with torch.device(device.type):  # "cuda" is the current GPU, cuda:0: the index is lost
        model = nn.Linear(4, 2)
    return model, DataLoader(list(range(8)), batch_size=4, shuffle=True)


def build_no_shuffle_seven(device):
    with torch.device(device):
        model = nn.Linear(4, 2)
    return model, DataLoader(list(range(7)), batch_size=4, shuffle=True)


def build_drops_last(device):
    with torch.device(device):
        model = nn.Linear(4, 2)
    return model, DataLoader(list(range(8)), batch_size=3, shuffle=True, drop_last=True)


def build_scoped(device):
    with torch.device(device):
        model = nn.Linear(4, 2)
    return model, DataLoader(list(range(8)), batch_size=4, shuffle=True)


def build_factory_kwarg(device):
    return nn.Linear(4, 2, device=device), DataLoader(list(range(8)), batch_size=4, shuffle=True)


def build_try_finally(device):
    before = torch.get_default_device()
    torch.set_default_device(device)
    try:
        model = nn.Linear(4, 2)
    finally:
        torch.set_default_device(before)
    return model, DataLoader(list(range(8)), batch_size=4, shuffle=True)


WRONG = {
    "predict-mixes": [
        # the taught bug first: an ordinary (1-dim) CPU tensor believed to follow x
        ("1-dim CPU operand predicted to follow x", predicted(c="x"), "only a 0-dim CPU tensor is exempt"),
        (
            "torch.where with a CPU condition predicted to work",
            predicted(g="x"),
            "whose condition is an operand",
        ),
        ("torch.stack of a 0-dim CPU tensor predicted to work", predicted(e="x"), "not element-wise"),
        ("factory without device predicted on x's device", predicted(j="x"), "a factory function"),
        ("CPU index predicted to raise", predicted(h="error"), "indices (integer or boolean)"),
        ("0-dim CPU tensor predicted to raise", predicted(b="error"), "treated like a Python number"),
        ("zeros_like predicted on the CPU", predicted(k="cpu"), "`*_like` factory"),
        ("an unknown answer", predicted(a="gpu"), "must be 'error' or 'x' or 'cpu'"),
        ("keys missing", lambda: {"a": "x"}, "exactly the keys 'a' to 'l'"),
        ("two predictions wrong", predicted(j="x", h="error"), "not every prediction holds on a real run"),
        ("a boolean answer", predicted(a=True), "must be 'error' or 'x' or 'cpu', not 'a': True"),
        ("untouched stub", untouched, "not done yet"),
    ],
    "lookup": [
        ("ids copied to the CPU", lookup_ids_to_cpu, "Do not copy the ids to the host"),
        ("ids copied to the CPU and the rows moved back", lookup_ids_to_cpu_and_back, "Do not copy the ids"),
        ("nothing moved", lookup_not_moved, "must be on one device"),
        ('table.to("cpu")', lookup_hard_cpu, "must be on one device"),
        ("ids through a Python list", lookup_tolist, "Do not copy the ids"),
        ("one column only", lookup_first_column, "shape ids.shape + (2,)"),
        ("table.cuda() for ids on a GPU", lookup_cuda_table, "mean the current GPU"),
        ("the first id only", lookup_first_id_only, "the result is wrong"),
    ],
    "to-numpy": [
        ("no copy to the host", numpy_no_copy, "NumPy reads host memory only"),
        ("np.array(t.tolist())", numpy_tolist, "float32 into float64"),
        ("no detach", numpy_no_detach, "must be detached first"),
        ("converted to float32", numpy_float, "keep the tensor's dtype"),
        ("a Python list", numpy_list, "expected a numpy.ndarray"),
        ("t.numpy()", numpy_no_copy_no_detach, "must be detached first"),
    ],
    "default-device": [
        ("set_default_device never given back", build_leaks, "leaked out of the function"),
        ("nn.Linear(4, 2).to(device)", build_moved, "Create them on the device directly"),
        ('default reset to "cpu"', build_restores_cpu, "whatever it was"),
        ("model left on the CPU", build_on_cpu, "the model's parameters are on ['cpu']"),
        ("Module.to as a statement", build_to_empty, "then moved"),
        ("seven items", build_no_shuffle_seven, "0..7 once each"),
        ("with torch.device(device.type)", build_device_type, "means the current GPU"),
        ("drop_last loses items", build_drops_last, "0..7 once each"),
        ("untouched stub", untouched, "not done yet"),
    ],
}

RIGHT = {
    "predict-mixes": [
        ("a function", lambda: dict(RIGHT_PREDICTIONS)),
        ("the dict itself", dict(RIGHT_PREDICTIONS)),
    ],
    "lookup": [
        ("table moved to the ids", lookup_moved_table),
        ("F.embedding", lookup_embedding),
        ("index_select", lookup_index_select),
    ],
    "to-numpy": [
        ("detach().cpu().numpy()", numpy_ok),
        ("numpy(force=True)", numpy_force),
        ("np.asarray(t.cpu().detach())", numpy_asarray),
        ("cpu().detach().numpy()", numpy_cpu_then_detach),
        ('detach().to("cpu", copy=True).numpy()', numpy_to_cpu_copy),
    ],
    "default-device": [
        ("with torch.device(device)", build_scoped),
        ("device= factory kwarg", build_factory_kwarg),
        ("set_default_device in try/finally, previous default restored", build_try_finally),
    ],
}
