"""Full cost of getting a trained model: the final run is a third of it.

Lines (seeds/004's accounting table): the final run, failed experiments and ablations, data
acquisition and preparation, storage and networking, engineering labour, safety and
alignment testing, and hosting for a chosen period. A line the user prices (dollars, or a
formula's inputs: engineers x months x salary, TB x months x $/GB-month) is used as given;
a line left out takes its documented share of the development total (hosting excluded), so
  total = known / (1 - sum of defaulted shares).
The experiments line is the final run x (multiplier - 1): default 1.5x (OLMo), range 1.2-4x
(Epoch AI's 90% CI; its frontier median is 2.2x). Every line carries its basis, source and a
low/high range; energy and emissions are reported alongside as information.
"""
from __future__ import annotations

import json
import math
from functools import cache
from importlib import resources
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpuplan.economics.checkpoint import as_float
from gpuplan.errors import UsageError

MAX_USD = 1e13  # ten trillion dollars: beyond that, a typo
MAX_DEFAULT_SHARES = 0.9

LINE_NAMES = {
    "final_run": "Final training run",
    "experiments": "Failed experiments and ablations",
    "data": "Data acquisition and preparation",
    "storage_networking": "Storage and networking",
    "labour": "Engineering labour",
    "safety": "Safety and alignment testing",
    "hosting": "Hosting",
}


@cache
def tco_defaults() -> dict:
    with resources.files("gpuplan.economics").joinpath("data/tco_defaults.json").open(encoding="utf-8") as f:
        return json.load(f)


