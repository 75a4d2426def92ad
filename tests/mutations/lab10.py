"""Mutation cases for lab 10's self-checks: answers a learner writes, wrong (with the hint the check must
give) and right (which it must accept). Read by tests/test_lab10.py and the generic mutation test."""

from __future__ import annotations

import io

import numpy as np
import torch
from torch._dynamo.eval_frame import OptimizedModule
from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present

LAB = "10-compile"

# --- Exercise 1: rotate(x), (x, y) -> (-y, x) on x's device, in x's dtype, compiled ------------------

#: A matrix made once, outside the function, on the CPU.
ROTATION = torch.tensor([[0.0, 1.0], [-1.0, 0.0]])


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


def rotate_zeroing_its_input(x):
    return x.zero_()  # destroys the points: only a check that describes x before the call sees it


def rotate_through_float32(x):
    # right device, right dtype on the way out, but a float64 x loses its digits in float32
    return (x.float() @ torch.tensor([[0.0, 1.0], [-1.0, 0.0]], device=x.device)).to(x.dtype)


def rotate_right_only_when_compiled(x):
    # right while Dynamo traces it, the taught bug when it runs eagerly: only an eager call with x on a GPU
    # catches it (cuda:1, real or simulated)
    return x @ (ROTATION.to(x) if torch.compiler.is_compiling() else ROTATION)


def rotate_right_only_when_eager(x):
    # the other way round: only a compiled call with x off the CPU catches it (cuda:1 with real GPUs, meta
    # without: the simulated GPU cannot be compiled for)
    return x @ (ROTATION.to(dtype=x.dtype) if torch.compiler.is_compiling() else ROTATION.to(x))


def rotate_cuda_matrix(x):
    # "cuda" is the current GPU, cuda:0, whatever GPU x is on (and no GPU at all for a CPU x)
    device = "cuda" if x.is_cuda else x.device
    return x @ torch.tensor([[0.0, 1.0], [-1.0, 0.0]], device=device, dtype=x.dtype)


def rotate_matrix_made_by_cuda(x):
    r = torch.tensor([[0.0, 1.0], [-1.0, 0.0]], dtype=x.dtype)
    return x @ (r.cuda() if x.is_cuda else r)  # .cuda() drops x's index: cuda:0


def rotate_rounding_through_half(x):
    # right devices and dtype, values rounded: only a check that reads real values sees it on a GPU
    return (x @ torch.tensor([[0.0, 1.0], [-1.0, 0.0]], device=x.device, dtype=x.dtype)).half().to(x.dtype)


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


def rotate_in_place(x):
    x.copy_(torch.stack((-x[:, 1], x[:, 0]), dim=1))  # overwrites the caller's points with their rotation
    return x


def rotate_by_slices_in_place(x):
    first = x[:, 0].clone()
    x[:, 0] = -x[:, 1]
    x[:, 1] = first
    return x


def rotate_ok_times_i(x):
    return torch.view_as_real(torch.view_as_complex(x.contiguous()) * 1j)  # (x + iy) * i = -y + ix


def rotate_ok_device_context(x):
    with torch.device(x.device):
        r = torch.tensor([[0.0, 1.0], [-1.0, 0.0]], dtype=x.dtype)
    return x @ r


def rotate_ok_numpy_matrix(x):
    return x @ torch.from_numpy(np.array([[0.0, 1.0], [-1.0, 0.0]])).to(x)


def rotate_ok_filled_out(x):
    out = torch.empty_like(x)
    out[:, 0] = -x[:, 1]
    out[:, 1] = x[:, 0]
    return out


def rotate_ok_cuda_with_index(x):
    r = torch.tensor([[0.0, 1.0], [-1.0, 0.0]], dtype=x.dtype)
    return x @ (r.cuda(x.device.index) if x.is_cuda else r.to(x.device))


def rotate_ok_matrix_on_the_left(x):
    return (torch.tensor([[0.0, -1.0], [1.0, 0.0]], device=x.device, dtype=x.dtype) @ x.T).T


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


def state_dict_zeroing_the_model(module):
    state = getattr(module, "_orig_mod", module).state_dict()
    for value in state.values():
        value.zero_()  # the model's own tensors: the model is zeroed too
    return state


def state_dict_in_float64(module):
    return {key: value.double() for key, value in getattr(module, "_orig_mod", module).state_dict().items()}


def state_dict_integers_as_floats(module):
    state = getattr(module, "_orig_mod", module).state_dict()
    return {key: value if value.is_floating_point() else value.float() for key, value in state.items()}


def state_dict_lstrip(module):
    # str.lstrip strips characters, not a prefix: "_orig_mod.mixer.in_proj_weight" -> "xer.in_proj_weight"
    return {key.lstrip("_orig_mod."): value for key, value in module.state_dict().items()}  # noqa: B005


def state_dict_hard_coded_length(module):
    return {key[len("_orig_mod.") :]: value for key, value in module.state_dict().items()}  # plain keys too


def state_dict_to_cuda(module):
    # "cuda" is cuda:0: a model on cuda:1 comes back on another GPU
    inner = getattr(module, "_orig_mod", module)
    return {key: value.to("cuda") if value.is_cuda else value for key, value in inner.state_dict().items()}


