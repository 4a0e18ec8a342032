"""Training plans: every offer x node count, priced as a whole job, ranked by expected cost.

For each offer the planner searches node counts (powers of two; whole blocks where the provider
rents nodes only in blocks, such as CoreWeave's GB200 NVL72 racks of 18 trays), takes the training
estimator's steady-state time for the best layout, adds what the run loses to failures,
preemptions and checkpoints (Daly's model, with the provider's preemption rate and the
cluster's hardware failure rate), bills whole nodes at the provider's granularity, and adds
storage and egress. The count kept per offer is the cheapest that meets the deadline.
"""
from __future__ import annotations

import collections
import math
import operator
from typing import Any

import numpy as np

from gpuplan.catalog.catalog import Catalog
from gpuplan.catalog.records import Offer
from gpuplan.display import fmt_duration, region_full
from gpuplan.perf.calibration import summary_entry as calibration_summary
from gpuplan.perf.training_estimate import LONGEST_WALL_DAYS
from gpuplan.planner.candidates import DEFAULT_MAX_GPUS, HOST_RAM_BASE_GB, filter_offer_rows, without_gc
from gpuplan.planner.distinct import collapse_rows, where_label
from gpuplan.planner.hosts import training_start_hours
from gpuplan.planner.offer_rows import COLUMNS, as_offer
from gpuplan.planner.network import Network, fabric_assumptions, offer_network
from gpuplan.planner.pareto import pareto_front
from gpuplan.planner.placement import classify, excluded_reason
from gpuplan.planner.progress import Progress
from gpuplan.planner.records import CostBreakdown, Layout, Plan, PlanResult
from gpuplan.planner.requests import TrainPlanRequest
from gpuplan.planner.uncertainty import (Spread, band, estimator_regime, flip_analysis, mark_ties, network_sigma, ties_line,
                                         price_sigma, ranking_cost, ranking_scale, ranking_time_factor, vendor_band)

# Without a deadline the cheapest count is often the smallest that fits, which can take a
# year; the planner keeps the cheapest count that finishes within this many days instead.
DEFAULT_DEADLINE_DAYS = 30.0
# A hard cap: no plan longer than this is ranked (--max-wall overrides). Past ~3 months a run is
# overtaken by newer hardware and models, and its failure assumptions no longer hold; it is also the
# longest a sized-by-default run is given (the largest published pre-training runs took 57-78 days).
DEFAULT_MAX_WALL_DAYS = LONGEST_WALL_DAYS
NODE_COUNTS = tuple(2**k for k in range(0, 15))  # 1 .. 16,384 nodes
MONTE_CARLO_TOP = 20
MONTE_CARLO_TRIALS = 2000
# Past this, interruptions cost a third of the run or more: restarts and rework dominate, and a
# synchronous job checkpointing every few minutes through hundreds of preemptions is not a plan.
MAX_WALL_OVER_STEADY = 1.5
# Where a provider publishes no cluster-size limit: the largest self-serve cluster we know of (AWS
# Capacity Blocks: 64 instances). Larger clusters are contracted, with a quote, not rented from a list.
DEFAULT_MAX_NODES_UNKNOWN = 64
# Above this share of device memory a layout is inside the search's headroom but close to the allocator's limit.
TIGHT_MEMORY_SHARE = 0.9
# Past this no plan is worth pricing, whatever --max-wall says (also keeps billing arithmetic sane).
ABSURD_WALL_HOURS = 100 * 8766.0


def _workload(req: TrainPlanRequest, model):
    from gpuplan.perf.training_estimate import with_model_defaults
    from gpuplan.perf.workload import make_workload

    kind = "pretrain" if req.method == "full" and req.epochs is None else "finetune"
    wl = make_workload(kind=kind, method=req.method, tokens=req.total_tokens, seq_len=req.seq_len,
                       global_batch=req.global_batch, precision=req.precision, lora_rank=req.lora_rank,
                       sample_len=req.sample_len, framework=req.framework)
    return with_model_defaults(wl, model)


@without_gc
def plan_training(req: TrainPlanRequest, catalog: Catalog | None = None) -> PlanResult:
    """Every offer that can train the model within the constraints, ranked by the 75th percentile
    of its cost band (expected cost shown beside it)."""
    catalog = catalog or Catalog.load()
    model = req.resolve_model()
    workload = _workload(req, model)
    with Progress("plan train") as progress:
        progress.step("reading offers")
        cands = filter_offer_rows(catalog, req.constraints)  # OfferRow tuples: Offer objects only for plans shown
        return _plan_training(req, catalog, model, workload, cands, progress)


