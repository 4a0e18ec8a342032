"""Fit the training efficiency and goodput parameters to the validation rows; write them to
src/gpuplan/perf/data/training-efficiency.json.

Run by hand from the repository root:  python scripts/fit_training_efficiency.py [--quick] [--warm | --goodput-only |
--moe-only | --hybrid-only] (--warm starts the simplex from the shipped parameters instead of the fixed starts below;
--goodput-only keeps the shipped compute parameters and refits goodput alone, for a change that touches only how whole
runs are predicted; --moe-only refits the parameters only MoE rows inform, MOE_NAMES, on the MoE rows, keeps the others
as shipped, then refits goodput: for a change to how MoE steps are timed, without moving the dense fit; --hybrid-only
does the same for HYBRID_NAMES on the rows of linear-attention hybrids)

Compute parameters are fitted to the THROUGHPUT rows (seconds per step at a stated layout), each
regime (dense, MoE, long context, small, LoRA, FP8, ...) weighted equally so the many rows of
one benchmark table do not drown the others:

- eta_max, h_half: the efficiency curve eta = eta_max / (1 + h_half / hidden);
- m_half: GEMM token rows at half speed (short micro-batches); moe_m_half: the same for the routed experts' grouped
  GEMM (tokens per expert);
- layer_overhead_us: fixed time per layer and micro-batch (kernel launches, small kernels);
- attn_ratio: attention kernels' efficiency relative to wide-layer GEMMs (no small-layer term: the kernels tile
  heads x sequence, whatever the hidden size); attn_blackwell: their speed on
  Blackwell relative to Hopper's;
- lowp_fp8: share of the GEMM efficiency 8-bit GEMMs keep against their doubled peak;
- tp_exposed, cp_exposed: shares of TP collectives and the context-parallel ring left on the
  critical path; ep_exposed: the share of the MoE all-to-all that never hides (the rest overlaps one
  micro-batch's compute, and what exceeds that compute is exposed as well);
- dp_exposed: the share of every data-parallel gradient reduce / weight gather that never hides behind
  compute (last bucket, first gather, NCCL's SMs taken from the GEMMs);
- moe_imbalance: busiest expert-parallel rank over the mean;
- moe_layer_overhead_us: fixed time per MoE layer and micro-batch in dropless MoE (the host sync on
  per-expert token counts, router/permute kernels); rows marked token-dropping (static capacity) skip it, and so
  do rack-scale NVLink domains (NVL72: NVIDIA's recipes there are sync-free and CUDA-graphed);
- moe_expert_overhead_us: fixed time per local expert, MoE layer and micro-batch (one GEMM and one FP8
  quantisation per expert in the grouped GEMM);
- pytorch_fp8_ratio: the share of the low-precision GEMM efficiency that FP8 keeps in a PyTorch-native stack
  (the rows' `framework` column: torchtitan, LLM Foundry; torchao float8 or TE linears whose casts run as kernels of
  their own) against Megatron's fused casts; 16-bit rows and Megatron rows do not depend on it;
- attn_dhalf: the head width at which attention kernels would run at half their ceiling (narrow heads do less math
  per K / V tile), applied relative to 128-wide heads;
- pytorch_attn_ratio: the share of Megatron's attention speed (Transformer Engine's cuDNN fused attention) that a
  PyTorch-native stack keeps on Hopper and Blackwell, where its SDPA flash backend is FlashAttention-2; Ampere and
  older GPUs, AMD and Gaudi rows do not depend on it.

Goodput parameters (goodput_base, lost_h_per_failure) are then fitted to the FULL RUN rows
(whole-run GPU-hours), given the compute fit. Loss: mean absolute log error. Rows whose GPU
count is not published run at the estimator's default count, which itself depends on the fit, so
the fit is repeated once with the first result (deterministic).
"""
from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "gpuplan" / "perf" / "data" / "training-efficiency.json"

# name: start of the simplex. The physical bounds are training_validation.PARAM_BOUNDS (the held-out refits use them too).
COMPUTE_STARTS = {
    "eta_max": 0.65, "h_half": 1200.0, "tp_exposed": 0.7, "m_half": 256.0, "moe_m_half": 256.0,
    "layer_overhead_us": 60.0,
    "attn_ratio": 0.6, "attn_blackwell": 1.0, "lowp_fp8": 0.8, "ep_exposed": 0.8, "cp_exposed": 0.3,
    "dp_exposed": 0.3, "moe_imbalance": 1.15, "moe_layer_overhead_us": 300.0, "moe_expert_overhead_us": 50.0,
    "pytorch_fp8_ratio": 0.8, "pytorch_attn_ratio": 0.8, "attn_dhalf": 32.0, "linear_scan_bw_share": 0.7,
}


