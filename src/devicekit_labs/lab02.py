"""Self-checks for lab 02 (models: parameters, buffers, submodules, tensors made in ``forward``).

Each probe builds the learner's module with sizes it picks (two of them, so a hard-coded size fails), runs
it on the CPU, moves it with ``Module.to`` to a GPU (``cuda:1`` where there are two, real or simulated:
`devicekit_labs.machine.probe_devices`, so an answer that hard-codes ``"cuda"``, the current GPU, fails)
and runs it there. It records plain data, the values copied to the CPU; each judge compares the values of
both runs by the rule the exercise states.
"""

from __future__ import annotations

import torch
from torch import nn

from devicekit_labs import Fail, describe_tensor, failed_call, judged, observe
from devicekit_labs.machine import probe_devices

LAB = "02-models"


def _build(cls: object, *args: object) -> dict:
    """Instantiate the learner's class: ``{"module": m}``, or what went wrong as plain data."""
    if not isinstance(cls, type) or not issubclass(cls, nn.Module):
        return {"not_a_module": f"{cls!r:.60}"}
    built = observe(cls, *args)
    if "error" in built:
        return {"error": built["error"]}
    return {"module": built["value"]}


def _judge_built(seen: dict, what_en: str, what_zh: str) -> None:
    if "not_a_module" in seen:
        got = seen["not_a_module"]
        raise Fail(
            f"expected a subclass of nn.Module (the class itself, not an instance), got {got}.",
            f"应当传入 nn.Module 的子类（类本身，而不是实例），实际是 {got}。",
        )
    failed_call(seen, what_en, what_zh)


def _forward(model: nn.Module, x: torch.Tensor) -> dict:
    """Run ``model(x)``: the output described (its values copied to the CPU), or the error."""
    called = observe(model, x)
    if "error" in called:
        return {"error": called["error"]}
    out = describe_tensor(called["value"])
    return {"output": out} if out is not None else {"type": type(called["value"]).__name__}


def _move(model: nn.Module, device: torch.device) -> dict:
    moved = observe(model.to, device)
    return {"error": moved["error"]} if "error" in moved else {}


def _judge_output(run: dict, what_en: str, what_zh: str) -> dict:
    failed_call(run, what_en, what_zh)
    if "output" not in run:
        raise Fail(
            f"{what_en}: the module returned {run['type']}, not a tensor.",
            f"{what_zh}：模块返回的是 {run['type']}，而不是张量。",
        )
    return run["output"]


def dropped_index(message: str, device: str) -> bool:
    """Whether a device error met ``cuda:0`` where the probe asked for another GPU: a ``"cuda"`` or
    ``.cuda()`` in the answer, which means the current GPU, not the one the module or input is on."""
    return device.startswith("cuda:") and device != "cuda:0" and "cuda:0" in message


_CURRENT_GPU = (
    '"cuda" and .cuda() mean the current GPU (cuda:0 unless you changed it), not the GPU the other tensors '
    "are on. ",
    '"cuda" 和 .cuda() 指的是当前 GPU（没改过就是 cuda:0），不是其他张量所在的那块 GPU。',
)


def _fail_on_gpu(device: str, err: dict, fix_en: str, fix_zh: str) -> None:
    if err["kind"] == "error" and "device" in err["message"]:
        en, zh = _CURRENT_GPU if dropped_index(err["message"], device) else ("", "")
        raise Fail(
            f"after model.to({device}) the forward pass failed: {err['message'][:160]} ... {en}{fix_en}",
            f"执行 model.to({device}) 之后，前向计算失败：{err['message'][:160]} ……{zh}{fix_zh}",
        )


# --- exercise 1 ---------------------------------------------------------------------------------------------


def planted_scores(steps: int) -> torch.Tensor:
    """The scores exercise 1 feeds the module: (2, steps, steps), from a fixed seed."""
    return torch.randn(2, steps, steps, generator=torch.Generator().manual_seed(steps))


