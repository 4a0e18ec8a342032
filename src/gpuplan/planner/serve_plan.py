"""Serving plans: for every offer, the replicas a traffic profile needs, and what they cost.

Capacity comes from the serving estimator (fewest GPUs per GPU type within the latency
targets); this module fits those replicas onto each offer's nodes, prices them over the
serving horizon, adds spare replicas where capacity can be taken back, and ranks.
"""
from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from gpuplan.catalog.catalog import Catalog
from gpuplan.display import region_full
from gpuplan.errors import GpuplanError
from gpuplan.perf.calibration import summary_entry as calibration_summary
from gpuplan.planner.candidates import (HOST_RAM_BASE_GB, filter_offer_rows, served_weights_gb, weight_lines,
                                       weight_notes, without_gc)
from gpuplan.planner.offer_rows import as_offer
from gpuplan.planner.distinct import collapse_rows, where_label
from gpuplan.planner.geography import region_geography, worst_rtt_ms
from gpuplan.planner.hosts import hosts_available
from gpuplan.planner.pareto import pareto_front
from gpuplan.planner.placement import classify
from gpuplan.planner.records import CostBreakdown, Layout, Plan, PlanResult
from gpuplan.planner.requests import ServePlanRequest
from gpuplan.planner.uncertainty import (Spread, estimator_regime, flip_analysis, mark_ties, price_sigma, ties_line,
                                         ranking_scale, serving_band, vendor_band)
from gpuplan.units import HOURS_PER_MONTH

# Ranking favours offers near users: each 100 ms of round trip beyond a 50 ms budget costs as much
# as 25% more spend (an interactive user notices 100 ms on every request). A stated preference, not a
# measurement; shown in the assumptions.
RTT_FREE_MS = 50.0
RTT_PENALTY_PER_100MS = 0.25
# Serving responses are text: about 4 bytes per output token once framed as JSON.
EGRESS_BYTES_PER_OUTPUT_TOKEN = 4.0


