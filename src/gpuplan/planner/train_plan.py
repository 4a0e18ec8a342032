"""Training plans: every offer x node count, priced as a whole job, ranked by expected cost.

For each offer the planner searches node counts (powers of two), takes the training
estimator's steady-state time for the best layout, adds what the run loses to failures,
preemptions and checkpoints (Daly's model, with the provider's preemption rate and the
cluster's hardware failure rate), bills whole nodes at the provider's granularity, and adds
storage and egress. The count kept per offer is the cheapest that meets the deadline.
"""
from __future__ import annotations

import collections
import functools
import json
from importlib import resources
from typing import Any

import numpy as np

from gpuplan.catalog.catalog import Catalog
from gpuplan.catalog.records import Offer
from gpuplan.planner.candidates import DEFAULT_MAX_GPUS, filter_offers
from gpuplan.planner.pareto import pareto_front
from gpuplan.planner.placement import classify, excluded_reason
from gpuplan.planner.records import CostBreakdown, Layout, Plan, PlanResult
from gpuplan.planner.requests import TrainPlanRequest

# Without a deadline the cheapest count is often the smallest that fits, which can take a
# year; the planner keeps the cheapest count that finishes within this many days instead.
DEFAULT_DEADLINE_DAYS = 30.0
NODE_COUNTS = tuple(2**k for k in range(0, 15))  # 1 .. 16,384 nodes
MONTE_CARLO_TOP = 20
FULL_NODE_GPUS = 8
MAX_NODES_SMALL_VMS = 4  # at most 4 VMs of fewer than 8 GPUs are joined into one training job
MONTE_CARLO_TRIALS = 2000
# Past this, restarts and rework dominate and the Daly model's assumptions no longer hold.
MAX_WALL_OVER_STEADY = 3.0


@functools.cache
def _fabric_gbps() -> dict[str, float]:
    with resources.files("gpuplan.planner.data").joinpath("fabrics.json").open() as f:
        return json.load(f)["gbps_per_gpu"]


def fabric_gbps_per_gpu(fabric: str | None) -> float:
    table = _fabric_gbps()
    return table.get((fabric or "unknown").lower(), table["unknown"])


def _workload(req: TrainPlanRequest):
    from gpuplan.perf.workload import make_workload

    kind = "pretrain" if req.method == "full" and req.epochs is None else "finetune"
    return make_workload(kind=kind, method=req.method, tokens=req.total_tokens, seq_len=req.seq_len,
                         global_batch=req.global_batch, precision=req.precision, lora_rank=req.lora_rank)


