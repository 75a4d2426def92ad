"""Mutation cases for lab 02 (models, parameters, buffers); format in ``tests/mutations/__init__.py``."""

from __future__ import annotations

import torch
from torch import nn

LAB = "02-models"


# --- exercise 1: mask-buffer --------------------------------------------------------------------------------


class ScoresOk(nn.Module):
    def __init__(self, steps):
        super().__init__()
        self.register_buffer("mask", torch.ones(steps, steps, dtype=torch.bool).tril(), persistent=False)

    def forward(self, scores):
        return torch.where(self.mask, scores, float("-inf"))


class ScoresPlain(ScoresOk):  # the taught bug: a plain attribute, which Module.to skips
    def __init__(self, steps):
        nn.Module.__init__(self)
        self.mask = torch.ones(steps, steps, dtype=torch.bool).tril()


class ScoresFrozenParameter(ScoresOk):  # the learner run-through: a parameter that does not train
    def __init__(self, steps):
        nn.Module.__init__(self)
        self.mask = nn.Parameter(torch.ones(steps, steps, dtype=torch.bool).tril(), requires_grad=False)


class ScoresFixedSize(ScoresOk):  # reviewers: a buffer hard-coded to (5, 5)
    def __init__(self, steps):
        nn.Module.__init__(self)
        self.register_buffer("mask", torch.ones(5, 5, dtype=torch.bool).tril())


class ScoresUpper(ScoresOk):
    def __init__(self, steps):
        nn.Module.__init__(self)
        self.register_buffer("mask", torch.ones(steps, steps, dtype=torch.bool).triu())


class ScoresInForward(nn.Module):  # a new mask in every forward, created on the CPU
    def __init__(self, steps):
        super().__init__()
        self.steps = steps
        self.register_buffer("mask", torch.ones(steps, steps, dtype=torch.bool).tril())

    def forward(self, scores):
        mask = torch.ones(self.steps, self.steps, dtype=torch.bool).tril()
        return torch.where(mask, scores, float("-inf"))


class ScoresCudaInForward(ScoresOk):  # device="cuda" for scores on a GPU: the current GPU, not theirs
    def forward(self, scores):
        steps = scores.shape[-1]
        device = "cuda" if scores.is_cuda else "cpu"
        mask = torch.ones(steps, steps, dtype=torch.bool, device=device).tril()
        return torch.where(mask, scores, float("-inf"))


class ScoresFloatMask(ScoresOk):
    def __init__(self, steps):
        nn.Module.__init__(self)
        self.register_buffer("mask", torch.ones(steps, steps).tril())


class ScoresPersistent(ScoresOk):
    def __init__(self, steps):
        nn.Module.__init__(self)
        self.register_buffer("mask", torch.tril(torch.ones(steps, steps, dtype=torch.bool)))


class ScoresMaskedFill(nn.Module):
    def __init__(self, steps):
        super().__init__()
        causal = torch.arange(steps)[:, None] >= torch.arange(steps)[None, :]
        self.register_buffer("mask", causal, persistent=False)

    def forward(self, scores):
        return scores.masked_fill(~self.mask, float("-inf"))


class ScoresStub(nn.Module):
    def __init__(self, steps):
        super().__init__()
        raise NotImplementedError("Exercise 1: register the buffer")


# --- exercise 2: module-list --------------------------------------------------------------------------------


class StackOk(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


class StackList(StackOk):  # the taught bug: a plain Python list
    def __init__(self, width, depth):
        nn.Module.__init__(self)
        self.layers = [nn.Linear(width, width) for _ in range(depth)]


class StackHardCoded(StackOk):  # reviewers: three Linear(4, 4) whatever the arguments
    def __init__(self, width, depth):
        nn.Module.__init__(self)
        self.layers = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4)])


class StackRepeated(StackOk):  # reviewers: [layer] * depth, one layer shared by every position
    def __init__(self, width, depth):
        nn.Module.__init__(self)
        self.layers = nn.ModuleList([nn.Linear(width, width)] * depth)


class StackNoRelu(StackOk):
    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class StackTuple(StackOk):
    def __init__(self, width, depth):
        nn.Module.__init__(self)
        self.layers = tuple(nn.Linear(width, width) for _ in range(depth))


