"""What the evaluator accepts from a submission's kernel as the observations of a probe: plain data, and
not much of it.

The kernel is the untrusted side: whatever it sends is only *data to judge*. It already arrived through
``torch.load(weights_only=True)`` (`devicekit_grade.wire`), so no class of the sender's choosing was built;
this module adds the shape rules the judges rely on: only ``str``, ``int``, ``float``, ``bool``, ``None``,
lists, tuples, dicts with ``str`` keys and CPU tensors, nested at most `MAX_DEPTH` deep, with at most
`MAX_ITEMS` containers and scalars and `MAX_ELEMENTS` tensor elements in all.
"""

from __future__ import annotations

from typing import Any

MAX_DEPTH = 32
MAX_ITEMS = 200_000
MAX_ELEMENTS = 16_000_000
MAX_TEXT = 100_000


class BadObservations(ValueError):
    """The kernel sent something that is not observations a judge can read; the message says what."""


def check_observations(value: Any) -> Any:
    """Return ``value`` unchanged when it is plain observation data, else raise `BadObservations`."""
    import torch

    budget = {"items": 0, "elements": 0}

    def visit(item: Any, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise BadObservations(f"nested more than {MAX_DEPTH} levels deep")
        budget["items"] += 1
        if budget["items"] > MAX_ITEMS:
            raise BadObservations(f"more than {MAX_ITEMS} values")
        if item is None or type(item) in (bool, int, float):
            return
        if type(item) is str:
            if len(item) > MAX_TEXT:
                raise BadObservations(f"a text of {len(item)} characters (at most {MAX_TEXT})")
            return
        if type(item) in (list, tuple):
            for element in item:
                visit(element, depth + 1)
            return
        if type(item) is dict:
            for key, element in item.items():
                if type(key) is not str:
                    raise BadObservations(f"a dict key of type {type(key).__name__} (only str keys)")
                visit(key, depth + 1)
                visit(element, depth + 1)
            return
        if type(item) is torch.Tensor:
            if item.device.type != "cpu":
                raise BadObservations(f"a tensor on {item.device} (observations hold CPU tensors)")
            budget["elements"] += item.numel()
            if budget["elements"] > MAX_ELEMENTS:
                raise BadObservations(f"more than {MAX_ELEMENTS} tensor elements")
            return
        raise BadObservations(f"a value of type {type(item).__name__}")

    visit(value, 0)
    return value
