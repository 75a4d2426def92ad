"""`DeviceManager`: decide once where this program's tensors live, then move, load and check against it.

The rest of the code asks the manager (`dm.device`, `dm.to(batch)`) instead of sprinkling
``"cuda" if torch.cuda.is_available() else "cpu"`` around, which is how many device mismatches start.
"""

from __future__ import annotations

import os
import re
from collections.abc import Hashable, Iterable
from typing import TypeVar

import torch

from devicekit.amp import autocast, grad_scaler
from devicekit.check import check_devices
from devicekit.device import DeviceLike, available_devices, best_device, resolve_device
from devicekit.lang import current_language
from devicekit.loader import DeviceLoader
from devicekit.messages import Message
from devicekit.prepare import prepare
from devicekit.transfer import to_device

__all__ = ["ENV_VAR", "DeviceManager"]

#: Environment variable that overrides the automatic choice, e.g. ``DEVICEKIT_DEVICE=cpu``.
ENV_VAR = "DEVICEKIT_DEVICE"

T = TypeVar("T")


# describe() in Chinese: the fixed phrases it uses.
_ZH = {
    "no accelerator found": "未找到加速器",
    "automatic choice": "自动选择",
    "explicit argument": "显式传入的参数",
    f"the {ENV_VAR} environment variable": f"环境变量 {ENV_VAR}",
    "Apple GPU (Metal Performance Shaders)": "Apple GPU（Metal Performance Shaders）",
    "no data: tensors carry only shape, dtype and device": "没有数据：张量只有形状、dtype 和设备",
}


def _gib(n_bytes: int) -> str:
    return f"{n_bytes / 2**30:.1f} GiB"


_INTEGER = re.compile(r"[+-]?\d+")


def _env_device(text: str) -> str | int:
    """The value of ``DEVICEKIT_DEVICE`` as a device: ``"0"`` is the int 0 (accelerator index 0), as the
    error messages offer ("an int N"); ``"-1"`` becomes -1, which `resolve_device` refuses clearly."""
    stripped = text.strip()
    return int(stripped) if _INTEGER.fullmatch(stripped) else text


