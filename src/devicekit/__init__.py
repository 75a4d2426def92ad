"""devicekit: put every tensor on the right device, and understand the error when one is not.

The helper library of the PyTorch device-consistency course. Importing it patches nothing and adds no
hooks: a model's normal forward pass runs exactly as without it.
"""

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

__version__ = "0.1.0"

# devicekit.simulate is imported on first use (devicekit.simulate(...), devicekit.is_simulated(...)):
# importing devicekit stays as cheap as before and registers nothing. The package devicekit.simulate is
# itself callable (devicekit.simulate(gpus=2) is devicekit.simulate.simulate(gpus=2)), so the name means
# the same thing whether or not the submodule was imported first.


def __getattr__(name: str) -> object:
    if name in ("simulate", "is_simulated"):
        import importlib

        module = importlib.import_module("devicekit.simulate")
        return module if name == "simulate" else module.is_simulated
    raise AttributeError(name)


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
