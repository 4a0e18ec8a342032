"""Monte Carlo of failures and checkpoints against Daly's analytical expectation."""
from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pytest

from gpuplan.economics import checkpoint as ck
from gpuplan.economics.simulation import simulate_job, simulate_plans, simulate_wall_hours
from gpuplan.errors import UsageError

MIN = 1 / 60.0
# Grid of (M, delta, tau multiplier, R): healthy to frequent-preemption regimes, intervals at,
# below and above Daly's optimum.
MTBF_H = [0.15, 2.0, 24.0, 200.0]
DELTA_H = [0.5 * MIN, 5 * MIN]
TAU_X = [0.5, 1.0, 2.0]
RESTART_H = [2 * MIN, 0.5]


def _grid():
    for m, d, x, r in itertools.product(MTBF_H, DELTA_H, TAU_X, RESTART_H):
        tau = ck.daly_interval_h(d, m) * x
        ts = max(200.0, 50 * tau)  # many intervals: Daly's T_s/tau treats the count as real
        if ck.daly_wall_factor(tau, d, r, m) <= 50:  # beyond: a job that barely progresses (error test below)
            yield m, d, tau, r, ts


@pytest.mark.parametrize("m,d,tau,r,ts", list(_grid()))
def test_simulation_mean_matches_daly_within_5_percent(m, d, tau, r, ts):
    f = ck.daly_wall_factor(tau, d, r, m)
    sim = simulate_job(ts, tau, d, r, m, trials=4000, seed=7)
    mean_overhead_sim = sim.wall_h.mean() / ts
    assert mean_overhead_sim == pytest.approx(f, rel=0.05)
    # and against the exact segmented expectation, tighter
    assert sim.wall_h.mean() == pytest.approx(ck.expected_wall_hours(ts, tau, d, r, m), rel=0.02)


def test_deterministic_for_a_seed_and_different_across_seeds():
    a = simulate_wall_hours(100, 1.0, 0.02, 0.2, 5.0, trials=500, seed=3)
    b = simulate_wall_hours(100, 1.0, 0.02, 0.2, 5.0, trials=500, seed=3)
    c = simulate_wall_hours(100, 1.0, 0.02, 0.2, 5.0, trials=500, seed=4)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_no_failures_is_deterministic_and_exact():
    sim = simulate_job(10.0, 3.0, 0.1, 0.2, math.inf, trials=10)
    # 3 full intervals + 1 h remainder, each with a save
    assert np.allclose(sim.wall_h, 3 * 3.1 + 1.1)
    assert np.all(sim.interruptions == 0)


def test_wall_never_below_useful_plus_saves():
    sim = simulate_job(50.0, 2.0, 0.05, 0.3, 3.0, trials=2000, seed=1)
    assert sim.wall_h.min() >= 50.0 + 25 * 0.05 - 1e-9
    s = sim.summary(price_per_hour_usd=10.0)
    assert s["wall_h_p90"] >= s["wall_h_p50"]
    assert s["cost_usd_p90"] == pytest.approx(s["billed_h_p90"] * 10.0)


def test_clustering_keeps_event_rate_and_widens_spread():
    base = simulate_job(200.0, 1.0, 0.02, 0.3, 2.0, trials=4000, seed=11)
    burst = simulate_job(200.0, 1.0, 0.02, 0.3, 2.0, trials=4000, seed=11, burst_mean=3.0)
    # the same number of interruption events per wall hour, give or take
    rate_base = (base.interruptions / base.wall_h).mean()
    rate_burst = (burst.interruptions / burst.wall_h).mean()
    assert rate_burst == pytest.approx(rate_base, rel=0.15)
    assert burst.interruptions.std() > base.interruptions.std()


def test_unbilled_capacity_wait():
    full = simulate_job(100.0, 1.0, 0.02, 0.5, 2.0, trials=1000, seed=2)
    part = simulate_job(100.0, 1.0, 0.02, 0.5, 2.0, trials=1000, seed=2, billed_restart_fraction=0.3)
    assert np.array_equal(full.wall_h, part.wall_h)
    assert np.all(full.billed_h == full.wall_h)
    assert np.all(part.billed_h <= part.wall_h) and part.billed_h.mean() < full.billed_h.mean()


