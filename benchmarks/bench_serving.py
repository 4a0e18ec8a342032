#!/usr/bin/env python3
"""Timing of the serving estimator and capacity planner (the planner calls them in a loop).

    python benchmarks/bench_serving.py
"""
from __future__ import annotations

import sys
import time


def main() -> int:
    from gpuplan.catalog.gpus import all_gpus
    from gpuplan.perf.capacity import Targets, make_traffic, plan_capacity_all_gpus
    from gpuplan.perf.inference_estimate import estimate_serving
    from gpuplan.perf.inference_validation import validation_models

    model = validation_models()["llama-3.3-70b"]
    n = 200
    t = time.perf_counter()
    for _ in range(n):
        estimate_serving(model, "H100-SXM", n_gpus=2, precision="fp8", input_len=1000, output_len=1000)
    per = (time.perf_counter() - t) / n * 1e3
    print(f"estimate_serving (70B fp8 TP2, max-throughput search): {per:.3f} ms per call")

    traffic = make_traffic(1000, 300, requests_per_s=20, peak_factor=2)
    targets = Targets(max_ttft_ms=2000, max_tpot_ms=50)
    plan_capacity_all_gpus(model, traffic, targets, precision="bf16")  # warm caches
    for precisions in (("bf16",), ("bf16", "fp8", "int4")):
        t = time.perf_counter()
        count = 0
        for p in precisions:
            count += len(plan_capacity_all_gpus(model, traffic, targets, precision=p))
        ms = (time.perf_counter() - t) * 1e3
        print(f"plan_capacity over {len(all_gpus())} GPU types x {len(precisions)} precision(s): "
              f"{count} plans in {ms:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
