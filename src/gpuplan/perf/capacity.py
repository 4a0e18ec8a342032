"""Capacity planning: how many GPUs of a type serve a traffic level within latency targets.

Each tensor-parallel size that holds the model is tried (for MoE models also attention data
parallel with expert-parallel experts, the layout large-MoE deployments use); a replica's capacity is its best
throughput whose TTFT and TPOT meet the targets, derated to a target utilization (queues
build long before 100 %: p99 latency needs slack, ≈ 0.7–0.8 of saturation), and replicas
cover the peak (average × peak factor). The layout with the fewest GPUs wins; ties go to
the smaller TP (fewer all-reduces, finer scaling steps). Fast enough for the planner to
call for every GPU type and precision.
"""
from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, Field

from gpuplan.errors import GpuplanError, UsageError
from gpuplan.perf.inference_estimate import TP_CHOICES, ServingEstimate, _check_int, _check_pos, estimate_serving
from gpuplan.units import HOURS_PER_MONTH

DEFAULT_TARGET_UTILIZATION = 0.8


class Traffic(BaseModel):
    """Demand: requests/s, or tokens per month (input + output), with request lengths."""

    input_len: int
    output_len: int
    requests_per_s: float | None = None
    tokens_per_month: float | None = Field(None, description="input + output tokens per 730-hour month")
    peak_factor: float = 1.0

    @property
    def average_requests_per_s(self) -> float:
        if self.requests_per_s is not None:
            return self.requests_per_s
        return self.tokens_per_month / (self.input_len + self.output_len) / (HOURS_PER_MONTH * 3600)

    @property
    def peak_requests_per_s(self) -> float:
        return self.average_requests_per_s * self.peak_factor


class Targets(BaseModel):
    max_ttft_ms: float | None = None
    max_tpot_ms: float | None = None
    target_utilization: float = DEFAULT_TARGET_UTILIZATION


class CapacityPlan(BaseModel):
    """Fewest GPUs of one type for the traffic, and what they cost per token."""

    model: str
    gpu: str
    precision: str
    engine: str
    feasible: bool
    message: str | None = None
    gpus_per_replica: int = 0
    replicas: int = 0
    total_gpus: int = 0
    utilization: float = Field(0.0, description="average demand / saturated capacity of all replicas")
    peak_utilization: float = 0.0
    per_replica_output_tokens_per_s: float = Field(0.0, description="within targets, before the utilization derate")
    per_replica_requests_per_s: float = 0.0
    concurrency_per_replica: float = 0.0
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    average_requests_per_s: float = 0.0
    peak_requests_per_s: float = 0.0
    output_tokens_per_month: float = 0.0
    alternatives: list[dict[str, Any]] = Field(default_factory=list, description="other TP layouts considered")
    assumptions: dict[str, Any] = Field(default_factory=dict)

    def gpu_hours_per_month(self) -> float:
        return self.total_gpus * HOURS_PER_MONTH

    def cost_per_month_usd(self, price_per_gpu_hour_usd: float) -> float:
        return self.gpu_hours_per_month() * _price(price_per_gpu_hour_usd)

    def cost_per_million_output_tokens(self, price_per_gpu_hour_usd: float) -> float:
        """$ per million output tokens at the planned (average) load; inf when infeasible."""
        price = _price(price_per_gpu_hour_usd)
        if not self.feasible or self.output_tokens_per_month <= 0:
            return math.inf
        return self.cost_per_month_usd(price) / self.output_tokens_per_month * 1e6

    def cost_per_million_output_tokens_at_full_load(self, price_per_gpu_hour_usd: float) -> float:
        """The floor: every replica saturated within the targets all month."""
        price = _price(price_per_gpu_hour_usd)
        if not self.feasible or self.per_replica_output_tokens_per_s <= 0:
            return math.inf
        return price * self.gpus_per_replica / (self.per_replica_output_tokens_per_s * 3600) * 1e6


def _price(p: float) -> float:
    return _check_pos("price_per_gpu_hour_usd", p, hi=1e5)


def make_traffic(input_len: int, output_len: int, requests_per_s: float | None = None,
                 tokens_per_month: float | None = None, peak_factor: float = 1.0) -> Traffic:
    """Validated traffic: exactly one of requests_per_s and tokens_per_month."""
    isl = _check_int("input_len", input_len, 1, 10_000_000)
    osl = _check_int("output_len", output_len, 1, 10_000_000)
    if (requests_per_s is None) == (tokens_per_month is None):
        raise UsageError("give exactly one of requests_per_s and tokens_per_month")
    rps = None if requests_per_s is None else _check_pos("requests_per_s", requests_per_s, hi=1e7)
    tpm = None if tokens_per_month is None else _check_pos("tokens_per_month", tokens_per_month, hi=1e18)
    pf = _check_pos("peak_factor", peak_factor, hi=1000)
    if pf < 1:
        raise UsageError(f"peak_factor must be at least 1 (peak over average), got {peak_factor!r}")
    return Traffic(input_len=isl, output_len=osl, requests_per_s=rps, tokens_per_month=tpm, peak_factor=pf)


