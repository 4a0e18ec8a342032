"""What a run costs on one offer: whole nodes, billing increments, terms, storage, egress.

An hourly price is not a job price. A job rents whole nodes (ceil(GPUs / GPUs per node));
each billed segment rounds up to the provider's increment and minimum, and on preemptible
capacity every restart lands on new capacity and opens a new segment; a reserved price
applies only to a run that covers its term; checkpoints and datasets sit in paid storage;
the final weights leave over a paid network. Every number used is returned with the
result, so a plan can say why it costs what it costs.

`expected_cost_arrays` is the vectorised form the planner calls over thousands of offers.
"""
from __future__ import annotations

import json
import math
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from gpuplan.economics import checkpoint as ckpt
from gpuplan.economics import preemption
from gpuplan.economics.checkpoint import as_array, as_float
from gpuplan.errors import UsageError
from gpuplan.units import HOURS_PER_MONTH

DEFAULT_BILLING_INCREMENT_S = 3600.0  # unknown granularity: assume hourly (the costly case)
MAX_PRICE_PER_HOUR_USD = 1e6


@cache
def _storage_data() -> dict:
    with resources.files("gpuplan.economics").joinpath("data/storage_prices.json").open(encoding="utf-8") as f:
        return json.load(f)


STORAGE_USD_PER_GB_MONTH: float = float(_storage_data()["default_usd_per_gb_month"])


def storage_price(provider: str | None = None) -> tuple[float, str]:
    """($/GB-month, source) for a provider's object/network storage; the S3-class default otherwise."""
    data = _storage_data()
    row = data["providers"].get((provider or "").lower())
    if row is None:
        return float(data["default_usd_per_gb_month"]), "default: " + data["default_source"]
    return float(row["usd_per_gb_month"]), f"{row['product']} ({row['confidence']}): {row['source']}"


# ----------------------------------------------------------------------------- nodes and billing
def nodes_needed(gpus: Any, gpus_per_node: Any) -> Any:
    """Whole nodes: a 12-GPU job on 8-GPU nodes rents 2 nodes (16 GPUs)."""
    g = as_array(gpus, "GPU count", maximum=1e7)
    per = as_array(gpus_per_node, "GPUs per node", maximum=1e4)
    n = np.ceil(g / per - 1e-9)
    return int(n) if np.ndim(gpus) == 0 and np.ndim(gpus_per_node) == 0 else n


def _increment_s(value: Any) -> np.ndarray:
    arr = np.asarray(DEFAULT_BILLING_INCREMENT_S if value is None else value, dtype=float)
    arr = np.where(np.isnan(arr), DEFAULT_BILLING_INCREMENT_S, arr)  # unknown in a catalog column
    return as_array(arr, "billing increment (s)", maximum=31 * 24 * 3600)


def _minimum_s(value: Any) -> np.ndarray:
    arr = np.asarray(0.0 if value is None else value, dtype=float)
    arr = np.where(np.isnan(arr), 0.0, arr)
    return as_array(arr, "minimum billing (s)", allow_zero=True, maximum=366 * 24 * 3600)


def round_up_hours(hours: Any, increment_s: Any) -> Any:
    """Hours rounded up to a whole number of billing increments."""
    h = as_array(hours, "hours", allow_zero=True, maximum=ckpt.MAX_HOURS)
    inc_h = _increment_s(increment_s) / 3600.0
    out = np.ceil(h / inc_h - 1e-9) * inc_h
    return float(out) if np.ndim(hours) == 0 and np.ndim(increment_s) == 0 else out


def billed_hours(segment_hours: Any, increment_s: float | None, minimum_s: float | None = None) -> float:
    """Exact bill for known segments: each rounds up to the increment and to the minimum."""
    seg = np.atleast_1d(as_array(segment_hours, "segment hours", allow_zero=True, maximum=ckpt.MAX_HOURS))
    inc_h = float(_increment_s(increment_s)) / 3600.0
    min_h = float(_minimum_s(minimum_s)) / 3600.0
    rounded = np.ceil(seg / inc_h - 1e-9) * inc_h
    return float(np.where(seg > 0, np.maximum(rounded, min_h), 0.0).sum())


