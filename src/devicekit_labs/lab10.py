"""Self-checks for lab 10 (devices under `torch.compile`).

Both checks are two-part (`judged`): the probe compiles or calls the learner's code on inputs it plants,
on the CPU and on a second GPU (``cuda:1``, real or simulated: `devicekit_labs.machine.probe_devices`), and
returns plain data; the judge reads that data only. Eager calls on ``cuda:1`` meet CUDA's device rules and
give real values. ``torch.compile`` cannot run on a simulated GPU (Dynamo cannot trace its tensors), so
every compiled call runs in `outside.outside_simulation`: on a machine with GPUs on ``cuda:1``, without one
on the CPU and on ``meta`` (`outside.compile_device`), the one other device Dynamo can trace there; its
FakeTensors compare the devices of an operation's tensors whatever the devices are
(`_find_common_device`). The probe compiles with ``backend="aot_eager"``: Dynamo and AOTAutograd trace,
PyTorch's eager kernels run the graph, so no C/C++ compiler is needed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping

import torch
from torch import nn

from devicekit_labs import Fail, describe_tensor, failed_call, judged, observe
from devicekit_labs.machine import probe_devices
from devicekit_labs.outside import compile_device, outside_simulation

LAB = "10-compile"
#: The backend of every compiled call in this lab: Dynamo traces as for the default one, no code is generated.
BACKEND = "aot_eager"
#: The prefix `torch.compile`'s wrapper (OptimizedModule) puts before every state_dict key.
PREFIX = "_orig_mod."


#: The points the rotate check plants, one per row. Most are not exactly representable in binary (0.1, 1/3),
#: so a float64 answer that went through float32 comes back with other values; the rotation itself only
#: swaps and negates, so a right answer reproduces them exactly.
PLANTED = [[0.1, 1 / 3], [3.0, -4.0], [-2.7, 0.2], [1 / 7, 1e-3]]


def planted_points(dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The points the rotate check plants, made from Python floats straight in ``dtype`` (on the CPU)."""
    return torch.tensor(PLANTED, dtype=dtype)