class StackOtherName(StackOk):
    def __init__(self, width, depth):
        nn.Module.__init__(self)
        self.blocks = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))

    def forward(self, x):
        for layer in self.blocks:
            x = torch.relu(layer(x))
        return x


class StackListOfBlocks(StackOk):  # registered as `blocks`, but `layers` is a plain list of them
    def __init__(self, width, depth):
        nn.Module.__init__(self)
        self.blocks = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))
        self.layers = list(self.blocks)


class StackCudaInput(StackOk):  # moves x to "the GPU" for the layers: cuda:0, whatever GPU they are on
    def forward(self, x):
        if next(self.parameters()).is_cuda:
            x = x.cuda()
        return super().forward(x)


class StackInputToLayers(StackOk):  # moves x to the device of the layers: right on any device
    def forward(self, x):
        return super().forward(x.to(self.layers[0].weight.device))


class StackAppend(StackOk):
    def __init__(self, width, depth):
        nn.Module.__init__(self)
        self.layers = nn.ModuleList()
        for _ in range(depth):
            self.layers.append(nn.Linear(width, width))


class StackIndexed(StackOk):
    def __init__(self, width, depth):
        nn.Module.__init__(self)
        self.layers = nn.ModuleList([nn.Linear(width, width) for _ in range(depth)])

    def forward(self, x):
        for i in range(len(self.layers)):
            x = self.layers[i](x).relu()
        return x


# --- exercise 3: noise-forward ------------------------------------------------------------------------------


class NoiseOk(nn.Module):
    def __init__(self, std):
        super().__init__()
        self.std = std

    def forward(self, x):
        return x + torch.randn_like(x) * self.std


class NoiseOnCpu(NoiseOk):  # the taught bug: a factory without device=
    def forward(self, x):
        return x + torch.randn(x.shape, dtype=x.dtype) * self.std


class NoiseDefaultDtype(NoiseOk):  # reviewers: the input's device but not its dtype
    def forward(self, x):
        return x + torch.randn(x.shape, device=x.device) * self.std


class NoiseCudaDevice(NoiseOk):  # device="cuda" for an input on a GPU: the current GPU, not x's
    def forward(self, x):
        device = "cuda" if x.is_cuda else "cpu"
        return x + torch.randn(x.shape, dtype=x.dtype, device=device) * self.std


class NoiseCpuThenMoved(NoiseOk):  # made on the CPU, then moved to x's device and dtype: right, one copy more
    def forward(self, x):
        return x + torch.randn(x.shape, dtype=x.dtype).to(x.device) * self.std


class NoiseFixedStd(NoiseOk):
    def forward(self, x):
        return x + torch.randn_like(x) * 0.5


class NoiseUniform(NoiseOk):
    def forward(self, x):
        return x + torch.rand_like(x) * self.std


class NoiseUnscaled(NoiseOk):
    def forward(self, x):
        return x + torch.randn_like(x)


class NoiseFloat16(NoiseOk):  # the output cast to float16 whatever the input's dtype
    def forward(self, x):
        return (x + torch.randn_like(x) * self.std).half()


class NoiseNone(NoiseOk):  # no noise at all
    def forward(self, x):
        return x.clone()


class NoiseLong(NoiseOk):
    def forward(self, x):
        return x + torch.randn(x.shape, dtype=x.dtype, device=x.device) * self.std


class NoiseNormal(NoiseOk):
    def forward(self, x):
        return x + torch.empty_like(x).normal_(0.0, self.std)


class NoiseNew(NoiseOk):
    def forward(self, x):
        return torch.normal(0.0, self.std, size=x.shape, dtype=x.dtype, device=x.device) + x


# --- exercise 4: two-stage ----------------------------------------------------------------------------------


class TwoStageOk(nn.Module):
    def __init__(self, first, second):
        super().__init__()
        self.first, self.second = torch.device(first), torch.device(second)
        self.stage1 = nn.Sequential(nn.Linear(4, 8), nn.ReLU()).to(self.first)
        self.stage2 = nn.Linear(8, 2).to(self.second)

    def forward(self, x):
        hidden = self.stage1(x.to(self.first))
        return self.stage2(hidden.to(self.second))