def plan_training(req: TrainPlanRequest, catalog: Catalog | None = None) -> PlanResult:
    """Every offer that can train the model within the constraints, cheapest expected job first."""
    from gpuplan.economics import checkpoint as ckpt
    from gpuplan.perf.efficiency import default_efficiency
    from gpuplan.perf.training_estimate import estimate_training_grid

    catalog = catalog or Catalog.load()
    model = req.resolve_model()
    workload = _workload(req)
    cons = req.constraints
    max_gpus = cons.max_gpus or DEFAULT_MAX_GPUS
    deadline_h = cons.deadline_hours
    target_h = deadline_h if deadline_h is not None else DEFAULT_DEADLINE_DAYS * 24
    cands = filter_offers(catalog, cons, precision=req.precision)
    rejected = cands.rejected
    eff = default_efficiency()
    base_goodput = req.goodput if req.goodput is not None else eff.goodput_base

    # One estimator call per (GPUs per node, fabric): all GPU types and node counts at once.
    groups: dict[tuple[int, str], list[Offer]] = collections.defaultdict(list)
    for o in cands.offers:
        if o.gpus_per_node < 1 or o.gpus_per_node != int(o.gpus_per_node):
            rejected["fractional GPU offer"] += 1
            continue
        groups[(int(o.gpus_per_node), (o.interconnect or "unknown").lower())].append(o)

    ckpt_bytes = ckpt.checkpoint_bytes(model.total_params(), method=req.method)

    failure_cache: dict[tuple[int, str, str, str], dict[str, Any]] = {}  # node counts depend only on gpn
    rows: list[dict[str, Any]] = []
    for (gpn, fabric), offers in sorted(groups.items()):
        # Clusters are built from full nodes: offers of 1-4 GPUs are VMs, not cluster building blocks.
        max_nodes = MAX_NODES_SMALL_VMS if gpn < FULL_NODE_GPUS else max(NODE_COUNTS)
        node_counts = np.array([n for n in NODE_COUNTS if n * gpn <= max_gpus and n <= max_nodes])
        if node_counts.size == 0:
            rejected["node larger than --max-gpus"] += len(offers)
            continue
        gpu_ids = sorted({o.gpu for o in offers})
        grid = estimate_training_grid(model, workload, gpu_ids, node_counts * gpn,
                                      inter_node_gbps_per_gpu=fabric_gbps_per_gpu(fabric), gpus_per_node=gpn,
                                      goodput=base_goodput)
        row_of = {g: i for i, g in enumerate(grid.gpu_ids)}
        pending = []  # (offer, ..., usable node-count indices): priced together below
        for o in offers:
            provider = catalog.providers[o.provider]
            gpu = catalog.gpus[o.gpu]
            i = row_of[o.gpu]
            if not grid.fits[i].any():
                rejected["model does not fit on this GPU at any count"] += 1
                continue
            allowed = grid.fits[i] & np.array([
                excluded_reason(o, provider, gpu, int(n), "train", cons.allow_decentralized) is None
                for n in node_counts])
            if not allowed.any():
                rejected["excluded for multi-node training (decentralized/consumer/marketplace)"] += 1
                continue
            key = (gpn, provider.kind, o.pricing, o.provider if o.preemptible else "")
            if key not in failure_cache:
                failure_cache[key] = failure_arrays(node_counts, gpn, provider.kind, o.pricing, ckpt_bytes, key[3])
            fm = failure_cache[key]
            usable = allowed & fm["stable"]
            if not usable.any():
                rejected["interrupted too often to make progress (wall > 3x steady state)"] += 1
                continue
            useful_h = np.where(usable, grid.wall_hours[i], np.nan)
            wall_h = useful_h * fm["factor"]
            if o.commitment_term_h:
                usable &= wall_h >= o.commitment_term_h  # a reservation applies only to a run covering its term
                if not usable.any():
                    rejected["reserved term longer than the run"] += 1
                    continue
            pending.append((o, provider, gpu, i, fm, np.flatnonzero(usable), wall_h, useful_h))
        rows.extend(_price_candidates(pending, node_counts, gpn, grid, target_h, ckpt_bytes, model, req))

    if not rows:
        return _empty_result(req, model, workload, rejected, cands)

    cost = np.array([r["compute"] + r["storage"] + r["egress"] for r in rows])
    wall = np.array([r["wall_h"] for r in rows])
    keep = np.ones(len(rows), dtype=bool)
    if deadline_h is not None:
        late = wall > deadline_h
        rejected["misses --deadline"] += int((late & keep).sum())
        keep &= ~late
    if cons.budget_usd is not None:
        over = cost > cons.budget_usd
        rejected["over --budget"] += int((over & keep).sum())
        keep &= ~over
    late_default = wall > target_h  # only when no --deadline: ranked after the plans that finish in time
    idx = np.flatnonzero(keep)
    order = [int(j) for j in idx[np.lexsort((cost[idx], late_default[idx]))]]
    order = _drop_region_duplicates(rows, cost, order)
    top = order[: req.limit]
    p90 = _monte_carlo_p90(rows, top[:MONTE_CARLO_TOP], req.seed)
    plans = [_to_plan(rank + 1, rows[j], cost[j], p90.get(j), req, workload) for rank, j in enumerate(top)]
    front_idx = pareto_front(np.array([p.cost_usd for p in plans]), np.array([p.wall_hours for p in plans]))
    min_nodes = rows[top[0]]["nodes"] if top else 1
    return PlanResult(
        workload="train", model=model.name, summary=_summary(req, model, workload, rows, keep),
        plans=plans, pareto_ranks=sorted(plans[i].rank for i in front_idx),
        why=_why(plans, deadline_h, target_h) if plans else _why_none(cost, wall), placement=classify("train", min_nodes).model_dump(),
        rejected={k: v for k, v in rejected.items() if v}, assumptions=_assumptions(req, base_goodput, target_h),
        thresholds=_thresholds(float(rows[0]["grid"].flops)),
    )


