"""Own vs rent: the amortised cost of a bought GPU-hour against rental prices.

Buying pays only when the hardware stays busy: capex and (here) power run whether or not
the GPU works, while a rented GPU can be given back off-peak. So the owned price is quoted
per *useful* GPU-hour at a utilisation, and the headline is the utilisation above which
owning wins. Cost structure after Epoch AI (Cottier et al. 2024): GPU price × server
multiplier ÷ (1 − interconnect share), depreciated; server power from TDP; defaults and
sources in `data/ownership-defaults.json`.
"""
from __future__ import annotations

import datetime as dt
import json
import math
import re
import statistics
from functools import lru_cache
from importlib import resources
from typing import Any

from pydantic import BaseModel, Field

from gpuplan.catalog.records import STALE_AFTER_DAYS
from gpuplan.errors import UsageError
from gpuplan.units import HOURS_PER_MONTH

DEPRECIATION_METHODS = ("straight-line", "epoch")


@lru_cache(maxsize=1)
def ownership_defaults() -> dict[str, Any]:
    text = resources.files("gpuplan.economics").joinpath("data/ownership-defaults.json").read_text(encoding="utf-8")
    return json.loads(text)


def default_purchase_usd(gpu_id: str) -> float | None:
    entry = ownership_defaults()["purchase_usd"].get(gpu_id)
    return float(entry["default"]) if entry else None


def purchase_price_date(gpu_id: str) -> dt.date | None:
    """The date of the default purchase price (the first ISO date in its as_of note), or None."""
    entry = ownership_defaults()["purchase_usd"].get(gpu_id)
    m = re.search(r"\d{4}-\d{2}-\d{2}", str(entry.get("as_of", ""))) if entry else None
    return dt.date.fromisoformat(m.group(0)) if m else None


class RentComparison(BaseModel):
    label: str
    rent_usd_per_gpu_hour: float
    owned_cheaper: bool
    breakeven_utilization: float = Field(description="utilisation above which owning beats this rental price; > 1 means never")
    payback_months: float | None = Field(description="months of avoided rent that repay the capex; None = never")
    savings_usd_per_month: float = Field(description="per GPU at the given utilisation: rent avoided − owned cost (negative = renting is cheaper)")


class OwnVsRent(BaseModel):
    gpu: str
    purchase_usd: float
    capex_usd: float = Field(description="GPU + server share + interconnect share, per GPU")
    capex_usd_per_hour: float
    power_usd_per_hour: float
    colocation_usd_per_hour: float = Field(description="colocation rent on the provisioned server power per GPU")
    ops_usd_per_hour: float
    purchase_source: str = Field(description="'given', or the source of the default purchase price")
    purchase_as_of: str | None = Field(default=None, description="date of the default purchase price (None = given)")
    purchase_age_days: int | None = None
    purchase_as_of_note: str | None = Field(default=None, description="the data file's as_of text for the default price")
    owned_usd_per_hour: float = Field(description="per installed GPU-hour, busy or idle")
    owned_usd_per_gpu_hour: float = Field(description="per useful GPU-hour at the given utilisation")
    owned_usd_per_gpu_hour_by_method: dict[str, float] = Field(default_factory=dict)
    utilization: float
    life_years: float
    depreciation: str
    comparisons: list[RentComparison]
    cheapest_rent: RentComparison | None = None
    assumptions: dict[str, Any] = Field(default_factory=dict)
    caveats: list[str] = Field(default_factory=list)


MIN_LIFE_YEARS = 0.1  # about five weeks: shorter "lives" are not depreciation, and overflow the per-hour figures


def _num(name: str, v: Any, lo: float, hi: float, lo_inclusive: bool = False) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be a number, got {v!r}") from None
    ok = math.isfinite(x) and (x >= lo if lo_inclusive else x > lo) and x <= hi
    if not ok:
        bound = f"{'at least' if lo_inclusive else 'above'} {lo:g} and at most {hi:g}"
        raise UsageError(f"{name} must be a finite number {bound}, got {v!r}")
    return x


def capex_per_gpu(purchase_usd: float, server_multiplier: float, interconnect_share: float) -> float:
    return purchase_usd * server_multiplier / (1.0 - interconnect_share)


def capex_usd_per_hour(capex_usd: float, method: str, life_years: float, residual_fraction: float,
                       interest_rate_per_year: float, epoch_rate_per_year: float, hours_per_year: float) -> float:
    """Hourly capital cost of one installed GPU."""
    if method == "epoch":
        return capex_usd * epoch_rate_per_year / hours_per_year
    residual = capex_usd * residual_fraction
    i = interest_rate_per_year
    if i == 0:
        annual = (capex_usd - residual) / life_years
    else:  # level annuity that repays the price minus the discounted resale value
        annual = (capex_usd - residual / (1 + i) ** life_years) * i / (1 - (1 + i) ** -life_years)
    return annual / hours_per_year