@without_gc
def plan_serving(req: ServePlanRequest, catalog: Catalog | None = None) -> PlanResult:
    """Every offer that can serve the traffic within the targets, ranked by the 75th percentile of
    its cost band (near users first when users are given)."""
    from gpuplan.catalog.capabilities import resolve_serving
    from gpuplan.perf.capacity import Targets, make_traffic, plan_capacity

    catalog = catalog or Catalog.load()
    model = req.resolve_model()
    precision = req.resolved_precision(model)
    from gpuplan.perf.inference_estimate import check_context

    check_context(model, req.input_len, req.output_len)
    traffic = make_traffic(req.input_len, req.output_len, requests_per_s=req.requests_per_s,
                           tokens_per_month=req.tokens_per_month, peak_factor=req.peak_factor)
    ttft, tpot, target_basis = req.targets_ms()
    targets = Targets(max_ttft_ms=ttft, max_tpot_ms=tpot)
    precision_needs = {"fp8": "fp8", "fp4": "fp4"}.get(precision)
    # OfferRow tuples: an Offer object only for the plans shown
    cands = filter_offer_rows(catalog, req.constraints, precision=precision_needs,
                              native_precision=getattr(model, "native_precision", None))
    rejected = cands.rejected
    regime = estimator_regime("serve", is_moe=model.is_moe, active_params=float(model.active_params()))

    capacity: dict[str, Any] = {}
    support: dict[str, Any] = {}
    for gpu_id in {o.gpu for o in cands.offers}:
        res = resolve_serving(catalog.gpus[gpu_id], precision, req.engine)
        support[gpu_id] = res
        if not res.ok:
            continue
        try:
            capacity[gpu_id] = plan_capacity(model, gpu_id, traffic, targets, engine=req.engine,
                                             precision=res.precision, kv_precision=req.kv_precision)
        except GpuplanError as e:
            capacity[gpu_id] = e

    plans: list[dict[str, Any]] = []
    hours = HOURS_PER_MONTH * req.horizon_months
    # A large catalog repeats a few hundred offer types across regions, prices and dates: what depends
    # only on the offer's type is worked out once per type, what depends on its date once per date.
    classes: dict[tuple, Any] = {}
    rtts: dict[str, float | None] = {}
    spreads: dict[tuple, tuple] = {}
    risks: dict[tuple, tuple] = {}
    for o in cands.offers:
        ckey = (o.gpu, o.commitment_term_h, o.gpus_per_node, o.provider, o.ram_gb, o.pricing, o.max_nodes)
        c = classes.get(ckey)
        if c is None:
            c = classes[ckey] = _serving_class(o, support, capacity, catalog, model, req, precision, hours)
        if isinstance(c, str):
            rejected[c] += 1
            continue
        (res, cap, tp, replicas, per_replica_tok_s, provider, lam, spare, availability, replicas_total, nodes, gpus,
         out_tokens, egress, p90_share, vb) = c
        compute = nodes * o.price_per_hour_usd * hours
        cost = compute + egress
        # p90: a bad month of interruptions also leaves capacity short; priced as on-demand cover.
        p90_extra = compute * p90_share
        if req.users:
            if o.region not in rtts:
                rtts[o.region] = worst_rtt_ms(o.region, req.users)
            rtt = rtts[o.region]
        else:
            rtt = None
        skey = (o.gpu, o.confidence, o.as_of)
        sp = spreads.get(skey)
        if sp is None:
            spread = Spread(estimator=regime[1], vendor=vb.sigma, network=0.0, price=price_sigma(o))
            sp = spreads[skey] = (spread, float(ranking_scale(spread.cost)))
        spread, rank_factor = sp
        rkey = (ckey, o.as_of, o.confidence, rtt)
        rn = risks.get(rkey)
        if rn is None:
            risk, notes = _serving_risk(o, provider, lam, rtt, spare)
            notes = list(res.notes) + weight_notes(c[1]) + notes
            if abs(vb.factor - 1.0) > 1e-9 or vb.basis not in ("fitted", "curve"):
                notes.append(f"{vb.arch} serving efficiency x{vb.factor:.2f} of Hopper's ({vb.basis})")
            rn = risks[rkey] = (risk, notes)
        risk = rn[0]
        # ranking_cost(compute, egress, spread.cost), its exponential shared per spread
        rc = float(compute * rank_factor + egress) + p90_extra * 0.5
        # A row is a tuple (sort key first); it becomes the dict below only if a plan shows it.
        plans.append((rc * (1 + _rtt_penalty(rtt, bool(req.users))), risk, gpus, cost, o, c, rtt, sp, rn, compute,
                      egress, p90_extra, rc))

    if req.constraints.budget_usd is not None:
        over = [p for p in plans if p[3] > req.constraints.budget_usd]
        rejected["over --budget"] += len(over)
        plans = [p for p in plans if p[3] <= req.constraints.budget_usd]
    if req.constraints.max_gpus is not None:
        over = [p for p in plans if p[2] > req.constraints.max_gpus]
        rejected["more GPUs than --max-gpus"] += len(over)
        plans = [p for p in plans if p[2] <= req.constraints.max_gpus]

    plans.sort(key=operator.itemgetter(0, 1, 2))  # score, risk, GPUs
    order = list(range(len(plans)))
    also: dict[int, list[str]] = {}
    if not req.all_rows:
        order, also = collapse_rows(
            order, keys=[(p[4].provider, p[4].gpu, p[4].gpus_per_node, p[4].pricing, p[2]) for p in plans],
            costs=[p[3] for p in plans], wheres=_Wheres(plans), limit=req.limit)
    shown = order[: req.limit]
    plans = _PlanRows(plans)
    plan_records = mark_ties([_to_plan(i + 1, plans[j], req, hours, also.get(j, []), regime)
                              for i, j in enumerate(shown)])
    cost_arr = np.array([p.cost_usd for p in plan_records])
    # Serving's "time" axis is the per-token latency users feel (TPOT, plus the network when users are placed).
    lat_arr = np.array([(p.assumptions.get("tpot_ms") or np.inf) + (p.network_rtt_ms or 0.0) / max(req.output_len, 1)
                        for p in plan_records])
    front = [plan_records[i].rank for i in pareto_front(cost_arr, lat_arr)] if plan_records else []
    flips = _flips(plans, shown) if len(shown) > 1 else []
    return PlanResult(
        workload="serve", model=model.name,
        summary={
            "model": model.name, "params": model.total_params(), "active_params": model.active_params(),
            "precision": precision, "precision_basis": "given" if req.precision else "the model's native precision",
            "kv_precision": req.kv_precision, "engine": req.engine,
            "input_len": req.input_len, "output_len": req.output_len,
            "average_requests_per_s": traffic.average_requests_per_s, "peak_requests_per_s": traffic.peak_requests_per_s,
            "output_tokens_per_month": traffic.average_requests_per_s * req.output_len * HOURS_PER_MONTH * 3600,
            "horizon_months": req.horizon_months, "users": req.users, "candidates": len(plans),
            "providers_ranked": len({p[4].provider for p in plans.rows}),
            "max_ttft_ms": ttft, "max_tpot_ms": tpot, "latency_target": target_basis,
            "redundancy": ("N+1: the peak is served without the fullest host (a host's worth of spare replicas, "
                           "at least two hosts)") if req.redundancy else "none (--no-redundancy)",
            "estimator_regime": regime[0], "flips_first": flips,
            "ranked_by": "75th percentile of the cost band (expected cost shown)" + (
                f", +{RTT_PENALTY_PER_100MS:.0%} per 100 ms of round trip to the users beyond {RTT_FREE_MS:.0f} ms"
                if req.users else ""),
            "calibration": calibration_summary("serving"),
        },
        plans=plan_records, pareto_ranks=front, why=_why(plan_records, bool(req.users)) + weight_lines(plan_records) + flips,
        placement=classify("serve", 1).model_dump(), rejected={k: v for k, v in rejected.items() if v},
        assumptions={
            "rtt_penalty": f"+{RTT_PENALTY_PER_100MS:.0%} of cost per 100 ms beyond {RTT_FREE_MS:.0f} ms (ranking only)"
            if req.users else None,
            "egress_bytes_per_output_token": EGRESS_BYTES_PER_OUTPUT_TOKEN,
            "hours_per_month": HOURS_PER_MONTH,
            "latency_target": target_basis,
            "spare_replicas": "by default a host's worth of spare replicas (a host fails with every replica on it); "
                              "more on interruptible capacity so that expected capacity covers the peak",
            "band": "p10/p90 combine the serving estimator's error, vendor efficiency and price age/confidence",
            "ranking": "75th percentile of each plan's cost band; ties_first marks bands overlapping #1's",
        },
    )


