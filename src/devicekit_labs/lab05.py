"""Self-checks for lab 05 (debugging a device mismatch), and the models the lab debugs.

The models live here, not in the notebook, because the checks must rebuild them to compute the right
answers for real: each check is a probe (runs the learner's code on planted models and inputs, returns plain
data) and a judge (rebuilds the lab's own models where it needs the tool's verdict, never runs learner code).
Probes and the judges' own runs compute on two GPUs, real or simulated (`devicekit_labs.machine`): the
exercises about where a tensor is born are checked on ``cuda:1``, so an answer that writes ``"cuda"`` (the
current GPU, ``cuda:0``) where it should follow its input fails.
The lab tells learners to find the bugs with devicekit first and to read the source
(``inspect.getsource``) only of the module the tools name, as they would in a model they did not write.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from devicekit.locate import locate_mismatch
from devicekit_labs import Fail, describe_tensor, failed_call, judged, observe
from devicekit_labs.machine import probe_devices, probe_gpus

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
    """The module `locate_mismatch` names for one forward pass, or None when the pass runs."""
    report = locate_mismatch(model, *inputs)
    return None if report is None else report.module


def _gpus() -> tuple[torch.device, torch.device]:
    """(first GPU, last GPU) of the probe's machine: cuda:0 and cuda:1 on two GPUs, real or simulated."""
    gpus = probe_devices()
    return gpus[0], gpus[-1]


def _plain(value: object) -> object:
    """A learner's answer as plain data: strings, None and numbers as they are, anything else by type."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return {"not_plain": type(value).__name__}


def _answer_obs(observation: dict) -> dict:
    if "error" in observation:
        return observation
    return {"value": _plain(observation["value"])}


def _expect_name(seen: dict, what_en: str, what_zh: str) -> object:
    """The observed answer, or Fail when it raised or is not a string / None."""
    failed_call(seen, what_en, what_zh)
    value = seen["value"]
    if isinstance(value, dict):
        raise Fail(
            f"{what_en}: expected the module's qualified name as a string (like 'encoder.layers.0.attn'), "
            f"got {value['not_plain']}.",
            f"{what_zh}：应当给出模块的限定名字符串（形如 'encoder.layers.0.attn'），实际是"
            f" {value['not_plain']}。",
        )
    return value


# --- exercise 1 ------------------------------------------------------------------------------------------


@judged(LAB, "first-module", 1, "name the module", "说出出错的模块", target="first_culprit")
def probe_first_module(answer) -> dict:
    return {"answer": _answer_obs(observe(answer) if callable(answer) else {"value": answer})}


@probe_first_module.judge
def judge_first_module(seen: dict) -> None:
    answer = _expect_name(seen["answer"], "first_culprit()", "first_culprit()")
    if not isinstance(answer, str):
        raise Fail(
            "expected the module's qualified name as a string (like 'encoder.layers.0.attn'), "
            f"got {answer!r}.",
            f"应当给出模块的限定名字符串（形如 'encoder.layers.0.attn'），实际是 {answer!r}。",
        )
    torch.manual_seed(0)
    model = Tagger()
    names = dict(model.named_modules())
    if answer not in names:
        raise Fail(
            f"the model has no module named {answer!r}: copy the name exactly as model.named_modules() "
            "or locate_mismatch prints it (a module, not one of its tensors).",
            f"模型里没有名为 {answer!r} 的模块：请照 model.named_modules() 或 locate_mismatch "
            "打印的名字原样填写（是模块，不是模块里的某个张量）。",
        )
    with probe_gpus():  # the tool's verdict on the GPU, as the learner's notebook saw it
        target = _gpus()[0]
        truth = _located(model.to(target), token_ids(target))
    if answer != truth:
        kind = type(names[answer]).__name__
        raise Fail(
            f"{answer!r} ({kind}) is a real module, but not the innermost one where the devices mix. Run "
            "the tool on the model and the batch and read the name it reports.",
            f"{answer!r}（{kind}）确实存在，但它不是设备混用发生处最内层的模块。把模型和批次交给工具运行一次，"
            "看它报告的名字。",
        )


# --- exercise 2 ------------------------------------------------------------------------------------------

#: Two widths: a fix that hard-codes the lab's width (16) shows on the other one.
SCALE_DIMS = (DIM, 6)


def _stray(model: nn.Module, device: torch.device) -> list[str]:
    """Plain tensor attributes of ``model``'s modules that are not on ``device``."""
    return [
        f"{name}.{key}" if name else key
        for name, module in model.named_modules()
        for key, value in vars(module).items()
        if isinstance(value, torch.Tensor) and value.device != device
    ]


