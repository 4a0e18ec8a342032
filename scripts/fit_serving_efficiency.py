#!/usr/bin/env python3
"""Fit the serving model's shared efficiency parameters to the published runs.

Reads src/gpuplan/perf/data/inference-runs.csv (scripts/build_serving_validation.py) and fits
eleven shared numbers (robust soft-L1 loss on log errors, regimes weighted alike): eta_bw,
eta_c, a per-step overhead, a per-layer kernel floor, the decode weight-stream latency factor,
the grouped-GEMM half-efficiency tokens per expert and its large-batch share of eta_c, a
router/permutation time per token-expert pair, the expert-parallel routing skew, and the speeds
of vLLM and of the static-batch engine (Optimum-Habana) relative to TensorRT-LLM. The NVLink
all-reduce latency (the engines' one-shot kernels' microbenchmark) and a served request's
front-end time (TTFT outside the engine iterations) are held at their public measurements
(inference_validation.MEASURED, engines._UNFITTED).
Nelder-Mead restarts from its best point (--restarts) until a pass gains < 0.1 %.
Nothing is fitted per model or per row. Writes
src/gpuplan/perf/data/inference-efficiency.json with the parameters and the in-sample errors;
benchmarks/validate_serving.py measures leave-one-source-out and writes the error bands.

Run by hand:  python scripts/fit_serving_efficiency.py [--iters 300]
              python scripts/fit_serving_efficiency.py --rows-only   # keep the parameters, recompute the
                  stored errors (after scripts/fit_vendor_efficiency.py --refresh-model-ratios moved a factor)
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src/gpuplan/perf/data/inference-efficiency.json"


def main(argv: list[str] | None = None) -> int:
    from gpuplan.perf import inference_validation as v
    from gpuplan.perf.engines import _UNFITTED, Efficiency, fitted_efficiency

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=v.FIT_ITERS, help="Nelder-Mead iterations per pass")
    ap.add_argument("--restarts", type=int, default=v.FIT_RESTARTS,
                    help="further passes from the best point (stop when one gains < 0.1%%)")
    ap.add_argument("--rows-only", action="store_true",
                    help="keep the stored parameters and source; recompute the stored in-sample errors")
    args = ap.parse_args(argv)

    if args.rows_only:
        eff = fitted_efficiency()
        old = json.loads(OUT.read_text(encoding="utf-8"))
    else:
        start = Efficiency(**{k: val for k, val in _UNFITTED.items()})
        eff = v.fit(start=start, iters=args.iters, restarts=args.restarts)
    ins = v.errors(eff)
    params = {
        "eta_bw": round(eff.eta_bw, 4), "eta_c": round(eff.eta_c, 4),
        "allreduce_latency_us": round(eff.allreduce_latency_us, 2),
        "step_overhead_ms": round(eff.step_overhead_ms, 3),
        "lowp_gemm_ratio": eff.lowp_gemm_ratio,
        "latency_factor": round(eff.latency_factor, 4),
        "moe_half_tokens": round(eff.moe_half_tokens, 2),
        "moe_gemm_ratio": round(eff.moe_gemm_ratio, 4),
        "moe_pair_overhead_ns": round(eff.moe_pair_overhead_ns, 2),
        "layer_overhead_us": round(eff.layer_overhead_us, 2),
        "ep_hot_excess": round(eff.ep_hot_excess, 4),
        "frontend_ms": round(eff.frontend_ms, 3),
        "engine_factor": {k: round(x, 4) for k, x in eff.engine_factor.items()},
    }
    if args.rows_only and old["params"] != params:
        print("error: the stored parameters do not round-trip; refit instead", file=sys.stderr)
        return 1
    doc = {
        "_doc": ("Shared serving-efficiency parameters fitted by scripts/fit_serving_efficiency.py to "
                 "inference-runs.csv. eta_bw/eta_c: achieved fraction of HBM bandwidth / dense tensor peak; "
                 "allreduce_latency_us: latency of one NVLink all-reduce (one-shot; two-shot pays it twice; a PCIe "
                 "ring pays it per hop; measured, not fitted: the engines' one-shot kernels on 8 H100, "
                 "sgl-project/sglang PR #2904); step_overhead_ms: scheduler time per engine iteration; latency_factor: the "
                 "decode weight stream's share of eta_bw (CUDA-graph decode, no engine factor); moe_half_tokens: "
                 "tokens per touched expert at which grouped expert GEMMs reach half of their large-batch efficiency; "
                 "moe_gemm_ratio: the share of eta_c grouped expert GEMMs reach with many tokens per expert; moe_pair_overhead_ns: "
                 "router/permutation time per token-expert pair per MoE layer; layer_overhead_us: kernel floor per dense GQA layer per step "
                 "(CUDA-graph decode; other layers pay it per GEMM-class kernel, inference_memory.layer_kernel_ratio); ep_hot_excess: coefficient of variation of expert popularity; the busiest of "
                 "ep GPUs holding E/ep experts each carries 1 + ep_hot_excess x sqrt(ep/E) x sqrt(2 ln ep) of the mean "
                 "load (at most 1.5: a physical ceiling); frontend_ms: a served "
                 "request's time outside the engine iterations (HTTP, tokenisation, admission, first-token streaming), "
                 "added to TTFT, zero for offline harnesses (trtllm-bench, benchmark_latency, library calls), not fitted: the public "
                 "client-vs-engine TTFT gap (vLLM PR #54628, tt-inference-server #190; engines._UNFITTED); lowp_gemm_ratio (not fitted, "
                 "formulas.md \u00a75): share of eta_c that 8/4-bit GEMMs reach against their own peak; engine_factor: "
                 "speed of the per-token work relative to TensorRT-LLM (reference, 1.0); continuous-batching engines "
                 "without rows (SGLang) run at the mean of vLLM and TensorRT-LLM."),
        "source": old["source"] if args.rows_only else f"fitted {dt.date.today().isoformat()} on {len(v.fit_rows())} rows "
                  f"({len(v.comparisons(v.fit_rows()))} comparisons) from "
                  f"{len({r['source_id'] for r in v.fit_rows()})} sources",
        "command": "python scripts/fit_serving_efficiency.py",
        "params": params,
        "fit_rows": [int(r["row_id"]) for r in v.fit_rows()],
        "summary": {"in_sample": v.summarize_regimes(ins)},
        "rows": [{**{k: e[k] for k in ("row_id", "metric", "regime", "source_id", "label", "measured")},
                  "predicted": round(e["predicted"], 2), "error_pct": round(100 * e["error"], 1)} for e in ins],
    }
    OUT.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    print(json.dumps(params, indent=2))
    for reg, fams in doc["summary"]["in_sample"].items():
        x = fams["all"]
        print(f"in-sample {reg:<18} n={x['n']:>3}  median APE {x['median_ape']:5.1f}%  p90 {x['p90_ape']:6.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
