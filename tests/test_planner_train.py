"""Training plans: ranking by job cost, the constraints as properties, reserved terms, spot economics."""
from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuplan.catalog.catalog import Catalog
from gpuplan.planner import plan_training
from gpuplan.planner.requests import Constraints, TrainPlanRequest

SLOW = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def catalog():
    return Catalog.load(use_store=False)


@pytest.fixture(scope="module")
def baseline(catalog):
    """The README's main job: every plan, unconstrained."""
    return plan_training(TrainPlanRequest(model="llama-3.1-8b", tokens=1e12, limit=1000), catalog)


def _req(**constraints) -> TrainPlanRequest:
    return TrainPlanRequest(model="llama-3.1-8b", tokens=1e12, limit=1000, constraints=Constraints(**constraints))


def test_main_job_ranks_offers_from_at_least_seven_providers(baseline):
    assert baseline.summary["providers_ranked"] >= 7
    assert len({p.provider for p in baseline.plans}) >= 7


def test_a_plans_hours_reconcile_with_its_stated_throughput_and_goodput(baseline):
    """A reader dividing the tokens by tokens_per_s gets the steady state only after the whole-run goodput."""
    for p in baseline.plans[:5]:
        a = p.assumptions
        assert 0.5 < a["goodput"] < 1.0
        assert a["steady_state_hours"] == pytest.approx(1e12 / a["tokens_per_s"] / a["goodput"] / 3600, rel=0.02)


def test_stale_prices_are_not_ranked_unless_asked_for(catalog, baseline):
    """A price older than the stale threshold is not a price one can book at: by default it is a
    rejection with its reason; --max-price-age-days ranks it again."""
    assert baseline.plans and not any(p.stale for p in baseline.plans)
    assert any(k.startswith("price older than 180 days") for k in baseline.rejected)
    old = plan_training(_req(max_price_age_days=100_000), catalog)
    assert any(p.stale for p in old.plans)
    assert old.summary["providers_ranked"] > baseline.summary["providers_ranked"]


def _p75_wall_h(p) -> float:
    """A plan's wall time at the ranking quantile, from the time sigmas it reports."""
    from gpuplan.planner.uncertainty import ranking_z

    s = p.uncertainty["sigma"]
    return p.wall_hours * math.exp(ranking_z() * math.sqrt(s["estimator"] ** 2 + s["vendor_efficiency"] ** 2
                                                           + s["network"] ** 2))


def test_plans_are_ranked_by_expected_job_cost_not_hourly_price(baseline):
    in_time = [p for p in sorted(baseline.plans, key=lambda p: p.rank) if _p75_wall_h(p) <= 30 * 24 * 1.001]
    # Ranked by the 75th percentile of each plan's cost band; expected cost is shown beside it.
    costs = [p.rank_cost_usd for p in in_time]
    assert costs == sorted(costs)
    assert all(p.cost_p10_usd <= p.cost_usd <= p.cost_p90_usd for p in baseline.plans)
    hourly = [p.offer.price_per_gpu_hour_usd for p in in_time]
    assert hourly != sorted(hourly), "job cost and hourly price order should differ somewhere"
    assert [p.rank for p in baseline.plans] == list(range(1, len(baseline.plans) + 1))


def test_cost_adds_up_and_bills_whole_nodes(baseline):
    for p in baseline.plans:
        c = p.cost
        assert p.cost_usd == pytest.approx(c.compute_usd + c.storage_usd + c.egress_usd + c.other_usd, rel=1e-9)
        assert p.gpus == p.nodes * p.gpus_per_node
        billed = p.assumptions["billed_hours"]
        assert c.compute_usd == pytest.approx(p.nodes * p.offer.price_per_hour_usd * billed, rel=1e-9)
        # Billing rounds up: never less than the steady-state time the job needs.
        assert billed >= p.assumptions["steady_state_hours"] - 1e-9
        assert p.cost_p90_usd >= p.cost_usd - 1e-6
        assert p.wall_p90_hours >= p.wall_hours - 1e-9
        lay = p.layout
        assert lay.tp * lay.pp * lay.cp * lay.dp == p.gpus


def test_reserved_offers_only_when_the_run_covers_their_term(baseline):
    for p in baseline.plans:
        if p.offer.commitment_term_h:
            assert p.wall_hours >= p.offer.commitment_term_h


def test_spot_plans_state_checkpoint_interval_and_lose_time(baseline):
    spot = [p for p in baseline.plans if p.pricing in ("spot", "interruptible")]
    assert spot, "the bundled catalog has spot offers that can train an 8B model"
    for p in spot:
        assert 0 < p.checkpoint_interval_min < 24 * 60
        assert p.expected_interruptions > 0
        assert p.assumptions["wall_over_steady"] > 1.0
        assert p.wall_hours > p.assumptions["steady_state_hours"]


