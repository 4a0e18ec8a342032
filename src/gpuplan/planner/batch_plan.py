"""Batch plans: N independent items before a deadline, on a fleet split across offers and providers.

Divisible work (batch generation, embeddings, synthetic data, evaluation sweeps, image
generation) is what marketplace and decentralized GPUs suit: items need no communication, a
lost host loses only the items in flight, and any host that holds the model helps. The plan:

1. **Throughput per offer** at the offline max-throughput operating point of the serving
   estimator (no latency target), with the smallest tensor-parallel size that holds the model
   (consumer GPUs allowed); each host runs `GPUs // TP` replicas. Generic GPU work scales the
   user's GPU-seconds per item on a reference GPU by dense bf16 peak x architecture efficiency.
   The host's link caps items per hour (inputs in, outputs out).
2. **Interruptions**: a host leaves at `lambda` per hour (the provider kind's capacity hazard
   plus hardware faults per GPU-hour); the items in flight are lost and re-queued, and a
   replacement host is re-acquired, downloads the model and warms up (`R` hours). Per item of
   `d` hours the expected wall time is Daly's `e^(lambda R) (e^(lambda d) - 1) / lambda`, so the
   useful share of host time is `lambda d / (e^(lambda R) (e^(lambda d) - 1))`
   (`interruption_overhead`); economics.simulation.simulate_job runs the same process seeded.
3. **Data movement**: every new host downloads the image and the weights (cold start, billed);
   inputs are staged and outputs shipped at the host's bandwidth; outputs pay the provider's egress.
4. **The fleet split**: hosts of offer i each finish `r_i u_i (T - s_i)` items before the
   deadline T (r: items/h, u: useful share, s: cold start). Cost per item is
   `a_i = p_i b_i / (r_i u_i) + egress_i + p_i s_i / (r_i u_i (T - s_i))` (b: billed share of
   wall time, the last term the cold start spread over the items one host makes). The
   least-cost split is the LP `min sum a_i x_i  s.t. sum x_i = N, 0 <= x_i <= hosts_i r_i u_i (T - s_i)`,
   solved exactly by filling offers in order of `a_i` (a fractional knapsack); hosts are rounded
   up. Every offer supplies at most its `max_nodes`, else a default per provider kind
   (data/hosts.json). A shared work queue then balances the hosts: all run until it drains, so
   the finish time t solves `sum hosts_i r_i u_i (t - s_i) = N` and the shares follow from it.
5. **Spread**: a seeded Monte Carlo per fleet samples each host's interruptions
   (simulate_job), the estimator's and the architectures' errors and the prices' uncertainty:
   p10/p90 of finish time and cost. Hosts are added where the interruptions' own p90 would
   miss the deadline (spare hosts). Fleets are ranked by the 75th percentile of their cost.
"""
from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from gpuplan.catalog.catalog import Catalog
from gpuplan.catalog.records import CONFIDENCE_RANK, Offer
from gpuplan.display import fmt_usd
from gpuplan.errors import GpuplanError, UsageError
from gpuplan.planner.batch_request import BatchPlanRequest
from gpuplan.planner.candidates import HOST_RAM_BASE_GB, filter_offers, served_weights_gb
from gpuplan.planner.hosts import PEER_KINDS, bandwidth_gbps, hosts_available, hosts_data, provision_hours

DATACENTER_KINDS = ("hyperscaler", "neocloud")


@functools.cache
def batch_data() -> dict:
    """data/batch.json: the defaults of batch plans, each with its reason."""
    with resources.files("gpuplan.planner.data").joinpath("batch.json").open(encoding="utf-8") as f:
        return json.load(f)


# ---------------------------------------------------------------- records -----------------

class FleetGroup(BaseModel):
    """Hosts of one offer (the same provider, GPU, host size, pricing and price; possibly in
    several listings or regions) in a fleet, and what they do."""

    model_config = ConfigDict(frozen=True)

    provider: str
    provider_name: str
    provider_kind: str
    gpu: str
    gpus_per_node: float
    pricing: str
    instance_type: str
    regions: list[str] = Field(default_factory=list)
    listings: int = Field(1, description="offers (regions, listings) merged into this group")
    hosts: int = Field(gt=0)
    spare_hosts: int = Field(0, description="hosts beyond what the share needs by the deadline at full speed")
    hosts_available: int
    hosts_available_basis: str
    gpus: int
    precision: str | None = None
    tp: int = 1
    replicas_per_host: int = 1
    items_per_host_hour: float = Field(description="at the max-throughput point, before interruptions")
    item_seconds: float = Field(description="one item's duration on a replica (items in flight run in parallel)")
    useful_share: float = Field(description="share of host wall time that completes items (after interruptions)")
    interruptions_per_host_hour: float
    restart_hours: float = Field(description="re-acquire a host, download, load and warm up after an interruption")
    cold_start_hours: float = Field(description="rent, download image + weights, load, warm up: every new host")
    download_gb: float
    bandwidth_gbps: float
    bandwidth_limited: bool = False
    share: float = Field(description="share of the items this group completes")
    items: float
    host_hours: float = Field(description="billed host-hours")
    price_per_host_hour_usd: float
    compute_usd: float
    cold_start_usd: float
    egress_gb: float
    egress_usd: float
    cost_usd: float
    expected_interruptions: float
    price_age_days: int
    confidence: str
    offer: Offer
    notes: list[str] = Field(default_factory=list)


class BatchFleet(BaseModel):
    """One way to run the job: hosts from one or more offers sharing a work queue."""

    model_config = ConfigDict(frozen=True)

    rank: int = 0
    label: str
    groups: list[FleetGroup]
    hosts: int
    gpus: int
    spare_hosts: int
    providers: list[str]
    provider_shares: dict[str, float]
    kind_shares: dict[str, float]
    peer_share: float = Field(description="share of items on marketplace, decentralized or community-cloud hosts")
    finish_hours: float = Field(description="expected wall time until the last item is done")
    finish_p10_hours: float
    finish_p90_hours: float
    finish_p90_interruptions_hours: float = Field(description="p90 from interruptions alone (what spare hosts are sized to)")
    meets_deadline: bool
    meets_deadline_p90: bool
    cost_usd: float
    cost_p10_usd: float
    cost_p90_usd: float
    rank_cost_usd: float = Field(description="75th percentile of the cost band: what fleets are ranked by")
    ties_first: bool = False
    compute_usd: float
    cold_start_usd: float
    egress_usd: float
    egress_gb: float
    input_gb: float
    interruption_overhead: float = Field(description="extra host time from interruptions, share of useful time")
    expected_interruptions: float
    cost_per_item_usd: float
    cost_per_million_items_usd: float
    cost_per_million_output_tokens_usd: float | None = None
    cost_per_million_tokens_usd: float | None = Field(None, description="input + output tokens (embeddings: input)")
    risk: float = Field(ge=0, le=1)
    notes: list[str] = Field(default_factory=list)


