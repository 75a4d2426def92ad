"""Named GPU profiles for `devicekit.simulate`: what ``torch.cuda.get_device_properties`` reports.

Each profile is what PyTorch reports for one public GPU model: its name (``torch.cuda.get_device_name``),
compute capability (``get_device_capability``; bf16 and TF32 questions follow it: native bf16 from 8.0,
as ``torch.cuda.is_bf16_supported(including_emulation=False)`` decides), total memory in bytes and
number of streaming multiprocessors. The H200's name and capacity are the ones recorded on a real H200
(``results/cuda-messages.json``: ``"gpu": "NVIDIA H200"``, "a total capacity of 139.80 GiB"); the others
are the vendor's published figures for the named board, not measured here (memory as the driver reports
it is a little under the marketing size).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PROFILES", "GpuProfile"]

_GIB = 1024**3


@dataclass(frozen=True)
class GpuProfile:
    """One simulated GPU model.

    Attributes:
        key: the name `simulate` accepts (``"H200"``).
        name: what ``torch.cuda.get_device_name()`` returns.
        major: compute capability, major.
        minor: compute capability, minor.
        total_memory: bytes, as ``get_device_properties().total_memory``.
        multi_processor_count: streaming multiprocessors.
    """

    key: str
    name: str
    major: int
    minor: int
    total_memory: int
    multi_processor_count: int

    @property
    def native_bf16(self) -> bool:
        """bfloat16 in hardware: compute capability 8.0 (Ampere) or newer."""
        return self.major >= 8


PROFILES: dict[str, GpuProfile] = {
    p.key: p
    for p in (
        GpuProfile("H200", "NVIDIA H200", 9, 0, int(139.80 * _GIB), 132),
        GpuProfile("H100", "NVIDIA H100 80GB HBM3", 9, 0, int(79.19 * _GIB), 132),
        GpuProfile("A100", "NVIDIA A100-SXM4-80GB", 8, 0, int(79.25 * _GIB), 108),
        GpuProfile("V100", "Tesla V100-SXM2-16GB", 7, 0, int(15.77 * _GIB), 80),
        GpuProfile("T4", "Tesla T4", 7, 5, int(14.58 * _GIB), 40),
        GpuProfile("RTX 4090", "NVIDIA GeForce RTX 4090", 8, 9, int(23.64 * _GIB), 128),
    )
}