def test_multi_node_training_avoids_decentralized_unless_asked(catalog, baseline):
    loose = [p for p in baseline.plans if p.nodes > 1 and p.provider_kind in ("decentralized", "marketplace")]
    assert loose == []
    # Marketplace hosts are not cluster products either: both permissions are needed to join them.
    allowed = plan_training(_req(allow_decentralized=True, allow_unclustered=True, max_wall_hours=3650 * 24), catalog)
    assert any(p.provider_kind in ("decentralized", "marketplace") for p in allowed.plans)


@SLOW
@given(fraction=st.floats(min_value=0.0, max_value=1.0))
def test_no_plan_above_budget(catalog, baseline, fraction):
    costs = sorted(p.cost_usd for p in baseline.plans)
    budget = costs[0] + fraction * (costs[-1] - costs[0]) + 1.0
    result = plan_training(_req(budget_usd=budget), catalog)
    assert all(p.cost_usd <= budget for p in result.plans)
    assert len(result.plans) == sum(c <= budget for c in costs)


@SLOW
@given(days=st.floats(min_value=2.0, max_value=60.0))
def test_no_plan_past_deadline(catalog, days):
    result = plan_training(_req(deadline_hours=days * 24), catalog)
    assert result.plans, f"some plan finishes an 8B/1T-token run in {days:.1f} days"
    assert all(p.wall_hours <= days * 24 for p in result.plans)


@SLOW
@given(data=st.data())
def test_no_plan_from_an_excluded_provider(catalog, baseline, data):
    providers = sorted({p.provider for p in baseline.plans})
    excluded = data.draw(st.lists(st.sampled_from(providers), min_size=1, max_size=4, unique=True))
    result = plan_training(_req(exclude=excluded), catalog)
    assert result.plans
    assert not {p.provider for p in result.plans} & set(excluded)


def test_other_constraints_hold(catalog):
    result = plan_training(_req(no_spot=True, max_gpus=64, gpus=["H100"], min_confidence="aggregated"), catalog)
    assert result.plans
    for p in result.plans:
        assert p.pricing not in ("spot", "interruptible")
        assert p.gpus <= 64
        assert p.gpu.startswith("H100")
        assert p.confidence in ("primary", "aggregated")  # at least 'aggregated'


def test_a_deadline_buys_more_gpus(catalog, baseline):
    fast = plan_training(_req(deadline_hours=3 * 24), catalog)
    assert fast.plans[0].gpus > baseline.plans[0].gpus
    assert fast.plans[0].cost_usd >= baseline.plans[0].cost_usd * 0.8


def test_impossible_constraints_give_an_empty_result_with_reasons(catalog):
    result = plan_training(_req(budget_usd=1.0), catalog)
    assert result.plans == []
    assert result.rejected.get("over --budget", 0) > 0


def test_pareto_front_is_not_dominated(baseline):
    by_rank = {p.rank: p for p in baseline.plans}
    front = [by_rank[r] for r in baseline.pareto_ranks]
    assert front
    for f in front:
        assert not any(o.cost_usd < f.cost_usd and o.wall_hours < f.wall_hours for o in baseline.plans[:20])


def test_lora_is_cheaper_than_full_fine_tuning(catalog):
    full = plan_training(TrainPlanRequest(model="llama-3.1-8b", tokens=1e9, method="full"), catalog)
    lora = plan_training(TrainPlanRequest(model="llama-3.1-8b", tokens=1e9, method="lora"), catalog)
    assert lora.plans[0].cost_usd < full.plans[0].cost_usd
    assert math.isfinite(lora.plans[0].wall_hours)


def test_a_preemption_notice_long_enough_to_checkpoint_removes_rework():
    import numpy as np

    from gpuplan.economics.checkpoint import checkpoint_bytes, write_seconds
    from gpuplan.planner.train_plan import failure_arrays

    nodes = np.array([1, 2])
    size = checkpoint_bytes(8e9)
    assert (write_seconds(size, nodes) < 0.8 * 120).all() and (write_seconds(size, nodes) > 0.8 * 30).all()
    aws = failure_arrays(nodes, 8, "hyperscaler", "spot", size, "aws")  # two minutes' notice
    gcp = failure_arrays(nodes, 8, "hyperscaler", "spot", size, "gcp")  # 30 s: too short to save 8B
    unknown = failure_arrays(nodes, 8, "hyperscaler", "spot", size, "")
    assert aws["saves_on_notice"].all() and not gcp["saves_on_notice"].any()
    assert (aws["factor"] < unknown["factor"]).all()
    np.testing.assert_allclose(gcp["factor"], unknown["factor"])
    assert (aws["tau_h"] > unknown["tau_h"]).all(), "announced preemptions no longer set the interval alone"
    on_demand = failure_arrays(nodes, 8, "hyperscaler", "on_demand", size, "")
    assert not on_demand["saves_on_notice"].any()


