"""Mutation cases for lab 05 (debugging a mismatch). WRONG: (name, answer, hint substring in English), the
taught bug first; RIGHT: (name, answer), different right answers. The checks run on two GPUs, real or
simulated: the cases that write "cuda" (cuda:0) where the input is on cuda:1 only fail there."""

from __future__ import annotations

import torch
from torch import nn

from devicekit import locate_mismatch, strict_devices
from devicekit_labs.lab05 import FeatureScale, Tagger, distance_weights, token_ids
from mutations import untouched

LAB = "05-debugging"


# --- first-module ------------------------------------------------------------------------------------------


def first_the_block():
    """The taught skill missed: the block that contains the culprit, not the innermost module."""
    return "layers.2"


def first_the_tensor():
    return "layers.2.scale.scale"


def first_the_class():
    return "FeatureScale"


def first_the_report():
    device = torch.device("cuda", 0)
    torch.manual_seed(0)
    return locate_mismatch(Tagger().to(device), token_ids(device))


def first_a_number():
    return 2


def first_ok():
    return "layers.2.scale"


def first_from_the_tool():
    device = torch.device("cuda", 0)
    torch.manual_seed(0)
    return locate_mismatch(Tagger().to(device), token_ids(device)).module


# --- fix-scale ---------------------------------------------------------------------------------------------


class ScalePlainAttribute(FeatureScale):
    """The taught bug itself: a plain tensor attribute, which Module.to() does not move."""


class ScaleParameter(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(dim))
        self.shift = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        return x * self.scale + self.shift