def _probe_one_layer(fixed_cls, dim: int) -> dict:
    gen = torch.Generator().manual_seed(dim)
    x = torch.randn(2, 7, dim, generator=gen)
    scale, shift = torch.rand(dim, generator=gen) + 0.5, torch.randn(dim, generator=gen)
    seen: dict = {"dim": dim, "x": x, "scale": scale, "shift": shift}
    built = observe(fixed_cls, dim)
    if "error" in built:
        return {**seen, "build": built}
    layer = built["value"]
    seen["build"] = {"value": isinstance(layer, nn.Module)}
    if not isinstance(layer, nn.Module):
        return seen
    fresh = observe(layer, x)
    seen["fresh"] = fresh if "error" in fresh else {"value": describe_tensor(fresh["value"])}
    seen["parameters"] = sorted(name for name, _ in layer.named_parameters())
    seen["state_keys"] = sorted(layer.state_dict())
    loaded = observe(layer.load_state_dict, {"scale": scale, "shift": shift})
    if "error" in loaded:
        seen["loaded"] = loaded
    else:
        out = observe(layer, x)
        seen["loaded"] = out if "error" in out else {"value": describe_tensor(out["value"])}
    return seen


@judged(LAB, "fix-scale", 2, "fix the module", "修好这个模块", target="FixedFeatureScale")
def probe_fix_scale(fixed_cls) -> dict:
    if not isinstance(fixed_cls, type) or not issubclass(fixed_cls, nn.Module):
        return {"is_module_class": False, "type": type(fixed_cls).__name__}
    seen: dict = {"is_module_class": True, "layers": [_probe_one_layer(fixed_cls, dim) for dim in SCALE_DIMS]}
    if any("error" in layer["build"] for layer in seen["layers"]):
        return seen
    target = _gpus()[-1]  # the second GPU: a scale that goes to "cuda" (cuda:0) shows there
    torch.manual_seed(0)
    built = observe(lambda: Tagger(scale_cls=fixed_cls).to(target))
    if "error" in built:
        return {**seen, "tagger": built}
    model = built["value"]
    tagger: dict = {"target": str(target), "stray_after_to": _stray(model, target)}
    tagger["saved_keys"] = sorted(model.state_dict())
    run_it = observe(_located, model, token_ids(target))
    tagger["located"] = run_it if "error" in run_it else {"value": run_it["value"]}
    # the other way round: from the GPU back to the CPU
    back = observe(model.to, "cpu")
    tagger["stray_after_back"] = back if "error" in back else {"value": _stray(model, torch.device("cpu"))}
    return {**seen, "tagger": {"value": tagger}}


def _close(seen: dict, want: torch.Tensor) -> bool:
    got = seen.get("value")
    return (
        isinstance(got, dict)
        and got["shape"] == list(want.shape)
        and got["dtype"] == "float32"
        and torch.allclose(got["values"], want)
    )