def _price_candidates(pending, node_counts, gpn, grid, target_h, ckpt_bytes, model, req) -> list[dict[str, Any]]:
    """Bill every usable (offer, node count) of one group in one vectorised call, then keep per
    offer the cheapest count that meets the target (the fastest when none does)."""
    from gpuplan.economics.run_cost import expected_billed_hours

    if not pending:
        return []
    ks = [p[5] for p in pending]
    wall = np.concatenate([p[6][k] for p, k in zip(pending, ks)])
    useful = np.concatenate([p[7][k] for p, k in zip(pending, ks)])
    mtbf = np.concatenate([p[4]["mtbf_h"][k] for p, k in zip(pending, ks)])
    unbilled = np.concatenate([np.full(len(k), p[4]["unbilled_restart_h"]) for p, k in zip(pending, ks)])
    preemptible = np.concatenate([np.full(len(k), p[4]["rate"] > 0) for p, k in zip(pending, ks)])
    increment = np.concatenate([np.full(len(k), p[1].billing_increment_s or np.nan) for p, k in zip(pending, ks)])
    minimum = np.concatenate([np.full(len(k), p[1].minimum_billing_s or 0.0) for p, k in zip(pending, ks)])
    price = np.concatenate([np.full(len(k), p[0].price_per_hour_usd) for p, k in zip(pending, ks)])
    nodes = np.concatenate([node_counts[k] for k in ks]).astype(float)
    interruptions = wall / mtbf
    # Waiting for capacity that was taken back is not billed; reloading on held nodes is.
    billed_wall = np.maximum(wall - interruptions * unbilled, useful)
    segments = 1.0 + np.where(preemptible, interruptions, 0.0)  # each restart on new capacity bills anew
    billed = np.asarray(expected_billed_hours(billed_wall, increment, minimum, segments), dtype=float)
    compute = nodes * price * billed

    rows, start = [], 0
    for (o, provider, gpu, i, fm, k_idx, _, _), k_all in zip(pending, ks):
        sl = slice(start, start + len(k_all))
        start += len(k_all)
        w, c = wall[sl], compute[sl]
        meets = w <= target_h
        pick = int(np.argmin(np.where(meets, c, np.inf))) if meets.any() else int(np.argmin(w))
        k = int(k_all[pick])
        j = sl.start + pick
        storage, egress, notes = _storage_and_egress(ckpt_bytes, model.total_params(), req, provider, float(w[pick]))
        rows.append(dict(
            offer=o, provider=provider, gpu=gpu, grid=grid, i=i, rate=fm["rate"], restart_h=fm["restart_h"],
            storage=storage, egress=egress, storage_notes=notes, k=k, nodes=int(node_counts[k]),
            gpus=int(node_counts[k] * gpn), useful_h=float(useful[j]), wall_h=float(w[pick]),
            billed_h=float(billed[j]), compute=float(c[pick]), mtbf_h=float(fm["mtbf_h"][k]),
            delta_h=float(fm["delta_h"][k]), tau_h=float(fm["tau_h"][k]), factor=float(fm["factor"][k]),
            saves_on_notice=bool(fm["saves_on_notice"][k]), notice_s=fm["notice_s"],
            mc_mtbf_h=float(fm["mc_mtbf_h"][k]), mc_scale=float(fm["mc_scale"][k])))
    return rows


