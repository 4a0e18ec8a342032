"""Self-host or pay an API per token: SLO-constrained serving capacity on rented GPUs against
API list prices, with the volume and utilisation where the two cross.

The CLI, the web API and the report all call `compare_self_host_to_apis`; they only render it.
"""
from __future__ import annotations

import datetime as dt
import math
import statistics
from typing import Any

from gpuplan.errors import GpuplanError, UsageError
from gpuplan.units import HOURS_PER_MONTH

REPLICA_SIZES = (1, 2, 4, 8, 16, 32, 64)  # GPUs per serving replica; > 8 means a multi-node replica (TP x PP/EP)

# Defaults an operator would pick for production interactive serving; each is overridable and reported.
RELIABLE_KINDS = ("hyperscaler", "neocloud")
DEFAULT_PEAK_FACTOR = 2.0
DEFAULT_ENG_USD_PER_MONTH = 8000.0
DEFAULT_MAX_TPOT_MS = 50.0
DEFAULT_MAX_TTFT_MS = 2000.0
DEFAULT_TARGET_UTILIZATION = 0.8
REASONS = {
    "price": ("median on-demand price of reliable (hyperscaler/neocloud) offers, one vote per provider so that a "
              "provider listed in many regions does not dominate; not the cheapest marketplace listing"),
    "peak_factor": "interactive traffic peaks at about 2x its daily mean; replicas are sized to the peak",
    "eng_usd_per_month": ("about 0.4 FTE of an ML/infra engineer at a loaded $240k/year (on-call, upgrades, "
                          "monitoring, capacity planning)"),
    "latency_target": ("interactive serving: >= 20 tokens/s per user (TPOT <= 50 ms) and a first token within 2 s; "
                       "replica capacity is taken at that operating point, not at max throughput"),
    "redundancy": ("N+1: one spare replica (so at least 2), so that a failure or a rolling upgrade does not drop "
                   "traffic"),
}


