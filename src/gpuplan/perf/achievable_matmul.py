"""Measured matmul realisation: the share of its spec peak each accelerator's matmuls reach, relative to H100 SXM.

Spec sheets overstate some accelerators more than others. Large, well-shaped matmuls timed on the device
(Maximum Achievable Matmul FLOPS, data/achievable-matmul.csv, with their sources) reach 80% of the spec on H100
SXM in BF16 and 71% in FP8, but 95% on Gaudi 2, 70% on Gaudi 3 (its MME runs at 1600 MHz, not the white paper's
1750), and 51% on MI300X. The serving estimator's compute efficiency (eta_c) was fitted mostly on Hopper rows,
so a device's compute roof is scaled by its measured efficiency over H100's at the same precision: the
realisation. It is a property of the hardware and its matmul library, measured once per device, not fitted to
the serving rows; the architecture factors (vendor_efficiency) then carry only what matmuls do not explain.

A precision not measured on a device takes its nearest measured one (FP4 and INT8 math: FP8, else BF16; MI300X
FP8: BF16). A device nobody timed whose die sibling was takes the sibling's share of its own spec peak (MI350X:
MI355X's die at 2.2 GHz against 2.4; the file's row says "not timed" and is an upper bound, a lower power limit can
only hold it lower), so a slower-clocked sibling never comes out faster than the part that was timed. A device nobody
measured keeps 1.0 and its architecture factor, fitted or a pessimistic prior.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from gpuplan.errors import UsageError

DATA_FILE = "achievable-matmul.csv"
REFERENCE_GPU = "H100-SXM"
# The measured precision that stands for each compute precision, nearest first.
_STANDS_FOR: dict[str, tuple[str, ...]] = {
    "bf16": ("bf16",), "fp16": ("bf16",), "int4": ("bf16",),
    "fp8": ("fp8", "bf16"), "int8": ("fp8", "bf16"), "fp4": ("fp8", "bf16"),
}


@dataclass(frozen=True)
class Realisation:
    """A device's measured matmul efficiency relative to the reference's, for one compute precision."""

    factor: float  # multiplies the compute roof; 1.0 where nothing is measured
    measured_precision: str | None
    mamf_tflops: float | None
    note: str


@lru_cache(maxsize=1)
def _rows() -> tuple[dict, ...]:
    text = resources.files("gpuplan.perf.data").joinpath(DATA_FILE).read_text(encoding="utf-8")
    return tuple(csv.DictReader(io.StringIO(text)))


@lru_cache(maxsize=1)
def measurements() -> dict[tuple[str, str], float]:
    """(GPU id, precision) -> measured achievable matmul TFLOPS."""
    return {(row["gpu_id"], row["precision"]): float(row["mamf_tflops"]) for row in _rows()}


@lru_cache(maxsize=1)
def _untimed() -> frozenset[tuple[str, str]]:
    return frozenset((r["gpu_id"], r["precision"]) for r in _rows() if r["note"].startswith("not timed"))


def derived(gpu_id: str, precision: str) -> bool:
    """Whether the row is a die sibling's measurement scaled to this device's clock, not a timing of its own (the
    file's note says "not timed")."""
    return (gpu_id, precision) in _untimed()


def _efficiency(gpu, precision: str) -> float | None:
    """Measured TFLOPS over the catalog's spec peak for `precision`, or None."""
    mamf = measurements().get((gpu.id, precision))
    if mamf is None:
        return None
    try:
        peak = gpu.peak_tflops(precision)
    except UsageError:  # the catalog lists no such tensor cores: nothing to scale
        return None
    return mamf / peak if peak and peak > 0 else None


@lru_cache(maxsize=8)
def _reference_efficiency(precision: str) -> float | None:
    """The reference device's measured share of its spec peak in `precision` (looked up once per precision)."""
    from gpuplan.catalog.gpus import get_gpu

    return _efficiency(get_gpu(REFERENCE_GPU), precision)


def realisation(gpu, precision: str) -> Realisation:
    """How much more (or less) of its spec peak `gpu` reaches in `precision` matmuls than H100 SXM does."""
    for p in _STANDS_FOR.get(str(precision).lower(), ()):
        own, theirs = _efficiency(gpu, p), _reference_efficiency(p)
        if own is None or not theirs:
            continue
        f = own / theirs
        mamf = measurements()[(gpu.id, p)]
        how = "put at (a die sibling's measurement at this clock)" if derived(gpu.id, p) else "measured at"
        return Realisation(f, p, mamf, f"{gpu.id} {p} matmuls {how} {mamf:g} TFLOPS, {own:.0%} of the spec "
                                       f"peak, against {theirs:.0%} on {REFERENCE_GPU}: compute roof x{f:.2f}")
    return Realisation(1.0, None, None, f"no matmul measurement for {gpu.id} in {precision}: spec peak at "
                                         f"{REFERENCE_GPU}'s realisation (the architecture factor carries the rest)")
