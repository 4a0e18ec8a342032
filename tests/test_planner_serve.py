"""Serving and project plans: capacity per offer, constraints, users' geography, train-here/serve-there."""
from __future__ import annotations

import pytest

from gpuplan.catalog.catalog import Catalog
from gpuplan.planner import plan_project, plan_serving, plan_training
from gpuplan.planner.requests import Constraints, ServePlanRequest, TrainPlanRequest


@pytest.fixture(scope="module")
def catalog():
    return Catalog.load(use_store=False)


@pytest.fixture(scope="module")
def served(catalog):
    return plan_serving(ServePlanRequest(model="llama-3.1-8b", requests_per_s=5, limit=1000), catalog)


def test_serving_ranks_many_providers_by_cost(served):
    assert served.summary["providers_ranked"] >= 8
    # Ranked by the 75th percentile of each plan's cost band (what a risk-averse buyer pays).
    costs = [p.rank_cost_usd for p in served.plans]
    assert costs == sorted(costs)
    assert all(p.cost_p10_usd <= p.cost_usd <= p.rank_cost_usd <= p.cost_p90_usd for p in served.plans)


def test_serving_capacity_covers_the_peak(served):
    peak_out_tok_s = served.summary["peak_requests_per_s"] * served.summary["output_len"]
    for p in served.plans:
        assert p.replicas >= 1 and p.gpus >= p.replicas
        assert p.output_tokens_per_s >= peak_out_tok_s * 0.999
        assert p.cost_per_million_output_tokens_usd > 0


@pytest.mark.parametrize("rps", [5, 60])
def test_the_peak_is_served_without_the_fullest_host(catalog, rps):
    # N+1 counts hosts, not replicas: a host fails (or is taken back) with every replica on it. 70B at 60 req/s
    # packs several TP2 replicas per 8-GPU host, where one spare replica would not cover a lost host.
    res = plan_serving(ServePlanRequest(model="llama-3.1-70b" if rps > 5 else "llama-3.1-8b", requests_per_s=rps,
                                        limit=200), catalog)
    peak = res.summary["peak_requests_per_s"] * res.summary["output_len"]
    packed = 0
    for p in res.plans:
        per_host = int(p.gpus_per_node // p.gpus_per_replica)
        needed = p.replicas - p.assumptions["spare_replicas"]
        per_replica = p.output_tokens_per_s / needed
        packed += per_host > 1
        assert p.nodes >= 2 and p.replicas == p.nodes * per_host
        assert (p.replicas - per_host) * per_replica >= peak * 0.999, (p.provider, p.gpu, p.replicas, per_host)
    assert packed


def test_more_traffic_never_costs_less(catalog, served):
    busier = plan_serving(ServePlanRequest(model="llama-3.1-8b", requests_per_s=50, limit=5), catalog)
    assert busier.plans[0].cost_usd > served.plans[0].cost_usd


def test_serving_budget_and_exclusions(catalog, served):
    budget = served.plans[len(served.plans) // 2].cost_usd
    first = served.plans[0].provider
    result = plan_serving(ServePlanRequest(model="llama-3.1-8b", requests_per_s=5, limit=1000,
                                           constraints=Constraints(budget_usd=budget, exclude=[first])), catalog)
    assert result.plans
    assert all(p.cost_usd <= budget for p in result.plans)
    assert all(p.provider != first for p in result.plans)


def test_reserved_serving_offers_need_a_horizon_covering_their_term(catalog):
    for months in (1, 36):
        result = plan_serving(ServePlanRequest(model="llama-3.1-8b", requests_per_s=5, horizon_months=months,
                                               limit=1000), catalog)
        for p in result.plans:
            if p.offer.commitment_term_h:
                assert p.offer.commitment_term_h <= months * 730


def test_users_geography_favours_near_offers_and_states_rtt(catalog):
    eu = plan_serving(ServePlanRequest(model="llama-3.1-8b", requests_per_s=5, users=["eu"], limit=10), catalog)
    ap = plan_serving(ServePlanRequest(model="llama-3.1-8b", requests_per_s=5, users=["ap-south"], limit=10),
                      catalog)
    # Every offer whose region is known gets a round trip; unknown regions rank as if far.
    assert all(p.network_rtt_ms is not None for p in eu.plans + ap.plans if p.assumptions["region_geography"])
    assert eu.plans[0].network_rtt_ms <= 100
    assert [p.network_rtt_ms for p in eu.plans[:5]] != [p.network_rtt_ms for p in ap.plans[:5]]  # None: region unknown


def test_project_picks_each_best_separately(catalog):
    train = TrainPlanRequest(model="llama-3.1-8b", tokens=1e11, limit=5)
    serve = ServePlanRequest(model="llama-3.1-8b", requests_per_s=2, horizon_months=12, limit=5)
    project = plan_project(train, serve, catalog)
    best_train = plan_training(train, catalog).plans[0]
    best_serve = plan_serving(serve, catalog).plans[0]
    assert project["feasible"]
    assert project["train"].plans[0].offer == best_train.offer
    assert project["serve"].plans[0].offer == best_serve.offer
    assert project["total_usd"] == pytest.approx(best_train.cost_usd + best_serve.cost_usd)
    assert project["total_p90_usd"] >= project["total_usd"]


def test_serving_replicas_stay_within_the_hosts_one_offer_supplies(catalog):
    """A marketplace bucket price says nothing of stock: 20 req/s of 8B on single-GPU community hosts
    needs more hosts than one listing supplies, so those plans are not ranked, and say why."""
    from gpuplan.planner.hosts import hosts_available

    req = ServePlanRequest(model="llama-3.1-8b", requests_per_s=20, max_tpot_ms=50, max_ttft_ms=500, limit=1000,
                           all_rows=True)
    result = plan_serving(req, catalog)
    assert result.plans
    for p in result.plans:
        limit, _basis = hosts_available(p.offer, catalog.provider_record(p.offer.provider).kind)
        assert p.gpus / p.offer.gpus_per_node <= limit
    assert any(k.startswith("needs more hosts than one offer supplies") for k in result.rejected)
    loose = plan_serving(req.model_copy(update={"requests_per_s": 1}), catalog)
    assert not any(k.startswith("needs more hosts") for k in loose.rejected)


def test_cost_per_million_counts_prompt_and_output_tokens_too(catalog):
    res = plan_serving(ServePlanRequest(model="llama-3.1-8b", requests_per_s=2, input_len=8000, output_len=500,
                                        limit=5), catalog)
    for p in res.plans:
        assert p.cost_per_million_tokens_usd == pytest.approx(p.cost_per_million_output_tokens_usd * 500 / 8500)
    assert "per M prompt and output tokens" in res.why[0]
