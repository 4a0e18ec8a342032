"""Checkpoint math against Daly (2006) and the worked examples of formulas.md §7."""
from __future__ import annotations

import math

import numpy as np
import pytest

from gpuplan.economics import checkpoint as ck
from gpuplan.errors import UsageError

MIN = 1 / 60.0

# Daly (2006) paper: optimum interval for delta = 5 min at three MTBFs (minutes).
PAPER = [(24.0, 116.7, 117), (6.0, 56.7, 57), (0.25, 9.14, 9.1)]

# formulas.md §7 worked examples: delta_h, R_h, M_h, Young tau (min), Daly tau (min), T_wall/T_s,
# first-order overhead, and the tolerance implied by the digits printed.
WORKED = [
    ("Daly Fig. 3", 5 * MIN, 10 * MIN, 24.0, 120.0, 116.7, 1.096, 0.092, 0.0006),
    ("Llama-3-like", 1 * MIN, 10 * MIN, 3.09, 19.3, 18.6, 1.173, 0.160, 0.0006),
    ("slow save", 5 * MIN, 10 * MIN, 3.09, 43.1, 39.8, 1.344, 0.300, 0.0006),
    ("1.5 failures/week", 1 * MIN, 30 * MIN, 112.0, 116.0, 115.0, 1.022, 0.022, 0.0006),
    ("1xV100 spot", 1 * MIN, 5 * MIN, 2.0, 15.5, 14.8, 1.190, 0.175, 0.0006),
    ("32xp3.2xlarge spot", 0.5 * MIN, 2 * MIN, 8.6 * MIN, 2.9, 2.6, 1.81, 0.60, 0.006),
]


@pytest.mark.parametrize("mtbf_h,computed_min,paper_min", PAPER)
def test_daly_interval_matches_paper(mtbf_h, computed_min, paper_min):
    tau_min = ck.daly_interval_h(5 * MIN, mtbf_h) * 60
    assert tau_min == pytest.approx(computed_min, abs=0.05)
    assert tau_min == pytest.approx(paper_min, rel=0.01)


@pytest.mark.parametrize("name,d,r,m,young,daly,factor,overhead,tol", WORKED, ids=[w[0] for w in WORKED])
def test_worked_examples_table(name, d, r, m, young, daly, factor, overhead, tol):
    assert ck.young_interval_h(d, m) * 60 == pytest.approx(young, abs=0.06 if young < 100 else 0.5)
    tau = ck.daly_interval_h(d, m)
    assert tau * 60 == pytest.approx(daly, abs=0.06 if daly < 100 else 0.5)
    assert ck.daly_wall_factor(tau, d, r, m) == pytest.approx(factor, abs=tol)
    assert ck.first_order_overhead(tau, d, r, m) == pytest.approx(overhead, abs=tol)


def test_daly_optimum_is_a_minimum():
    d, r, m = 2 * MIN, 10 * MIN, 5.0
    tau = ck.daly_interval_h(d, m)
    grid = np.linspace(tau * 0.3, tau * 3, 2001)
    f = ck.daly_wall_factor(grid, d, r, m)
    best = grid[np.argmin(f)]
    assert best == pytest.approx(tau, rel=0.02)


def test_restart_does_not_move_optimum_but_scales_factor():
    d, m = 1 * MIN, 4.0
    tau = ck.daly_interval_h(d, m)
    f0, f1 = ck.daly_wall_factor(tau, d, 0.0, m), ck.daly_wall_factor(tau, d, 1.0, m)
    assert f1 / f0 == pytest.approx(math.exp(1.0 / m))


def test_large_delta_interval_is_mtbf():
    assert ck.daly_interval_h(3.0, 1.0) == 1.0


def test_no_failures():
    assert ck.daly_interval_h(0.1, math.inf) == math.inf
    assert ck.daly_wall_factor(math.inf, 0.1, 0.2, math.inf) == 1.0
    assert ck.daly_wall_factor(2.0, 0.1, 0.2, math.inf) == pytest.approx(2.1 / 2.0)


