"""Lab 1's checks in the two-part API (probe + judge), for the grader's tests only: the grader loads this
file with ``--checks tests/grade_attacks/checks`` instead of the installed ``devicekit_labs.lab01`` while
the labs are being converted. No reference answer here: exercise 3's truth is in ``../hidden/lab01.py``.
"""

from __future__ import annotations

import torch

from devicekit.device import mismatch_device
from devicekit_labs import Fail, describe_tensor, failed_call, judged, observe

LAB = "01-devices"


@judged(LAB, "move-batch", 1, "return the moved tensor", "返回移动后的张量", target="move_batch")
def probe_move_batch(move_batch) -> dict:
    seen = []
    for target in (mismatch_device(), torch.device("cpu")):
        x = torch.arange(6.0).reshape(2, 3)
        got = observe(move_batch, x, target)
        value = got.pop("value", None)
        got.update(
            target=str(target),
            none=value is None and "error" not in got,
            type=type(value).__name__,
            result=describe_tensor(value),
            input=describe_tensor(x),
        )
        seen.append(got)
    return {"cases": seen}


@probe_move_batch.judge
def judge_move_batch(seen: dict) -> None:
    for case in seen["cases"]:
        failed_call(case, "moving the tensor", "移动张量")
        if case["none"]:
            raise Fail(
                "your function returns None. `Tensor.to` returns a new tensor: return it.",
                "函数返回了 None。`Tensor.to` 返回一个新张量：要返回它。",
            )
        result = case["result"]
        if result is None:
            raise Fail(
                f"expected a tensor back, got {case['type']}.", f"应当返回张量，实际是 {case['type']}。"
            )
        if result["device"] != case["target"]:
            raise Fail(
                f"the returned tensor is on {result['device']}, not on {case['target']}: keep the value "
                "`.to()` returns.",
                f"返回的张量在 {result['device']} 上，而不是 {case['target']}：要用 `.to()` 的返回值。",
            )
        if case["input"]["device"] != "cpu" or result["shape"] != [2, 3]:
            raise Fail(
                "the input must stay where it was, and the result keep its shape.",
                "输入张量应当留在原处，结果的形状也不应改变。",
            )
        planted = torch.arange(6.0).reshape(2, 3)  # the probe's planted input, by the same rule
        if "values" in result and not torch.equal(result["values"], planted):
            raise Fail(
                "the tensor is on the right device but holds other values: move the tensor you were given.",
                "张量的设备对了，数值却不一样：要移动传进来的那个张量。",
            )


@judged(LAB, "causal-mask", 2, "create the mask on the input's device", "在输入所在的设备上创建掩码",
        target="causal_mask")  # fmt: skip
def probe_causal_mask(causal_mask) -> dict:
    seen = []
    for device, shape in ((torch.device("cpu"), (2, 5, 8)), (mismatch_device(), (2, 5, 8)),
                          (torch.device("cpu"), (3, 4, 2))):  # fmt: skip
        got = observe(causal_mask, torch.zeros(*shape, device=device))
        value = got.pop("value", None)
        got.update(device=str(device), shape=list(shape), type=type(value).__name__)
        got["mask"] = describe_tensor(value)
        seen.append(got)
    return {"cases": seen}


@probe_causal_mask.judge
def judge_causal_mask(seen: dict) -> None:
    for case in seen["cases"]:
        failed_call(case, "building the mask", "创建掩码")
        mask, steps = case["mask"], case["shape"][1]
        if mask is None:
            raise Fail(
                f"expected a tensor back, got {case['type']}.", f"应当返回张量，实际是 {case['type']}。"
            )
        if mask["device"] != case["device"]:
            raise Fail(
                f"for an input on {case['device']} the mask was created on {mask['device']}: take the device "
                "from the input (device=x.device).",
                f"输入在 {case['device']} 上，掩码却创建在 {mask['device']} 上："
                "设备应当取自输入（device=x.device）。",
            )
        if mask["shape"] != [steps, steps] or mask["dtype"] != "bool":
            raise Fail(
                f"expected a ({steps}, {steps}) bool mask, got {tuple(mask['shape'])} {mask['dtype']}.",
                f"应得到 ({steps}, {steps}) 的 bool 掩码，实际是 {tuple(mask['shape'])} {mask['dtype']}。",
            )
        if "values" in mask and not torch.equal(mask["values"], torch.ones(steps, steps).tril().bool()):
            raise Fail(
                "right device and shape, wrong values: position i sees positions 0..i.",
                "设备和形状都对，取值不对：位置 i 只能看到 0..i。",
            )


@judged(LAB, "predict-raises", 3, "predict which mixes raise", "预测哪些组合会报错", target="my_predictions")
def probe_predictions(predictions) -> dict:
    got = observe(predictions) if callable(predictions) else {"value": predictions}
    value = got.pop("value", None)
    if isinstance(value, dict):
        got["answer"] = {str(k): v for k, v in value.items() if type(v) is bool}
        got["keys"] = sorted(map(str, value))
    got["type"] = type(value).__name__
    return got


@probe_predictions.judge
def judge_predictions(seen: dict) -> None:
    failed_call(seen, "your predictions", "你的预测")
    if seen.get("keys") != ["a", "b", "c", "d"] or len(seen.get("answer", {})) != 4:
        raise Fail(
            "expected a dict with the keys 'a', 'b', 'c', 'd', each True or False.",
            "应当返回一个字典，键为 'a'、'b'、'c'、'd'，每个值都是 True 或 False。",
        )
