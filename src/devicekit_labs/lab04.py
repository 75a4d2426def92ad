"""Self-checks for lab 04 (data pipelines: moving whole batches, keeping some tensors on the CPU).

The probes run the learner's functions for the CPU and for two GPUs, real or simulated
(`devicekit_labs.machine.probe_devices`: ``cuda:1`` first, so an answer that moves to ``"cuda"``, the current
GPU, fails), and the judges read the values that arrived on the GPU, copied back to the CPU.
"""

from __future__ import annotations

import dataclasses

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from devicekit_labs import Fail, describe_tensor, failed_call, judged, observe
from devicekit_labs.drills import judge_drill, probe_drill
from devicekit_labs.machine import probe_devices

LAB = "04-data"


def ragged_samples(variant: int = 0) -> list[dict[str, object]]:
    """Token sequences of different lengths, each with a label: what a text Dataset yields.

    ``variant`` 0 is the lab's example (four samples); 1 is a second set, so that a hard-coded answer fails.
    """
    if variant == 1:
        return [
            {"tokens": torch.tensor([4, 4]), "label": 2},
            {"tokens": torch.tensor([1, 2, 3, 4, 5, 6]), "label": 0},
            {"tokens": torch.tensor([7, 8, 9]), "label": 1},
        ]
    return [
        {"tokens": torch.tensor([5, 3, 8]), "label": 1},
        {"tokens": torch.tensor([2, 9, 4, 7, 1]), "label": 0},
        {"tokens": torch.tensor([6]), "label": 1},
        {"tokens": torch.tensor([3, 3, 2, 5]), "label": 0},
    ]


_BATCH_KEYS = ("tokens", "lengths", "labels")


def dropped_index(devices: list[str | None], device: str) -> bool:
    """Whether a tensor landed on ``cuda:0`` where the probe asked for another GPU: a ``"cuda"`` or
    ``.cuda()`` in the answer, which means the current GPU, not the device the function was given."""
    return device.startswith("cuda:") and device != "cuda:0" and "cuda:0" in devices


_CURRENT_GPU = (
    ' "cuda" and .cuda() mean the current GPU (cuda:0 unless you changed it), not the device you were '
    "given: pass `device` itself.",
    '"cuda" 和 .cuda() 指的是当前 GPU（没改过就是 cuda:0），不是传进来的那个设备：请直接使用 `device`。',
)


def _consume(embed: nn.Module, tokens: torch.Tensor, lengths: torch.Tensor) -> object:
    """What a model does with the batch: embed the tokens on their device, then pack them by length."""
    return pack_padded_sequence(embed(tokens), lengths, batch_first=True, enforce_sorted=False)


@judged(
    LAB,
    "ragged-batch",
    1,
    "collate a ragged batch, keep lengths on the CPU",
    "整理长短不一的批次，lengths 留在 CPU 上",
    target="collate_and_move",
)
def probe_ragged_batch(collate_and_move) -> dict:
    runs = []
    gpus = probe_devices()
    for variant, gpu in ((0, gpus[-1]), (1, gpus[0])):
        for device in (torch.device("cpu"), gpu):
            samples = ragged_samples(variant)
            called = observe(collate_and_move, samples, device)
            run: dict = {"variant": variant, "device": str(device)}
            run["samples_unchanged"] = all(
                torch.equal(a["tokens"], b["tokens"]) and a["label"] == b["label"]  # type: ignore[arg-type]
                for a, b in zip(samples, ragged_samples(variant), strict=True)
            ) and len(samples) == len(ragged_samples(variant))
            if "error" in called:
                run["error"] = called["error"]
                runs.append(run)
                continue
            batch = called["value"]
            run["is_dict"] = isinstance(batch, dict)
            run["keys"] = sorted(map(str, batch)) if isinstance(batch, dict) else []
            run["fields"] = (
                {
                    key: describe_tensor(batch[key]) if isinstance(batch.get(key), torch.Tensor) else None
                    for key in _BATCH_KEYS
                }
                if isinstance(batch, dict)
                else {}
            )
            if all(run["fields"].get(key) is not None for key in _BATCH_KEYS):
                # the real consumer: an embedding on the target device, then pack_padded_sequence
                embed = nn.Embedding(10, 4).to(device)

                packed = observe(_consume, embed, batch["tokens"], batch["lengths"])
                if "error" in packed:
                    run["pack_error"] = packed["error"]
                else:
                    run["packed_device"] = str(packed["value"].data.device)
            runs.append(run)
    return {"runs": runs}


