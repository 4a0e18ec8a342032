"""Self-host or pay an API per token: SLO-constrained serving capacity on rented GPUs against
API list prices, with the volume and utilisation where the two cross.

The CLI, the web API and the report all call `compare_self_host_to_apis`; they only render it.
"""
from __future__ import annotations

import math
from typing import Any

from gpuplan.errors import GpuplanError, UsageError

REPLICA_SIZES = (1, 2, 4, 8, 16, 32, 64)  # GPUs per serving replica; > 8 means a multi-node replica (TP x PP/EP)


def compare_self_host_to_apis(
    model: str, tokens_per_month: float, *, input_share: float = 0.5, api: list[str] | None = None,
    gpu: str = "H100-SXM", price_per_gpu_hour: float | None = None, output_len: int = 1000,
    precision: str = "bf16", engine: str = "vllm", max_ttft_ms: float | None = None,
    max_tpot_ms: float | None = None, target_utilization: float = 0.8, eng_usd_per_month: float = 0.0,
) -> dict[str, Any]:
    """Monthly cost of self-hosting `model` on `gpu` vs each API, the break-even points and the
    cost-vs-volume curves."""
    from gpuplan.catalog.gpus import get_gpu
    from gpuplan.economics.api_prices import get_api_price
    from gpuplan.economics.breakeven import breakeven, monthly_gpu_cost
    from gpuplan.models import resolve_model
    from gpuplan.perf.capacity import Targets, make_traffic, plan_capacity

    demand = float(tokens_per_month)
    if not (math.isfinite(demand) and 0 < demand <= 1e18):
        raise UsageError(f"tokens per month must be in (0, 1e18], got {tokens_per_month!r}")
    if not (math.isfinite(input_share) and 0 <= input_share < 1):
        raise UsageError(f"input share must be in [0, 1), got {input_share!r}")
    if not 1 <= output_len <= 1_000_000:
        raise UsageError(f"output length must be between 1 and 1,000,000, got {output_len}")
    spec = resolve_model(model)
    g = get_gpu(gpu)
    input_len = max(1, round(output_len * input_share / (1 - input_share)))
    price_note = "given"
    if price_per_gpu_hour is None:
        rents, price_note = catalog_rents(g.id)
        if not rents:
            raise UsageError(f"no on-demand {g.id} offers in the catalog; give a price per GPU-hour")
        price_per_gpu_hour = rents["cheapest on-demand"]
        price_note = f"cheapest of {price_note}"
    plan = plan_capacity(spec, g.id, make_traffic(input_len, output_len, tokens_per_month=demand),
                         Targets(max_ttft_ms=max_ttft_ms, max_tpot_ms=max_tpot_ms, target_utilization=target_utilization),
                         engine=engine, precision=precision, tp_choices=REPLICA_SIZES)
    if not plan.feasible:
        last = (plan.message or "").split("; TP")[-1]
        raise GpuplanError(f"{spec.name} cannot be served on {g.id} with up to {REPLICA_SIZES[-1]} GPUs per replica "
                           f"(largest tried: TP{last if last[0].isdigit() else ' ' + last})")
    unit_usd = monthly_gpu_cost(plan.gpus_per_replica, price_per_gpu_hour)
    tokens_per_output = (input_len + output_len) / output_len
    capacity = plan.per_replica_output_tokens_per_s * 3600 * 730 * tokens_per_output
    apis = [get_api_price(a) for a in api] if api else _default_apis(spec, model)
    if not apis:
        raise UsageError("no API prices to compare with; name APIs such as PROVIDER/MODEL (see `gpuplan apis`)")
    rows, results = [], []
    for p in apis:
        r = breakeven(unit_usd, capacity, p.input_usd_per_mtok, p.output_usd_per_mtok, input_share, demand,
                      max_utilisation=target_utilization, eng_usd_per_month=eng_usd_per_month)
        results.append((p, r))
        rows.append({"api": p.id, "same_model": _same_model(p, spec, model), "api_usd_per_mtok": r.api_usd_per_mtok,
                     "api_usd_per_month": r.api_usd_per_month, "self_host_usd_per_month": r.self_host_usd_per_month,
                     "cheaper": r.cheaper, "breakeven_tokens_per_month": r.breakeven_tokens_per_month,
                     "breakeven_utilisation": r.breakeven_utilisation, "price_as_of": p.as_of.isoformat(),
                     "price_age_days": p.age_days(), "price_stale": p.is_stale()})
    same = [(p, r) for p, r in results if _same_model(p, spec, model)]
    primary_p, primary = min(same or results, key=lambda pr: pr[1].api_usd_per_mtok)
    first = results[0][1]
    out = {
        "model": spec.name, "gpu": g.id, "price_per_gpu_hour_usd": price_per_gpu_hour, "price_source": price_note,
        "tokens_per_month": demand, "input_share": input_share,
        "self_host_usd_per_month": first.self_host_usd_per_month,
        "api_usd_per_month": primary.api_usd_per_month, "breakeven_tokens_per_month": primary.breakeven_tokens_per_month,
        "breakeven_utilisation": primary.breakeven_utilisation, "primary_api": primary_p.id,
        "self_host": {"gpus_per_replica": plan.gpus_per_replica, "replicas": first.units,
                      "unit_usd_per_month": unit_usd, "capacity_tokens_per_month_per_replica": capacity,
                      "usable_capacity_tokens_per_month_per_replica": first.capacity_tokens_per_month,
                      "utilisation": first.utilisation, "usd_per_mtok": first.self_host_usd_per_mtok,
                      "usd_per_mtok_at_full": first.self_host_usd_per_mtok_at_full,
                      "per_replica_output_tokens_per_s": plan.per_replica_output_tokens_per_s,
                      "precision": plan.precision, "engine": plan.engine},
        "comparisons": rows,
        "curve": {"tokens_per_month": first.curve.tokens_per_month,
                  "self_host_usd_per_month": first.curve.self_host_usd_per_month,
                  "api_usd_per_month": {p.id: [x * r.api_usd_per_mtok / 1e6 for x in first.curve.tokens_per_month]
                                        for p, r in results}},
        "assumptions": {**first.assumptions, "input_len": input_len, "output_len": output_len,
                        "capacity_source": "gpuplan.perf.capacity.plan_capacity (SLO-constrained throughput)",
                        "replica_sizes_tried": list(REPLICA_SIZES),
                        **{f"capacity_{k}": v for k, v in plan.assumptions.items() if isinstance(v, (int, float, str))}},
        "caveats": ["closed or different-model APIs differ in quality; compare like with like where same_model is false",
                    "API list prices ignore cached-input and batch discounts (often 50%)"],
    }
    return out


def catalog_rents(gpu_id: str) -> tuple[dict[str, float], str]:
    """Cheapest and median on-demand $/GPU-h from the catalog, with a note on where they came from."""
    try:
        from gpuplan.catalog.catalog import Catalog
    except ImportError:
        return {}, "catalog not available"
    from gpuplan.economics.ownership import rental_prices_from_offers

    cat = Catalog.load()
    offers = cat.offers(gpu=gpu_id, pricing="on_demand")
    rents = rental_prices_from_offers([o.price_per_gpu_hour_usd for o in offers])
    newest = max((o.as_of for o in offers), default=None)
    return rents, f"{len(offers)} on-demand offers in the {cat.origin} catalog (newest {newest})"


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