def failure_arrays(node_counts: np.ndarray, gpus_per_node: int, kind: str, pricing: str,
                   checkpoint_bytes: float, provider_id: str = "") -> dict[str, Any]:
    """Failures, preemptions and checkpoints for one kind of capacity at every node count: the
    job's MTBF, checkpoint write time, Daly interval and the wall-over-steady-state factor.

    Where the provider announces a preemption early enough to write a checkpoint first (AWS's
    two minutes, say), a preemption costs a save and a restart but no lost work: the interval is
    then set by hardware failures alone."""
    from gpuplan.economics import checkpoint as ckpt
    from gpuplan.economics import preemption

    rate = preemption.interruption_rate_per_node_hour(kind, pricing)
    restart_h = preemption.restart_hours(kind, pricing)
    gpus = node_counts * gpus_per_node
    gpu_hours_per_failure = preemption.gpu_hours_per_failure(kind)
    mtbf_h = np.asarray(preemption.job_mtbf_hours(node_counts, gpus, rate, gpu_hours_per_failure), dtype=float)
    delta_h = np.asarray(ckpt.write_seconds(checkpoint_bytes, node_counts), dtype=float) / 3600.0
    tau_h = np.asarray(ckpt.daly_interval_h(delta_h, mtbf_h), dtype=float)
    factor = np.asarray(ckpt.daly_wall_factor(tau_h, delta_h, restart_h, mtbf_h), dtype=float)
    mc_mtbf_h, mc_scale = mtbf_h.copy(), np.ones_like(mtbf_h)
    notice_s = ckpt.spot_notice_seconds(provider_id) if rate > 0 and provider_id else None
    saves_on_notice = np.array([ckpt.fits_notice(d * 3600.0, notice_s) for d in delta_h], dtype=bool)
    if saves_on_notice.any():
        hw_mtbf_h = gpu_hours_per_failure / gpus
        preempt_per_h = 1.0 / mtbf_h - 1.0 / hw_mtbf_h
        hw_tau = np.asarray(ckpt.daly_interval_h(delta_h, hw_mtbf_h), dtype=float)
        hw_factor = np.asarray(ckpt.daly_wall_factor(hw_tau, delta_h, restart_h, hw_mtbf_h), dtype=float)
        notice_factor = np.asarray(ckpt.wall_factor_with_notice(hw_tau, delta_h, restart_h, hw_mtbf_h,
                                                                preempt_per_h), dtype=float)
        tau_h = np.where(saves_on_notice, hw_tau, tau_h)
        factor = np.where(saves_on_notice, notice_factor, factor)
        # The simulation draws hardware failures; announced preemptions stretch its samples by a fixed share.
        mc_mtbf_h = np.where(saves_on_notice, hw_mtbf_h, mtbf_h)
        mc_scale = np.where(saves_on_notice, notice_factor / hw_factor, 1.0)
    return {
        "rate": rate, "restart_h": restart_h, "mtbf_h": mtbf_h, "delta_h": delta_h, "tau_h": tau_h,
        "factor": factor, "stable": np.isfinite(factor) & (factor <= MAX_WALL_OVER_STEADY),
        "unbilled_restart_h": restart_h * (1.0 - preemption.billed_restart_fraction(kind, pricing)),
        "saves_on_notice": saves_on_notice, "notice_s": notice_s, "mc_mtbf_h": mc_mtbf_h, "mc_scale": mc_scale,
    }