@judged(LAB, "mask-buffer", 1, "register the mask as a buffer", "把掩码注册为缓冲区", target="CausalScores")
def probe_mask_buffer(causal_scores) -> dict:
    gpus = probe_devices()
    runs = []
    for steps, gpu in ((5, gpus[-1]), (3, gpus[0])):
        built = _build(causal_scores, steps)
        if "module" not in built:
            return {"build": built}
        model = built["module"]
        mask = getattr(model, "mask", None)
        case: dict = {
            "steps": steps,
            "buffers": sorted(name for name, _ in model.named_buffers()),
            "mask_is_plain_tensor": isinstance(mask, torch.Tensor) and "mask" not in model._buffers,
            "mask": describe_tensor(mask, values=False),
            "cpu": _forward(model, planted_scores(steps)),
            "gpu": str(gpu),
        }
        moved = _move(model, gpu)
        if moved:
            case["move"] = moved
        else:
            case["after_move"] = _forward(model, planted_scores(steps).to(gpu))
            mask_after = getattr(model, "mask", None)
            case["mask_device_after_move"] = (
                str(mask_after.device) if isinstance(mask_after, torch.Tensor) else None
            )
        runs.append(case)
    return {"build": {}, "runs": runs}


@probe_mask_buffer.judge
def judge_mask_buffer(seen: dict) -> None:
    _judge_built(seen["build"], "building CausalScores", "创建 CausalScores 时")
    for case in seen["runs"]:
        steps, gpu = case["steps"], case["gpu"]
        if "mask" not in case["buffers"]:
            plain = case["mask_is_plain_tensor"]
            raise Fail(
                "the module has no buffer called 'mask'"
                + (" (it is a plain tensor attribute, which Module.to skips)" if plain else "")
                + ". Register it in __init__, so that it follows the module.",
                "模块里没有名为 'mask' 的缓冲区"
                + ("（它只是普通的张量属性，Module.to 会跳过它）" if plain else "")
                + "。请在 __init__ 里把它注册为缓冲区，让它跟着模块走。",
            )
        mask = case["mask"]
        if mask["shape"] != [steps, steps] or mask["dtype"] != "bool":
            raise Fail(
                f"for CausalScores({steps}) the mask is a {tuple(mask['shape'])} {mask['dtype']} tensor: it "
                f"should be a ({steps}, {steps}) bool mask built from `steps`, True on and below the "
                "diagonal.",
                f"CausalScores({steps}) 的掩码是 {tuple(mask['shape'])} 的 {mask['dtype']} 张量：它应当是由 "
                f"`steps` 决定的 ({steps}, {steps}) bool 掩码，对角线及其下方为 True。",
            )
        out = _judge_output(
            case["cpu"], f"CausalScores({steps}) on the CPU", f"CPU 上的 CausalScores({steps})"
        )
        scores = planted_scores(steps)
        above = torch.ones(steps, steps, dtype=torch.bool).triu(1)
        expected = scores.masked_fill(above, float("-inf"))
        if out["shape"] != list(scores.shape) or not torch.equal(out["values"], expected):
            raise Fail(
                f"for CausalScores({steps}) on the CPU the output is wrong: positions above the diagonal "
                f"must become -inf, the others keep their score (a ({steps}, {steps}) bool mask, True on and "
                "below the diagonal, built from `steps`).",
                f"CausalScores({steps}) 在 CPU 上的输出不对：对角线以上的位置应变成 -inf，其余位置保持原分数"
                f"（一个由 `steps` 决定的 ({steps}, {steps}) bool 掩码，对角线及其下方为 True）。",
            )
        if "move" in case:
            failed_call(case["move"], f"model.to({gpu})", f"model.to({gpu})")
        after = case["after_move"]
        if "error" in after:
            _fail_on_gpu(
                gpu,
                after["error"],
                "Create the mask once in __init__ and register it; do not make a new one in forward.",
                "在 __init__ 里创建一次掩码并注册，不要在 forward 里新建。",
            )
        out = _judge_output(after, f"after model.to({gpu})", f"执行 model.to({gpu}) 之后")
        if out["device"] != gpu or case["mask_device_after_move"] != gpu:
            raise Fail(
                f"after model.to({gpu}) the mask or the output is not on {gpu} (mask on "
                f"{case['mask_device_after_move']}, output on {out['device']}).",
                f"执行 model.to({gpu}) 之后，掩码或输出不在 {gpu} 上（掩码在 {case['mask_device_after_move']}"
                f"，输出在 {out['device']}）。",
            )
        if not torch.equal(out["values"], expected):
            raise Fail(
                f"after model.to({gpu}) the output of CausalScores({steps}) differs from the CPU's: the mask "
                "must keep its values when the module moves.",
                f"执行 model.to({gpu}) 之后，CausalScores({steps}) 的输出与在 CPU 上的不同："
                "模块移动时，掩码的值必须保持不变。",
            )