def compare_self_host_to_apis(
    model: str, tokens_per_month: float, *, input_share: float = 0.5, api: list[str] | None = None,
    gpu: str = "H100-SXM", price_per_gpu_hour: float | None = None, output_len: int = 1000,
    precision: str = "bf16", engine: str = "vllm", max_ttft_ms: float | None = None,
    max_tpot_ms: float | None = None, offline: bool = False,
    target_utilization: float = DEFAULT_TARGET_UTILIZATION, eng_usd_per_month: float | None = None,
    peak_factor: float | None = None, redundancy: bool = True, catalog=None, sensitivity: bool = True,
    today: dt.date | None = None,
) -> dict[str, Any]:
    """Monthly cost of self-hosting `model` on `gpu` vs each API, the break-even points and the
    cost-vs-volume curves.

    None means the production default for price (median reliable on-demand price in `catalog`,
    loaded when not given), peak factor (2.0), operations cost ($8,000/month) and latency
    targets (TPOT 50 ms, TTFT 2 s; `offline=True` drops them); `redundancy` adds a spare
    replica (N+1). Every default and its reason is reported under "defaults" and "assumptions",
    and "sensitivity" shows the break-even with each of them relaxed.
    """
    from gpuplan.catalog.gpus import get_gpu
    from gpuplan.economics.api_prices import get_api_price
    from gpuplan.economics.breakeven import _num, breakeven, monthly_gpu_cost
    from gpuplan.models import resolve_model

    demand = float(tokens_per_month)
    if not (math.isfinite(demand) and 0 < demand <= 1e18):
        raise UsageError(f"tokens per month must be in (0, 1e18], got {tokens_per_month!r}")
    if not (math.isfinite(input_share) and 0 <= input_share < 1):
        raise UsageError(f"input share must be in [0, 1), got {input_share!r}")
    if not 1 <= output_len <= 1_000_000:
        raise UsageError(f"output length must be between 1 and 1,000,000, got {output_len}")
    util = _num("target utilization", target_utilization, hi=1.0)
    peak = (DEFAULT_PEAK_FACTOR if peak_factor is None
            else _num("peak factor", peak_factor, lo=1.0, hi=100.0, allow_lo=True))
    eng = (DEFAULT_ENG_USD_PER_MONTH if eng_usd_per_month is None
           else _num("operations cost per month", eng_usd_per_month, hi=1e9, allow_lo=True))
    if price_per_gpu_hour is not None:
        price_per_gpu_hour = _num("price per GPU-hour", price_per_gpu_hour, hi=1e4)
    if max_tpot_ms is not None:
        max_tpot_ms = _num("max TPOT (ms)", max_tpot_ms, hi=1e6)
    if max_ttft_ms is not None:
        max_ttft_ms = _num("max TTFT (ms)", max_ttft_ms, hi=1e7)
    if offline and (max_tpot_ms is not None or max_ttft_ms is not None):
        raise UsageError("offline drops the latency targets; give either offline or a TPOT/TTFT target, not both")
    if offline:
        tpot, ttft, target_note = None, None, "none (offline: max-throughput operating point)"
    else:
        tpot = DEFAULT_MAX_TPOT_MS if max_tpot_ms is None else max_tpot_ms
        ttft = DEFAULT_MAX_TTFT_MS if max_ttft_ms is None else max_ttft_ms
        target_note = ("default" if max_tpot_ms is None and max_ttft_ms is None
                       else "given" if max_tpot_ms is not None and max_ttft_ms is not None else "given, rest default")
    spare = 1 if redundancy else 0

    spec = resolve_model(model)
    g = get_gpu(gpu)
    input_len = max(1, round(output_len * input_share / (1 - input_share)))
    tokens_per_output = (input_len + output_len) / output_len
    if price_per_gpu_hour is None:
        if catalog is None:
            catalog = _load_catalog()
        basis = reliable_gpu_price(g.id, catalog)
        price, price_note = basis["usd_per_gpu_hour"], basis["note"]
    else:
        basis, price, price_note = None, price_per_gpu_hour, "given"

    plans: dict[tuple, Any] = {}

    def capacity_at(pf: float, ttft_ms: float | None, tpot_ms: float | None):
        """The capacity plan at this peak and these targets, and one replica's tokens/month at 100 %."""
        key = (pf, ttft_ms, tpot_ms)
        if key not in plans:
            plans[key] = _plan(spec, g.id, input_len, output_len, demand, pf, ttft_ms, tpot_ms, util, engine,
                               precision)
        plan = plans[key]
        return plan, plan.per_replica_output_tokens_per_s * 3600 * HOURS_PER_MONTH * tokens_per_output

    plan, capacity = capacity_at(peak, ttft, tpot)
    unit_usd = monthly_gpu_cost(plan.gpus_per_replica, price)
    apis = [get_api_price(a) for a in api] if api else _default_apis(spec, model)
    if not apis:
        raise UsageError("no API prices to compare with; name APIs such as PROVIDER/MODEL (see `gpuplan apis`)")
    rows, results = [], []
    for p in apis:
        r = breakeven(unit_usd, capacity, p.input_usd_per_mtok, p.output_usd_per_mtok, input_share, demand,
                      max_utilisation=util, eng_usd_per_month=eng, peak_factor=peak, spare_units=spare)
        results.append((p, r))
        rows.append({"api": p.id, "same_model": _same_model(p, spec, model), "api_usd_per_mtok": r.api_usd_per_mtok,
                     "api_usd_per_month": r.api_usd_per_month, "self_host_usd_per_month": r.self_host_usd_per_month,
                     "cheaper": r.cheaper, "breakeven_tokens_per_month": r.breakeven_tokens_per_month,
                     "breakeven_utilisation": r.breakeven_utilisation, "price_as_of": p.as_of.isoformat(),
                     "price_age_days": p.age_days(today), "price_stale": p.is_stale(today)})
    same = [(p, r) for p, r in results if _same_model(p, spec, model)]
    primary_p, primary = min(same or results, key=lambda pr: pr[1].api_usd_per_mtok)
    first = results[0][1]
    defaults = [
        {"name": "GPU price", "flag": "--price-per-gpu-hour", "value": price, "unit": "USD per GPU-hour",
         "given": price_per_gpu_hour is not None, "basis": price_note,
         "reason": "given" if price_per_gpu_hour is not None else REASONS["price"]},
        {"name": "peak factor", "flag": "--peak-factor", "value": peak, "unit": "peak / average traffic",
         "given": peak_factor is not None, "reason": "given" if peak_factor is not None else REASONS["peak_factor"]},
        {"name": "operations", "flag": "--eng-usd-per-month", "value": eng, "unit": "USD per month",
         "given": eng_usd_per_month is not None,
         "reason": "given" if eng_usd_per_month is not None else REASONS["eng_usd_per_month"]},
        {"name": "latency target", "flag": "--max-tpot-ms / --max-ttft-ms / --offline",
         "value": {"max_tpot_ms": tpot, "max_ttft_ms": ttft}, "unit": "ms",
         "given": offline or max_tpot_ms is not None or max_ttft_ms is not None,
         "reason": target_note if target_note != "default" else REASONS["latency_target"]},
        {"name": "redundancy", "flag": "--no-redundancy", "value": "N+1" if spare else "none", "unit": "",
         "given": not redundancy, "reason": REASONS["redundancy"] if spare else "given: no spare replica"},
    ]
    out = {
        "model": spec.name, "gpu": g.id, "price_per_gpu_hour_usd": price, "price_source": price_note,
        "price_basis": basis,
        "tokens_per_month": demand, "input_share": input_share,
        "self_host_usd_per_month": first.self_host_usd_per_month,
        "api_usd_per_month": primary.api_usd_per_month, "breakeven_tokens_per_month": primary.breakeven_tokens_per_month,
        "breakeven_utilisation": primary.breakeven_utilisation, "primary_api": primary_p.id,
        "cheaper_vs_primary": primary.cheaper,
        "self_host": {"gpus_per_replica": plan.gpus_per_replica, "replicas": first.units,
                      "serving_replicas": first.serving_units, "spare_replicas": first.spare_units,
                      "redundancy": "N+1" if spare else "none", "peak_factor": peak,
                      "unit_usd_per_month": unit_usd, "eng_usd_per_month": eng,
                      "capacity_tokens_per_month_per_replica": capacity,
                      "usable_capacity_tokens_per_month_per_replica": first.capacity_tokens_per_month,
                      "average_capacity_tokens_per_month_per_replica": first.average_capacity_tokens_per_month,
                      "utilisation": first.utilisation, "usd_per_mtok": first.self_host_usd_per_mtok,
                      "usd_per_mtok_at_full": first.self_host_usd_per_mtok_at_full,
                      "per_replica_output_tokens_per_s": plan.per_replica_output_tokens_per_s,
                      "tpot_ms": plan.tpot_ms, "ttft_ms": plan.ttft_ms,
                      "precision": plan.precision, "engine": plan.engine},
        "comparisons": rows,
        "defaults": defaults,
        "curve": {"tokens_per_month": first.curve.tokens_per_month,
                  "self_host_usd_per_month": first.curve.self_host_usd_per_month,
                  "api_usd_per_month": {p.id: [x * r.api_usd_per_mtok / 1e6 for x in first.curve.tokens_per_month]
                                        for p, r in results}},
        "assumptions": {**first.assumptions, "input_len": input_len, "output_len": output_len,
                        "price_per_gpu_hour_usd": price, "price_source": price_note,
                        "peak_factor_reason": "given" if peak_factor is not None else REASONS["peak_factor"],
                        "eng_usd_per_month_reason": ("given" if eng_usd_per_month is not None
                                                     else REASONS["eng_usd_per_month"]),
                        "max_tpot_ms": tpot, "max_ttft_ms": ttft, "offline": offline,
                        "latency_target": target_note,
                        "latency_target_reason": REASONS["latency_target"] if target_note == "default" else target_note,
                        "redundancy": "N+1" if spare else "none",
                        "redundancy_reason": REASONS["redundancy"] if spare else "given: no spare replica",
                        "capacity_source": "gpuplan.perf.capacity.plan_capacity (SLO-constrained throughput)",
                        "replica_sizes_tried": list(REPLICA_SIZES),
                        **{f"capacity_{k}": v for k, v in plan.assumptions.items() if isinstance(v, (int, float, str))}},
        "warnings": stale_api_warnings([p for p, _ in results], today),
        "caveats": ["closed or different-model APIs differ in quality; compare like with like where same_model is false",
                    "API list prices ignore cached-input and batch discounts (often 50%)"],
    }
    if peak > 1:
        out["caveats"].append(f"replicas are rented all month at the size the {peak:g}x peak needs (no autoscaling); "
                              "scaling down off-peak would put the cost between this and the peak-factor-1 row")
    if basis is not None and basis["stale_included"]:
        out["caveats"].append(f"every offer behind the default GPU price is stale (newest {basis['newest_as_of']})")
    if basis is not None and not basis["reliable_only"]:
        out["caveats"].append(f"no hyperscaler or neocloud sells {g.id} on demand in the catalog: the default price "
                              "is the median over every on-demand offer")
    if sensitivity:
        # against the APIs serving the same model (else the first few compared), at most three
        versus = [p for p, _ in (same or results)][:3]
        out["sensitivity"] = _sensitivity(
            versus, capacity_at, monthly_gpu_cost, breakeven, input_share=input_share, demand=demand, util=util,
            price=price, peak=peak, eng=eng, spare=spare, ttft=ttft, tpot=tpot,
            cheapest=_cheapest_offer(g.id, catalog) if basis is not None else None)
    return out


