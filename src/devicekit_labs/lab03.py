"""Self-checks for lab 03 (how devices propagate: operands, indices, leaving the device, default device).

The probes run the learner's functions on the CPU and on two GPUs, real or simulated
(`devicekit_labs.machine.probe_devices`: ``cuda:1`` where an index matters, so an answer that hard-codes
``"cuda"``, the current GPU, fails), and record every copy between devices the function made
(`CopyRecorder`): that tells "copied the ids to the host" or "moved the model with .to()" apart from right
answers that return the same values.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from devicekit_labs import Fail, describe_tensor, failed_call, judged, observe
from devicekit_labs.drills import judge_drill, probe_drill
from devicekit_labs.machine import probe_devices, simulating

LAB = "03-propagation"


class CopyRecorder(TorchDispatchMode):
    """Records every copy between devices (``Tensor.to``, ``.cpu()``, ``copy_``, ``.item()``) as it starts.

    ``copies`` is a list of ``(source device, destination device)`` strings, recorded before each copy
    runs. On simulated GPUs a copy's destination reaches dispatch as ``meta:N`` (what C++ sees of
    ``cuda:N``, `devicekit.simulate`); it is recorded as the ``cuda:N`` the learner's code named.
    """

    def __init__(self) -> None:
        super().__init__()
        self.copies: list[tuple[str, str]] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        name = func.__name__ if hasattr(func, "__name__") else str(func)
        packet = str(getattr(func, "_overloadpacket", func))
        if packet.endswith("_to_copy") and args and isinstance(args[0], torch.Tensor):
            target = kwargs.get("device")
            if target is not None and _named(torch.device(target)) != args[0].device:
                self.copies.append((str(args[0].device), str(_named(torch.device(target)))))
        elif (
            packet.endswith("copy_") and len(args) > 1 and all(isinstance(a, torch.Tensor) for a in args[:2])
        ):
            if args[0].device != args[1].device:
                self.copies.append((str(args[1].device), str(args[0].device)))
        elif "_local_scalar_dense" in name and args and isinstance(args[0], torch.Tensor):
            if args[0].device.type != "cpu":
                self.copies.append((str(args[0].device), "cpu"))
        return func(*args, **kwargs)


def _named(device: torch.device) -> torch.device:
    """The device as the learner's code names it: ``cuda:N`` for a simulated GPU's ``meta:N``."""
    if device.type == "meta" and device.index is not None and simulating():
        return torch.device("cuda", device.index)
    return device


def dropped_index(message: str, device: str) -> bool:
    """Whether a device error met ``cuda:0`` where the probe asked for another GPU: a ``"cuda"`` or
    ``.cuda()`` in the answer, which means the current GPU, not the one the tensors are on."""
    return device.startswith("cuda:") and device != "cuda:0" and "cuda:0" in message


_CURRENT_GPU = (
    '"cuda" and .cuda() mean the current GPU (cuda:0 unless you changed it), not the GPU the other tensors '
    "are on. ",
    '"cuda" 和 .cuda() 指的是当前 GPU（没改过就是 cuda:0），不是其他张量所在的那块 GPU。',
)


# --- exercise 1 ---------------------------------------------------------------------------------------------

#: The three possible answers of the drill.
ANSWERS = ("error", "x", "cpu")
#: The answer format of exercise 1, shown in the stub and in every format error.
DRILL_FORMAT = '{"a": "error" or "x" or "cpu", "b": ..., ..., "l": ...}  # "x" = on x\'s device'
_DRILL_FORMAT_ZH = (
    f'{DRILL_FORMAT}（"error" 表示报错，"x" 表示结果在 x 所在的设备上，"cpu" 表示结果在 CPU 上）'
)

#: One digest per letter (see `devicekit_labs.drills`); the answers themselves live in the grader's tier.
_DIGESTS = {
    "a": "98a16c85279d6fff", "b": "5186138ab0d0230b", "c": "70ca0b29740c3a5b", "d": "8f51c1c0adba285e",
    "e": "7e84d8f98e01dc98", "f": "411467a8fe59edc8", "g": "ac33eaeaf3135ff4", "h": "8a39cb6fcc00c979",
    "i": "260e04a726e39bae", "j": "f89c9a5a402dc866", "k": "b7793ea4d021430a", "l": "94f5a9491f8cdd90",
}  # fmt: skip

_PYTHON_NUMBER = (
    "a Python number has no device: an operation with it leaves the result on the tensor's device.",
    "Python 数字没有设备：和它一起运算，结果留在张量所在的设备上。",
)
_ORDINARY_CPU = (
    "in an element-wise operation (arithmetic, comparison, torch.where, whose condition is an operand like "
    "the others) only a 0-dim CPU tensor is exempt; a CPU tensor with one dimension or more, even with one "
    "element, must be on the other operands' device.",
    "在逐元素运算里（算术、比较，以及 torch.where，它的条件也是和其他一样的操作数），只有 0 维的 CPU 张量"
    "属于例外；有一个或更多维度的 CPU 张量，哪怕只有一个元素，也必须和其他操作数在同一个设备上。",
)
_NOT_ELEMENTWISE = (
    "operations that join tensors (torch.cat, torch.stack) are not element-wise: they make no scalar "
    "exception, not even for a 0-dim CPU tensor.",
    "拼接张量的运算（torch.cat、torch.stack）不是逐元素运算：它们没有标量例外，0 维的 CPU 张量也不例外。",
)
_CPU_INDEX = (
    "indices (integer or boolean) may stay on the CPU when they index a tensor on any device; the result "
    "lands on the indexed tensor's device.",
    "索引（整数索引或布尔索引）可以留在 CPU 上去索引任何设备上的张量；结果落在被索引张量所在的设备上。",
)
_RULES = {
    "a": _PYTHON_NUMBER,
    "b": (
        "a 0-dim CPU tensor in an element-wise operation is treated like a Python number: the result stays "
        "on the other tensor's device.",
        "逐元素运算里的 0 维 CPU 张量被当作 Python 数字对待：结果留在另一个张量所在的设备上。",
    ),
    "c": _ORDINARY_CPU,
    "d": _NOT_ELEMENTWISE,
    "e": _NOT_ELEMENTWISE,
    "f": _PYTHON_NUMBER,
    "g": _ORDINARY_CPU,
    "h": _CPU_INDEX,
    "i": _CPU_INDEX,
    "j": (
        "a factory function (torch.zeros, torch.ones, ...) knows nothing about the tensors around it: "
        "without a device it creates on the default device, the CPU.",
        "工厂函数（torch.zeros、torch.ones 等）并不知道周围的张量：不指定设备，就在默认设备（CPU）上创建。",
    ),
    "k": (
        "a `*_like` factory takes shape, dtype and device from the tensor it is given.",
        "`*_like` 工厂函数的形状、dtype 和设备都取自传给它的张量。",
    ),
    "l": _ORDINARY_CPU,
}


@judged(
    LAB,
    "predict-mixes",
    1,
    "predict where each result lands",
    "预测每个结果落在哪里",
    target="my_predictions",
)
def probe_predictions(predictions) -> dict:
    return probe_drill(predictions)


@probe_predictions.judge
def judge_predictions(seen: dict) -> None:
    judge_drill(
        seen,
        lab=LAB,
        key="predict-mixes",
        letters="abcdefghijkl",
        allowed=ANSWERS,
        digests=_DIGESTS,
        rules=_RULES,
        format_en=DRILL_FORMAT,
        format_zh=_DRILL_FORMAT_ZH,
    )


# --- exercise 2 ---------------------------------------------------------------------------------------------


def planted_table() -> torch.Tensor:
    return torch.arange(20.0).reshape(10, 2)


#: The ids of exercise 2, as nested lists (the judge rebuilds the expected rows from them).
_IDS = ([[3, 1], [9, 3]], [4, 0, 7])


def _call_recorded(fn: object, *args: object) -> dict:
    """Call the learner's ``fn`` with every device copy recorded: its value or its error, and the copies."""
    recorder = CopyRecorder()

    def call() -> object:
        with recorder:
            return fn(*args)  # type: ignore[operator]

    called = observe(call)
    out: dict = {"copies": [list(c) for c in recorder.copies]}
    if "error" in called:
        out["error"] = called["error"]
    else:
        out["value"] = called["value"]
    return out


