#!/usr/bin/env python3
"""Serving estimator vs published measurements: prediction, error, in-sample and leave-one-out.

Every usable row of src/gpuplan/perf/data/inference-runs.csv is predicted with the fitted
parameters (in-sample) and with parameters refitted without that row (leave-one-out).
Groups: max_throughput (offline max-throughput rows), throughput_other (fixed concurrency
and server rows), latency (TTFT/TPOT), assumed_input (rows whose input length the source
does not give; validated, never fitted). Skipped rows are listed with their reason.

    python benchmarks/validate_serving.py [--no-loo]
"""
from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-loo", action="store_true", help="skip the leave-one-out refits (about 15 s)")
    args = ap.parse_args(argv)

    from gpuplan.perf import inference_validation as v
    from gpuplan.perf.engines import fitted_efficiency

    eff = fitted_efficiency()
    print(f"parameters: eta_bw {eff.eta_bw:.3f}, eta_c {eff.eta_c:.3f} (x{eff.lowp_gemm_ratio} for 8/4-bit GEMMs), "
          f"all-reduce {eff.allreduce_latency_us:.1f} us, step overhead {eff.step_overhead_ms:.2f} ms, "
          f"engine factors {eff.engine_factor}  [{eff.source}]")
    ins = v.errors(eff)
    loo = {(e["row_id"], e["metric"]): e for e in v.leave_one_out()} if not args.no_loo else {}
    header = f"{'row':>3} {'metric':<9} {'group':<16} {'measured':>10} {'predicted':>10} {'error':>8} {'LOO pred':>10} {'LOO err':>8}  run"
    print(header)
    print("-" * len(header))
    for e in ins:
        l = loo.get((e["row_id"], e["metric"]))
        lp = f"{l['predicted']:>10.1f} {100 * l['error']:>+7.1f}%" if l else f"{'-':>10} {'-':>8}"
        metric = {"output_tokens_per_s": "tok/s", "ttft_ms": "TTFT ms", "tpot_ms": "TPOT ms"}[e["metric"]]
        print(f"{e['row_id']:>3} {metric:<9} {e['group']:<16} {e['measured']:>10.1f} {e['predicted']:>10.1f} "
              f"{100 * e['error']:>+7.1f}% {lp}  {e['label']}")
    for r in v.validation_rows():
        if r["use"] != "yes":
            print(f"skip row {r['row_id']} ({r['model_label']}): {r['skip_reason']}")
    print()
    sets = [("in-sample", v.summarize(ins))]
    if loo:
        sets.append(("leave-one-out", v.summarize(list(loo.values()))))
    for name, s in sets:
        for g, x in s.items():
            print(f"{name:>14}  {g:<18} n={x['n']:>2}  median |error| {x['median_abs_pct']:5.1f}%  "
                  f"max {x['max_abs_pct']:7.1f}%  within 30%: {x['within_30pct']}/{x['n']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