def stale_api_warnings(prices, today: dt.date | None = None) -> list[str]:
    """One warning naming every compared API price past the stale limit (empty when all are fresh)."""
    from gpuplan.catalog.records import STALE_AFTER_DAYS

    stale = [p for p in prices if p.is_stale(today)]
    if not stale:
        return []
    oldest = max(stale, key=lambda p: p.age_days(today))
    who = (f"{stale[0].id} is" if len(stale) == 1 else
           f"{len(stale)} of the {len(prices)} API prices compared are")
    return [f"WARNING: {who} older than {STALE_AFTER_DAYS} days (oldest: {oldest.id}, as of "
            f"{oldest.as_of.isoformat()}, {oldest.age_days(today)} days old); API list prices fall often, so the "
            "break-even may be wrong: check the provider's current price (`gpuplan apis` shows every date)"]


def _plan(spec, gpu_id: str, input_len: int, output_len: int, demand: float, peak: float, ttft_ms: float | None,
          tpot_ms: float | None, util: float, engine: str, precision: str):
    from gpuplan.perf.capacity import Targets, make_traffic, plan_capacity

    plan = plan_capacity(spec, gpu_id, make_traffic(input_len, output_len, tokens_per_month=demand, peak_factor=peak),
                         Targets(max_ttft_ms=ttft_ms, max_tpot_ms=tpot_ms, target_utilization=util),
                         engine=engine, precision=precision, tp_choices=REPLICA_SIZES)
    if not plan.feasible:
        last = (plan.message or "").split("; TP")[-1]
        targets = "" if ttft_ms is None and tpot_ms is None else (
            f" within TPOT <= {tpot_ms:g} ms, TTFT <= {ttft_ms:g} ms" if ttft_ms is not None and tpot_ms is not None
            else f" within TPOT <= {tpot_ms:g} ms" if tpot_ms is not None else f" within TTFT <= {ttft_ms:g} ms")
        raise GpuplanError(f"{spec.name} cannot be served on {gpu_id}{targets} with up to {REPLICA_SIZES[-1]} GPUs "
                           f"per replica (largest tried: TP{last if last[:1].isdigit() else ' ' + last})")
    return plan


