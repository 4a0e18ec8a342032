"""How often a job is interrupted, and how long it waits to resume.

Two independent sources of interruption (formulas.md §7-§8):

* capacity taken back (spot, interruptible bids, hosts leaving a marketplace or a
  decentralized network): a per-node hazard `lambda_node` by provider kind and pricing type;
* hardware faults on every pricing type: one job-killing failure per `G_fail` GPU-hours
  (5e4 on mature fleets, 1.4e4 pessimistic).

Job-level MTBF: `M = 1 / (n_nodes * lambda_node / b(n) + n_gpus / G_fail)`, where `b(n)` is the
mean number of a job's nodes removed together (bulk reclaims count once). Every default lives
in `data/preemption.json` with its source and an evidence label; every function takes
overrides, so a user with their own trace replaces any number.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from gpuplan.economics.checkpoint import _out, as_array, as_float
from gpuplan.errors import UnknownNameError, UsageError

PROVIDER_KINDS = ("hyperscaler", "neocloud", "marketplace", "decentralized")
PRICING_TYPES = ("on_demand", "spot", "reserved", "community", "interruptible")
MAX_RATE_PER_NODE_HOUR = 60.0  # one event a minute on every node: beyond that, a typo


@cache
def _data() -> dict:
    with resources.files("gpuplan.economics").joinpath("data/preemption.json").open(encoding="utf-8") as f:
        return json.load(f)


@dataclass(frozen=True)
class NodeHazard:
    """Interruption hazard of one node of a (provider kind, pricing type), with its evidence."""

    kind: str
    pricing: str
    rate_per_node_hour: float
    low: float
    high: float
    label: str
    source: str

    @property
    def mean_node_lifetime_h(self) -> float:
        return float("inf") if self.rate_per_node_hour == 0 else 1.0 / self.rate_per_node_hour

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _check(kind: str, pricing: str) -> tuple[str, str]:
    k, p = str(kind).lower().strip(), str(pricing).lower().strip().replace("-", "_")
    if k not in PROVIDER_KINDS:
        raise UnknownNameError("provider kind", kind, list(PROVIDER_KINDS))
    if p not in PRICING_TYPES:
        raise UnknownNameError("pricing type", pricing, list(PRICING_TYPES))
    return k, p


def _lookup(rows: list[dict], kind: str, pricing: str) -> dict:
    """Most specific row: exact (kind, pricing), then (*, pricing), then (kind, *)."""
    for want in ((kind, pricing), ("*", pricing), (kind, "*")):
        for r in rows:
            if (r["kind"], r["pricing"]) == want:
                return r
    raise UsageError(f"no interruption default for {kind} {pricing}")  # data file incomplete


def node_hazard(kind: str, pricing: str) -> NodeHazard:
    """The default per-node hazard for a provider kind and pricing type, with source and label."""
    k, p = _check(kind, pricing)
    r = _lookup(_data()["node_interruption"], k, p)
    return NodeHazard(kind=k, pricing=p, rate_per_node_hour=float(r["rate_per_node_hour"]), low=float(r["low"]),
                      high=float(r["high"]), label=r["label"], source=r["source"])


def interruption_rate_per_node_hour(kind: str, pricing: str, override: float | None = None) -> float:
    """Capacity interruptions per node-hour (0 for on-demand and reserved in a datacenter)."""
    if override is not None:
        return as_float(override, "interruption rate per node-hour", allow_zero=True, maximum=MAX_RATE_PER_NODE_HOUR)
    return node_hazard(kind, pricing).rate_per_node_hour


def base_restart_hours() -> float:
    """Detect, replace, reload and warm up: the part of a restart paid on any pricing type."""
    return float(_data()["restart"]["base_restart_h"])


def reacquire_hours(kind: str, pricing: str) -> float:
    """Wait to get capacity back after it was taken (0 where the capacity stays allocated)."""
    k, p = _check(kind, pricing)
    return float(_lookup(_data()["restart"]["reacquire_h"], k, p)["hours"])


def restart_hours(kind: str, pricing: str, override: float | None = None) -> float:
    """Restart time R for Daly's model: base restart + capacity re-acquisition."""
    if override is not None:
        return as_float(override, "restart time (h)", allow_zero=True, maximum=1e4)
    return base_restart_hours() + reacquire_hours(kind, pricing)


def billed_restart_fraction(kind: str, pricing: str) -> float:
    """Share of a restart that is billed: waiting for capacity that was taken back costs nothing,
    reloading on capacity already held does."""
    total = restart_hours(kind, pricing)
    return base_restart_hours() / total if total > 0 else 1.0