def state_dict_ok_removeprefix(module):
    return {key.removeprefix("_orig_mod."): value for key, value in module.state_dict().items()}


def state_dict_ok_inner_module(module):
    return getattr(module, "_orig_mod", module).state_dict()


def state_dict_ok_consume_prefix(module):
    state = module.state_dict()
    consume_prefix_in_state_dict_if_present(state, "_orig_mod.")
    return state


def state_dict_ok_isinstance(module):
    return (module._orig_mod if isinstance(module, OptimizedModule) else module).state_dict()


def state_dict_ok_keep_vars(module):
    return getattr(module, "_orig_mod", module).state_dict(keep_vars=True)  # the Parameters themselves


def state_dict_ok_clone(module):
    return {key.removeprefix("_orig_mod."): value.clone() for key, value in module.state_dict().items()}


def state_dict_ok_replace_first(module):
    return {key.replace("_orig_mod.", "", 1): value for key, value in module.state_dict().items()}


def state_dict_ok_saved_and_loaded(module):
    inner = getattr(module, "_orig_mod", module)
    buffer = io.BytesIO()
    torch.save(inner.state_dict(), buffer)
    buffer.seek(0)
    return torch.load(buffer, map_location=next(inner.parameters()).device)


WRONG = {
    "rotate": [
        ("matrix without device", rotate_matrix_without_device, "two devices"),
        ("matrix on the cpu", rotate_matrix_on_cpu, "two devices"),
        ("matrix on the default device", rotate_matrix_on_default_device, "two devices"),
        ("sets the default device", rotate_setting_default_device, "default device was"),
        ("computes on the cpu", rotate_on_the_cpu, "Keep the computation where the data is"),
        ("matrix without dtype", rotate_without_dtype, "dtype=x.dtype"),
        ("rotates the wrong way", rotate_wrong_way, "(-y, x)"),
        ("zeroes its input and returns it", rotate_zeroing_its_input, "(-y, x)"),
        ("goes through float32", rotate_through_float32, "(-y, x)"),
        ("right only when compiled", rotate_right_only_when_compiled, "two devices"),
        ("right only when eager", rotate_right_only_when_eager, "two devices"),
        ('matrix on "cuda" for a GPU x', rotate_cuda_matrix, "cuda:1"),
        ("matrix moved with .cuda()", rotate_matrix_made_by_cuda, "cuda:1"),
        ("result rounded through float16", rotate_rounding_through_half, "(-y, x)"),
        ("rotates x in place", rotate_in_place, "changed x"),
        ("rotates x in place, column by column", rotate_by_slices_in_place, "changed x"),
        ("stub", lambda x: (_ for _ in ()).throw(NotImplementedError()), "not done yet"),
    ],
    "plain-state-dict": [
        ("state_dict as is", state_dict_as_is, "_orig_mod."),
        ("state dict of _orig_mod", state_dict_of_orig_mod, "AttributeError"),
        ("drops the first part of every key", state_dict_dropping_first_part, "is missing"),
        ("str.lstrip of the prefix", state_dict_lstrip, "'mixer.in_proj_weight' is missing"),
        ("cuts a fixed length from every key", state_dict_hard_coded_length, "is missing"),
        ("parameters only", state_dict_parameters_only, "running_mean"),
        ("keys only", state_dict_keys_only, "return a dict"),
        ("zeroes the model's tensors", state_dict_zeroing_the_model, "was not what it was before"),
        ("converts every tensor to float64", state_dict_in_float64, "keep each tensor's dtype"),
        ("turns integer buffers into floats", state_dict_integers_as_floats, "keep each tensor's dtype"),
        ("moves the tensors to the cpu", state_dict_on_the_cpu, "leave the tensors where they are"),
        ("moves the tensors to cuda", state_dict_to_cuda, "but the model is on cuda:1"),
    ],
}

RIGHT = {
    "rotate": [
        ("matrix on x's device and dtype", rotate_ok),
        ("no matrix: stack", rotate_ok_without_a_matrix),
        ("matrix moved with .to(x)", rotate_ok_moving_the_matrix),
        ("flip and sign", rotate_ok_with_flip),
        ("complex multiply by 1j", rotate_ok_times_i),
        ("with torch.device(x.device)", rotate_ok_device_context),
        ("a numpy matrix moved with .to(x)", rotate_ok_numpy_matrix),
        ("filled into empty_like", rotate_ok_filled_out),
        ("matrix on the left, transposed", rotate_ok_matrix_on_the_left),
        ("x.cuda(index) for a GPU x", rotate_ok_cuda_with_index),
    ],
    "plain-state-dict": [
        ("removeprefix", state_dict_ok_removeprefix),
        ("the module inside the wrapper", state_dict_ok_inner_module),
        ("consume_prefix_in_state_dict_if_present", state_dict_ok_consume_prefix),
        ("isinstance OptimizedModule", state_dict_ok_isinstance),
        ("keep_vars=True", state_dict_ok_keep_vars),
        ("cloned values", state_dict_ok_clone),
        ("str.replace, once", state_dict_ok_replace_first),
        ("saved and loaded back", state_dict_ok_saved_and_loaded),
    ],
}