@judged(LAB, "lookup", 2, "look up rows where the ids are", "在 ids 所在的设备上查表", target="lookup")
def probe_lookup(lookup) -> dict:
    gpus = probe_devices()
    cases = []
    for ids_list, gpu in zip(_IDS, (gpus[-1], gpus[0]), strict=True):
        for device in (torch.device("cpu"), gpu):
            ids = torch.tensor(ids_list, device=device)
            called = _call_recorded(lookup, planted_table(), ids)
            case = {"ids": ids_list, "device": str(device), "copies": called["copies"]}
            if "error" in called:
                case["error"] = called["error"]
            else:
                described = describe_tensor(called["value"])
                case["result"] = (
                    described if described is not None else {"type": type(called["value"]).__name__}
                )
            cases.append(case)
    return {"cases": cases}


@probe_lookup.judge
def judge_lookup(seen: dict) -> None:
    for case in seen["cases"]:
        device = case["device"]
        if any(src == device and dst == "cpu" for src, dst in case["copies"]) and device != "cpu":
            raise Fail(
                f"with the ids on {device} your function copies a tensor from {device} to the CPU. Do not "
                "copy the ids to the host (on a GPU that waits for the GPU to finish): move the small table "
                "to the ids' device instead.",
                f"ids 在 {device} 上时，你的函数把张量从 {device} 复制到了 CPU。不要把 ids 复制回主机"
                "（在 GPU 上这会等待 GPU 算完）：应当把较小的查找表移动到 ids 所在的设备上。",
            )
        if "error" in case:
            err = case["error"]
            if err["kind"] == "error" and "device" in err["message"]:
                en, zh = _CURRENT_GPU if dropped_index(err["message"], device) else ("", "")
                raise Fail(
                    f"with the ids on {device} the lookup failed: {err['message'][:150]} ... {en}The indexed "
                    "tensor and the indices must be on one device (CPU indices are the only exception): take "
                    "the device from the ids.",
                    f"ids 在 {device} 上时查表失败：{err['message'][:150]} ……{zh}"
                    "被索引的张量和索引必须在同一个设备上（只有 CPU 上的索引例外）：设备应当取自 ids。",
                )
            failed_call(case, f"with the ids on {device}", f"ids 在 {device} 上时")
        got = case["result"]
        if "device" not in got:
            raise Fail(
                f"expected a tensor back, got {got['type']}.", f"应当返回一个张量，实际是 {got['type']}。"
            )
        if got["device"] != device:
            en, zh = _CURRENT_GPU if dropped_index(got["device"], device) else ("", "")
            raise Fail(
                f"with the ids on {device} the rows came back on {got['device']}: return them on the ids' "
                f"device. {en}".rstrip(),
                f"ids 在 {device} 上时，查到的行却在 {got['device']} 上：请在 ids 所在的设备上返回结果。{zh}",
            )
        ids = torch.tensor(case["ids"])
        want_shape = [*ids.shape, 2]
        if got["shape"] != want_shape or not torch.equal(got["values"], planted_table()[ids]):
            raise Fail(
                "the result is wrong: it should be the rows of table for each id, shape ids.shape + (2,).",
                "结果不对：应当是每个 id 对应的 table 行，形状为 ids.shape + (2,)。",
            )


