"""Self-checks for lab 02 (models: parameters, buffers, submodules, tensors made in ``forward``).

Each check builds the learner's module, moves it with ``Module.to`` to this runner's other device (the
accelerator, or ``meta``) and runs it there under `devicekit.strict_devices`, so a mix that meta would let
through still fails; values are compared on the CPU, where there are numbers.
"""

from __future__ import annotations

import torch
from torch import nn

from devicekit.device import mismatch_device
from devicekit.strict import strict_devices
from devicekit_labs import Fail, exercise

LAB = "02-models"


def _module(cls: object, *args: object) -> nn.Module:
    if not isinstance(cls, type) or not issubclass(cls, nn.Module):
        raise Fail(
            f"expected a subclass of nn.Module (the class itself, not an instance), got {cls!r:.60}.",
            f"应当传入 nn.Module 的子类（类本身，而不是实例），实际是 {cls!r:.60}。",
        )
    return cls(*args)


def _tensor(value: object, what_en: str, what_zh: str) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise Fail(
            f"{what_en} should be a tensor, got {type(value).__name__}.",
            f"{what_zh}应当是张量，实际是 {type(value).__name__}。",
        )
    return value


def _on_other_device(model: nn.Module, x: torch.Tensor, fix_en: str, fix_zh: str) -> torch.Tensor:
    """Run ``model`` (already moved) on ``x`` under strict_devices; a device error becomes a Fail."""
    try:
        with strict_devices():
            return model(x)
    except RuntimeError as err:
        raise Fail(
            f"after model.to({x.device}) the forward pass failed: {str(err)[:160]} ... {fix_en}",
            f"执行 model.to({x.device}) 之后，前向计算失败：{str(err)[:160]} ……{fix_zh}",
        ) from None


# --- exercise 1 ---------------------------------------------------------------------------------------------


def _expected_scores(scores: torch.Tensor) -> torch.Tensor:
    steps = scores.shape[-1]
    mask = torch.ones(steps, steps, dtype=torch.bool).tril()
    return torch.where(mask, scores, float("-inf"))


@exercise(LAB, "mask-buffer", 1, "register the mask as a buffer", "把掩码注册为缓冲区", target="CausalScores")
def check_mask_buffer(causal_scores) -> None:
    model = _module(causal_scores, 5)
    buffers = dict(model.named_buffers())
    if "mask" not in buffers:
        plain = isinstance(getattr(model, "mask", None), torch.Tensor)
        raise Fail(
            "the module has no buffer called 'mask'"
            + (" (it is a plain tensor attribute, which Module.to skips)" if plain else "")
            + ". Register it in __init__ with self.register_buffer(...).",
            "模块里没有名为 'mask' 的缓冲区"
            + ("（它只是普通的张量属性，Module.to 会跳过它）" if plain else "")
            + "。请在 __init__ 里用 self.register_buffer(...) 注册它。",
        )
    scores = torch.randn(2, 5, 5, generator=torch.Generator().manual_seed(0))
    got = _tensor(model(scores), "the output", "输出")
    if got.shape != scores.shape or not torch.equal(got, _expected_scores(scores)):
        raise Fail(
            "on the CPU the output is wrong: positions above the diagonal must become -inf, the others "
            "keep their score (a (5, 5) bool mask, True on and below the diagonal).",
            "在 CPU 上输出不对：对角线以上的位置应变成 -inf，其余位置保持原分数"
            "（一个 (5, 5) 的 bool 掩码，对角线及其下方为 True）。",
        )
    other = mismatch_device()
    model.to(other)
    got = _on_other_device(
        model,
        scores.to(other),
        "Create the mask once in __init__ and register it; do not make a new one in forward.",
        "在 __init__ 里创建一次掩码并注册，不要在 forward 里新建。",
    )
    if _tensor(got, "the output", "输出").device != other or model.mask.device != other:
        raise Fail(
            f"after model.to({other}) the mask or the output is not on {other}.",
            f"执行 model.to({other}) 之后，掩码或输出不在 {other} 上。",
        )


# --- exercise 2 ---------------------------------------------------------------------------------------------


@exercise(
    LAB, "module-list", 2, "keep the layers in an nn.ModuleList", "用 nn.ModuleList 保存各层", target="Stack"
)
def check_module_list(stack) -> None:
    model = _module(stack, 4, 3)
    n_params = len(list(model.parameters()))
    if n_params != 6:
        raise Fail(
            f"Stack(4, 3) should have 3 Linear layers, 6 parameter tensors in model.parameters(); it has "
            f"{n_params}. Layers kept in a plain Python list are invisible to parameters(), state_dict() "
            "and Module.to.",
            f"Stack(4, 3) 应有 3 个 Linear 层，model.parameters() 里应有 6 个参数张量，实际有 {n_params} 个。"
            "放在普通 Python 列表里的层，parameters()、state_dict() 和 Module.to 都看不见。",
        )
    keys = set(model.state_dict())
    if not {"layers.0.weight", "layers.2.bias"} <= keys:
        raise Fail(
            f"state_dict() should have keys such as 'layers.0.weight', got {sorted(keys)[:4]}. Keep the "
            "layers in an attribute called 'layers'.",
            f"state_dict() 里应当有 'layers.0.weight' 这样的键，实际是 {sorted(keys)[:4]}。"
            "请把各层放在名为 'layers' 的属性里。",
        )
    x = torch.randn(2, 4, generator=torch.Generator().manual_seed(1))
    expected = x
    for layer in model.layers:
        expected = torch.relu(layer(expected))
    got = _tensor(model(x), "the output", "输出")
    if got.shape != expected.shape or not torch.allclose(got, expected):
        raise Fail(
            "on the CPU the output is wrong: apply the layers in order, each followed by torch.relu.",
            "在 CPU 上输出不对：按顺序经过每一层，每层之后接 torch.relu。",
        )
    other = mismatch_device()
    model.to(other)
    got = _on_other_device(
        model, x.to(other), "Every layer must follow model.to().", "每一层都必须跟随 model.to()。"
    )
    if got.device != other:
        raise Fail(
            f"the output is on {got.device}, not on {other}.", f"输出在 {got.device} 上，而不是 {other}。"
        )