def expected_billed_hours(wall_h: Any, increment_s: Any, minimum_s: Any = 0.0, segments: Any = 1.0) -> Any:
    """Expected bill for a run split into `segments` billed pieces at random cut points: the total
    rounds up to an increment, and each extra cut wastes half an increment on average; every
    piece pays at least the minimum. Never below the wall time."""
    w = as_array(wall_h, "wall hours", allow_zero=True, maximum=ckpt.MAX_HOURS)
    inc_h = _increment_s(increment_s) / 3600.0
    min_h = _minimum_s(minimum_s) / 3600.0
    seg = as_array(segments, "billed segments", maximum=1e9)
    if (seg < 1).any():
        raise UsageError("billed segments must be at least 1")
    billed = np.ceil(w / inc_h - 1e-9) * inc_h + (seg - 1.0) * inc_h / 2.0
    billed = np.where(w > 0, np.maximum(billed, seg * min_h), 0.0)
    return float(billed) if all(np.ndim(x) == 0 for x in (wall_h, increment_s, minimum_s, segments)) else billed


def expected_cost_arrays(price_per_node_hour: Any, nodes: Any, wall_hours: Any, billing_increment_s: Any,
                         minimum_billing_s: Any = 0.0, segments: Any = 1.0, storage_usd: Any = 0.0,
                         egress_usd: Any = 0.0) -> dict[str, np.ndarray]:
    """Vectorised job cost over offers: billed node-hours x price + storage + egress.
    NaN increments/minimums (unknown in the catalog) read as hourly / none."""
    price = as_array(price_per_node_hour, "price per node-hour", allow_zero=True, maximum=MAX_PRICE_PER_HOUR_USD)
    n = as_array(nodes, "node count", maximum=1e6)
    billed = np.asarray(expected_billed_hours(np.asarray(wall_hours, dtype=float),
                                              np.asarray(billing_increment_s, dtype=float),
                                              np.asarray(minimum_billing_s, dtype=float),
                                              np.asarray(segments, dtype=float)))
    storage = as_array(storage_usd, "storage cost", allow_zero=True)
    egress = as_array(egress_usd, "egress cost", allow_zero=True)
    compute = price * n * billed
    exact = price * n * np.asarray(wall_hours, dtype=float)
    return {"billed_hours": billed, "compute_usd": compute, "rounding_usd": compute - exact,
            "total_usd": compute + storage + egress}


# ----------------------------------------------------------------------------- storage and egress
def storage_cost_usd(checkpoint_bytes: float, checkpoints_kept: int, months: float,
                     usd_per_gb_month: float | None = None, dataset_gb: float = 0.0) -> float:
    """Retained checkpoints plus the dataset, stored for `months`."""
    size_gb = as_float(checkpoint_bytes, "checkpoint size", allow_zero=True, maximum=1e18) / 1e9
    kept = as_float(checkpoints_kept, "checkpoints kept", allow_zero=True, maximum=1e5)
    mo = as_float(months, "storage months", allow_zero=True, maximum=1200)
    price = as_float(STORAGE_USD_PER_GB_MONTH if usd_per_gb_month is None else usd_per_gb_month,
                     "storage price ($/GB-month)", allow_zero=True, maximum=100)
    ds = as_float(dataset_gb, "dataset size (GB)", allow_zero=True, maximum=1e9)
    return (size_gb * kept + ds) * price * mo


def egress_cost_usd(gb: float, usd_per_gb: float | None) -> float:
    return as_float(gb, "egress (GB)", allow_zero=True, maximum=1e10) * as_float(
        usd_per_gb or 0.0, "egress price ($/GB)", allow_zero=True, maximum=100)