def _plan_training(req: TrainPlanRequest, catalog: Catalog, model, workload, cands, progress) -> PlanResult:
    from gpuplan.catalog.capabilities import resolve_training
    from gpuplan.economics import checkpoint as ckpt
    from gpuplan.perf.efficiency import default_efficiency
    from gpuplan.perf.training_estimate import estimate_training_grid

    cons = req.constraints
    max_gpus = cons.max_gpus or DEFAULT_MAX_GPUS
    deadline_h = cons.deadline_hours
    max_wall_h = cons.max_wall_hours or DEFAULT_MAX_WALL_DAYS * 24
    target_h = min(deadline_h if deadline_h is not None else DEFAULT_DEADLINE_DAYS * 24, max_wall_h)
    rejected = cands.rejected
    eff = default_efficiency()
    base_goodput = req.goodput if req.goodput is not None else eff.goodput_base
    regime = estimator_regime("train", is_moe=model.is_moe, method=req.method, seq_len=req.seq_len,
                              total_params=model.total_params())
    weights_gb = _weights_gb(model.total_params(), req.method, req.precision)
    # A fine-tune starts from released weights (bf16) that every node downloads; pre-training does not.
    download_gb = model.total_params() * 2 / 1e9 if workload.kind == "finetune" else 0.0

    # One estimator call per (GPUs per node, network per GPU, precision run, attention kernel):
    # all GPU types and node counts at once.
    # A large catalog repeats a few hundred offer classes across regions and prices. Everything up to
    # the price depends on an offer only through its class (GPU, provider, pricing, node size, cluster
    # size, host RAM, reserved term, fabric fields): each class is estimated once and its members are
    # priced together, as arrays; a row becomes a dict only when a plan shows it.
    offers = cands.offers  # OfferRow tuples, in catalog order
    members = _with_node_multiples(_members(list(map(_CLASS_KEY, offers))), offers)
    progress.step(f"estimating {len(members):,} offer classes of {len(offers):,} offers")
    groups: dict[tuple, list] = collections.defaultdict(list)
    resolutions: dict[str, Any] = {}
    networks: dict[tuple, tuple[Network, float]] = {}
    for key, m in members.items():
        o, mult = offers[m[0]], key[-1]
        if o.gpus_per_node < 1 or o.gpus_per_node != int(o.gpus_per_node):
            rejected["fractional GPU offer"] += len(m)
            continue
        res = resolutions.get(o.gpu)
        if res is None:
            res = resolutions[o.gpu] = resolve_training(catalog.gpus[o.gpu], req.precision)
        if not res.ok:
            rejected[f"GPU cannot train in {req.precision}"] += len(m)
            continue
        net_key = (o.interconnect, o.cluster, o.fabric_gbps_per_node, o.max_nodes)  # all offer_network reads
        gpn = int(o.gpus_per_node)
        found = networks.get((gpn, net_key))
        if found is None:
            net = offer_network(o)
            found = networks[(gpn, net_key)] = (net, round(net.gbps_per_gpu(gpn), 6))
        net, gbps = found
        groups[(gpn, gbps, res.precision, res.flash_attention, mult)].append((o, res, net, m))

    ckpt_bytes = ckpt.checkpoint_bytes(model.total_params(), method=req.method)
    failure_cache: dict[tuple, dict[str, Any]] = {}  # node counts depend only on gpn and the node multiple
    table = _RowTable(offers)
    for g_rank, ((gpn, gbps, precision, flash, mult), items) in enumerate(sorted(groups.items(), key=lambda kv: kv[0])):
        node_counts = node_counts_for(gpn, mult, max_gpus)
        if node_counts.size == 0:
            rejected["node larger than --max-gpus" if mult == 1 else
                     f"sold only in blocks of {mult} nodes ({mult * gpn} GPUs), more than --max-gpus"] += \
                sum(len(it[3]) for it in items)
            continue
        wl = workload.model_copy(update={"precision": precision, "flash_attention": flash})
        gpu_ids = sorted({it[0].gpu for it in items})
        grid = estimate_training_grid(model, wl, gpu_ids, node_counts * gpn, inter_node_gbps_per_gpu=gbps,
                                      gpus_per_node=gpn, goodput=base_goodput)
        row_of = {g: i for i, g in enumerate(grid.gpu_ids)}
        pending = []  # (class, its members' offer indices): priced together below
        for o, res, net, m in items:
            cls = _offer_class(o, res, net, catalog, grid, row_of, node_counts, gpn, cons, weights_gb, ckpt_bytes,
                               failure_cache, mult, download_gb)
            if isinstance(cls, str):
                rejected[cls] += len(m)
                continue
            pending.append((cls, m))
        _price_classes(table, g_rank, pending, node_counts, gpn, grid, target_h, ckpt_bytes, model, req, regime)

    progress.step(f"ranking {len(offers):,} offers")
    rows = table.finish(regime)
    if not rows:
        return _empty_result(req, model, workload, rejected, cands, [])

    cost, wall, rank_cost = rows.cost, rows.wall, rows.rank_cost
    keep = np.ones(len(rows), dtype=bool)
    too_long = wall > max_wall_h
    rejected[f"longer than the {max_wall_h / 24:g}-day cap (--max-wall)"] += int(too_long.sum())
    keep &= ~too_long
    if deadline_h is not None:
        late = wall > deadline_h
        rejected["misses --deadline"] += int((late & keep).sum())
        keep &= ~late
    if cons.budget_usd is not None:
        over = cost > cons.budget_usd
        rejected["over --budget"] += int((over & keep).sum())
        keep &= ~over
    if not keep.any():
        return _empty_result(req, model, workload, rejected, cands, _closest(rows, cost, wall, req, workload, regime),
                             _what_would_fit(rows, cost, wall, cons, max_wall_h))
    # Only when no --deadline: plans that finish in time at the ranking quantile of their time band
    # (the one their cost is ranked at) come first; one that makes the default only on average does not.
    late_default = wall * rows.time_factor > target_h
    idx = np.flatnonzero(keep)
    order = [int(j) for j in idx[np.lexsort((cost[idx], rank_cost[idx], late_default[idx]))]]
    also: dict[int, list[str]] = {}
    if not req.all_rows:
        order, also = collapse_rows(order, keys=rows.choice_keys(), costs=cost.tolist(), wheres=rows.wheres(),
                                    limit=req.limit)
    top = order[: req.limit]
    samples = _monte_carlo_samples(rows, top[:MONTE_CARLO_TOP], req.seed)
    plans = [_to_plan(rank + 1, rows[j], cost[j], rank_cost[j], samples.get(j), req, also.get(j, []), regime)
             for rank, j in enumerate(top)]
    plans = mark_ties(plans)
    _warn_past_limits(plans, cons.budget_usd, deadline_h)
    front_idx = pareto_front(np.array([p.cost_usd for p in plans]), np.array([p.wall_hours for p in plans]))
    min_nodes = rows[top[0]]["nodes"] if top else 1
    flips = _flips(rows, top, rank_cost) if len(top) > 1 else []
    summary = _summary(req, model, workload, rows, keep, regime, max_wall_h, target_h)
    summary["flips_first"] = flips
    return PlanResult(
        workload="train", model=model.name, summary=summary,
        plans=plans, pareto_ranks=sorted(plans[i].rank for i in front_idx),
        why=_why(plans, deadline_h, target_h, flips) if plans else _why_none(cost, wall),
        placement=classify("train", min_nodes).model_dump(),
        rejected={k: v for k, v in rejected.items() if v},
        assumptions=_assumptions(req, base_goodput, target_h, max_wall_h, model.is_moe),
        thresholds=_thresholds(float(rows[0]["grid"].flops)),
    )


def _weights_gb(params: float, method: str, precision: str) -> float:
    """Weights a node loads through host memory, GB (checkpoint precision; QLoRA's 4-bit base)."""
    if method == "qlora":
        return params * 0.55 / 1e9
    return params * (1.0 if precision in ("fp8",) else 0.5 if precision == "fp4" else 2.0) / 1e9


def node_counts_for(gpus_per_node: int, node_multiple: int, max_gpus: int) -> np.ndarray:
    """Node counts searched for one offer: powers of two, or where the provider rents nodes only in
    blocks (whole NVL72 racks) that block size times 1, 2, 3, 4, 6, 8, 12, ... (racks are few, so
    three of them is a real choice between two and four), within --max-gpus. A job that would fit in
    fewer nodes than a block gets the whole block: it is billed anyway, and used."""
    if node_multiple <= 1:
        return np.array([n for n in NODE_COUNTS if n * gpus_per_node <= max_gpus], dtype=np.int64)
    blocks = sorted(set(NODE_COUNTS) | {3 * n for n in NODE_COUNTS})
    return np.array([k * node_multiple for k in blocks if k * node_multiple * gpus_per_node <= max_gpus],
                    dtype=np.int64)


def _with_node_multiples(members: dict[tuple, list[int]], offers) -> dict[tuple, list[int]]:
    """Each class key with the node multiple of its members appended (1: any count), a class split
    where its members' instance types are rented in different blocks. Only offers of the few
    providers with a node_multiple in deployability.csv are looked at one by one."""
    from gpuplan.catalog.deployability import node_multiple, providers_with_node_multiples

    special = providers_with_node_multiples()
    out: dict[tuple, list[int]] = {}
    i_prov, i_type, i_gpn = (COLUMNS.index(c) for c in ("provider", "instance_type", "gpus_per_node"))
    for key, m in members.items():
        first = offers[m[0]]  # one class: one provider and node size
        if (first[i_prov], float(first[i_gpn])) not in special and (first[i_prov], None) not in special:
            out[key + (1,)] = m
            continue
        for i in m:
            o = offers[i]
            out.setdefault(key + (node_multiple(o[i_prov], o[i_type], o[i_gpn]),), []).append(i)
    return out