class TwoStageNoHop(TwoStageOk):  # the taught bug: the activations never cross to the second device
    def forward(self, x):
        return self.stage2(self.stage1(x.to(self.first)))


class TwoStageInputNotMoved(TwoStageOk):  # reviewers: x is never moved to the first stage
    def forward(self, x):
        return self.stage2(self.stage1(x).to(self.second))


class TwoStageCpuInput(TwoStageOk):  # reviewers: x.to("cpu") hard-coded
    def forward(self, x):
        return self.stage2(self.stage1(x.to("cpu")).to(self.second))


class TwoStageDeviceType(TwoStageOk):  # x.to(device.type): "cuda" is the current GPU, the index is lost
    def forward(self, x):
        hidden = self.stage1(x.to(self.first.type))
        return self.stage2(hidden.to(self.second.type))


class TwoStageDotCuda(TwoStageOk):  # .cuda() for a stage on a GPU: cuda:0, whatever `second` names
    def __init__(self, first, second):
        nn.Module.__init__(self)
        self.first, self.second = torch.device(first), torch.device(second)
        self.stage1 = nn.Sequential(nn.Linear(4, 8), nn.ReLU()).to(self.first)
        self.stage2 = nn.Linear(8, 2)
        if self.second.type == "cuda":
            self.stage2 = self.stage2.cuda()


class TwoStageSwapped(TwoStageOk):
    def __init__(self, first, second):
        nn.Module.__init__(self)
        self.first, self.second = torch.device(first), torch.device(second)
        self.stage1 = nn.Sequential(nn.Linear(4, 8), nn.ReLU()).to(self.second)
        self.stage2 = nn.Linear(8, 2).to(self.first)

    def forward(self, x):
        return self.stage2(self.stage1(x.to(self.second)).to(self.first))


class TwoStageBack(TwoStageOk):  # the output moved back to the first device
    def forward(self, x):
        return super().forward(x).to(self.first)


class TwoStageNoRelu(TwoStageOk):
    def __init__(self, first, second):
        nn.Module.__init__(self)
        self.first, self.second = torch.device(first), torch.device(second)
        self.stage1 = nn.Sequential(nn.Linear(4, 8)).to(self.first)
        self.stage2 = nn.Linear(8, 2).to(self.second)


class TwoStageOneDevice(TwoStageOk):  # both stages on the first device
    def __init__(self, first, second):
        nn.Module.__init__(self)
        self.first, self.second = torch.device(first), torch.device(second)
        self.stage1 = nn.Sequential(nn.Linear(4, 8), nn.ReLU()).to(self.first)
        self.stage2 = nn.Linear(8, 2).to(self.first)

    def forward(self, x):
        return self.stage2(self.stage1(x.to(self.first)))


class TwoStageSkipsStage1(TwoStageOk):  # right devices, but stage1 never runs
    def forward(self, x):
        return self.stage2(torch.zeros(x.shape[0], 8, device=self.second))


class TwoStageFactoryKwargs(nn.Module):
    def __init__(self, first, second):
        super().__init__()
        self.stage1 = nn.Sequential(nn.Linear(4, 8, device=first), nn.ReLU())
        self.stage2 = nn.Linear(8, 2, device=second)

    def forward(self, x):
        x = x.to(next(self.stage1.parameters()).device)
        return self.stage2(self.stage1(x).to(self.stage2.weight.device))


class TwoStageNonBlocking(TwoStageOk):
    def forward(self, x):
        hidden = self.stage1(x.to(self.first, non_blocking=True))
        return self.stage2(hidden.to(self.second, non_blocking=True))


class TwoStageLogs(TwoStageOk):  # reads a value off the GPU every call: .item() of an activation
    def forward(self, x):
        hidden = self.stage1(x.to(self.first))
        out = self.stage2(hidden.to(self.second))
        self.last_mean = out.mean().item()
        return out