def _sensitivity(api_prices, capacity_at, monthly_gpu_cost, breakeven, *, input_share, demand, util, price, peak,
                 eng, spare, ttft, tpot, cheapest) -> list[dict[str, Any]]:
    """Break-even against each of `api_prices` with each default relaxed, one at a time, then all together."""
    def row(change: str, p: float, pf: float, e: float, sp: int, tt: float | None, tp: float | None) -> dict[str, Any]:
        plan, cap = capacity_at(pf, tt, tp)
        unit = monthly_gpu_cost(plan.gpus_per_replica, p)
        rs = {a.id: breakeven(unit, cap, a.input_usd_per_mtok, a.output_usd_per_mtok, input_share, demand,
                              max_utilisation=util, eng_usd_per_month=e, peak_factor=pf, spare_units=sp)
              for a in api_prices}
        any_r = next(iter(rs.values()))
        return {"change": change, "price_per_gpu_hour_usd": p, "peak_factor": pf, "eng_usd_per_month": e,
                "spare_replicas": sp, "max_tpot_ms": tp, "max_ttft_ms": tt, "gpus_per_replica": plan.gpus_per_replica,
                "replicas": any_r.units, "self_host_usd_per_month": any_r.self_host_usd_per_month,
                "cheaper": {a: r.cheaper for a, r in rs.items()},
                "breakeven_tokens_per_month": {a: r.breakeven_tokens_per_month for a, r in rs.items()}}

    relax: list[tuple[str, dict[str, Any]]] = []
    if peak != 1.0:
        relax.append(("peak factor 1 (flat traffic)", {"pf": 1.0}))
    if eng > 0:
        relax.append(("no operations cost", {"e": 0.0}))
    if spare:
        relax.append(("no spare replica", {"sp": 0}))
    if ttft is not None or tpot is not None:
        relax.append(("no latency target (max throughput)", {"tt": None, "tp": None}))
    if cheapest is not None and cheapest[0] < price:
        relax.append((f"cheapest on-demand offer, ${cheapest[0]:.2f}/GPU-h ({cheapest[1]}, {cheapest[2]})",
                      {"p": cheapest[0]}))
    base = {"p": price, "pf": peak, "e": eng, "sp": spare, "tt": ttft, "tp": tpot}
    rows = [row("as assumed", **base)]
    rows += [row(name, **{**base, **change}) for name, change in relax]
    if len(relax) > 1:
        every = {k: v for _, change in relax for k, v in change.items()}
        rows.append(row("all of the above", **{**base, **every}))
    return rows