def _serving_class(o, support, capacity, catalog, model, req, precision: str, hours: float):
    """What a plan for offer `o` takes from its type (GPU, GPUs per node, provider, pricing, term, host
    RAM): the replicas, nodes and rates, or why offers of this type cannot serve."""
    from gpuplan.economics.preemption import interruption_rate_per_node_hour, restart_hours

    res = support[o.gpu]
    if not res.ok:
        return f"{req.engine} cannot serve {precision} on this GPU"
    cap = capacity[o.gpu]
    if isinstance(cap, GpuplanError) or not cap.feasible:
        return "model does not fit or misses the latency targets on this GPU"
    if o.commitment_term_h and o.commitment_term_h > hours:
        return "reserved term longer than the serving horizon"
    layout = _fit_replicas_on_node(cap, o.gpus_per_node)
    if layout is None:
        return "replica needs more GPUs than one node has"
    tp, replicas, per_replica_tok_s = layout
    provider = catalog.provider_record(o.provider)
    if o.ram_gb is not None and o.ram_gb < HOST_RAM_BASE_GB + served_weights_gb(model, res.precision):
        return "host RAM too small to load the model's weights"
    lam = interruption_rate_per_node_hour(provider.kind, o.pricing)
    spare, availability = _spare_replicas(replicas, lam, restart_hours(provider.kind, o.pricing))
    per_node = max(1, int(o.gpus_per_node // tp))
    if req.redundancy:
        # A host fails (or is taken back) with every replica on it: N+1 means the peak is still served
        # without the fullest host, i.e. at least one host's worth of spare replicas, on at least two hosts.
        spare = max(spare, per_node)
    nodes = math.ceil((replicas + spare) / per_node)
    if req.redundancy and nodes < 2:
        nodes = 2
    replicas_total = nodes * per_node  # the hosts are rented whole: every slot serves
    spare = replicas_total - replicas
    if nodes > hosts_available(o, provider.kind)[0]:
        return ("needs more hosts than one offer supplies at once (its published limit, else a default by "
                "provider kind: data/hosts.json)")
    gpus = int(nodes * o.gpus_per_node)
    out_tokens = cap.output_tokens_per_month * req.horizon_months
    egress_rate = provider.egress_usd_per_gb or 0.0
    egress = out_tokens * EGRESS_BYTES_PER_OUTPUT_TOKEN / 1e9 * egress_rate
    p90_share = _interruption_p90_share(lam, nodes, hours, restart_hours(provider.kind, o.pricing))
    vb = vendor_band(o.gpu, "serving")
    return (res, cap, tp, replicas, per_replica_tok_s, provider, lam, spare, availability, replicas_total, nodes,
            gpus, out_tokens, egress, p90_share, vb)



class _Wheres:
    """collapse_rows' 'where' label of a row, read only for the rows it asks about."""

    def __init__(self, rows: list[tuple]):
        self.rows = rows

    def __getitem__(self, j: int) -> str:
        return where_label(self.rows[j][4].region)


class _PlanRows:
    """The ranked rows as tuples (score, risk, GPUs, cost, offer, class, RTT, spread, risk and notes,
    compute, egress, p90 extra, ranking cost); `rows[j]` is row j as the dict a plan is made from."""

    def __init__(self, rows: list[tuple]):
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, j: int) -> dict[str, Any]:
        score, risk, gpus, cost, o, c, rtt, (spread, _f), (_r, notes), compute, egress, p90_extra, rc = self.rows[j]
        (res, cap, tp, replicas, per_replica_tok_s, provider, lam, spare, availability, replicas_total, nodes, _g,
         out_tokens, _e, _s, vb) = c
        return dict(
            offer=o, provider=provider, tp=tp, replicas=replicas_total, nodes=nodes, gpus=gpus,
            compute=compute, egress=egress, cost=cost, cost_p90_extra=p90_extra, out_tokens=out_tokens,
            tok_s=per_replica_tok_s * replicas, rtt=rtt, risk=risk, notes=list(notes), spare=spare,
            availability=availability, lam=lam, cap=cap, spread=spread, vendor=vb, precision=res.precision,
            rank_cost=rc, score=score)


def _flips(plans: _PlanRows, shown: list[int]) -> list[str]:
    a, b = plans[shown[0]], plans[shown[1]]
    lines = flip_analysis({"rank_cost": a["score"], "compute_usd": a["compute"], "cost_sigma": a["spread"].cost,
                           "other_usd": a["egress"]},
                          {"rank_cost": b["score"], "compute_usd": b["compute"], "cost_sigma": b["spread"].cost,
                           "other_usd": b["egress"]})
    return [f"#2 ({b['provider'].name} {b['gpus']}x {b['offer'].gpu}, {b['offer'].pricing}) would rank first with: "
            + "; or ".join(lines)]


def _fit_replicas_on_node(cap, gpus_per_node: float) -> tuple[int, int, float] | None:
    """(TP, replicas, per-replica tokens/s): the estimator's best layout if a replica fits in one
    node, else the best alternative that does."""
    if cap.gpus_per_replica <= gpus_per_node:
        return cap.gpus_per_replica, cap.replicas, cap.per_replica_output_tokens_per_s
    fits = [a for a in cap.alternatives if a.get("feasible") and a["tp"] <= gpus_per_node]
    if not fits:
        return None
    best = min(fits, key=lambda a: (a["total_gpus"], a["tp"]))
    return best["tp"], best["replicas"], best["per_replica_output_tokens_per_s"]


def _spare_replicas(replicas: int, rate_per_node_hour: float, restart_h: float) -> tuple[int, float]:
    """Spare replicas so that expected serving capacity still covers the peak while some are
    being replaced; returns (spares, availability of one replica)."""
    availability = 1.0 / (1.0 + rate_per_node_hour * restart_h)
    if rate_per_node_hour <= 0:
        return 0, 1.0
    needed = math.ceil(replicas / availability - 1e-9)
    return max(needed - replicas, 1), availability


def _interruption_p90_share(rate: float, nodes: int, hours: float, restart_h: float) -> float:
    """Extra spend share in a p90 month: interrupted node-hours bought back at the same price."""
    if rate <= 0:
        return 0.0
    mean = rate * nodes * hours
    p90_events = mean + 1.2816 * math.sqrt(mean)  # normal approximation of the Poisson p90
    return min(1.0, p90_events * restart_h / max(nodes * hours, 1e-9))


def _rtt_penalty(rtt: float | None, users_given: bool) -> float:
    if not users_given:
        return 0.0
    if rtt is None:  # region unknown: assume far
        return 2 * RTT_PENALTY_PER_100MS
    return max(0.0, rtt - RTT_FREE_MS) / 100.0 * RTT_PENALTY_PER_100MS


def _serving_risk(offer, provider, rate, rtt, spare) -> tuple[float, list[str]]:
    notes = []
    risk = 0.0
    if rate > 0:
        risk += min(0.5, rate * 10)
        notes.append(f"interruptible capacity ({rate:.3g}/node-hour): {spare} spare replica(s) added")
    if provider.kind == "decentralized":
        risk += 0.2
        notes.append("decentralized network: no SLA, host-dependent latency")
    elif provider.kind == "marketplace":
        risk += 0.1
        notes.append("marketplace host: reliability varies by host")
    if offer.is_stale():
        risk += 0.1
        notes.append(f"price is {offer.age_days()} days old")
    if offer.confidence == "unverified":
        risk += 0.1
        notes.append("price unverified")
    if rtt is not None and rtt > 150:
        notes.append(f"far from some users: ~{rtt:.0f} ms round trip")
    return min(risk, 1.0), notes


def _to_plan(rank: int, p: dict[str, Any], req: ServePlanRequest, hours: float, also_at: list[str],
             regime: tuple[str, float, str]) -> Plan:
    o, provider, cap = p["offer"], p["provider"], p["cap"]
    b = serving_band(p["compute"], p["egress"], p["spread"])
    return Plan(
        rank=rank, workload="serve", provider=o.provider, provider_name=provider.name, provider_kind=provider.kind,
        gpu=o.gpu, instance_type=o.instance_type, region=o.region, pricing=o.pricing, gpus_per_node=o.gpus_per_node,
        nodes=p["nodes"], gpus=p["gpus"], precision=p["precision"],
        layout=Layout(tp=p["tp"], dp=p["replicas"]),
        wall_hours=hours, wall_p90_hours=hours, wall_p10_hours=hours, gpu_hours=p["gpus"] * hours,
        cost_usd=p["cost"], cost_p90_usd=max(b["cost_p90_usd"] + p["cost_p90_extra"], p["cost"]),
        cost_p10_usd=min(b["cost_p10_usd"], p["cost"]), rank_cost_usd=p["rank_cost"], also_at=also_at,
        uncertainty={"sigma": {k: round(v, 4) for k, v in p["spread"].parts().items()},
                     "dominant": p["spread"].dominant(), "estimator_regime": regime[0], "estimator_basis": regime[2]},
        cost=CostBreakdown(compute_usd=p["compute"], egress_usd=p["egress"]),
        expected_interruptions=p["lam"] * p["nodes"] * hours if p["lam"] else 0.0,
        risk=p["risk"], risk_notes=p["notes"], warnings=[],
        price_age_days=o.age_days(), stale=o.is_stale(), confidence=o.confidence,
        replicas=p["replicas"], gpus_per_replica=p["tp"], output_tokens_per_s=p["tok_s"],
        cost_per_million_output_tokens_usd=p["cost"] / p["out_tokens"] * 1e6 if p["out_tokens"] else None,
        cost_per_million_tokens_usd=(p["cost"] / (p["out_tokens"] * (1 + req.input_len / req.output_len)) * 1e6
                                     if p["out_tokens"] else None),
        network_rtt_ms=p["rtt"], offer=as_offer(o),
        assumptions={
            "ttft_ms": cap.ttft_ms, "tpot_ms": cap.tpot_ms, "utilization": cap.utilization,
            "spare_replicas": p["spare"], "replica_availability": p["availability"],
            "architecture": p["vendor"].arch, "vendor_efficiency_factor": p["vendor"].factor,
            "interruptions_per_node_hour": p["lam"], "region_geography": region_geography(o.region),
            **{k: v for k, v in cap.assumptions.items() if isinstance(v, (int, float, str, bool, type(None)))},
        },
    )


def _why(plans: list[Plan], users_given: bool) -> list[str]:
    if not plans:
        return ["no offer can serve this traffic within the constraints; see 'not ranked'"]
    best = plans[0]
    lines = [f"#1 {best.provider_name} {best.gpus}x {best.gpu} ({best.pricing}, {region_full(best.region) or '?'}): "
             f"${best.cost_usd:,.0f} for the horizon (p10-p90 ${best.cost_p10_usd:,.0f}-${best.cost_p90_usd:,.0f}), "
             f"${best.cost_per_million_output_tokens_usd:,.3f} per M output tokens "
             f"(${best.cost_per_million_tokens_usd:,.3f} per M prompt and output tokens), TTFT "
             f"{best.assumptions.get('ttft_ms') or 0:,.0f} ms, TPOT {best.assumptions.get('tpot_ms') or 0:,.0f} ms"]
    lines.extend(ties_line(plans))
    for other in plans[1:3]:
        diff = other.cost_usd - best.cost_usd
        if diff >= 0.5:
            reason = f"${diff:,.0f} more"
        elif diff <= -0.5:
            reason = f"${-diff:,.0f} cheaper, ranked lower"
        else:
            reason = "same cost, ranked lower"
        extra = []
        if other.gpus != best.gpus:
            extra.append(f"{other.gpus} vs {best.gpus} GPUs")
        if users_given and other.network_rtt_ms != best.network_rtt_ms and other.network_rtt_ms and best.network_rtt_ms:
            extra.append(f"{other.network_rtt_ms:.0f} vs {best.network_rtt_ms:.0f} ms to users")
        if other.risk > best.risk:
            extra.append(f"risk {other.risk:.2f} vs {best.risk:.2f}")
        lines.append(f"#{other.rank} {other.provider_name} {other.gpu}: {reason}" + (f" ({', '.join(extra)})" if extra else ""))
    return lines