def _apply(eff, x: dict):
    kw = {k: v for k, v in x.items() if k != "lowp_fp8"}
    if "lowp_fp8" in x:
        kw["lowp_ratio"] = {**eff.lowp_ratio, "fp8": float(x["lowp_fp8"])}
    return eff.with_params(**kw)


# The parameters only MoE rows inform: --moe-only refits these on the MoE rows and keeps every other one as shipped.
MOE_NAMES = ("moe_m_half", "moe_imbalance", "ep_exposed", "moe_layer_overhead_us", "moe_expert_overhead_us")
# The parameter only linear-attention hybrid rows inform: --hybrid-only refits it on them and keeps every other one.
HYBRID_NAMES = ("linear_scan_bw_share",)


def fit_compute(preps, eff, iters: int = 400, names: tuple[str, ...] | None = None):
    from gpuplan.perf.training_validation import PARAM_BOUNDS, _nelder_mead, steady_state

    rows = [p for p in preps if p.kind == "THROUGHPUT"]
    regime = [p.row.get("regime") or "dense" for p in rows]
    count = collections.Counter(regime)
    w = np.array([1.0 / count[r] for r in regime])
    w = w / w.sum()
    meas = np.array([p.measured for p in rows])
    names = list(names or COMPUTE_STARTS)
    lo = [PARAM_BOUNDS[k][0] for k in names]
    hi = [PARAM_BOUNDS[k][1] for k in names]

    def f(x):
        e = _apply(eff, dict(zip(names, x)))
        pred = np.array([steady_state(p, e)[0] for p in rows])
        return float(np.sum(w * np.abs(np.log(pred / meas))))

    start = [COMPUTE_STARTS[k] for k in names]
    best = _nelder_mead(f, start, lo, hi, iters=iters)
    best = _nelder_mead(f, best, lo, hi, iters=iters // 2)  # restart: the loss is kinked
    fitted = {k: round(float(v), 4) for k, v in zip(names, best)}
    return _apply(eff, fitted), fitted, f(best)


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(ROOT / "src"))
    from gpuplan.perf.efficiency import FITTED_NAMES, TrainingEfficiency
    from gpuplan.perf.training_validation import PARAM_BOUNDS, evaluate, fit_goodput, prepare_all, summarize

    ap = argparse.ArgumentParser(description="Fit the training efficiency and goodput parameters; write "
                                 f"{OUT.relative_to(ROOT)}.")
    ap.add_argument("--quick", action="store_true", help="120 simplex iterations instead of 400")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--warm", action="store_true", help="start the simplex from the shipped parameters")
    mode.add_argument("--goodput-only", action="store_true",
                      help="keep the shipped compute parameters; refit goodput on the whole-run rows only")
    mode.add_argument("--hybrid-only", action="store_true",
                      help="keep the shipped parameters but " + ", ".join(HYBRID_NAMES) + "; refit it on the rows of "
                      "linear-attention hybrids, then goodput")
    mode.add_argument("--moe-only", action="store_true",
                      help="keep the shipped parameters but the MoE ones (" + ", ".join(MOE_NAMES) + "); refit those "
                      "on the MoE rows, then goodput")
    args = ap.parse_args(argv)
    iters = 120 if args.quick else 400
    shipped_doc = json.loads(OUT.read_text(encoding="utf-8")) if OUT.exists() else {}
    shipped, prior_source = shipped_doc.get("params", {}), shipped_doc.get("source", "")
    partial = args.goodput_only or args.moe_only or args.hybrid_only
    if (args.warm or partial) and shipped:  # start from the shipped fit
        for k in COMPUTE_STARTS:
            v = shipped.get("lowp_ratio", {}).get("fp8") if k == "lowp_fp8" else shipped.get(k)
            if v is not None:
                lo, hi = PARAM_BOUNDS[k]
                COMPUTE_STARTS[k] = min(max(float(v), lo), hi)
    elif partial:
        ap.error(f"--goodput-only / --moe-only / --hybrid-only need a shipped fit in {OUT.relative_to(ROOT)}")
    fitted = dict(COMPUTE_STARTS)
    eff = _apply(TrainingEfficiency(), fitted) if partial else TrainingEfficiency()
    for _ in range(2):  # default GPU counts of whole runs depend on the fit: settle them with a second pass
        preps = prepare_all(eff)
        if args.moe_only:  # only MoE rows depend on these parameters
            moe = [p for p in preps if (p.row.get("regime") or "") == "moe"]
            eff, moe_fit, loss = fit_compute(moe, eff, iters, names=MOE_NAMES)
            fitted.update(moe_fit)
            print(f"MoE loss (mean |log error| of the MoE throughput rows) {loss:.4f}", flush=True)
        elif args.hybrid_only:  # only the hybrids' rows depend on it
            hybrid = [p for p in preps if p.shape.n_linear_layers]
            eff, hybrid_fit, loss = fit_compute(hybrid, eff, iters, names=HYBRID_NAMES)
            fitted.update(hybrid_fit)
            print(f"hybrid loss (mean |log error| of the {len(hybrid)} hybrid throughput rows) {loss:.4f}", flush=True)
        elif not args.goodput_only:
            eff, fitted, loss = fit_compute(preps, TrainingEfficiency(), iters)
            print(f"compute loss (regime-weighted mean |log error|) {loss:.4f}", flush=True)
        eff = fit_goodput(preps, eff)
    results = evaluate(preps, eff)
    summ = summarize(results)
    used = sorted({r["row"] for r in results})
    names = [*COMPUTE_STARTS, "goodput_base", "lost_h_per_failure"]
    doc = {
        "_doc": ("Training efficiency parameters fitted by scripts/fit_training_efficiency.py to "
                 "data/training-runs.csv (THROUGHPUT rows, each regime weighted equally; goodput on FULL rows). "
                 "eta = eta_max * lowp_ratio / (1 + h_half / hidden); GEMMs over M token rows run 1 + m_half / M "
                 "slower, routed experts' grouped GEMM 1 + moe_m_half / M (M = tokens per expert per micro-batch); attention at attn_ratio of the "
                 "wide-layer GEMM efficiency, eta without its h_half term, for 128-wide heads (x (1 + attn_dhalf / "
                 "128) / (1 + attn_dhalf / head_dim) otherwise; FlashAttention backward = 2.5 forward passes; on "
                 "Blackwell x attn_blackwell); "
                 "layer_overhead_us per layer and "
                 "micro-batch; tp/cp/dp_exposed: shares of collectives on the critical path; ep_exposed: share of the "
                 "all-to-all that never hides (it overlaps up to one micro-batch's compute); moe_imbalance: busiest expert rank / mean; moe_layer_overhead_us: per MoE layer and micro-batch in dropless MoE "
                 "(token-dropping runs and NVL72 racks skip it); moe_expert_overhead_us: per local expert, MoE layer "
                 "and micro-batch; pytorch_fp8_ratio: share of the FP8 GEMM efficiency a PyTorch-native stack "
                 "(framework column: torchtitan, LLM Foundry) keeps against Megatron's fused casts; pytorch_attn_ratio: "
                 "share of Megatron's attention speed such a stack keeps on Hopper / Blackwell (FlashAttention-2 "
                 "against cuDNN); goodput(n) = "
                 "goodput_base / (1 + n * lost_h_per_failure / gpu_h_per_failure). Other parameters are fixed "
                 "defaults (see gpuplan.perf.efficiency)."),
        "source": (f"{prior_source}; " + ("MoE parameters and goodput" if args.moe_only else
                                           "linear_scan_bw_share and goodput" if args.hybrid_only else "goodput")
                   + f" refitted {dt.date.today().isoformat()} on {len(used)} rows"
                   + (" (--moe-only)" if args.moe_only else " (--hybrid-only)" if args.hybrid_only else " (--goodput-only)")
                   if partial and prior_source
                   else f"fitted {dt.date.today().isoformat()} on {len(used)} rows"),
        "fitted": names,
        "params": {k: v for k, v in eff.as_dict().items() if k != "source"},
        "rows": used,
        "summary_in_sample": summ,
    }
    assert set(FITTED_NAMES) <= set(names) | {"lowp_ratio"}
    OUT.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    print({**fitted, "goodput_base": eff.goodput_base, "lost_h_per_failure": eff.lost_h_per_failure})
    for k, v in summ.items():
        if v["n"]:
            print(f"  {k:14s} n={v['n']:3d} median {v['median_abs_pct']:.1f}%  p90 {v['p90_abs_pct']:.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