class BatchPlanResult(BaseModel):
    """Ranked fleets, why the first wins, and whether the work suits decentralized GPUs."""

    workload: Literal["batch"] = "batch"
    kind: str
    model: str | None
    summary: dict[str, Any]
    fleets: list[BatchFleet]
    why: list[str]
    suitability: dict[str, Any] = Field(default_factory=dict)
    rejected: dict[str, int] = Field(default_factory=dict)
    assumptions: dict[str, Any] = Field(default_factory=dict)
    closest: BatchFleet | None = Field(None, description="when nothing meets the deadline: the fastest fleet there is")


# ---------------------------------------------------------------- interruptions ------------

def interruption_overhead(rate_per_hour: float, item_hours: float, restart_hours: float) -> float:
    """Extra wall time per unit of useful time on one host: items of `item_hours` run in parallel
    batches; an interruption (Poisson, `rate_per_hour`, also during a restart) loses the items in
    flight (re-queued) and costs `restart_hours` before work resumes. Daly's expectation with
    segments of one item and no save: e^(lambda R) (e^(lambda d) - 1) / (lambda d) - 1."""
    lam, d, r = float(rate_per_hour), float(item_hours), float(restart_hours)
    if not (math.isfinite(lam) and math.isfinite(d) and math.isfinite(r)) or lam < 0 or d <= 0 or r < 0:
        raise UsageError("interruption overhead needs a rate >= 0, an item duration > 0 and a restart time >= 0")
    if lam == 0:
        return 0.0
    x = lam * d
    if x > 50 or lam * r > 50:
        return math.inf
    return math.exp(lam * r) * math.expm1(x) / x - 1.0


def useful_share(rate_per_hour: float, item_hours: float, restart_hours: float) -> float:
    """Share of a host's wall time that completes items: 1 / (1 + overhead)."""
    o = interruption_overhead(rate_per_hour, item_hours, restart_hours)
    return 0.0 if not math.isfinite(o) else 1.0 / (1.0 + o)


def simulate_host_walls(useful_hours: float, rate_per_hour: float, item_hours: float, restart_hours: float,
                        trials: int, seed: int, billed_restart_fraction: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """(wall, billed) hours of hosts that each complete `useful_hours` of items: seeded, via
    economics.simulation.simulate_job (segments of one item, no save, restarts of R hours)."""
    from gpuplan.economics.simulation import simulate_job

    if rate_per_hour <= 0 or useful_hours <= 0:
        w = np.full(trials, max(useful_hours, 0.0))
        return w, w.copy()
    tau = max(item_hours, useful_hours / 1e8)  # the simulator refuses more than 1e9 segments
    res = simulate_job(useful_hours, tau, 0.0, restart_hours, 1.0 / rate_per_hour, trials=int(trials), seed=int(seed),
                       billed_restart_fraction=min(max(billed_restart_fraction, 0.0), 1.0))
    return res.wall_h, res.billed_h


# ---------------------------------------------------------------- pools (per offer) ---------

@dataclass
class _Pool:
    """Identical offers merged: the same provider, GPU, host size, pricing and price."""

    key: tuple
    offers: list[Offer]
    provider: Any
    kind: str
    gpu: str
    gpn: float
    pricing: str
    price: float                 # per host-hour
    tp: int
    replicas: int
    rate: float                  # items per host-hour at full speed
    item_h: float
    lam: float
    restart_h: float
    billed_restart_frac: float
    cold_h: float
    useful: float                # useful share of wall time
    billed_wall: float           # billed share of wall time (waits for re-acquired capacity are free)
    egress_per_item: float
    egress_gb_per_item: float
    hosts_avail: int
    hosts_basis: str
    download_gb: float
    bandwidth_gbps: float
    bw_limited: bool
    precision: str | None
    arch: str
    vendor_sigma: float
    price_sigma: float
    risk: float
    notes: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.provider.id}:{self.gpu}:{self.gpn:g}:{self.pricing}:{self.price:g}"

    def items_per_host(self, window_h: float) -> float:
        return self.rate * self.useful * max(window_h - self.cold_h, 0.0)

    def cost_per_item(self, window_h: float) -> float:
        eff = self.rate * self.useful
        run = window_h - self.cold_h
        if eff <= 0 or run <= 0:
            return math.inf
        return self.price * self.billed_wall / eff + self.egress_per_item + self.price * self.cold_h / (eff * run)



