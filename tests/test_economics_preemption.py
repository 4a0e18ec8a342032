"""Interruption hazards, restart delays and job-level MTBF."""
from __future__ import annotations

import math

import numpy as np
import pytest

from gpuplan.economics import preemption as pr
from gpuplan.errors import UnknownNameError, UsageError


@pytest.mark.parametrize("kind", pr.PROVIDER_KINDS)
@pytest.mark.parametrize("pricing", pr.PRICING_TYPES)
def test_every_kind_and_pricing_has_a_default(kind, pricing):
    h = pr.node_hazard(kind, pricing)
    assert h.low <= h.rate_per_node_hour <= h.high
    assert h.source and h.label
    assert pr.restart_hours(kind, pricing) >= pr.base_restart_hours() > 0
    assert 0 < pr.billed_restart_fraction(kind, pricing) <= 1


def test_datacenter_on_demand_is_not_preemptible_but_spot_is():
    assert pr.interruption_rate_per_node_hour("hyperscaler", "on_demand") == 0.0
    assert pr.interruption_rate_per_node_hour("neocloud", "reserved") == 0.0
    spot = pr.node_hazard("hyperscaler", "spot")
    assert spot.label == "V100-era AWS"
    # formulas.md §8: per-instance mean lifetime 1-10 h; frequent-preemption traces 0.55-0.61/node-hour
    assert 1.0 <= spot.mean_node_lifetime_h <= 10.0
    assert 0.55 <= spot.high <= 0.61
    # spot capacity must wait longer to restart than held capacity
    assert pr.restart_hours("hyperscaler", "spot") > pr.restart_hours("hyperscaler", "on_demand")


def test_host_churn_on_peer_capacity():
    assert pr.interruption_rate_per_node_hour("decentralized", "on_demand") > 0
    assert pr.interruption_rate_per_node_hour("marketplace", "community") > 0
    assert pr.gpu_hours_per_failure("marketplace") < pr.gpu_hours_per_failure("hyperscaler")


def test_hardware_mtbf_matches_formulas():
    # formulas.md §7: M = G_fail / n_gpu: 1,024 GPUs -> ~49 h; 16,384 -> ~3 h
    assert pr.job_mtbf_hours(128, 1024) == pytest.approx(48.8, abs=0.1)
    assert pr.job_mtbf_hours(2048, 16384) == pytest.approx(3.05, abs=0.01)
    assert pr.job_mtbf_hours(2048, 16384, gpu_hours_per_failure_=1.4e4) == pytest.approx(1.4e4 / 16384)


def test_job_mtbf_combines_preemption_and_hardware():
    lam, n, g, gf = 0.3, 4, 32, 5e4
    unbatched = pr.job_mtbf_hours(n, g, lam, gf, batched=False)
    assert unbatched == pytest.approx(1 / (n * lam + g / gf))
    batched = pr.job_mtbf_hours(n, g, lam, gf)
    b = 1 + (2.11 - 1) * (1 - 1 / n)
    assert batched == pytest.approx(1 / (n * lam / b + g / gf))
    assert batched > unbatched
    # one node: nothing to batch
    assert pr.job_mtbf_hours(1, 8, lam, gf) == pytest.approx(pr.job_mtbf_hours(1, 8, lam, gf, batched=False))


def test_vectorised_mtbf():
    nodes = np.array([1, 2, 4, 8, 16])
    m = pr.job_mtbf_hours(nodes, nodes * 8, 0.2)
    assert isinstance(m, np.ndarray) and np.all(np.diff(m) < 0)


def test_overrides():
    assert pr.interruption_rate_per_node_hour("hyperscaler", "spot", override=0.05) == 0.05
    assert pr.restart_hours("hyperscaler", "spot", override=1.5) == 1.5
    fm = pr.failure_model("hyperscaler", "spot", 4, 32, rate_per_node_hour=0.1, restart_h=0.5,
                          gpu_hours_per_failure_=1e4)
    assert fm["interruption_label"] == "user"
    assert fm["job_mtbf_h"] == pytest.approx(float(pr.job_mtbf_hours(4, 32, 0.1, 1e4)))
    assert fm["restart_h"] == 0.5


def test_names_are_forgiving_and_unknown_names_fail():
    assert pr.node_hazard("Hyperscaler", "on-demand").pricing == "on_demand"
    with pytest.raises(UnknownNameError):
        pr.node_hazard("cloudy", "spot")
    with pytest.raises(UnknownNameError):
        pr.node_hazard("hyperscaler", "free")


@pytest.mark.parametrize("call", [
    lambda: pr.job_mtbf_hours(0, 8),
    lambda: pr.job_mtbf_hours(4, 2),
    lambda: pr.job_mtbf_hours(1, 8, -0.1),
    lambda: pr.job_mtbf_hours(1, 8, float("nan")),
    lambda: pr.job_mtbf_hours(1, 8, 1e6),
    lambda: pr.job_mtbf_hours(1, 8, 0.1, gpu_hours_per_failure_=0),
    lambda: pr.interruption_rate_per_node_hour("hyperscaler", "spot", override=float("inf")),
    lambda: pr.restart_hours("hyperscaler", "spot", override=-1),
])
def test_hostile_inputs(call):
    with pytest.raises(UsageError) as e:
        call()
    assert "\n" not in str(e.value)


def test_mtbf_never_zero_or_nan():
    m = pr.job_mtbf_hours(np.array([1, 16384]), np.array([1, 131072]), np.array([0.0, 60.0]))
    assert np.all(np.isfinite(m)) and np.all(m > 0)
    assert math.isfinite(pr.job_mtbf_hours(1, 1))
