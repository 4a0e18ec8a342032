"""How sure a plan is: p10 / p90 cost and wall time from every source of error, and what would flip #1.

A plan's band combines, as independent lognormal factors (data/uncertainty.json):
- the estimator's out-of-sample error for the plan's regime (dense / MoE / fine-tune / long
  context / small model training, dense / MoE serving);
- the vendor / generation efficiency band (perf/data/vendor-efficiency.json): AMD, Gaudi, Volta
  and Blackwell are known less well than Hopper;
- the network, when the fabric between nodes is assumed rather than published;
- the price: its confidence and age;
- failures and preemptions: a seeded Monte Carlo of the run (economics.simulation).

Plans are ranked by the 75th percentile of that cost band: a plan known to within a few
percent beats one a little cheaper on average but far less certain.
"""
from __future__ import annotations

import datetime as dt
import functools
import json
import math
from dataclasses import dataclass
from importlib import resources

import numpy as np

from gpuplan.catalog.records import Offer

Z90 = 1.2816


@functools.cache
def _data() -> dict:
    with resources.files("gpuplan.planner.data").joinpath("uncertainty.json").open() as f:
        return json.load(f)


def ranking_z() -> float:
    return float(_data()["ranking_quantile"]["z"])


def ranking_scale(sigma):
    """A log-normal quantity at the ranking quantile over its expected value: exp(z x sigma)."""
    return np.exp(ranking_z() * np.asarray(sigma, dtype=float))


def estimator_regime(workload: str, *, is_moe: bool = False, method: str = "full", seq_len: int = 4096,
                     total_params: float = 0.0, active_params: float | None = None,
                     concurrency: int | None = None) -> tuple[str, float, str]:
    """(regime, sigma, basis) of the estimator for this job: the measured held-out band of its regime where the
    validation wrote one, else the prior in uncertainty.json."""
    if workload == "serve":
        if is_moe:
            # active parameters unknown: the wider (small-active) band, unknown is pessimistic
            small = active_params is None or active_params <= 14e9
            key = "serve_moe_small_active" if small else "serve_moe"
        elif concurrency is not None and concurrency <= 8:
            key = "serve_latency"
        else:
            key = "serve"
    elif seq_len >= 32768:
        key = "train_long_context"
    elif is_moe:
        key = "train_moe"
    elif method != "full":
        key = "train_finetune"
    elif total_params <= 4.5e9:
        key = "train_small"
    else:
        key = "train_dense"
    sigma, basis = regime_sigma(key)
    return key, sigma, basis


@functools.cache
def regime_sigma(key: str) -> tuple[float, str]:
    d = _data()["estimator_sigma"][key]
    ref = d.get("band")
    measured = _measured_band(ref["file"], ref["regime"]) if ref else None
    if measured is None:
        return float(d["sigma"]), d["basis"]
    drift = float(_data()["drift_sigma"]["sigma"])
    spread = (measured["p90"] - measured["p10"]) / (2 * Z90)
    sigma = math.sqrt(spread ** 2 + measured["p50"] ** 2 + drift ** 2)
    held = "leave-one-family-out" if measured["by_family"] else "leave-one-source-out"
    basis = (f"{ref['file']} regime '{ref['regime']}': {held} over {measured['n']} published rows, "
             f"log(pred/measured) p10 {measured['p10']:+.2f} / p50 {measured['p50']:+.2f} / p90 {measured['p90']:+.2f}"
             f" (benchmarks/validate_{ref['file']}.py), widened by {drift:.2f} for newer hardware and software")
    return float(sigma), basis


def _measured_band(kind: str, regime: str) -> dict | None:
    """The regime's held-out residual band and whether its folds held out whole source families (`--by-family`)."""
    if kind == "training":
        from gpuplan.perf.error_bands import band_for, load_bands
    else:
        from gpuplan.perf.inference_validation import error_band as band_for
        from gpuplan.perf.inference_validation import error_bands as load_bands
    try:
        b = band_for(regime)
        doc = load_bands()
        by_family = "--by-family" in doc.get("_source", doc).get("command", "")  # training keeps it under _source
    except (OSError, ValueError):
        return None
    if not b or not b.get("n"):
        return None
    return {k: float(b[k]) for k in ("p10", "p50", "p90")} | {"n": int(b["n"]), "by_family": by_family}


def network_sigma(basis: str, multi_node: bool) -> float:
    if not multi_node:
        return 0.0
    return float(_data()["network_sigma"][basis]["sigma"])


def price_sigma(offer: Offer, today: dt.date | None = None) -> float:
    d = _data()["price_sigma"]
    conf = float(d["by_confidence"].get(offer.confidence, 0.2))
    years = max(0.0, offer.age_days(today)) / 365.25
    return math.hypot(conf, float(d["per_year_of_age"]) * years)


@dataclass(frozen=True)
class VendorBand:
    factor: float
    sigma: float
    arch: str
    basis: str
    note: str


def vendor_band(gpu_id: str, regime: str) -> VendorBand:
    """The efficiency factor of a GPU's architecture against Hopper, and its spread."""
    from gpuplan.perf.vendor_efficiency import applied_factor

    f = applied_factor(gpu_id, regime)
    sigma = math.log(max(f.p90, f.factor * 1.0001) / max(min(f.p10, f.factor), 1e-6)) / (2 * Z90) \
        if f.p90 > 0 and f.p10 > 0 else 0.3
    return VendorBand(factor=float(f.factor), sigma=float(sigma), arch=f.arch, basis=f.basis, note=f.note)