# --- exercise 2 ---------------------------------------------------------------------------------------------


def planted_input(width: int) -> torch.Tensor:
    return torch.randn(2, width, generator=torch.Generator().manual_seed(width))


def _layers_seen(layers: object) -> dict:
    """What the probe records about ``model.layers``: its kind, length, identity facts and weights."""
    out: dict = {"type": type(layers).__name__, "is_module": isinstance(layers, nn.Module)}
    try:
        items = list(layers)  # type: ignore[call-overload]
    except TypeError:
        return out
    out["length"] = len(items)
    out["distinct"] = len({id(item) for item in items})
    out["linear"] = [
        {"weight": layer.weight.detach().clone(), "bias": layer.bias.detach().clone()}
        if isinstance(layer, nn.Linear) and layer.bias is not None
        else None
        for layer in items
    ]
    return out


@judged(
    LAB, "module-list", 2, "keep the layers in an nn.ModuleList", "用 nn.ModuleList 保存各层", target="Stack"
)
def probe_module_list(stack) -> dict:
    gpus = probe_devices()
    runs = []
    for (width, depth), gpu in zip(((4, 3), (3, 2)), (gpus[-1], gpus[0]), strict=True):
        built = _build(stack, width, depth)
        if "module" not in built:
            return {"build": built}
        model = built["module"]
        case: dict = {
            "width": width,
            "depth": depth,
            "has_layers": hasattr(model, "layers"),
            "layers": _layers_seen(getattr(model, "layers", None)),
            "n_parameters": len(list(model.parameters())),
            "state_keys": sorted(model.state_dict()),
            "cpu": _forward(model, planted_input(width)),
            "gpu": str(gpu),
        }
        moved = _move(model, gpu)
        if moved:
            case["move"] = moved
        else:
            case["after_move"] = _forward(model, planted_input(width).to(gpu))
        runs.append(case)
    return {"build": {}, "runs": runs}


