#!/usr/bin/env python3
"""Time the planner: the README's main job end to end, and plan calls in process.

    python benchmarks/bench_plan.py [--runs 7]

Target (issue #6): `gpuplan plan train --model llama-3.1-8b --tokens 1e12` ranks offers from at
least 8 providers in under 1 s wall on a 2-core machine. Prints min / median / max seconds, and
how many offers and providers were ranked.
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

MAIN_JOB = ["plan", "train", "--model", "llama-3.1-8b", "--tokens", "1e12"]


def _stats(times: list[float]) -> str:
    return f"min={min(times):.3f}s  median={statistics.median(times):.3f}s  max={max(times):.3f}s"


def bench_cli(runs: int) -> None:
    exe = shutil.which("gpuplan")
    cmd = [exe] if exe else [sys.executable, "-m", "gpuplan.cli.main"]
    with tempfile.TemporaryDirectory() as home:  # no user store: the bundled catalog
        env = dict(os.environ, XDG_DATA_HOME=home, GPUPLAN_DB=os.path.join(home, "none.db"))
        for label, extra in [("table", []), ("--json", ["--json"])]:
            times, out = [], b""
            for _ in range(runs):
                t0 = time.perf_counter()
                r = subprocess.run(cmd + MAIN_JOB + extra, capture_output=True, env=env)
                times.append(time.perf_counter() - t0)
                if r.returncode != 0:
                    raise SystemExit(r.stderr.decode())
                out = r.stdout
            note = ""
            if extra:
                summary = json.loads(out)["summary"]
                note = f"  ranked {summary['candidates']} offers from {summary['providers_ranked']} providers"
            print(f"gpuplan {' '.join(MAIN_JOB)} ({label}): runs={runs}  {_stats(times)}{note}")


def bench_in_process(runs: int) -> None:
    from gpuplan.catalog.catalog import Catalog
    from gpuplan.planner import plan_serving, plan_training
    from gpuplan.planner.requests import ServePlanRequest, TrainPlanRequest

    catalog = Catalog.load(use_store=False)
    cases = [
        ("plan_training llama-3.1-8b 1e12", lambda: plan_training(TrainPlanRequest(model="llama-3.1-8b", tokens=1e12), catalog)),
        ("plan_training llama-3.1-405b 15e12", lambda: plan_training(TrainPlanRequest(model="llama-3.1-405b", tokens=15e12), catalog)),
        ("plan_training qwen3-235b-a22b lora", lambda: plan_training(TrainPlanRequest(model="qwen3-235b-a22b", tokens=1e9, method="lora"), catalog)),
        ("plan_serving llama-3.1-70b 20 req/s", lambda: plan_serving(ServePlanRequest(model="llama-3.1-70b", requests_per_s=20), catalog)),
    ]
    from gpuplan.perf.training_estimate import _SEARCH_CACHE

    for label, fn in cases:
        fn()  # warm caches (estimator data, imports)
        for mode in ("cold", "re-plan"):
            times = []
            for _ in range(runs):
                if mode == "cold":  # a new model or workload: the layout search runs again
                    _SEARCH_CACHE.clear()
                t0 = time.perf_counter()
                result = fn()
                times.append(time.perf_counter() - t0)
            print(f"{label:<38} {mode:<8} runs={runs}  {_stats(times)}  plans={len(result.plans)}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    bench_cli(args.runs)
    bench_in_process(args.runs)


if __name__ == "__main__":
    main()
