"""Checkpoint size, write time and interval: what a run pays to survive failures.

A checkpoint is insurance: every save blocks training for `delta`, every failure throws
away the work since the last save and pays a restart `R`. Young (1974) and Daly (2006)
give the interval that minimises the expected wall time for a job-level MTBF `M`; the
Daly expression (formulas.md §7) is exact for Poisson failures that can also strike
during a restart, so the planner and the Monte Carlo share one model.

Functions take floats or numpy arrays (the planner calls them for thousands of offers);
a float in gives a float out. Hours are the unit of time unless a name says otherwise.
"""
from __future__ import annotations

import json
import math
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from gpuplan.errors import UsageError

# Resumable state per parameter for mixed-precision Adam: bf16 weights (2) + fp32 master
# weights (4) + Adam first and second moments (4 + 4). Gradients are not saved.
RESUMABLE_BYTES_PER_PARAM = 14.0
WEIGHTS_ONLY_BYTES_PER_PARAM = 2.0  # bf16/fp16 weights for inference or export
# LoRA/QLoRA save only the adapters: about 1 % of the base parameters at rank 16 on all
# linear layers of a 7-70B model (order of magnitude; pass trainable_params for exact).
ADAPTER_TRAINABLE_FRACTION = 0.01

# Storage path defaults (documented; override per call). A cloud node writing a sharded
# checkpoint to a shared filesystem or object store sustains a few GB/s (one 25-100 Gb/s
# storage NIC, parallel multipart uploads); the store itself caps the aggregate. Llama 3's
# dedicated storage reached 2 TB/s sustained (formulas.md §7): a rented cluster's shared
# store is assumed 50x smaller.
NODE_WRITE_GB_PER_S = 2.5
STORAGE_WRITE_GB_PER_S = 40.0
SERIALIZATION_S = 10.0  # gather, serialise and fsync metadata, independent of size

# Sanity ceilings: beyond these an input is a typo, not a plan.
MAX_PARAMS = 1e15
MAX_HOURS = 1e7


# ----------------------------------------------------------------------------- validation
def as_array(value: Any, what: str, *, allow_zero: bool = False, allow_inf: bool = False,
             maximum: float | None = None) -> np.ndarray:
    """A float array of finite (or +inf where allowed), non-negative values; else one-line UsageError."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise UsageError(f"{what} must be a number, got {value!r}") from None
    if np.isnan(arr).any():
        raise UsageError(f"{what} must be a number, got NaN")
    if np.isneginf(arr).any() or (not allow_inf and np.isposinf(arr).any()):
        raise UsageError(f"{what} must be finite, got {_show(value)}")
    if (arr < 0).any():
        raise UsageError(f"{what} must not be negative, got {_show(value)}")
    if not allow_zero and (arr == 0).any():
        raise UsageError(f"{what} must be positive, got {_show(value)}")
    if maximum is not None and (arr[np.isfinite(arr)] > maximum).any():
        raise UsageError(f"{what} is implausibly large ({_show(value)}; limit {maximum:g})")
    return arr


def as_float(value: Any, what: str, **kw: Any) -> float:
    return float(as_array(value, what, **kw))


def _show(value: Any) -> str:
    arr = np.asarray(value, dtype=float)
    if arr.ndim == 0:
        return f"{float(arr):g}"
    bad = arr[~np.isfinite(arr) | (arr <= 0)]
    return f"{float(bad[0]):g} in an array" if bad.size else f"an array of {arr.size}"


def _out(arr: np.ndarray, *inputs: Any) -> Any:
    """Scalars in, float out; arrays in, array out."""
    if all(np.ndim(x) == 0 for x in inputs):
        return float(arr)
    return arr


# ----------------------------------------------------------------------------- size and write time
def checkpoint_bytes(params: float, method: str = "full", *, weights_only: bool = False,
                     trainable_params: float | None = None,
                     bytes_per_param: float | None = None) -> float:
    """Bytes of one checkpoint. Full training saves the resumable optimizer state (14 B/param);
    LoRA/QLoRA save the adapters' state only; weights_only saves bf16 weights (2 B/param)."""
    p = as_float(params, "parameter count", maximum=MAX_PARAMS)
    m = method.lower()
    if m not in ("full", "lora", "qlora"):
        raise UsageError(f"unknown training method {method!r}; use full, lora or qlora")
    per_param = bytes_per_param if bytes_per_param is not None else (
        WEIGHTS_ONLY_BYTES_PER_PARAM if weights_only else RESUMABLE_BYTES_PER_PARAM)
    per_param = as_float(per_param, "bytes per parameter", maximum=64)
    if m == "full":
        return p * per_param
    trainable = (as_float(trainable_params, "trainable parameters", maximum=MAX_PARAMS)
                 if trainable_params is not None else p * ADAPTER_TRAINABLE_FRACTION)
    return trainable * per_param


