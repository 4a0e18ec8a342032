"""Run cost on an offer: nodes, billing increments, terms, storage, egress; spot vs on-demand."""
from __future__ import annotations

import datetime as dt

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplan.catalog.records import Offer, Provider
from gpuplan.economics import run_cost as rc
from gpuplan.errors import UsageError


def test_whole_nodes():
    assert rc.nodes_needed(12, 8) == 2
    assert rc.nodes_needed(16, 8) == 2
    assert rc.nodes_needed(1, 8) == 1
    assert np.array_equal(rc.nodes_needed(np.array([1, 9, 64]), 8), [1, 2, 8])


def test_exact_billing_per_segment():
    # hourly billing: 1.2 h + 0.1 h -> 2 h + 1 h
    assert rc.billed_hours([1.2, 0.1], 3600) == pytest.approx(3.0)
    # per-second with a 60 s minimum: a 10 s segment bills a minute
    assert rc.billed_hours([10 / 3600], 1, 60) == pytest.approx(60 / 3600)
    # per-minute: 61 s bills 2 minutes
    assert rc.billed_hours([61 / 3600], 60) == pytest.approx(120 / 3600)
    assert rc.billed_hours([2.0], 3600) == pytest.approx(2.0)  # exact multiples are not rounded up


def test_expected_billing_with_segments():
    assert rc.expected_billed_hours(10.2, 3600) == pytest.approx(11.0)
    assert rc.expected_billed_hours(10.2, 3600, 0, 5) == pytest.approx(11.0 + 4 * 0.5)
    assert rc.expected_billed_hours(10.2, 1) == pytest.approx(10.2, abs=1e-3)
    # unknown increment (None / NaN) is hourly
    assert rc.expected_billed_hours(10.2, float("nan")) == pytest.approx(11.0)


def test_run_cost_breakdown_spot_segments_and_idle_gpus():
    r = rc.run_cost(price_per_node_hour_usd=20.0, gpus=12, gpus_per_node=8, wall_hours=10.2, pricing="spot",
                    billing_increment_s=3600, interruptions=3, checkpoint_bytes=140e9, checkpoints_kept=2,
                    egress_gb=140, egress_usd_per_gb=0.09)
    assert r["nodes"] == 2 and r["gpus_billed"] == 16
    assert r["billed_segments"] == 4
    assert r["billed_hours"] == pytest.approx(11.0 + 3 * 0.5)
    assert r["compute_usd"] == pytest.approx(2 * 20.0 * 12.5)
    assert r["storage_usd"] == pytest.approx(280 * 0.023 * 10.2 / 730)
    assert r["egress_usd"] == pytest.approx(140 * 0.09)
    assert r["total_usd"] == pytest.approx(r["compute_usd"] + r["storage_usd"] + r["egress_usd"])
    assert any("idle" in n for n in r["notes"])
    od = rc.run_cost(price_per_node_hour_usd=20.0, gpus=16, gpus_per_node=8, wall_hours=10.2,
                     billing_increment_s=3600, interruptions=3)
    assert od["billed_segments"] == 1  # hardware restarts keep the same instances


def test_reserved_term_eligibility():
    short = rc.run_cost(price_per_node_hour_usd=10, gpus=8, gpus_per_node=8, wall_hours=100, pricing="reserved",
                        commitment_term_h=720)
    assert not short["eligible"] and "720" in short["reason"]
    paid = rc.run_cost(price_per_node_hour_usd=10, gpus=8, gpus_per_node=8, wall_hours=100, pricing="reserved",
                       commitment_term_h=720, allow_partial_term=True)
    assert paid["eligible"] and paid["billed_hours"] == 720
    long = rc.run_cost(price_per_node_hour_usd=10, gpus=8, gpus_per_node=8, wall_hours=800.5, pricing="reserved",
                       commitment_term_h=720, billing_increment_s=3600)
    assert long["eligible"] and long["billed_hours"] == pytest.approx(801)