class _Throughput:
    """Per GPU type (and precision): the smallest TP that holds the model and its max-throughput point."""

    def __init__(self, req: BatchPlanRequest, model, precision: str, catalog: Catalog):
        self.req, self.model, self.precision, self.catalog = req, model, precision, catalog
        self._cache: dict[str, Any] = {}
        self._ref_speed: float | None = None

    def llm(self, gpu_id: str, max_tp: int):
        """(tp, items per second per replica, item seconds, precision, notes) or a reason string.

        Generation: the serving estimator's best-throughput point (no latency target); an item lasts
        its end-to-end latency there. Embeddings are prefill only: items are packed into the engine's
        token budget per step (`max_num_batched_tokens`), and a step of that many prompt tokens is the
        estimator's time to first token for one request of that length (attention is counted over the
        packed step: slightly conservative for short items)."""
        from gpuplan.catalog.capabilities import resolve_serving
        from gpuplan.perf.engines import resolve_engine
        from gpuplan.perf.inference_estimate import TP_CHOICES, estimate_serving

        key = gpu_id
        if key not in self._cache:
            res = resolve_serving(self.catalog.gpus[gpu_id], self.precision, self.req.engine)
            if not res.ok:
                self._cache[key] = f"{self.req.engine} cannot serve {self.precision} on this GPU"
            else:
                out: Any = "model does not fit in 8 GPUs of this type"
                isl = self.req.input_len
                per_step = 1
                if self.req.kind == "embed":
                    eng = resolve_engine(self.req.engine).on_gpu(self.catalog.gpus[gpu_id])
                    per_step = max(1, int(eng.max_num_batched_tokens // isl))
                for tp in TP_CHOICES:
                    if self.model.n_heads % tp:
                        continue
                    try:
                        if self.req.kind == "embed":
                            est = estimate_serving(self.model, gpu_id, tp=tp, precision=res.precision,
                                                   kv_precision=self.req.kv_precision, input_len=isl * per_step,
                                                   output_len=1, concurrency=1, engine=self.req.engine)
                            secs = (est.ttft_ms or 0.0) / 1e3
                            rps = per_step / secs if est.fits and secs > 0 else 0.0
                        else:
                            est = estimate_serving(self.model, gpu_id, tp=tp, precision=res.precision,
                                                   kv_precision=self.req.kv_precision, input_len=isl,
                                                   output_len=self.req.output_len, engine=self.req.engine)
                            secs, rps = est.e2e_latency_s or 0.0, est.requests_per_s
                    except GpuplanError as e:
                        out = f"the estimator refused it ({str(e)[:60]})"
                        break
                    if est.fits and rps > 0 and secs > 0:
                        dq = est.assumptions.get("weight_dequantized")
                        out = (tp, rps, secs, res.precision, list(res.notes) + ([dq] if dq else []))
                        break
                self._cache[key] = out
        out = self._cache[key]
        if isinstance(out, tuple) and out[0] > max_tp:
            return f"a replica needs {out[0]} GPUs, more than one host has"
        return out

    def generic_gpu_seconds(self, gpu_id: str) -> float:
        """GPU-seconds per item on this GPU: the reference measurement x (reference speed / this speed),
        speed = dense bf16 peak x the architecture's efficiency against Hopper."""
        if self._ref_speed is None:
            self._ref_speed = self._speed(self.catalog.gpu(self.req.reference_gpu).id)
        return self.req.gpu_seconds_per_item * self._ref_speed / self._speed(gpu_id)

    def _speed(self, gpu_id: str) -> float:
        from gpuplan.planner.uncertainty import vendor_band

        regime = batch_data()["generic_scaling"]["regime"]
        return self.catalog.gpus[gpu_id].bf16_tflops * vendor_band(gpu_id, regime).factor


def _build_pools(req: BatchPlanRequest, catalog: Catalog, model, precision: str, rejected) -> tuple[list[_Pool], dict]:
    from gpuplan.economics.preemption import (gpu_hours_per_failure, interruption_rate_per_node_hour,
                                              reacquire_hours, restart_hours)
    from gpuplan.planner.uncertainty import price_sigma, vendor_band

    d = batch_data()
    T = req.deadline_hours
    precision_needs = {"fp8": "fp8", "fp4": "fp4"}.get(precision) if req.kind != "gpu" else None
    cands = filter_offers(catalog, req.constraints, precision=precision_needs,
                          native_precision=getattr(model, "native_precision", None))
    rejected.update(cands.rejected)
    thr = _Throughput(req, model, precision, catalog)
    cold = d["cold_start"]
    data = d["data"]
    # Bytes per item in and out.
    if req.input_kb_per_item is not None:
        in_bytes = req.input_kb_per_item * 1e3
    elif req.kind == "gpu":
        in_bytes = data["generic_input_kb"] * 1e3
    else:
        in_bytes = req.input_len * data["bytes_per_token"]
    if req.output_kb_per_item is not None:
        out_bytes = req.output_kb_per_item * 1e3
    elif req.kind == "generate":
        out_bytes = req.output_len * data["bytes_per_token"]
    elif req.kind == "embed":
        out_bytes = model.hidden_size * data["embedding_bytes_per_dim"]
    else:
        out_bytes = data["generic_output_kb"] * 1e3
    weights_by_precision: dict[str, float] = {}
    groups: dict[tuple, _Pool] = {}
    vb_cache: dict[str, Any] = {}
    for o in cands.offers:
        provider = catalog.provider_record(o.provider)
        kind = provider.kind
        gpu = catalog.gpus[o.gpu]
        if o.commitment_term_h and o.commitment_term_h > T:
            rejected["reserved term longer than the deadline"] += 1
            continue
        notes: list[str] = []
        max_tp = int(math.floor(o.gpus_per_node + 1e-9))
        if max_tp < 1:
            rejected["a fraction of a GPU per host"] += 1
            continue
        if req.kind == "gpu":
            if req.min_gpu_memory_gb is not None and gpu.memory_gb < req.min_gpu_memory_gb:
                rejected["GPU memory below --min-gpu-memory"] += 1
                continue
            secs = thr.generic_gpu_seconds(o.gpu)
            tp, replicas, used_precision = 1, max_tp, None
            rate = replicas * 3600.0 / secs
            item_h = secs / 3600.0
            weights = 0.0
            if model is not None:
                weights = served_weights_gb(model, precision)
            download = req.download_gb if req.download_gb is not None else (
                cold["generic_download_gb"] if model is None else cold["image_gb"] + weights)
        else:
            got = thr.llm(o.gpu, max_tp)
            if isinstance(got, str):
                rejected[got] += 1
                continue
            tp, rps, secs, used_precision, res_notes = got
            notes += res_notes
            replicas = max_tp // tp
            rate = replicas * rps * 3600.0
            item_h = secs / 3600.0
            if used_precision not in weights_by_precision:
                weights_by_precision[used_precision] = served_weights_gb(model, used_precision)
            weights = weights_by_precision[used_precision]
            if o.ram_gb is not None and o.ram_gb < HOST_RAM_BASE_GB + weights:
                rejected["host RAM too small to load the model's weights"] += 1
                continue
            download = req.download_gb if req.download_gb is not None else cold["image_gb"] + weights
        if item_h > d["limits"]["max_item_hours"]:
            rejected["one item runs longer than a day on this GPU"] += 1
            continue
        # Bandwidth: downloads at cold start, items' bytes in and out while running.
        bw = req.bandwidth_gbps if req.bandwidth_gbps is not None else bandwidth_gbps(kind)
        link_bytes_h = bw * 1e9 / 8 * 3600
        bw_limited = False
        if in_bytes + out_bytes > 0:
            cap = link_bytes_h / (in_bytes + out_bytes)
            if cap < rate:
                rate, bw_limited = cap, True
                notes.append(f"the host's {bw:g} Gb/s link caps it at {cap:,.0f} items/h")
        download_h = download * 8 / bw / 3600
        load_h = (weights / cold["load_gb_per_s"] / 3600) if weights else 0.0
        engine_h = cold["engine_start_s"] / 3600 if req.kind != "gpu" else 0.0
        cold_h = provision_hours() + download_h + load_h + engine_h
        if cold_h > d["limits"]["max_cold_start_share_of_deadline"] * T:
            rejected["cold start takes more than half the deadline"] += 1
            continue
        # Interruptions: capacity taken back plus hardware faults; a replacement re-downloads.
        lam = interruption_rate_per_node_hour(kind, o.pricing) + o.gpus_per_node / gpu_hours_per_failure(kind)
        reacq = reacquire_hours(kind, o.pricing)
        r_total = restart_hours(kind, o.pricing) + download_h + load_h + engine_h
        billed_frac = (r_total - reacq) / r_total if r_total > 0 else 1.0
        useful = useful_share(lam, item_h, r_total)
        if 1.0 - useful > d["limits"]["max_lost_share"]:
            rejected["interruptions would waste most of the host time (items too long)"] += 1
            continue
        billed_wall = max(0.5, 1.0 - lam * reacq)
        egress_rate = provider.egress_usd_per_gb
        if egress_rate is None:
            egress_rate = d["egress_usd_per_gb_unknown"]["by_kind"][kind]["usd_per_gb"]
        hosts, basis = hosts_available(o, kind, req.hosts_per_offer)
        key = (o.provider, o.gpu, float(o.gpus_per_node), o.pricing, round(o.price_per_hour_usd, 6))
        pool = groups.get(key)
        if pool is not None:
            pool.offers.append(o)
            pool.hosts_avail += hosts
            continue
        if o.gpu not in vb_cache:
            vb_cache[o.gpu] = vendor_band(o.gpu, "serving" if req.kind != "gpu" else d["generic_scaling"]["regime"])
        vb = vb_cache[o.gpu]
        risk = 0.0
        if kind == "decentralized":
            risk += 0.2
        elif kind == "marketplace" or o.pricing == "community":
            risk += 0.1
        risk += min(0.3, lam * 5)
        if o.is_stale():
            risk += 0.1
            notes.append(f"price is {o.age_days()} days old")
        if o.confidence == "unverified":
            risk += 0.1
            notes.append("price unverified")
        groups[key] = _Pool(
            key=key, offers=[o], provider=provider, kind=kind, gpu=o.gpu, gpn=float(o.gpus_per_node),
            pricing=o.pricing, price=o.price_per_hour_usd, tp=tp, replicas=replicas, rate=rate, item_h=item_h,
            lam=lam, restart_h=r_total, billed_restart_frac=billed_frac, cold_h=cold_h, useful=useful,
            billed_wall=billed_wall, egress_per_item=out_bytes / 1e9 * egress_rate,
            egress_gb_per_item=out_bytes / 1e9, hosts_avail=hosts, hosts_basis=basis, download_gb=download,
            bandwidth_gbps=bw, bw_limited=bw_limited, precision=used_precision, arch=vb.arch,
            vendor_sigma=vb.sigma, price_sigma=price_sigma(o), risk=min(risk, 1.0), notes=notes)
    consumer_tp: dict[str, int | None] = {}
    for gid in {o.gpu for o in cands.offers if catalog.gpus[o.gpu].is_consumer}:
        if req.kind == "gpu":
            ok = req.min_gpu_memory_gb is None or catalog.gpus[gid].memory_gb >= req.min_gpu_memory_gb
            consumer_tp[gid] = 1 if ok else None
        else:
            got = thr.llm(gid, 8)
            consumer_tp[gid] = got[0] if isinstance(got, tuple) else None
    info = {"input_bytes_per_item": in_bytes, "output_bytes_per_item": out_bytes, "consumer_tp": consumer_tp}
    return list(groups.values()), info


# ---------------------------------------------------------------- the split ----------------

def _greedy(pools: list[_Pool], n_items: float, window_h: float, max_gpus: int | None) -> list[tuple[_Pool, int]] | None:
    """The least-cost split (LP by marginal cost per item, hosts rounded up); None when all the
    hosts of these pools cannot finish in the window."""
    order = sorted((p for p in pools if p.items_per_host(window_h) > 0),
                   key=lambda p: (p.cost_per_item(window_h), -p.rate, p.id))
    need = float(n_items)
    gpus_left = max_gpus if max_gpus is not None else math.inf
    out: list[tuple[_Pool, int]] = []
    for p in order:
        if need <= 1e-9:
            break
        per_host = p.items_per_host(window_h)
        cap_hosts = p.hosts_avail
        if math.isfinite(gpus_left):
            cap_hosts = min(cap_hosts, int(gpus_left // max(p.gpn, 1)))
        if cap_hosts <= 0:
            continue
        hosts = min(cap_hosts, int(math.ceil(need / per_host - 1e-9)))
        if hosts <= 0:
            continue
        out.append((p, hosts))
        need -= hosts * per_host
        gpus_left -= hosts * p.gpn
    return out if need <= 1e-6 * max(n_items, 1) else None


def _max_fleet(pools: list[_Pool], max_gpus: int | None) -> list[tuple[_Pool, int]]:
    """Every available host, fastest offers first: the quickest a job can go."""
    out, gpus_left = [], (max_gpus if max_gpus is not None else math.inf)
    for p in sorted(pools, key=lambda p: (p.cold_h, -p.rate * p.useful)):
        h = p.hosts_avail if not math.isfinite(gpus_left) else min(p.hosts_avail, int(gpus_left // max(p.gpn, 1)))
        if h > 0:
            out.append((p, h))
            gpus_left -= h * p.gpn
    return out


def _finish_time(comp: list[tuple[_Pool, int]], n_items: float, rates: list[float] | None = None) -> float:
    """t with sum hosts_i r_i (t - s_i)+ = N: the shared queue drains when all hosts together are done."""
    r = rates if rates is not None else [p.rate * p.useful * h for p, h in comp]
    order = sorted(range(len(comp)), key=lambda i: comp[i][0].cold_h)
    acc_r = acc_rs = 0.0
    t = math.inf
    for k, i in enumerate(order):
        acc_r += r[i]
        acc_rs += r[i] * comp[i][0].cold_h
        if acc_r <= 0:
            continue
        t = (n_items + acc_rs) / acc_r
        nxt = comp[order[k + 1]][0].cold_h if k + 1 < len(order) else math.inf
        if t <= nxt:
            return t
    return t


def _evaluate(comp: list[tuple[_Pool, int]], req: BatchPlanRequest, label: str) -> dict[str, Any] | None:
    """The queue-balanced fleet: finish time, shares and expected cost; groups that would start
    after the queue drains are dropped."""
    n = float(req.whole_items)
    comp = [(p, h) for p, h in comp if h > 0]
    while comp:
        t = _finish_time(comp, n)
        kept = [(p, h) for p, h in comp if p.cold_h < t - 1e-12]
        if len(kept) == len(comp):
            break
        comp = kept
    if not comp or not math.isfinite(t):
        return None
    rows = []
    for p, h in comp:
        run = t - p.cold_h
        items = h * p.rate * p.useful * run
        billed = h * (p.cold_h + run * p.billed_wall)
        compute = billed * p.price
        egress = items * p.egress_per_item
        rows.append(dict(pool=p, hosts=h, items=items, run=run, host_hours=billed, compute=compute,
                         cold=h * p.cold_h * p.price, egress=egress, egress_gb=items * p.egress_gb_per_item,
                         interruptions=h * p.lam * run))
    return dict(comp=comp, rows=rows, t=t, label=label,
                cost=sum(r["compute"] + r["egress"] for r in rows))


def _spares_for_p90(comp: list[tuple[_Pool, int]], req: BatchPlanRequest, max_gpus: int | None,
                    is_moe: bool) -> tuple[list[tuple[_Pool, int]], int]:
    """Add hosts (cheapest per item first, within availability) until the interruptions' own p90
    finish (with --strict-deadline: the p90 of every spread) meets the deadline; returns the fleet and
    the hosts added."""
    added = 0
    T = req.deadline_hours
    for _ in range(6):
        ev = _evaluate(comp, req, "")
        if ev is None:
            return comp, added
        ev["is_moe"] = is_moe
        sim = _simulate(ev, req, trials=400, with_spreads=req.strict_deadline)
        if sim["finish_p90"] <= T:
            return comp, added
        # More hosts on the group with the cheapest cost per item that still has hosts available.
        gpus_used = sum(h * p.gpn for p, h in comp)
        best = None
        for i, (p, h) in enumerate(comp):
            if h < p.hosts_avail and (max_gpus is None or gpus_used + p.gpn <= max_gpus):
                c = p.cost_per_item(T)
                if best is None or c < best[0]:
                    best = (c, i)
        if best is None:
            return comp, added
        i = best[1]
        p, h = comp[i]
        # Hosts for the missing share of time, at least one.
        short = sim["finish_p90"] / T - 1.0
        extra = max(1, int(math.ceil(sum(hh * pp.rate * pp.useful for pp, hh in comp) * short / (p.rate * p.useful))))
        extra = min(extra, p.hosts_avail - h)
        comp = comp[:i] + [(p, h + extra)] + comp[i + 1:]
        added += extra
    return comp, added


# ---------------------------------------------------------------- Monte Carlo --------------

def _simulate(ev: dict[str, Any], req: BatchPlanRequest, trials: int | None = None,
              with_spreads: bool = True) -> dict[str, float]:
    """Seeded samples of finish time and cost: each group's host interruptions (simulate_job, up to
    `sampled_hosts` hosts one by one), times the estimator's (shared), the architectures' and the
    prices' lognormal errors."""
    from gpuplan.planner.uncertainty import estimator_regime

    d = batch_data()["fleets"]
    trials = int(trials or d["trials"])
    k_max = int(d["sampled_hosts"])
    rng = np.random.default_rng(req.seed + 7919)
    n = float(req.whole_items)
    rows = ev["rows"]
    t0 = ev["t"]
    phi = np.ones((len(rows), trials))
    for gi, r in enumerate(rows):
        p, h = r["pool"], r["hosts"]
        useful_h = r["run"] * p.useful
        k = max(1, min(h, k_max // len(rows)))  # hosts sampled one by one: at most k_max per fleet
        wall, _ = simulate_host_walls(useful_h, p.lam, p.item_h, p.restart_h, trials * k,
                                      req.seed + 104729 * (gi + 1), p.billed_restart_frac)
        f = (wall / useful_h).reshape(trials, k).mean(axis=1) if useful_h > 0 else np.ones(trials)
        if h > k:  # the mean of h hosts: the spread of the mean shrinks as 1/sqrt(h)
            mu = f.mean()
            f = mu + (f - mu) * math.sqrt(k / h)
        phi[gi] = f
    m = np.ones((len(rows), trials))
    q = np.ones((len(rows), trials))
    if with_spreads:
        if req.kind == "gpu":
            est_sigma = float(batch_data()["generic_scaling"]["sigma"])
        else:
            est_sigma = estimator_regime("serve", is_moe=bool(ev.get("is_moe")))[1]
        z_est = rng.standard_normal(trials)
        arch_z: dict[str, np.ndarray] = {}
        prov_z: dict[str, np.ndarray] = {}
        for gi, r in enumerate(rows):
            p = r["pool"]
            za = arch_z.setdefault(p.arch, rng.standard_normal(trials))
            zp = prov_z.setdefault(p.provider.id, rng.standard_normal(trials))
            # Generic work: the user measured the reference GPU; only the move to other GPUs is uncertain.
            m[gi] = np.exp(est_sigma * z_est + (p.vendor_sigma * za if req.kind != "gpu" else 0.0))
            q[gi] = np.exp(p.price_sigma * zp)
    # Finish: sum_i hosts_i rate_i / (phi_i m_i) (t - s_i) = N, over the groups that start before t.
    eff_rate = np.array([[r["hosts"] * r["pool"].rate] for r in rows]) / (phi * m)
    cold = np.array([[r["pool"].cold_h] for r in rows])
    t = (n + (eff_rate * cold).sum(axis=0)) / eff_rate.sum(axis=0)
    for _ in range(3):  # drop groups that would start after the queue drains in this trial
        active = cold < t
        t = (n + (eff_rate * cold * active).sum(axis=0)) / np.maximum((eff_rate * active).sum(axis=0), 1e-300)
    active = cold < t
    run = np.maximum(t - cold, 0.0)
    hosts = np.array([[r["hosts"]] for r in rows])
    price = np.array([[r["pool"].price] for r in rows])
    billed_wall = np.array([[r["pool"].billed_wall] for r in rows])
    # Billed: the cold start, and the running time at the billed share (waits for new capacity are free).
    compute = (hosts * price * q * (cold + run * billed_wall) * np.where(active, 1.0, 0.0)).sum(axis=0)
    items = eff_rate * run
    egress = (items * np.array([[r["pool"].egress_per_item] for r in rows])).sum(axis=0)
    cost = compute + egress
    from gpuplan.planner.uncertainty import ranking_z

    z = ranking_z()
    rank_q = 100.0 * 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))
    f10, f50, f90 = np.percentile(t, [10, 50, 90])
    c10, c90, crank = np.percentile(cost, [10, 90, rank_q])
    return {"finish_p10": float(f10), "finish_p50": float(f50), "finish_p90": float(f90), "cost_p10": float(c10),
            "cost_p90": float(c90), "cost_rank": float(crank), "finish_expected_sim": float(t.mean()),
            "t_analytic": t0}


# ---------------------------------------------------------------- the plan -----------------

def plan_batch(req: BatchPlanRequest, catalog: Catalog | None = None) -> BatchPlanResult:
    """Fleets that finish `req.items` items by the deadline, ranked by the 75th percentile of cost."""
    import collections

    catalog = catalog or Catalog.load()
    d = batch_data()
    model = req.resolve_model()
    precision = req.resolved_precision(model)
    if req.kind == "gpu":
        catalog.gpu(req.reference_gpu)  # unknown reference GPU: a one-line error naming the closest
    if req.kind == "embed" and model is not None and req.input_len > model.max_seq_len:
        raise UsageError(f"--tokens-per-item {req.input_len:,} exceeds {model.name}'s context of {model.max_seq_len:,}")
    if req.kind == "generate" and model is not None:
        from gpuplan.perf.inference_estimate import check_context

        check_context(model, req.input_len, req.output_len)
    rejected: collections.Counter = collections.Counter()
    pools, io = _build_pools(req, catalog, model, precision, rejected)
    T = req.deadline_hours
    n = float(req.whole_items)
    max_gpus = req.constraints.max_gpus

    # Candidate compositions.
    comps: dict[tuple, tuple[str, list[tuple[_Pool, int]]]] = {}

    def add(label: str, comp: list[tuple[_Pool, int]] | None) -> None:
        if not comp:
            return
        key = tuple(sorted((p.id, h) for p, h in comp))
        if key not in comps:
            comps[key] = (label, comp)

    best = _greedy(pools, n, T, max_gpus)
    add("least cost" if best is None or len(best) < 2 else "least cost, split", best)
    if best:
        shares = collections.Counter()
        for p, h in best:
            shares[p.provider.id] += h * p.rate * p.useful
        total = sum(shares.values()) or 1.0
        for prov, share in shares.most_common(4):
            if share / total >= 0.05:
                add(f"without {prov}", _greedy([p for p in pools if p.provider.id != prov], n, T, max_gpus))
    add("marketplace + decentralized only", _greedy([p for p in pools if p.kind in PEER_KINDS], n, T, max_gpus))
    add("decentralized only", _greedy([p for p in pools if p.kind == "decentralized"], n, T, max_gpus))
    add("datacenter only", _greedy([p for p in pools if p.kind in DATACENTER_KINDS], n, T, max_gpus))
    # Every single offer that can meet the deadline alone (the cheapest few per provider, GPU and pricing).
    singles = []
    for p in pools:
        comp = _greedy([p], n, T, max_gpus)
        if comp:
            singles.append((p.cost_per_item(T), p, comp))
    singles.sort(key=lambda x: x[0])
    seen: collections.Counter = collections.Counter()
    for _, p, comp in singles:
        k = (p.provider.id, p.gpu, p.pricing)
        if seen[k] >= 1:
            continue
        seen[k] += 1
        add("single offer", comp)

    # Evaluate analytically, keep the cheapest few, then spares and the Monte Carlo.
    evaluated = []
    for label, comp in comps.values():
        ev = _evaluate(comp, req, label)
        if ev is not None and ev["t"] <= T * (1 + 1e-9):
            evaluated.append(ev)
    evaluated.sort(key=lambda e: e["cost"])
    keep_n = max(req.limit * 2, 12)
    shortlisted = evaluated[:keep_n]
    # Keep the labelled alternatives even when pricier: they answer "what if".
    shortlisted += [e for e in evaluated[keep_n:] if e["label"] != "single offer"]

    fleets_raw = []
    seen_after: set[tuple] = set()
    for ev in shortlisted:
        comp, added = _spares_for_p90(ev["comp"], req, max_gpus, bool(model is not None and model.is_moe))
        if added:
            ev2 = _evaluate(comp, req, ev["label"])
            if ev2 is not None:
                ev = ev2
        key = tuple(sorted((p.id, h) for p, h in ev["comp"]))
        if key in seen_after:  # two candidates grew into the same fleet
            continue
        seen_after.add(key)
        ev["spares_p90"] = added
        ev["is_moe"] = bool(model is not None and model.is_moe)
        ev["sim"] = _simulate(ev, req)
        ev["sim_int"] = _simulate(ev, req, with_spreads=False)
        fleets_raw.append(ev)

    best_late_p90 = None
    if req.strict_deadline:
        late = [e for e in fleets_raw if e["sim"]["finish_p90"] > T]
        if late:
            rejected["p90 finish past the deadline (--strict-deadline)"] += len(late)
            best_late_p90 = min(e["sim"]["finish_p90"] for e in late)
        fleets_raw = [e for e in fleets_raw if e["sim"]["finish_p90"] <= T]
    if req.budget_usd is not None:
        over = [e for e in fleets_raw if e["cost"] > req.budget_usd]
        if over:
            rejected["fleets over --budget"] += len(over)
        cheapest_over = min((e["cost"] for e in over), default=None)
        fleets_raw = [e for e in fleets_raw if e["cost"] <= req.budget_usd]
    else:
        cheapest_over = None

    fleets_raw.sort(key=lambda e: (e["sim"]["cost_rank"], e["cost"], e["t"]))
    fleets = [_to_fleet(i + 1, e, req, model, io) for i, e in enumerate(fleets_raw[:req.limit])]
    fleets = _mark_ties(fleets)

    closest = None
    why: list[str]
    if not fleets:
        why = [_nothing_fits(req, pools, rejected, cheapest_over, evaluated)]
        if best_late_p90 is not None and cheapest_over is None:
            why = [f"no fleet's p90 finish meets the {T:g} h deadline (--strict-deadline): the best is "
                   f"{best_late_p90:,.1f} h with every available host; drop --strict-deadline or raise the deadline"]
        if pools:
            ev = _evaluate(_max_fleet(pools, max_gpus), req, "fastest: every available host")
            if ev is not None:
                ev["spares_p90"] = 0
                ev["is_moe"] = bool(model is not None and model.is_moe)
                ev["sim"] = _simulate(ev, req, trials=200)
                ev["sim_int"] = _simulate(ev, req, trials=200, with_spreads=False)
                closest = _to_fleet(0, ev, req, model, io)
    else:
        why = _why(fleets, req)
    suit = _suitability(req, model, pools, fleets, io)
    summary = {
        "kind": req.kind, "model": model.name if model is not None else None, "items": n,
        "input_len": req.input_len if req.kind != "gpu" else None,
        "output_len": req.output_len if req.kind == "generate" else None,
        "gpu_seconds_per_item": req.gpu_seconds_per_item, "reference_gpu": req.reference_gpu if req.kind == "gpu" else None,
        "precision": precision if req.kind != "gpu" else None, "engine": req.engine if req.kind != "gpu" else None,
        "deadline_hours": T, "budget_usd": req.budget_usd,
        "offers_considered": sum(len(p.offers) for p in pools), "offer_groups": len(pools),
        "providers_considered": len({p.provider.id for p in pools}),
        "fleets_found": len(fleets_raw),
        "ranked_by": "75th percentile of the cost band (expected cost shown)",
        "input_gb": n * io["input_bytes_per_item"] / 1e9, "output_gb": n * io["output_bytes_per_item"] / 1e9,
    }
    return BatchPlanResult(
        kind=req.kind, model=model.name if model is not None else None, summary=summary, fleets=fleets, why=why,
        suitability=suit, rejected={k: v for k, v in rejected.items() if v}, closest=closest,
        assumptions=_assumptions(req),
    )


def _to_fleet(rank: int, ev: dict[str, Any], req: BatchPlanRequest, model, io: dict[str, float]) -> BatchFleet:
    n = float(req.whole_items)
    rows = ev["rows"]
    total_items = sum(r["items"] for r in rows) or 1.0
    groups = []
    for r in rows:
        p: _Pool = r["pool"]
        share = r["items"] / total_items
        # Spare hosts: beyond what the group's share needs by the deadline at full speed (no interruptions,
        # the expected throughput): they absorb interruptions and, with --strict-deadline, the p90.
        window = req.deadline_hours - p.cold_h
        need0 = int(math.ceil(r["items"] / (p.rate * window) - 1e-9)) if window > 0 else r["hosts"]
        regions = sorted({o.region for o in p.offers if o.region})
        o0 = min(p.offers, key=lambda o: (-CONFIDENCE_RANK[o.confidence], o.age_days()))
        groups.append(FleetGroup(
            provider=p.provider.id, provider_name=p.provider.name, provider_kind=p.kind, gpu=p.gpu,
            gpus_per_node=p.gpn, pricing=p.pricing, instance_type=o0.instance_type, regions=regions,
            listings=len(p.offers), hosts=r["hosts"], spare_hosts=max(0, r["hosts"] - need0),
            hosts_available=p.hosts_avail, hosts_available_basis=p.hosts_basis,
            gpus=int(r["hosts"] * p.gpn), precision=p.precision, tp=p.tp, replicas_per_host=p.replicas,
            items_per_host_hour=p.rate, item_seconds=p.item_h * 3600, useful_share=p.useful,
            interruptions_per_host_hour=p.lam, restart_hours=p.restart_h, cold_start_hours=p.cold_h,
            download_gb=p.download_gb, bandwidth_gbps=p.bandwidth_gbps, bandwidth_limited=p.bw_limited,
            share=share, items=r["items"] * n / total_items, host_hours=r["host_hours"],
            price_per_host_hour_usd=p.price, compute_usd=r["compute"], cold_start_usd=r["cold"],
            egress_gb=r["egress_gb"], egress_usd=r["egress"], cost_usd=r["compute"] + r["egress"],
            expected_interruptions=r["interruptions"], price_age_days=o0.age_days(), confidence=o0.confidence,
            offer=o0, notes=list(p.notes)))
    provider_shares: dict[str, float] = {}
    kind_shares: dict[str, float] = {}
    for g in groups:
        provider_shares[g.provider] = provider_shares.get(g.provider, 0.0) + g.share
        kind_shares[g.provider_kind] = kind_shares.get(g.provider_kind, 0.0) + g.share
    cost = sum(g.cost_usd for g in groups)
    compute = sum(g.compute_usd for g in groups)
    useful_time = sum(r["hosts"] * r["run"] * r["pool"].useful for r in rows)
    wall_time = sum(r["hosts"] * r["run"] for r in rows)
    overhead = wall_time / useful_time - 1.0 if useful_time > 0 else 0.0
    sim, sim_int = ev["sim"], ev["sim_int"]
    T = req.deadline_hours
    finish = ev["t"]
    out_tokens = n * req.output_len if req.kind == "generate" else None
    tokens = n * (req.input_len + (req.output_len if req.kind == "generate" else 0)) if req.kind != "gpu" else None
    risk = sum(g.share * r["pool"].risk for g, r in zip(groups, rows))
    notes = []
    if sim["finish_p90"] > T:
        notes.append(f"p90 finish {sim['finish_p90']:.1f} h is past the {T:g} h deadline (mostly the throughput "
                     "estimate's spread): measure one host first, or --strict-deadline")
    if ev.get("spares_p90"):
        notes.append(f"{ev['spares_p90']} host(s) added so that the p90 finish "
                     f"{'' if req.strict_deadline else 'under interruptions '}still meets the deadline")
    if len(provider_shares) > 1:
        notes.append(f"one work queue across {len(provider_shares)} providers (export: --export skypilot)")
    return BatchFleet(
        rank=rank, label=ev["label"], groups=groups, hosts=sum(g.hosts for g in groups),
        gpus=sum(g.gpus for g in groups), spare_hosts=sum(g.spare_hosts for g in groups),
        providers=list(provider_shares), provider_shares=provider_shares, kind_shares=kind_shares,
        peer_share=sum(g.share for g in groups if g.provider_kind in PEER_KINDS or g.pricing == "community"),
        finish_hours=finish, finish_p10_hours=min(sim["finish_p10"], finish),
        finish_p90_hours=max(sim["finish_p90"], finish), finish_p90_interruptions_hours=max(sim_int["finish_p90"], finish),
        meets_deadline=finish <= T * (1 + 1e-9), meets_deadline_p90=sim["finish_p90"] <= T,
        cost_usd=cost, cost_p10_usd=min(sim["cost_p10"], cost), cost_p90_usd=max(sim["cost_p90"], cost),
        rank_cost_usd=sim["cost_rank"], compute_usd=compute, cold_start_usd=sum(g.cold_start_usd for g in groups),
        egress_usd=sum(g.egress_usd for g in groups), egress_gb=sum(g.egress_gb for g in groups),
        input_gb=n * io["input_bytes_per_item"] / 1e9, interruption_overhead=overhead,
        expected_interruptions=sum(g.expected_interruptions for g in groups),
        cost_per_item_usd=cost / n, cost_per_million_items_usd=cost / n * 1e6,
        cost_per_million_output_tokens_usd=cost / out_tokens * 1e6 if out_tokens else None,
        cost_per_million_tokens_usd=cost / tokens * 1e6 if tokens else None,
        risk=min(1.0, risk), notes=notes)


def _mark_ties(fleets: list[BatchFleet]) -> list[BatchFleet]:
    if not fleets:
        return fleets
    first = fleets[0]
    out = [first]
    for f in fleets[1:]:
        out.append(f.model_copy(update={"ties_first": bool(f.cost_p10_usd <= first.cost_p90_usd
                                                           and f.cost_p90_usd >= first.cost_p10_usd)}))
    return out


def fleet_text(f: BatchFleet, max_groups: int | None = None) -> str:
    """'2x hyperbolic H100-SXM (61%) + 16x vast RTX-4090 community (39%)' (the largest shares first
    when cut to `max_groups`)."""
    groups = f.groups if max_groups is None else sorted(f.groups, key=lambda g: -g.share)[:max_groups]
    text = " + ".join(f"{g.hosts}x {g.provider} {'' if g.gpus_per_node == 1 else f'{g.gpus_per_node:g}x'}{g.gpu}"
                      f"{'' if g.pricing == 'on_demand' else ' ' + g.pricing} ({g.share:.0%})" for g in groups)
    if len(groups) < len(f.groups):
        rest = f.groups and sum(g.share for g in f.groups) - sum(g.share for g in groups)
        text += f" + {len(f.groups) - len(groups)} more offers ({rest:.0%})"
    return text


def _why(fleets: list[BatchFleet], req: BatchPlanRequest) -> list[str]:
    best = fleets[0]
    unit = (f"${best.cost_per_million_output_tokens_usd:,.3f} per M output tokens" if best.cost_per_million_output_tokens_usd
            else f"${best.cost_per_million_tokens_usd:,.4f} per M tokens" if best.cost_per_million_tokens_usd
            else f"${best.cost_per_item_usd * 1000:,.3f} per 1k items")
    lines = [f"#1 ({best.label}) {fleet_text(best)}: {fmt_usd(best.cost_usd)} (p10-p90 {fmt_usd(best.cost_p10_usd)}-"
             f"{fmt_usd(best.cost_p90_usd)}), done in {best.finish_hours:,.1f} h (p90 {best.finish_p90_hours:,.1f} h) of "
             f"{req.deadline_hours:g} h; {unit}"]
    if len(best.groups) > 1:
        lines.append(f"#1 splits the work across {len(best.groups)} offers of {len(best.providers)} provider(s): no one "
                     f"offer's available hosts finish it by the deadline as cheaply "
                     f"({', '.join(f'{g.provider} {g.gpus_per_node:g}x {g.gpu} {g.hosts}/{g.hosts_available} hosts' for g in best.groups)})")
    ties = [f for f in fleets[1:] if f.ties_first]
    if ties:
        lines.append(f"{len(ties)} fleet(s) tie with #1 within the bands: "
                     + ", ".join(f"#{f.rank} {f.label}" for f in ties[:4]))
    for other in fleets[1:3]:
        diff = other.cost_usd - best.cost_usd
        near = abs(diff) < 0.005 * max(best.cost_usd, 1e-9)
        lines.append(f"#{other.rank} ({other.label}): " + ("same cost" if near else f"{fmt_usd(diff)} more" if diff > 0
                                                          else f"{fmt_usd(-diff)} cheaper, ranked lower (wider band)")
                     + f", done in {other.finish_hours:,.1f} h")
    return lines


def _nothing_fits(req: BatchPlanRequest, pools: list[_Pool], rejected, cheapest_over, evaluated) -> str:
    T = req.deadline_hours
    if not pools and rejected.get("cold start takes more than half the deadline"):
        return (f"the deadline ({T * 60:,.0f} min) is too short: on every offer, renting a host, downloading the model "
                f"and warming up takes more than half of it")
    if not pools:
        top = ", ".join(f"{k}: {v}" for k, v in sorted(rejected.items(), key=lambda kv: -kv[1])[:3])
        return f"no offer can run this work ({top or 'no offers match the constraints'})"
    if cheapest_over is not None and req.budget_usd is not None:
        return (f"the cheapest fleet that meets the {T:g} h deadline costs ${cheapest_over:,.0f}, "
                f"over the --budget ${req.budget_usd:,.0f}")
    ev = _evaluate(_max_fleet(pools, req.constraints.max_gpus), req, "")
    hosts = sum(p.hosts_avail for p in pools)
    if ev is None:
        return f"no fleet finishes {req.whole_items:,} items within {T:g} h"
    return (f"no fleet finishes {req.whole_items:,} items within {T:g} h: all {hosts:,} available hosts of "
            f"{len(pools)} offers together need {ev['t']:,.1f} h (raise the deadline, --hosts-per-offer, or "
            f"--max-gpus)")


def _suitability(req: BatchPlanRequest, model, pools: list[_Pool], fleets: list[BatchFleet],
                 io: dict[str, float]) -> dict[str, Any]:
    """Why the work suits (or does not suit) decentralized and marketplace GPUs."""
    s = batch_data()["suitability"]
    reasons_for, reasons_against = ["the items are independent: no traffic between hosts, so any host that holds "
                                    "the model helps and a lost host loses only its items in flight"], []
    peer = [p for p in pools if p.kind in PEER_KINDS or p.pricing == "community"]
    if not peer:
        reasons_against.append("no marketplace or decentralized offer can run it (see 'not ranked')")
    else:
        lam = float(np.median([p.lam for p in peer]))
        item_h = float(np.median([p.item_h for p in peer]))
        restart = float(np.median([p.restart_h for p in peer]))
        lifetime = 1.0 / lam if lam > 0 else math.inf
        ratio = item_h / lifetime
        if ratio <= s["max_item_to_lifetime"]:
            reasons_for.append(f"an item takes {item_h * 3600:,.1f} s against a peer host's mean lifetime of "
                               f"{lifetime:,.0f} h: interruptions cost about {interruption_overhead(lam, item_h, restart):.1%} "
                               f"of host time ({ratio / 2 * 100:.2g}% in lost items, the rest replacing hosts)")
        else:
            reasons_against.append(f"an item takes {item_h:,.2f} h, {ratio:.0%} of a peer host's mean lifetime "
                                   f"({lifetime:,.0f} h): interruptions waste much of the work; split items smaller")
        cold = float(np.median([p.cold_h for p in peer]))
        run = req.deadline_hours
        if fleets:
            peer_groups = [g for f in fleets[:1] for g in f.groups]
            run = max((fleets[0].finish_hours - g.cold_start_hours) for g in peer_groups) if peer_groups else run
        share = cold / max(run, 1e-9)
        if share <= s["max_cold_start_share"]:
            reasons_for.append(f"a new host starts in {cold * 60:,.0f} min (download and load) against about "
                               f"{run:,.1f} h of work")
        else:
            reasons_against.append(f"a new host needs {cold * 60:,.0f} min to download and load, {share:.0%} of the "
                                   f"{run:,.1f} h it works: cold starts dominate; cache the model near the hosts")
        if min(p.tp for p in peer) > s["max_tp"]:
            reasons_against.append(f"a replica needs {min(p.tp for p in peer)} GPUs in one host: consumer and edge "
                                   "hosts cannot hold it")
    consumer = {g: tp for g, tp in io["consumer_tp"].items() if tp is not None and tp <= s["max_tp"]}
    if consumer:
        what = "the model fits" if req.kind != "gpu" else "the work runs on"
        reasons_for.append(f"{what} {min(consumer.values())} consumer GPU(s) per replica "
                           f"({', '.join(sorted(consumer)[:3])})")
    elif io["consumer_tp"]:
        if req.kind != "gpu" and model is not None:
            reasons_against.append(f"{model.name} does not fit on {s['max_tp']} consumer GPUs at "
                                   f"{req.resolved_precision(model)}: try --precision int4 or fp8")
        else:
            reasons_against.append("consumer GPUs have too little memory for it (--min-gpu-memory)")
    if io["output_bytes_per_item"] * req.whole_items > 1e12:
        reasons_against.append(f"{io['output_bytes_per_item'] * req.whole_items / 1e12:,.1f} TB of outputs leave "
                               "the hosts: egress and slow links matter")
    peer_share = 0.0
    if fleets:
        peer_share = fleets[0].peer_share
        dc = [f for f in fleets if f.peer_share <= 1e-9]
        pe = [f for f in fleets if f.peer_share >= 1 - 1e-9]
        if dc and pe:
            saving = 1.0 - pe[0].cost_usd / dc[0].cost_usd
            if saving > 0:
                reasons_for.append(f"the best marketplace/decentralized fleet costs {saving:.0%} less than the best "
                                   f"datacenter-only fleet (#{pe[0].rank} vs #{dc[0].rank})")
            else:
                reasons_against.append(f"the best datacenter-only fleet is {-saving:.0%} cheaper than the best "
                                       f"marketplace/decentralized one (#{dc[0].rank} vs #{pe[0].rank})")
    verdict = "suits" if not reasons_against else ("suits with care" if len(reasons_against) == 1 and peer
                                                   else "does not suit")
    return {"verdict": verdict, "for": reasons_for, "against": reasons_against,
            "peer_share_of_best": peer_share}


def _assumptions(req: BatchPlanRequest) -> dict[str, Any]:
    d = batch_data()
    hosts = hosts_data()
    return {
        "operating_point": "offline max throughput of the serving estimator (no latency target), smallest TP that "
                           "holds the model; a host runs GPUs // TP replicas" if req.kind == "generate" else
                           "prefill only: items packed into the engine's token budget per step, timed by the serving "
                           "estimator; smallest TP that holds the model; GPUs // TP replicas per host"
                           if req.kind == "embed" else
                           "GPU-seconds per item on the reference GPU x reference (bf16 peak x architecture "
                           "efficiency) / this GPU's; one item per GPU at a time",
        "hosts_available": {k: v["hosts"] for k, v in hosts["available"]["by_kind"].items()}
        | {"community": hosts["available"]["by_pricing"]["community"]["hosts"],
           "basis": "the offer's max_nodes when known, else these defaults (data/hosts.json)"},
        "host_bandwidth_gbps": {k: v["gbps"] for k, v in hosts["bandwidth_gbps"]["by_kind"].items()},
        "cold_start": "rent and boot, download the image and weights at the host's bandwidth, load at "
                      f"{d['cold_start']['load_gb_per_s']:g} GB/s, warm up; on every new host, replacements included",
        "interruptions": "capacity hazard by provider kind and pricing (economics/data/preemption.json) plus hardware "
                         "faults per GPU-hour; lost items are re-queued; a replacement waits for capacity (unbilled), "
                         "then cold-starts",
        "split": "least cost per item (LP by marginal cost, hosts rounded up) within each offer's available hosts; "
                 "a shared work queue balances the hosts",
        "band": "seeded Monte Carlo: host interruptions (simulate_job), the estimator's and the architectures' "
                "errors and the prices' age/confidence",
        "input_staging": "inputs are downloaded by the hosts (ingress free); outputs pay the provider's egress",
    }


__all__ = ["BatchFleet", "BatchPlanResult", "FleetGroup", "interruption_overhead", "plan_batch",
           "simulate_host_walls", "useful_share", "fleet_text", "batch_data"]