def write_seconds(size_bytes: Any, nodes: Any = 1, *, node_gb_per_s: float = NODE_WRITE_GB_PER_S,
                  storage_gb_per_s: float = STORAGE_WRITE_GB_PER_S,
                  serialization_s: float = SERIALIZATION_S) -> Any:
    """Blocking time to write one sharded checkpoint: each node writes its share over its own
    link, the store caps the total: max(S/BW_store, (S/n)/BW_node) + serialisation."""
    size = as_array(size_bytes, "checkpoint size", allow_zero=True, maximum=1e18)
    n = as_array(nodes, "node count", maximum=1e6)
    bw_node = as_float(node_gb_per_s, "per-node storage bandwidth (GB/s)", maximum=1e4) * 1e9
    bw_store = as_float(storage_gb_per_s, "aggregate storage bandwidth (GB/s)", maximum=1e6) * 1e9
    ser = as_float(serialization_s, "serialisation time (s)", allow_zero=True, maximum=1e5)
    t = np.maximum(size / bw_store, size / n / bw_node) + np.where(size > 0, ser, 0.0)
    return _out(t, size_bytes, nodes)


# ----------------------------------------------------------------------------- intervals
def young_interval_h(delta_h: Any, mtbf_h: Any) -> Any:
    """Young (1974): tau = sqrt(2 delta M). Infinite M (no failures): never checkpoint (inf)."""
    d = as_array(delta_h, "checkpoint write time", allow_zero=True, maximum=MAX_HOURS)
    m = as_array(mtbf_h, "MTBF", allow_inf=True)
    with np.errstate(invalid="ignore"):
        tau = np.sqrt(2.0 * d * m)
    return _out(tau, delta_h, mtbf_h)


def daly_interval_h(delta_h: Any, mtbf_h: Any) -> Any:
    """Daly (2006) higher-order optimum: sqrt(2dM)[1 + sqrt(d/2M)/3 + (d/2M)/9] - d for d < 2M,
    else M. A zero write time gives zero (checkpoint continuously; the factor is then 1)."""
    d = as_array(delta_h, "checkpoint write time", allow_zero=True, maximum=MAX_HOURS)
    m = as_array(mtbf_h, "MTBF", allow_inf=True)
    d, m = np.broadcast_arrays(d, m)
    with np.errstate(invalid="ignore", divide="ignore"):
        x = np.where(np.isinf(m), 0.0, d / (2.0 * m))
        tau = np.sqrt(2.0 * d * m) * (1.0 + np.sqrt(x) / 3.0 + x / 9.0) - d
    tau = np.where(d >= 2.0 * m, m, tau)
    tau = np.where(np.isinf(m), np.inf, tau)
    return _out(tau, delta_h, mtbf_h)


def daly_wall_factor(tau_h: Any, delta_h: Any, restart_h: Any, mtbf_h: Any) -> Any:
    """Expected T_wall / T_s = (M/tau) e^(R/M) (e^((tau+delta)/M) - 1) (Daly 2006, eq. 20);
    with no failures (M = inf) it is (tau + delta)/tau, and 1 when tau is also inf."""
    tau = as_array(tau_h, "checkpoint interval", allow_inf=True)
    d = as_array(delta_h, "checkpoint write time", allow_zero=True, maximum=MAX_HOURS)
    r = as_array(restart_h, "restart time", allow_zero=True, maximum=MAX_HOURS)
    m = as_array(mtbf_h, "MTBF", allow_inf=True)
    tau, d, r, m = np.broadcast_arrays(tau, d, r, m)
    finite_m = np.isfinite(m)
    safe_m = np.where(finite_m, m, 1.0)
    safe_tau = np.where(np.isfinite(tau), tau, 1.0)
    with np.errstate(over="ignore", invalid="ignore"):
        f_fail = (safe_m / safe_tau) * np.exp(r / safe_m) * np.expm1((safe_tau + d) / safe_m)
        f_none = (safe_tau + d) / safe_tau
    f = np.where(finite_m, f_fail, f_none)
    f = np.where(np.isinf(tau), np.where(finite_m, np.inf, 1.0), f)
    return _out(f, tau_h, delta_h, restart_h, mtbf_h)


def optimal_wall_factor(delta_h: Any, restart_h: Any, mtbf_h: Any) -> Any:
    """The Daly factor at Daly's optimal interval (what the planner uses by default)."""
    return daly_wall_factor(daly_interval_h(delta_h, mtbf_h), delta_h, restart_h, mtbf_h)


def first_order_overhead(tau_h: Any, delta_h: Any, restart_h: Any, mtbf_h: Any) -> Any:
    """Young's first-order overhead delta/tau + (tau+delta)/2M + R/M: cheap and explainable
    (save cost + expected rework + restart), accurate while tau + delta << M."""
    tau = as_array(tau_h, "checkpoint interval")
    d = as_array(delta_h, "checkpoint write time", allow_zero=True)
    r = as_array(restart_h, "restart time", allow_zero=True)
    m = as_array(mtbf_h, "MTBF", allow_inf=True)
    f = d / tau + (tau + d) / (2.0 * m) + r / m
    return _out(f, tau_h, delta_h, restart_h, mtbf_h)


