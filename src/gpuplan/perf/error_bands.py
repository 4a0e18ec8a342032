"""Per-regime uncertainty of the training estimator, measured leave-one-source-out.

`benchmarks/validate_training.py --write-bands` writes data/training-error-bands.json: for each
regime, quantiles (p10, p50, p90) of log(predicted / measured) over the rows of the validation set
when every row's source was held out of the fit. A planner turns a point estimate T into a band
T / exp(p90) .. T / exp(p10) (a positive log-ratio means the estimator is optimistic on time, so the
true time is longer).

A training request falls in exactly one regime; the first rule that matches wins, so hardware with
its own software stack (Gaudi, AMD) comes before model shape, and shape before precision.
"""
from __future__ import annotations

import json
import math
from functools import lru_cache
from importlib import resources

REGIMES = ("gaudi", "amd", "moe", "lora", "long_context", "small", "blackwell", "fp8", "dense")
LONG_CONTEXT_TOKENS = 32768  # sequences from 32k up: context parallelism and attention dominate
SMALL_ACTIVE_PARAMS = 4.5e9  # dense models <= 4B (with rounding headroom): small GEMMs, launch-bound
BLACKWELL_IDS = ("B200", "GB200", "B300", "GB300")


def classify_fields(*, is_moe: bool, active_params: float, gpu_vendor: str, gpu_id: str, seq_len: int,
                    method: str = "full", precision: str = "bf16") -> str:
    """Regime of a training request from plain fields (see the module docstring for the order)."""
    vendor = (gpu_vendor or "").lower()
    gid = (gpu_id or "").upper()
    if vendor == "intel" or gid.startswith("GAUDI"):
        return "gaudi"
    if vendor == "amd" or gid.startswith("MI"):
        return "amd"
    if is_moe:
        return "moe"
    if method in ("lora", "qlora"):
        return "lora"
    if seq_len >= LONG_CONTEXT_TOKENS:
        return "long_context"
    if active_params <= SMALL_ACTIVE_PARAMS:
        return "small"
    if gid in BLACKWELL_IDS:
        return "blackwell"
    if precision in ("fp8", "fp4"):
        return "fp8"
    return "dense"


def classify_training(spec, gpu, workload) -> str:
    """Regime of a request: `spec` a ModelSpec, `gpu` a catalog Gpu, `workload` a TrainingWorkload."""
    from gpuplan.perf.training_shape import model_shape

    shape = model_shape(spec)
    active = float(getattr(shape, "active_params", 0) or getattr(spec, "published_active_params", 0) or 0)
    if not active:
        active = float(getattr(shape, "total_params", 0) or spec.published_params or 0)
    return classify_fields(is_moe=spec.n_experts > 0, active_params=active, gpu_vendor=gpu.vendor, gpu_id=gpu.id,
                           seq_len=workload.seq_len, method=workload.method, precision=workload.precision)


@lru_cache(maxsize=1)
def load_bands() -> dict:
    text = resources.files("gpuplan.perf.data").joinpath("training-error-bands.json").read_text(encoding="utf-8")
    return json.loads(text)


def band_for(regime: str) -> dict | None:
    """{"n", "p10", "p50", "p90"} (log predicted/measured) for a regime, or None when it has no rows."""
    return load_bands().get("regimes", {}).get(regime)


def time_band(point: float, regime: str) -> tuple[float, float, float]:
    """(p10, p50, p90) of the true quantity (time or GPU-hours) given the estimator's point value.
    A regime without measured rows gets the widest band measured over all regimes (unknown is
    pessimistic)."""
    b = band_for(regime)
    if b is None:
        bands = [v for v in load_bands().get("regimes", {}).values() if v]
        b = {"p10": min(v["p10"] for v in bands), "p50": 0.0, "p90": max(v["p90"] for v in bands)} if bands else \
            {"p10": 0.0, "p50": 0.0, "p90": 0.0}
    # predicted/measured = exp(q)  =>  measured = predicted / exp(q); the low residual quantile is the high side
    return point / math.exp(b["p90"]), point / math.exp(b["p50"]), point / math.exp(b["p10"])