# ----------------------------------------------------------------------------- one run, fully explained
def run_cost(*, price_per_node_hour_usd: float, gpus: int, gpus_per_node: float, wall_hours: float,
             pricing: str = "on_demand", billing_increment_s: float | None = None,
             minimum_billing_s: float | None = None, interruptions: float = 0.0,
             new_segment_per_interruption: bool | None = None,
             commitment_term_h: float | None = None, allow_partial_term: bool = False,
             checkpoint_bytes: float = 0.0, checkpoints_kept: int = 3, dataset_gb: float = 0.0,
             retention_months: float = 0.0, storage_usd_per_gb_month: float | None = None,
             storage_source: str | None = None, egress_gb: float = 0.0,
             egress_usd_per_gb: float | None = None, ingress_gb: float = 0.0,
             ingress_usd_per_gb: float = 0.0) -> dict[str, Any]:
    """Cost breakdown of one run. `interruptions` is the expected count of restarts on new
    capacity (preemptions); each opens a billed segment on preemptible pricing."""
    price = as_float(price_per_node_hour_usd, "price per node-hour", allow_zero=True, maximum=MAX_PRICE_PER_HOUR_USD)
    gpn = as_float(gpus_per_node, "GPUs per node", maximum=1e4)
    g = as_float(gpus, "GPU count", maximum=1e7)
    wall = as_float(wall_hours, "wall hours", maximum=ckpt.MAX_HOURS)
    k = as_float(interruptions, "interruptions", allow_zero=True, maximum=1e9)
    p = str(pricing).lower()
    if p not in preemption.PRICING_TYPES:
        from gpuplan.errors import UnknownNameError
        raise UnknownNameError("pricing type", pricing, list(preemption.PRICING_TYPES))
    nodes = nodes_needed(g, gpn)
    notes: list[str] = []
    if nodes * gpn > g:
        notes.append(f"{g:g} GPUs need {nodes} whole nodes of {gpn:g}: {nodes * gpn - g:g} GPUs idle but billed")
    split = preemption.is_preemptible(p) if new_segment_per_interruption is None else new_segment_per_interruption
    segments = 1.0 + (k if split else 0.0)
    inc = DEFAULT_BILLING_INCREMENT_S if billing_increment_s is None else billing_increment_s
    if billing_increment_s is None:
        notes.append("billing granularity unknown: assumed hourly")

    eligible, reason = True, ""
    term = as_float(commitment_term_h, "commitment term (h)", maximum=1e6) if commitment_term_h else None
    if term is not None and wall < term:
        if allow_partial_term:
            billed = term
            notes.append(f"reserved term {term:g} h paid in full for a {wall:.1f} h run")
        else:
            eligible, reason = False, f"run of {wall:.1f} h is shorter than the {term:g} h reserved term"
            billed = term
    elif term is not None:
        billed = round_up_hours(wall, inc)  # a term covered: billed like any segment
    else:
        billed = float(expected_billed_hours(wall, inc, minimum_billing_s or 0.0, segments))
    compute = price * nodes * billed
    exact = price * nodes * wall

    months = wall / HOURS_PER_MONTH + as_float(retention_months, "retention months", allow_zero=True, maximum=1200)
    s_price = STORAGE_USD_PER_GB_MONTH if storage_usd_per_gb_month is None else storage_usd_per_gb_month
    storage = storage_cost_usd(checkpoint_bytes, checkpoints_kept, months, s_price, dataset_gb)
    if egress_usd_per_gb is None and egress_gb > 0:
        notes.append("egress price unknown for this provider: not included")
    egress = egress_cost_usd(egress_gb, egress_usd_per_gb)
    ingress = egress_cost_usd(ingress_gb, ingress_usd_per_gb)
    total = compute + storage + egress + ingress
    return {
        "eligible": eligible, "reason": reason, "nodes": int(nodes), "gpus_billed": nodes * gpn,
        "wall_hours": wall, "billed_hours": billed, "billed_segments": segments,
        "compute_usd": compute, "rounding_usd": compute - exact, "storage_usd": storage,
        "egress_usd": egress, "ingress_usd": ingress, "total_usd": total, "notes": notes,
        "assumptions": {
            "price_per_node_hour_usd": price, "pricing": p, "billing_increment_s": float(inc),
            "minimum_billing_s": float(minimum_billing_s or 0.0), "commitment_term_h": term,
            "restarts_open_new_segments": split, "expected_interruptions": k,
            "checkpoint_gb": checkpoint_bytes / 1e9, "checkpoints_kept": checkpoints_kept,
            "dataset_gb": dataset_gb, "storage_months": months, "storage_usd_per_gb_month": s_price,
            "storage_source": storage_source or ("user" if storage_usd_per_gb_month is not None
                                                 else storage_price(None)[1]),
            "egress_gb": egress_gb, "egress_usd_per_gb": egress_usd_per_gb,
            "ingress_gb": ingress_gb, "ingress_usd_per_gb": ingress_usd_per_gb,
        },
    }


