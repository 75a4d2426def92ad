"""Self-checks for lab 04 (data pipelines: moving whole batches, keeping some tensors on the CPU)."""

from __future__ import annotations

import dataclasses

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from devicekit.device import mismatch_device
from devicekit_labs import Fail, exercise

LAB = "04-data"


def ragged_samples() -> list[dict[str, object]]:
    """Four token sequences of different lengths, each with a label: what a text Dataset yields."""
    return [
        {"tokens": torch.tensor([5, 3, 8]), "label": 1},
        {"tokens": torch.tensor([2, 9, 4, 7, 1]), "label": 0},
        {"tokens": torch.tensor([6]), "label": 1},
        {"tokens": torch.tensor([3, 3, 2, 5]), "label": 0},
    ]


def _expected_padded(samples: list[dict[str, object]]) -> torch.Tensor:
    longest = max(len(s["tokens"]) for s in samples)  # type: ignore[arg-type]
    padded = torch.zeros(len(samples), longest, dtype=torch.long)
    for row, sample in enumerate(samples):
        tokens = sample["tokens"]
        padded[row, : len(tokens)] = tokens  # type: ignore[arg-type]
    return padded


def _tensor(batch: object, key: str) -> torch.Tensor:
    if not isinstance(batch, dict) or key not in batch:
        raise Fail(
            "expected a dict with the keys 'tokens', 'lengths' and 'labels'.",
            "应当返回一个字典，包含键 'tokens'、'lengths' 和 'labels'。",
        )
    value = batch[key]
    if not isinstance(value, torch.Tensor):
        raise Fail(
            f"batch[{key!r}] should be a tensor, got {type(value).__name__}.",
            f"batch[{key!r}] 应当是张量，实际是 {type(value).__name__}。",
        )
    return value


@exercise(
    LAB,
    "ragged-batch",
    1,
    "collate a ragged batch, keep lengths on the CPU",
    "整理长短不一的批次，lengths 留在 CPU 上",
    target="collate_and_move",
)
def check_ragged_batch(collate_and_move) -> None:
    samples = ragged_samples()
    for device in (torch.device("cpu"), mismatch_device()):
        batch = collate_and_move(ragged_samples(), device)
        tokens, lengths, labels = (_tensor(batch, key) for key in ("tokens", "lengths", "labels"))
        if tokens.device != device or labels.device != device:
            raise Fail(
                f"for device={device} 'tokens' is on {tokens.device} and 'labels' on {labels.device}: "
                "everything the model and the loss read must be on the target device.",
                f"device={device} 时，'tokens' 在 {tokens.device} 上，'labels' 在 {labels.device} 上："
                "模型和损失函数要读的张量都必须在目标设备上。",
            )
        if lengths.device.type != "cpu" or lengths.dtype != torch.int64 or lengths.dim() != 1:
            raise Fail(
                f"'lengths' is a {lengths.dim()}-D {lengths.dtype} tensor on {lengths.device}; "
                "pack_padded_sequence wants a 1-D int64 tensor on the CPU, whatever the device of the data.",
                f"'lengths' 是位于 {lengths.device} 的 {lengths.dim()} 维 {lengths.dtype} 张量；"
                "无论数据在哪个设备上，pack_padded_sequence 都要求它是 CPU 上的 1 维 int64 张量。",
            )
        if device.type == "cpu":
            want = _expected_padded(samples)
            if tokens.shape != want.shape or not torch.equal(tokens, want):
                raise Fail(
                    f"'tokens' should be the sequences padded with 0 to the longest one, shape "
                    f"{tuple(want.shape)}; got shape {tuple(tokens.shape)} with other values.",
                    f"'tokens' 应当是把各序列用 0 补齐到最长序列后的结果，形状 {tuple(want.shape)}；"
                    f"实际形状 {tuple(tokens.shape)}，取值也不对。",
                )
            if lengths.tolist() != [3, 5, 1, 4] or labels.tolist() != [1, 0, 1, 0]:
                raise Fail(
                    "'lengths' must hold each sequence's true length and 'labels' each sample's label, "
                    "in the order of the samples.",
                    "'lengths' 要按样本顺序给出每条序列的真实长度，'labels' 要给出每个样本的标签。",
                )
        # The real consumer: an embedding on the target device, then pack_padded_sequence.
        embed = nn.Embedding(10, 4).to(device)
        try:
            packed = pack_padded_sequence(embed(tokens), lengths, batch_first=True, enforce_sorted=False)
        except RuntimeError as err:
            raise Fail(
                f"pack_padded_sequence refused your batch: {err}",
                f"pack_padded_sequence 拒绝了你的批次：{err}",
            ) from None
        if packed.data.device != device:
            raise Fail(
                f"the packed data ended up on {packed.data.device}, not on {device}.",
                f"打包后的数据在 {packed.data.device} 上，而不是 {device}。",
            )
    if [len(s["tokens"]) for s in samples] != [3, 5, 1, 4]:  # type: ignore[arg-type]
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