@probe_fix_scale.judge
def judge_fix_scale(seen: dict) -> None:
    if not seen["is_module_class"]:
        raise Fail(
            "expected a class (an nn.Module subclass) that takes dim, like FeatureScale; "
            f"got {seen['type']}.",
            f"应当是一个类（nn.Module 的子类），像 FeatureScale 一样接收 dim 参数；实际是 {seen['type']}。",
        )
    for layer in seen["layers"]:
        dim = layer["dim"]
        call_en, call_zh = f"FixedFeatureScale({dim})", f"FixedFeatureScale({dim})"
        failed_call(layer["build"], call_en, call_zh)
        if not layer["build"]["value"]:
            raise Fail(f"{call_en} did not return a module.", f"{call_zh} 返回的不是模块。")
        failed_call(
            layer["fresh"], f"{call_en} on an input of width {dim}", f"{call_zh} 作用于宽度为 {dim} 的输入时"
        )
        if not _close(layer["fresh"], layer["x"]):
            raise Fail(
                f"a fresh {call_en} must compute the same as FeatureScale({dim}) (scale 1, shift 0, "
                "float32): "
                "only where the scale lives should change.",
                f"新建的 {call_zh} 要和 FeatureScale({dim}) 算出一样的结果（scale 为 1，shift 为 0，"
                "float32）："
                "只应改变 scale 存放的方式。",
            )
    tagger_obs = seen["tagger"]
    failed_call(tagger_obs, "building Tagger with your class and moving it", "用你的类搭建 Tagger 并移动它时")
    tagger = tagger_obs["value"]
    target = tagger["target"]
    if tagger["stray_after_to"]:
        stray = ", ".join(tagger["stray_after_to"])
        raise Fail(
            f"after model.to({target!r}) these tensors stayed behind: {stray}. model.to() moves parameters "
            "and buffers only.",
            f"执行 model.to({target!r}) 之后，这些张量没有跟着移动：{stray}。model.to() 只移动参数和缓冲区（"
            "buffer）。",
        )
    failed_call(tagger["stray_after_back"], "moving the model back to the CPU", "把模型移回 CPU 时")
    if tagger["stray_after_back"]["value"]:
        stray = ", ".join(tagger["stray_after_back"]["value"])
        raise Fail(
            f"moved from {target} back to the CPU, these tensors stayed on {target}: {stray}. A tensor the "
            "module owns must move both ways with the model.",
            f"模型从 {target} 移回 CPU 时，这些张量留在了 {target} 上：{stray}。模块自己的张量必须随模型来回"
            "移动。",
        )
    failed_call(tagger["located"], "running the tagger built with your class", "运行用你的类搭出的模型时")
    if tagger["located"]["value"] is not None:
        raise Fail(
            f"the tagger built with your class on {target} still mixes devices somewhere (locate_mismatch "
            "names the module).",
            f"用你的类在 {target} 上搭出的模型仍有设备混用的地方（locate_mismatch 能指出是哪个模块）。",
        )
    if "layers.2.scale.scale" not in tagger["saved_keys"]:
        raise Fail(
            "the scale should be saved with the model (it is part of what the layer computes): it is missing "
            "from state_dict().",
            "scale 属于这个层的计算，应当随模型一起保存，但 state_dict() 里没有它。",
        )
    for layer in seen["layers"]:
        if layer["state_keys"] != ["scale", "shift"] or layer["parameters"] != ["shift"]:
            raise Fail(
                "a drop-in replacement keeps FeatureScale's tensors: 'shift' a trained parameter, 'scale' a "
                f"constant that the optimizer must not change, both in state_dict(). Yours has parameters "
                f"{layer['parameters']} and state_dict keys {layer['state_keys']}.",
                "能直接替换的类要保留 FeatureScale 的张量：'shift' 是要训练的参数，'scale' 是优化器不能改动的"
                f"常量，两者都在 state_dict() 里。你的类的参数是 {layer['parameters']}，"
                f"state_dict 的键是 {layer['state_keys']}。",
            )
        failed_call(layer["loaded"], "after load_state_dict", "load_state_dict 之后")
        if not _close(layer["loaded"], layer["x"] * layer["scale"] + layer["shift"]):
            raise Fail(
                "after load_state_dict the layer must compute x * scale + shift with the loaded values.",
                "load_state_dict 之后，这个层必须用载入的值计算 x * scale + shift。",
            )


# --- exercise 3 ------------------------------------------------------------------------------------------


def _culprit_cases() -> list[tuple[str, nn.Module, torch.Tensor]]:
    """(label, model, batch): the models the check asks about, built the same way for probe and judge
    (inside `probe_gpus`: the GPUs are cuda:0 and cuda:1, real or simulated)."""
    first, last = _gpus()
    cpu = torch.device("cpu")
    torch.manual_seed(0)
    cases = [
        ("MixerTagger", MixerTagger().to(last), token_ids(last)),
        ("a model you have not seen", _PositionTagger().to(last), token_ids(last)),
        ("Tagger", Tagger().to(first), token_ids(first)),
        ("a Tagger without the bug", Tagger(scale_cls=_BufferScale).to(last), token_ids(last)),
        ("a Tagger on the CPU, batch on the CPU", Tagger(), token_ids(cpu)),
        (
            f"a Tagger without the bug on {last}, batch left on the CPU",
            Tagger(_BufferScale).to(last),
            token_ids(),
        ),
    ]
    if first != last:
        label = f"a Tagger without the bug on {last}, batch on {first}"
        cases.append((label, Tagger(_BufferScale).to(last), token_ids(first)))
    return cases