def test_vectorised_matches_scalar():
    d = np.array([1 * MIN, 5 * MIN, 10 * MIN])
    m = np.array([3.0, 24.0, 100.0])
    tau = ck.daly_interval_h(d, m)
    f = ck.daly_wall_factor(tau, d, 0.1, m)
    assert isinstance(f, np.ndarray)
    for i in range(3):
        assert f[i] == pytest.approx(ck.daly_wall_factor(float(tau[i]), float(d[i]), 0.1, float(m[i])))


def test_expected_wall_hours_converges_to_daly_for_long_jobs():
    d, r, m = 1 * MIN, 10 * MIN, 3.09
    tau = ck.daly_interval_h(d, m)
    exact = ck.expected_wall_hours(1000.0, tau, d, r, m) / 1000.0
    assert exact == pytest.approx(ck.daly_wall_factor(tau, d, r, m), rel=1e-3)


def test_checkpoint_sizes():
    assert ck.checkpoint_bytes(70e9) == 70e9 * 14
    assert ck.checkpoint_bytes(70e9, weights_only=True) == 70e9 * 2
    assert ck.checkpoint_bytes(70e9, "lora") == pytest.approx(70e9 * 0.01 * 14)
    assert ck.checkpoint_bytes(70e9, "qlora", trainable_params=1e8) == 1e8 * 14
    with pytest.raises(UsageError):
        ck.checkpoint_bytes(70e9, "dpo")


def test_write_seconds_node_vs_storage_bound():
    size = 980e9  # 70B resumable
    one = ck.write_seconds(size, 1)
    assert one == pytest.approx(size / 2.5e9 + 10)  # per-node link bound
    many = ck.write_seconds(size, 1024)
    assert many == pytest.approx(size / 40e9 + 10)  # aggregate store bound
    assert ck.write_seconds(size, 8, storage_gb_per_s=2000, node_gb_per_s=25) < many
    assert ck.write_seconds(0.0, 4) == 0.0


def test_checkpoint_on_notice():
    assert ck.spot_notice_seconds("aws") == 120
    assert ck.spot_notice_seconds("gcp") == 30
    assert ck.spot_notice_seconds("vast") is None
    assert ck.fits_notice(60, 120) and not ck.fits_notice(60, 30) and not ck.fits_notice(1, None)
    d, r, m = 1 * MIN, 0.2, 50.0
    tau = ck.daly_interval_h(d, m)
    base = ck.daly_wall_factor(tau, d, r, m)
    assert ck.wall_factor_with_notice(tau, d, r, m, 0.0) == pytest.approx(base)
    assert ck.wall_factor_with_notice(tau, d, r, m, 0.5) == pytest.approx(base / (1 - 0.5 * (r + d)))
    assert ck.wall_factor_with_notice(tau, d, r, m, 10.0) == math.inf


def test_checkpoint_plan_report():
    rep = ck.checkpoint_plan(70e9, 16, mtbf_h=20.0, restart_h=0.2)
    assert rep["daly_interval_h"] < rep["young_interval_h"]
    assert rep["overhead"] == pytest.approx(rep["wall_factor"] - 1)


@pytest.mark.parametrize("call", [
    lambda: ck.daly_interval_h(-1, 5),
    lambda: ck.daly_interval_h(0.1, 0),
    lambda: ck.daly_interval_h(float("nan"), 5),
    lambda: ck.daly_wall_factor(1, 0.1, 0.1, -3),
    lambda: ck.daly_wall_factor(0, 0.1, 0.1, 3),
    lambda: ck.write_seconds(1e12, 0),
    lambda: ck.write_seconds(float("inf"), 1),
    lambda: ck.checkpoint_bytes(1e20),
    lambda: ck.checkpoint_bytes("seventy"),
    lambda: ck.daly_interval_h(np.array([0.1, -0.1]), 5.0),
])
def test_hostile_inputs_raise_one_line_usage_error(call):
    with pytest.raises(UsageError) as e:
        call()
    assert "\n" not in str(e.value)
