"""Self-checks for lab 05 (debugging a device mismatch), and the models the lab debugs.

The models live here, not in the notebook, because the checks must rebuild them to compute the right
answers for real. The lab tells learners to find the bugs with devicekit first and to read the source
(``inspect.getsource``) only of the module the tools name, as they would in a model they did not write.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from devicekit.device import mismatch_device
from devicekit.locate import locate_mismatch
from devicekit.strict import strict_devices
from devicekit_labs import Fail, exercise

LAB = "05-debugging"

VOCAB, DIM, TAGS = 50, 16, 5


# --- model 1: a tagger whose last block keeps a plain tensor attribute ------------------------------------


class FeatureScale(nn.Module):
    """Scales and shifts each feature: ``x * scale + shift``. (Contains the lab's first bug.)"""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.scale = torch.ones(dim)  # a plain attribute: Module.to() does not move it
        self.shift = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale + self.shift


class Block(nn.Module):
    """Pre-norm feed-forward block with a residual connection, optionally followed by a FeatureScale."""

    def __init__(self, dim: int, scale: bool = False, scale_cls: type[nn.Module] = FeatureScale) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.scale = scale_cls(dim) if scale else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.scale(x + self.ff(self.norm(x)))


class Tagger(nn.Module):
    """Token ids ``(B, T)`` -> tag scores ``(B, T, TAGS)``: embedding, three blocks, a linear head."""

    def __init__(self, scale_cls: type[nn.Module] = FeatureScale) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.layers = nn.ModuleList([Block(DIM), Block(DIM), Block(DIM, scale=True, scale_cls=scale_cls)])
        self.head = nn.Linear(DIM, TAGS)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


# --- model 2: a token mixer whose weights are born on the CPU --------------------------------------------


def distance_weights(x: torch.Tensor) -> torch.Tensor:
    """(T, T) mixing weights that favour nearby positions. (Contains the lab's second bug.)"""
    positions = torch.arange(x.shape[1])
    distance = (positions[:, None] - positions[None, :]).abs().float()
    return torch.softmax(-distance, dim=-1)


class DistanceMixer(nn.Module):
    """Mixes each position with its neighbours: ``weights @ x`` with ``weights`` from a function."""

    def __init__(self, weights_fn=distance_weights) -> None:
        super().__init__()
        self.weights_fn = weights_fn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.weights_fn(x) @ x


class MixerBlock(nn.Module):
    def __init__(self, dim: int, weights_fn=distance_weights) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.mixer = DistanceMixer(weights_fn)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.proj(self.mixer(self.norm(x)))


class MixerTagger(nn.Module):
    """Token ids ``(B, T)`` -> tag scores: embedding, two MixerBlocks, a linear head."""

    def __init__(self, weights_fn=distance_weights) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.blocks = nn.Sequential(MixerBlock(DIM, weights_fn), MixerBlock(DIM, weights_fn))
        self.head = nn.Linear(DIM, TAGS)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.embed(ids)))


# --- a third model, only for checking exercise 3 on a model the learner has not seen ---------------------