# --- exercise 3 ---------------------------------------------------------------------------------------------


@exercise(
    LAB,
    "noise-forward",
    3,
    "create the noise on the input's device",
    "在输入所在设备上生成噪声",
    target="GaussianNoise",
)
def check_noise_forward(gaussian_noise) -> None:
    model = _module(gaussian_noise, 0.5)
    torch.manual_seed(0)
    x = torch.full((200, 50), 3.0, dtype=torch.float64)
    got = _tensor(model(x), "the output", "输出")
    if got.shape != x.shape or got.dtype != x.dtype:
        raise Fail(
            f"for a float64 input of shape (200, 50) the output is {got.dtype} {tuple(got.shape)}: the "
            "noise must have the input's shape and dtype too.",
            f"输入是形状 (200, 50) 的 float64，输出却是 {got.dtype} {tuple(got.shape)}："
            "噪声也要与输入同形状、同 dtype。",
        )
    noise = got - x
    if not (0.45 < noise.std().item() < 0.55 and abs(noise.mean().item()) < 0.05):
        raise Fail(
            f"output - input should be Gaussian noise with mean 0 and std 0.5; it has mean "
            f"{noise.mean().item():.3f} and std {noise.std().item():.3f}.",
            f"输出减去输入应当是均值 0、标准差 0.5 的高斯噪声；实际均值 {noise.mean().item():.3f}，"
            f"标准差 {noise.std().item():.3f}。",
        )
    other = mismatch_device()
    model.to(other)
    got = _on_other_device(
        model,
        torch.zeros(4, 3, device=other),
        "A factory function without device= creates the noise on the CPU: take the device from x.",
        "工厂函数不传 device= 时会在 CPU 上生成噪声：设备应当取自 x。",
    )
    if got.device != other:
        raise Fail(
            f"the output is on {got.device}, not on {other}.", f"输出在 {got.device} 上，而不是 {other}。"
        )


# --- exercise 4 ---------------------------------------------------------------------------------------------


def _devices_of(module: nn.Module) -> set[torch.device]:
    return {p.device for p in module.parameters()}


@exercise(LAB, "two-stage", 4, "run a model on two devices", "让一个模型跑在两个设备上", target="TwoStage")
def check_two_stage(two_stage) -> None:
    other = mismatch_device()
    cpu = torch.device("cpu")
    torch.manual_seed(0)
    model = _module(two_stage, cpu, other)
    for name in ("stage1", "stage2"):
        if not isinstance(getattr(model, name, None), nn.Module):
            raise Fail(
                f"the model needs a submodule called {name!r}.", f"模型需要一个名为 {name!r} 的子模块。"
            )
    first_on, second_on = _devices_of(model.stage1), _devices_of(model.stage2)
    if first_on != {cpu} or second_on != {other}:
        shown = f"{sorted(map(str, first_on))}", f"{sorted(map(str, second_on))}"
        raise Fail(
            f"TwoStage(cpu, {other}) should put stage1's parameters on cpu and stage2's on {other}; they are "
            f"on {shown[0]} and {shown[1]}.",
            f"TwoStage(cpu, {other}) 应当把 stage1 的参数放在 cpu 上、stage2 的放在 {other} 上；"
            f"实际分别在 {shown[0]} 和 {shown[1]}。",
        )
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(2))
    try:
        with strict_devices():
            out = model(x)
    except RuntimeError as err:
        raise Fail(
            f"the forward pass failed: {str(err)[:160]} ... Move the activations to the second stage's "
            "device between the stages.",
            f"前向计算失败：{str(err)[:160]} ……两段之间，要把中间结果移动到第二段所在的设备上。",
        ) from None
    if _tensor(out, "the output", "输出").device != other or out.shape != (3, 2):
        raise Fail(
            f"the output should be a (3, 2) tensor on {other} (the second stage's device), got "
            f"{tuple(out.shape)} on {out.device}.",
            f"输出应当是位于 {other}（第二段所在设备）上的 (3, 2) 张量，"
            f"实际是 {out.device} 上的 {tuple(out.shape)}。",
        )
    same = _module(two_stage, cpu, cpu)
    got = same(x)
    if not torch.allclose(got, same.stage2(same.stage1(x))):
        raise Fail(
            "on one device the output should be stage2(stage1(x)); the forward pass computes something else.",
            "两段都在同一设备上时，输出应当等于 stage2(stage1(x))；前向计算的结果却不是这样。",
        )
