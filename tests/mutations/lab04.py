"""Mutation cases for lab 04 (data pipelines); format in ``tests/mutations/__init__.py``."""

from __future__ import annotations

import dataclasses

import torch
from torch.nn.utils.rnn import pad_sequence

from devicekit import to_device
from devicekit_labs.lab04 import ImageBatch
from mutations import untouched

LAB = "04-data"


# --- exercise 1: ragged-batch -------------------------------------------------------------------------------


def _collate(samples):
    return {
        "tokens": pad_sequence([s["tokens"] for s in samples], batch_first=True),
        "lengths": torch.tensor([len(s["tokens"]) for s in samples]),
        "labels": torch.tensor([s["label"] for s in samples]),
    }


def collate_lengths_moved(samples, device):
    return to_device(_collate(samples), device)  # the taught bug: lengths follow the data


def collate_labels_left(samples, device):
    return to_device(_collate(samples), device, skip_keys=["lengths", "labels"])


def collate_lengths_int32(samples, device):
    batch = _collate(samples)
    batch["lengths"] = batch["lengths"].int()
    return to_device(batch, device, skip_keys=["lengths"])


def collate_pad_minus_one(samples, device):
    batch = _collate(samples)
    batch["tokens"] = pad_sequence([s["tokens"] for s in samples], batch_first=True, padding_value=-1)
    return to_device(batch, device, skip_keys=["lengths"])


def collate_padded_lengths(samples, device):
    batch = _collate(samples)
    batch["lengths"] = torch.full((len(samples),), batch["tokens"].shape[1])
    return to_device(batch, device, skip_keys=["lengths"])


def collate_hard_coded(samples, device):
    batch = _collate(samples)
    batch["lengths"] = torch.tensor([3, 5, 1, 4])  # the lab's example, whatever the samples
    batch["labels"] = torch.tensor([1, 0, 1, 0])
    return to_device(batch, device, skip_keys=["lengths"])


def collate_time_first(samples, device):
    batch = _collate(samples)
    batch["tokens"] = pad_sequence([s["tokens"] for s in samples])  # (T, B)
    return to_device(batch, device, skip_keys=["lengths"])


def collate_cuda(samples, device):
    batch = _collate(samples)
    if device.type == "cuda":  # .cuda() is the current GPU, cuda:0, whatever `device` names
        batch["tokens"], batch["labels"] = batch["tokens"].cuda(), batch["labels"].cuda()
    return batch


def collate_token_list(samples, device):
    return [s["tokens"] for s in samples]


def collate_ok(samples, device):
    return to_device(_collate(samples), device, skip_keys=["lengths"])


def collate_by_hand(samples, device):
    longest = max(len(s["tokens"]) for s in samples)
    tokens = torch.zeros(len(samples), longest, dtype=torch.long, device=device)
    for row, sample in enumerate(samples):
        tokens[row, : len(sample["tokens"])] = sample["tokens"].to(device)
    lengths = torch.tensor([len(s["tokens"]) for s in samples], dtype=torch.int64)
    labels = torch.tensor([s["label"] for s in samples], device=device)
    return {"tokens": tokens, "lengths": lengths, "labels": labels}


def collate_fields(samples, device):
    batch = _collate(samples)
    return {
        "tokens": batch["tokens"].to(device, non_blocking=True),
        "lengths": batch["lengths"],
        "labels": batch["labels"].to(device, non_blocking=True),
    }


def collate_lengths_counted_on_device(samples, device):
    # right (none of these tokens is 0): the count is made on the GPU and copied back to the host
    batch = to_device(_collate(samples), device, skip_keys=["lengths"])
    batch["lengths"] = (batch["tokens"] != 0).sum(dim=1).cpu()
    return batch


# --- exercise 2: dataclass-batch ----------------------------------------------------------------------------


def image_labels_left(batch, device):
    return dataclasses.replace(batch, images=batch.images.to(device))  # the taught bug: labels forgotten


def image_in_place(batch, device):
    object.__setattr__(batch, "images", batch.images.to(device))
    object.__setattr__(batch, "labels", batch.labels.to(device))
    return batch


def image_dict(batch, device):
    return to_device(dataclasses.asdict(batch), device)


def image_half(batch, device):
    return ImageBatch(batch.images.to(device).half(), batch.labels.to(device), batch.names)