def _deployable_counts(fits: np.ndarray, node_counts: np.ndarray, o: Offer, provider, gpu, net: Network, cons,
                       weights_gb: float, mult: int = 1) -> tuple[np.ndarray, str | None]:
    """Node counts this offer can deliver for this job, or the reason it can deliver none."""
    if not fits.any():
        return fits, "model does not fit in this GPU's memory at any count"
    allowed = fits.copy()
    if not (net.multi_node or cons.allow_unclustered):
        allowed &= node_counts == 1
        if not allowed.any():
            return allowed, ("needs several nodes, but this offer is not sold as a cluster on a GPU fabric "
                             "(--allow-unclustered costs it over its network)")
    limit = o.max_nodes or DEFAULT_MAX_NODES_UNKNOWN
    allowed &= node_counts <= limit
    if not allowed.any():
        if mult > 1 and not (fits & (node_counts <= limit)).any():
            return allowed, (f"sold only in blocks of {mult} nodes; the blocks that fit the model exceed the "
                             f"{limit}-node cluster limit")
        return allowed, ("needs more nodes than the provider rents as one cluster" if o.max_nodes else
                         f"needs more than {DEFAULT_MAX_NODES_UNKNOWN} nodes; larger clusters are contracted, not listed")
    allowed &= np.array([excluded_reason(o, provider, gpu, int(n), "train", cons.allow_decentralized) is None
                         for n in node_counts])
    if not allowed.any():
        return allowed, "excluded for multi-node training (decentralized/consumer/marketplace)"
    if o.ram_gb is not None:
        allowed &= o.ram_gb >= HOST_RAM_BASE_GB + weights_gb / node_counts
        if not allowed.any():
            return allowed, "host RAM too small to load the model's weights"
    return allowed, None


class _OfferClass:
    """What plan_training works out once for all offers of one class (see `_offer_class`)."""

    __slots__ = ("provider", "gpu", "i", "fm", "k_idx", "wall_h", "useful_h", "res", "net", "mult")

    def __init__(self, provider, gpu, i, fm, k_idx, wall_h, useful_h, res, net, mult=1):
        self.provider, self.gpu, self.i, self.fm, self.k_idx = provider, gpu, i, fm, k_idx
        self.wall_h, self.useful_h, self.res, self.net, self.mult = wall_h, useful_h, res, net, mult


def _offer_class(o: Offer, res, net: Network, catalog: Catalog, grid, row_of, node_counts, gpn: int, cons,
                 weights_gb: float, ckpt_bytes: float, failure_cache: dict, mult: int = 1,
                 download_gb: float = 0.0) -> "_OfferClass | str":
    """The usable node counts and wall times of offers like `o`, or why they have none. Useful time is
    the estimator's steady-state time plus the billed start on every node (boot, image, base weights,
    launch: planner/hosts.py); interruptions and checkpoints stretch it by the failure factor."""
    provider = catalog.provider_record(o.provider)
    gpu = catalog.gpus[o.gpu]
    i = row_of[o.gpu]
    allowed, reason = _deployable_counts(grid.fits[i], node_counts, o, provider, gpu, net, cons, weights_gb, mult)
    if reason:
        return reason
    key = (gpn, provider.kind, o.pricing, o.provider if o.preemptible else "", mult)
    if key not in failure_cache:
        failure_cache[key] = failure_arrays(node_counts, gpn, provider.kind, o.pricing, ckpt_bytes, key[3])
    fm = failure_cache[key]
    usable = allowed & fm["stable"]
    if not usable.any():
        return f"interrupted too often (wall > {MAX_WALL_OVER_STEADY:g}x steady state)"
    useful_h = np.where(usable, grid.wall_hours[i] + training_start_hours(provider.kind, download_gb), np.nan)
    wall_h = useful_h * fm["factor"]
    usable &= wall_h <= ABSURD_WALL_HOURS
    if not usable.any():
        return "would take more than a century"
    if o.commitment_term_h:
        usable &= wall_h >= o.commitment_term_h  # a reservation applies only to a run covering its term
        if not usable.any():
            return "reserved term longer than the run"
    return _OfferClass(provider, gpu, i, fm, np.flatnonzero(usable), wall_h, useful_h, res, net, mult)


# What an offer's class is made of (see plan_training): the fields everything but the price reads.
_CLASS_KEY = operator.itemgetter(*(COLUMNS.index(c) for c in (
    "gpu", "provider", "pricing", "gpus_per_node", "max_nodes", "ram_gb", "commitment_term_h", "interconnect",
    "cluster", "fabric_gbps_per_node")))
_PRICE = operator.itemgetter(COLUMNS.index("price_per_hour_usd"))


def _members(keys: list[tuple]) -> dict[tuple, list[int]]:
    """The positions of each distinct key, keys in order of first appearance, positions ascending
    (what appending each position to its key's list gives), without a Python step per position."""
    ids = {k: i for i, k in enumerate(dict.fromkeys(keys))}
    cid = np.fromiter(map(ids.__getitem__, keys), dtype=np.int64, count=len(keys))
    order = np.argsort(cid, kind="stable").tolist()
    bounds = np.cumsum(np.bincount(cid, minlength=len(ids))).tolist()
    out, start = {}, 0
    for k, end in zip(ids, bounds):
        out[k] = order[start:end]
        start = end
    return out
_PRICE_KEY = operator.itemgetter(COLUMNS.index("confidence"), COLUMNS.index("as_of"))