def _load_catalog():
    from gpuplan.catalog.catalog import Catalog

    return Catalog.load()


def reliable_gpu_price(gpu_id: str, catalog=None, today: dt.date | None = None) -> dict[str, Any]:
    """The default self-hosting price: median on-demand $/GPU-h of reliable providers' offers.

    Reliable = hyperscaler or neocloud (not marketplace or decentralized), prices no older than
    the catalog's stale limit where any are that fresh. Each provider votes once, with the
    median of its own offers, so a provider listed in twenty regions does not set the price.
    Falls back to stale reliable offers, then to on-demand offers of any kind, saying so.
    """
    from gpuplan.catalog.records import STALE_AFTER_DAYS

    cat = catalog if catalog is not None else _load_catalog()
    on_demand = cat.offers(gpu=gpu_id, pricing="on_demand", today=today)
    if not on_demand:
        raise UsageError(f"no on-demand {gpu_id} offers in the catalog; give a price per GPU-hour")

    def kind(o) -> str | None:
        prov = cat.providers.get(o.provider)
        return prov.kind if prov else None

    pool = [o for o in on_demand if kind(o) in RELIABLE_KINDS]
    kinds_note = "/".join(RELIABLE_KINDS)
    if not pool:
        pool, kinds_note = list(on_demand), "any kind (no hyperscaler or neocloud offers)"
    fresh = [o for o in pool if not o.is_stale(today)]
    age_note = f"<= {STALE_AFTER_DAYS} days old" if fresh else f"all older than {STALE_AFTER_DAYS} days"
    pool = fresh or pool
    by_provider: dict[str, list[float]] = {}
    for o in pool:
        by_provider.setdefault(o.provider, []).append(o.price_per_gpu_hour_usd)
    per_provider = {p: float(statistics.median(v)) for p, v in sorted(by_provider.items())}
    price = float(statistics.median(per_provider.values()))
    listing = ", ".join(f"{p} ${v:.2f}" for p, v in sorted(per_provider.items(), key=lambda kv: (kv[1], kv[0])))
    who = f"{len(per_provider)} providers'" if len(per_provider) > 1 else "1 provider's"
    offers_n = f"{len(pool)} offers" if len(pool) > 1 else "1 offer"
    note = (f"median of {who} on-demand prices ({offers_n}, {kinds_note}, "
            f"{age_note}, one vote per provider; {cat.origin} catalog): {listing}")
    return {"usd_per_gpu_hour": price, "offers": len(pool), "providers": per_provider,
            "provider_kinds": sorted({kind(o) or "unknown" for o in pool}), "stale_included": not fresh,
            "reliable_only": kinds_note == "/".join(RELIABLE_KINDS),
            "newest_as_of": max(o.as_of for o in pool).isoformat(),
            "oldest_as_of": min(o.as_of for o in pool).isoformat(), "catalog": cat.origin, "note": note}