def plan_capacity(
    model,
    gpu,
    traffic: Traffic,
    targets: Targets | None = None,
    engine: str = "vllm",
    precision: str = "bf16",
    kv_precision: str | None = None,
    tp_choices: tuple[int, ...] = TP_CHOICES,
    **overrides,
) -> CapacityPlan:
    """Fewest GPUs of `gpu` (replicas x TP) serving `traffic` within `targets`."""
    targets = targets or Targets()
    util = _check_pos("target_utilization", targets.target_utilization, hi=1.0)
    peak = traffic.peak_requests_per_s
    avg = traffic.average_requests_per_s
    best: tuple | None = None
    alternatives = []
    last: ServingEstimate | None = None
    for tp, layout, extra in _layouts(model, tp_choices, overrides):
        try:
            est = estimate_serving(model, gpu, tp=tp, precision=precision, kv_precision=kv_precision,
                                   input_len=traffic.input_len, output_len=traffic.output_len,
                                   max_ttft_ms=targets.max_ttft_ms, max_tpot_ms=targets.max_tpot_ms,
                                   engine=engine, **overrides, **extra)
        except UsageError as e:
            if "does not divide" in str(e):
                continue
            raise
        last = est
        if not est.fits or est.meets_targets is False or est.output_tokens_per_s <= 0:
            reason = est.message if not est.fits else "latency targets unreachable"
            alternatives.append({"tp": tp, "layout": layout, "feasible": False, "reason": reason})
            continue
        rps_rep = est.requests_per_s * util
        replicas = max(1, math.ceil(peak / rps_rep - 1e-9))
        total = replicas * tp
        alternatives.append({"tp": tp, "layout": layout, "feasible": True, "replicas": replicas, "total_gpus": total,
                             "per_replica_output_tokens_per_s": est.output_tokens_per_s})
        key = (total, tp, layout != "tp")  # ties go to plain tensor parallelism
        if best is None or key < best[0]:
            best = (key, est, replicas)
    base = dict(model=last.model if last else str(getattr(model, "name", model)), gpu=last.gpu if last else str(gpu),
                precision=last.precision if last else precision, engine=last.engine if last else engine, average_requests_per_s=avg, peak_requests_per_s=peak, alternatives=alternatives)
    assumptions = {"target_utilization": util, "peak_factor": traffic.peak_factor,
                   "max_ttft_ms": targets.max_ttft_ms, "max_tpot_ms": targets.max_tpot_ms,
                   "month_hours": HOURS_PER_MONTH, "tp_choices": list(tp_choices)}
    if best is not None:
        assumptions["layout"] = ("attention-dp" if best[1].assumptions.get("dp_attention") else "tp")
    if best is None:
        why = "; ".join(f"TP{a['tp']}: {a['reason']}" for a in alternatives) or "no TP size divides the model's heads"
        return CapacityPlan(**base, feasible=False, message=why, assumptions=assumptions)
    (_, tp, _), est, replicas = best
    cap_rps = replicas * est.requests_per_s
    return CapacityPlan(
        **base, feasible=True, gpus_per_replica=tp, replicas=replicas, total_gpus=replicas * tp,
        utilization=avg / cap_rps, peak_utilization=peak / cap_rps,
        per_replica_output_tokens_per_s=est.output_tokens_per_s, per_replica_requests_per_s=est.requests_per_s,
        concurrency_per_replica=est.concurrency, ttft_ms=est.ttft_ms, tpot_ms=est.tpot_ms,
        output_tokens_per_month=avg * traffic.output_len * HOURS_PER_MONTH * 3600,
        assumptions={**assumptions, **est.assumptions, "kv_precision": est.kv_precision},
    )


def _layouts(model, tp_choices, overrides) -> list[tuple[int, str, dict]]:
    """(tp, layout name, estimate_serving arguments) to try: tensor parallel for every model, and for
    MoE models also attention data parallel with experts spread over the replica (EP), unless the
    caller fixed the layout (dp_attention / ep in overrides)."""
    out = [(tp, "tp", {}) for tp in tp_choices]
    if "dp_attention" in overrides or "ep" in overrides:
        return out
    try:
        from gpuplan.perf.inference_estimate import _resolve_model

        moe = bool(_resolve_model(model).is_moe)
    except GpuplanError:
        moe = False
    if moe:
        out += [(tp, "attention-dp", {"dp_attention": True}) for tp in tp_choices if tp > 1]
    return out


def plan_capacity_all_gpus(model, traffic: Traffic, targets: Targets | None = None, engine: str = "vllm",
                           precision: str = "bf16", kv_precision: str | None = None,
                           price_per_gpu_hour_usd: dict[str, float] | float | None = None,
                           gpus: list[str] | None = None) -> list[CapacityPlan]:
    """A plan per GPU type that can run the precision; feasible ones ranked by GPUs needed
    (or by monthly cost when prices are given), infeasible ones last."""
    from gpuplan.catalog.gpus import all_gpus
    from gpuplan.perf.inference_precision import weight_format

    wf = weight_format(precision)
    # Checked once: inside the loop a bad value would only show as every GPU type failing.
    _check_pos("target_utilization", (targets or Targets()).target_utilization, hi=1.0)
    plans = []
    for gid, g in (all_gpus().items() if gpus is None else ((x, None) for x in gpus)):
        if g is not None and wf.needs and not g.supports(wf.needs):
            continue
        try:
            plans.append(plan_capacity(model, gid, traffic, targets, engine, precision, kv_precision))
        except GpuplanError as e:
            if gpus is not None:
                raise
            plans.append(CapacityPlan(model=str(getattr(model, "name", model)), gpu=gid, precision=precision,
                                      engine=engine, feasible=False, message=str(e)))

    def price_of(p: CapacityPlan) -> float | None:
        if price_per_gpu_hour_usd is None:
            return None
        if isinstance(price_per_gpu_hour_usd, dict):
            return price_per_gpu_hour_usd.get(p.gpu)
        return price_per_gpu_hour_usd

    def key(p: CapacityPlan):
        pr = price_of(p)
        cost = p.cost_per_month_usd(pr) if (pr and p.feasible) else math.inf
        return (not p.feasible, cost if price_per_gpu_hour_usd is not None else 0, p.total_gpus, p.gpu)

    return sorted(plans, key=key)
