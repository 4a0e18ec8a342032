"""Self-host vs API: monthly cost at a volume, break-even volume and break-even utilisation.

Self-hosting is a step function of volume: each deployment unit (one replica: its GPUs for a
730-hour month) serves a fixed number of tokens per month at its peak, replicas are sized to
the peak (average × peak factor), optionally plus spare replicas (N+1), plus a fixed
engineering/operations overhead; the API is linear in tokens at a blended input/output price.
Break-even utilisation (how busy the GPUs must be on average for self-hosting to win) is the
number to report, because a volume alone hides how idle the GPUs will be (formulas.md §11).
Tokens are counted as input + output throughout; the output-token view is given alongside.
"""
from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, Field

from gpuplan.errors import UsageError
from gpuplan.units import HOURS_PER_MONTH



class CostCurve(BaseModel):
    tokens_per_month: list[float]
    self_host_usd_per_month: list[float]
    api_usd_per_month: list[float]


class Breakeven(BaseModel):
    tokens_per_month: float = Field(description="demand, input + output tokens")
    self_host_usd_per_month: float
    api_usd_per_month: float
    cheaper: str = Field(description="'self-host' or 'api' at the given volume")
    units: int = Field(description="deployment units (replicas) paid for at the volume, spares included")
    serving_units: int = Field(description="replicas needed to carry the peak (average × peak factor)")
    spare_units: int = Field(description="spare replicas on top (N+1 redundancy: 1)")
    utilisation: float = Field(description="average demand / saturated capacity of all paid units")
    api_usd_per_mtok: float = Field(description="blended API price, input + output tokens")
    self_host_usd_per_mtok: float = Field(description="at the given volume")
    self_host_usd_per_mtok_at_full: float = Field(description="one unit fully used")
    breakeven_tokens_per_month: float | None = Field(description="lowest volume at which self-hosting is no dearer; None = never")
    breakeven_output_tokens_per_month: float | None
    breakeven_utilisation: float = Field(description=(
        "average load of all paid units (vs their saturated capacity) at the break-even volume; when self-hosting "
        "never breaks even, the load the smallest deployment would need (unreachable)"))
    capacity_tokens_per_month: float = Field(
        description="usable capacity of one unit at the peak (× max utilisation), input + output tokens")
    average_capacity_tokens_per_month: float = Field(
        description="average monthly volume one unit carries when sized to the peak: usable capacity / peak factor")
    curve: CostCurve
    assumptions: dict[str, Any] = Field(default_factory=dict)


def _num(name: str, v: Any, lo: float = 0.0, hi: float = 1e18, allow_lo: bool = False) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be a number, got {v!r}") from None
    if not math.isfinite(x) or x > hi or x < lo or (x == lo and not allow_lo):
        rel = "≥" if allow_lo else ">"
        raise UsageError(f"{name} must be a finite number {rel} {lo:g} and ≤ {hi:g}, got {v!r}")
    return x


def blended_usd_per_mtok(api_in_usd_per_mtok: float, api_out_usd_per_mtok: float, input_share: float,
                         discount: float = 0.0) -> float:
    return (input_share * api_in_usd_per_mtok + (1.0 - input_share) * api_out_usd_per_mtok) * (1.0 - discount)