def _drop_region_duplicates(rows, cost, order: list[int]) -> list[int]:
    """The same instance at the same price in several regions is one plan; note the others."""
    seen: dict[tuple, int] = {}
    out = []
    for j in order:
        r = rows[j]
        o = r["offer"]
        key = (o.provider, o.gpu, o.gpus_per_node, o.pricing, r["nodes"], round(float(cost[j]), 2))
        if key in seen:
            rows[seen[key]].setdefault("other_regions", []).append(o.region)
            continue
        seen[key] = j
        out.append(j)
    return out


def _storage_and_egress(ckpt_bytes: float, params: float, req: TrainPlanRequest, provider, wall_h: float):
    from gpuplan.economics.run_cost import HOURS_PER_MONTH, storage_price

    months = wall_h / HOURS_PER_MONTH
    stored_gb = ckpt_bytes / 1e9 * req.checkpoints_kept + req.dataset_gb
    usd_per_gb_month, _source = storage_price(provider.id)
    storage = stored_gb * usd_per_gb_month * max(months, 1 / HOURS_PER_MONTH)
    weights_gb = params * (2 if req.method != "qlora" else 0.55) / 1e9
    if req.method in ("lora", "qlora"):
        weights_gb = params * 0.01 * 2 / 1e9  # adapters only: about 1% of the base at rank 16 (order of magnitude)
    rate = provider.egress_usd_per_gb
    egress = (weights_gb * rate) if (req.download_final_weights and rate) else 0.0
    notes = [] if rate is not None else ["egress price unknown for this provider: not included"]
    return storage, egress, notes


def _monte_carlo_p90(rows, indices, seed: int) -> dict[int, tuple[float, float]]:
    """p90 wall hours and p90 billed-hours multiplier from a seeded simulation of failures and
    preemptions, for the plans that will be shown."""
    from gpuplan.economics.simulation import simulate_wall_hours

    out = {}
    for j in indices:
        r = rows[j]
        samples = r["mc_scale"] * simulate_wall_hours(r["useful_h"], r["tau_h"], r["delta_h"], r["restart_h"],
                                                      r["mc_mtbf_h"], trials=MONTE_CARLO_TRIALS, seed=seed + j)
        out[j] = (float(np.percentile(samples, 50)), float(np.percentile(samples, 90)))
    return out


def _risk(r: dict[str, Any]) -> tuple[float, list[str]]:
    o, provider = r["offer"], r["provider"]
    notes, risk = [], 0.0
    overhead = r["factor"] - 1.0
    if r["rate"] > 0:
        risk += min(0.4, overhead)
        notes.append(f"preemptible: ~{r['wall_h'] / r['mtbf_h']:.1f} interruptions expected, "
                     f"checkpoint every {r['tau_h'] * 60:.0f} min")
        if r["saves_on_notice"]:
            notes.append(f"the {r['notice_s']:.0f} s preemption notice fits a {r['delta_h'] * 3600:.0f} s checkpoint "
                         "write: save on notice, so preemptions lose no work")
    if overhead > 0.15:
        notes.append(f"failures and checkpoints add {overhead:.0%} to the steady-state time")
    if r["nodes"] > 1 and (o.interconnect or "unknown") in ("ethernet", "unknown"):
        risk += 0.15
        notes.append("multi-node over Ethernet-class networking: gradient sync slows every step")
    if provider.kind in ("decentralized", "marketplace"):
        risk += 0.15
        notes.append(f"{provider.kind} provider: host reliability varies, no SLA")
    if o.is_stale():
        risk += 0.1
        notes.append(f"price is {o.age_days()} days old: refresh before relying on it")
    if o.confidence == "unverified":
        risk += 0.1
        notes.append("price unverified")
    if r["gpu"].vendor != "NVIDIA":
        risk += 0.1
        notes.append(f"{r['gpu'].vendor} training efficiency is assumed equal to NVIDIA's: no public {r['gpu'].vendor} "
                     "training run in the validation set")
    if r.get("other_regions"):
        notes.append(f"same price in {len(r['other_regions'])} more region(s): {', '.join(sorted(set(r['other_regions']))[:5])}")
    if o.commitment_term_h:
        notes.append(f"reserved: the {o.commitment_term_h:.0f} h term is covered by the {r['wall_h']:.0f} h run")
    return min(1.0, risk), notes