@probe_module_list.judge
def judge_module_list(seen: dict) -> None:
    _judge_built(seen["build"], "building Stack", "创建 Stack 时")
    for case in seen["runs"]:
        width, depth, gpu, layers = case["width"], case["depth"], case["gpu"], case["layers"]
        call = f"Stack({width}, {depth})"
        if not case["has_layers"]:
            raise Fail(f"{call} has no attribute called 'layers'.", f"{call} 没有名为 'layers' 的属性。")
        if not layers["is_module"]:
            raise Fail(
                f"{call} keeps its layers in a plain Python {layers['type']}: parameters(), state_dict() and "
                "Module.to do not see inside it. Use the container module the lesson names.",
                f"{call} 把各层放在普通的 Python {layers['type']} 里：parameters()、state_dict() 和 "
                "Module.to 都看不到里面的层。请使用课程里讲的那种容器模块。",
            )
        if layers.get("length") != depth:
            raise Fail(
                f"{call} should hold {depth} layers, it holds {layers.get('length')}: build them from the "
                "`depth` argument, not a fixed count.",
                f"{call} 应当有 {depth} 层，实际有 {layers.get('length')} 层：层数要由参数 `depth` 决定，"
                "不能写死。",
            )
        if layers["distinct"] < depth:
            raise Fail(
                f"{call} holds {depth} entries but only {layers['distinct']} distinct layer object(s): "
                "`[layer] * depth` repeats ONE layer, so every entry shares the same weight. Create a new "
                "layer for each position.",
                f"{call} 有 {depth} 个条目，却只有 {layers['distinct']} 个不同的层对象：`[layer] * depth` "
                "重复的是同一个层，所有条目共用一份权重。每个位置都要新建一个层。",
            )
        linear = layers["linear"]
        if any(item is None or list(item["weight"].shape) != [width, width] for item in linear):
            raise Fail(
                f"every layer of {call} should be nn.Linear({width}, {width}) with a bias: take the sizes "
                "from the arguments.",
                f"{call} 的每一层都应当是带偏置的 nn.Linear({width}, {width})：大小要取自参数。",
            )
        if case["n_parameters"] != 2 * depth or not any(k.startswith("layers.") for k in case["state_keys"]):
            raise Fail(
                f"{call} should show {2 * depth} parameter tensors in model.parameters() and keys such as "
                f"'layers.0.weight' in state_dict(); it shows {case['n_parameters']} and "
                f"{case['state_keys'][:3]}.",
                f"{call} 的 model.parameters() 里应有 {2 * depth} 个参数张量，state_dict() 里应有 "
                f"'layers.0.weight' 这样的键；实际是 {case['n_parameters']} 个和 {case['state_keys'][:3]}。",
            )
        out = _judge_output(case["cpu"], f"{call} on the CPU", f"CPU 上的 {call}")
        expected = planted_input(width)
        for item in linear:
            expected = torch.relu(expected @ item["weight"].T + item["bias"])
        if out["shape"] != list(expected.shape) or not torch.allclose(out["values"], expected, atol=1e-6):
            raise Fail(
                f"on the CPU the output of {call} is wrong: apply the layers in order, each followed by "
                "torch.relu.",
                f"{call} 在 CPU 上的输出不对：按顺序经过每一层，每层之后接 torch.relu。",
            )
        if "move" in case:
            failed_call(case["move"], f"model.to({gpu})", f"model.to({gpu})")
        after = case["after_move"]
        if "error" in after:
            _fail_on_gpu(
                gpu, after["error"], "Every layer must follow model.to().", "每一层都必须跟随 model.to()。"
            )
        out = _judge_output(after, f"after model.to({gpu})", f"执行 model.to({gpu}) 之后")
        if out["device"] != gpu:
            raise Fail(
                f"after model.to({gpu}) the output is on {out['device']}, not on {gpu}.",
                f"执行 model.to({gpu}) 之后，输出在 {out['device']} 上，而不是 {gpu}。",
            )
        if not torch.allclose(out["values"], expected, atol=1e-6):
            raise Fail(
                f"after model.to({gpu}) the output of {call} differs from the CPU's: the same layers, in the "
                "same order, must run wherever the module is.",
                f"执行 model.to({gpu}) 之后，{call} 的输出与在 CPU 上的不同：无论模块在哪里，"
                "都必须按同样的顺序经过同样的层。",
            )


# --- exercise 3 ---------------------------------------------------------------------------------------------

#: (std, dtype, shape) of the CPU runs of exercise 3: two stds, three dtypes (float16 tells a float32 noise).
_NOISE_RUNS = ((0.5, "float64", (200, 50)), (2.0, "float32", (100, 40)), (0.5, "float16", (100, 40)))
#: The std of the run on a GPU (a float16 input of shape (100, 40) there).
_GPU_STD = 0.5


@judged(
    LAB,
    "noise-forward",
    3,
    "create the noise on the input's device",
    "在输入所在设备上生成噪声",
    target="GaussianNoise",
)
def probe_noise_forward(gaussian_noise) -> dict:
    gpu = probe_devices()[-1]
    runs = []
    for std, dtype, shape in _NOISE_RUNS:
        built = _build(gaussian_noise, std)
        if "module" not in built:
            return {"build": built}
        torch.manual_seed(0)
        x = torch.full(shape, 3.0, dtype=getattr(torch, dtype))
        runs.append({"std": std, "dtype": dtype, "shape": list(shape), "cpu": _forward(built["module"], x)})
    model = _build(gaussian_noise, _GPU_STD)["module"]
    moved = _move(model, gpu)
    on_gpu: dict = {"gpu": str(gpu)}
    if moved:
        on_gpu["move"] = moved
    else:
        on_gpu["run"] = _forward(model, torch.full((100, 40), 3.0, dtype=torch.float16, device=gpu))
    return {"build": {}, "runs": runs, "on_gpu": on_gpu}


def _judge_noise(values: torch.Tensor, std: float, call: str) -> None:
    """``values`` (a run on an input full of 3.0) minus 3 must look like N(0, std²) noise."""
    noise = values.double() - 3.0
    mean, spread = noise.mean().item(), noise.std().item()
    if not (0.9 * std < spread < 1.1 * std and abs(mean) < 0.1 * std):
        raise Fail(
            f"for {call} output - input should be Gaussian noise with mean 0 and std {std}; it has mean "
            f"{mean:.3f} and std {spread:.3f}. Scale standard normal noise by the module's std.",
            f"{call} 的输出减去输入应当是均值 0、标准差 {std} 的高斯噪声；实际均值 {mean:.3f}，"
            f"标准差 {spread:.3f}。请用模块的 std 去缩放标准正态噪声。",
        )


