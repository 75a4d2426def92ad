"""Mutation cases for lab 10's self-checks: answers a learner writes, wrong (with the hint the check must
give) and right (which it must accept). Read by tests/test_lab10.py and the generic mutation test."""

from __future__ import annotations

import torch
from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present

from devicekit.device import mismatch_device

LAB = "10-compile"

#: On a GPU runner the stand-in is the GPU itself; on a CPU runner it is meta, which cannot copy data out.
ON_GPU = mismatch_device().type != "meta"

# --- Exercise 1: rotate(x), (x, y) -> (-y, x) on x's device, in x's dtype, compiled ------------------


def rotate_matrix_without_device(x):
    # the taught bug: the matrix follows the default device (the CPU), not x
    r = torch.tensor([[0.0, 1.0], [-1.0, 0.0]])
    return x @ r


def rotate_matrix_on_cpu(x):
    r = torch.tensor([[0.0, 1.0], [-1.0, 0.0]], device="cpu", dtype=x.dtype)
    return x @ r


def rotate_matrix_on_default_device(x):
    r = torch.tensor([[0.0, 1.0], [-1.0, 0.0]], device=torch.get_default_device(), dtype=x.dtype)
    return x @ r


def rotate_setting_default_device(x):
    torch.set_default_device(x.device)
    r = torch.tensor([[0.0, 1.0], [-1.0, 0.0]], dtype=x.dtype)
    return x @ r


def rotate_on_the_cpu(x):
    r = torch.tensor([[0.0, 1.0], [-1.0, 0.0]], device=x.device, dtype=x.dtype)
    return x.cpu() @ r.cpu()


def rotate_without_dtype(x):
    r = torch.tensor([[0.0, 1.0], [-1.0, 0.0]], device=x.device)
    return x @ r


def rotate_wrong_way(x):
    r = torch.tensor([[0.0, -1.0], [1.0, 0.0]], device=x.device, dtype=x.dtype)
    return x @ r


def rotate_ok(x):
    r = torch.tensor([[0.0, 1.0], [-1.0, 0.0]], device=x.device, dtype=x.dtype)
    return x @ r


def rotate_ok_without_a_matrix(x):
    return torch.stack((-x[:, 1], x[:, 0]), dim=1)


def rotate_ok_moving_the_matrix(x):
    r = torch.tensor([[0.0, 1.0], [-1.0, 0.0]]).to(x)  # same device and dtype as x
    return x @ r


def rotate_ok_with_flip(x):
    return x.flip(1) * x.new_tensor([-1.0, 1.0])


# --- Exercise 2: plain_state_dict(module) ------------------------------------------------------------


def state_dict_as_is(module):
    return module.state_dict()  # the taught bug: keys of a compiled model start with "_orig_mod."


def state_dict_of_orig_mod(module):
    return module._orig_mod.state_dict()  # right for a compiled model, AttributeError for a plain one


def state_dict_dropping_first_part(module):
    return {key.split(".", 1)[1]: value for key, value in module.state_dict().items()}


def state_dict_on_the_cpu(module):
    inner = getattr(module, "_orig_mod", module)
    return {key: value.to("cpu") for key, value in inner.state_dict().items()}


def state_dict_parameters_only(module):
    inner = getattr(module, "_orig_mod", module)
    return dict(inner.named_parameters())


def state_dict_keys_only(module):
    return [key.removeprefix("_orig_mod.") for key in module.state_dict()]


def state_dict_ok_removeprefix(module):
    return {key.removeprefix("_orig_mod."): value for key, value in module.state_dict().items()}


def state_dict_ok_inner_module(module):
    return getattr(module, "_orig_mod", module).state_dict()


def state_dict_ok_consume_prefix(module):
    state = module.state_dict()
    consume_prefix_in_state_dict_if_present(state, "_orig_mod.")
    return state


WRONG = {
    "rotate": [
        ("matrix without device", rotate_matrix_without_device, "two devices"),
        ("matrix on the cpu", rotate_matrix_on_cpu, "two devices"),
        ("matrix on the default device", rotate_matrix_on_default_device, "two devices"),
        ("sets the default device", rotate_setting_default_device, "default device was"),
        # meta holds no data to copy out: on the CPU runner the check says so, on a GPU it names the rule
        (
            "computes on the cpu",
            rotate_on_the_cpu,
            "Keep the computation where the data is" if ON_GPU else "cannot run this",
        ),
        ("matrix without dtype", rotate_without_dtype, "dtype=x.dtype"),
        ("rotates the wrong way", rotate_wrong_way, "(-y, x)"),
        ("stub", lambda x: (_ for _ in ()).throw(NotImplementedError()), "not done yet"),
    ],
    "plain-state-dict": [
        ("state_dict as is", state_dict_as_is, "_orig_mod."),
        ("state dict of _orig_mod", state_dict_of_orig_mod, "AttributeError"),
        ("drops the first part of every key", state_dict_dropping_first_part, "is missing"),
        ("parameters only", state_dict_parameters_only, "running_mean"),
        ("keys only", state_dict_keys_only, "return a dict"),
        (
            "moves the tensors to the cpu",
            state_dict_on_the_cpu,
            "leave the tensors where they are" if ON_GPU else "cannot run this",
        ),
    ],
}

RIGHT = {
    "rotate": [
        ("matrix on x's device and dtype", rotate_ok),
        ("no matrix: stack", rotate_ok_without_a_matrix),
        ("matrix moved with .to(x)", rotate_ok_moving_the_matrix),
        ("flip and sign", rotate_ok_with_flip),
    ],
    "plain-state-dict": [
        ("removeprefix", state_dict_ok_removeprefix),
        ("the module inside the wrapper", state_dict_ok_inner_module),
        ("consume_prefix_in_state_dict_if_present", state_dict_ok_consume_prefix),
    ],
}