def _price_classes(table: "_RowTable", g_rank: int, pending, node_counts, gpn, grid, target_h, ckpt_bytes, model,
                   req, regime) -> None:
    """Bill every usable (offer class, node count) of one group in one vectorised call, then keep per
    offer the cheapest count that meets the target at the ranking quantile of its time band (the
    fastest when none does): a count that finishes in time only on average is not counted as in time.

    Billed hours do not depend on the price, so they are computed once per class; each offer's
    compute cost is nodes x its price x billed hours, one array per class."""
    from gpuplan.economics.run_cost import expected_billed_hours

    if not pending:
        return
    clss = [p[0] for p in pending]
    ks = [c.k_idx for c in clss]
    wall = np.concatenate([c.wall_h[k] for c, k in zip(clss, ks)])
    useful = np.concatenate([c.useful_h[k] for c, k in zip(clss, ks)])
    mtbf = np.concatenate([c.fm["mtbf_h"][k] for c, k in zip(clss, ks)])
    unbilled = np.concatenate([np.full(len(k), c.fm["unbilled_restart_h"]) for c, k in zip(clss, ks)])
    preemptible = np.concatenate([np.full(len(k), c.fm["rate"] > 0) for c, k in zip(clss, ks)])
    increment = np.concatenate([np.full(len(k), c.provider.billing_increment_s or np.nan) for c, k in zip(clss, ks)])
    minimum = np.concatenate([np.full(len(k), c.provider.minimum_billing_s or 0.0) for c, k in zip(clss, ks)])
    nodes = np.concatenate([node_counts[k] for k in ks]).astype(float)
    interruptions = wall / mtbf
    # Waiting for capacity that was taken back is not billed; reloading on held nodes is.
    billed_wall = np.maximum(wall - interruptions * unbilled, useful)
    segments = 1.0 + np.where(preemptible, interruptions, 0.0)  # each restart on new capacity bills anew
    billed = np.asarray(expected_billed_hours(billed_wall, increment, minimum, segments), dtype=float)

    params = model.total_params()
    offers = table.offers
    start = 0
    for (cls, positions), k_all in zip(pending, ks):
        sl = slice(start, start + len(k_all))
        start += len(k_all)
        w = wall[sl]
        prices = np.fromiter(map(_PRICE, map(offers.__getitem__, positions)), dtype=float, count=len(positions))
        c = nodes[sl][None, :] * prices[:, None] * billed[sl][None, :]
        meets = w * ranking_time_factor(regime[1], cls.gpu.id, cls.net.basis, nodes[sl] > 1) <= target_h
        if meets.any():
            picks = np.argmin(np.where(meets[None, :], c, np.inf), axis=1)
        else:
            picks = np.full(len(positions), int(np.argmin(w)))
        fm = cls.fm
        common_ids = np.empty(len(positions), dtype=np.int64)
        for pick in np.unique(picks).tolist():
            k = int(k_all[pick])
            j = sl.start + pick
            storage, egress, notes = _storage_and_egress(ckpt_bytes, params, req, cls.provider, float(w[pick]))
            common = dict(
                provider=cls.provider, gpu=cls.gpu, grid=grid, i=cls.i, rate=fm["rate"],
                restart_h=fm["restart_h"], k=k, nodes=int(node_counts[k]), gpus=int(node_counts[k] * gpn),
                useful_h=float(useful[j]), wall_h=float(w[pick]), billed_h=float(billed[j]),
                mtbf_h=float(fm["mtbf_h"][k]), delta_h=float(fm["delta_h"][k]), tau_h=float(fm["tau_h"][k]),
                factor=float(fm["factor"][k]), saves_on_notice=bool(fm["saves_on_notice"][k]),
                notice_s=fm["notice_s"], mc_mtbf_h=float(fm["mc_mtbf_h"][k]), mc_scale=float(fm["mc_scale"][k]),
                res=cls.res, ckpt_bytes=ckpt_bytes, gpn=gpn, node_multiple=cls.mult)
            common_ids[picks == pick] = table.add_common(cls, storage, egress, notes, common)
        table.add(g_rank, np.asarray(positions, dtype=np.int64), common_ids,
                  c[np.arange(len(positions)), picks])


class _RowTable:
    """The priced rows of a plan as arrays (one per offer: its class's chosen count and its compute
    cost), and a row as the dict the rest of the planner reads, built when first asked for."""

    def __init__(self, offers):
        self.offers = offers
        self._commons: list[tuple] = []  # (class, storage, egress, notes, fields)
        self._parts: list[tuple] = []

    def add_common(self, cls, storage: float, egress: float, notes: list[str], fields: dict) -> int:
        self._commons.append((cls, storage, egress, notes, fields))
        return len(self._commons) - 1

    def add(self, g_rank: int, positions: np.ndarray, common_ids: np.ndarray, compute: np.ndarray) -> None:
        self._parts.append((g_rank, positions, common_ids, compute))

    def finish(self, regime) -> "_RowTable":
        """Rows in the planner's order (group, then catalog order), with cost, wall and ranking arrays."""
        if not self._parts:
            self.n = 0
            return self
        g = np.concatenate([np.full(len(p[1]), p[0]) for p in self._parts])
        pos = np.concatenate([p[1] for p in self._parts])
        cid = np.concatenate([p[2] for p in self._parts])
        compute = np.concatenate([p[3] for p in self._parts])
        order = np.lexsort((pos, g))
        self.pos, self.cid, self.compute = pos[order], cid[order], compute[order]
        self._parts = []
        self.n = len(self.pos)
        storage = np.array([c[1] for c in self._commons], dtype=float)[self.cid]
        egress = np.array([c[2] for c in self._commons], dtype=float)[self.cid]
        self.cost = self.compute + storage + egress
        self.other = storage + egress
        self.wall = np.array([c[4]["wall_h"] for c in self._commons], dtype=float)[self.cid]
        # The spread of a row depends on its common part (GPU, network, count) and on its price's
        # confidence and date: one Spread per distinct pair.
        keys = list(map(_PRICE_KEY, map(self.offers.__getitem__, self.pos.tolist())))
        price_keys = {k: i for i, k in enumerate(dict.fromkeys(keys))}  # numbered by first appearance
        pk = np.fromiter(map(price_keys.__getitem__, keys), dtype=np.int64, count=self.n)
        del keys
        combo = self.cid * max(1, len(price_keys)) + pk
        _uniq, firsts, inv = np.unique(combo, return_index=True, return_inverse=True)
        bands: dict[Any, Any] = {}
        self._spreads = [_spread(self._base(first), regime, bands) for first in firsts.tolist()]
        self._vendors = {k: v for k, v in bands.items() if isinstance(k, str)}  # GPU id -> vendor band
        self.spread_of = inv.reshape(-1)
        sigma = np.array([s.cost for s in self._spreads], dtype=float)[self.spread_of]
        self.rank_cost = ranking_cost(self.compute, self.other, sigma)
        self.time_factor = ranking_scale([s.time for s in self._spreads])[self.spread_of]
        self._rows: dict[int, dict[str, Any]] = {}
        return self

    def _base(self, j: int) -> dict[str, Any]:
        cls, storage, egress, notes, fields = self._commons[int(self.cid[j])]
        return dict(offer=self.offers[int(self.pos[j])], storage=storage, egress=egress, storage_notes=list(notes),
                    compute=float(self.compute[j]), net=cls.net, **fields)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, j: int) -> dict[str, Any]:
        j = int(j)
        if j < 0:
            j += self.n
        r = self._rows.get(j)
        if r is None:
            r = self._rows[j] = self._base(j)
            s = self._spreads[int(self.spread_of[j])]
            r["spread"] = s
            r["vendor"] = self._vendors[r["offer"].gpu]
        return r

    def choice_keys(self) -> "_ChoiceKeys":
        return _ChoiceKeys(self)

    def wheres(self) -> "_Wheres":
        return _Wheres(self)

    def providers_count(self, keep: np.ndarray) -> int:
        return len({self.offers[int(p)].provider for p in np.unique(self.pos[keep]).tolist()}) if keep.any() else 0


class _ChoiceKeys:
    """collapse_rows' keys, read per row: (provider, GPU, GPUs per node, pricing, nodes)."""

    def __init__(self, table: _RowTable):
        self.t = table

    def __getitem__(self, j: int) -> tuple:
        t = self.t
        o = t.offers[int(t.pos[j])]
        return (o.provider, o.gpu, o.gpus_per_node, o.pricing, t._commons[int(t.cid[j])][4]["nodes"])