# --- exercise 3 ---------------------------------------------------------------------------------------------


def _planted_arrays() -> list[torch.Tensor]:
    return [
        torch.tensor([0.5, -1.0, 2.0], requires_grad=True),
        torch.arange(4),
        torch.tensor([[1.25, -3.5]], dtype=torch.float64),
    ]


def _array_seen(value: object) -> dict:
    if not isinstance(value, np.ndarray):
        return {"type": type(value).__name__}
    out: dict = {"type": "ndarray", "dtype": str(value.dtype), "shape": list(value.shape)}
    if value.dtype.kind in "biuf":
        out["values"] = torch.from_numpy(np.array(value, copy=True))
    return out


@judged(LAB, "to-numpy", 3, "hand any tensor to NumPy", "把任意张量交给 NumPy", target="to_numpy")
def probe_to_numpy(to_numpy) -> dict:
    gpu = probe_devices()[-1]
    cases = []
    for tensor in _planted_arrays():
        called = _call_recorded(to_numpy, tensor)
        case = {
            "device": "cpu",
            "dtype": str(tensor.dtype).removeprefix("torch."),
            "requires_grad": tensor.requires_grad,
        }
        case.update(
            {"error": called["error"]} if "error" in called else {"result": _array_seen(called["value"])}
        )
        cases.append(case)
    source = torch.tensor([1.0, 2.0, 3.0], device=gpu, requires_grad=True)
    called = _call_recorded(to_numpy, source)
    case = {"device": str(gpu), "dtype": "float32", "requires_grad": True, "copies": called["copies"]}
    case.update({"error": called["error"]} if "error" in called else {"result": _array_seen(called["value"])})
    cases.append(case)
    return {"cases": cases}