@probe_ragged_batch.judge
def judge_ragged_batch(seen: dict) -> None:
    for run in seen["runs"]:  # each set of samples on the CPU first, then on a GPU
        device = run["device"]
        failed_call(run, f"collate_and_move(samples, {device})", f"collate_and_move(samples, {device})")
        fields = run["fields"]
        missing = [key for key in _BATCH_KEYS if fields.get(key) is None]
        if not run["is_dict"] or missing:
            raise Fail(
                "expected a dict whose 'tokens', 'lengths' and 'labels' are tensors"
                + (f"; missing or not a tensor: {missing}." if run["is_dict"] else "."),
                "应当返回一个字典，其中 'tokens'、'lengths' 和 'labels' 都是张量"
                + (f"；缺少或不是张量的：{missing}。" if run["is_dict"] else "。"),
            )
        tokens, lengths, labels = (fields[key] for key in _BATCH_KEYS)
        if lengths["device"] != "cpu" or lengths["dtype"] != "int64" or len(lengths["shape"]) != 1:
            raise Fail(
                f"for device={device} 'lengths' is a {len(lengths['shape'])}-D {lengths['dtype']} tensor on "
                f"{lengths['device']}; pack_padded_sequence wants a 1-D int64 tensor on the CPU, whatever "
                "the device of the data. Move everything else, and leave 'lengths' where it was built.",
                f"device={device} 时，'lengths' 是位于 {lengths['device']} 的 {len(lengths['shape'])} 维 "
                f"{lengths['dtype']} 张量；无论数据在哪个设备上，pack_padded_sequence 都要求它是 CPU 上的 1 "
                "维 int64 张量。其他的都移过去，'lengths' 留在创建它的地方。",
            )
        if tokens["device"] != device or labels["device"] != device:
            en, zh = _CURRENT_GPU if dropped_index([tokens["device"], labels["device"]], device) else ("", "")
            raise Fail(
                f"for device={device} 'tokens' is on {tokens['device']} and 'labels' on {labels['device']}: "
                f"everything the model and the loss read must be on the target device.{en}",
                f"device={device} 时，'tokens' 在 {tokens['device']} 上，'labels' 在 {labels['device']} 上："
                f"模型和损失函数要读的张量都必须在目标设备上。{zh}",
            )
        samples = ragged_samples(run["variant"])
        want_lengths = [len(s["tokens"]) for s in samples]  # type: ignore[arg-type]
        if not torch.equal(lengths["values"], torch.tensor(want_lengths)):
            raise Fail(
                "'lengths' must hold each sequence's true length, in the order of the samples.",
                "'lengths' 要按样本顺序给出每条序列的真实长度。",
            )
        rows, longest = len(samples), max(want_lengths)
        if tokens["shape"] != [rows, longest] or tokens["dtype"] != "int64" or labels["shape"] != [rows]:
            raise Fail(
                f"for {rows} samples, the longest {longest} tokens long, 'tokens' should be a ({rows}, "
                f"{longest}) "
                f"int64 tensor and 'labels' a ({rows},) one; got {tuple(tokens['shape'])} {tokens['dtype']} "
                f"and {tuple(labels['shape'])}.",
                f"{rows} 个样本、最长 {longest} 个词元时，'tokens' 应当是 ({rows}, {longest}) 的 int64 张量，"
                f"'labels' 应当是 ({rows},) 的张量；实际是 {tuple(tokens['shape'])} {tokens['dtype']} 和 "
                f"{tuple(labels['shape'])}。",
            )
        for row, sample in enumerate(samples):
            seq = sample["tokens"]
            padded = tokens["values"][row]
            if not torch.equal(padded[: len(seq)], seq) or bool(padded[len(seq) :].ne(0).any()):  # type: ignore[arg-type]
                raise Fail(
                    "'tokens' should be the sequences in order, each padded with 0 to the longest one.",
                    "'tokens' 应当按顺序排列各序列，每条都用 0 补齐到最长序列的长度。",
                )
        if labels["values"].tolist() != [s["label"] for s in samples]:
            raise Fail(
                "'labels' must hold each sample's label, in the order of the samples.",
                "'labels' 要按样本顺序给出每个样本的标签。",
            )
        if "pack_error" in run:
            err = run["pack_error"]
            raise Fail(
                f"pack_padded_sequence refused your batch: {err['type']}: {err['message'][:200]}",
                f"pack_padded_sequence 拒绝了你的批次：{err['type']}: {err['message'][:200]}",
            )
        if run["packed_device"] != device:
            raise Fail(
                f"the packed data ended up on {run['packed_device']}, not on {device}.",
                f"打包后的数据在 {run['packed_device']} 上，而不是 {device}。",
            )
        if not run["samples_unchanged"]:
            raise Fail("your function changed its input samples.", "你的函数修改了输入的样本。")