@judged(
    LAB, "find-culprit", 3, "a function that names the module", "写一个找出模块的函数", target="find_culprit"
)
def probe_find_culprit(find_culprit) -> dict:
    if not callable(find_culprit):
        return {"callable": False}
    return {
        "callable": True,
        "answers": [_answer_obs(observe(find_culprit, model, batch)) for _, model, batch in _culprit_cases()],
    }


@probe_find_culprit.judge
def judge_find_culprit(seen: dict) -> None:
    if not seen["callable"]:
        raise Fail(
            "expected a function find_culprit(model, batch) that returns a module name or None.",
            "应当是函数 find_culprit(model, batch)，返回模块名或 None。",
        )
    with probe_gpus():  # the tool's verdicts on the same GPUs as the probe's
        truths = [(label, _located(model, batch)) for label, model, batch in _culprit_cases()]
    if len(truths) != len(seen["answers"]):
        raise Fail(
            "the check's observations do not match its cases: run the check again.",
            "自测的观察结果与它的用例对不上：请重新运行自测。",
        )
    for (label, truth), answer in zip(truths, seen["answers"], strict=True):
        got = _expect_name(answer, f"find_culprit on {label}", f"find_culprit 作用于 {label} 时")
        if got == truth:
            continue
        if truth is None:
            raise Fail(
                f"on {label}, where nothing mixes devices, your function answered {got!r}; it should return "
                "None.",
                f"在 {label} 上没有任何设备混用，你的函数却回答了 {got!r}，应当返回 None。",
            )
        raise Fail(
            f"on {label} your function answered {got!r}, which is not the module where the devices mix. "
            "Run the tool on the model and the batch you are given, as they are, and remember that the model "
            "and the batch can be the ones on different devices (two GPUs included).",
            f"在 {label} 上你的函数回答 {got!r}，但设备混用不是发生在那里。请把传进来的模型和批次原样交给"
            "工具运行，也别忘了不一致的可能是模型和批次本身（包括分处两块 GPU 的情形）。",
        )


# --- exercise 4 ------------------------------------------------------------------------------------------

#: Sequence lengths the check plants: a function that hard-codes the lab's 7 shows on the other one.
WEIGHT_STEPS = (7, 5)


@judged(LAB, "fix-weights", 4, "fix the mixing weights", "修好混合权重", target="fixed_distance_weights")
def probe_fix_weights(weights_fn) -> dict:
    if not callable(weights_fn):
        return {"callable": False}
    target = _gpus()[-1]  # the second GPU: weights made on "cuda" (cuda:0) show there
    cases = []
    for steps in WEIGHT_STEPS:
        x = torch.randn(2, steps, DIM, generator=torch.Generator().manual_seed(steps))
        on_cpu = observe(weights_fn, x)
        on_target = observe(weights_fn, x.to(target))
        case: dict = {
            "steps": steps,
            "cpu": on_cpu if "error" in on_cpu else {"value": describe_tensor(on_cpu["value"])},
            "target": on_target if "error" in on_target else {"value": describe_tensor(on_target["value"])},
        }
        if "error" not in on_target:
            case["born_on_cpu"] = _cpu_births(weights_fn, x.to(target))
        cases.append(case)
    torch.manual_seed(0)
    model = MixerTagger(weights_fn).to(target)
    located = observe(_located, model, token_ids(target))
    return {
        "callable": True,
        "target": str(target),
        "cases": cases,
        "located": located if "error" in located else {"value": located["value"]},
    }


def _tensor_or_fail(seen: dict, what_en: str, what_zh: str) -> dict:
    failed_call(seen, what_en, what_zh)
    if seen["value"] is None:
        raise Fail(f"{what_en}: expected a tensor back.", f"{what_zh}：应当返回一个张量。")
    return seen["value"]


