#!/usr/bin/env python3
"""Fit the serving model's shared efficiency parameters to the published runs.

Reads src/gpuplan/perf/data/inference-runs.csv (scripts/build_serving_validation.py),
fits η_bw, η_c, the TP all-reduce latency, a per-step overhead and vLLM's speed relative
to TensorRT-LLM (robust soft-L1 loss on log errors), runs leave-one-out, and writes
src/gpuplan/perf/data/inference-efficiency.json with the parameters and both error sets.

Run by hand:  python scripts/fit_serving_efficiency.py
"""
from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src/gpuplan/perf/data/inference-efficiency.json"


def main() -> int:
    from gpuplan.perf import inference_validation as v
    from gpuplan.perf.engines import Efficiency, _UNFITTED

    start = Efficiency(**{k: val for k, val in _UNFITTED.items()})
    eff = v.fit(start=start)
    ins = v.errors(eff)
    loo = v.leave_one_out(start=start)
    params = {
        "eta_bw": round(eff.eta_bw, 4), "eta_c": round(eff.eta_c, 4),
        "allreduce_latency_us": round(eff.allreduce_latency_us, 2),
        "step_overhead_ms": round(eff.step_overhead_ms, 3),
        "lowp_gemm_ratio": eff.lowp_gemm_ratio,
        "engine_factor": {k: round(x, 4) for k, x in eff.engine_factor.items()},
    }
    doc = {
        "_doc": ("Shared serving-efficiency parameters fitted by scripts/fit_serving_efficiency.py to "
                 "inference-runs.csv. eta_bw/eta_c: achieved fraction of HBM bandwidth / dense tensor peak; "
                 "allreduce_latency_us: fixed cost of one TP all-reduce on NVLink (x pcie_latency_factor on PCIe); "
                 "step_overhead_ms: scheduler time per engine iteration; lowp_gemm_ratio (not fitted, formulas.md §5): "
                 "share of eta_c that 8/4-bit GEMMs reach against their own peak; engine_factor: engine speed relative "
                 "to TensorRT-LLM (reference, 1.0); engines without rows run at the mean factor."),
        "source": f"fitted {dt.date.today().isoformat()} on {len(v.fit_rows())} rows "
                  f"({len(v.comparisons(v.fit_rows()))} comparisons)",
        "params": params,
        "fit_rows": [int(r["row_id"]) for r in v.fit_rows()],
        "summary": {"in_sample": v.summarize(ins), "leave_one_out": v.summarize(loo)},
        "rows": [
            {**{k: e[k] for k in ("row_id", "metric", "group", "label", "measured")},
             "predicted": round(e["predicted"], 2), "error_pct": round(100 * e["error"], 1),
             "loo_predicted": round(l["predicted"], 2), "loo_error_pct": round(100 * l["error"], 1)}
            for e in ins for l in loo if (l["row_id"], l["metric"]) == (e["row_id"], e["metric"])
        ],
    }
    OUT.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    print(json.dumps(params, indent=2))
    for name, s in doc["summary"].items():
        for g, x in s.items():
            print(f"{name:>14} {g:<17} n={x['n']:>2}  median |err| {x['median_abs_pct']:5.1f}%  max {x['max_abs_pct']:6.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
