"""gpuplan's training-time model against single-H100 PyTorch runs we measured ourselves (held out).

    python benchmarks/validate_device_runs.py [--json]

Rows: perf/data/device-runs-h100.csv, written from benchmarks/gpu/measure_training_h100.py
(plain PyTorch, Llama-style decoders of 0.16-3.6B parameters, fp32 weights under bf16 autocast,
fused AdamW, flash attention, no recompute, no accumulation) in eager mode and compiled
("compile": torch.compile per block + head/loss; "compile_full": torch.compile(model)).
These rows are NOT used to fit anything: they are an independent check.

Each row's model is rebuilt as a ModelSpec with exactly the measured layers / hidden / heads /
FFN / vocabulary (untied, SwiGLU; the parameter count must equal the measured one), and its step
time predicted by gpuplan's own estimator, `estimate_training`, at the stated layout: one
H100-SXM, tp = pp = cp = dp = 1, the measured micro-batch, global batch = micro-batch (no
accumulation), recompute none, ZeRO 0, bf16, full training. MFU is gpuplan's model FLOPs per
token (6·N + causal attention) times tokens per second over the H100's dense bf16 peak.
"""
from __future__ import annotations

import csv
import io
import json
import sys
from importlib import resources

import numpy as np

DATA_FILE = "device-runs-h100.csv"
GPU_ID = "H100-SXM"
MODES = ("eager", "compile", "compile_full")


def load_device_rows() -> list[dict]:
    text = resources.files("gpuplan.perf.data").joinpath(DATA_FILE).read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text)))


def row_spec(row: dict):
    from gpuplan.models.spec import ModelSpec

    h, a = int(row["hidden"]), int(row["n_heads"])
    kv = int(row["n_kv_heads"])
    return ModelSpec(name=row["shape"], n_layers=int(row["n_layers"]), hidden_size=h, n_heads=a, n_kv_heads=kv,
                     head_dim=h // a, ffn_size=int(row["ffn"]), gated_ffn=True, vocab_size=int(row["vocab"]),
                     tied_embeddings=False, attention="gqa" if kv < a else "mha",
                     max_seq_len=int(row["seq_len"]), source=row["source"])


def predict_row(row: dict) -> dict:
    """gpuplan's prediction for one measured row at the layout it ran with."""
    from gpuplan.perf.training_estimate import estimate_training
    from gpuplan.perf.training_validation import err_pct
    from gpuplan.perf.workload import make_workload

    spec = row_spec(row)
    if int(spec.total_params()) != int(row["params"]):
        raise ValueError(f"{row['shape']}: ModelSpec has {spec.total_params():.0f} parameters, "
                         f"the measured model {row['params']}")
    s, mb = int(row["seq_len"]), int(row["micro_batch"])
    wl = make_workload(kind="pretrain", method="full", tokens=1e9, seq_len=s, global_batch=mb, precision="bf16")
    est = estimate_training(spec, wl, GPU_ID, 1, tp=1, pp=1, dp=1, cp=1, micro_batch=mb, recompute="none", zero=0,
                            n_runners_up=0)
    lay = est.layout
    assert (lay.tp, lay.pp, lay.dp, lay.cp, lay.micro_batch, lay.global_batch, lay.recompute, lay.zero) == \
        (1, 1, 1, 1, mb, mb, "none", 0), lay
    measured = float(row["step_time_s"])
    peak = est.assumptions["peak_tflops"] * 1e12
    flops_step = est.assumptions["model_flops_per_token"] * mb * s
    return {
        "shape": row["shape"], "mode": row["mode"], "run": row.get("run_id", ""), "hidden": spec.hidden_size,
        "n_layers": spec.n_layers, "seq_len": s, "micro_batch": mb, "params": spec.total_params(),
        "measured_s": measured, "predicted_s": est.step_time_s, "error_pct": err_pct(est.step_time_s, measured),
        "tokens_per_s": mb * s / measured, "measured_mfu": flops_step / measured / peak, "predicted_mfu": est.mfu,
        "eta": est.assumptions["efficiency"], "peak_tflops": est.assumptions["peak_tflops"],
        "measured_peak_mem_gib": float(row["peak_mem_gib"]), "predicted_mem_gib": est.memory_per_gpu_gb * 1e9 / 2**30,
        "fits": est.fits,
    }


def summarize_modes(results: list[dict]) -> dict:
    out = {}
    for mode in MODES:
        e = np.array([r["error_pct"] for r in results if r["mode"] == mode], dtype=float)
        if e.size == 0:
            continue
        mfu = np.array([r["measured_mfu"] for r in results if r["mode"] == mode])
        out[mode] = {"n": int(e.size), "median_abs_pct": float(np.median(np.abs(e))),
                     "p90_abs_pct": float(np.percentile(np.abs(e), 90)), "median_signed_pct": float(np.median(e)),
                     "min_pct": float(e.min()), "max_pct": float(e.max()),
                     "measured_mfu_range": [float(mfu.min()), float(mfu.max())]}
    return out


def evaluate_all(rows: list[dict] | None = None) -> list[dict]:
    return [predict_row(r) for r in (rows if rows is not None else load_device_rows())]


def main(argv: list[str]) -> int:
    rows = load_device_rows()
    results = evaluate_all(rows)
    summary = summarize_modes(results)
    if "--json" in argv:
        print(json.dumps({"gpu": GPU_ID, "rows": results, "summary": summary,
                          "sources": sorted({r["source"] for r in rows})}, indent=1))
        return 0
    from gpuplan.perf.efficiency import default_efficiency

    eff = default_efficiency()
    print(f"gpuplan {GPU_ID} (peak {results[0]['peak_tflops']:g} TFLOP/s bf16) vs measured single-GPU PyTorch rows "
          f"(held out); parameters: {eff.source}: eta_max {eff.eta_max}, h_half {eff.h_half}")
    print(f"{'shape':34} {'mode':12} {'run':>3} {'s':>5} {'mb':>3} {'meas s':>7} {'pred s':>7} {'err%':>7} "
          f"{'tok/s':>9} {'MFU meas':>8} {'MFU pred':>8} {'mem GiB meas/pred':>18}")
    for r in results:
        print(f"{r['shape'][:34]:34} {r['mode']:12} {r['run']:>3} {r['seq_len']:>5} {r['micro_batch']:>3} "
              f"{r['measured_s']:>7.3f} {r['predicted_s']:>7.3f} {r['error_pct']:>7.1f} {r['tokens_per_s']:>9,.0f} "
              f"{r['measured_mfu']:>8.3f} {r['predicted_mfu']:>8.3f} "
              f"{r['measured_peak_mem_gib']:>8.1f} / {r['predicted_mem_gib']:<7.1f}{'' if r['fits'] else ' (no fit!)'}")
    print()
    print("error = (predicted - measured) / measured; positive = gpuplan predicts slower than measured")
    for mode, s in summary.items():
        print(f"{mode:12} n={s['n']:2d}  median |err| {s['median_abs_pct']:5.1f}%  p90 |err| {s['p90_abs_pct']:5.1f}%  "
              f"median signed {s['median_signed_pct']:+6.1f}%  range {s['min_pct']:+.1f}..{s['max_pct']:+.1f}%  "
              f"measured MFU {s['measured_mfu_range'][0]:.2f}-{s['measured_mfu_range'][1]:.2f}")
    print("sources: " + "; ".join(sorted({r["source"] for r in rows})))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