def test_missed_notices_lose_work_and_shorten_the_interval(monkeypatch):
    """Spot notices are best effort: the missed share of preemptions rolls back to the last checkpoint, so the
    interval is set by hardware failures plus those, not by hardware failures alone."""
    import numpy as np

    from gpuplan.economics import checkpoint as ckpt
    from gpuplan.planner.train_plan import failure_arrays

    nodes, size = np.array([2]), ckpt.checkpoint_bytes(8e9)
    shipped = failure_arrays(nodes, 8, "hyperscaler", "spot", size, "aws")
    monkeypatch.setattr(ckpt, "notice_missed_share", lambda: 0.0)
    perfect = failure_arrays(nodes, 8, "hyperscaler", "spot", size, "aws")
    assert (shipped["tau_h"] < perfect["tau_h"] / 3).all()  # minutes, not hours, between checkpoints
    assert (shipped["factor"] > perfect["factor"]).all()


def test_budget_and_deadline_warn_when_the_p90_goes_past_them(catalog, baseline):
    top = baseline.plans[0]
    budget = (top.cost_usd + top.cost_p90_usd) / 2
    res = plan_training(_req(budget_usd=budget), catalog)
    over = [p for p in res.plans if p.cost_p90_usd > budget]
    assert over and all(any("over the" in w and "budget" in w for w in p.warnings) for p in over)
    assert not any("budget" in w for p in res.plans if p.cost_p90_usd <= budget for w in p.warnings)


def test_estimate_and_plan_search_the_same_layouts(catalog):
    """`estimate train` and `plan train` agree for the same GPU, count and fabric, and every layout
    keeps the stated memory headroom."""
    from gpuplan.perf.layout_search import MEMORY_HEADROOM
    from gpuplan.perf.training_estimate import estimate_training
    from gpuplan.planner.train_plan import _workload

    req = TrainPlanRequest(model="llama-3.1-8b", tokens=1e12, limit=25)
    res = plan_training(req, catalog)
    model = req.resolve_model()
    assert res.plans
    for p in res.plans:
        e = estimate_training(model, _workload(req, model), p.gpu, p.gpus, gpus_per_node=int(p.gpus_per_node),
                              inter_node_gbps_per_gpu=p.assumptions["fabric_gbps_per_gpu"], n_runners_up=0)
        assert e.step_time_s == pytest.approx(p.assumptions["step_time_s"], rel=1e-9), (p.provider, p.gpu, p.gpus)
        assert (e.layout.tp, e.layout.pp, e.layout.dp, e.layout.micro_batch) == \
            (p.layout.tp, p.layout.pp, p.layout.dp, p.layout.micro_batch)
        # memory_per_gpu_gb is decimal GB; device memory is memory_gb read as GiB (gpuplan.units)
        assert p.assumptions["memory_per_gpu_gb"] * 1e9 <= catalog.gpus[p.gpu].memory_bytes * (1 - MEMORY_HEADROOM) + 1


def test_global_batch_grows_with_model_size():
    from gpuplan.perf.workload import default_pretrain_batch_tokens

    assert default_pretrain_batch_tokens(8e9) == pytest.approx(4_194_304)
    assert 14e6 <= default_pretrain_batch_tokens(405e9) <= 16.8e6  # Llama 3.1 405B: 16M
    assert default_pretrain_batch_tokens(125e6) == 1_048_576  # floor
    sizes = [default_pretrain_batch_tokens(n) for n in (1e9, 8e9, 70e9, 405e9)]
    assert sizes == sorted(sizes)


def test_a_given_batch_is_rounded_not_refused(catalog):
    # 1000 sequences do not divide by most data-parallel sizes: rounded up with a note, not refused.
    req = TrainPlanRequest(model="llama-3.1-8b", tokens=1e11, global_batch=1000, limit=5)
    res = plan_training(req, catalog)
    assert res.plans
    assert all(p.layout.dp * (p.layout.micro_batch or 1) > 0 for p in res.plans)


