"""Capacity planning: replicas x TP for a traffic level, costs per token (its speed: benchmarks/bench_serving.py)."""
from __future__ import annotations

import math

import pytest

from gpuplan.errors import UsageError
from gpuplan.perf.capacity import HOURS_PER_MONTH, Targets, make_traffic, plan_capacity, plan_capacity_all_gpus
from gpuplan.perf.inference_validation import validation_models


@pytest.fixture(scope="module")
def m70():
    return validation_models()["llama-3.3-70b"]


def test_replicas_cover_peak_at_target_utilization(m70):
    traffic = make_traffic(1000, 300, requests_per_s=10, peak_factor=2)
    plan = plan_capacity(m70, "H100", traffic, Targets(max_ttft_ms=2000, max_tpot_ms=50), precision="fp8")
    assert plan.feasible
    assert plan.total_gpus == plan.replicas * plan.gpus_per_replica
    cap = plan.replicas * plan.per_replica_requests_per_s
    assert cap * 0.8 >= 20 - 1e-9  # peak 20 req/s within 80 % of capacity
    assert (plan.replicas - 1) * plan.per_replica_requests_per_s * 0.8 < 20
    assert plan.utilization == pytest.approx(10 / cap)
    assert plan.tpot_ms <= 50 and plan.ttft_ms <= 2000


def test_more_traffic_needs_more_gpus(m70):
    t = Targets(max_tpot_ms=60)
    small = plan_capacity(m70, "H100", make_traffic(1000, 300, requests_per_s=1), t, precision="fp8")
    big = plan_capacity(m70, "H100", make_traffic(1000, 300, requests_per_s=100), t, precision="fp8")
    assert big.total_gpus > 10 * small.total_gpus / 2


def test_cost_per_million_output_tokens(m70):
    traffic = make_traffic(1000, 500, tokens_per_month=30e9)
    plan = plan_capacity(m70, "H100", traffic, precision="fp8")
    out_per_month = 30e9 * 500 / 1500
    assert plan.output_tokens_per_month == pytest.approx(out_per_month)
    expected = plan.total_gpus * 2.5 * HOURS_PER_MONTH / out_per_month * 1e6
    assert plan.cost_per_million_output_tokens(2.5) == pytest.approx(expected)
    assert plan.cost_per_million_output_tokens_at_full_load(2.5) <= plan.cost_per_million_output_tokens(2.5)
    with pytest.raises(UsageError):
        plan.cost_per_million_output_tokens(float("nan"))


def test_unreachable_targets_are_infeasible(m70):
    plan = plan_capacity(m70, "H100", make_traffic(1000, 300, requests_per_s=1), Targets(max_tpot_ms=0.1))
    assert not plan.feasible and plan.message
    assert math.isinf(plan.cost_per_million_output_tokens(2.0))


def test_all_gpus_ranked(m70):
    # Speed is measured by benchmarks/bench_serving.py (every GPU type x 3 precisions), not timed here.
    traffic = make_traffic(1000, 300, requests_per_s=20)
    targets = Targets(max_ttft_ms=2000, max_tpot_ms=50)
    plans = []
    for p in ("bf16", "fp8", "int4"):
        plans = plan_capacity_all_gpus(m70, traffic, targets, precision=p)
        assert plans, p
    feasible = [p for p in plans if p.feasible]
    assert feasible and [p.total_gpus for p in feasible] == sorted(p.total_gpus for p in feasible)
    assert not any(p.feasible for p in plans[len(feasible):])
    fp8 = plan_capacity_all_gpus(m70, traffic, targets, precision="fp8")
    assert "A100-80GB-SXM" not in {p.gpu for p in fp8}  # no fp8 tensor cores: not a candidate


def test_prices_rank_by_cost(m70):
    traffic = make_traffic(1000, 300, requests_per_s=20)
    prices = {"H100-SXM": 2.0, "H200-SXM": 3.5, "MI300X": 1.5}
    plans = plan_capacity_all_gpus(m70, traffic, precision="fp8", price_per_gpu_hour_usd=prices,
                                   gpus=list(prices))
    costs = [p.cost_per_month_usd(prices[p.gpu]) for p in plans]
    assert costs == sorted(costs)


@pytest.mark.parametrize("kw", [
    dict(requests_per_s=0), dict(requests_per_s=-1), dict(requests_per_s=float("nan")),
    dict(tokens_per_month=float("inf")), dict(), dict(requests_per_s=1, tokens_per_month=1e9),
    dict(requests_per_s=1, peak_factor=0.5),
])
def test_bad_traffic(kw):
    with pytest.raises(UsageError):
        make_traffic(1000, 300, **kw)


def test_bad_utilization(m70):
    with pytest.raises(UsageError):
        plan_capacity(m70, "H100", make_traffic(100, 100, requests_per_s=1), Targets(target_utilization=1.5))


def test_moe_capacity_tries_attention_data_parallel():
    m = validation_models()["deepseek-v3"]
    traffic = make_traffic(2000, 500, requests_per_s=20)
    plan = plan_capacity(m, "H200", traffic, Targets(max_tpot_ms=100), precision="fp8")
    layouts = {(a["tp"], a["layout"]) for a in plan.alternatives}
    assert (8, "tp") in layouts and (8, "attention-dp") in layouts
    assert plan.feasible and plan.assumptions["layout"] in ("tp", "attention-dp")
    # The plan is the feasible layout with the fewest GPUs.
    feasible = [a for a in plan.alternatives if a["feasible"]]
    assert plan.total_gpus == min(a["total_gpus"] for a in feasible)
    # A fixed layout is respected, and dense models only try tensor parallelism.
    fixed = plan_capacity(m, "H200", traffic, Targets(max_tpot_ms=100), precision="fp8", dp_attention=False)
    assert {a["layout"] for a in fixed.alternatives} == {"tp"}
    dense = plan_capacity(validation_models()["llama-3.1-8b"], "H100", traffic)
    assert {a["layout"] for a in dense.alternatives} == {"tp"}
