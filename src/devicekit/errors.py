"""Exceptions raised by devicekit.

There is one: `DeviceMismatchError`.  It subclasses `RuntimeError` on
purpose, because PyTorch reports its own device errors ("Expected all tensors to be on the same device ...")
as `RuntimeError`: code that already catches those keeps working when devicekit finds the problem first.
Like every devicekit exception it carries its text in both languages (`.en`, `.zh`); `str(err)` reads in
the learner's language (see `devicekit.messages`).
"""

from __future__ import annotations

from typing import Any

from .messages import LocalisedError, Message

__all__ = ["DeviceMismatchError"]


class DeviceMismatchError(LocalisedError, RuntimeError):
    """Tensors that must share a device do not.

    Raised by `check_devices` (static pre-flight check) and by
    `strict_devices` (an op received tensors on several devices).

    Attributes:
        en: the message in English.
        zh: the message in Chinese.
        findings: for `check_devices`, one `DeviceFinding` per offending
            tensor (parameter, buffer, attribute, input ...); empty otherwise.
        op: for `strict_devices`, the name of the ATen op, e.g. ``"aten.mm.default"``; else `None`.
        devices: the device strings involved, e.g. ``("cpu", "meta")``.
    """

    def __init__(
        self,
        message: Message | str,
        *,
        findings: tuple[Any, ...] = (),
        op: str | None = None,
        devices: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.findings = tuple(findings)
        self.op = op
        self.devices = tuple(devices)

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only arguments are lost by the default exception pickling (DataLoader workers,
        # multiprocessing); rebuild through a helper so the attributes survive a round trip.
        return (_rebuild, (self.message, self.findings, self.op, self.devices))


def _rebuild(
    message: Message | str, findings: tuple[Any, ...], op: str | None, devices: tuple[str, ...]
) -> DeviceMismatchError:
    return DeviceMismatchError(message, findings=findings, op=op, devices=devices)