@exercise(
    LAB,
    "dataclass-batch",
    2,
    "move a dataclass batch",
    "移动 dataclass 形式的批次",
    target="move_image_batch",
)
def check_dataclass_batch(move_image_batch) -> None:
    for device in (torch.device("cpu"), mismatch_device()):
        original = image_batch()
        moved = move_image_batch(original, device)
        if not isinstance(moved, ImageBatch):
            raise Fail(
                f"expected an ImageBatch back, got {type(moved).__name__}: the training loop reads "
                "batch.images and batch.labels, so the type must survive the move.",
                f"应当返回 ImageBatch，实际是 {type(moved).__name__}：训练循环要读 batch.images 和 "
                "batch.labels，移动之后类型不能变。",
            )
        if moved.images.device != device or moved.labels.device != device:
            raise Fail(
                f"images are on {moved.images.device} and labels on {moved.labels.device}, not both on "
                f"{device}. Labels are the tensor people forget.",
                f"images 在 {moved.images.device} 上，labels 在 {moved.labels.device} 上，"
                f"两者并不都在 {device} 上。最容易被忘掉的就是 labels。",
            )
        if moved.names != ["cat.png", "dog.png"]:
            raise Fail("the file names must come back unchanged.", "文件名应当原样保留。")
        if original.images.device.type != "cpu" or original.labels.device.type != "cpu":
            raise Fail(
                "the input batch changed: return a new batch and leave the one you were given as it was.",
                "输入的批次被改动了：请返回一个新的批次，传进来的那个保持原样。",
            )
        if device.type == "cpu" and not torch.equal(moved.images, image_batch().images):
            raise Fail("the images' values changed on the way.", "图像的数值在移动过程中变了。")


#: The five snippets of exercise 3 and whether each one has a bug (True) or is correct (False). The
#: reasons are in the lesson (PyTorch's tutorial on non_blocking and pin_memory): a device->host copy with
#: non_blocking=True may not have arrived when the host reads it, and a pinned source must not be changed
#: until the asynchronous copy that reads it has finished.
NON_BLOCKING_TRUTH = {"a": False, "b": True, "c": False, "d": True, "e": False}


@exercise(
    LAB,
    "non-blocking",
    3,
    "spot the non_blocking bugs",
    "找出 non_blocking 的错误用法",
    target="my_answers",
)
def check_non_blocking(answers) -> None:
    if callable(answers):
        answers = answers()
    keys = sorted(NON_BLOCKING_TRUTH)
    if not isinstance(answers, dict) or sorted(answers) != keys:
        raise Fail(
            "expected a dict like {'a': True, 'b': False, ...} with the keys 'a' to 'e' "
            "(True = this snippet has a bug).",
            "应当返回形如 {'a': True, 'b': False, ...} 的字典，键为 'a' 到 'e'（True 表示这段代码有错误）。",
        )
    if not all(type(v) is bool for v in answers.values()):
        raise Fail(
            "each value must be True (has a bug) or False (correct), not a string or a number.",
            "每个值必须是 True（有错误）或 False（正确），不能是字符串或数字。",
        )
    wrong = sum(answers[k] != NON_BLOCKING_TRUTH[k] for k in keys)
    if wrong:
        verb = "is" if wrong == 1 else "are"
        raise Fail(
            f"{wrong} of the 5 answers {verb} wrong. Ask two questions of each snippet: does the host read a "
            "tensor that an asynchronous copy is still writing, and does the host write a pinned tensor "
            "that an asynchronous copy is still reading?",
            f"5 个答案中有 {wrong} 个不对。对每段代码问两个问题：主机是否读取了异步复制还在写入的张量？"
            "主机是否改写了异步复制还在读取的锁页张量？",
        )
