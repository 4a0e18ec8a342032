#!/usr/bin/env python3
"""Time `gpuplan plan batch`: the README job end to end, and plan calls in process.

    python benchmarks/bench_plan_batch.py [--runs 5]

Prints min / median / max seconds for the README command (table and --json, a fresh process
each run, the bundled catalog), how many offers and fleets it weighed, and in-process timings
for a few harder jobs (a fleet of hundreds of hosts, generic GPU work, embeddings).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

README_JOB = ["plan", "batch", "--model", "llama-3.1-8b", "--items", "10M", "--input-len", "500", "--output-len", "200",
              "--deadline", "3d"]


def _stats(times: list[float]) -> str:
    return f"min={min(times):.3f}s  median={statistics.median(times):.3f}s  max={max(times):.3f}s"


def bench_cli(runs: int) -> None:
    exe = shutil.which("gpuplan")
    cmd = [exe] if exe else [sys.executable, "-m", "gpuplan.cli.main"]
    with tempfile.TemporaryDirectory() as home:  # no user store: the bundled catalog
        env = dict(os.environ, XDG_DATA_HOME=home, GPUPLAN_DB=os.path.join(home, "none.db"))
        for label, extra in [("table", []), ("--json", ["--json"]), ("--export skypilot", ["--export", "skypilot"])]:
            times, out = [], b""
            for _ in range(runs):
                t0 = time.perf_counter()
                r = subprocess.run(cmd + README_JOB + extra, capture_output=True, env=env)
                times.append(time.perf_counter() - t0)
                if r.returncode != 0:
                    raise SystemExit(r.stderr.decode())
                out = r.stdout
            note = ""
            if extra == ["--json"]:
                data = json.loads(out)
                s, best = data["summary"], data["fleets"][0]
                note = (f"  weighed {s['offers_considered']} offers in {s['offer_groups']} groups from "
                        f"{s['providers_considered']} providers; {s['fleets_found']} fleets; #1 ${best['cost_usd']:,.0f} "
                        f"in {best['finish_hours']:.1f} h")
            print(f"gpuplan {' '.join(README_JOB)} ({label}): runs={runs}  {_stats(times)}{note}")


def bench_in_process(runs: int) -> None:
    from gpuplan.catalog.catalog import Catalog
    from gpuplan.planner.batch_plan import plan_batch
    from gpuplan.planner.batch_request import BatchPlanRequest

    catalog = Catalog.load(use_store=False)
    cases = [
        ("README job (10M items, 3 d)", dict(model="llama-3.1-8b", items=1e7, input_len=500, output_len=200,
                                             deadline_hours=72)),
        ("10B items, 3 d (hundreds of hosts)", dict(model="llama-3.1-8b", items=1e10, input_len=500, output_len=200,
                                                    deadline_hours=72)),
        ("llama-3.1-70b 1M items, 2 d", dict(model="llama-3.1-70b", items=1e6, deadline_hours=48)),
        ("embeddings qwen3-8b 100M x 512 tok, 1 d", dict(kind="embed", model="qwen3-8b", items=1e8, input_len=512,
                                                         deadline_hours=24)),
        ("generic 2.5 GPU-s x 1M images, 2 d", dict(kind="gpu", gpu_seconds_per_item=2.5, items=1e6, deadline_hours=48)),
        ("nothing fits (1e12 items, 1 h)", dict(model="llama-3.1-8b", items=1e12, deadline_hours=1)),
    ]
    plan_batch(BatchPlanRequest(**cases[0][1]), catalog)  # warm imports and caches once
    for label, kw in cases:
        times, result = [], None
        for _ in range(runs):
            t0 = time.perf_counter()
            result = plan_batch(BatchPlanRequest(**kw), catalog)
            times.append(time.perf_counter() - t0)
        best = result.fleets[0] if result.fleets else None
        note = (f"#1 {best.hosts} hosts in {len(best.groups)} group(s), ${best.cost_usd:,.0f}" if best
                else f"no fleet: {result.why[0][:60]}")
        print(f"plan_batch {label}: runs={runs}  {_stats(times)}  {note}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--skip-cli", action="store_true")
    args = ap.parse_args()
    if not args.skip_cli:
        bench_cli(args.runs)
    bench_in_process(args.runs)


if __name__ == "__main__":
    main()