def test_v100_trains_in_fp16_without_flash_attention(catalog):
    from gpuplan.perf.training_estimate import estimate_training
    from gpuplan.perf.workload import pretraining

    e = estimate_training("llama-3.1-8b", pretraining(1e10), "V100-SXM2-32GB", 64, n_runners_up=0)
    assert e.precision == "fp16" and e.assumptions["flash_attention"] is False
    assert any("no bf16" in n for n in e.notes) and any("FlashAttention" in n for n in e.notes)
    with pytest.raises(Exception, match="no fp8"):
        estimate_training("llama-3.1-8b", pretraining(1e10, precision="fp8"), "V100-SXM2-32GB", 64)


def test_why_lines_state_time_and_gpu_hours_honestly(baseline):
    """A runner-up that finishes sooner on fewer GPU-hours at a higher hourly price is described as
    such, never as 'a higher price for the same work'."""
    res = plan_training(TrainPlanRequest(model="llama-3.1-8b", tokens=1e12, limit=6), Catalog.load(use_store=False))
    best = res.plans[0]
    for other in res.plans[1:4]:
        line = next(w for w in res.why if w.startswith(f"#{other.rank} {other.provider_name} "))
        if other.wall_hours < best.wall_hours * 0.95:
            assert "sooner" in line, line
        if other.gpu_hours < best.gpu_hours / 1.02:
            assert "fewer GPU-hours" in line and "same work" not in line, line


def test_a_runner_up_at_the_same_cost_is_not_called_dearer():
    """With every region's row (--all-rows) the runner-up can be the same offer in another region: it costs the
    same, is named with its region, and is not described as 'a higher price for the same work'."""
    res = plan_training(TrainPlanRequest(model="llama-3.1-8b", tokens=1e12, limit=6, all_rows=True),
                        Catalog.load(use_store=False))
    best = res.plans[0]
    twins = [p for p in res.plans[1:4] if abs(p.cost_usd - best.cost_usd) < 0.5]
    assert twins, [round(p.cost_usd) for p in res.plans[:4]]
    for other in twins:
        line = next(w for w in res.why if w.startswith(f"#{other.rank} {other.provider_name} "))
        assert "costs the same" in line and "higher price" not in line and "$0 more" not in line, line
        if (other.provider, other.gpu) == (best.provider, best.gpu):
            assert other.region in line, line


def test_unpublished_cluster_size_is_flagged(baseline):
    for p in baseline.plans:
        if p.nodes > 1 and p.offer.max_nodes is None:
            assert any("publishes no cluster size" in n for n in p.risk_notes), (p.provider, p.nodes)


def test_every_plan_bills_a_start_and_a_fine_tune_downloads_its_base_weights(catalog):
    """Boot, image pull and launch are billed on every node; a fine-tune also downloads the base
    weights, so its start is longer where hosts are slower to the internet."""
    from gpuplan.planner.hosts import training_start_hours

    pre = plan_training(TrainPlanRequest(model="llama-3.1-8b", tokens=1e9, limit=50), catalog)
    lora = plan_training(TrainPlanRequest(model="llama-3.1-8b", method="lora", tokens=2e8, limit=50), catalog)
    for result, download_gb in ((pre, 0.0), (lora, 8.03e9 * 2 / 1e9)):
        assert result.plans
        for p in result.plans:
            kind = catalog.provider_record(p.provider).kind
            assert p.assumptions["start_hours"] == pytest.approx(training_start_hours(kind, download_gb), rel=0.01)
            assert p.wall_hours >= p.assumptions["steady_state_hours"] * 0.999
    assert training_start_hours("marketplace", 16) > training_start_hours("hyperscaler", 16) > \
        training_start_hours("hyperscaler", 0) > 0


def test_a_layout_near_the_memory_limit_names_its_fallback(catalog, baseline):
    from gpuplan.catalog.gpus import get_gpu
    from gpuplan.planner.train_plan import TIGHT_MEMORY_SHARE

    tight = 0
    for p in baseline.plans:
        fill = p.assumptions["memory_per_gpu_gb"] * 1e9 / get_gpu(p.gpu).memory_bytes
        noted = any("of each GPU's memory" in n for n in p.risk_notes)
        assert noted == (fill > TIGHT_MEMORY_SHARE), (p.provider, p.gpu, fill)
        tight += noted
    assert tight  # the main job's #1 (8B, micro-batch 4, no recompute) sits at ~95% of an H100


def test_why_lines_explain_a_cheaper_faster_runner_up_by_its_band(baseline):
    """#2 (the GB200 rack) is cheaper on average and faster: it read 'cheaper ... but finishes sooner'."""
    best = baseline.plans[0]
    for p in baseline.plans[1:3]:
        line = next(w for w in baseline.why if w.startswith(f"#{p.rank} "))
        if p.cost_usd < best.cost_usd:
            assert "ranks lower at the 75th percentile" in line and "but finishes" not in line, line