def make_model() -> nn.Module:
    """The small model the checkpoint check plants: linear layers and a batch norm (with buffers)."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(2, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))


class TinyLM(nn.Module):
    """The second model the checkpoint check plants: an embedding, attention, a layer norm and a head.

    Its submodules' names begin with letters of ``"_orig_mod."`` (``mixer``, ``out``), so an answer that
    strips the prefix with ``str.lstrip`` (which strips *characters*, not a prefix) eats into them.
    """

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(16, 8)
        self.mixer = nn.MultiheadAttention(8, 2, batch_first=True)
        self.norm = nn.LayerNorm(8)
        self.out = nn.Linear(8, 16)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        mixed, _ = self.mixer(x, x, x, need_weights=False)
        return self.out(self.norm(x + mixed))


def make_lm() -> nn.Module:
    """`TinyLM`, built from seed 0."""
    torch.manual_seed(0)
    return TinyLM()


# --- Exercise 1: a function that stays on its input's device under torch.compile ------------------------


def _rotate_cases() -> list[dict]:
    """Input device, dtype, compiled or not, default device during the call: in the order judged.

    Eager calls run on ``cuda:1`` (real or simulated) and with ``cuda:1`` as the default device: CUDA's
    device rules with real values. Compiled calls run outside the simulation (`outside_simulation`): on the
    CPU, and on the other device `compile_device` gives (``cuda:1`` with real GPUs, else ``meta``), as the
    input's device and as the default device. A function can be right eagerly and wrong when compiled (or
    the other way round: a branch on `torch.compiler.is_compiling()`); each way has its case.
    """
    gpu = str(probe_devices()[-1])
    traced = str(compile_device(gpu))
    cases = [
        ("cpu", "float32", False, "cpu"),
        ("cpu", "float32", True, "cpu"),
        (gpu, "float32", False, "cpu"),
        ("cpu", "float32", False, gpu),
        ("cpu", "float64", True, "cpu"),
        ("cpu", "float32", True, traced),
        (traced, "float32", True, "cpu"),
    ]
    return [
        {"device": device, "dtype": dtype, "compiled": compiled, "default": default}
        for device, dtype, compiled, default in cases
    ]


def _rotate_label(case: dict) -> tuple[str, str]:
    """The case in words, in English and in Chinese."""
    en = ["compiled" if case["compiled"] else "eager", f"x on {case['device']}"]
    zh = ["编译后" if case["compiled"] else "eager 模式", f"x 在 {case['device']} 上"]
    if case["default"] != "cpu":
        en.append(f"default device {case['default']}")
        zh.append(f"默认设备为 {case['default']}")
    if case["dtype"] != "float32":
        en.append(f"in {case['dtype']}")
        zh.append(f"dtype 为 {case['dtype']}")
    return ", ".join(en), "，".join(zh)


@judged(
    LAB,
    "rotate",
    1,
    "rotate points on their own device, compiled",
    "编译后仍在输入所在的设备上旋转点",
    target="rotate",
)
def probe_rotate(rotate: Callable[[torch.Tensor], torch.Tensor]) -> dict:
    """Call ``rotate`` eagerly on the CPU and ``cuda:1``, and compiled (outside the simulation).

    Each case records the planted points before the call (``x``): what the function returns is judged
    against them, so an answer that changes its input in place cannot make its own expectation, and whether
    ``x`` still holds them afterwards (the caller's points are theirs: a rotation returns new ones).
    """
    seen = []
    for case in _rotate_cases():
        context = outside_simulation() if case["compiled"] else contextlib.nullcontext()
        with context:
            seen.append(_rotate_case(rotate, case))
    return {"cases": seen}


def _rotate_case(rotate: Callable[[torch.Tensor], torch.Tensor], case: dict) -> dict:
    """One case of `probe_rotate`, run where the caller put it (inside or outside the simulation)."""
    before = _default_device_setting()
    _reset_compiler()  # a fresh cache: earlier calls in the notebook must not decide this one
    try:
        x = planted_points(getattr(torch, case["dtype"])).to(case["device"])
        entry = {**case, "x": describe_tensor(x)}  # described now, before the learner's code runs
        fn = torch.compile(rotate, backend=BACKEND) if case["compiled"] else rotate
        got, default_after = _call_with_default(fn, x, case["default"], before)
        entry["default_after"] = default_after
        if case["compiled"] and _meta_gap(got):
            # Dynamo keeps a tensor made from data on `meta` (torch.tensor(..., device="meta")) as a real
            # tensor, and FakeTensorMode refuses any operation on a real tensor: a limit of compiling for
            # meta, not the learner's mistake. The eager case on cuda:1 has judged this answer's devices.
            entry["not_judged"] = True
            return entry
        if x.device.type != "meta":
            entry["x_changed"] = not torch.equal(x.detach().cpu(), entry["x"]["values"])
        if "error" in got:
            entry["error"] = got["error"]
        else:
            entry["result"] = describe_tensor(got["value"])
            entry["type"] = type(got["value"]).__name__
        return entry
    finally:
        _restore_default_device(before)
        _reset_compiler()


def _reset_compiler() -> None:
    """``torch.compiler.reset()``, always outside the simulation. Inside it ``torch.cuda.is_available()`` is
    True, and Dynamo's reset then also resets Inductor's CUDA graph trees, importing Inductor to do so
    (``torch._inductor.cudagraph_trees``; ``reset`` in torch/_dynamo/__init__.py (v2.13.0)): about 1 s of CPU
    in the first eager case, for trees a simulated GPU cannot have (nothing compiles inside the simulation).
    """
    with outside_simulation():
        torch.compiler.reset()


#: What Dynamo says when an operation inside the compiled function gets a real tensor made on `meta` there.
META_CONSTANT_GAP = "Please convert all Tensors to FakeTensors"


def _meta_gap(got: dict) -> bool:
    error = got.get("error")
    return error is not None and META_CONSTANT_GAP in error["message"]


def _default_device_setting() -> torch.device | None:
    """The device `torch.set_default_device` set, or None when none is set (the plain CPU default)."""
    context = getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None)
    return None if context is None else torch.get_default_device()


def _restore_default_device(setting: torch.device | None) -> None:
    """Put the default device back as `_default_device_setting` found it: None leaves no mode behind."""
    torch.set_default_device(setting)


def _call_with_default(
    fn: Callable, x: torch.Tensor, default: str, restore: torch.device | None
) -> tuple[dict, str]:
    """``observe(fn, x)`` with the default device set to ``default``; also the default device after it."""
    torch.set_default_device(None if default == "cpu" else default)
    try:
        got = observe(fn, x)
    finally:
        default_after = str(torch.get_default_device())
        _restore_default_device(restore)
    return got, default_after


def _two_devices(message: str) -> bool:
    return any(
        words in message for words in ("same device", "two devices", "different devices", "expected device")
    )


@probe_rotate.judge
def judge_rotate(seen: dict) -> None:
    for case in seen["cases"]:
        if case.get("not_judged"):
            continue
        label, label_zh = _rotate_label(case)
        error = case.get("error")
        if error is not None and error["kind"] == "error":
            first = error["message"].strip().splitlines()
            text = " ".join(line.strip() for line in first[:2])
            if _two_devices(error["message"]):
                raise Fail(
                    f"({label}) one operation got tensors on two devices: {text} A tensor your function "
                    "creates follows the default device, not x: create it with device=x.device (and "
                    "dtype=x.dtype), or derive it from x.",
                    f"（{label_zh}）同一个运算收到了两个设备上的张量：{text} "
                    "函数里新建的张量跟随的是默认设备，而不是 x 所在的设备：创建时写上 device=x.device"
                    "（以及 dtype=x.dtype），或者从 x 派生出来。",
                )
            if "dtype" in error["message"]:
                raise Fail(
                    f"({label}) the dtypes of one operation differ: {text} Create the matrix with "
                    "dtype=x.dtype, so a float64 x gets a float64 matrix.",
                    f"（{label_zh}）同一个运算的 dtype 不一致：{text} 创建矩阵时写上 dtype=x.dtype，这样 "
                    "float64 的 x 得到的也是 float64 的矩阵。",
                )
        failed_call(case, f"({label}) rotate(x)", f"（{label_zh}）rotate(x)")
        if case["default_after"] != case["default"]:
            raise Fail(
                f"({label}) after your function ran, the default device was {case['default_after']}, not "
                f"{case['default']}: it changed a setting the whole program shares (and every change "
                "makes compiled code recompile). Pass device=x.device instead of setting the default.",
                f"（{label_zh}）函数运行之后，默认设备变成了 {case['default_after']}，"
                f"而不是 {case['default']}：它改动了整个程序共享的设置"
                "（而且每次改动都会让编译过的代码重新编译）。请传 device=x.device，"
                "不要去设置默认设备。",
            )
        result, x = case.get("result"), case["x"]
        if result is None:
            raise Fail(
                f"({label}) return a tensor: the rotated points (got a {case.get('type')}).",
                f"（{label_zh}）请返回一个张量，也就是旋转后的点（你返回的是 {case.get('type')}）。",
            )
        if result["device"] != x["device"]:
            raise Fail(
                f"({label}) the result is on {result['device']}, but x is on {x['device']}. Keep the "
                "computation where the data is: no .cpu() or .to('cpu') on the way.",
                f"（{label_zh}）结果在 {result['device']} 上，而 x 在 {x['device']} 上。计算要留在数据所在的"
                "设备上：中途不要调用 .cpu() 或 .to('cpu')。",
            )
        if result["dtype"] != x["dtype"] or result["shape"] != x["shape"]:
            raise Fail(
                f"({label}) the result is {result['dtype']} of shape {result['shape']}; x is {x['dtype']} of "
                f"shape {x['shape']}. Return one rotated point per row, in x's dtype.",
                f"（{label_zh}）结果是形状为 {result['shape']} 的 {result['dtype']} 张量；"
                f"x 是形状为 {x['shape']} 的 {x['dtype']} 张量。每一行返回一个旋转后的点，dtype 与 x 相同。",
            )
        if "values" in result and "values" in x:
            points = x["values"]
            expected = torch.stack((-points[:, 1], points[:, 0]), dim=1)
            if not torch.equal(result["values"], expected):
                # the first point that came back wrong; swapping and negating is exact in any dtype
                row = next(i for i in range(len(points)) if not torch.equal(result["values"][i], expected[i]))
                dtype = x["dtype"]
                point, got = _shortest(points[row], dtype), _shortest(result["values"][row], dtype)
                want = _shortest(expected[row], dtype)
                raise Fail(
                    f"({label}) the values are not (x, y) -> (-y, x): for the point {point} you returned "
                    f"{got}, not {want}. Swapping and negating is exact: compute in x's dtype, on x itself "
                    "(not on a copy in another dtype), and build the result from the points you were given.",
                    f"（{label_zh}）结果不是 (x, y) -> (-y, x)：对点 {point}，你返回的是 {got}，"
                    f"应当是 {want}。交换和取负都是精确的运算：请按 x 的 dtype、直接在 x 上计算"
                    "（不要先转成别的 dtype），并用传进来的那些点构造结果。",
                )
        if case.get("x_changed"):
            raise Fail(
                f"({label}) your function changed x: after the call it no longer holds the points it was "
                "given. "
                "The caller's points are theirs (a batch, a model's input): return the rotation as a new "
                "tensor and leave x as it was (no in-place operations such as copy_ or x[:] = ... on it).",
                f"（{label_zh}）你的函数改动了 x：调用之后，它不再是传进来的那些点。这些点属于调用方"
                "（可能是一个批次，或者模型的输入），函数不该改动它们："
                "请把旋转结果作为新张量返回，让 x 保持原样"
                "（不要对它做 copy_、x[:] = ... 这样的原地操作）。",
            )


def _shortest(row: torch.Tensor, dtype: str) -> str:
    """A row of values for a hint, each in the fewest digits that give back its value in ``dtype``."""
    texts = []
    for value in row.tolist():
        text = repr(value)
        if dtype != "float64":
            for digits in range(1, 18):
                candidate = f"{value:.{digits}g}"
                if torch.tensor(float(candidate), dtype=row.dtype).item() == value:
                    text = candidate
                    break
        texts.append(text)
    return "[" + ", ".join(texts) + "]"


# --- Exercise 2: a compiled module's state dict that loads into a plain model ---------------------------


def _state_dict_cases() -> list[tuple[str, str, str, bool, str]]:
    """The modules handed to the learner's function, in the order judged.

    Each is (label in English, label in Chinese, device, compiled or not, which model: `make_model`'s stack
    of layers, or `TinyLM`, whose names `str.lstrip("_orig_mod.")` eats into).
    """
    gpu = str(probe_devices()[-1])
    return [
        ("torch.compile(model), on cpu", "torch.compile(model)，在 cpu 上", "cpu", True, "stack"),
        (f"torch.compile(model), on {gpu}", f"torch.compile(model)，在 {gpu} 上", gpu, True, "stack"),
        ("a plain model, on cpu", "普通模型，在 cpu 上", "cpu", False, "stack"),
        ("torch.compile(TinyLM()), on cpu", "torch.compile(TinyLM())，在 cpu 上", "cpu", True, "lm"),
        (f"torch.compile(TinyLM()), on {gpu}", f"torch.compile(TinyLM())，在 {gpu} 上", gpu, True, "lm"),
        (f"a plain TinyLM, on {gpu}", f"普通的 TinyLM，在 {gpu} 上", gpu, False, "lm"),
    ]


@judged(
    LAB,
    "plain-state-dict",
    2,
    "a compiled model's checkpoint that loads into a plain model",
    "让编译后模型的检查点能加载进普通模型",
    target="plain_state_dict",
)
def probe_plain_state_dict(plain_state_dict: Callable[[nn.Module], Mapping[str, torch.Tensor]]) -> dict:
    """Hand ``plain_state_dict`` compiled and plain modules; record the keys, devices and a strict load.

    The model's state is copied to the CPU before the call: the answer is compared with that copy, dtype
    included, so one that zeroes or converts the model's own tensors and returns them cannot match itself.
    The models live on ``cuda:1`` (real or simulated) as well as on the CPU, with real values; only the
    ``torch.compile`` call that wraps one runs outside the simulation (it traces nothing until the wrapper
    is called, and the check never calls it).
    """
    seen = []
    for label, label_zh, device, compiled, kind in _state_dict_cases():
        build = make_model if kind == "stack" else make_lm
        model = build().to(device)
        handed = _compiled(model) if compiled else model
        wanted = {key: _snapshot(value) for key, value in model.state_dict().items()}
        got = observe(plain_state_dict, handed)
        entry: dict = {"label": label, "label_zh": label_zh, "device": device, "wanted_keys": list(wanted)}
        entry["model_changed"] = [
            key for key, value in model.state_dict().items() if not _same(value, wanted[key], values=True)
        ]
        if "error" in got:
            entry["error"] = got["error"]
            seen.append(entry)
            continue
        value = got["value"]
        entry["type"] = type(value).__name__
        if not isinstance(value, Mapping):
            seen.append(entry)
            continue
        entry["keys"] = [str(key) for key in value]
        entry["devices"] = {
            str(key): str(v.device) if isinstance(v, torch.Tensor) else type(v).__name__
            for key, v in value.items()
        }
        entry["dtypes"] = {
            str(key): str(v.dtype).removeprefix("torch.") if isinstance(v, torch.Tensor) else type(v).__name__
            for key, v in value.items()
        }
        entry["wanted_dtypes"] = {key: str(v.dtype).removeprefix("torch.") for key, v in wanted.items()}
        entry["same_values"] = {
            str(key): bool(key in wanted and _same(v, wanted[key], values=True)) for key, v in value.items()
        }
        fresh = build().to(device)
        try:
            fresh.load_state_dict(value, strict=True)
            entry["load"] = "ok"
        except Exception as exc:  # the learner's dict, loaded the way a resume does: any failure is data
            entry["load"] = f"{type(exc).__name__}: {exc}"[:600]
        seen.append(entry)
    return {"cases": seen}


def _compiled(model: nn.Module) -> nn.Module:
    """``torch.compile(model)``: the wrapper (OptimizedModule), made outside the simulation."""
    with outside_simulation():
        return torch.compile(model, backend=BACKEND)


def _snapshot(t: torch.Tensor) -> torch.Tensor:
    """A copy of ``t`` on the CPU that no later change to ``t`` reaches."""
    return t.detach().to("cpu", copy=True)


def _same(v: object, wanted: torch.Tensor, values: bool) -> bool:
    """``v`` is a tensor of ``wanted``'s shape and dtype, with ``wanted``'s values when ``values``."""
    if not isinstance(v, torch.Tensor) or v.shape != wanted.shape or v.dtype != wanted.dtype:
        return False
    return not values or torch.equal(v.detach().cpu(), wanted)


@probe_plain_state_dict.judge
def judge_plain_state_dict(seen: dict) -> None:
    for case in seen["cases"]:
        label, label_zh = case["label"], case["label_zh"]
        failed_call(case, f"({label}) plain_state_dict(module)", f"（{label_zh}）plain_state_dict(module)")
        if "keys" not in case:
            raise Fail(
                f"({label}) return a dict from key to tensor, as state_dict() does (got a {case['type']}).",
                f"（{label_zh}）请像 state_dict() 那样返回一个从键到张量的字典"
                f"（你返回的是 {case['type']}）。",
            )
        prefixed = [key for key in case["keys"] if key.startswith(PREFIX)]
        if prefixed:
            raise Fail(
                f"({label}) the key {prefixed[0]!r} still starts with {PREFIX!r}: torch.compile wraps the "
                "model in an OptimizedModule that holds it as `_orig_mod`, so its state_dict() names every "
                "key through that attribute, and a plain model does not load them. Strip the prefix, or "
                "take the state dict of the model inside the wrapper.",
                f"（{label_zh}）键 {prefixed[0]!r} 仍然以 {PREFIX!r} 开头：torch.compile 把模型包在一个 "
                "OptimizedModule 里，模型存放在它的 `_orig_mod` 属性中，"
                "所以它的 state_dict() 给每个键都加上了这个前缀，普通模型加载不了。"
                "去掉这个前缀，或者直接取包装器里面那个模型的 state_dict()。",
            )
        wanted = case["wanted_keys"]
        missing = [key for key in wanted if key not in case["keys"]]
        extra = [key for key in case["keys"] if key not in wanted]
        if missing or extra:
            what = f"the key {missing[0]!r} is missing" if missing else f"the key {extra[0]!r} is unexpected"
            what_zh = f"缺少键 {missing[0]!r}" if missing else f"多出了键 {extra[0]!r}"
            raise Fail(
                f"({label}) {what}: return exactly the keys the uncompiled model's state_dict() has, "
                "parameters and buffers alike. Only a compiled model's keys carry the prefix.",
                f"（{label_zh}）{what_zh}：返回的键要与未编译模型的 state_dict() 完全一致，"
                "参数和缓冲区都算在内。只有编译后模型的键才带前缀。",
            )
        moved = [key for key, device in case["devices"].items() if device != case["device"]]
        if moved:
            key = moved[0]
            raise Fail(
                f"({label}) {key!r} is on {case['devices'][key]}, but the model is on {case['device']}: "
                "leave the tensors where they are. Where a checkpoint lands is decided when it is loaded "
                "(map_location, lesson 6), not by renaming its keys.",
                f"（{label_zh}）{key!r} 在 {case['devices'][key]} 上，而模型在 {case['device']} 上："
                "请让张量留在原处。检查点落到哪个设备，是在加载时决定的（map_location，第 6 课），"
                "与改键名无关。",
            )
        if case.get("model_changed"):
            key = case["model_changed"][0]
            raise Fail(
                f"({label}) after your function ran, the model's {key!r} was not what it was before: "
                "return its parameters and buffers without changing them (no in-place operations, no "
                ".zero_() or .copy_() on the model's tensors).",
                f"（{label_zh}）函数运行之后，模型的 {key!r} 与运行之前不一样了：返回模型的参数和缓冲区即可，"
                "不要改动它们（不要对模型的张量做原地操作，例如 .zero_() 或 .copy_()）。",
            )
        converted = [key for key, dtype in case["dtypes"].items() if dtype != case["wanted_dtypes"].get(key)]
        if converted:
            key = converted[0]
            raise Fail(
                f"({label}) {key!r} is {case['dtypes'][key]}, but the model's is "
                f"{case['wanted_dtypes'][key]}: "
                "keep each tensor's dtype (a checkpoint converted to another dtype is another checkpoint; "
                "num_batches_tracked, for one, is an integer).",
                f"（{label_zh}）{key!r} 的 dtype 是 {case['dtypes'][key]}，而模型里的是 "
                f"{case['wanted_dtypes'][key]}：请保持每个张量原来的 dtype（换了 dtype 的检查点已经是另一份"
                "检查点了；比如 num_batches_tracked 就是整数）。",
            )
        changed = [key for key, same in case["same_values"].items() if not same]
        if changed:
            raise Fail(
                f"({label}) {changed[0]!r} does not hold the model's own values: return the model's "
                "parameters and buffers as they are, under the plain names.",
                f"（{label_zh}）{changed[0]!r} 里不是模型自己的数值："
                "原样返回模型的参数和缓冲区，只是换成不带前缀的键名。",
            )
        if case["load"] != "ok":
            raise Fail(
                f"({label}) a plain model's load_state_dict(..., strict=True) refused it: {case['load']}",
                f"（{label_zh}）普通模型的 load_state_dict(..., strict=True) 拒绝了它：{case['load']}",
            )