@probe_to_numpy.judge
def judge_to_numpy(seen: dict) -> None:
    planted = _planted_arrays() + [torch.tensor([1.0, 2.0, 3.0])]
    for case, tensor in zip(seen["cases"], planted, strict=True):
        device, dtype = case["device"], case["dtype"]
        what_en = f"for a {dtype} tensor on {device}" + (
            " with requires_grad" if case["requires_grad"] else ""
        )
        what_zh = f"对于 {device} 上的 {dtype} 张量" + (
            "（requires_grad=True）" if case["requires_grad"] else ""
        )
        if "error" in case:
            err = case["error"]
            if err["type"] == "TypeError" and "numpy" in err["message"]:
                raise Fail(
                    f"{what_en}: {err['message']} NumPy reads host memory only: copy the tensor there first.",
                    f"{what_zh}：{err['message']} NumPy 只能读主机内存：先把张量复制过去。",
                )
            if "requires grad" in err["message"]:
                raise Fail(
                    f"{what_en}: {err['message'][:120]} A tensor that autograd tracks must be detached "
                    "first.",
                    f"{what_zh}：{err['message'][:120]} 被 autograd 跟踪的张量要先分离出来（detach）。",
                )
            failed_call(case, what_en, what_zh)
        got = case["result"]
        if got["type"] != "ndarray":
            raise Fail(
                f"{what_en}: expected a numpy.ndarray, got {got['type']}.",
                f"{what_zh}：应当返回 numpy.ndarray，实际是 {got['type']}。",
            )
        want = tensor.detach().numpy()
        if got["dtype"] != str(want.dtype) or got["shape"] != list(want.shape):
            raise Fail(
                f"{what_en}: the array is {got['dtype']} {tuple(got['shape'])}, the tensor {want.dtype} "
                f"{tuple(want.shape)}: keep the tensor's dtype and shape (going through Python lists turns "
                "float32 into float64).",
                f"{what_zh}：数组是 {got['dtype']} {tuple(got['shape'])}，张量却是 {want.dtype} "
                f"{tuple(want.shape)}：要保留张量的 dtype 和形状（经过 Python 列表会把 float32 变成 float64）"
                "。",
            )
        if "values" not in got or not torch.equal(got["values"], torch.from_numpy(want)):
            raise Fail(
                f"{what_en}: the array holds different values from the tensor.",
                f"{what_zh}：数组里的值与张量不一致。",
            )


# --- exercise 4 ---------------------------------------------------------------------------------------------


def _build_seen(build: object, device: torch.device, default: torch.device | None) -> dict:
    """Call ``build(device)`` with this thread's default device set to ``default``; record what it left."""
    before = torch.get_default_device()
    if default is not None:
        torch.set_default_device(default)
    recorder = CopyRecorder()
    try:
        with recorder:
            called = observe(build, device)  # type: ignore[arg-type]
        left = torch.get_default_device()
    finally:
        torch.set_default_device(None if before.type == "cpu" else before)
    seen: dict = {
        "device": str(device),
        "default_before": str(torch.device(default) if default is not None else before),
        "default_after": str(left),
        "copies": [list(c) for c in recorder.copies],
    }
    if "error" in called:
        seen["error"] = called["error"]
        return seen
    result = called["value"]
    seen["is_pair"] = isinstance(result, tuple) and len(result) == 2
    if not seen["is_pair"]:
        seen["type"] = type(result).__name__
        return seen
    model, loader = result
    seen["model_is_linear"] = isinstance(model, nn.Linear) and (model.in_features, model.out_features) == (
        4,
        2,
    )
    seen["parameter_devices"] = (
        sorted({str(p.device) for p in model.parameters()}) if isinstance(model, nn.Module) else []
    )
    iterated = observe(lambda: [int(v) for batch in loader for v in batch])
    if "error" in iterated:
        seen["loader_error"] = iterated["error"]
    else:
        seen["loader_values"] = iterated["value"]
    return seen