class ScaleNotPersistent(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.register_buffer("scale", torch.ones(dim), persistent=False)
        self.shift = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        return x * self.scale + self.shift


class ScaleHardCodedWidth(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.register_buffer("scale", torch.ones(16))
        self.shift = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        return x * self.scale + self.shift


class ScaleIgnoresLoaded(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.register_buffer("scale", torch.ones(dim))
        self.shift = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        return x + self.shift


class ScaleMadeInForward(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.shift = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        return x * torch.ones_like(self.shift) + self.shift


class ScaleWithoutShift(nn.Module):
    """Computes the same for a fresh layer but drops the trained shift: not a drop-in replacement."""

    def __init__(self, dim):
        super().__init__()
        self.register_buffer("scale", torch.ones(dim))

    def forward(self, x):
        return x * self.scale


class ScaleDoubled(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.register_buffer("scale", torch.ones(dim))
        self.shift = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        return 2 * x * self.scale + self.shift


class ScaleStub(nn.Module):
    """What the untouched lab defines: the solution region of __init__ is a raising stub."""

    def __init__(self, dim):
        super().__init__()
        raise NotImplementedError


def scale_a_function(dim):
    return None


class ScaleBuffer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.register_buffer("scale", torch.ones(dim))
        self.shift = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        return x * self.scale + self.shift


class ScaleReRegistered(FeatureScale):
    """Keeps the original class and turns its attribute into a buffer after the fact."""

    def __init__(self, dim):
        super().__init__(dim)
        scale = self.scale
        del self.scale
        self.register_buffer("scale", scale)


class ScaleNnBuffer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.scale = nn.Buffer(torch.ones(dim))
        self.shift = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        return torch.addcmul(self.shift, x, self.scale)


# --- find-culprit ------------------------------------------------------------------------------------------


def culprit_hard_coded(model, batch):
    return "layers.2.scale"


def culprit_the_report(model, batch):
    with strict_devices():
        return locate_mismatch(model, batch)


def culprit_report_text(model, batch):  # the learner run-through: the whole report as text
    report = locate_mismatch(model, batch)
    return None if report is None else str(report)


def culprit_top_level(model, batch):
    with strict_devices():
        report = locate_mismatch(model, batch)
    return None if report is None else report.module.split(".")[0]


def culprit_never(model, batch):
    return None


def culprit_batch_moved_first(model, batch):
    """Moves the batch to the model's device before asking: hides the mix of model and batch."""
    device = next(model.parameters()).device
    report = locate_mismatch(model, batch.to(device))
    return None if report is None else report.module


def culprit_batch_to_cuda(model, batch):
    """Sends the batch to "cuda" when the model is on a GPU: cuda:0, whichever GPU the model is on."""
    on_gpu = next(model.parameters()).is_cuda
    report = locate_mismatch(model, batch.cuda() if on_gpu else batch)
    return None if report is None else report.module


def culprit_ok(model, batch):
    report = locate_mismatch(model, batch)
    return None if report is None else report.module


def culprit_under_strict(model, batch):
    with strict_devices():
        report = locate_mismatch(model, batch)
    return None if report is None else report.module


def culprit_from_the_error(model, batch):
    report = locate_mismatch(model, batch)
    return getattr(report, "module", None)


# --- fix-weights -------------------------------------------------------------------------------------------


def weights_copied(x):
    """Right values and device, but built on the CPU and copied on every call."""
    return distance_weights(x).to(x.device)


def weights_hard_coded_steps(x):
    positions = torch.arange(7, device=x.device)
    return torch.softmax(-(positions[:, None] - positions[None, :]).abs().float(), dim=-1)


def weights_float64(x):
    positions = torch.arange(x.shape[1], device=x.device)
    return torch.softmax(-(positions[:, None] - positions[None, :]).abs().double(), dim=-1)


def weights_on_cuda(x):
    """device="cuda" for any GPU input: the current GPU (cuda:0), not x's."""
    positions = torch.arange(x.shape[1], device="cuda" if x.is_cuda else "cpu")
    return torch.softmax(-(positions[:, None] - positions[None, :]).abs().float(), dim=-1)


def weights_gpu_branch_without_abs(x):
    """A separate GPU branch that forgets .abs(): right on the CPU, wrong values on a GPU."""
    if not x.is_cuda:
        return weights_ok(x)
    positions = torch.arange(x.shape[1], device=x.device)
    return torch.softmax(-(positions[:, None] - positions[None, :]).float(), dim=-1)


def weights_on_the_input_index(x):
    """Right on a GPU too: the index taken from the input."""
    device = torch.device("cuda", x.device.index) if x.is_cuda else x.device
    positions = torch.arange(x.shape[1], device=device)
    return torch.softmax(-(positions[:, None] - positions[None, :]).abs().float(), dim=-1)


def weights_without_the_minus(x):
    positions = torch.arange(x.shape[1], device=x.device)
    return torch.softmax((positions[:, None] - positions[None, :]).abs().float(), dim=-1)


def weights_uniform(x):
    return torch.full((x.shape[1], x.shape[1]), 1 / x.shape[1], device=x.device)


def weights_ok(x):
    positions = torch.arange(x.shape[1], device=x.device)
    distance = (positions[:, None] - positions[None, :]).abs().float()
    return torch.softmax(-distance, dim=-1)


def weights_float_positions(x):
    steps = torch.arange(x.shape[1], device=x.device, dtype=torch.float32)
    return (-(steps.unsqueeze(0) - steps.unsqueeze(1)).abs()).softmax(dim=-1)


WRONG = {
    "first-module": [
        ("the enclosing block", first_the_block, "not the innermost one where the devices mix"),
        ("the tensor, not the module", first_the_tensor, "no module named"),
        ("the class name", first_the_class, "no module named"),
        ("the report object", first_the_report, "as a string"),
        ("a number", first_a_number, "as a string"),
        ("untouched stub", untouched, "not done yet"),
    ],
    "fix-scale": [
        ("a plain tensor attribute", ScalePlainAttribute, "stayed behind"),
        ("a trainable scale", ScaleParameter, "must not change"),
        ("a buffer that is not saved", ScaleNotPersistent, "missing from state_dict"),
        ("the lab's width hard-coded", ScaleHardCodedWidth, "FixedFeatureScale(6)"),
        ("forward ignores the loaded scale", ScaleIgnoresLoaded, "after load_state_dict"),
        ("a scale made in forward", ScaleMadeInForward, "missing from state_dict"),
        ("the shift dropped", ScaleWithoutShift, "drop-in replacement keeps FeatureScale's tensors"),
        ("the input doubled", ScaleDoubled, "must compute the same as FeatureScale(16)"),
        ("a function, not a class", scale_a_function, "expected a class (an nn.Module subclass)"),
        ("untouched stub", ScaleStub, "not done yet"),
    ],
    "find-culprit": [
        # the taught skill missed: the lab's own module name, whatever the model
        ("a hard-coded name", culprit_hard_coded, "not the module where the devices mix"),
        ("the report object", culprit_the_report, "as a string"),
        ("the report as text", culprit_report_text, "the module's name alone"),
        ("the top-level module", culprit_top_level, "not the module where the devices mix"),
        ("always None", culprit_never, "not the module where the devices mix"),
        ("the batch moved to the model first", culprit_batch_moved_first, "batch left on the CPU"),
        ('the batch sent to "cuda" first', culprit_batch_to_cuda, "on MixerTagger your function answered ''"),
        ("untouched stub", untouched, "not done yet"),
    ],
    "fix-weights": [
        ("the original: positions born on the CPU", distance_weights, "the weights are on cpu"),
        ("built on the CPU, then copied", weights_copied, "copies them"),
        ("the lab's 7 positions hard-coded", weights_hard_coded_steps, "of shape [5, 5]"),
        ("float64 weights", weights_float64, "yours are float64"),
        ("nearest positions weighted least", weights_without_the_minus, "hold other values"),
        ('device="cuda" for a GPU input', weights_on_cuda, "cuda:1"),
        ("a GPU branch that computes other values", weights_gpu_branch_without_abs, "hold other values"),
        ("uniform weights", weights_uniform, "hold other values than distance_weights(x)"),
        ("untouched stub", untouched, "not done yet"),
    ],
}

RIGHT = {
    "first-module": [
        ("the name", first_ok),
        ("asks the tool", first_from_the_tool),
        ("the name itself, not a function", "layers.2.scale"),
    ],
    "fix-scale": [
        ("register_buffer", ScaleBuffer),
        ("the original class, re-registered", ScaleReRegistered),
        ("nn.Buffer and addcmul", ScaleNnBuffer),
    ],
    "find-culprit": [
        ("locate_mismatch", culprit_ok),
        ("locate under strict_devices", culprit_under_strict),
        ("getattr on the report", culprit_from_the_error),
    ],
    "fix-weights": [
        ("device=x.device", weights_ok),
        ("float positions, Tensor.softmax", weights_float_positions),
        ("cuda with the input's index", weights_on_the_input_index),
    ],
}