@dataclass(frozen=True)
class Spread:
    """Lognormal sigmas of the parts of one plan's uncertainty."""

    estimator: float
    vendor: float
    network: float
    price: float

    @property
    def time(self) -> float:
        return math.sqrt(self.estimator ** 2 + self.vendor ** 2 + self.network ** 2)

    @property
    def cost(self) -> float:
        return math.sqrt(self.time ** 2 + self.price ** 2)

    def parts(self) -> dict[str, float]:
        return {"estimator": self.estimator, "vendor_efficiency": self.vendor, "network": self.network,
                "price": self.price}

    def dominant(self) -> str:
        p = self.parts()
        return max(p, key=p.get)


def ranking_time_factor(estimator_sigma: float, gpu_id: str, network_basis: str, multi_node) -> np.ndarray:
    """Wall time at the ranking quantile over the expected wall time, for one offer class at each node
    count (`multi_node`: per count): the time part of its Spread (estimator, vendor efficiency, network)."""
    vendor = vendor_band(gpu_id, "training").sigma
    one, many = (Spread(estimator=estimator_sigma, vendor=vendor, network=network_sigma(network_basis, m),
                        price=0.0).time for m in (False, True))
    return ranking_scale(np.where(np.asarray(multi_node, dtype=bool), many, one))


def ranking_cost(compute_usd, other_usd, cost_sigma):
    """The cost a plan is ranked by: its compute at the ranking quantile, plus storage and egress."""
    return np.asarray(compute_usd) * ranking_scale(cost_sigma) + np.asarray(other_usd)


def band(wall_h: float, compute_usd: float, other_usd: float, spread: Spread, wall_samples: np.ndarray | None,
         seed: int) -> dict[str, float]:
    """p10 / p50 / p90 of wall time and cost: failure samples (or none) times the lognormal parts."""
    rng = np.random.default_rng(seed)
    n = 4000 if wall_samples is None else len(wall_samples)
    base = np.full(n, wall_h) if wall_samples is None else np.asarray(wall_samples, dtype=float)
    t_mult = np.exp(rng.normal(0.0, spread.time, n)) if spread.time > 0 else np.ones(n)
    p_mult = np.exp(rng.normal(0.0, spread.price, n)) if spread.price > 0 else np.ones(n)
    wall = base * t_mult
    cost = compute_usd * (wall / wall_h if wall_h > 0 else 1.0) * p_mult + other_usd
    w10, w50, w90 = np.percentile(wall, [10, 50, 90])
    c10, c50, c90 = np.percentile(cost, [10, 50, 90])
    return {"wall_p10_hours": float(w10), "wall_p50_hours": float(w50), "wall_p90_hours": float(w90),
            "cost_p10_usd": float(c10), "cost_p50_usd": float(c50), "cost_p90_usd": float(c90)}


def serving_band(compute_usd: float, other_usd: float, spread: Spread) -> dict[str, float]:
    """Serving: the estimator's error changes how many replicas the traffic needs; price as above."""
    lo = math.exp(-Z90 * spread.cost)
    hi = math.exp(Z90 * spread.cost)
    return {"cost_p10_usd": compute_usd * lo + other_usd, "cost_p90_usd": compute_usd * hi + other_usd}


def mark_ties(plans: list) -> list:
    """Plans whose p10-p90 cost band overlaps the #1's carry ties_first (the #1 itself does not)."""
    if not plans:
        return plans
    first = plans[0]
    hi = first.cost_p90_usd
    lo = first.cost_p10_usd if first.cost_p10_usd is not None else first.cost_usd
    out = [first]
    for p in plans[1:]:
        p_lo = p.cost_p10_usd if p.cost_p10_usd is not None else p.cost_usd
        out.append(p.model_copy(update={"ties_first": bool(p_lo <= hi and p.cost_p90_usd >= lo)}))
    return out


def ties_line(plans: list) -> list[str]:
    """The sentence naming the plans that tie with #1 (none when nothing ties)."""
    ties = [p for p in plans[1:] if p.ties_first]
    if not ties:
        return []
    return [f"{len(ties)} plan(s) tie with #1 within the bands: "
            + ", ".join(f"#{p.rank} {p.provider_name} {p.gpu}" for p in ties[:4])]


def flip_analysis(first: dict, runner: dict) -> list[str]:
    """What would have to change for the runner-up to beat #1.

    `first` / `runner`: dicts with rank_cost, compute_usd, other_usd, cost_sigma and, for
    training, a `cost_at_rate(multiplier)` callable giving #1's expected cost with its
    failure / preemption rate scaled."""
    out = []
    gap = runner["rank_cost"] - first["rank_cost"]
    if gap <= 0.005 * first["rank_cost"]:
        return ["nothing: #2 costs the same within 0.5% (either will do)"]
    scale = float(ranking_scale(first["cost_sigma"]))
    comp = first["compute_usd"] * scale
    if comp > 0:
        out.append(f"#1's price {gap / comp:+.0%} (or #2's {-gap / max(runner['compute_usd'] * float(ranking_scale(runner['cost_sigma'])), 1e-9):+.0%})")
        # Time (and so compute cost) scales as 1 / efficiency.
        need = comp / (comp + gap)
        out.append(f"#1's achieved efficiency (MFU / throughput) {need - 1:+.0%}")
    fn = first.get("cost_at_rate")
    if fn is not None:
        for mult in (1.5, 2, 3, 5, 10, 20, 50, 100):
            c = fn(mult)
            if c is None:
                out.append(f"#1's failure/preemption rate x{mult:g} (the run would no longer make progress)")
                break
            if c * scale >= runner["rank_cost"]:
                out.append(f"#1's failure/preemption rate x{mult:g}")
                break
        else:
            out.append("no failure or preemption rate up to 100x flips it")
    return out