@dataclasses.dataclass(frozen=True)
class ImageBatch:
    """A batch as a dataclass: images, labels, and the file names the images came from."""

    images: torch.Tensor
    labels: torch.Tensor
    names: list[str]


def image_batch() -> ImageBatch:
    generator = torch.Generator().manual_seed(0)
    return ImageBatch(
        images=torch.rand(2, 3, 4, 4, generator=generator),
        labels=torch.tensor([3, 1]),
        names=["cat.png", "dog.png"],
    )


def _image_batch_seen(batch: object) -> dict:
    if not isinstance(batch, ImageBatch):
        return {"type": type(batch).__name__}
    return {
        "type": "ImageBatch",
        "images": describe_tensor(batch.images),
        "labels": describe_tensor(batch.labels),
        "names": list(batch.names) if isinstance(batch.names, list) else repr(batch.names),
    }


@judged(
    LAB,
    "dataclass-batch",
    2,
    "move a dataclass batch",
    "移动 dataclass 形式的批次",
    target="move_image_batch",
)
def probe_dataclass_batch(move_image_batch) -> dict:
    runs = []
    for device in (torch.device("cpu"), *probe_devices()[::-1]):
        original = image_batch()
        fields_before = (original.images, original.labels, original.names)
        called = observe(move_image_batch, original, device)
        run: dict = {"device": str(device)}
        if "error" in called:
            run["error"] = called["error"]
        else:
            run["moved"] = _image_batch_seen(called["value"])
            run["same_object"] = called["value"] is original
        run["input_fields_same_objects"] = all(
            a is b
            for a, b in zip(fields_before, (original.images, original.labels, original.names), strict=True)
        )
        run["input"] = _image_batch_seen(original)
        runs.append(run)
    return {"runs": runs}


@probe_dataclass_batch.judge
def judge_dataclass_batch(seen: dict) -> None:
    planted = image_batch()
    for run in seen["runs"]:
        device = run["device"]
        failed_call(run, f"move_image_batch(batch, {device})", f"move_image_batch(batch, {device})")
        moved = run["moved"]
        if moved["type"] != "ImageBatch":
            raise Fail(
                f"expected an ImageBatch back, got {moved['type']}: the training loop reads "
                "batch.images and batch.labels, so the type must survive the move.",
                f"应当返回 ImageBatch，实际是 {moved['type']}：训练循环要读 batch.images 和 "
                "batch.labels，移动之后类型不能变。",
            )
        images, labels = moved["images"], moved["labels"]
        if images is None or labels is None or images["device"] != device or labels["device"] != device:
            where = [f["device"] if f else None for f in (images, labels)]
            if dropped_index(where, device):
                en, zh = _CURRENT_GPU
            else:
                en, zh = " Labels are the tensor people forget.", "最容易被忘掉的就是 labels。"
            raise Fail(
                f"images are on {where[0]} and labels on {where[1]}, not both on {device}.{en}",
                f"images 在 {where[0]} 上，labels 在 {where[1]} 上，两者并不都在 {device} 上。{zh}",
            )
        if moved["names"] != planted.names:
            raise Fail("the file names must come back unchanged.", "文件名应当原样保留。")
        original = run["input"]
        if (
            run["same_object"]
            or not run["input_fields_same_objects"]
            or original["images"]["device"] != "cpu"
            or original["labels"]["device"] != "cpu"
        ):
            raise Fail(
                "the input batch changed: return a new batch and leave the one you were given as it was.",
                "输入的批次被改动了：请返回一个新的批次，传进来的那个保持原样。",
            )
        for name, field in (("images", images), ("labels", labels)):
            want = getattr(planted, name)
            if field["dtype"] != str(want.dtype).removeprefix("torch.") or field["shape"] != list(want.shape):
                raise Fail(
                    f"the {name} changed dtype or shape on the way ({field['dtype']} "
                    f"{tuple(field['shape'])}): moving must not convert them.",
                    f"{name} 在移动过程中改变了 dtype 或形状（{field['dtype']} {tuple(field['shape'])}）："
                    "移动不应转换它们。",
                )
            if not torch.equal(field["values"], want):
                raise Fail(f"the {name}' values changed on the way.", f"{name} 的数值在移动过程中变了。")