@probe_fix_weights.judge
def judge_fix_weights(seen: dict) -> None:
    if not seen["callable"]:
        raise Fail(
            "expected a function like distance_weights(x).", "应当是一个类似 distance_weights(x) 的函数。"
        )
    target = seen["target"]
    for case in seen["cases"]:
        steps = case["steps"]
        got = _tensor_or_fail(
            case["cpu"], f"for a CPU input with {steps} positions", f"输入在 CPU 上、有 {steps} 个位置时"
        )
        positions = torch.arange(steps)
        want = torch.softmax(-(positions[:, None] - positions[None, :]).abs().float(), dim=-1)
        if got["device"] != "cpu":
            raise Fail(
                f"for an input on the CPU the weights are on {got['device']}: every tensor created inside "
                "must follow the input, wherever it is.",
                f"输入在 CPU 上时，权重却在 {got['device']} 上：函数里新建的每个张量都要跟着输入走，无论输入"
                "在哪里。",
            )
        if got["shape"] != [steps, steps] or got["dtype"] != "float32":
            raise Fail(
                f"for a CPU input with {steps} positions the weights must be float32 of shape "
                f"[{steps}, {steps}], like distance_weights(x); yours are {got['dtype']} of shape "
                f"{got['shape']}.",
                f"输入在 CPU 上、有 {steps} 个位置时，权重应当和 distance_weights(x) 一样，是形状为 "
                f"[{steps}, {steps}] 的 float32；你的是形状为 {got['shape']} 的 {got['dtype']}。",
            )
        if not torch.allclose(got["values"], want):
            raise Fail(
                f"for a CPU input with {steps} positions the weights hold other values than "
                "distance_weights(x): fix where they are created, not what they are.",
                f"输入在 CPU 上、有 {steps} 个位置时，权重的数值与 distance_weights(x) 不同："
                "要改的是它们创建在哪里，而不是它们的值。",
            )
        got = _tensor_or_fail(case["target"], f"for an input on {target}", f"输入在 {target} 上时")
        if got["device"].startswith("cuda") and got["device"] != target:
            raise Fail(
                f'for an input on {target} the weights are on {got["device"]}: "cuda" and .cuda() mean '
                "the current GPU (cuda:0 unless you changed it), not the input's. Take the device from the "
                "input: device=x.device.",
                f'输入在 {target} 上时，权重却在 {got["device"]} 上："cuda" 和 .cuda() 指的是当前 GPU'
                "（没改过就是 cuda:0），不是输入所在的那块。设备应当取自输入：device=x.device。",
            )
        if got["device"] != target:
            raise Fail(
                f"for an input on {target} the weights are on {got['device']}: every tensor created inside "
                "must follow the input.",
                f"输入在 {target} 上时，权重却在 {got['device']} 上：函数里新建的每个张量都要跟着输入走。",
            )
        if got["dtype"] != "float32" or got["shape"] != [steps, steps]:
            raise Fail(
                f"for an input on {target} the weights are {got['dtype']} of shape {got['shape']}, not "
                f"float32 ({steps}×{steps}).",
                f"输入在 {target} 上时，权重是形状为 {got['shape']} 的 {got['dtype']}，而不是 "
                f"float32（{steps}×{steps}）。",
            )
        if not torch.allclose(got["values"], want):
            raise Fail(
                f"for an input on {target} the weights hold other values than distance_weights(x).",
                f"输入在 {target} 上时，权重的数值与 distance_weights(x) 不同。",
            )
        if case["born_on_cpu"]:
            ops = ", ".join(case["born_on_cpu"])
            raise Fail(
                f"for an input on {target} your function still creates tensors on the CPU and copies them "
                f"(operations: {ops}); on a GPU that is a host-to-device copy in every forward pass. Create "
                "the "
                "tensors on x's device in the first place.",
                f"输入在 {target} 上时，你的函数仍在 CPU 上创建张量再复制过去（运算：{ops}）；在 GPU 上，这"
                "意味着"
                "每次前向计算都有一次主机到设备的复制。请一开始就在 x 所在的设备上创建张量。",
            )
    failed_call(
        seen["located"], "running MixerTagger with your function", "运行用你的函数搭出的 MixerTagger 时"
    )
    if seen["located"]["value"] is not None:
        raise Fail(
            f"the mixer built with your function on {target} still mixes devices (locate_mismatch names the "
            "module).",
            f"用你的函数在 {target} 上搭出的模型仍有设备混用（locate_mismatch 能指出是哪个模块）。",
        )