def efficiency(tau_h: Any, delta_h: Any, restart_h: Any, mtbf_h: Any) -> Any:
    """Useful share of wall time (T_s / T_wall); billed GPU-hours = useful / efficiency."""
    return 1.0 / daly_wall_factor(tau_h, delta_h, restart_h, mtbf_h)


def rework_per_failure_h(tau_h: float, delta_h: float, restart_h: float) -> float:
    """Expected wall time one failure costs: half an interval (and save) of lost work, plus the restart."""
    tau = as_float(tau_h, "checkpoint interval")
    d = as_float(delta_h, "checkpoint write time", allow_zero=True)
    return (tau + d) / 2.0 + as_float(restart_h, "restart time", allow_zero=True)


# ----------------------------------------------------------------------------- checkpoint on notice
@cache
def _provider_data() -> dict:
    with resources.files("gpuplan.economics").joinpath("data/preemption.json").open(encoding="utf-8") as f:
        return json.load(f)


def spot_notice_seconds(provider: str) -> float | None:
    """Advance warning a provider gives before reclaiming spot capacity (None = unknown/none)."""
    row = _provider_data()["spot_notice_s"].get(provider.lower())
    return None if row is None or row.get("seconds") is None else float(row["seconds"])


def notice_missed_share() -> float:
    """Share of preemptions whose notice comes too late to save (notices are best effort): those lose
    the work since the last checkpoint, like a hardware failure."""
    return float(_provider_data()["notice_missed_share"]["value"])


def fits_notice(delta_s: float, notice_s: float | None, margin: float = 0.8) -> bool:
    """A blocking save that fits within `margin` of the notice lets preemptions cost only a restart."""
    d = as_float(delta_s, "checkpoint write time (s)", allow_zero=True)
    if notice_s is None:
        return False
    return d <= margin * as_float(notice_s, "notice (s)", allow_zero=True)


def wall_factor_with_notice(tau_h: Any, delta_h: Any, restart_h: Any, hardware_mtbf_h: Any,
                            preemptions_per_hour: Any) -> Any:
    """Wall factor when preemptions are announced early enough to save first: hardware faults
    follow Daly; each preemption then costs one save and one restart, no rework.
    T_wall = T_daly / (1 - rate (R + delta)); inf when restarts alone eat the whole clock."""
    base = np.asarray(daly_wall_factor(tau_h, delta_h, restart_h, hardware_mtbf_h), dtype=float)
    rate = as_array(preemptions_per_hour, "preemption rate", allow_zero=True)
    r = as_array(restart_h, "restart time", allow_zero=True)
    d = as_array(delta_h, "checkpoint write time", allow_zero=True)
    busy = rate * (r + d)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        f = np.where(busy < 1.0, base / np.maximum(1.0 - busy, 1e-300), np.inf)
    return _out(f, tau_h, delta_h, restart_h, hardware_mtbf_h, preemptions_per_hour)


def checkpoint_plan(params: float, nodes: int, mtbf_h: float, restart_h: float, method: str = "full",
                    **write_kw: Any) -> dict[str, float]:
    """One call for a report: size, write time, Young and Daly intervals, factor, overhead."""
    size = checkpoint_bytes(params, method)
    delta_h = write_seconds(size, nodes, **write_kw) / 3600.0
    tau = daly_interval_h(delta_h, mtbf_h)
    factor = daly_wall_factor(tau, delta_h, restart_h, mtbf_h) if math.isfinite(tau) else 1.0
    return {
        "checkpoint_bytes": size, "write_s": delta_h * 3600.0, "mtbf_h": float(mtbf_h),
        "restart_h": float(restart_h), "young_interval_h": young_interval_h(delta_h, mtbf_h),
        "daly_interval_h": tau, "wall_factor": factor, "overhead": factor - 1.0,
    }


def expected_wall_hours(useful_h: float, tau_h: float, delta_h: float, restart_h: float, mtbf_h: float) -> float:
    """Exact expected wall time of a job cut into whole intervals plus a shorter last one
    (Daly's formula treats T_s/tau as a real number; the two agree when T_s >> tau).
    A segment of s hours costs M e^(R/M) (e^(s/M) - 1) in expectation."""
    ts = as_float(useful_h, "useful compute hours", maximum=MAX_HOURS)
    tau = as_float(tau_h, "checkpoint interval", allow_inf=True)
    d = as_float(delta_h, "checkpoint write time", allow_zero=True)
    r = as_float(restart_h, "restart time", allow_zero=True)
    m = as_float(mtbf_h, "MTBF", allow_inf=True)
    n_full = math.floor(ts / tau) if math.isfinite(tau) else 0
    rem = ts - n_full * tau if math.isfinite(tau) else ts
    segs = [(n_full, tau + d if n_full else 0.0)] + ([(1, rem + d)] if rem > 1e-12 * ts else [])
    if not math.isfinite(m):
        return sum(c * s for c, s in segs)
    return sum(c * m * math.exp(r / m) * math.expm1(s / m) for c, s in segs)