class TcoInputs(BaseModel):
    """What the user knows; everything else takes a documented default."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    final_run_usd: float | None = None
    # a planned final run: the plan's summary and its p10-p90 cost band (see planned_final_run_inputs)
    final_run_planned: str | None = None
    final_run_low_usd: float | None = None
    final_run_high_usd: float | None = None
    gpu_hours: float | None = None
    price_per_gpu_hour: float | None = None
    experiments_multiplier: float | None = None
    data_usd: float | None = None
    engineers: float | None = None
    months: float | None = None
    salary_usd_per_year: float | None = None
    labour_overhead: float | None = None
    labour_usd: float | None = None
    safety_fraction: float | None = None
    safety_usd: float | None = None
    storage_tb: float | None = None
    storage_months: float | None = None
    storage_usd_per_gb_month: float | None = None
    egress_tb: float | None = None
    egress_usd_per_gb: float | None = None
    hosting_months: float | None = None
    hosting_usd_per_month: float | None = None
    data_fraction: float | None = None
    storage_fraction: float | None = None
    labour_fraction: float | None = None
    # energy and emissions (information)
    gpu: str | None = None
    region: str | None = None
    provider_kind: str | None = None
    tdp_w: float | None = None
    pue: float | None = None
    usd_per_kwh: float | None = None


class TcoLine(BaseModel):
    key: str
    name: str
    usd: float
    share: float = 0.0
    low_usd: float
    high_usd: float
    basis: str
    source: str
    overridden: bool


class TcoResult(BaseModel):
    lines: list[TcoLine]
    total_usd: float
    development_usd: float
    hosting_usd: float
    total_low_usd: float
    total_high_usd: float
    energy_kwh: float | None = None
    energy_final_run_kwh: float | None = None
    emissions_kg: float | None = None
    energy_cost_usd_info: float | None = None
    assumptions: dict[str, Any] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)

    def chart(self) -> list[dict[str, Any]]:
        """Bar-chart data for the web page: one entry per line, largest first."""
        return [{"key": ln.key, "name": ln.name, "usd": ln.usd, "share": ln.share,
                 "low_usd": ln.low_usd, "high_usd": ln.high_usd}
                for ln in sorted(self.lines, key=lambda x: -x.usd)]


def make_inputs(**kw: Any) -> TcoInputs:
    """TcoInputs from keyword arguments; a bad field is a one-line UsageError."""
    try:
        return TcoInputs(**kw)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(x) for x in err.get("loc", ())) or "input"
        raise UsageError(f"{field}: {err.get('msg', 'invalid value')}") from None


def _opt(value: float | None, what: str, *, allow_zero: bool = True, maximum: float = MAX_USD) -> float | None:
    return None if value is None else as_float(value, what, allow_zero=allow_zero, maximum=maximum)


def _share(value: float | None, what: str, default: float) -> tuple[float, bool]:
    if value is None:
        return default, False
    v = as_float(value, what, allow_zero=True, maximum=1.0)
    if v >= 1.0:
        raise UsageError(f"{what} is a share of the total and must be below 1, got {v:g}")
    return v, True


def compute_tco(inputs: TcoInputs) -> TcoResult:
    """The full-cost table for one training project."""
    d = tco_defaults()
    notes: list[str] = []
    final, final_basis, final_hours = _final_run(inputs)
    final_lo, final_hi = _final_band(inputs, final)

    em = d["experiments_multiplier"]
    mult = _opt(inputs.experiments_multiplier, "experiments multiplier", allow_zero=False, maximum=100)
    mult_given = mult is not None
    mult = em["default"] if mult is None else mult
    if mult < 1:
        raise UsageError(f"experiments multiplier is total compute / final run and must be at least 1, got {mult:g}")

    shares = d["shares_of_total"]
    known: dict[str, tuple[float, str, str]] = {}  # key -> (usd, basis, source)
    known["final_run"] = (final, final_basis, "planner" if inputs.final_run_planned else "user")
    known["experiments"] = (final * (mult - 1.0), f"final run x ({mult:g} - 1)" + ("" if mult_given else
                            f"; default multiplier, range {em['low']:g}-{em['high']:g}x"),
                            "user" if mult_given else em["source"])

    data_usd = _opt(inputs.data_usd, "data cost ($)")
    if data_usd is not None:
        known["data"] = (data_usd, "given", "user")

    labour = _labour(inputs, d, notes)
    if labour is not None:
        known["labour"] = labour

    storage = _storage(inputs, d)
    if storage is not None:
        known["storage_networking"] = storage

    safety_usd = _opt(inputs.safety_usd, "safety cost ($)")
    if safety_usd is not None:
        known["safety"] = (safety_usd, "given", "user")
        if inputs.safety_fraction is not None:
            raise UsageError("give --safety-usd or --safety-fraction, not both")

    fractions = {
        "data": _share(inputs.data_fraction, "data share of total", shares["data"]["default"]),
        "storage_networking": _share(inputs.storage_fraction, "storage/networking share of total",
                                     shares["storage_networking"]["default"]),
        "labour": _share(inputs.labour_fraction, "labour share of total", shares["labour"]["default"]),
        "safety": _share(inputs.safety_fraction, "safety share of total", shares["safety"]["default"]),
    }
    defaulted = [k for k in fractions if k not in known]

    def development_total(known_sum: float, f: dict[str, float]) -> float:
        s = sum(f[k] for k in defaulted)
        if s >= MAX_DEFAULT_SHARES:
            raise UsageError(f"the shares of total for {', '.join(defaulted)} add up to {s:.0%}; they must stay "
                             f"below {MAX_DEFAULT_SHARES:.0%}")
        return known_sum / (1.0 - s)

    known_sum = sum(v[0] for v in known.values())
    f_mid = {k: v[0] for k, v in fractions.items()}
    dev = development_total(known_sum, f_mid)

    hosting_usd, hosting_line = _hosting(inputs)
    lines: list[TcoLine] = []
    for key in ("final_run", "experiments", "data", "storage_networking", "labour", "safety"):
        if key in known:
            usd, basis, source = known[key]
            low = high = usd
            if key == "final_run":
                low, high = final_lo, final_hi
            if key == "experiments":  # the final run's band carries into the experiments it multiplies
                lo_m, hi_m = (mult, mult) if mult_given else (em["low"], em["high"])
                low, high = final_lo * (lo_m - 1.0), final_hi * (hi_m - 1.0)
            # overridden: the user replaced a default (the final run has none; experiments only via the multiplier)
            overridden = mult_given if key == "experiments" else key != "final_run"
            lines.append(TcoLine(key=key, name=LINE_NAMES[key], usd=usd, low_usd=low, high_usd=high, basis=basis,
                                 source=source, overridden=overridden))
        else:
            f, user = fractions[key]
            sh = shares[key]
            lines.append(TcoLine(
                key=key, name=LINE_NAMES[key], usd=f * dev,
                low_usd=(f if user else sh["low"]) * dev, high_usd=(f if user else sh["high"]) * dev,
                basis=f"{f:.1%} of the development total" + ("" if user else
                                                             f" (default; typical {sh['low']:.0%}-{sh['high']:.0%})"),
                source="user" if user else sh["source"], overridden=user))
    lines.append(hosting_line)
    total = dev + hosting_usd
    for ln in lines:
        ln.share = ln.usd / total if total > 0 else 0.0

    low_total, high_total = _total_range((final_lo, final_hi), known, mult, mult_given, em, fractions, shares,
                                         defaulted, hosting_usd)
    result = TcoResult(
        lines=lines, total_usd=total, development_usd=dev, hosting_usd=hosting_usd,
        total_low_usd=low_total, total_high_usd=high_total, notes=notes,
        assumptions={
            "experiments_multiplier": mult, "experiments_multiplier_source": "user" if mult_given else em["source"],
            "defaulted_lines": defaulted, "default_shares": {k: fractions[k][0] for k in defaulted},
            "method": "lines not given are shares of the development total: total = known / (1 - sum of shares)",
            "final_run_basis": final_basis, "final_run_range_usd": [final_lo, final_hi], "about": d["about"],
        },
    )
    _energy(inputs, result, final_hours, mult)
    return result


def planned_final_run_inputs(plan: dict[str, Any], summary: str | None = None) -> dict[str, Any]:
    """TcoInputs fields that mark the final run as planned and carry the plan's p10-p90 cost band
    (`plan` is a ranked training plan as a dict: cost_usd, cost_p10_usd, cost_p90_usd)."""
    cost = float(plan["cost_usd"])
    return {"final_run_planned": summary or "planned", "final_run_low_usd": float(plan.get("cost_p10_usd") or cost),
            "final_run_high_usd": float(plan.get("cost_p90_usd") or cost)}


def _final_band(inputs: TcoInputs, final: float) -> tuple[float, float]:
    lo = _opt(inputs.final_run_low_usd, "final run p10 cost ($)", allow_zero=False)
    hi = _opt(inputs.final_run_high_usd, "final run p90 cost ($)", allow_zero=False)
    if (lo is not None or hi is not None) and inputs.final_run_planned is None:
        raise UsageError("a final-run cost band comes from a planned run; give final_run_usd alone")
    lo, hi = (final if lo is None else lo), (final if hi is None else hi)
    if not lo <= final * (1 + 1e-9) or not hi >= final * (1 - 1e-9):
        raise UsageError(f"final run band ${lo:,.0f}-${hi:,.0f} must contain its expected cost ${final:,.0f}")
    return min(lo, final), max(hi, final)


def _final_run(inputs: TcoInputs) -> tuple[float, str, float | None]:
    final = _opt(inputs.final_run_usd, "final run cost ($)", allow_zero=False)
    hours = _opt(inputs.gpu_hours, "GPU-hours", allow_zero=False, maximum=1e12)
    price = _opt(inputs.price_per_gpu_hour, "price per GPU-hour ($)", allow_zero=False, maximum=1e4)
    if final is not None:
        if hours is not None and price is not None and not math.isclose(hours * price, final, rel_tol=0.01):
            raise UsageError(f"--final-run-usd {final:,.0f} disagrees with --gpu-hours x --price-per-gpu-hour "
                             f"= {hours * price:,.0f}; give one or the other")
        if hours is None and price is not None:
            hours = final / price
        if inputs.final_run_planned is not None:
            lo, hi = _final_band(inputs, final)
            band = f" (p10-p90 ${lo:,.0f}-${hi:,.0f})" if lo != hi else ""
            return final, f"planned: {inputs.final_run_planned}{band}", hours
        return final, "given", hours
    if hours is None or price is None:
        raise UsageError("give --final-run-usd, or --gpu-hours with --price-per-gpu-hour")
    return hours * price, f"{hours:,.0f} GPU-hours x ${price:g}/GPU-hour", hours


def _labour(inputs: TcoInputs, d: dict, notes: list[str]) -> tuple[float, str, str] | None:
    given = _opt(inputs.labour_usd, "labour cost ($)")
    formula = any(v is not None for v in (inputs.engineers, inputs.salary_usd_per_year, inputs.labour_overhead))
    if given is not None:
        if formula:
            raise UsageError("give --labour-usd or --engineers/--salary, not both")
        return given, "given", "user"
    if not formula:
        return None
    if inputs.engineers is None:
        raise UsageError("--salary/--labour-overhead need --engineers")
    n = as_float(inputs.engineers, "engineers", maximum=1e5)
    months = _opt(inputs.months, "project months", allow_zero=False, maximum=600)
    if months is None:
        raise UsageError("--engineers needs --months (project length)")
    lab = d["labour"]
    salary = _opt(inputs.salary_usd_per_year, "salary ($/year)", allow_zero=False, maximum=1e8) or lab["salary_usd_per_year"]
    overhead = _opt(inputs.labour_overhead, "labour overhead", allow_zero=False, maximum=5) or lab["overhead"]
    if overhead < 1:
        raise UsageError(f"labour overhead multiplies salary and must be at least 1, got {overhead:g}")
    usd = n * months / 12.0 * salary * overhead
    src = "user" if inputs.salary_usd_per_year is not None and inputs.labour_overhead is not None else lab["source"]
    return usd, f"{n:g} engineers x {months:g} months x ${salary:,.0f}/yr x {overhead:g} overhead", src


def _storage(inputs: TcoInputs, d: dict) -> tuple[float, str, str] | None:
    tb = _opt(inputs.storage_tb, "storage (TB)", maximum=1e7)
    egress_tb = _opt(inputs.egress_tb, "egress (TB)", maximum=1e7)
    if tb is None and egress_tb is None:
        return None
    st = d["storage"]
    months = _opt(inputs.storage_months, "storage months", allow_zero=False, maximum=600)
    months = months or _opt(inputs.months, "project months", allow_zero=False, maximum=600) or st["months"]
    price = _opt(inputs.storage_usd_per_gb_month, "storage price ($/GB-month)", maximum=100)
    price = st["usd_per_gb_month"] if price is None else price
    e_price = _opt(inputs.egress_usd_per_gb, "egress price ($/GB)", maximum=100)
    e_price = st["egress_usd_per_gb"] if e_price is None else e_price
    usd = (tb or 0.0) * 1000 * price * months + (egress_tb or 0.0) * 1000 * e_price
    basis = f"{tb or 0:g} TB x {months:g} months x ${price:g}/GB-month + {egress_tb or 0:g} TB egress x ${e_price:g}/GB"
    return usd, basis, st["source"] if inputs.storage_usd_per_gb_month is None else "user"


def _hosting(inputs: TcoInputs) -> tuple[float, TcoLine]:
    months = _opt(inputs.hosting_months, "hosting months", maximum=600)
    per_month = _opt(inputs.hosting_usd_per_month, "hosting $/month")
    if months is None and per_month is None:
        usd, basis = 0.0, "not included (give --hosting-months and --hosting-usd-per-month)"
    elif months is None or per_month is None:
        raise UsageError("hosting needs both --hosting-months and --hosting-usd-per-month "
                         "(a serving plan's monthly cost: gpuplan plan serve)")
    else:
        usd, basis = months * per_month, f"{months:g} months x ${per_month:,.0f}/month"
    return usd, TcoLine(key="hosting", name=LINE_NAMES["hosting"], usd=usd, low_usd=usd, high_usd=usd, basis=basis,
                        source="user" if usd else "-", overridden=usd > 0)


def _total_range(final_band, known, mult, mult_given, em, fractions, shares, defaulted,
                 hosting_usd) -> tuple[float, float]:
    """Low and high totals: the final run at its band's end (p10/p90 when planned), the experiments
    multiplier at its range's end unless given, and each defaulted share at its typical end."""
    out = []
    for end, final in zip(("low", "high"), final_band):
        ks = sum(v[0] for k, v in known.items() if k not in ("experiments", "final_run")) + final
        ks += final * ((em[end] - 1.0) if not mult_given else (mult - 1.0))
        s = sum(fractions[k][0] if fractions[k][1] else shares[k][end] for k in defaulted)
        out.append(ks / (1.0 - s) + hosting_usd)
    return out[0], out[1]