@probe_noise_forward.judge
def judge_noise_forward(seen: dict) -> None:
    _judge_built(seen["build"], "building GaussianNoise", "创建 GaussianNoise 时")
    for case in seen["runs"]:
        std, dtype, shape = case["std"], case["dtype"], tuple(case["shape"])
        call = f"GaussianNoise({std})"
        out = _judge_output(case["cpu"], f"{call} on the CPU", f"CPU 上的 {call}")
        if out["shape"] != list(shape) or out["dtype"] != dtype:
            raise Fail(
                f"for a {dtype} input of shape {shape} the output of {call} is {out['dtype']} "
                f"{tuple(out['shape'])}: the noise must have the input's shape and dtype too (a noise made "
                "in the default dtype changes the output's dtype by type promotion).",
                f"输入是形状 {shape} 的 {dtype}，{call} 的输出却是 {out['dtype']} {tuple(out['shape'])}："
                "噪声也要与输入同形状、同 dtype（用默认 dtype 生成的噪声会经类型提升改变输出的 dtype）。",
            )
        _judge_noise(out["values"], std, call)
    on_gpu = seen["on_gpu"]
    gpu = on_gpu["gpu"]
    if "move" in on_gpu:
        failed_call(on_gpu["move"], f"model.to({gpu})", f"model.to({gpu})")
    run = on_gpu["run"]
    if "error" in run:
        err = run["error"]
        if dropped_index(err["message"], gpu):
            fix = ("Take the device from x: device=x.device.", "设备应当取自 x：device=x.device。")
        else:
            fix = (
                "A factory function that is not told the device creates the noise on the CPU: take it "
                "from x.",
                "工厂函数不指定设备时会在 CPU 上生成噪声：设备应当取自 x。",
            )
        _fail_on_gpu(gpu, err, *fix)
    out = _judge_output(run, f"for an input on {gpu}", f"输入在 {gpu} 上时")
    if out["device"] != gpu or out["dtype"] != "float16":
        raise Fail(
            f"for a float16 input on {gpu} the output is {out['dtype']} on {out['device']}: the noise must "
            "be created with the input's device and dtype.",
            f"输入是 {gpu} 上的 float16，输出却是 {out['device']} 上的 {out['dtype']}："
            "噪声要按输入的设备和 dtype 创建。",
        )
    _judge_noise(out["values"], _GPU_STD, f"GaussianNoise({_GPU_STD}) on {gpu}")


# --- exercise 4 ---------------------------------------------------------------------------------------------


def planted_stage_input() -> torch.Tensor:
    return torch.randn(3, 4, generator=torch.Generator().manual_seed(2))


def _stage_configs() -> list[tuple[torch.device, torch.device, torch.device]]:
    """(first, second, where x starts) for exercise 4: the split each way between the CPU and a GPU, between
    two GPUs (``cuda:1`` first, then ``cuda:0``, so an answer that moves to ``"cuda"`` or its device's type
    fails), and x away from the first stage."""
    cpu = torch.device("cpu")
    gpus = probe_devices()
    g0, g1 = gpus[0], gpus[-1]
    return [(cpu, cpu, cpu), (cpu, g1, cpu), (g1, g0, cpu), (g0, g1, g1), (g1, cpu, g0)]


def _state(module: object) -> dict:
    if not isinstance(module, nn.Module):
        return {}
    return {k: v.detach().to("cpu", copy=True) for k, v in module.state_dict().items()}


