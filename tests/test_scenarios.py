"""The review scenarios (benchmarks/scenarios.json): every ranked plan must be one the hardware and
the provider can deliver, and every plan must say how sure it is.

Asserted over every ranked plan (not only #1): no precision the GPU lacks; no multi-node training
on offers that are not cluster products or on an unknown fabric; no wall time past the cap; no
more nodes than the offer rents as one cluster; no VM whose RAM cannot hold the model; the top
15 rows are distinct choices; every plan has its p10/p90 band and ties_first.
"""
from __future__ import annotations

import json
import pathlib

import pytest

from gpuplan.catalog.capabilities import arch_info
from gpuplan.catalog.catalog import Catalog
from gpuplan.planner import plan_serving, plan_training
from gpuplan.planner.distinct import SAME_CHOICE_COST_TOLERANCE
from gpuplan.planner.requests import ServePlanRequest, TrainPlanRequest
from gpuplan.planner.train_plan import DEFAULT_MAX_NODES_UNKNOWN, DEFAULT_MAX_WALL_DAYS, HOST_RAM_BASE_GB, _weights_gb

SCENARIOS = json.loads((pathlib.Path(__file__).parent.parent / "benchmarks" / "scenarios.json").read_text())["scenarios"]


@pytest.fixture(scope="module")
def catalog():
    return Catalog.load(use_store=False)


@pytest.fixture(scope="module")
def results(catalog):
    out = {}
    for s in SCENARIOS:
        req_cls = TrainPlanRequest if s["kind"] == "train" else ServePlanRequest
        req = req_cls(**{**s["request"], "limit": 40})
        out[s["id"]] = (req, (plan_training if s["kind"] == "train" else plan_serving)(req, catalog))
    return out


IDS = [s["id"] for s in SCENARIOS]


@pytest.mark.parametrize("sid", IDS)
def test_scenario_ranks_plans(results, sid):
    req, res = results[sid]
    if sid == "S3":  # no catalog offer rents the ~16k GPUs 405B needs within 90 days: said, with the closest
        assert not res.plans and res.closest and any("--max-wall" in w or "larger clusters" in w for w in res.why)
        return
    assert res.plans, res.why


@pytest.mark.parametrize("sid", IDS)
def test_no_precision_the_gpu_lacks(results, catalog, sid):
    _, res = results[sid]
    for p in res.plans:
        gpu = catalog.gpus[p.gpu]
        info = arch_info(gpu)
        base = {"int4": "bf16", "int8": "bf16"}.get(p.precision, p.precision)
        assert info is None or base in info.precisions or base == "fp16" and "fp16" in info.precisions, (p.gpu, p.precision)
        if p.precision in ("fp8", "fp4"):
            assert gpu.supports(p.precision)


@pytest.mark.parametrize("sid", [s["id"] for s in SCENARIOS if s["kind"] == "train"])
def test_multi_node_training_only_on_clusters_with_a_known_fabric(results, sid):
    _, res = results[sid]
    for p in res.plans + res.closest:
        if p.nodes > 1:
            assert p.offer.cluster is True, (p.provider, p.instance_type)
            assert p.assumptions["fabric_basis"] != "assumed", (p.provider, p.instance_type)
            assert p.assumptions["fabric"] in ("infiniband", "roce", "efa", "tcpx")
        assert p.nodes <= (p.offer.max_nodes or DEFAULT_MAX_NODES_UNKNOWN)


@pytest.mark.parametrize("sid", [s["id"] for s in SCENARIOS if s["kind"] == "train"])
def test_no_wall_time_past_the_cap(results, sid):
    req, res = results[sid]
    cap_h = (req.constraints.max_wall_hours or DEFAULT_MAX_WALL_DAYS * 24)
    assert all(p.wall_hours <= cap_h for p in res.plans)


@pytest.mark.parametrize("sid", [s["id"] for s in SCENARIOS if s["kind"] == "train"])
def test_no_vm_too_small_to_load_the_weights(results, catalog, sid):
    req, res = results[sid]
    model = req.resolve_model()
    need = _weights_gb(model.total_params(), req.method, req.precision)
    for p in res.plans:
        if p.offer.ram_gb is not None:
            assert p.offer.ram_gb >= HOST_RAM_BASE_GB + need / p.nodes, (p.provider, p.instance_type, p.offer.ram_gb)


@pytest.mark.parametrize("sid", IDS)
def test_top_rows_are_distinct_choices(results, sid):
    _, res = results[sid]
    top = res.plans[:15]
    for i, a in enumerate(top):
        for b in top[i + 1:]:
            same = (a.provider, a.gpu, a.gpus_per_node, a.pricing, a.gpus) == (b.provider, b.gpu, b.gpus_per_node,
                                                                                 b.pricing, b.gpus)
            if same:
                assert abs(a.cost_usd - b.cost_usd) > SAME_CHOICE_COST_TOLERANCE * min(a.cost_usd, b.cost_usd) * 0.999


@pytest.mark.parametrize("sid", IDS)
def test_every_plan_has_its_band_and_tie_flag(results, sid):
    _, res = results[sid]
    first = res.plans[0] if res.plans else None
    for p in res.plans:
        assert p.cost_p10_usd is not None and p.cost_p10_usd <= p.cost_usd <= p.cost_p90_usd
        assert p.wall_p10_hours is not None and p.wall_p10_hours <= p.wall_hours <= p.wall_p90_hours
        assert p.cost_p90_usd > p.cost_p10_usd  # never a zero-width band
        assert set(p.uncertainty["sigma"]) == {"estimator", "vendor_efficiency", "network", "price"}
        overlaps = p.cost_p10_usd <= first.cost_p90_usd and p.cost_p90_usd >= first.cost_p10_usd
        assert p.ties_first == (overlaps and p.rank > 1)
    if len(res.plans) > 1:
        assert res.summary["flips_first"] and "would rank first with" in res.summary["flips_first"][0]


def test_default_serving_targets_and_native_precision(results):
    _, s8 = results["S8"]
    assert s8.summary["precision"] == "fp8"  # DeepSeek-V3 ships FP8
    assert s8.summary["max_tpot_ms"] == 50 and s8.summary["max_ttft_ms"] == 2000
    assert all(p.assumptions["tpot_ms"] <= 50 + 1e-6 for p in s8.plans)
    _, s9 = results["S9"]
    assert s9.summary["max_tpot_ms"] is None  # offline


def test_production_serving_keeps_a_spare_on_another_node(results):
    for sid in ("S6", "S7", "S8", "S10s"):
        _, res = results[sid]
        for p in res.plans:
            assert p.nodes >= 2 and p.assumptions["spare_replicas"] >= 1, (sid, p.provider, p.nodes)