WRONG = {
    "mask-buffer": [
        ("plain tensor attribute", ScoresPlain, "plain tensor attribute"),
        ("a frozen nn.Parameter", ScoresFrozenParameter, "it is a parameter"),
        ("buffer hard-coded to (5, 5)", ScoresFixedSize, "built from `steps`"),
        ("upper triangle", ScoresUpper, "above the diagonal must become -inf"),
        ("new CPU mask in forward", ScoresInForward, "do not make a new one in forward"),
        ("float mask", ScoresFloatMask, "bool mask built from `steps`"),
        ('device="cuda" mask made in forward', ScoresCudaInForward, "mean the current GPU"),
        ("stub", ScoresStub, "not done yet"),
        ("an instance instead of the class", ScoresOk(5), "the class itself"),
    ],
    "module-list": [
        ("plain Python list", StackList, "plain Python list"),
        ("three Linear(4, 4) hard-coded", StackHardCoded, "should hold 2 layers"),
        ("[nn.Linear(w, w)] * depth", StackRepeated, "repeats ONE layer"),
        ("no relu", StackNoRelu, "each followed by torch.relu"),
        ("a tuple", StackTuple, "plain Python tuple"),
        ("attribute not called layers", StackOtherName, "no attribute called 'layers'"),
        ("x.cuda() for layers on a GPU", StackCudaInput, "mean the current GPU"),
        ("layers a plain list of registered blocks", StackListOfBlocks, "plain Python list"),
    ],
    "noise-forward": [
        ("factory without device", NoiseOnCpu, "take it from x"),
        ("noise without the input's dtype", NoiseDefaultDtype, "input's shape and dtype"),
        ("std hard-coded to 0.5", NoiseFixedStd, "std 2.0"),
        ("uniform noise", NoiseUniform, "Gaussian noise with mean 0"),
        ("std ignored", NoiseUnscaled, "Scale standard normal noise"),
        ('device="cuda" for an input on a GPU', NoiseCudaDevice, "device=x.device"),
        ("output cast to float16", NoiseFloat16, "the input's shape and dtype too"),
        ("no noise at all", NoiseNone, "std 0.5; it has mean 0.000 and std 0.000"),
    ],
    "two-stage": [
        ("activations never cross", TwoStageNoHop, "the activations to the second's"),
        ("x never moved to the first stage", TwoStageInputNotMoved, "move x to the first stage's device"),
        ('x.to("cpu") hard-coded', TwoStageCpuInput, "never a fixed name"),
        ("stages swapped", TwoStageSwapped, "Place each stage on the device"),
        ("output moved back", TwoStageBack, "the second stage's device"),
        ("stage1 without ReLU", TwoStageNoRelu, "stage2(stage1(x))"),
        ("x.to(device.type)", TwoStageDeviceType, "mean the current GPU"),
        (".cuda() for the second stage", TwoStageDotCuda, "stage2's on cuda:1"),
        (
            "both stages on the first device",
            TwoStageOneDevice,
            "stage2's on cuda:1; they are on ['cpu'] and ['cpu']",
        ),
        (
            "stage1 skipped",
            TwoStageSkipsStage1,
            "stage2(stage1(x)); the forward pass computes something else",
        ),
    ],
}

RIGHT = {
    "mask-buffer": [
        ("persistent=False buffer with torch.where", ScoresOk),
        ("persistent buffer", ScoresPersistent),
        ("comparison mask with masked_fill", ScoresMaskedFill),
    ],
    "module-list": [
        ("ModuleList comprehension", StackOk),
        ("ModuleList.append", StackAppend),
        ("indexed loop with .relu()", StackIndexed),
        ("x moved to the layers' device first", StackInputToLayers),
    ],
    "noise-forward": [
        ("randn_like", NoiseOk),
        ("randn with shape, dtype and device", NoiseLong),
        ("empty_like().normal_()", NoiseNormal),
        ("torch.normal with dtype and device", NoiseNew),
        ("randn on the CPU, then .to(x.device)", NoiseCpuThenMoved),
    ],
    "two-stage": [
        ("Module.to in __init__", TwoStageOk),
        ("device= factory kwargs, devices read from the parameters", TwoStageFactoryKwargs),
        ("non_blocking hops", TwoStageNonBlocking),
        ("logs out.mean().item()", TwoStageLogs),
    ],
}