class _Wheres:
    """collapse_rows' 'where' labels, read per row."""

    def __init__(self, table: _RowTable):
        self.t = table

    def __getitem__(self, j: int) -> str:
        return where_label(self.t.offers[int(self.t.pos[j])].region)


def failure_arrays(node_counts: np.ndarray, gpus_per_node: int, kind: str, pricing: str,
                   checkpoint_bytes: float, provider_id: str = "", rate_mult: float = 1.0) -> dict[str, Any]:
    """Failures, preemptions and checkpoints for one kind of capacity at every node count: the
    job's MTBF, checkpoint write time, Daly interval and the wall-over-steady-state factor.

    Where the provider announces a preemption early enough to write a checkpoint first (AWS's
    two minutes, say), a preemption costs a save and a restart but no lost work: the interval is
    then set by hardware failures alone."""
    from gpuplan.economics import checkpoint as ckpt
    from gpuplan.economics import preemption

    rate = preemption.interruption_rate_per_node_hour(kind, pricing) * rate_mult
    restart_h = preemption.restart_hours(kind, pricing)
    gpus = node_counts * gpus_per_node
    gpu_hours_per_failure = preemption.gpu_hours_per_failure(kind) / rate_mult
    mtbf_h = np.asarray(preemption.job_mtbf_hours(node_counts, gpus, rate, gpu_hours_per_failure), dtype=float)
    delta_h = np.asarray(ckpt.write_seconds(checkpoint_bytes, node_counts), dtype=float) / 3600.0
    tau_h = np.asarray(ckpt.daly_interval_h(delta_h, mtbf_h), dtype=float)
    factor = np.asarray(ckpt.daly_wall_factor(tau_h, delta_h, restart_h, mtbf_h), dtype=float)
    mc_mtbf_h, mc_scale = mtbf_h.copy(), np.ones_like(mtbf_h)
    notice_s = ckpt.spot_notice_seconds(provider_id) if rate > 0 and provider_id else None
    saves_on_notice = np.array([ckpt.fits_notice(d * 3600.0, notice_s) for d in delta_h], dtype=bool)
    if saves_on_notice.any():
        preempt_per_h = 1.0 / mtbf_h - 1.0 / (gpu_hours_per_failure / gpus)
        # Notices are best effort: the missed share of preemptions loses work like a hardware failure and
        # sets the checkpoint interval with them; the rest cost a save and a restart.
        missed = ckpt.notice_missed_share()
        lossy_mtbf_h = 1.0 / (gpus / gpu_hours_per_failure + missed * preempt_per_h)
        lossy_tau = np.asarray(ckpt.daly_interval_h(delta_h, lossy_mtbf_h), dtype=float)
        lossy_factor = np.asarray(ckpt.daly_wall_factor(lossy_tau, delta_h, restart_h, lossy_mtbf_h), dtype=float)
        notice_factor = np.asarray(ckpt.wall_factor_with_notice(lossy_tau, delta_h, restart_h, lossy_mtbf_h,
                                                                (1.0 - missed) * preempt_per_h), dtype=float)
        tau_h = np.where(saves_on_notice, lossy_tau, tau_h)
        factor = np.where(saves_on_notice, notice_factor, factor)
        # The simulation draws the lossy events; announced preemptions stretch its samples by a fixed share.
        mc_mtbf_h = np.where(saves_on_notice, lossy_mtbf_h, mtbf_h)
        mc_scale = np.where(saves_on_notice, notice_factor / lossy_factor, 1.0)
    return {
        "rate": rate, "restart_h": restart_h, "mtbf_h": mtbf_h, "delta_h": delta_h, "tau_h": tau_h,
        "factor": factor, "stable": np.isfinite(factor) & (factor <= MAX_WALL_OVER_STEADY),
        "unbilled_restart_h": restart_h * (1.0 - preemption.billed_restart_fraction(kind, pricing)),
        "saves_on_notice": saves_on_notice, "notice_s": notice_s, "mc_mtbf_h": mc_mtbf_h, "mc_scale": mc_scale,
    }


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


def _monte_carlo_samples(rows, indices, seed: int) -> dict[int, np.ndarray]:
    """Wall-hour samples from a seeded simulation of failures and preemptions, for the plans shown."""
    from gpuplan.economics.simulation import simulate_wall_hours

    out = {}
    for j in indices:
        r = rows[j]
        out[j] = r["mc_scale"] * simulate_wall_hours(r["useful_h"], r["tau_h"], r["delta_h"], r["restart_h"],
                                                     r["mc_mtbf_h"], trials=MONTE_CARLO_TRIALS, seed=seed + j)
    return out


def _spread(r: dict[str, Any], regime: tuple[str, float, str], bands: dict[str, Any] | None = None) -> Spread:
    """`bands`: vendor bands already looked up in this plan, per GPU id."""
    gpu_id = r["offer"].gpu
    vb = bands.get(gpu_id) if bands is not None else None
    if vb is None:
        vb = vendor_band(gpu_id, "training")
        if bands is not None:
            bands[gpu_id] = vb
    r["vendor"] = vb
    o = r["offer"]
    if bands is None:
        ps = price_sigma(o)
    else:  # the same for every offer of one confidence and date
        pkey = (o.confidence, o.as_of)
        ps = bands.get(pkey)
        if ps is None:
            ps = bands[pkey] = price_sigma(o)
    return Spread(estimator=regime[1], vendor=vb.sigma, network=network_sigma(r["net"].basis, r["nodes"] > 1),
                  price=ps)


def _cost_at_rate(r: dict[str, Any], mult: float) -> float | None:
    """#1's expected cost with its failure and preemption rates scaled (None: no progress)."""
    node_counts = np.array([r["nodes"]])
    fm = failure_arrays(node_counts, r["gpn"], r["provider"].kind, r["offer"].pricing, r["ckpt_bytes"],
                        r["offer"].provider if r["offer"].preemptible else "", rate_mult=mult)
    if not bool(fm["stable"][0]):
        return None
    return r["compute"] * float(fm["factor"][0]) / r["factor"] + r["storage"] + r["egress"]


def _flips(rows, top: list[int], rank_cost: np.ndarray) -> list[str]:
    """What would have to change for #2 to rank first."""
    first, second = rows[top[0]], rows[top[1]]
    lines = flip_analysis(
        {"rank_cost": float(rank_cost[top[0]]), "compute_usd": first["compute"], "cost_sigma": first["spread"].cost,
         "other_usd": first["storage"] + first["egress"], "cost_at_rate": lambda m: _cost_at_rate(first, m)},
        {"rank_cost": float(rank_cost[top[1]]), "compute_usd": second["compute"], "cost_sigma": second["spread"].cost,
         "other_usd": second["storage"] + second["egress"]})
    o2 = second["offer"]
    return [f"#2 ({second['provider'].name} {second['nodes']}x{o2.gpus_per_node:g} {o2.gpu}, {o2.pricing}) would rank "
            f"first with: " + "; or ".join(lines)]


