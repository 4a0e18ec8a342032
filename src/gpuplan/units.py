"""Units, decided once: byte and time constants, and human quantities in ('15T', '70B', '2.5k').

Bytes
-----
``GB`` is 10^9 bytes and ``GIB`` is 2^30 bytes. Every size the tool *reports* in "GB" (weights,
checkpoints, datasets, egress, storage prices, host RAM) is decimal, as cloud bills are.

GPU memory is the exception, and it is named: ``Gpu.memory_gb`` (the catalog's ``memory_gb``
column) is the vendor's marketing figure, and that figure is in **binary** gigabytes.
NVIDIA's "80GB" H100 has 81,559 MiB of HBM3 (nvidia-smi), i.e. 79.6 GiB = 85.5 x 10^9 bytes, of
which CUDA reports 79.2 GiB as ``total_memory``; AMD's "192 GB" MI300X shows 191.98 GiB. Reading
80 as 80 x 2^30 (85.9 x 10^9 bytes) is within 1% of what a process can allocate; reading it as
80 x 10^9 would throw away 6% of every GPU. So ``GPU_MEMORY_UNIT = GIB`` and
``gpu_memory_bytes(memory_gb)`` is the one conversion both the training and the serving
estimators use (``Gpu.memory_bytes``, ``inference_memory.device_memory_bytes``). The headroom the
estimators keep free (training: 5% of HBM; serving: the engine's memory fraction) covers the
last percent.

Time
----
``HOURS_PER_MONTH = 730`` (8760 h / 12): the month of every monthly price, volume and horizon.
"""
from __future__ import annotations

import math
import re

from gpuplan.errors import UsageError

GB = 1e9            # decimal gigabyte: reported sizes, storage, egress, RAM
GIB = 2**30         # binary gigabyte (GiB)
MIB = 2**20
GPU_MEMORY_UNIT = GIB  # Gpu.memory_gb is read as GiB: see the module docstring
GIB_TO_GB = GIB / GB
MIB_TO_GB = MIB / GB

HOURS_PER_MONTH = 730.0  # 8760 h / 12
SECONDS_PER_MONTH = HOURS_PER_MONTH * 3600


def gpu_memory_bytes(memory_gb: float) -> float:
    """Bytes of device memory for a catalog `memory_gb` figure (read as GiB, see above)."""
    return memory_gb * GPU_MEMORY_UNIT

_SUFFIX = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12, "p": 1e15}
_PATTERN = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)\s*([kmbgtp]?)\s*$", re.I)


def parse_quantity(text: str | float | int, what: str = "value", allow_zero: bool = False) -> float:
    """A positive finite number, with an optional k/M/B/T/P suffix (case-insensitive)."""
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        m = _PATTERN.match(str(text))
        if not m:
            raise UsageError(f"{what}: {text!r} is not a number (examples: 1e12, 15T, 70B, 2.5k)")
        value = float(m[1]) * _SUFFIX[m[2].lower()]
    if not math.isfinite(value):
        raise UsageError(f"{what} must be a finite number, got {text!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise UsageError(f"{what} must be positive, got {text!r}")
    return value


def split_list(text: str | None) -> list[str] | None:
    """'a, b,,c' -> ['a', 'b', 'c']; None or blank -> None."""
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",") if p.strip()]
    return parts or None
