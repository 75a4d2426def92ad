"""Lab 02 (models): the self-checks accept correct answers, reject the typical wrong ones with a hint in both
languages. (tests/test_grade.py grades every lab: the solution in full, the untouched lab at zero.)"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from check_outcome import expect
from devicekit_labs import exercises_for, run

LAB = "02-models"
MAX = 4


def _stub(*args):
    raise NotImplementedError


# --- exercise 1: the mask ---------------------------------------------------------------------------------


class ScoresOk(nn.Module):
    def __init__(self, steps):
        super().__init__()
        self.register_buffer("mask", torch.ones(steps, steps, dtype=torch.bool).tril(), persistent=False)

    def forward(self, scores):
        return torch.where(self.mask, scores, float("-inf"))


class ScoresPersistent(ScoresOk):
    def __init__(self, steps):
        nn.Module.__init__(self)
        self.register_buffer("mask", torch.ones(steps, steps, dtype=torch.bool).tril())


class ScoresPlain(ScoresOk):
    def __init__(self, steps):
        nn.Module.__init__(self)
        self.mask = torch.ones(steps, steps, dtype=torch.bool).tril()


class ScoresUpperTriangle(ScoresOk):
    def __init__(self, steps):
        nn.Module.__init__(self)
        self.register_buffer("mask", torch.ones(steps, steps, dtype=torch.bool).triu())


class ScoresStub(nn.Module):
    def __init__(self, steps):
        super().__init__()
        raise NotImplementedError("Exercise 1: register the buffer")


# --- exercise 2: the layers -------------------------------------------------------------------------------


class StackOk(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


class StackList(StackOk):
    def __init__(self, width, depth):
        nn.Module.__init__(self)
        self.layers = [nn.Linear(width, width) for _ in range(depth)]


class StackSequentialNoRelu(StackOk):
    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class StackOtherName(StackOk):
    def __init__(self, width, depth):
        nn.Module.__init__(self)
        self.blocks = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))
        self.layers = list(self.blocks)


# --- exercise 3: the noise --------------------------------------------------------------------------------


class NoiseOk(nn.Module):
    def __init__(self, std):
        super().__init__()
        self.std = std

    def forward(self, x):
        return x + torch.randn_like(x) * self.std


class NoiseOnCpu(NoiseOk):
    def forward(self, x):
        return x + torch.randn(x.shape, dtype=x.dtype) * self.std


class NoiseFloat16(NoiseOk):
    def forward(self, x):
        return (x + torch.randn_like(x) * self.std).half()


class NoiseWrongScale(NoiseOk):
    def forward(self, x):
        return x + torch.randn_like(x)


class NoiseNone(NoiseOk):
    def forward(self, x):
        return x.clone()


# --- exercise 4: two stages -------------------------------------------------------------------------------


class TwoStageOk(nn.Module):
    def __init__(self, first, second):
        super().__init__()
        self.first, self.second = torch.device(first), torch.device(second)
        self.stage1 = nn.Sequential(nn.Linear(4, 8), nn.ReLU()).to(self.first)
        self.stage2 = nn.Linear(8, 2).to(self.second)

    def forward(self, x):
        return self.stage2(self.stage1(x.to(self.first)).to(self.second))


class TwoStageNoHandOver(TwoStageOk):
    def forward(self, x):
        return self.stage2(self.stage1(x.to(self.first)))


class TwoStageOneDevice(TwoStageOk):
    def __init__(self, first, second):
        nn.Module.__init__(self)
        self.first, self.second = torch.device(first), torch.device(second)
        self.stage1 = nn.Sequential(nn.Linear(4, 8), nn.ReLU()).to(self.first)
        self.stage2 = nn.Linear(8, 2).to(self.first)

    def forward(self, x):
        return self.stage2(self.stage1(x.to(self.first)))


class TwoStageSkipsStage1(TwoStageOk):
    def forward(self, x):
        return self.stage2(torch.zeros(x.shape[0], 8, device=self.second))


CASES = [
    ("mask-buffer", ScoresOk, None),
    ("mask-buffer", ScoresPersistent, None),
    ("mask-buffer", ScoresPlain, "plain tensor attribute"),
    ("mask-buffer", ScoresUpperTriangle, "output is wrong"),
    ("mask-buffer", ScoresOk(4), "subclass of nn.Module"),
    ("mask-buffer", ScoresStub, "not done yet"),
    ("module-list", StackOk, None),
    ("module-list", StackList, "plain Python list"),
    ("module-list", StackSequentialNoRelu, "torch.relu"),
    ("module-list", StackOtherName, "plain Python list"),
    ("noise-forward", NoiseOk, None),
    ("noise-forward", NoiseOnCpu, "take it from x"),
    ("noise-forward", NoiseFloat16, "dtype"),
    ("noise-forward", NoiseWrongScale, "std 0.5"),
    ("noise-forward", NoiseNone, "std 0.5"),
    ("two-stage", TwoStageOk, None),
    ("two-stage", TwoStageNoHandOver, "the activations to the second's"),
    ("two-stage", TwoStageOneDevice, "stage2's on"),
    ("two-stage", TwoStageSkipsStage1, "stage2(stage1(x))"),
]


@pytest.mark.parametrize(("key", "answer", "hint"), CASES, ids=lambda v: getattr(v, "__name__", str(v))[:30])
def test_checks(key, answer, hint):
    expect(run(LAB, key, answer), hint)


def test_the_checks_leave_the_default_device_and_grad_mode_alone():
    run(LAB, "noise-forward", NoiseOnCpu)
    assert torch.get_default_device().type == "cpu"


def test_exercises_are_numbered_in_notebook_order():
    assert [e.key for e in exercises_for(LAB)] == ["mask-buffer", "module-list", "noise-forward", "two-stage"]