def _closest(rows, cost, wall, req, workload, regime) -> list[Plan]:
    """Nothing met the constraints: the fastest and the cheapest candidates, for reference."""
    picks: list[int] = []
    for j in list(np.argsort(wall)[:3]) + list(np.argsort(cost)[:3]):
        if int(j) not in picks:
            picks.append(int(j))
    for j in picks:
        rows[j].setdefault("spread", _spread(rows[j], regime))
    rc = ranking_cost(np.array([rows[j]["compute"] for j in picks]),
                      np.array([rows[j]["storage"] + rows[j]["egress"] for j in picks]),
                      np.array([rows[j]["spread"].cost for j in picks]))
    return [_to_plan(0, rows[j], cost[j], float(rc[k]), None, req, [], regime) for k, j in enumerate(picks)]


def _what_would_fit(rows, cost, wall, cons, max_wall_h: float) -> list[str]:
    """Nothing met the constraints: what would (more GPUs, a longer cap, a bigger budget)."""
    fastest, cheapest = int(np.argmin(wall)), int(np.argmin(cost))
    f = rows[fastest]
    out = [f"the fastest candidate, {f['provider'].name} {f['nodes']}x{f['offer'].gpus_per_node:g} {f['offer'].gpu}, takes "
           f"{fmt_duration(wall[fastest])} for ${cost[fastest]:,.0f}; the cheapest, ${cost[cheapest]:,.0f} in "
           f"{fmt_duration(wall[cheapest])}"]
    limit_h = min(max_wall_h, cons.deadline_hours or max_wall_h)
    if wall[fastest] > limit_h:
        need = f["gpus"] * wall[fastest] / limit_h  # ideal scaling: a lower bound
        at_cap = f["nodes"] >= (f["offer"].max_nodes or DEFAULT_MAX_NODES_UNKNOWN) or \
            (cons.max_gpus is not None and f["gpus"] * 2 > cons.max_gpus)
        if cons.max_gpus is not None and f["gpus"] * 2 > cons.max_gpus:
            out.append(f"finishing within {limit_h / 24:g} days needs at least ~{need:,.0f} GPUs: raise --max-gpus")
        elif at_cap:
            out.append(f"finishing within {limit_h / 24:g} days needs at least ~{need:,.0f} GPUs (ideal scaling), more "
                       "than any listed offer rents as one cluster: a contracted cluster (ask providers for a quote)")
        out.append(f"or a longer cap: --max-wall {math.ceil(wall[fastest] / 24)}d"
                   + (f" / --deadline {math.ceil(wall[fastest] / 24)}d" if cons.deadline_hours else ""))
    if cons.budget_usd is not None and cost[cheapest] > cons.budget_usd:
        out.append(f"or a budget of at least ${cost[cheapest]:,.0f}")
    if not cons.allow_unclustered:
        out.append("or --allow-unclustered to join single VMs over their own network (slow, unverified)")
    return out


def _warn_past_limits(plans: list[Plan], budget_usd: float | None, deadline_h: float | None) -> None:
    """--budget and --deadline keep plans by their expected cost and time; say where the p90 goes past them."""
    for p in plans:
        if budget_usd is not None and (p.cost_p90_usd or 0.0) > budget_usd:
            p.warnings.append(f"p90 cost ${p.cost_p90_usd:,.0f} is over the ${budget_usd:,.0f} budget "
                              "(the budget holds the expected cost; one run in ten costs more)")
        if deadline_h is not None and (p.wall_p90_hours or 0.0) > deadline_h:
            p.warnings.append(f"p90 wall time {fmt_duration(p.wall_p90_hours)} is past the "
                              f"{fmt_duration(deadline_h)} deadline (one run in ten finishes later)")


def _missed_text() -> str:
    from gpuplan.economics.checkpoint import notice_missed_share

    return f"{notice_missed_share():.0%} of preemptions (assumed)"


def _risk(r: dict[str, Any]) -> tuple[float, list[str]]:
    o, provider, net = r["offer"], r["provider"], r["net"]
    notes, risk = list(r["res"].notes), 0.0
    overhead = r["factor"] - 1.0
    if r["rate"] > 0:
        risk += min(0.4, overhead)
        notes.append(f"preemptible: ~{r['wall_h'] / r['mtbf_h']:.1f} interruptions expected, "
                     f"checkpoint every {r['tau_h'] * 60:.0f} min")
        if r["saves_on_notice"]:
            notes.append(f"the {r['notice_s']:.0f} s preemption notice fits a {r['delta_h'] * 3600:.0f} s checkpoint "
                         f"write: save on notice; notices are best effort, so {_missed_text()} lose the work "
                         "since the last checkpoint and set the interval with hardware failures")
        if r["nodes"] > 1:
            notes.append(f"every restart must re-acquire {r['nodes']} spot nodes on one fabric together")
    if overhead > 0.15:
        notes.append(f"failures and checkpoints add {overhead:.0%} to the steady-state time")
    fill = float(r["grid"].memory_per_gpu_gb[r["i"], r["k"]]) * 1e9 / r["gpu"].memory_bytes
    if fill > TIGHT_MEMORY_SHARE:
        notes.append(f"the layout fills {fill:.0%} of each GPU's memory: a fragmented allocator can run out; the "
                     "fallback is selective activation recompute or a smaller micro-batch (a few % slower)")
    if r["nodes"] > 1:
        if net.basis == "assumed":
            risk += 0.25
            notes.append(f"network between nodes unknown: costed at {net.gbps_per_node:,.0f} Gb/s per node "
                         "(Ethernet-class); verify before booking")
        elif net.fabric not in ("infiniband", "roce", "efa", "tcpx"):
            risk += 0.15
            notes.append(f"multi-node over {net.fabric} ({net.gbps_per_node:,.0f} Gb/s per node): gradient sync "
                         "slows every step")
        if o.cluster is not True:
            risk += 0.15
            notes.append("not sold as a cluster: nodes are independent VMs (allowed by --allow-unclustered)")
        if o.max_nodes is None:
            risk += 0.1
            notes.append(f"{provider.name} publishes no cluster size: confirm {r['nodes']} {o.pricing.replace('_', '-')} "
                         f"nodes on one fabric before booking (unlisted sizes are capped at {DEFAULT_MAX_NODES_UNKNOWN})")
    if provider.kind in ("decentralized", "marketplace"):
        risk += 0.15
        notes.append(f"{provider.kind} provider: host reliability varies, no SLA")
    if o.is_stale():
        risk += 0.1
        notes.append(f"price is {o.age_days()} days old: refresh before relying on it")
    if o.confidence == "unverified":
        risk += 0.1
        notes.append("price unverified")
    vb = r["vendor"]
    if abs(vb.factor - 1.0) > 1e-9 or vb.basis not in ("fitted", "curve"):
        risk += 0.1 if vb.arch not in ("Hopper", "Ampere") else 0.0
        notes.append(f"{vb.arch} training efficiency x{vb.factor:.2f} of Hopper's ({vb.basis}"
                     f"{': ' + vb.note if vb.note else ''})")
    mult = r.get("node_multiple", 1)
    if mult > 1:
        notes.append(f"{provider.name} rents {o.instance_type} only in blocks of {mult} nodes ({mult * r['gpn']} GPUs, "
                     f"one NVLink domain each): {r['nodes']} nodes = {r['nodes'] // mult} block(s), all billed and used")
    if o.commitment_term_h:
        notes.append(f"reserved: the {o.commitment_term_h:.0f} h term is covered by the {r['wall_h']:.0f} h run")
    return min(1.0, risk), notes