def _to_plan(rank: int, r: dict[str, Any], total_cost: float, p90: tuple[float, float] | None,
             req: TrainPlanRequest, workload) -> Plan:
    o, provider, grid, i, k = r["offer"], r["provider"], r["grid"], r["i"], r["k"]
    lay = {key: int(grid.layout[key][i, k]) for key in grid.layout}
    wall_p90 = max(p90[1], r["wall_h"]) if p90 else r["wall_h"]
    scale = wall_p90 / r["wall_h"] if r["wall_h"] > 0 else 1.0
    risk, notes = _risk(r)
    recompute = {0: "none", 1: "selective", 2: "full"}.get(lay.get("recompute"), str(lay.get("recompute")))
    return Plan(
        rank=rank, workload="train", provider=o.provider, provider_name=provider.name, provider_kind=provider.kind,
        gpu=o.gpu, instance_type=o.instance_type, region=o.region, pricing=o.pricing, gpus_per_node=o.gpus_per_node,
        nodes=r["nodes"], gpus=r["gpus"], precision=req.precision,
        layout=Layout(tp=lay["tp"], pp=lay["pp"], cp=lay["cp"], dp=lay["dp"], ep=lay["ep"],
                      micro_batch=lay["micro_batch"], recompute=recompute, zero=lay["zero"]),
        wall_hours=r["wall_h"], wall_p90_hours=wall_p90, gpu_hours=r["billed_h"] * r["nodes"] * o.gpus_per_node,
        cost_usd=float(total_cost), cost_p90_usd=float(r["compute"] * scale + r["storage"] + r["egress"]),
        cost=CostBreakdown(compute_usd=r["compute"], storage_usd=r["storage"], egress_usd=r["egress"]),
        checkpoint_interval_min=r["tau_h"] * 60.0, expected_interruptions=r["wall_h"] / r["mtbf_h"],
        risk=risk, risk_notes=notes, warnings=r["storage_notes"],
        price_age_days=o.age_days(), stale=o.is_stale(), confidence=o.confidence, offer=o,
        assumptions={
            "steady_state_hours": r["useful_h"], "mfu": float(grid.mfu[i, k]), "tokens_per_s": float(grid.tokens_per_s[i, k]),
            "step_time_s": float(grid.step_time_s[i, k]), "memory_per_gpu_gb": float(grid.memory_per_gpu_gb[i, k]),
            "job_mtbf_hours": r["mtbf_h"], "checkpoint_write_s": r["delta_h"] * 3600, "restart_hours": r["restart_h"],
            "interruptions_per_node_hour": r["rate"], "wall_over_steady": r["factor"],
            "fabric": o.interconnect or "unknown", "fabric_gbps_per_gpu": fabric_gbps_per_gpu(o.interconnect),
            "billed_hours": r["billed_h"], "checkpoint_on_preemption_notice": r["saves_on_notice"],
        },
    )


def _summary(req, model, workload, rows, keep) -> dict[str, Any]:
    grid = rows[0]["grid"]
    return {
        "model": model.name, "params": model.total_params(), "active_params": model.active_params(),
        "method": req.method, "tokens": workload.total_tokens, "seq_len": workload.seq_len,
        "global_batch": workload.batch if hasattr(workload, "batch") else req.global_batch,
        "precision": req.precision, "training_flops": float(grid.flops), "candidates": int(keep.sum()),
        "providers_ranked": len({r["offer"].provider for r, k in zip(rows, keep) if k}),
    }