class DeviceManager:
    """Decides once where this program's tensors live, and moves things there.

    Args:
        device: ``None`` to pick automatically (the ``DEVICEKIT_DEVICE`` environment variable if set, e.g.
            ``cpu``, ``cuda:1`` or ``0`` for accelerator index 0, else
            the best available accelerator, else the CPU), or an explicit device (``"cuda:1"``,
            ``torch.device("mps")``, ``0`` for index 0 of this machine's accelerator), read by
            `devicekit.as_device`. An unknown or unavailable device raises `UnknownDeviceError` naming the
            devices this machine does have.
    """

    def __init__(self, device: DeviceLike | None = None) -> None:
        if device is None:
            override = os.environ.get(ENV_VAR)
            if override is not None:
                self._device = resolve_device(_env_device(override), origin=f"{ENV_VAR}=")
                self.source = f"the {ENV_VAR} environment variable"
            else:
                self._device = best_device()
                self.source = "automatic choice"
        else:
            self._device = resolve_device(device)
            self.source = "explicit argument"

    @property
    def device(self) -> torch.device:
        """The chosen `torch.device`, with the index tensors created there report (``cuda:0``, ``mps:0``).

        So ``torch.ones(1, device=dm.device).device == dm.device`` holds on every backend; a bare
        ``torch.device("cuda")`` names the same GPU as ``cuda:0`` but does not compare equal to it.
        """
        return self._device

    @property
    def type(self) -> str:
        """``"cuda"``, ``"mps"``, ``"xpu"``, ``"cpu"`` or ``"meta"``: the string ``torch.autocast`` wants."""
        return self._device.type

    @property
    def is_accelerator(self) -> bool:
        """True when the chosen device is a real accelerator (not the CPU, not ``meta``)."""
        return self._device.type not in ("cpu", "meta")

    def describe(self, lang: str | None = None) -> str:
        """One line: the device, what hardware it is, and why it was chosen.

        In ``lang`` (``"en"``/``"zh"``); by default in the notebook's language (`devicekit.lang`), English
        when that is unknown.
        """
        dev = self._device
        torch_line = f"torch {torch.__version__}"
        if dev.type == "cuda":
            props = torch.cuda.get_device_properties(dev)
            hw = f"{props.name}, {_gib(props.total_memory)}, CUDA {torch.version.cuda}"
            if torch.version.cuda is None:  # a CPU build answering for CUDA: devicekit.simulate
                simulated = Message(
                    f"simulated {props.name}, {_gib(props.total_memory)}",
                    f"模拟的 {props.name}，{_gib(props.total_memory)}",
                )
                hw = simulated.en if (lang or current_language()) != "zh" else simulated.zh
        elif dev.type == "mps":
            hw = "Apple GPU (Metal Performance Shaders)"
        elif dev.type == "xpu":
            hw = torch.xpu.get_device_name(dev)
        elif dev.type == "meta":
            hw = "no data: tensors carry only shape, dtype and device"
        else:
            others = [d for d in available_devices() if d not in ("cpu", "meta")]
            hw = "no accelerator found" if not others else ""
            if others:
                present = Message(
                    f"accelerators present but not chosen: {', '.join(others)}",
                    f"有加速器但未选用：{'、'.join(others)}",
                )
                hw = present.en if (lang or current_language()) != "zh" else present.zh
        if (lang or current_language()) == "zh":
            hw = _ZH.get(hw, hw)
            return f"{dev}（{hw}；{torch_line}；{_ZH.get(self.source, self.source)}）"
        return f"{dev} ({hw}; {torch_line}; {self.source})"

    # -- moving things to the device -------------------------------------------------------------

    def to(self, obj: T, non_blocking: bool | None = None, skip_keys: Iterable[Hashable] | str = ()) -> T:
        """Return ``obj`` (a tensor or any nested batch) with every tensor on this device.

        See `devicekit.to_device` for what is walked; ``non_blocking=None`` is on only for host->CUDA/XPU.
        """
        return to_device(obj, self._device, non_blocking=non_blocking, skip_keys=skip_keys)

    def loader(
        self,
        dataloader: Iterable,
        non_blocking: bool | None = None,
        skip_keys: Iterable[Hashable] | str = (),
    ) -> DeviceLoader:
        """Wrap ``dataloader`` so it yields batches already on this device (prefetched on CUDA).

        ``skip_keys`` names mapping keys whose values stay where they are (e.g. ``"lengths"``).
        """
        return DeviceLoader(dataloader, self._device, non_blocking=non_blocking, skip_keys=skip_keys)

    def prepare(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer | None = None):
        """Move ``model`` (in place) and ``optimizer``'s existing state here; returns what was given."""
        return prepare(model, self._device, optimizer)

    # -- mixed precision ---------------------------------------------------------------------------

    def autocast(self, dtype: torch.dtype | None = None, enabled: bool = True):
        """``torch.autocast`` for this device's type, with a dtype the device supports (bf16 on CPU)."""
        return autocast(self._device, dtype=dtype, enabled=enabled)

    def grad_scaler(self, dtype: torch.dtype | None = None, enabled: bool = True) -> torch.amp.GradScaler:
        """``torch.amp.GradScaler`` for this device, enabled only for float16 autocast."""
        return grad_scaler(self._device, dtype=dtype, enabled=enabled)

    # -- checking ------------------------------------------------------------------------------------

    def check(self, model: torch.nn.Module, *inputs, **kw_inputs):
        """Static pre-flight check of ``model`` and its inputs against this device (runs nothing).

        Raises `devicekit.DeviceMismatchError` naming every misplaced parameter, buffer, attribute or input.
        """
        return check_devices(model, *inputs, device=self._device, **kw_inputs)

    def __repr__(self) -> str:
        return f"DeviceManager(device={str(self._device)!r})"