@judged(LAB, "two-stage", 4, "run a model on two devices", "让一个模型跑在两个设备上", target="TwoStage")
def probe_two_stage(two_stage) -> dict:
    runs = []
    for first, second, start in _stage_configs():
        torch.manual_seed(0)
        built = _build(two_stage, first, second)
        if "module" not in built:
            return {"build": built}
        model = built["module"]
        stages = {}
        for name in ("stage1", "stage2"):
            stage = getattr(model, name, None)
            is_module = isinstance(stage, nn.Module)
            stages[name] = {
                "is_module": is_module,
                "devices": sorted({str(p.device) for p in stage.parameters()}) if is_module else [],
            }
        case = {
            "first": str(first),
            "second": str(second),
            "start": str(start),
            "stages": stages,
            "forward": _forward(model, planted_stage_input().to(start)),
            "state": (
                {"stage1": _state(model.stage1), "stage2": _state(model.stage2)}
                if (stages["stage1"]["is_module"] and stages["stage2"]["is_module"])
                else {}
            ),
        }
        runs.append(case)
    return {"build": {}, "runs": runs}


@probe_two_stage.judge
def judge_two_stage(seen: dict) -> None:
    _judge_built(seen["build"], "building TwoStage", "创建 TwoStage 时")
    for case in seen["runs"]:  # the all-CPU configuration first: a wrong computation is named as such
        first, second, start = case["first"], case["second"], case["start"]
        call = f"TwoStage({first}, {second})"
        for name in ("stage1", "stage2"):
            if not case["stages"][name]["is_module"]:
                raise Fail(
                    f"the model needs a submodule called {name!r}.", f"模型需要一个名为 {name!r} 的子模块。"
                )
        on1, on2 = case["stages"]["stage1"]["devices"], case["stages"]["stage2"]["devices"]
        if on1 != [first] or on2 != [second]:
            raise Fail(
                f"{call} should put stage1's parameters on {first} and stage2's on {second}; they are on "
                f"{on1} and {on2}. Place each stage on the device its argument names.",
                f"{call} 应当把 stage1 的参数放在 {first} 上、stage2 的放在 {second} 上；实际分别在 "
                f"{on1} 和 {on2}。每一段都要放到对应参数指定的设备上。",
            )
        forward = case["forward"]
        if "error" in forward:
            err = forward["error"]
            if err["kind"] == "error" and "device" in err["message"]:
                dropped = any(dropped_index(err["message"], d) for d in (first, second))
                en, zh = _CURRENT_GPU if dropped else ("", "")
                raise Fail(
                    f"{call} with an input on {start}: the forward pass failed: {err['message'][:160]} ... "
                    f"{en}Each stage must receive its input on its own device: move x to the first stage's "
                    "device and the activations to the second's, taking the devices from the model, never a "
                    "fixed name.",
                    f"{call} 的输入在 {start} 上时前向计算失败：{err['message'][:160]} ……{zh}"
                    "每一段都要在自己的设备上接收输入：把 x 移到第一段所在的设备，"
                    "把中间结果移到第二段所在的设备，设备取自模型，不要写死设备名。",
                )
            failed_call(forward, f"{call} forward", f"{call} 的前向计算")
        out = _judge_output(forward, f"{call} forward", f"{call} 的前向计算")
        if out["device"] != second or out["shape"] != [3, 2]:
            raise Fail(
                f"the output of {call} should be a (3, 2) tensor on {second} (the second stage's device), "
                f"got {tuple(out['shape'])} on {out['device']}.",
                f"{call} 的输出应当是位于 {second}（第二段所在设备）上的 (3, 2) 张量，"
                f"实际是 {out['device']} 上的 {tuple(out['shape'])}。",
            )
        state = case["state"]
        s1, s2 = state.get("stage1", {}), state.get("stage2", {})
        if not ({"0.weight", "0.bias"} <= set(s1) and {"weight", "bias"} <= set(s2)):
            raise Fail(
                "stage1 should be nn.Sequential(nn.Linear(4, 8), nn.ReLU()) and stage2 nn.Linear(8, 2).",
                "stage1 应当是 nn.Sequential(nn.Linear(4, 8), nn.ReLU())，stage2 应当是 nn.Linear(8, 2)。",
            )
        hidden = torch.relu(planted_stage_input() @ s1["0.weight"].T + s1["0.bias"])
        expected = hidden @ s2["weight"].T + s2["bias"]
        if not torch.allclose(out["values"], expected, atol=1e-6):
            raise Fail(
                f"the output of {call} should be stage2(stage1(x)); the forward pass computes something "
                "else.",
                f"{call} 的输出应当等于 stage2(stage1(x))；前向计算的结果却不是这样。",
            )