def image_names_tuple(batch, device):
    return ImageBatch(batch.images.to(device), batch.labels.to(device), tuple(batch.names))


def image_device_type(batch, device):
    # "cuda" names the current GPU, cuda:0: the index of `device` is lost
    return ImageBatch(batch.images.to(device.type), batch.labels.to(device.type), list(batch.names))


def image_non_blocking(batch, device):
    # pinned, then copied without blocking: right, the GPU's own work is ordered after the copy
    pinned = batch.images.pin_memory() if device.type == "cuda" else batch.images
    images = pinned.to(device, non_blocking=True)
    return ImageBatch(images, batch.labels.to(device, non_blocking=True), list(batch.names))


def image_to_device(batch, device):
    return to_device(batch, device)


def image_by_hand(batch, device):
    return ImageBatch(batch.images.to(device), batch.labels.to(device), list(batch.names))


def image_replace(batch, device):
    return dataclasses.replace(batch, images=batch.images.to(device), labels=batch.labels.to(device))


# --- exercise 3: non-blocking (True = has a bug) ------------------------------------------------------------

RIGHT_ANSWERS = {"a": False, "b": True, "c": False, "d": True, "e": False}


def answered(**changes):
    return lambda: {**RIGHT_ANSWERS, **changes}


WRONG = {
    "ragged-batch": [
        ("lengths moved with the data", collate_lengths_moved, "leave 'lengths' where it was built"),
        ("labels left on the CPU", collate_labels_left, "'labels' on cpu"),
        ("lengths int32", collate_lengths_int32, "'lengths' is a 1-D int32 tensor"),
        ("padded with -1", collate_pad_minus_one, "padded with 0"),
        ("lengths all T_max", collate_padded_lengths, "true length"),
        ("lengths and labels of the lab's example", collate_hard_coded, "true length"),
        ("time-first tokens", collate_time_first, "should be a (4, 5)"),
        (".cuda() for a GPU device", collate_cuda, "mean the current GPU"),
        ("a list of token tensors", collate_token_list, "expected a dict whose 'tokens'"),
        ("untouched stub", untouched, "not done yet"),
    ],
    "dataclass-batch": [
        ("labels forgotten", image_labels_left, "Labels are the tensor people forget"),
        ("changed in place", image_in_place, "the input batch changed"),
        ("a dict back", image_dict, "expected an ImageBatch back"),
        ("images halved", image_half, "changed dtype or shape"),
        ("names turned into a tuple", image_names_tuple, "file names must come back unchanged"),
        (".to(device.type)", image_device_type, "mean the current GPU"),
        ("untouched stub", untouched, "not done yet"),
    ],
    "non-blocking": [
        # the taught bug first: reading a device-to-host non_blocking copy without synchronising
        ("unsynchronised host read judged correct", answered(b=False), "after a synchronisation"),
        ("pinned source overwritten judged correct", answered(d=False), "the host must not write"),
        ("pinned temporary judged a bug", answered(a=True), "keeps a pinned temporary alive"),
        ("pageable source judged a bug", answered(e=True), "pageable"),
        ("synchronised read judged a bug", answered(c=True), "after a synchronisation"),
        ("strings", lambda: dict.fromkeys("abcde", "bug"), "must be True or False"),
        ("nothing judged a bug", lambda: dict.fromkeys("abcde", False), "not every prediction holds"),
        ("keys missing", lambda: {"a": False}, "exactly the keys 'a', 'b', 'c', 'd', 'e'"),
        ("untouched stub", untouched, "not done yet"),
    ],
}

RIGHT = {
    "ragged-batch": [
        ("pad_sequence + to_device(skip_keys)", collate_ok),
        ("padded by hand on the device", collate_by_hand),
        ("field by field, non_blocking", collate_fields),
        ("lengths counted on the device, copied back", collate_lengths_counted_on_device),
    ],
    "dataclass-batch": [
        ("to_device", image_to_device),
        ("a new ImageBatch by hand", image_by_hand),
        ("dataclasses.replace", image_replace),
        ("pinned, non_blocking copies", image_non_blocking),
    ],
    "non-blocking": [
        ("a function", lambda: dict(RIGHT_ANSWERS)),
        ("the dict itself", dict(RIGHT_ANSWERS)),
    ],
}