def _cheapest_offer(gpu_id: str, catalog) -> tuple[float, str, str] | None:
    """The cheapest on-demand offer of any provider kind (the old default), for the sensitivity table."""
    offers = catalog.offers(gpu=gpu_id, pricing="on_demand") if catalog is not None else []
    if not offers:
        return None
    o = offers[0]
    prov = catalog.providers.get(o.provider)
    return o.price_per_gpu_hour_usd, o.provider, prov.kind if prov else "unknown kind"


def catalog_rents(gpu_id: str, catalog=None, today: dt.date | None = None) -> tuple[dict[str, float], str, dict | None]:
    """The rents own-vs-rent compares with: the same pool as break-even's default price
    (`reliable_gpu_price`: reliable providers, prices within the stale limit, one vote per provider),
    summarised as its cheapest and median provider. Returns (rents, one-line note, the price basis)."""
    try:
        from gpuplan.catalog.catalog import Catalog  # noqa: F401
    except ImportError:
        return {}, "catalog not available", None
    from gpuplan.economics.ownership import rental_prices_from_offers

    cat = catalog if catalog is not None else _load_catalog()
    try:
        basis = reliable_gpu_price(gpu_id, cat, today=today)
    except UsageError:
        return {}, f"no on-demand {gpu_id} offers in the {cat.origin} catalog", None
    rents = rental_prices_from_offers(list(basis["providers"].values()))
    day = today or dt.date.today()
    newest = (day - dt.date.fromisoformat(basis["newest_as_of"])).days
    oldest = (day - dt.date.fromisoformat(basis["oldest_as_of"])).days
    basis = {**basis, "newest_age_days": newest, "oldest_age_days": oldest}
    n = len(basis["providers"])
    note = (f"median ${rents['median on-demand']:.2f}/GPU-h of {n} provider{'s' if n != 1 else ''} "
            f"(one vote each, {basis['offers']} offers, prices {newest}-{oldest} days old, "
            f"as of {basis['oldest_as_of']} to {basis['newest_as_of']}); the pool break-even prices from")
    return rents, note, basis


def _same_model(p, spec, text: str) -> bool:
    from gpuplan.models.presets import resolve_preset_id

    pid = resolve_preset_id(text) or resolve_preset_id(spec.name)
    return p.same_weights and p.open_model == pid


def _default_apis(spec, text: str) -> list:
    """APIs serving the same model first, then the nearest open models by size, up to five."""
    from gpuplan.economics.api_prices import list_api_prices
    from gpuplan.models.presets import get_preset, resolve_preset_id

    pid = resolve_preset_id(text) or resolve_preset_id(spec.name)
    rows = list_api_prices()
    same = [p for p in rows if pid and p.open_model == pid]
    if len(same) >= 5:
        return same
    n = spec.total_params()
    sizes: dict[str, float] = {}
    for p in rows:
        if p.open_model and p.open_model not in sizes:
            try:
                sizes[p.open_model] = get_preset(p.open_model).total_params()
            except Exception:  # a preset the models helper has not shipped: skip it
                sizes[p.open_model] = math.nan
    others = [p for p in rows if p.open_model and p.open_model != pid and math.isfinite(sizes[p.open_model])]
    others.sort(key=lambda p: (abs(math.log(sizes[p.open_model] / n)), p.blended_usd_per_mtok(0.5), p.id))
    return same + others[: max(0, 5 - len(same))]