def _to_plan(rank: int, r: dict[str, Any], total_cost: float, rank_cost: float, samples: np.ndarray | None,
             req: TrainPlanRequest, also_at: list[str], regime: tuple[str, float, str]) -> Plan:
    from gpuplan.perf.training_time import nvlink_domain

    o, provider, grid, i, k = r["offer"], r["provider"], r["grid"], r["i"], r["k"]
    lay = {key: int(grid.layout[key][i, k]) for key in grid.layout}
    spread: Spread = r["spread"]
    b = band(r["wall_h"], r["compute"], r["storage"] + r["egress"], spread, samples, req.seed + rank)
    risk, notes = _risk(r)
    recompute = {0: "none", 1: "selective", 2: "full"}.get(lay.get("recompute"), str(lay.get("recompute")))
    net: Network = r["net"]
    return Plan(
        rank=rank, workload="train", provider=o.provider, provider_name=provider.name, provider_kind=provider.kind,
        gpu=o.gpu, instance_type=o.instance_type, region=o.region, pricing=o.pricing, gpus_per_node=o.gpus_per_node,
        nodes=r["nodes"], gpus=r["gpus"], precision=r["res"].precision,
        layout=Layout(tp=lay["tp"], pp=lay["pp"], cp=lay["cp"], dp=lay["dp"], ep=lay["ep"],
                      etp=lay["etp"] if lay.get("etp", lay["tp"]) < lay["tp"] else None,
                      vp=lay.get("vp", 1), micro_batch=lay["micro_batch"], recompute=recompute, zero=lay["zero"]),
        wall_hours=r["wall_h"], wall_p90_hours=max(b["wall_p90_hours"], r["wall_h"]),
        wall_p10_hours=min(b["wall_p10_hours"], r["wall_h"]),
        gpu_hours=r["billed_h"] * r["nodes"] * o.gpus_per_node,
        cost_usd=float(total_cost), cost_p90_usd=max(b["cost_p90_usd"], float(total_cost)),
        cost_p10_usd=min(b["cost_p10_usd"], float(total_cost)), rank_cost_usd=float(rank_cost),
        uncertainty={"sigma": {k2: round(v, 4) for k2, v in spread.parts().items()},
                     "failures_simulated": samples is not None, "dominant": spread.dominant(),
                     "estimator_regime": regime[0], "estimator_basis": regime[2]},
        also_at=also_at,
        cost=CostBreakdown(compute_usd=r["compute"], storage_usd=r["storage"], egress_usd=r["egress"]),
        checkpoint_interval_min=r["tau_h"] * 60.0, expected_interruptions=r["wall_h"] / r["mtbf_h"],
        risk=risk, risk_notes=notes, warnings=r["storage_notes"],
        price_age_days=o.age_days(), stale=o.is_stale(), confidence=o.confidence, offer=as_offer(o),
        assumptions={
            # wall = (steady state + start) x the failure factor (wall_over_steady); the steady state is the tokens at
            # tokens_per_s divided by the whole-run goodput (evaluations, restarts, stalls: fitted on published runs)
            "steady_state_hours": float(grid.wall_hours[i, k]), "start_hours": r["useful_h"] - float(grid.wall_hours[i, k]),
            "goodput": float(grid.goodput[i, k]),
            "mfu": float(grid.mfu[i, k]), "tokens_per_s": float(grid.tokens_per_s[i, k]),
            "step_time_s": float(grid.step_time_s[i, k]), "memory_per_gpu_gb": float(grid.memory_per_gpu_gb[i, k]),
            "job_mtbf_hours": r["mtbf_h"], "checkpoint_write_s": r["delta_h"] * 3600, "restart_hours": r["restart_h"],
            "interruptions_per_node_hour": r["rate"], "wall_over_steady": r["factor"],
            "fabric": net.fabric, "fabric_gbps_per_node": net.gbps_per_node, "fabric_basis": net.basis,
            "fabric_gbps_per_gpu": net.gbps_per_gpu(o.gpus_per_node), "cluster_product": o.cluster,
            "max_nodes": o.max_nodes, "vendor_efficiency_factor": r["vendor"].factor,
            "architecture": r["vendor"].arch, "flash_attention": r["res"].flash_attention,
            "billed_hours": r["billed_h"], "checkpoint_on_preemption_notice": r["saves_on_notice"],
            "node_multiple": r.get("node_multiple", 1),
            "nvlink_domain_gpus": nvlink_domain(r["gpu"], int(o.gpus_per_node)),
        },
    )


def _summary(req, model, workload, rows, keep, regime, max_wall_h: float, target_h: float) -> dict[str, Any]:
    grid = rows[0]["grid"]
    batch = workload.batch
    return {
        "model": model.name, "params": model.total_params(), "active_params": model.active_params(),
        "kind": workload.kind, "method": req.method, "tokens": workload.total_tokens, "seq_len": workload.seq_len,
        **({"sample_len": workload.sample_len} if workload.sample_len else {}),
        "framework": workload.framework, "gradient_bytes": workload.gradient_bytes,
        "global_batch": batch, "global_batch_tokens": batch * workload.seq_len,
        "global_batch_basis": "given (rounded to the layout)" if req.global_batch else
        ("by model size, as published recipes (4M tokens at 8B, 16M at 405B); rounded to the layout"
         if workload.kind == "pretrain" else "fine-tuning recipe (128k tokens)"),
        "precision": req.precision, "training_flops": float(grid.flops), "candidates": int(keep.sum()),
        "providers_ranked": rows.providers_count(keep),
        "max_wall_days": max_wall_h / 24, "count_target_days": target_h / 24,
        "estimator_regime": regime[0], "ranked_by": "75th percentile of the cost band (expected cost shown)",
        "calibration": calibration_summary("training"),
    }


