"""``torch.compile`` inside a `simulate` block: a clear error instead of a crash deep inside Dynamo.

Dynamo cannot trace a `SimulatedTensor` (a wrapper subclass whose C++ device is ``meta:N``): left alone,
``torch.compile(f)(x)`` fails inside guard creation with pages of log and an ``InternalTorchDynamoError``
(measured with torch 2.13.0+cpu, ``tests/test_simulate_review.py``), and Inductor would generate CPU code
anyway, so nothing about the GPU would be checked. While a block is open ``torch.compile`` (and so
``nn.Module.compile``, which calls it) raises a `RuntimeError` that says so and how to dry-run the code.
A function compiled before the block opened is not caught here.
"""

from __future__ import annotations

from typing import Any, NoReturn

from ..messages import Message, localised

__all__ = ["compile_error", "refuse_compile"]

_TEXT = Message(
    "devicekit.simulate: torch.compile is not simulated (Dynamo cannot trace the simulated GPU's tensors, "
    "and Inductor would generate CPU code). To dry-run this code, run the model uncompiled inside the "
    "block: remove the torch.compile call, or guard it, e.g. "
    "`if not devicekit.is_simulated(next(model.parameters())): model = torch.compile(model)`.",
    "devicekit.simulate：不模拟 torch.compile（Dynamo 无法追踪模拟 GPU 上的张量，"
    "Inductor 生成的也是 CPU 代码）。"
    "要试运行这段代码，请在模拟块里运行未编译的模型：删掉 torch.compile 调用，或者加个条件，例如"
    "`if not devicekit.is_simulated(next(model.parameters())): model = torch.compile(model)`。",
)


def compile_error() -> RuntimeError:
    """The error ``torch.compile`` raises inside a block (English and Chinese)."""
    return localised(RuntimeError, _TEXT)


def refuse_compile(*args: Any, **kwargs: Any) -> NoReturn:
    """What ``torch.compile`` is while a block is open: it raises `compile_error`."""
    exc = compile_error()
    raise exc
