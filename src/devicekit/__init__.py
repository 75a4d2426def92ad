"""devicekit: put every tensor on the right device, and understand the error when one is not.

The helper library of the PyTorch device-consistency course. Importing it patches nothing and adds no
hooks: a model's normal forward pass runs exactly as without it.

`import devicekit` imports no torch: each public name is imported from its submodule the first time it is
touched (PEP 562 `__getattr__`), so `devicekit-lint`, which never needs torch, starts in a fraction of a
second, while `from devicekit import to_device` works as it always did.
"""

from __future__ import annotations

import importlib
import sys
import types

TYPE_CHECKING = False  # `typing` is not imported at run time: `devicekit-lint` starts faster without it

__version__ = "0.1.0"

#: Each public name and the submodule that defines it.
_SOURCES: dict[str, str] = {
    "autocast": "amp",
    "autocast_dtype": "amp",
    "grad_scaler": "amp",
    "DeviceFinding": "check",
    "DeviceReport": "check",
    "check_devices": "check",
    "UnknownDeviceError": "device",
    "as_device": "device",
    "available_devices": "device",
    "best_device": "device",
    "mismatch_device": "device",
    "resolve_device": "device",
    "DeviceMismatchError": "errors",
    "FAMILIES": "explain",
    "Explanation": "explain",
    "explain": "explain",
    "load_catalog": "explain",
    "load_ipython_extension": "ipython",
    "unload_ipython_extension": "ipython",
    "DeviceLoader": "loader",
    "MismatchReport": "locate",
    "locate_mismatch": "locate",
    "ENV_VAR": "manager",
    "DeviceManager": "manager",
    "prepare": "prepare",
    "StrictDevicesMode": "strict",
    "strict_devices": "strict",
    "to_device": "transfer",
}

__all__ = [
    "ENV_VAR",
    "DeviceFinding",
    "DeviceLoader",
    "DeviceManager",
    "DeviceMismatchError",
    "DeviceReport",
    "Explanation",
    "FAMILIES",
    "MismatchReport",
    "StrictDevicesMode",
    "UnknownDeviceError",
    "as_device",
    "autocast",
    "autocast_dtype",
    "available_devices",
    "best_device",
    "check_devices",
    "explain",
    "is_simulated",
    "grad_scaler",
    "load_ipython_extension",
    "load_catalog",
    "locate_mismatch",
    "mismatch_device",
    "prepare",
    "resolve_device",
    "simulate",
    "strict_devices",
    "to_device",
    "unload_ipython_extension",
]

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time the names come from __getattr__
    from typing import Any

    from devicekit.amp import autocast, autocast_dtype, grad_scaler
    from devicekit.check import DeviceFinding, DeviceReport, check_devices
    from devicekit.device import (
        UnknownDeviceError,
        as_device,
        available_devices,
        best_device,
        mismatch_device,
        resolve_device,
    )
    from devicekit.errors import DeviceMismatchError
    from devicekit.explain import FAMILIES, Explanation, explain, load_catalog
    from devicekit.ipython import load_ipython_extension, unload_ipython_extension
    from devicekit.loader import DeviceLoader
    from devicekit.locate import MismatchReport, locate_mismatch
    from devicekit.manager import ENV_VAR, DeviceManager
    from devicekit.prepare import prepare
    from devicekit.strict import StrictDevicesMode, strict_devices
    from devicekit.transfer import to_device


#: Imported on first use, and not kept here: the package `devicekit.simulate` is itself callable
#: (`devicekit.simulate(gpus=2)` is `devicekit.simulate.simulate(gpus=2)`), so the name means the same
#: thing whether or not the submodule was imported first.
_SIMULATE = ("simulate", "is_simulated")


def __getattr__(name: str) -> Any:
    """Import a public name from its submodule the first time it is asked for, and keep it."""
    if name in _SIMULATE:
        module = importlib.import_module(f"{__name__}.simulate")
        return module if name == "simulate" else module.is_simulated
    source = _SOURCES.get(name)
    if source is None:
        from devicekit.messages import Message, localised

        raise localised(
            AttributeError,
            Message(f"module {__name__!r} has no attribute {name!r}", f"模块 {__name__!r} 没有属性 {name!r}"),
        )
    value = getattr(importlib.import_module(f"{__name__}.{source}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_SOURCES) | set(_SIMULATE))


class _Package(types.ModuleType):
    """The package's module type: a submodule that shares its name with a public function (`explain`,
    `prepare`) does not replace that function when it is imported.

    Importing `devicekit.prepare` sets the package's attribute `prepare` to the submodule. With the eager
    imports this package used to have, `from devicekit.prepare import prepare` ran afterwards and put the
    function back; without them, `from devicekit import prepare` would get the module. So the function is
    stored instead, as before (the submodule stays in `sys.modules`).
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if (
            _SOURCES.get(name) == name
            and isinstance(value, types.ModuleType)
            and value.__name__ == f"{__name__}.{name}"
        ):
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