#: The answer format of exercise 3, shown in the stub and in every format error.
ANSWERS_FORMAT = '{"a": True or False, ..., "e": ...}  # True = this snippet has a bug, False = correct'
_ANSWERS_FORMAT_ZH = f"{ANSWERS_FORMAT}（True 表示这段代码有错误，False 表示正确）"

#: One digest per letter (see `devicekit_labs.drills`); the answers themselves live in the grader's tier.
#: The reasons are in the lesson (PyTorch's tutorial on non_blocking and pin_memory).
_DIGESTS = {
    "a": "600b6c797ef750cb", "b": "b12c99183673a9fb", "c": "856e3e3a98649092", "d": "5fd96778cf9f9a44",
    "e": "283e01edc86d5bb3",
}  # fmt: skip

_SAME_STREAM = (
    "a host-to-device copy followed by GPU work is safe: the copy and the model run in order on one CUDA "
    "stream, and PyTorch keeps a pinned temporary alive until the copy that reads it has finished.",
    "主机到设备的复制之后紧跟 GPU 上的计算是安全的：复制和模型在同一个 CUDA 流上按顺序执行，"
    "PyTorch 也会让锁页的临时内存一直保留到读取它的复制完成为止。",
)
_HOST_READS = (
    "a device-to-host copy with non_blocking=True may return before the data has arrived: the host may read "
    "the result only after a synchronisation (torch.cuda.synchronize(), or an event it waits on).",
    "non_blocking=True 的设备到主机复制可能在数据到达之前就返回：主机只有在同步之后"
    "（torch.cuda.synchronize()，或等待一个事件）才能读取结果。",
)
_RULES = {
    "a": _SAME_STREAM,
    "b": _HOST_READS,
    "c": _HOST_READS,
    "d": (
        "while an asynchronous copy still reads a pinned tensor, the host must not write to it.",
        "异步复制还在读取锁页张量时，主机不能改写它。",
    ),
    "e": (
        "from ordinary (pageable) memory, non_blocking=True cannot overlap: the copy is staged through a "
        "pinned buffer before the call returns, which is correct, only not faster.",
        "从普通（可分页）内存复制时，non_blocking=True 无法重叠：调用返回之前数据已经经由锁页缓冲区中转，"
        "结果是正确的，只是不会更快。",
    ),
}


@judged(
    LAB,
    "non-blocking",
    3,
    "spot the non_blocking bugs",
    "找出 non_blocking 的错误用法",
    target="my_answers",
)
def probe_non_blocking(answers) -> dict:
    return probe_drill(answers)


@probe_non_blocking.judge
def judge_non_blocking(seen: dict) -> None:
    judge_drill(
        seen,
        lab=LAB,
        key="non-blocking",
        letters="abcde",
        allowed=(True, False),
        digests=_DIGESTS,
        rules=_RULES,
        format_en=ANSWERS_FORMAT,
        format_zh=_ANSWERS_FORMAT_ZH,
    )