def test_without_a_deadline_plans_in_time_at_the_ranking_quantile_come_first(baseline):
    # The cost is ranked at the 75th percentile; "finishes within the default 30 days" is judged there
    # too, from the same time sigmas each plan reports: a plan that makes it only on average ranks after.
    late = [_p75_wall_h(p) > 30 * 24 * 1.001 for p in sorted(baseline.plans, key=lambda p: p.rank)]
    assert any(late) and not all(late)
    first_late = late.index(True)
    assert all(late[first_late:]), "a plan in time at p75 ranks below one that is late at p75"
    # Among them, a plan late at p75 though in time on average: it exists, and it is not first.
    assert any(p.wall_hours <= 30 * 24 and _p75_wall_h(p) > 30 * 24 for p in baseline.plans)


def test_packed_examples_make_a_long_sequence_fine_tune_cheaper_and_are_stated(catalog):
    base = dict(model="llama-3.1-8b", method="lora", tokens=2e9, seq_len=8192, limit=3)
    doc = plan_training(TrainPlanRequest(**base), catalog)
    packed = plan_training(TrainPlanRequest(**base, sample_len=600), catalog)
    assert packed.summary["sample_len"] == 600 and "sample_len" not in doc.summary
    assert packed.summary["training_flops"] < doc.summary["training_flops"]
    assert packed.plans[0].rank_cost_usd < doc.plans[0].rank_cost_usd
    with pytest.raises(Exception, match="sample_len"):
        plan_training(TrainPlanRequest(**{**base, "sample_len": 9000}), catalog)


def test_a_pytorch_stack_plans_fp8_slower_and_bf16_the_same(catalog):
    """--framework pytorch reaches the planner: the same offer's FP8 plan takes longer (the fitted share of Megatron's
    FP8 efficiency), its bf16 plan only by the attention on H100 and not at all on A100, and the summary names the
    stack the plan was timed for."""
    def plan(precision, framework, gpu="H100", providers=("nebius",), max_gpus=8):
        r = TrainPlanRequest(model="llama-3.1-8b", tokens=1e10, precision=precision, framework=framework,
                             constraints=Constraints(providers=list(providers), gpus=[gpu], max_gpus=max_gpus),
                             limit=50)
        return plan_training(r, catalog)

    # One node each, so both stacks plan the same offers (their picked layouts may differ: each stack's own best).
    mega, torch = plan("fp8", "megatron"), plan("fp8", " PyTorch ")
    assert mega.summary["framework"] == "megatron" and torch.summary["framework"] == "pytorch"
    key = lambda p: (p.provider, p.instance_type, p.region, p.pricing, p.nodes)  # noqa: E731
    m = {key(p): p for p in mega.plans}
    pairs = [(m[key(p)], p) for p in torch.plans if key(p) in m]
    assert pairs and all(t.wall_hours > mm.wall_hours * 1.03 for mm, t in pairs)
    # bf16 on H100: the same GEMMs, but PyTorch's FlashAttention-2 attention: slower, by less than FP8's gap
    b_mega, b_torch = plan("bf16", "megatron"), plan("bf16", "pytorch")
    m = {key(p): p for p in b_mega.plans}
    pairs = [(m[key(p)], p) for p in b_torch.plans if key(p) in m]
    assert pairs and all(mm.wall_hours < t.wall_hours < mm.wall_hours * 1.25 for mm, t in pairs)
    # on A100 both stacks run FlashAttention-2: the bf16 plans do not move
    a_mega, a_torch = (plan("bf16", "megatron", "A100-80GB", (), None), plan("bf16", "pytorch", "A100-80GB", (), None))
    assert a_mega.plans
    assert [(key(p), round(p.cost_usd, 6)) for p in a_mega.plans] == [(key(p), round(p.cost_usd, 6)) for p in a_torch.plans]
    with pytest.raises(ValueError, match="framework"):
        TrainPlanRequest(model="llama-3.1-8b", tokens=1e10, framework="jax")


def test_a_moe_plan_says_which_moe_stack_it_timed(catalog, baseline):
    """A MoE plan is timed as the exported Megatron launch runs it (launches per local expert) and says so, naming the
    faster fused stack of NVIDIA's Blackwell recipes and how to time it; a dense plan has no such line."""
    r = TrainPlanRequest(model="qwen3-30b-a3b", tokens=1e10, constraints=Constraints(providers=["nebius"]), limit=5)
    moe = plan_training(r, catalog)
    assert moe.plans and "--fused-moe" in moe.assumptions["moe_stack"]
    assert "moe_stack" not in baseline.assumptions