def test_unknown_egress_price_is_noted_not_guessed():
    r = rc.run_cost(price_per_node_hour_usd=10, gpus=8, gpus_per_node=8, wall_hours=5, egress_gb=100)
    assert r["egress_usd"] == 0 and any("egress price unknown" in n for n in r["notes"])


def test_run_cost_for_offer_uses_provider_billing():
    offer = Offer(provider="aws", instance_type="p5.48xlarge", gpu="H100-SXM", gpus_per_node=8, region="us-east-1",
                  pricing="on_demand", price_per_hour_usd=55.04, price_per_gpu_hour_usd=6.88,
                  as_of=dt.date(2025, 6, 15), source="test", confidence="primary")
    prov = Provider(id="aws", name="AWS", kind="hyperscaler", billing_increment_s=1, minimum_billing_s=60,
                    egress_usd_per_gb=0.09)
    r = rc.run_cost_for_offer(offer, prov, gpus=64, wall_hours=24.0, egress_gb=140)
    assert r["nodes"] == 8
    assert r["compute_usd"] == pytest.approx(8 * 55.04 * 24.0, rel=1e-6)
    assert r["egress_usd"] == pytest.approx(12.6)
    assert "S3" in r["assumptions"]["storage_source"]


def test_cost_arrays_match_scalar_and_handle_unknown_increment():
    out = rc.expected_cost_arrays(np.array([10.0, 20.0]), np.array([1, 2]), np.array([5.5, 5.5]),
                                  np.array([3600, np.nan]), segments=np.array([1, 3]), storage_usd=np.array([1.0, 2.0]))
    assert out["billed_hours"] == pytest.approx([6.0, 6.0 + 2 * 0.5])
    assert out["total_usd"] == pytest.approx([61.0, 2 * 20 * 7 + 2.0])
    assert np.all(out["rounding_usd"] >= 0)


def test_cost_arrays_thousands_of_offers_fast():
    import time

    n = 20000
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    out = rc.expected_cost_arrays(rng.uniform(1, 100, n), rng.integers(1, 64, n), rng.uniform(1, 1000, n),
                                  rng.choice([1.0, 60.0, 3600.0, np.nan], n), rng.choice([0.0, 60.0], n),
                                  rng.uniform(1, 5, n))
    assert time.perf_counter() - t0 < 0.5
    assert out["total_usd"].shape == (n,)


@settings(max_examples=150, deadline=None)
@given(price=st.floats(0.01, 1e4), price2=st.floats(0.01, 1e4), wall=st.floats(1e-3, 1e5),
       wall2=st.floats(1e-3, 1e5), inc=st.sampled_from([1.0, 60.0, 3600.0]),
       minimum=st.sampled_from([0.0, 60.0, 3600.0]), segs=st.floats(1, 50), nodes=st.integers(1, 512))
def test_properties_monotone_and_never_below_exact(price, price2, wall, wall2, inc, minimum, segs, nodes):
    out = rc.expected_cost_arrays(price, nodes, wall, inc, minimum, segs)
    exact = price * nodes * wall
    assert float(out["compute_usd"]) >= exact * (1 - 1e-12)
    lo_p, hi_p = sorted((price, price2))
    lo_w, hi_w = sorted((wall, wall2))
    assert float(rc.expected_cost_arrays(hi_p, nodes, wall, inc, minimum, segs)["compute_usd"]) >= \
        float(rc.expected_cost_arrays(lo_p, nodes, wall, inc, minimum, segs)["compute_usd"])
    assert float(rc.expected_cost_arrays(price, nodes, hi_w, inc, minimum, segs)["compute_usd"]) >= \
        float(rc.expected_cost_arrays(price, nodes, lo_w, inc, minimum, segs)["compute_usd"]) * (1 - 1e-12)


@settings(max_examples=100, deadline=None)
@given(segments=st.lists(st.floats(1e-4, 1e3), min_size=1, max_size=20), inc=st.sampled_from([1.0, 60.0, 3600.0]),
       minimum=st.sampled_from([0.0, 60.0]))
