"""What this machine offers the course: one definition, used by `autocast_dtype`, ``scripts/gpu-check`` and
the labs' routing (a lab whose metadata ``needs`` a capability runs only where `capabilities` says so).

bf16 is defined once here: *native* bfloat16 arithmetic. A GPU that can only emulate bf16 (a T4: the
plain `torch.cuda.is_bf16_supported()` says True because a bf16 tensor can be created) does not count,
because autocast in bf16 there is slow and the lesson's timings would be wrong.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from devicekit.messages import Message, localised

__all__ = ["Capabilities", "capabilities", "native_bf16"]


def native_bf16(index: int | None = None) -> bool:
    """bfloat16 in hardware on CUDA GPU ``index`` (the current one when None); False without CUDA.

    `torch.cuda.is_bf16_supported(including_emulation=False)` asks only the *current* device, so for
    another index the compute capability is read directly: CUDA needs 8.0 (Ampere) or newer, ROCm counts.
    """
    if not torch.cuda.is_available():
        return False
    if torch.version.hip:
        return True
    if index is None:
        try:
            return bool(torch.cuda.is_bf16_supported(including_emulation=False))
        except TypeError:  # a torch without the keyword: ask the hardware, as the keyword does
            index = torch.cuda.current_device()
    return torch.cuda.get_device_capability(index)[0] >= 8


@dataclass(frozen=True)
class Capabilities:
    """What a runner can run, in the vocabulary of the labs' ``metadata.devicekit.needs``."""

    cpu: bool
    cuda: bool
    #: native bfloat16 (see the module docstring); on a CPU-only runner, the CPU's bf16 kernels.
    bf16: bool
    two_processes: bool
    gpu_count: int

    def satisfies(self, needs: list[str] | tuple[str, ...]) -> bool:
        """Whether every need of a lab (``cpu``, ``cuda``, ``bf16``, ``2-processes``) is met here."""
        have = {"cpu": self.cpu, "cuda": self.cuda, "bf16": self.bf16, "2-processes": self.two_processes}
        unknown = set(needs) - set(have)
        if unknown:
            raise localised(
                ValueError,
                Message(
                    f"unknown needs {sorted(unknown)}; known: {sorted(have)}",
                    f"未知的运行条件 {sorted(unknown)}；已知的有：{'、'.join(sorted(have))}",
                ),
            )
        return all(have[need] for need in needs)

    def as_dict(self) -> dict[str, bool]:
        """The needs vocabulary as a dict (what ``gpu-check`` records)."""
        return {"cpu": self.cpu, "cuda": self.cuda, "bf16": self.bf16, "2-processes": self.two_processes}


def capabilities() -> Capabilities:
    """This machine's capabilities. On CUDA, bf16 means native bf16 on every visible GPU."""
    cuda = torch.cuda.is_available()
    count = torch.cuda.device_count() if cuda else 0
    bf16 = all(native_bf16(i) for i in range(count)) if cuda else True  # CPU kernels support bf16
    return Capabilities(
        cpu=True, cuda=cuda, bf16=bf16, two_processes=(os.cpu_count() or 1) >= 2, gpu_count=count
    )