def _energy(inputs: TcoInputs, result: TcoResult, final_hours: float | None, mult: float) -> None:
    if inputs.region is not None:
        from gpuplan.economics.energy import grid_intensity

        grid_intensity(inputs.region)  # an unknown region is an error even without a GPU
    if inputs.gpu is None and inputs.tdp_w is None:
        result.notes.append("energy and emissions: give --gpu (and --gpu-hours or --price-per-gpu-hour)")
        return
    if final_hours is None:
        result.notes.append("energy and emissions need GPU-hours: give --gpu-hours or --price-per-gpu-hour")
        return
    from gpuplan.economics.energy import energy_report

    rep = energy_report(final_hours * mult, gpu=inputs.gpu, tdp_w=inputs.tdp_w, region=inputs.region,
                        provider_kind=inputs.provider_kind, pue=inputs.pue, usd_per_kwh=inputs.usd_per_kwh)
    result.energy_kwh = rep["energy_kwh"]
    result.energy_final_run_kwh = rep["energy_kwh"] / mult
    result.emissions_kg = rep["emissions_kg"]
    result.energy_cost_usd_info = rep["energy_cost_usd_info"]
    result.assumptions["energy"] = rep["assumptions"] | {
        "gpu_hours_final_run": final_hours, "gpu_hours_all_compute": final_hours * mult,
        "note": "energy covers the final run and the experiments (x multiplier); a rented GPU's price already "
                "includes its power, so the dollar figure is information, not a line"}