def test_announced_preemptions_match_analytic():
    d, r, m, rate = 1 * MIN, 0.3, 50.0, 0.5
    tau = ck.daly_interval_h(d, m)
    sim = simulate_job(300.0, tau, d, r, m, trials=4000, seed=5, announced_per_hour=rate)
    assert sim.wall_h.mean() / 300.0 == pytest.approx(ck.wall_factor_with_notice(tau, d, r, m, rate), rel=0.02)


def test_top_20_plans_fast_enough():
    rng = np.random.default_rng(0)
    ts = rng.uniform(10, 2000, 20)
    m = rng.uniform(0.5, 100, 20)
    d = np.full(20, 2 * MIN)
    tau = ck.daly_interval_h(d, m)
    simulate_plans(ts, tau, d, 0.2, m, trials=2000)  # warm up
    t0 = time.perf_counter()
    q = simulate_plans(ts, tau, d, 0.2, m, trials=2000, seed=1)
    elapsed = time.perf_counter() - t0
    assert q.shape == (20, 2) and np.all(q[:, 1] >= q[:, 0])
    assert elapsed < 0.5  # target < 0.1 s; loose bound for a shared CI core (see benchmarks/bench_simulation.py)


@pytest.mark.parametrize("kw", [
    dict(useful_h=-1), dict(useful_h=float("nan")), dict(mtbf_h=0.0), dict(tau_h=0.0),
    dict(restart_h=-0.1), dict(trials=0), dict(trials=2.5), dict(seed=-1), dict(burst_mean=0.5),
    dict(mtbf_h=0.001),  # segment + restart hundreds of MTBFs long: no progress
])
def test_hostile_inputs(kw):
    args = dict(useful_h=10.0, tau_h=1.0, delta_h=0.02, restart_h=0.2, mtbf_h=5.0)
    extra = {k: kw.pop(k) for k in list(kw) if k in ("trials", "seed", "burst_mean")}
    args.update(kw)
    with pytest.raises(UsageError) as e:
        simulate_job(**args, **extra)
    assert "\n" not in str(e.value)


def _brute_force(ts, tau, d, r, m, trials, seed):
    """Event-by-event reference: independent of the vectorised decomposition (Binomial +
    NegativeBinomial + truncated-exponential sums, Gamma for large counts)."""
    rng = np.random.default_rng(seed)
    n_full = int(ts // tau)
    segs = [tau + d] * n_full + ([ts - n_full * tau + d] if ts - n_full * tau > 1e-12 else [])
    out = np.empty(trials)
    for i in range(trials):
        t = 0.0
        for s in segs:
            need = s
            while True:
                x = rng.exponential(m)
                if x >= need:
                    t += need
                    break
                t += x
                need = r + s
        out[i] = t
    return out


@pytest.mark.parametrize("ts,tau,d,r,m", [
    (30.0, 1.0, 0.05, 0.3, 2.0),      # a few failures per run: exact sums
    (40.0, 0.25, 0.01, 0.05, 0.3),    # dozens of failures per run: the Gamma branch
    (12.5, 2.0, 0.1, 0.5, 1.5),       # partial last segment, long interval vs MTBF
])
def test_distribution_matches_event_by_event_reference(ts, tau, d, r, m):
    ref = _brute_force(ts, tau, d, r, m, trials=1500, seed=99)
    sim = simulate_wall_hours(ts, tau, d, r, m, trials=20000, seed=5)
    for q in (10, 50, 90):
        assert np.percentile(sim, q) == pytest.approx(np.percentile(ref, q), rel=0.04)
    assert sim.mean() == pytest.approx(ref.mean(), rel=0.03)
    assert sim.std() == pytest.approx(ref.std(), rel=0.12)


from hypothesis import assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), ts=st.floats(1, 500), tau=st.floats(0.05, 20), d=st.floats(0, 0.2),
       r=st.floats(0, 1), m=st.floats(0.5, 1000))
def test_property_seeded_determinism_and_bounds(seed, ts, tau, d, r, m):
    assume(tau + d + r < 4 * m)  # beyond, the job cannot progress (a UsageError, tested above)
    a = simulate_job(ts, tau, d, r, m, trials=200, seed=seed)
    b = simulate_job(ts, tau, d, r, m, trials=200, seed=seed)
    assert np.array_equal(a.wall_h, b.wall_h) and np.array_equal(a.billed_h, b.billed_h)
    n_saves = math.ceil(ts / tau - 1e-9)
    assert a.wall_h.min() >= ts + (n_saves - 1) * d - 1e-6
    assert np.all(a.billed_h <= a.wall_h + 1e-9)