def breakeven(
    self_host_usd_per_month_fixed: float,
    capacity_tokens_per_month: float,
    api_in_usd_per_mtok: float,
    api_out_usd_per_mtok: float,
    input_share: float,
    tokens_per_month: float,
    max_utilisation: float = 1.0,
    eng_usd_per_month: float = 0.0,
    api_discount: float = 0.0,
    curve_points: int = 61,
    peak_factor: float = 1.0,
    spare_units: int = 0,
) -> Breakeven:
    """Compare one self-hosted deployment unit (repeated as volume demands) with an API.

    self_host_usd_per_month_fixed: cost of ONE unit per month (e.g. GPUs × $/GPU-h × 730 + ops).
    capacity_tokens_per_month: input + output tokens one unit serves per month at 100 % load.
    max_utilisation: the load a unit is allowed to reach (latency headroom); usable capacity
    is capacity × max_utilisation. eng_usd_per_month: fixed engineering overhead of
    self-hosting at all. api_discount: batch/cached-input discount on the API price (0–1).
    peak_factor: peak traffic over the monthly average; units are sized to the peak, so one unit
    carries usable capacity / peak_factor on average. spare_units: replicas paid for on top of
    those serving the peak (1 = N+1 redundancy).
    """
    unit_usd = _num("self-host cost per month", self_host_usd_per_month_fixed, hi=1e12)
    cap_full = _num("capacity (tokens per month)", capacity_tokens_per_month, hi=1e20)
    p_in = _num("API input price (USD per M tokens)", api_in_usd_per_mtok, hi=1e5, allow_lo=True)
    p_out = _num("API output price (USD per M tokens)", api_out_usd_per_mtok, hi=1e5, allow_lo=True)
    share = _num("input share", input_share, hi=1.0, allow_lo=True)
    demand = _num("tokens per month", tokens_per_month, hi=1e20, allow_lo=True)
    umax = _num("max utilisation", max_utilisation, hi=1.0)
    eng = _num("engineering overhead per month", eng_usd_per_month, hi=1e12, allow_lo=True)
    disc = _num("API discount", api_discount, hi=0.99, allow_lo=True)
    peak = _num("peak factor", peak_factor, lo=1.0, hi=100.0, allow_lo=True)
    if isinstance(spare_units, bool) or not isinstance(spare_units, int) or not 0 <= spare_units <= 1000:
        raise UsageError(f"spare units must be an integer between 0 and 1000, got {spare_units!r}")
    if share >= 1.0:
        raise UsageError("input share must be below 1 (some output tokens are generated)")
    price = blended_usd_per_mtok(p_in, p_out, share, disc) / 1e6  # USD per token
    if price <= 0:
        raise UsageError("the API price is zero; nothing can break even against a free API")
    cap = cap_full * umax  # usable at the peak
    cap_avg = cap / peak  # average monthly volume one unit carries when sized to the peak

    def serving(t: float) -> int:
        return max(1, math.ceil(t / cap_avg - 1e-12))

    def self_host(t: float) -> float:
        return (serving(t) + spare_units) * unit_usd + eng

    # spares cost the same at every volume: to the crossing they are fixed overhead like engineering
    fixed = eng + spare_units * unit_usd
    be_tokens = _first_crossing(unit_usd, fixed, cap_avg, price)
    n_serving = serving(demand)
    units = n_serving + spare_units
    sh, api = self_host(demand), demand * price
    out_share = 1.0 - share
    if be_tokens is not None:
        be_util = be_tokens / ((serving(be_tokens) + spare_units) * cap_full)
    else:  # the load the smallest deployment would need: above the max_utilisation / (peak × (1 + spare)) it can carry
        be_util = (unit_usd * (1 + spare_units) + eng) / ((1 + spare_units) * cap_full * price)
    # the curve spans the demand and the break-even point, a decade either side
    anchors = [x for x in (demand, be_tokens, cap_avg) if x]
    lo, hi = min(anchors) / 10, max(anchors) * 10
    xs = [lo * (hi / lo) ** (i / (curve_points - 1)) for i in range(curve_points)]
    return Breakeven(
        tokens_per_month=demand, self_host_usd_per_month=sh, api_usd_per_month=api,
        cheaper="self-host" if sh <= api else "api", units=units, serving_units=n_serving, spare_units=spare_units,
        utilisation=demand / (units * cap_full), api_usd_per_mtok=price * 1e6,
        self_host_usd_per_mtok=(sh / demand * 1e6) if demand > 0 else math.inf,
        self_host_usd_per_mtok_at_full=unit_usd / cap_full * 1e6,
        breakeven_tokens_per_month=be_tokens,
        breakeven_output_tokens_per_month=be_tokens * out_share if be_tokens is not None else None,
        breakeven_utilisation=be_util,
        capacity_tokens_per_month=cap, average_capacity_tokens_per_month=cap_avg,
        curve=CostCurve(tokens_per_month=xs, self_host_usd_per_month=[self_host(x) for x in xs],
                        api_usd_per_month=[x * price for x in xs]),
        assumptions={"input_share": share, "max_utilisation": umax, "eng_usd_per_month": eng,
                     "api_discount": disc, "unit_usd_per_month": unit_usd, "hours_per_month": HOURS_PER_MONTH,
                     "peak_factor": peak, "spare_replicas": spare_units,
                     "self_host_model": ("(ceil(tokens × peak factor / usable capacity) + spare) units × unit cost "
                                         "+ engineering overhead")},
    )


def _first_crossing(unit_usd: float, eng: float, cap: float, price: float) -> float | None:
    """Smallest volume t with t·price ≥ units(t)·unit + eng; None when the API always wins.

    cap is the average volume one unit carries; eng is every cost that does not grow with volume.

    Within unit n (t in ((n−1)·cap, n·cap]) the crossing is t = (n·unit + eng)/price if that
    fits; it can only happen once cap·price > unit (a full unit beats the API), and then
    by n = ceil(eng / (cap·price − unit)).
    """
    margin = cap * price - unit_usd
    n_max = 1 if margin <= 0 else max(1, math.ceil(eng / margin) + 1)
    if n_max > 10_000_000:
        return None
    if margin > 0:  # jump straight to the first unit where the crossing can fit
        n_start = max(1, math.ceil(eng / margin) - 1) if eng > 0 else 1
    else:
        n_start = 1
    for n in range(n_start, n_max + 1):
        t = (n * unit_usd + eng) / price
        if t <= n * cap * (1 + 1e-12):
            return max(t, (n - 1) * cap)
    return None


def monthly_gpu_cost(gpus: int, usd_per_gpu_hour: float, ops_usd_per_month: float = 0.0) -> float:
    """GPUs rented all month (730 h) plus ops: the fixed cost of one self-hosted unit."""
    if not isinstance(gpus, int) or gpus <= 0:
        raise UsageError(f"GPU count must be a positive integer, got {gpus!r}")
    return gpus * _num("price per GPU-hour", usd_per_gpu_hour, hi=1e4) * HOURS_PER_MONTH + _num(
        "ops per month", ops_usd_per_month, hi=1e12, allow_lo=True)