class _LearnedPositions(nn.Module):
    def __init__(self, steps: int, dim: int) -> None:
        super().__init__()
        self.table = nn.Embedding(steps, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.table(torch.arange(x.shape[1]))  # positions born on the CPU


class _PositionTagger(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.encoder = nn.Sequential(nn.LayerNorm(DIM), _LearnedPositions(16, DIM), nn.Linear(DIM, DIM))
        self.head = nn.Linear(DIM, TAGS)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(self.embed(ids)))


class _BufferScale(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.register_buffer("scale", torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale


def token_ids(device: torch.device | str = "cpu") -> torch.Tensor:
    """A fixed batch of token ids, shape (2, 7)."""
    return torch.randint(0, VOCAB, (2, 7), generator=torch.Generator().manual_seed(0)).to(device)


class _CpuBirthRecorder(TorchDispatchMode):
    """Records the ATen operations that produce a CPU tensor with at least one dimension."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if any(
            isinstance(t, torch.Tensor) and t.device.type == "cpu" and t.dim() > 0 for t in tree_leaves(out)
        ):
            name = func.overloadpacket.__name__
            if name not in self.ops:
                self.ops.append(name)
        return out


def _cpu_births(fn, x: torch.Tensor) -> list[str]:
    """Names of the operations ``fn(x)`` runs that make CPU tensors, when ``x`` is not on the CPU."""
    if x.device.type == "cpu":
        return []
    with _CpuBirthRecorder() as recorder:
        fn(x)
    return recorder.ops


def _located(model: nn.Module, *inputs: torch.Tensor) -> str | None:
    with strict_devices():
        report = locate_mismatch(model, *inputs)
    return None if report is None else report.module


def _name_check(answer: object, model: nn.Module) -> None:
    if callable(answer):
        answer = answer()
    if not isinstance(answer, str):
        raise Fail(
            f"expected the module's qualified name as a string (like 'encoder.layers.0.attn'), "
            f"got {type(answer).__name__}.",
            f"应当给出模块的限定名字符串（形如 'encoder.layers.0.attn'），实际是 {type(answer).__name__}。",
        )
    names = dict(model.named_modules())
    if answer not in names:
        raise Fail(
            f"the model has no module named {answer!r}: copy the name exactly as model.named_modules() "
            "or locate_mismatch prints it.",
            f"模型里没有名为 {answer!r} 的模块：请照 model.named_modules() 或 locate_mismatch "
            "打印的名字原样填写。",
        )
    target = mismatch_device()
    truth = _located(model.to(target), token_ids(target))
    if answer != truth:
        kind = type(names[answer]).__name__
        raise Fail(
            f"{answer!r} ({kind}) is a real module, but not where the devices mix. Run the tool on the "
            "model and the batch and read the name it reports.",
            f"{answer!r}（{kind}）确实存在，但设备混用不是发生在这里。把模型和批次交给工具运行一次，看它报告的名字。",
        )


@exercise(LAB, "first-module", 1, "name the module", "说出出错的模块", target="first_culprit")
def check_first_module(answer) -> None:
    torch.manual_seed(0)
    _name_check(answer, Tagger())


@exercise(LAB, "fix-scale", 2, "fix the module", "修好这个模块", target="FixedFeatureScale")
def check_fix_scale(fixed_cls) -> None:
    if not isinstance(fixed_cls, type) or not issubclass(fixed_cls, nn.Module):
        raise Fail(
            "expected a class (an nn.Module subclass) that takes dim, like FeatureScale.",
            "应当是一个类（nn.Module 的子类），像 FeatureScale 一样接收 dim 参数。",
        )
    layer = fixed_cls(DIM)
    x = torch.randn(2, 7, DIM, generator=torch.Generator().manual_seed(1))
    want = x * 1.0
    got = layer(x)
    if not isinstance(got, torch.Tensor) or got.shape != x.shape or not torch.allclose(got, want):
        raise Fail(
            "a fresh layer must compute the same as FeatureScale (scale 1, shift 0): only where the "
            "scale lives should change.",
            "新建的层要和 FeatureScale 算出一样的结果（scale 为 1，shift 为 0）：只应改变 scale 存放的方式。",
        )
    target = mismatch_device()
    torch.manual_seed(0)
    model = Tagger(scale_cls=fixed_cls).to(target)
    stray = [
        f"{name}.{key}"
        for name, module in model.named_modules()
        for key, value in vars(module).items()
        if isinstance(value, torch.Tensor) and value.device != target
    ]
    if stray:
        raise Fail(
            f"after model.to({str(target)!r}) these tensors stayed behind: {', '.join(stray)}. "
            "model.to() moves parameters and buffers only.",
            f"执行 model.to({str(target)!r}) 之后，这些张量没有跟着移动：{', '.join(stray)}。"
            "model.to() 只移动参数和缓冲区（buffer）。",
        )
    if _located(model, token_ids(target)) is not None:
        raise Fail(
            "the tagger built with your class still mixes devices somewhere.",
            "用你的类搭出的模型仍有设备混用的地方。",
        )
    if "layers.2.scale.scale" not in model.state_dict():
        raise Fail(
            "the scale should be saved with the model (it is part of what the layer computes): "
            "it is missing from state_dict().",
            "scale 属于这个层的计算，应当随模型一起保存，但 state_dict() 里没有它。",
        )
    if set(layer.state_dict()) != {"scale", "shift"} or set(dict(layer.named_parameters())) != {"shift"}:
        raise Fail(
            f"a drop-in replacement keeps FeatureScale's tensors: 'shift' a trained parameter, 'scale' a "
            f"constant that the optimizer must not change, both in state_dict(). Yours has parameters "
            f"{sorted(dict(layer.named_parameters()))} and state_dict keys {sorted(layer.state_dict())}.",
            f"能直接替换的类要保留 FeatureScale 的张量：'shift' 是要训练的参数，"
            f"'scale' 是优化器不能改动的常量，两者都在 state_dict() 里。"
            f"你的类的参数是 {sorted(dict(layer.named_parameters()))}，"
            f"state_dict 的键是 {sorted(layer.state_dict())}。",
        )
    scale, shift = torch.rand(DIM) + 0.5, torch.randn(DIM)
    layer.load_state_dict({"scale": scale, "shift": shift})
    if not torch.allclose(layer(x), x * scale + shift):
        raise Fail(
            "after load_state_dict the layer must compute x * scale + shift with the loaded values.",
            "load_state_dict 之后，这个层必须用载入的值计算 x * scale + shift。",
        )


@exercise(
    LAB, "find-culprit", 3, "a function that names the module", "写一个找出模块的函数", target="find_culprit"
)
def check_find_culprit(find_culprit) -> None:
    if not callable(find_culprit):
        raise Fail(
            "expected a function find_culprit(model, batch) that returns a module name.",
            "应当是函数 find_culprit(model, batch)，返回模块名。",
        )
    target = mismatch_device()
    torch.manual_seed(0)
    cases = [MixerTagger(), _PositionTagger(), Tagger()]
    for model in cases:
        model.to(target)
        truth = _located(model, token_ids(target))
        got = find_culprit(model, token_ids(target))
        if got != truth:
            raise Fail(
                f"on a {type(model).__name__} your function answered {got!r}, which is not the module "
                "where the devices mix. Remember which mixes the stand-in lets through without an error.",
                f"在 {type(model).__name__} 上你的函数回答 {got!r}，但设备混用不是发生在那里。"
                "想一想替身设备会放过哪些混用而不报错。",
            )
    torch.manual_seed(0)
    healthy = Tagger(scale_cls=_BufferScale).to(target)
    got = find_culprit(healthy, token_ids(target))
    if got is not None:
        raise Fail(
            f"on a model without any device mix your function answered {got!r}; it should return None.",
            f"在没有设备混用的模型上你的函数回答了 {got!r}，应当返回 None。",
        )


@exercise(LAB, "fix-weights", 4, "fix the mixing weights", "修好混合权重", target="fixed_distance_weights")
def check_fix_weights(weights_fn) -> None:
    if not callable(weights_fn):
        raise Fail(
            "expected a function like distance_weights(x).", "应当是一个类似 distance_weights(x) 的函数。"
        )
    x = torch.randn(2, 7, DIM, generator=torch.Generator().manual_seed(2))
    got = weights_fn(x)
    if (
        not isinstance(got, torch.Tensor)
        or got.shape != (7, 7)
        or not torch.allclose(got, distance_weights(x))
    ):
        raise Fail(
            "on CPU input the weights must equal distance_weights(x): fix where they are created, "
            "not what they are.",
            "输入在 CPU 上时，权重必须与 distance_weights(x) 相同：要改的是它们创建在哪里，而不是它们的值。",
        )
    target = mismatch_device()
    if weights_fn(x.to(target)).device != target:
        raise Fail(
            f"for an input on {target} the weights are on {weights_fn(x.to(target)).device}: every "
            "tensor created inside must follow the input.",
            f"输入在 {target} 上时，权重却在 {weights_fn(x.to(target)).device} 上："
            "函数里新建的每个张量都要跟着输入走。",
        )
    born_on_cpu = _cpu_births(weights_fn, x.to(target))
    if born_on_cpu:
        raise Fail(
            f"for an input on {target} your function still creates tensors on the CPU and copies them "
            f"(operations: {', '.join(born_on_cpu)}); on a GPU that is a host-to-device copy in every "
            "forward pass. Create the tensors on x's device in the first place.",
            f"输入在 {target} 上时，你的函数仍在 CPU 上创建张量再复制过去（运算：{', '.join(born_on_cpu)}）；"
            "在 GPU 上，这意味着每次前向计算都有一次主机到设备的复制。请一开始就在 x 所在的设备上创建张量。",
        )
    torch.manual_seed(0)
    model = MixerTagger(weights_fn).to(target)
    if _located(model, token_ids(target)) is not None:
        raise Fail(
            "the mixer built with your function still mixes devices (strict_devices finds it).",
            "用你的函数搭出的模型仍有设备混用（strict_devices 能查出来）。",
        )