def test_property_exact_billing_never_below_usage(segments, inc, minimum):
    billed = rc.billed_hours(segments, inc, minimum)
    assert billed >= sum(segments) * (1 - 1e-12)
    assert billed <= sum(segments) + len(segments) * max(inc, minimum) / 3600 + 1e-9


# ----------------------------------------------------------------------------- spot decision
def test_spot_pays_when_cheap_enough():
    s = rc.spot_vs_on_demand(200, 1, 8, 8.0, 30.0, delta_h=1 / 60, kind="hyperscaler")
    assert s["choose"] == "spot"
    assert s["spot"]["cost_usd"] < s["on_demand"]["cost_usd"]
    # decision rule p_spot f_spot < p_od f_od
    assert (8.0 * s["spot"]["wall_factor"] < 30.0 * s["on_demand"]["wall_factor"])
    ratio = s["break_even_price_ratio"]
    assert 8.0 / 30.0 < ratio < 1
    lo, hi = s["spot_pays_for_interval_h"]
    assert lo < s["spot"]["interval_h"] < hi
    # at the break-even interruption rate the costs match
    lam = s["break_even_interruptions_per_node_hour"]
    at = rc.spot_vs_on_demand(200, 1, 8, 8.0, 30.0, delta_h=1 / 60, spot_rate_per_node_hour=lam)
    assert at["spot"]["cost_usd"] == pytest.approx(at["on_demand"]["cost_usd"], rel=1e-3)


def test_spot_loses_on_big_clusters_with_slow_saves():
    s = rc.spot_vs_on_demand(100, 32, 256, 12.0, 30.0, delta_h=300 / 3600)
    assert s["choose"] == "on_demand"
    assert s["spot_pays_for_interval_h"] is None
    assert any("frequent-preemption" in n for n in s["notes"])


def test_checkpoint_on_notice_helps_and_deadline_risk():
    no_notice = rc.spot_vs_on_demand(100, 4, 32, 12.0, 30.0, delta_h=1 / 60, deadline_h=170)
    notice = rc.spot_vs_on_demand(100, 4, 32, 12.0, 30.0, delta_h=1 / 60, notice_s=120, deadline_h=170)
    assert notice["spot"]["checkpoint_on_notice"] and not no_notice["spot"]["checkpoint_on_notice"]
    assert notice["spot"]["wall_factor"] < no_notice["spot"]["wall_factor"]
    assert 0.0 <= notice["deadline"]["spot_p_late"] <= 1.0
    tight = rc.spot_vs_on_demand(100, 4, 32, 12.0, 30.0, delta_h=1 / 60, deadline_h=101)
    assert tight["deadline"]["spot_p_late"] > 0.9
    assert any("Uniform Progress" in n for n in tight["notes"])


@pytest.mark.parametrize("call", [
    lambda: rc.run_cost(price_per_node_hour_usd=-1, gpus=8, gpus_per_node=8, wall_hours=1),
    lambda: rc.run_cost(price_per_node_hour_usd=1, gpus=0, gpus_per_node=8, wall_hours=1),
    lambda: rc.run_cost(price_per_node_hour_usd=1, gpus=8, gpus_per_node=8, wall_hours=float("nan")),
    lambda: rc.run_cost(price_per_node_hour_usd=1, gpus=8, gpus_per_node=8, wall_hours=1e12),
    lambda: rc.run_cost(price_per_node_hour_usd=1, gpus=8, gpus_per_node=8, wall_hours=1, pricing="cheap"),
    lambda: rc.expected_cost_arrays([1.0, -2.0], [1, 1], [1.0, 1.0], [3600, 3600]),
    lambda: rc.expected_billed_hours(1.0, 3600, 0, 0.5),
    lambda: rc.spot_vs_on_demand(-5, 1, 8, 1, 2, delta_h=0.01),
    lambda: rc.storage_cost_usd(1e9, 3, float("inf")),
])
def test_hostile_inputs(call):
    with pytest.raises(UsageError) as e:
        call()
    assert "\n" not in str(e.value)
