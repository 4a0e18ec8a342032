"""The review table: for each scenario of benchmarks/scenarios.json, the #1 plan, why it wins, what
ties with it, and the public reference point it is checked against.

    python benchmarks/review_scenarios.py [--markdown]

The same scenarios are asserted over in tests/test_scenarios.py.
"""
from __future__ import annotations

import json
import pathlib
import sys
import time


def _money(v: float) -> str:
    return f"${v / 1e6:.2f}M" if v >= 1e6 else f"${v / 1e3:.1f}k" if v >= 1e3 else f"${v:.0f}"


def main(argv: list[str]) -> int:
    from gpuplan.catalog.catalog import Catalog
    from gpuplan.display import fmt_hours, region_full
    from gpuplan.planner import plan_serving, plan_training
    from gpuplan.planner.requests import ServePlanRequest, TrainPlanRequest

    scenarios = json.loads((pathlib.Path(__file__).parent / "scenarios.json").read_text())["scenarios"]
    catalog = Catalog.load(use_store=False)
    md = "--markdown" in argv
    if md:
        print("| # | scenario | #1 plan | expected (p10-p90) | why it wins | ties with #1 | checked against |")
        print("|---|---|---|---|---|---|---|")
    for s in scenarios:
        t0 = time.perf_counter()
        train = s["kind"] == "train"
        req = (TrainPlanRequest if train else ServePlanRequest)(**{**s["request"], "limit": 40})
        res = (plan_training if train else plan_serving)(req, catalog)
        dt = time.perf_counter() - t0
        if not res.plans:
            near = res.closest[0] if res.closest else None
            top = "none ranked" + (f"; closest: {near.provider} {near.nodes}x{near.gpus_per_node:g} {near.gpu}, "
                                   f"{fmt_hours(near.wall_hours)}, {_money(near.cost_usd)}" if near else "")
            band, why, ties = "-", "; ".join(res.why[1:3]), "-"
        else:
            p = res.plans[0]
            shape = f"{p.nodes}x{p.gpus_per_node:g} {p.gpu}" if train else f"{p.gpus}x {p.gpu} ({p.replicas} replicas)"
            when = f", {fmt_hours(p.wall_hours)}" if train else (f", TPOT {p.assumptions.get('tpot_ms') or 0:.0f} ms")
            top = f"{p.provider_name} {shape} {p.pricing} ({region_full(p.region) or '?'}){when}, {p.precision}"
            band = f"{_money(p.cost_usd)} ({_money(p.cost_p10_usd)}-{_money(p.cost_p90_usd)})"
            flips = res.summary.get("flips_first") or []
            why = flips[0].split("would rank first with: ", 1)[-1] if flips else "the only plan that fits"
            if flips:
                why = why.replace("#1's achieved efficiency (MFU / throughput)", "its efficiency").replace(
                    "#1's failure/preemption rate", "its failure rate").replace("#1's price", "its price")
                why = why.split("; or no failure")[0]
                why = ("level with #2 (within 0.5%): either will do" if why.startswith("nothing:") else
                       "cheapest at the 75th percentile; #2 ranks first if " + why)
            tied = [q for q in res.plans if q.ties_first]
            ties = f"{len(tied)}: " + ", ".join(f"{q.provider_name} {q.gpu}" for q in tied[:3]) if tied else "none"
        if md:
            print(f"| {s['id']} | {s['title']} | {top} | {band} | {why} | {ties} | {s['reference']} |")
        else:
            print(f"{s['id']:4} {s['title'][:60]:60} ({dt:.2f} s)\n     #1: {top}\n     cost: {band}\n"
                  f"     why: {why}\n     ties: {ties}\n     reference: {s['reference']}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
