"""Self-checks for lab 03 (how devices propagate: operands, indices, leaving the device, default device).

The truth of every prediction is computed by running the mix on this runner's other device (the
accelerator, or ``meta``); the mixes in the drill are ones where meta and CUDA agree (recorded on CUDA in
``results/cuda-messages.json``), so the same answers are right on both.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from devicekit.device import mismatch_device
from devicekit.strict import strict_devices
from devicekit_labs import Fail, exercise

LAB = "03-propagation"

#: The three possible answers of the drill.
ANSWERS = ("error", "x", "cpu")
#: The answer format of exercise 1, shown in the stub and in every format error.
DRILL_FORMAT = '{"a": "x", "b": "error", "c": "cpu", ...}  # "error" = raises, "x" = on x\'s device, "cpu"'


def drill_cases(acc: torch.device) -> dict[str, Callable[[], torch.Tensor]]:
    """The twelve mixes of exercise 1, as zero-argument callables, with ``x`` on device ``acc``."""
    x = torch.ones(3, device=acc)
    return {
        "a": lambda: x * 2,
        "b": lambda: x + torch.tensor(2.0),
        "c": lambda: x + torch.tensor([2.0]),
        "d": lambda: torch.cat([x, torch.zeros(3)]),
        "e": lambda: torch.stack([x.sum(), torch.tensor(0.0)]),
        "f": lambda: torch.where(x > 1, x, 0.0),
        "g": lambda: torch.where(torch.tensor([True, False, True]), x, x),
        "h": lambda: x[torch.tensor([0, 2])],
        "i": lambda: x[torch.tensor([True, False, True])],
        "j": lambda: torch.zeros(x.shape),
        "k": lambda: torch.zeros_like(x),
        "l": lambda: x > torch.zeros(3),
    }


def outcome(case: Callable[[], torch.Tensor], acc: torch.device) -> str:
    """What one mix does on this runner: "error", "x" (the output is on ``acc``) or "cpu"."""
    try:
        out = case()
    except RuntimeError:
        return "error"
    if out.device == acc:
        return "x"
    if out.device.type == "cpu":
        return "cpu"
    raise AssertionError(f"unexpected output device {out.device}")


@exercise(
    LAB,
    "predict-mixes",
    1,
    "predict where each result lands",
    "预测每个结果落在哪里",
    target="my_predictions",
)
def check_predictions(predictions) -> None:
    if callable(predictions):
        predictions = predictions()
    keys = set("abcdefghijkl")
    if not isinstance(predictions, dict) or set(predictions) != keys:
        got = sorted(map(repr, predictions)) if isinstance(predictions, dict) else type(predictions).__name__
        raise Fail(
            f"expected a dict with the keys 'a' to 'l', got {got}. Return it in this format: {DRILL_FORMAT}",
            f"应当返回一个字典，键为 'a' 到 'l'，实际得到的是 {got}。请按这个格式返回：{DRILL_FORMAT}"
            '（"error" 表示报错，"x" 表示结果在 x 所在的设备上，"cpu" 表示结果在 CPU 上）',
        )
    bad = sorted(k for k, v in predictions.items() if v not in ANSWERS)
    if bad:
        shown = ", ".join(f"{k!r}: {predictions[k]!r}" for k in bad)
        raise Fail(
            f'each value must be "error", "x" or "cpu", not {shown}. Format: {DRILL_FORMAT}',
            f'每个值都必须是 "error"、"x" 或 "cpu"，而不是 {shown}。格式：{DRILL_FORMAT}',
        )
    acc = mismatch_device()
    truth = {key: outcome(case, acc) for key, case in drill_cases(acc).items()}
    wrong = [k for k in sorted(keys) if predictions[k] != truth[k]]
    if wrong:
        said_x_got_error = sum(predictions[k] == "x" and truth[k] == "error" for k in wrong)
        raise Fail(
            f"{len(wrong)} of the 12 predictions are wrong ({said_x_got_error} of them predicted a result "
            "where the operation raises). Hint: only Python numbers and 0-dim CPU tensors in element-wise "
            "operations are exempt; CPU indices may index a tensor on any device; a factory function without "
            "device= creates on the CPU.",
            f"12 个预测中有 {len(wrong)} 个不对（其中 {said_x_got_error} 个你预测会得到结果，"
            "实际却会报错）。提示："
            "只有 Python 数字和逐元素运算中的 0 维 CPU 张量属于例外；CPU 上的索引可以索引任何设备上的张量；"
            "工厂函数不传 device= 就在 CPU 上创建。",
        )


# --- exercise 2 ---------------------------------------------------------------------------------------------


@exercise(LAB, "lookup", 2, "look up rows where the ids are", "在 ids 所在的设备上查表", target="lookup")
def check_lookup(lookup) -> None:
    table = torch.arange(20.0).reshape(10, 2)
    ids = torch.tensor([[3, 1], [9, 3]])
    got = lookup(table, ids)
    if not isinstance(got, torch.Tensor) or got.shape != (2, 2, 2) or not torch.equal(got, table[ids]):
        raise Fail(
            "on the CPU the result is wrong: it should be the rows of table for each id, "
            "shape ids.shape + (2,).",
            "在 CPU 上结果不对：应当是每个 id 对应的 table 行，形状为 ids.shape + (2,)。",
        )
    other = mismatch_device()
    try:
        with strict_devices():
            got = lookup(table, ids.to(other))
    except NotImplementedError:  # meta: ids.cpu() has no data to copy
        raise Fail(
            "do not copy the ids to the CPU (on a GPU that waits for the GPU to finish): move the small "
            "table to the ids' device instead.",
            "不要把 ids 复制回 CPU（在 GPU 上这会等待 GPU 算完）："
            "应当把较小的查找表移动到 ids 所在的设备上。",
        ) from None
    except RuntimeError as err:
        raise Fail(
            f"with the ids on {other} the lookup failed: {str(err)[:150]} ... The indexed tensor and the "
            "indices must be on one device (CPU indices are the only exception).",
            f"ids 在 {other} 上时查表失败：{str(err)[:150]} ……被索引的张量和索引必须在同一个设备上"
            "（只有 CPU 上的索引例外）。",
        ) from None
    if not isinstance(got, torch.Tensor) or got.device != other:
        where = got.device if isinstance(got, torch.Tensor) else type(got).__name__
        raise Fail(
            f"with the ids on {other} the rows came back on {where}: return them on the ids' device.",
            f"ids 在 {other} 上时，查到的行却在 {where} 上：请在 ids 所在的设备上返回结果。",
        )


# --- exercise 3 ---------------------------------------------------------------------------------------------


@exercise(LAB, "to-numpy", 3, "hand any tensor to NumPy", "把任意张量交给 NumPy", target="to_numpy")
def check_to_numpy(to_numpy) -> None:
    weights = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    for tensor in (weights, torch.arange(4)):
        got = to_numpy(tensor)
        if not isinstance(got, np.ndarray):
            raise Fail(
                f"expected a numpy.ndarray, got {type(got).__name__}.",
                f"应当返回 numpy.ndarray，实际是 {type(got).__name__}。",
            )
        if not np.array_equal(got, tensor.detach().numpy()):
            raise Fail("the array holds different values from the tensor.", "数组里的值与张量不一致。")
    other = mismatch_device()
    source = torch.ones(3, device=other)
    try:
        got = to_numpy(source)
    except NotImplementedError as err:
        if other.type == "meta" and "meta" in str(err):
            return  # meta has no data to copy: the copy to the host was attempted, which is the point
        raise
    except TypeError as err:
        raise Fail(
            f"for a tensor on {other}: {err} NumPy reads host memory only.",
            f"对于 {other} 上的张量：{err} NumPy 只能读主机内存。",
        ) from None
    if not isinstance(got, np.ndarray) or not np.array_equal(got, np.ones(3, dtype=np.float32)):
        raise Fail(
            f"for a tensor on {other} the result is not the right array.",
            f"对于 {other} 上的张量，返回的不是正确的数组。",
        )


# --- exercise 4 ---------------------------------------------------------------------------------------------


@exercise(LAB, "default-device", 4, "scope the default device", "限定默认设备的作用范围", target="build")
def check_default_device(build) -> None:
    other = mismatch_device()
    before = torch.get_default_device()
    try:
        result = build(other)
        leaked = torch.get_default_device()
    finally:
        torch.set_default_device(None if before.type == "cpu" else before)
    if leaked != before:
        raise Fail(
            f"after build() the default device of this thread is {leaked}: the setting leaked out of the "
            "function and will reach every later factory call (and the DataLoader). Limit it to the model.",
            f"build() 返回后，本线程的默认设备变成了 {leaked}：这个设置泄漏到了函数外，之后每一次工厂函数调用"
            "（以及 DataLoader）都会受影响。请只让它作用于创建模型。",
        )
    if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], nn.Module)):
        raise Fail("build() should return (model, loader).", "build() 应当返回 (model, loader)。")
    model, loader = result
    devices = {p.device for p in model.parameters()}
    if devices != {other}:
        raise Fail(
            f"the model's parameters are on {sorted(map(str, devices))}, not on {other}.",
            f"模型的参数在 {sorted(map(str, devices))} 上，而不是 {other}。",
        )
    try:
        seen = sorted(int(v) for batch in loader for v in batch)
    except RuntimeError as err:
        raise Fail(
            f"iterating the loader failed: {str(err)[:150]}. Create the loader outside the default-device "
            "scope.",
            f"遍历 loader 失败：{str(err)[:150]}。请在默认设备的作用范围之外创建 loader。",
        ) from None
    if seen != list(range(8)):
        raise Fail(
            f"one pass over the loader should yield 0..7 once each, got {seen}.",
            f"遍历一遍 loader 应当恰好得到 0 到 7 各一次，实际得到 {seen}。",
        )