def run_cost_for_offer(offer: Any, provider: Any, gpus: int, wall_hours: float, **kw: Any) -> dict[str, Any]:
    """`run_cost` with the offer's price, node size, term and the provider's billing and egress."""
    s_price, s_source = storage_price(getattr(provider, "id", None))
    kw.setdefault("storage_usd_per_gb_month", s_price)
    kw.setdefault("storage_source", s_source)
    kw.setdefault("egress_usd_per_gb", provider.egress_usd_per_gb)
    return run_cost(price_per_node_hour_usd=offer.price_per_hour_usd, gpus=gpus, gpus_per_node=offer.gpus_per_node,
                    wall_hours=wall_hours, pricing=offer.pricing, billing_increment_s=provider.billing_increment_s,
                    minimum_billing_s=provider.minimum_billing_s, commitment_term_h=offer.commitment_term_h, **kw)


# ----------------------------------------------------------------------------- spot or on-demand
def spot_vs_on_demand(useful_h: float, nodes: int, gpus: int, spot_price_per_node_hour: float,
                      on_demand_price_per_node_hour: float, *, delta_h: float, kind: str = "hyperscaler",
                      spot_rate_per_node_hour: float | None = None, restart_spot_h: float | None = None,
                      restart_on_demand_h: float | None = None, gpu_hours_per_failure: float | None = None,
                      notice_s: float | None = None, deadline_h: float | None = None,
                      trials: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Spot pays when p_spot f_spot < p_od f_od, f = Daly's T_wall/T_s at each side's optimal interval.
    Returns both sides, the verdict, the break-even price ratio and interruption rate, the range of
    checkpoint intervals over which spot still pays, and the deadline risk from a seeded simulation."""
    from gpuplan.economics.simulation import simulate_job

    ts = as_float(useful_h, "useful compute hours", maximum=ckpt.MAX_HOURS)
    p_spot = as_float(spot_price_per_node_hour, "spot price per node-hour", maximum=MAX_PRICE_PER_HOUR_USD)
    p_od = as_float(on_demand_price_per_node_hour, "on-demand price per node-hour", maximum=MAX_PRICE_PER_HOUR_USD)
    d = as_float(delta_h, "checkpoint write time", allow_zero=True, maximum=ckpt.MAX_HOURS)
    gf = gpu_hours_per_failure if gpu_hours_per_failure is not None else preemption.gpu_hours_per_failure(kind)
    lam = preemption.interruption_rate_per_node_hour(kind, "spot", spot_rate_per_node_hour)
    r_spot = preemption.restart_hours(kind, "spot", restart_spot_h)
    r_od = preemption.restart_hours(kind, "on_demand", restart_on_demand_h)

    m_od = float(preemption.job_mtbf_hours(nodes, gpus, 0.0, gf))
    tau_od = ckpt.daly_interval_h(d, m_od)
    f_od = ckpt.daly_wall_factor(tau_od, d, r_od, m_od)
    m_spot = float(preemption.job_mtbf_hours(nodes, gpus, lam, gf))
    m_hw = m_od
    preempt_rate = max(1.0 / m_spot - 1.0 / m_hw, 0.0)
    on_notice = notice_s is not None and ckpt.fits_notice(d * 3600.0, notice_s)
    if on_notice:  # save on the notice: preemptions cost a restart, not rework; tau from hardware faults
        tau_spot = tau_od
        f_spot = float(ckpt.wall_factor_with_notice(tau_spot, d, r_spot, m_hw, preempt_rate))
    else:
        tau_spot = ckpt.daly_interval_h(d, m_spot)
        f_spot = ckpt.daly_wall_factor(tau_spot, d, r_spot, m_spot)
    cost_spot = p_spot * nodes * ts * f_spot
    cost_od = p_od * nodes * ts * f_od
    choose_spot = cost_spot < cost_od

    # Checkpoint intervals over which spot still beats on-demand at its best interval.
    grid = np.geomspace(max(d, 1e-4) * 0.05, max(m_spot, 1e-3) * 20.0, 400)
    f_grid = np.asarray(ckpt.daly_wall_factor(grid, d, r_spot, m_spot)) if not on_notice else np.asarray(
        ckpt.wall_factor_with_notice(grid, d, r_spot, m_hw, preempt_rate))
    pays = p_spot * f_grid < p_od * f_od
    tau_range = [float(grid[pays].min()), float(grid[pays].max())] if pays.any() else None

    out: dict[str, Any] = {
        "choose": "spot" if choose_spot else "on_demand",
        "spot": {"price_per_node_hour": p_spot, "job_mtbf_h": m_spot, "interval_h": tau_spot, "wall_factor": f_spot,
                 "wall_h": ts * f_spot, "cost_usd": cost_spot, "restart_h": r_spot,
                 "interruptions_per_node_hour": lam, "checkpoint_on_notice": on_notice},
        "on_demand": {"price_per_node_hour": p_od, "job_mtbf_h": m_od, "interval_h": tau_od, "wall_factor": f_od,
                      "wall_h": ts * f_od, "cost_usd": cost_od, "restart_h": r_od},
        "savings_usd": cost_od - cost_spot,
        "break_even_price_ratio": f_od / f_spot if math.isfinite(f_spot) else 0.0,
        "break_even_interruptions_per_node_hour": _break_even_rate(ts, nodes, gpus, p_spot, p_od * f_od, d, r_spot, gf),
        "spot_pays_for_interval_h": tau_range,
        "assumptions": {"gpu_hours_per_failure": gf, "delta_h": d, "interruption_label":
                        "user" if spot_rate_per_node_hour is not None else preemption.node_hazard(kind, "spot").label,
                        "model": "Daly (2006) expected wall time at the optimal interval; Poisson interruptions"},
        "notes": [],
    }
    if f_spot > 1.5:
        out["notes"].append(f"spot loses {f_spot - 1:.0%} to interruptions: frequent-preemption regime where "
                            "checkpoint/restart alone fails (redundancy systems such as Bamboo/Oobleck exist)")
    if deadline_h is not None:
        dl = as_float(deadline_h, "deadline (h)", maximum=ckpt.MAX_HOURS)
        if math.isfinite(f_spot):
            sim = (simulate_job(ts, tau_spot, d, r_spot, m_hw, trials=trials, seed=seed, announced_per_hour=preempt_rate)
                   if on_notice else simulate_job(ts, tau_spot, d, r_spot, m_spot, trials=trials, seed=seed))
            late = float((sim.wall_h > dl).mean())
            out["deadline"] = {"deadline_h": dl, "spot_p_late": late, "spot_wall_p90_h": sim.percentile(90),
                               "on_demand_wall_h": ts * f_od}
        else:
            late = 1.0
            out["deadline"] = {"deadline_h": dl, "spot_p_late": 1.0, "spot_wall_p90_h": math.inf,
                               "on_demand_wall_h": ts * f_od}
        if late > 0.1:
            out["notes"].append(
                f"spot misses the {dl:g} h deadline in {late:.0%} of simulated runs: start on spot and move to "
                "on-demand once remaining time < remaining work + 2 changeovers (Uniform Progress, Wu et al. NSDI'24)")
        if ts * f_od > dl:
            out["notes"].append("even on-demand misses the deadline at this size: add nodes")
    return out


def _break_even_rate(ts: float, nodes: int, gpus: int, p_spot: float, od_cost_rate: float, d: float,
                     r_spot: float, gf: float) -> float:
    """Per-node interruption rate at which spot's expected cost equals on-demand's (bisection)."""
    def spot_cost_rate(lam: float) -> float:
        m = float(preemption.job_mtbf_hours(nodes, gpus, lam, gf))
        return p_spot * float(ckpt.optimal_wall_factor(d, r_spot, m))

    if spot_cost_rate(0.0) >= od_cost_rate:
        return 0.0
    lo, hi = 0.0, preemption.MAX_RATE_PER_NODE_HOUR
    if spot_cost_rate(hi) < od_cost_rate:
        return hi
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        with np.errstate(over="ignore"):
            lo, hi = (mid, hi) if spot_cost_rate(mid) < od_cost_rate else (lo, mid)
    return lo