def _assumptions(req, goodput: float, target_h: float) -> dict[str, Any]:
    return {
        "goodput_non_failure": goodput,
        "count_choice": f"cheapest node count that finishes within {target_h / 24:g} days "
                        f"({'--deadline' if req.constraints.deadline_hours else 'default'}); else the fastest",
        "failures": "Daly (2006) wall-time model with per-GPU-hour hardware failure rate and provider preemption rates",
        "fabric_gbps_per_gpu": _fabric_gbps(),
        "p90": f"seeded Monte Carlo ({MONTE_CARLO_TRIALS} trials) of failures and preemptions for the top {MONTE_CARLO_TOP} plans",
        "seed": req.seed,
    }


def _thresholds(flops: float) -> list[dict[str, Any]]:
    try:
        from gpuplan.economics.thresholds import check_thresholds
    except ModuleNotFoundError:
        return []
    return [t.model_dump() if hasattr(t, "model_dump") else dict(t) for t in check_thresholds(flops)]


def _why(plans: list[Plan], deadline_h: float | None, target_h: float) -> list[str]:
    if not plans:
        return ["no offer meets the constraints; see 'not ranked'"]
    best = plans[0]
    lines = [f"#1 {best.provider_name} {best.nodes}x{best.gpus_per_node:g} {best.gpu} ({best.pricing}): "
             f"${best.cost_usd:,.0f} expected, {best.wall_hours / 24:.1f} days, p90 ${best.cost_p90_usd:,.0f}"]
    for other in plans[1:4]:
        reasons = []
        cheaper_hourly = other.offer.price_per_gpu_hour_usd < best.offer.price_per_gpu_hour_usd
        if other.gpu_hours > best.gpu_hours * 1.02:
            reasons.append(f"bills {other.gpu_hours / best.gpu_hours - 1:.0%} more GPU-hours")
        if (other.assumptions.get("wall_over_steady", 1) - 1) > (best.assumptions.get("wall_over_steady", 1) - 1) + 0.02:
            reasons.append(f"runs {other.assumptions['wall_over_steady']:.2f}x its steady-state time (interruptions, "
                           "checkpoints)")
        if other.cost.egress_usd + other.cost.storage_usd > best.cost.egress_usd + best.cost.storage_usd + 1:
            reasons.append("more storage/egress")
        if other.risk > best.risk:
            reasons.append(f"riskier ({other.risk:.2f})")
        diff = other.cost_usd - best.cost_usd
        head = f"#{other.rank} {other.provider_name} {other.gpu} ({other.pricing}) costs ${diff:,.0f} more"
        if cheaper_hourly:
            head += (f" although cheaper per GPU-hour (${other.offer.price_per_gpu_hour_usd:.2f} vs "
                     f"${best.offer.price_per_gpu_hour_usd:.2f})")
        lines.append(head + ": " + (", ".join(reasons) if reasons else "a higher price for the same work"))
    if deadline_h is None and best.wall_hours > target_h:
        lines.append(f"no plan finishes within the default {target_h / 24:g} days; give --max-gpus or --deadline")
    return lines


def _why_none(cost: np.ndarray, wall: np.ndarray) -> list[str]:
    """Every plan failed --budget or --deadline: say what the nearest ones would take."""
    cheapest, fastest = int(np.argmin(cost)), int(np.argmin(wall))
    return ["no offer meets the constraints; see 'not ranked'",
            f"the cheapest plan costs ${cost[cheapest]:,.0f} and takes {wall[cheapest] / 24:.1f} days; "
            f"the fastest ranked plan takes {wall[fastest] / 24:.1f} days for ${cost[fastest]:,.0f}"]


def _empty_result(req, model, workload, rejected, cands) -> PlanResult:
    return PlanResult(
        workload="train", model=model.name,
        summary={"model": model.name, "params": model.total_params(), "tokens": workload.total_tokens,
                 "candidates": 0},
        plans=[], pareto_ranks=[], why=["no offer can run this job within the constraints; see 'not ranked'"],
        placement=classify("train", 1).model_dump(), rejected={k: v for k, v in rejected.items() if v},
        assumptions={},
    )
