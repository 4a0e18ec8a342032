"""Sanity checks applied to every offer, bundled or live.

Prices below a per-GPU floor are data errors, not bargains: Azure's API once answered $0
for H100 SKUs and a wrong field priced a B200 at $0.01/h (providers.md §3). The floor scales
with the GPU's dense BF16 peak; the ceiling catches unit mix-ups (cents, per-month).
"""
from __future__ import annotations

import math

from gpuplan.catalog.records import Gpu

FLOOR_USD_PER_GPU_HOUR_PER_BF16_TFLOPS = 0.0004  # H100 -> $0.40/h, A100 -> $0.12/h, RTX 4090 -> $0.07/h
ABSOLUTE_FLOOR_USD_PER_GPU_HOUR = 0.03
CEILING_USD_PER_GPU_HOUR = 60.0


def price_floor_usd_per_gpu_hour(gpu: Gpu) -> float:
    return max(ABSOLUTE_FLOOR_USD_PER_GPU_HOUR, FLOOR_USD_PER_GPU_HOUR_PER_BF16_TFLOPS * gpu.bf16_tflops)


def price_problem(gpu: Gpu, price_per_gpu_hour_usd: float) -> str | None:
    """Why a per-GPU hourly price is not believable, or None when it is."""
    p = price_per_gpu_hour_usd
    if p is None or not isinstance(p, (int, float)) or not math.isfinite(p):
        return "price is not a finite number"
    if p <= 0:
        return "price is zero or negative (provider APIs use 0 for 'unknown')"
    floor = price_floor_usd_per_gpu_hour(gpu)
    if p < floor:
        return f"${p:.3f}/GPU-h is below the ${floor:.2f} floor for {gpu.id}"
    if p > CEILING_USD_PER_GPU_HOUR:
        return f"${p:.2f}/GPU-h is above the ${CEILING_USD_PER_GPU_HOUR:.0f} ceiling"
    return None


def memory_problem(gpu: Gpu, reported_gb_per_gpu: float | None) -> str | None:
    """A reported VRAM far from the spec table means the name mapped to the wrong GPU
    (gpuhunt accepts within 7%; vGPU slices report less)."""
    if not reported_gb_per_gpu or reported_gb_per_gpu <= 0:
        return None
    ratio = reported_gb_per_gpu / gpu.memory_gb
    if 0.85 <= ratio <= 1.15:
        return None
    return f"reported {reported_gb_per_gpu:.0f} GB per GPU does not match {gpu.id} ({gpu.memory_gb:.0f} GB)"