@judged(LAB, "default-device", 4, "scope the default device", "限定默认设备的作用范围", target="build")
def probe_default_device(build) -> dict:
    gpu = probe_devices()[-1]
    cpu = torch.device("cpu")
    # build(gpu) as the lab calls it, on cuda:1 so that a scope made of the device's type alone (cuda:0)
    # fails; build(cpu) while the caller's default is that GPU, so that "restore the CPU" and "restore what
    # was there" can be told apart
    return {"runs": [_build_seen(build, gpu, None), _build_seen(build, cpu, gpu)]}


@probe_default_device.judge
def judge_default_device(seen: dict) -> None:
    for run in seen["runs"]:
        device, before, after = run["device"], run["default_before"], run["default_after"]
        if after != before:
            raise Fail(
                f"build({device}) was called with this thread's default device {before}, and left it at "
                f"{after}: the setting leaked out of the function and reaches every later factory call (and "
                "the DataLoader). Limit it to the model, and give back what was there before, whatever it "
                "was.",
                f"调用 build({device}) 时本线程的默认设备是 {before}，返回后却变成了 {after}：这个设置泄漏到"
                "了函数外，之后每一次工厂函数调用（以及 DataLoader）都会受影响。请只让它作用于创建模型，"
                "并恢复原来的默认设备（无论原来是什么）。",
            )
        failed_call(run, f"build({device})", f"build({device})")
        if not run["is_pair"] or not run["model_is_linear"]:
            raise Fail(
                "build() should return (model, loader), the model an nn.Linear(4, 2).",
                "build() 应当返回 (model, loader)，其中 model 是 nn.Linear(4, 2)。",
            )
        if run["parameter_devices"] != [device]:
            on = run["parameter_devices"]
            dropped = dropped_index(" ".join(on), device)
            raise Fail(
                f"for build({device}) the model's parameters are on {on}, not on {device}."
                + (
                    ' "cuda" (a device type without an index) means the current GPU, cuda:0 unless you '
                    "changed it, not the device build() was given: use `device` itself."
                    if dropped
                    else ""
                ),
                f"build({device}) 的模型参数在 {on} 上，而不是 {device}。"
                + (
                    '"cuda"（只有设备类型、没有编号）指的是当前 GPU（没改过就是 cuda:0），'
                    "不是传给 build() 的那个设备：请直接使用 `device`。"
                    if dropped
                    else ""
                ),
            )
        moved = [c for c in run["copies"] if c[1] == device]
        if moved:
            raise Fail(
                f"build({device}) copies tensors from {moved[0][0]} to {device}: the parameters were created "
                "elsewhere and then moved. Create them on the device directly, as the exercise asks.",
                f"build({device}) 把张量从 {moved[0][0]} 复制到了 {device}：参数先在别处创建、再移动过去。"
                "请按题目要求直接在目标设备上创建它们。",
            )
        if "loader_error" in run:
            err = run["loader_error"]
            raise Fail(
                f"iterating the loader failed: {err['type']}: {err['message'][:150]}. Create and use the "
                "loader outside the default-device scope.",
                f"遍历 loader 失败：{err['type']}: {err['message'][:150]}。请在默认设备的作用范围之外创建和使"
                "用 loader。",
            )
        if sorted(run["loader_values"]) != list(range(8)):
            raise Fail(
                f"one pass over the loader should yield 0..7 once each, got {sorted(run['loader_values'])}.",
                f"遍历一遍 loader 应当恰好得到 0 到 7 各一次，实际得到 {sorted(run['loader_values'])}。",
            )