def _assumptions(req, goodput: float, target_h: float, max_wall_h: float, is_moe: bool = False) -> dict[str, Any]:
    moe = {"moe_stack": "the expert-parallel all-to-all as DeepEP / HybridEP run it (a copy per GPU and per remote node; "
                        "the exported launch runs NCCL's, a copy per selected expert, and warns where that matters), "
                        "on the critical path as Megatron runs it by default; a host sync per MoE layer (none on NVL72 "
                        "racks) and launches per local expert. Tuned recipes overlap the all-to-all in the combined "
                        "1F1B schedule and, on data-centre Blackwell from NeMo 26.06, replay the iteration as one CUDA "
                        "graph with a fused grouped-MLP kernel: `gpuplan estimate train --ep-overlap --fused-moe` "
                        "times them, `--moe-dispatcher alltoall` NCCL's all-to-all"} if is_moe else {}
    return {**moe,
        "goodput_non_failure": goodput,
        "count_choice": f"cheapest node count that finishes within {target_h / 24:g} days "
                        f"({'--deadline' if req.constraints.deadline_hours else 'default'}) at the 75th percentile "
                        "of its time band; else the fastest",
        "max_wall": f"{max_wall_h / 24:g} days, a hard cap ({'--max-wall' if req.constraints.max_wall_hours else 'default'})",
        "failures": "Daly (2006) wall-time model with per-GPU-hour hardware failure rate and provider preemption rates",
        "network": fabric_assumptions(),
        "multi_node": "only on cluster products with a GPU fabric unless --allow-unclustered; at most the "
                      f"provider's published cluster size, else {DEFAULT_MAX_NODES_UNKNOWN} nodes; in whole blocks "
                      "where the provider rents only blocks (deployability.csv node_multiple, e.g. NVL72 racks)",
        "nvlink_domain": "collectives of a job inside one NVLink domain run at NVLink speed: the node, or "
                         "the 72-GPU rack of NVL72 GPUs (GB200/GB300) across its 4-GPU trays; beyond it, "
                         "the inter-node fabric",
        "host_ram": f"{HOST_RAM_BASE_GB:g} GB plus the node's share of the weights",
        "start": "billed on every node before the first step: boot, image pull, a fine-tune's base weights at "
                 "the host's bandwidth by provider kind, launch (planner/data/hosts.json)",
        "band": "p10/p90 combine estimator error (regime), vendor efficiency, network, price age/confidence "
                f"and a seeded Monte Carlo of failures ({MONTE_CARLO_TRIALS} trials) for the top {MONTE_CARLO_TOP}",
        "ranking": "75th percentile of each plan's cost band; ties_first marks bands overlapping #1's",
        "seed": req.seed,
    }


def _thresholds(flops: float) -> list[dict[str, Any]]:
    try:
        from gpuplan.economics.thresholds import check_thresholds
    except ModuleNotFoundError:
        return []
    return [t.model_dump() if hasattr(t, "model_dump") else dict(t) for t in check_thresholds(flops)]


def _why(plans: list[Plan], deadline_h: float | None, target_h: float, flips: list[str]) -> list[str]:
    if not plans:
        return ["no offer meets the constraints; see 'not ranked'"]
    best = plans[0]
    lines = [f"#1 {best.provider_name} {best.nodes}x{best.gpus_per_node:g} {best.gpu} ({best.pricing}, {region_full(best.region) or '?'}): "
             f"${best.cost_usd:,.0f} expected (p10-p90 ${best.cost_p10_usd:,.0f}-${best.cost_p90_usd:,.0f}), "
             f"{fmt_duration(best.wall_hours)} (p90 {fmt_duration(best.wall_p90_hours)}); "
             f"widest uncertainty: {best.uncertainty.get('dominant', '?').replace('_', ' ')}"]
    lines.extend(ties_line(plans))
    for other in plans[1:4]:
        reasons = []
        cheaper_hourly = other.offer.price_per_gpu_hour_usd < best.offer.price_per_gpu_hour_usd
        dearer_hourly = other.offer.price_per_gpu_hour_usd > best.offer.price_per_gpu_hour_usd * 1.02
        if other.gpu_hours > best.gpu_hours * 1.02:
            reasons.append(f"bills {other.gpu_hours / best.gpu_hours - 1:.0%} more GPU-hours")
        elif other.gpu_hours < best.gpu_hours / 1.02 and dearer_hourly:
            reasons.append(f"bills {1 - other.gpu_hours / best.gpu_hours:.0%} fewer GPU-hours but at "
                           f"${other.offer.price_per_gpu_hour_usd:.2f} vs ${best.offer.price_per_gpu_hour_usd:.2f} per GPU-hour")
        elif dearer_hourly:
            reasons.append(f"${other.offer.price_per_gpu_hour_usd:.2f} vs ${best.offer.price_per_gpu_hour_usd:.2f} per GPU-hour")
        if (other.assumptions.get("wall_over_steady", 1) - 1) > (best.assumptions.get("wall_over_steady", 1) - 1) + 0.02:
            reasons.append(f"runs {other.assumptions['wall_over_steady']:.2f}x its steady-state time (interruptions, "
                           "checkpoints)")
        if (other.cost_p90_usd / other.cost_usd) > (best.cost_p90_usd / best.cost_usd) * 1.02:
            reasons.append(f"less certain (p90 {other.cost_p90_usd / other.cost_usd - 1:+.0%} vs "
                           f"{best.cost_p90_usd / best.cost_usd - 1:+.0%})")
        if other.risk > best.risk:
            reasons.append(f"riskier ({other.risk:.2f})")
        diff = other.cost_usd - best.cost_usd
        same_cost = abs(diff) < 0.5
        # The same provider's GPU elsewhere (every region's row, --all-rows) is told apart by its region.
        where = f", {other.region}" if (other.provider, other.gpu) == (best.provider, best.gpu) else ""
        head = (f"#{other.rank} {other.provider_name} {other.gpu} ({other.pricing}{where}) "
                + ("costs the same" if same_cost else
                   f"costs ${diff:,.0f} more" if diff >= 0 else f"is ${-diff:,.0f} cheaper on average"))
        if cheaper_hourly:
            head += (f", cheaper per GPU-hour (${other.offer.price_per_gpu_hour_usd:.2f} vs "
                     f"${best.offer.price_per_gpu_hour_usd:.2f})")
        if other.wall_hours < best.wall_hours * 0.95:
            head += (" but" if diff >= 0 else " and") + f" finishes {fmt_duration(best.wall_hours - other.wall_hours)} sooner"
        if diff < 0:  # cheaper on average, so it lost on the band: plans rank by the 75th percentile of their cost
            head += ", yet ranks lower at the 75th percentile of its cost"
        lines.append(head + ": " + (", ".join(reasons) if reasons else
                                    "the same work at the same price" if same_cost else "a higher price for the same work"))
    lines.extend(flips)
    if deadline_h is None and best.wall_hours > target_h:
        lines.append(f"no plan finishes within the default {target_h / 24:g} days; give --max-gpus or --deadline")
    return lines


def _why_none(cost: np.ndarray, wall: np.ndarray) -> list[str]:
    """Every plan failed --budget or --deadline: say what the nearest ones would take."""
    cheapest, fastest = int(np.argmin(cost)), int(np.argmin(wall))
    return ["no offer meets the constraints; see 'not ranked'",
            f"the cheapest plan costs ${cost[cheapest]:,.0f} and takes {fmt_duration(wall[cheapest])}; "
            f"the fastest ranked plan takes {fmt_duration(wall[fastest])} for ${cost[fastest]:,.0f}"]


def _empty_result(req, model, workload, rejected, cands, closest: list[Plan], would_fit: list[str] | None = None
                  ) -> PlanResult:
    return PlanResult(
        workload="train", model=model.name,
        summary={"model": model.name, "params": model.total_params(), "tokens": workload.total_tokens,
                 "candidates": 0},
        plans=[], pareto_ranks=[],
        why=["no offer can run this job within the constraints; see 'not ranked'"] + list(would_fit or []),
        placement=classify("train", max([p.nodes for p in closest] + [1])).model_dump(),
        rejected={k: v for k, v in rejected.items() if v}, assumptions={}, closest=closest,
    )
