"""Monte Carlo vs Daly: error grid and timing.

Run: python benchmarks/bench_simulation.py [--trials 4000]
Prints, for a grid of (M, delta, tau, R), the simulated mean T_wall/T_s, Daly's analytical
factor, the exact segmented expectation, and the relative errors; then the time to simulate
the planner's top 20 plans (2,000 trials each) and single runs of 2,000 and 10,000 trials.
"""
from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

from gpuplan.economics import checkpoint as ck
from gpuplan.economics.simulation import simulate_job, simulate_plans

MIN = 1 / 60.0


def error_grid(trials: int) -> list[dict]:
    rows = []
    for m, d, x, r in itertools.product([0.15, 2.0, 24.0, 200.0], [0.5 * MIN, 5 * MIN], [0.5, 1.0, 2.0],
                                        [2 * MIN, 0.5]):
        tau = ck.daly_interval_h(d, m) * x
        ts = max(200.0, 50 * tau)
        f = ck.daly_wall_factor(tau, d, r, m)
        if f > 50:
            continue
        sim = simulate_job(ts, tau, d, r, m, trials=trials, seed=7)
        exact = ck.expected_wall_hours(ts, tau, d, r, m) / ts
        mean = sim.wall_h.mean() / ts
        rows.append(dict(M_h=m, delta_min=d * 60, tau_min=tau * 60, R_min=r * 60, daly=f, exact=exact, sim=mean,
                         p90=np.percentile(sim.wall_h, 90) / ts, err_daly=(mean - f) / f,
                         err_exact=(mean - exact) / exact))
    return rows


def timing() -> dict[str, float]:
    rng = np.random.default_rng(0)
    ts, m = rng.uniform(10, 2000, 20), rng.uniform(0.5, 100, 20)
    d = np.full(20, 2 * MIN)
    tau = ck.daly_interval_h(d, m)
    simulate_plans(ts, tau, d, 0.2, m, trials=2000)
    out = {}
    best = []
    for _ in range(5):
        t0 = time.perf_counter()
        simulate_plans(ts, tau, d, 0.2, m, trials=2000, seed=1)
        best.append(time.perf_counter() - t0)
    out["top20_x_2000_trials_ms"] = min(best) * 1e3
    for n in (2000, 10000):
        best = []
        for _ in range(5):
            t0 = time.perf_counter()
            simulate_job(500.0, 0.3, 1 * MIN, 0.2, 3.0, trials=n, seed=1)
            best.append(time.perf_counter() - t0)
        out[f"one_job_{n}_trials_ms"] = min(best) * 1e3
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=4000)
    args = ap.parse_args()
    rows = error_grid(args.trials)
    print(f"{'M_h':>7} {'d_min':>6} {'tau_min':>8} {'R_min':>6} {'daly':>8} {'exact':>8} {'sim':>8} {'p90':>8} "
          f"{'err_daly':>9} {'err_exact':>9}")
    for r in rows:
        print(f"{r['M_h']:7.2f} {r['delta_min']:6.1f} {r['tau_min']:8.2f} {r['R_min']:6.1f} {r['daly']:8.4f} "
              f"{r['exact']:8.4f} {r['sim']:8.4f} {r['p90']:8.4f} {r['err_daly']:+9.2%} {r['err_exact']:+9.2%}")
    ed = np.abs([r["err_daly"] for r in rows])
    ee = np.abs([r["err_exact"] for r in rows])
    print(f"\n{len(rows)} cells, {args.trials} trials each: |sim - Daly| / Daly max {ed.max():.2%}, mean {ed.mean():.2%}; "
          f"|sim - exact| / exact max {ee.max():.2%}, mean {ee.mean():.2%}")
    for k, v in timing().items():
        print(f"{k}: {v:.2f} ms")


if __name__ == "__main__":
    main()
