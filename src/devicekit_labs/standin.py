"""What the checks of labs 7–9 need from the stand-in beyond `strict_devices`: reading values out of meta.

`meta` tensors have no values, so `t.item()`, `float(t)`, `t.cpu()` or `t.tolist()` raise on the stand-in
("Tensor.item() cannot be called on meta tensors", "Cannot copy out of meta tensor; no data!"), although
the same line is right on a GPU: logging `loss.item()` every step, computing a metric with NumPy after
`.cpu()`. Inside `readable_meta()` such reads return placeholders instead (zeros of the right shape and
dtype, on the CPU), so a probe can run right code to the end and still judge only what meta can show:
devices, dtypes, shapes, identities. The placeholders are never judged as numbers.
"""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["ReadableMetaMode", "readable_meta"]

_SCALAR = torch.ops.aten._local_scalar_dense.default  # what .item(), float(t), bool(t) dispatch to
_COPIES = (torch.ops.aten._to_copy.default, torch.ops.aten.copy_.default)


def _placeholder_scalar(t: torch.Tensor) -> bool | int | float:
    if t.dtype == torch.bool:
        return False
    return 0.0 if t.dtype.is_floating_point or t.dtype.is_complex else 0


class ReadableMetaMode(TorchDispatchMode):
    """Reads of meta tensors return placeholders: 0 for a scalar, zeros for a copy to the CPU."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is _SCALAR and args[0].device.type == "meta":
            return _placeholder_scalar(args[0])
        if func is torch.ops.aten._to_copy.default and args[0].device.type == "meta":
            device = kwargs.get("device")
            if device is not None and torch.device(device).type == "cpu":
                source = args[0]
                return torch.zeros(source.shape, dtype=kwargs.get("dtype") or source.dtype)
        if (
            func is torch.ops.aten.copy_.default
            and args[1].device.type == "meta"
            and args[0].device.type == "cpu"
        ):
            return args[0].zero_()
        return func(*args, **kwargs)


def readable_meta() -> ReadableMetaMode:
    """A `with` block in which reading a meta tensor's values gives placeholders instead of an error.

    ```python
    with readable_meta():
        torch.ones(3, device="meta").sum().item()   # 0.0
        torch.ones(3, device="meta").cpu()          # tensor([0., 0., 0.])
    ```
    """
    return ReadableMetaMode()
