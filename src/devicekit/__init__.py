"""devicekit: put every tensor on the right device, and understand the error when one is not.

The helper library of the PyTorch device-consistency course.
"""

from devicekit.device import (
    ENV_VAR,
    DeviceManager,
    UnknownDeviceError,
    available_devices,
    best_device,
    mismatch_device,
    resolve_device,
)

__version__ = "0.1.0"

__all__ = [
    "ENV_VAR",
    "DeviceManager",
    "UnknownDeviceError",
    "available_devices",
    "best_device",
    "mismatch_device",
    "resolve_device",
]