def power_usd_per_hour(tdp_w: float, chip_to_server_ratio: float, average_power_fraction: float, pue: float,
                       usd_per_kwh: float) -> float:
    return tdp_w / 1000.0 * chip_to_server_ratio * average_power_fraction * pue * usd_per_kwh


def own_vs_rent(
    gpu: str,
    rent_usd_per_gpu_hour: list[float] | dict[str, float],
    purchase_usd: float | None = None,
    tdp_w: float | None = None,
    utilization: float | None = None,
    life_years: float | None = None,
    depreciation: str | None = None,
    residual_fraction: float | None = None,
    interest_rate_per_year: float | None = None,
    power_usd_per_kwh: float | None = None,
    pue: float | None = None,
    ops_usd_per_gpu_hour: float | None = None,
    server_multiplier: float | None = None,
    interconnect_share: float | None = None,
    colocation_usd_per_kw_month: float | None = None,
    today: dt.date | None = None,
) -> OwnVsRent:
    """Owned $/useful GPU-hour vs each rental price; break-even utilisation and payback months.

    `gpu` is resolved for its TDP (and default purchase price) unless both are given.
    Rental prices: a list (labelled rent-1, rent-2, ...) or {label: price}.
    """
    d = ownership_defaults()
    gpu_id = gpu
    if tdp_w is None or purchase_usd is None:
        from gpuplan.catalog.gpus import get_gpu

        g = get_gpu(gpu)
        gpu_id = g.id
        if tdp_w is None:
            tdp_w = g.tdp_w
    purchase_given = purchase_usd is not None
    if purchase_usd is None:
        purchase_usd = default_purchase_usd(gpu_id)
        if purchase_usd is None:
            known = ", ".join(d["purchase_usd"])
            raise UsageError(f"no sourced purchase price for {gpu_id} (defaults exist for {known}); pass --purchase-usd")
    dep = d["depreciation"]
    method = (depreciation or dep["method"]).strip().lower()
    if method not in DEPRECIATION_METHODS:
        raise UsageError(f"unknown depreciation {depreciation!r}; use one of: {', '.join(DEPRECIATION_METHODS)}")
    pw = d["power"]
    purchase = _num("purchase price (USD)", purchase_usd, 0, 1e8)
    tdp = _num("TDP (W)", tdp_w, 0, 1e5)
    util = _num("utilization", utilization if utilization is not None else d["utilization"], 0, 1)
    life = _num("life (years)", life_years if life_years is not None else dep["life_years"], MIN_LIFE_YEARS, 50,
                lo_inclusive=True)
    residual = _num("residual fraction", residual_fraction if residual_fraction is not None else dep["residual_fraction"], 0, 1, lo_inclusive=True)
    if residual >= 1:
        raise UsageError("residual fraction must be below 1 (the hardware loses some value)")
    rate = _num("interest rate per year", interest_rate_per_year if interest_rate_per_year is not None else d["interest_rate_per_year"], 0, 1, lo_inclusive=True)
    kwh = _num("power price (USD/kWh)", power_usd_per_kwh if power_usd_per_kwh is not None else pw["usd_per_kwh"], 0, 10, lo_inclusive=True)
    pue_v = _num("PUE", pue if pue is not None else pw["pue"], 0, 5)
    if pue_v < 1:
        raise UsageError(f"PUE must be at least 1 (facility power over IT power), got {pue!r}")
    ops = _num("ops (USD per GPU-hour)", ops_usd_per_gpu_hour if ops_usd_per_gpu_hour is not None else d["ops_usd_per_gpu_hour"], 0, 1e4, lo_inclusive=True)
    smult = _num("server multiplier", server_multiplier if server_multiplier is not None else d["server_multiplier"], 0, 20)
    ishare = _num("interconnect share", interconnect_share if interconnect_share is not None else d["interconnect_share"], 0, 0.9, lo_inclusive=True)
    colo = _num("colocation (USD per kW-month)",
                colocation_usd_per_kw_month if colocation_usd_per_kw_month is not None else d["colocation_usd_per_kw_month"],
                0, 1e5, lo_inclusive=True)
    rents = _rent_items(rent_usd_per_gpu_hour)
    if purchase_given:
        p_source, p_date, p_age = "given", None, None
    else:
        p_date = purchase_price_date(gpu_id)
        p_source = d["purchase_usd"][gpu_id]["source"]
        p_age = ((today or dt.date.today()) - p_date).days if p_date else None

    hours_year, hours_month = d["hours_per_year"], HOURS_PER_MONTH
    capex = capex_per_gpu(purchase, smult, ishare)
    by_method = {m: capex_usd_per_hour(capex, m, life, residual, rate, dep["epoch_rate_per_year"], hours_year)
                 for m in DEPRECIATION_METHODS}
    cap_h = by_method[method]
    pow_h = power_usd_per_hour(tdp, pw["chip_to_server_ratio"], pw["average_power_fraction"], pue_v, kwh)
    colo_kw = tdp / 1000.0 * pw["chip_to_server_ratio"]  # provisioned server power per GPU
    colo_h = colo_kw * colo / hours_month
    fixed_h = cap_h + pow_h + colo_h + ops
    owned_useful = fixed_h / util

    comparisons = []
    for label, rent in rents:
        avoided_month = rent * hours_month * util
        running_month = (pow_h + colo_h + ops) * hours_month
        margin = avoided_month - running_month
        comparisons.append(RentComparison(
            label=label, rent_usd_per_gpu_hour=rent, owned_cheaper=owned_useful < rent,
            breakeven_utilization=fixed_h / rent,
            payback_months=(capex / margin) if margin > 0 else None,
            savings_usd_per_month=avoided_month - fixed_h * hours_month))
    caveats = []
    if ops == 0:
        caveats.append(d["ops_note"])
    if p_age is not None and p_age > STALE_AFTER_DAYS:
        caveats.append(f"the default {gpu_id} purchase price is {p_age} days old (as of {p_date.isoformat()}); "
                       "pass --purchase-usd with a current quote")
    caveats.append("owned capacity cannot shrink off-peak; rented capacity can, so compare at the utilisation you would really sustain")
    for c in comparisons:
        if c.payback_months is not None and c.payback_months > life * 12:
            caveats.append(f"{c.label}: payback ({c.payback_months:.0f} months) is longer than the {life:g}-year life")
    return OwnVsRent(
        gpu=gpu_id, purchase_usd=purchase, capex_usd=capex, capex_usd_per_hour=cap_h, power_usd_per_hour=pow_h,
        colocation_usd_per_hour=colo_h, ops_usd_per_hour=ops, purchase_source=p_source,
        purchase_as_of=p_date.isoformat() if p_date else None, purchase_age_days=p_age,
        purchase_as_of_note=None if purchase_given else str(d["purchase_usd"][gpu_id].get("as_of") or "undated"),
        owned_usd_per_hour=fixed_h, owned_usd_per_gpu_hour=owned_useful,
        owned_usd_per_gpu_hour_by_method={m: (v + pow_h + colo_h + ops) / util for m, v in by_method.items()},
        utilization=util, life_years=life, depreciation=method, comparisons=comparisons,
        cheapest_rent=min(comparisons, key=lambda c: c.rent_usd_per_gpu_hour) if comparisons else None,
        assumptions={"server_multiplier": smult, "interconnect_share": ishare, "tdp_w": tdp,
                     "chip_to_server_ratio": pw["chip_to_server_ratio"],
                     "average_power_fraction": pw["average_power_fraction"], "pue": pue_v, "usd_per_kwh": kwh,
                     "residual_fraction": residual, "interest_rate_per_year": rate,
                     "colocation_usd_per_kw_month": colo, "colocation_kw_per_gpu": colo_kw,
                     "epoch_rate_per_year": dep["epoch_rate_per_year"], "hours_per_year": hours_year,
                     "hours_per_month": hours_month, "power_billed": "every installed hour (busy or idle)",
                     "depreciation_why": dep["why"], "sources": {"capex": d["capex_source"], "power": pw["source"],
                                                                 "depreciation": dep["source"],
                                                                 "purchase": p_source,
                                                                 "colocation": ("given" if colocation_usd_per_kw_month
                                                                                is not None else d["colocation_source"]),
                                                                 "interest_rate": ("given" if interest_rate_per_year
                                                                                   is not None
                                                                                   else d["interest_rate_source"])}},
        caveats=caveats,
    )


def _rent_items(rents: list[float] | dict[str, float]) -> list[tuple[str, float]]:
    items = list(rents.items()) if isinstance(rents, dict) else [(f"rent-{i + 1}", r) for i, r in enumerate(rents or [])]
    if not items:
        raise UsageError("give at least one rental price (USD per GPU-hour) to compare with")
    return [(label, _num(f"rental price {label!r} (USD per GPU-hour)", r, 0, 1e4)) for label, r in items]


def rental_prices_from_offers(prices: list[float]) -> dict[str, float]:
    """Cheapest and median of a set of on-demand $/GPU-h, the two rents worth comparing to."""
    clean = sorted(p for p in prices if isinstance(p, (int, float)) and math.isfinite(p) and p > 0)
    if not clean:
        return {}
    return {"cheapest on-demand": clean[0], "median on-demand": float(statistics.median(clean))}