def is_preemptible(pricing: str) -> bool:
    return str(pricing).lower() in ("spot", "interruptible")


def gpu_hours_per_failure(kind: str | None = None, pessimistic: bool | None = None) -> float:
    """GPU-hours between job-killing hardware failures: mature fleet (5e4) or pessimistic (1.4e4).
    By default the provider kind picks (fleet-managed datacenters mature; peer hosts pessimistic)."""
    hw = _data()["hardware"]
    if pessimistic is None:
        if kind is None:
            pessimistic = False
        else:
            k, _ = _check(kind, "on_demand")
            pessimistic = hw["by_kind"][k] == "pessimistic"
    return float(hw["gpu_hours_per_failure"]["pessimistic" if pessimistic else "mature"])


def removals_per_event(nodes: Any, max_batch: float | None = None) -> Any:
    """Mean number of a job's nodes removed together: 1 for one node, towards 2.11 for many."""
    n = as_array(nodes, "node count", maximum=1e6)
    b = _data()["batching"]["removals_per_event_max"] if max_batch is None else as_float(max_batch, "batch size")
    if b < 1:
        raise UsageError(f"removals per event must be at least 1, got {b:g}")
    out = 1.0 + (b - 1.0) * (1.0 - 1.0 / n)
    return _out(out, nodes)


def job_failure_rate_per_hour(nodes: Any, gpus: Any, rate_per_node_hour: Any = 0.0,
                              gpu_hours_per_failure_: float | None = None, batched: bool = True) -> Any:
    """Job interruptions per wall-clock hour: capacity events (batched) plus hardware faults."""
    n = as_array(nodes, "node count", maximum=1e6)
    g = as_array(gpus, "GPU count", maximum=1e7)
    lam = as_array(rate_per_node_hour, "interruption rate per node-hour", allow_zero=True,
                   maximum=MAX_RATE_PER_NODE_HOUR)
    gf = as_float(gpu_hours_per_failure_ if gpu_hours_per_failure_ is not None else gpu_hours_per_failure(),
                  "GPU-hours per failure", maximum=1e12)
    if (g < n).any():
        raise UsageError("GPU count must be at least the node count")
    b = removals_per_event(n) if batched else 1.0
    rate = n * lam / b + g / gf
    return _out(rate, nodes, gpus, rate_per_node_hour)


def job_mtbf_hours(nodes: Any, gpus: Any, rate_per_node_hour: Any = 0.0,
                   gpu_hours_per_failure_: float | None = None, batched: bool = True) -> Any:
    """Job-level MTBF M = 1 / (n_nodes lambda_node / b + n_gpus / G_fail), in hours."""
    rate = np.asarray(job_failure_rate_per_hour(nodes, gpus, rate_per_node_hour, gpu_hours_per_failure_, batched))
    return _out(1.0 / rate, nodes, gpus, rate_per_node_hour)


def failure_model(kind: str, pricing: str, nodes: int, gpus: int, *,
                  rate_per_node_hour: float | None = None, restart_h: float | None = None,
                  gpu_hours_per_failure_: float | None = None, batched: bool = True) -> dict[str, Any]:
    """Everything the Daly model needs for one job on one kind of capacity, with the evidence."""
    hazard = node_hazard(kind, pricing)
    lam = interruption_rate_per_node_hour(kind, pricing, rate_per_node_hour)
    gf = gpu_hours_per_failure_ if gpu_hours_per_failure_ is not None else gpu_hours_per_failure(kind)
    r = restart_hours(kind, pricing, restart_h)
    preempt_rate = float(job_failure_rate_per_hour(nodes, gpus, lam, gf, batched)) - float(gpus) / gf
    return {
        "kind": hazard.kind, "pricing": hazard.pricing, "nodes": int(nodes), "gpus": int(gpus),
        "interruptions_per_node_hour": lam, "interruption_label": "user" if rate_per_node_hour is not None else hazard.label,
        "interruption_range": [hazard.low, hazard.high], "interruption_source": hazard.source,
        "gpu_hours_per_failure": float(gf), "hardware_failures_per_hour": float(gpus) / float(gf),
        "preemptions_per_hour": max(preempt_rate, 0.0),
        "removals_per_event": float(removals_per_event(nodes)) if batched else 1.0,
        "job_mtbf_h": float(job_mtbf_hours(nodes, gpus, lam, gf, batched)),
        "restart_h": r, "reacquire_h": 0.0 if restart_h is not None else reacquire_hours(kind, pricing),
    }
