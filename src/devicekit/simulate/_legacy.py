"""The legacy tensor types ``torch.cuda.FloatTensor`` and kin, as a CUDA build has them, inside a block.

Old GAN and tutorial code writes ``Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`` and
then ``Tensor(n, 1).fill_(1.0)``, ``imgs.type(Tensor)`` and ``isinstance(x, torch.cuda.FloatTensor)``. A
CPU build has these names but refuses them ("type torch.cuda.FloatTensor not available. Torch not compiled
with CUDA enabled."), so while a block is open each is replaced by a class that builds on the current
simulated GPU and answers ``isinstance`` for simulated tensors of its dtype; the originals come back when
the block closes. The legacy constructor's forms (``torch/csrc/utils/tensor_new.cpp``,
``legacy_tensor_ctor``) that are covered: no argument (an empty tensor), sizes (``Tensor(2, 3)``,
``Tensor(torch.Size([2, 3]))``: uninitialised values), a sequence of values, and a tensor of the same type
(an alias). ``Tensor.type(...)`` with one of these classes or a ``"torch.cuda.<Type>"`` name moves a CPU
tensor to the current simulated GPU (`retype`).
"""

from __future__ import annotations

from typing import Any

import torch

from ..messages import Message, localised
from .tensor import SimulatedTensor

__all__ = ["DTYPES", "LegacyCudaType", "legacy_types", "retype"]

DTYPES = {
    "FloatTensor": torch.float32,
    "DoubleTensor": torch.float64,
    "HalfTensor": torch.float16,
    "BFloat16Tensor": torch.bfloat16,
    "ByteTensor": torch.uint8,
    "CharTensor": torch.int8,
    "ShortTensor": torch.int16,
    "IntTensor": torch.int32,
    "LongTensor": torch.int64,
    "BoolTensor": torch.bool,
}


class LegacyCudaType(type):
    """The metaclass of the simulated ``torch.cuda.<Type>``: calling one builds, ``isinstance`` checks."""

    dtype: torch.dtype
    is_cuda = True
    is_sparse = False
    layout = torch.strided

    def __instancecheck__(cls, obj: object) -> bool:
        return type(obj) is SimulatedTensor and obj.dtype == cls.dtype

    def __call__(cls, *args: Any, **kwargs: Any) -> torch.Tensor:  # noqa: D102 (the class docstring)
        return _build(cls, args, kwargs)

    def __repr__(cls) -> str:
        return f"<class 'torch.cuda.{cls.__name__}'>"


def legacy_types() -> dict[str, LegacyCudaType]:
    """A fresh class for each legacy CUDA tensor type, by name (``FloatTensor``, ...)."""
    types = {}
    for name, dtype in DTYPES.items():
        cls = LegacyCudaType(
            name, (), {"__module__": "torch.cuda", "__doc__": f"torch.cuda.{name} (simulated)"}
        )
        cls.dtype = dtype
        types[name] = cls
    return types


def _build(cls: LegacyCudaType, args: tuple, kwargs: dict) -> torch.Tensor:
    if kwargs and set(kwargs) != {"device"}:
        _refuse(cls, args)
    device = kwargs.get("device", "cuda")
    if not args:
        return torch.empty(0, dtype=cls.dtype, device=device)
    if len(args) == 1 and isinstance(args[0], torch.Size):
        return torch.empty(args[0], dtype=cls.dtype, device=device)
    if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        return torch.empty(args, dtype=cls.dtype, device=device)
    if len(args) == 1 and isinstance(args[0], torch.Tensor):
        if isinstance(args[0], cls):
            return args[0].view_as(args[0])
        _refuse(cls, args)
    if len(args) == 1 and (isinstance(args[0], (list, tuple)) or hasattr(args[0], "__array__")):
        return torch.tensor(args[0], dtype=cls.dtype, device=device)
    _refuse(cls, args)
    raise AssertionError  # unreachable: _refuse raises


def _refuse(cls: LegacyCudaType, args: tuple) -> None:
    given = ", ".join(type(a).__name__ for a in args)
    exc = localised(
        TypeError,
        Message(
            f"devicekit.simulate: torch.cuda.{cls.__name__}({given}) is not simulated; the simulated legacy "
            "type takes nothing, sizes, a sequence of values or a tensor of its own type. Use "
            f"torch.tensor(..., dtype={cls.dtype}, device='cuda') or tensor.to('cuda', {cls.dtype}).",
            f"devicekit.simulate：不模拟 torch.cuda.{cls.__name__}({given})；模拟的旧式类型只接受："
            "不传参数、尺寸、一串值，或同类型的张量。请改用 "
            f"torch.tensor(..., dtype={cls.dtype}, device='cuda') 或 tensor.to('cuda', {cls.dtype})。",
        ),
    )
    raise exc


def cuda_dtype(target: Any) -> torch.dtype | None:
    """The dtype a legacy CUDA type (a simulated class or a ``"torch.cuda.<Type>"`` name) stands for."""
    if isinstance(target, LegacyCudaType):
        return target.dtype
    if isinstance(target, str) and target.startswith("torch.cuda."):
        return DTYPES.get(target[len("torch.cuda.") :])
    return None


def retype(func: Any, args: tuple, kwargs: dict) -> Any:
    """``Tensor.type(torch.cuda.<Type>)``/``type("torch.cuda.<Type>")`` of a CPU tensor: a copy on the
    current simulated GPU with that dtype, as ``Tensor.type`` does on a CUDA build; any other call as is."""
    self = args[0] if args else None
    target = args[1] if len(args) > 1 else kwargs.get("dtype")
    dtype = cuda_dtype(target)
    if dtype is None or not isinstance(self, torch.Tensor) or type(self) is SimulatedTensor:
        if isinstance(target, LegacyCudaType) and type(self) is SimulatedTensor:
            return self.type(target.dtype)
        return func(*args, **kwargs)
    from ._function import resolve  # the mode is off inside its own handler: give C++ meta:N itself

    non_blocking = args[2] if len(args) > 2 else kwargs.get("non_blocking", False)
    return self.to(resolve("cuda"), dtype=dtype, non_blocking=non_blocking)
