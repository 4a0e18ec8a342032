"""gpuplan's training-time model in three regimes where it is known to be optimistic, against
single-H100 PyTorch runs we measured ourselves (held out).

    python benchmarks/validate_device_regimes.py [--json]

Rows: perf/data/device-regimes-h100.csv, written from benchmarks/gpu/measure_regimes_h100.py on
one H100 80GB HBM3 (torch 2.11): LoRA fine-tuning, long sequences (4k-64k, with and without full
recompute), FP8 training of small models (block linears through torch._scaled_mm, eager and
torch.compile) and bf16-vs-FP8 GEMM throughput. Nothing is fitted to them.

Each training row's model is rebuilt as a ModelSpec with exactly the measured shape (untied,
SwiGLU; the parameter count must equal the measured one; for LoRA the adapter count must equal
gpuplan's `adapter_params(rank, "all")`), and its step time predicted by `estimate_training` on one
H100-SXM with the layout pinned as it ran: tp = pp = dp = cp = 1, the measured micro-batch,
global batch = micro-batch, ZeRO 0, the row's recompute; the workload is
`finetuning(method="lora", lora_rank=..., lora_targets="all")` for LoRA rows and full pre-training
otherwise, at the row's precision (bf16 or fp8).

error = (predicted - measured) / measured: negative = gpuplan predicts a faster step than ran
(optimistic); "x" = measured / predicted (how many times slower reality is).

GEMM rows: gpuplan's FP8 compute efficiency is eta_bf16 * lowp_ratio["fp8"] against the doubled
FP8 peak. The measured counterpart per GEMM shape is (fp8 TFLOP/s / fp8 peak) / (bf16 TFLOP/s /
bf16 peak); its error is lowp_measured / lowp_assumed - 1 (the step-time error an FP8 GEMM of that
shape would have, same sign convention). "fp8" = pre-quantized operands (the kernel alone),
"fp8+cast" = the per-call dynamic quantization of both operands included (what unfused FP8 pays).
"""
from __future__ import annotations

import csv
import io
import json
import sys
from importlib import resources

import numpy as np

DATA_FILE = "device-regimes-h100.csv"
REFERENCE_FILE = "device-runs-h100.csv"  # bf16 full-training rows of the same shapes (for LoRA / full ratios)
GPU_ID = "H100-SXM"
TRAIN_REGIMES = ("lora", "long_context", "fp8")
GEMM_REGIME = "fp8_gemm"
# Summary groups: (key, regime, filter on the row, what it is). The first of each regime is its headline.
GROUPS = [
    ("lora", "lora", lambda r: r["mode"] == "eager", "LoRA r16 all linears, eager, s 2k-4k"),
    ("long_context", "long_context", lambda r: int(r["seq_len"]) >= 32768,
     "full training, seq >= 32k (full recompute), eager"),
    ("long_context_all", "long_context", lambda r: True, "full training, seq 4k-64k, eager (all rows)"),
    ("fp8", "fp8", lambda r: r["precision"] == "fp8" and r["mode"] == "eager",
     "FP8 block linears, unfused per-tensor scaling, eager, h 768-4096"),
    ("fp8_compile", "fp8", lambda r: r["precision"] == "fp8" and r["mode"] == "compile",
     "FP8 block linears, torch.compile per block (casts fused)"),
    ("fp8_bf16_ref", "fp8", lambda r: r["precision"] == "bf16" and r["mode"] == "eager",
     "bf16 reference of the FP8 shapes, eager"),
    ("fp8_bf16_ref_compile", "fp8", lambda r: r["precision"] == "bf16" and r["mode"] == "compile",
     "bf16 reference of the FP8 shapes, compiled"),
]
GEMM_GROUPS = [("fp8_gemm", "fp8", "FP8 GEMM kernel (pre-quantized operands)"),
               ("fp8_gemm_cast", "fp8+cast", "FP8 GEMM incl. dynamic quantization of both operands")]


def load_rows(name: str = DATA_FILE) -> list[dict]:
    text = resources.files("gpuplan.perf.data").joinpath(name).read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text)))


def training_rows(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["regime"] in TRAIN_REGIMES]


def gemm_rows(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["regime"] == GEMM_REGIME]


def row_spec(row: dict):
    from gpuplan.models.spec import ModelSpec

    h, a, kv = int(row["hidden"]), int(row["n_heads"]), int(row["n_kv_heads"])
    return ModelSpec(name=row["shape"], n_layers=int(row["n_layers"]), hidden_size=h, n_heads=a, n_kv_heads=kv,
                     head_dim=h // a, ffn_size=int(row["ffn"]), gated_ffn=True, vocab_size=int(row["vocab"]),
                     tied_embeddings=False, attention="gqa" if kv < a else "mha",
                     max_seq_len=int(row["seq_len"]), source=row["source"])


def row_workload(row: dict):
    from gpuplan.perf.workload import finetuning, make_workload

    s, mb = int(row["seq_len"]), int(row["micro_batch"])
    if row["method"] == "lora":
        return finetuning(method="lora", tokens=1e9, seq_len=s, global_batch=mb, precision=row["precision"],
                          lora_rank=int(row["lora_rank"]), lora_targets="all")
    if row["method"] != "full":
        raise ValueError(f"unknown method {row['method']!r}")
    return make_workload(kind="pretrain", method="full", tokens=1e9, seq_len=s, global_batch=mb,
                         precision=row["precision"])


def predict_row(row: dict) -> dict:
    """gpuplan's prediction for one measured training row at the layout it ran with."""
    from gpuplan.perf.training_estimate import estimate_training
    from gpuplan.perf.training_shape import model_shape
    from gpuplan.perf.training_validation import err_pct

    spec = row_spec(row)
    if int(spec.total_params()) != int(row["params"]):
        raise ValueError(f"{row['shape']}: ModelSpec has {spec.total_params():.0f} parameters, "
                         f"the measured model {row['params']}")
    if row["method"] == "lora":
        adapters = model_shape(spec).adapter_params(int(row["lora_rank"]), "all")
        if int(adapters) != int(row["trainable_params"]):
            raise ValueError(f"{row['shape']}: gpuplan counts {adapters:.0f} adapter parameters, "
                             f"the measured model trained {row['trainable_params']}")
    s, mb = int(row["seq_len"]), int(row["micro_batch"])
    wl = row_workload(row)
    est = estimate_training(spec, wl, GPU_ID, 1, tp=1, pp=1, dp=1, cp=1, micro_batch=mb,
                            recompute=row["recompute"], zero=0, n_runners_up=0)
    lay = est.layout
    assert (lay.tp, lay.pp, lay.dp, lay.cp, lay.micro_batch, lay.global_batch, lay.recompute, lay.zero) == \
        (1, 1, 1, 1, mb, mb, row["recompute"], 0), lay
    assert est.method == row["method"] and est.precision == row["precision"], (est.method, est.precision)
    measured = float(row["step_time_s"])
    peak = est.assumptions["peak_tflops"] * 1e12
    flops_step = est.assumptions["model_flops_per_token"] * mb * s
    return {
        "regime": row["regime"], "shape": row["shape"], "mode": row["mode"], "method": row["method"],
        "precision": row["precision"], "recompute": row["recompute"], "run": row.get("run_id", ""),
        "hidden": spec.hidden_size, "n_layers": spec.n_layers, "seq_len": s, "micro_batch": mb,
        "measured_s": measured, "predicted_s": est.step_time_s, "error_pct": err_pct(est.step_time_s, measured),
        "x_slower": measured / est.step_time_s, "tokens_per_s": mb * s / measured,
        "measured_mfu": flops_step / measured / peak, "predicted_mfu": est.mfu, "eta": est.assumptions["efficiency"],
        "peak_tflops": est.assumptions["peak_tflops"],
        "measured_peak_mem_gib": float(row["peak_mem_gib"]), "predicted_mem_gib": est.memory_per_gpu_gb * 1e9 / 2**30,
        "fits": est.fits,
    }


def _stats(errors) -> dict:
    e = np.asarray(list(errors), dtype=float)
    worst = float(e[np.argmax(np.abs(e))])
    return {"n": int(e.size), "median_pct": float(np.median(e)), "median_abs_pct": float(np.median(np.abs(e))),
            "worst_pct": worst, "min_pct": float(e.min()), "max_pct": float(e.max()),
            "median_x_slower": float(np.median(100.0 / (100.0 + e))), "worst_x_slower": float(100.0 / (100.0 + worst))}


def gemm_efficiency(rows: list[dict], lowp_assumed: float | None = None) -> list[dict]:
    """Per GEMM shape: bf16 and FP8 TFLOP/s, the measured lowp ratio, its error against gpuplan's."""
    from gpuplan.catalog.gpus import get_gpu
    from gpuplan.perf.efficiency import default_efficiency

    gpu = get_gpu(GPU_ID)
    peak_bf16, peak_fp8 = gpu.peak_tflops("bf16"), gpu.peak_tflops("fp8")
    assumed = default_efficiency().lowp_ratio["fp8"] if lowp_assumed is None else lowp_assumed
    by: dict[tuple, dict] = {}
    for r in gemm_rows(rows):
        key = (int(r["gemm_m"]), int(r["gemm_k"]), int(r["gemm_n"]), r.get("run_id", ""))
        by.setdefault(key, {})[r["precision"]] = float(r["gemm_tflops"])
    out = []
    for (m, k, n, run), tf in sorted(by.items()):
        bf = tf["bf16"]
        item = {"m": m, "k": k, "n": n, "run": run, "bf16_tflops": bf, "bf16_eff": bf / peak_bf16,
                "lowp_assumed": assumed, "peak_bf16": peak_bf16, "peak_fp8": peak_fp8}
        for prec, tag in (("fp8", "fp8"), ("fp8+cast", "fp8_cast")):
            if prec in tf:
                lowp = (tf[prec] / peak_fp8) / (bf / peak_bf16)
                item[f"{tag}_tflops"] = tf[prec]
                item[f"{tag}_speedup"] = tf[prec] / bf
                item[f"{tag}_lowp"] = lowp
                item[f"{tag}_error_pct"] = 100.0 * (lowp / assumed - 1.0)
        out.append(item)
    return out


def summarize(results: list[dict], gemm: list[dict]) -> dict:
    """Per group: n, median / worst signed error %, median |error| %, measured / predicted."""
    out = {}
    rows_by_regime: dict[str, list[dict]] = {}
    for r in results:
        rows_by_regime.setdefault(r["regime"], []).append(r)
    for key, regime, keep, what in GROUPS:
        e = [r["error_pct"] for r in rows_by_regime.get(regime, []) if keep(r)]
        if e:
            out[key] = {**_stats(e), "what": what}
    pairs = fp8_vs_bf16(results)
    for mode in ("eager", "compile"):
        e = [p["error_pct"] for p in pairs if p["mode"] == mode]
        if e:
            sp = [p["measured_speedup"] for p in pairs if p["mode"] == mode]
            out[f"fp8_speedup_{mode}"] = {
                **_stats(e), "what": f"FP8 / bf16 speed-up at the same shape, {mode} (both measured, both predicted)",
                "measured_speedup_range": [min(sp), max(sp)],
                "predicted_speedup_median": float(np.median([p["predicted_speedup"] for p in pairs
                                                             if p["mode"] == mode]))}
    for key, tag, what in GEMM_GROUPS:
        tag = "fp8_cast" if tag == "fp8+cast" else tag
        e = [g[f"{tag}_error_pct"] for g in gemm if f"{tag}_error_pct" in g]
        if e:
            lowp = [g[f"{tag}_lowp"] for g in gemm if f"{tag}_lowp" in g]
            out[key] = {**_stats(e), "what": what, "lowp_assumed": gemm[0]["lowp_assumed"],
                        "lowp_measured_median": float(np.median(lowp)), "lowp_measured_range": [min(lowp), max(lowp)]}
    return out


ARCH = ("n_layers", "hidden", "n_heads", "n_kv_heads", "ffn", "vocab", "seq_len", "micro_batch")


def _arch_key(row: dict) -> tuple:
    return tuple(int(row[k]) for k in ARCH)


def fp8_vs_bf16(results: list[dict]) -> list[dict]:
    """FP8 against bf16 at the same shape, mode and run: the speed-up measured and predicted.
    error = measured speed-up / predicted speed-up - 1 (negative = gpuplan promises more than FP8 gave).
    This is free of the estimator's absolute bias in that mode (compiled bf16 runs beat it by ~30%)."""
    by: dict[tuple, dict] = {}
    for r in results:
        if r["regime"] == "fp8":
            key = (r["shape"], r["seq_len"], r["micro_batch"], r["mode"], r["run"])
            by.setdefault(key, {})[r["precision"]] = r
    out = []
    for (shape, s, mb, mode, run), pair in by.items():
        if "bf16" in pair and "fp8" in pair:
            b, f = pair["bf16"], pair["fp8"]
            meas, pred = b["measured_s"] / f["measured_s"], b["predicted_s"] / f["predicted_s"]
            out.append({"shape": shape, "hidden": f["hidden"], "seq_len": s, "micro_batch": mb, "mode": mode,
                        "run": run, "measured_speedup": meas, "predicted_speedup": pred,
                        "error_pct": 100.0 * (meas / pred - 1.0)})
    return out


def lora_vs_full(rows: list[dict], results: list[dict]) -> list[dict]:
    """LoRA step / full-training step, measured (full from device-runs-h100.csv, eager) and predicted."""
    from gpuplan.perf.training_estimate import estimate_training
    from gpuplan.perf.workload import make_workload

    ref: dict[tuple, list[float]] = {}
    for r in load_rows(REFERENCE_FILE):
        if r["mode"] == "eager":
            ref.setdefault(_arch_key(r), []).append(float(r["step_time_s"]))
    lora: dict[tuple, list[dict]] = {}
    for r, res in zip(training_rows(rows), results):
        if r["regime"] == "lora" and r["mode"] == "eager":
            lora.setdefault(_arch_key(r), []).append((r, res))
    out = []
    for key, items in lora.items():
        if key not in ref:
            continue
        r0 = items[0][0]
        s, mb = int(r0["seq_len"]), int(r0["micro_batch"])
        wl = make_workload(kind="pretrain", method="full", tokens=1e9, seq_len=s, global_batch=mb, precision="bf16")
        full_pred = estimate_training(row_spec(r0), wl, GPU_ID, 1, tp=1, pp=1, dp=1, cp=1, micro_batch=mb,
                                      recompute="none", zero=0, n_runners_up=0).step_time_s
        lora_meas = float(np.median([res["measured_s"] for _, res in items]))
        lora_pred = items[0][1]["predicted_s"]
        full_meas = float(np.median(ref[key]))
        out.append({"shape": r0["shape"], "seq_len": s, "micro_batch": mb, "full_measured_s": full_meas,
                     "lora_measured_s": lora_meas, "full_predicted_s": full_pred, "lora_predicted_s": lora_pred,
                     "measured_ratio": lora_meas / full_meas, "predicted_ratio": lora_pred / full_pred})
    return out


def evaluate(rows: list[dict] | None = None) -> tuple[list[dict], list[dict], dict]:
    rows = rows if rows is not None else load_rows()
    results = [predict_row(r) for r in training_rows(rows)]
    gemm = gemm_efficiency(rows)
    return results, gemm, summarize(results, gemm)


def main(argv: list[str]) -> int:
    rows = load_rows()
    results, gemm, summary = evaluate(rows)
    ratios = lora_vs_full(rows, results)
    if "--json" in argv:
        print(json.dumps({"gpu": GPU_ID, "rows": results, "gemm": gemm, "lora_vs_full": ratios, "summary": summary,
                          "sources": sorted({r["source"] for r in rows})}, indent=1))
        return 0
    from gpuplan.perf.efficiency import default_efficiency

    eff = default_efficiency()
    print(f"gpuplan {GPU_ID} vs measured single-GPU PyTorch rows in three regimes (held out); "
          f"{eff.source}: eta_max {eff.eta_max}, h_half {eff.h_half}, lowp_ratio {eff.lowp_ratio}")
    print(f"{'regime':12} {'shape':34} {'mode':7} {'prec':4} {'rc':4} {'run':>3} {'s':>6} {'mb':>3} {'meas s':>7} "
          f"{'pred s':>7} {'err%':>6} {'x':>5} {'MFU meas':>8} {'MFU pred':>8} {'mem GiB meas/pred':>18}")
    for r in results:
        print(f"{r['regime']:12} {r['shape'][:34]:34} {r['mode']:7} {r['precision']:4} {r['recompute']:4} "
              f"{r['run']:>3} {r['seq_len']:>6} {r['micro_batch']:>3} {r['measured_s']:>7.3f} {r['predicted_s']:>7.3f} "
              f"{r['error_pct']:>6.1f} {r['x_slower']:>5.2f} {r['measured_mfu']:>8.3f} {r['predicted_mfu']:>8.3f} "
              f"{r['measured_peak_mem_gib']:>8.1f} / {r['predicted_mem_gib']:<7.1f}{'' if r['fits'] else ' (no fit!)'}")
    print()
    if gemm:
        print(f"FP8 GEMM (m x k x n, random data) vs gpuplan's lowp_ratio['fp8'] = {gemm[0]['lowp_assumed']} "
              f"(peaks bf16 {gemm[0]['peak_bf16']}, fp8 {gemm[0]['peak_fp8']} TFLOP/s)")
    print(f"{'m x k x n':>20} {'bf16 TF/s':>9} {'bf16 eff':>8} {'fp8 TF/s':>8} {'speedup':>7} {'lowp':>5} "
          f"{'err%':>6}   {'+cast TF/s':>10} {'speedup':>7} {'lowp':>5} {'err%':>6}")
    for g in gemm:
        print(f"{g['m']:>6}x{g['k']:>5}x{g['n']:>6} {g['bf16_tflops']:>9.1f} {g['bf16_eff']:>8.3f} "
              f"{g.get('fp8_tflops', float('nan')):>8.1f} {g.get('fp8_speedup', float('nan')):>7.2f} "
              f"{g.get('fp8_lowp', float('nan')):>5.2f} {g.get('fp8_error_pct', float('nan')):>6.1f}   "
              f"{g.get('fp8_cast_tflops', float('nan')):>10.1f} {g.get('fp8_cast_speedup', float('nan')):>7.2f} "
              f"{g.get('fp8_cast_lowp', float('nan')):>5.2f} {g.get('fp8_cast_error_pct', float('nan')):>6.1f}")
    pairs = fp8_vs_bf16(results)
    if pairs:
        print()
        print("FP8 vs bf16 training step at the same shape: speed-up bf16 step / fp8 step")
        for p in pairs:
            print(f"  {p['shape'][:34]:34} {p['mode']:7} run {p['run']:>2}  measured {p['measured_speedup']:.2f}  "
                  f"predicted {p['predicted_speedup']:.2f}  err {p['error_pct']:+.1f}%")
    if ratios:
        print()
        print("LoRA step / full-training step at the same shape (full: device-runs-h100.csv, eager)")
        for q in ratios:
            print(f"  {q['shape'][:34]:34} s={q['seq_len']:<5} mb={q['micro_batch']:<2} measured "
                  f"{q['lora_measured_s']:.3f}/{q['full_measured_s']:.3f} = {q['measured_ratio']:.2f}   predicted "
                  f"{q['lora_predicted_s']:.3f}/{q['full_predicted_s']:.3f} = {q['predicted_ratio']:.2f}")
    print()
    print("sources: " + "; ".join(sorted({r["source"] for r in rows})))
    print()
    print("error = (predicted - measured) / measured: negative = gpuplan optimistic; x = measured / predicted")
    print(f"{'group':22} {'n':>3} {'median err%':>11} {'median |err|%':>13} {'worst err%':>10} {'median x':>8} "
          f"{'worst x':>7}  what")
    for key, s in summary.items():
        if "measured_speedup_range" in s:
            extra = (f"; measured {s['measured_speedup_range'][0]:.2f}-{s['measured_speedup_range'][1]:.2f}x, "
                     f"predicted {s['predicted_speedup_median']:.2f}x")
            print(f"{key:22} {s['n']:>3} {s['median_pct']:>+11.1f} {s['median_abs_pct']:>13.1f} "
                  f"{s['worst_pct']:>+10.1f} {s['median_x_slower']:>8.2f} {s['worst_x_slower']:>7.2f}  "
                  f"{s['what']}{extra}")
            continue
        extra = (f"; lowp measured {s['lowp_measured_median']:.2f} "
                 f"({s['lowp_measured_range'][0]:.2f}-{s['lowp_measured_range'][1]:.2f}) vs assumed "
                 f"{s['lowp_assumed']:g}") if "lowp_assumed" in s else ""
        print(f"{key:22} {s['n']:>3} {s['median_pct']:>+11.1f} {s['median_abs_pct']:>13.1f} {s['worst_pct']:>+10.1f} "
              f"{s['median_x_slower']:>8.2f} {s['worst_x_slower']:>7.2f}  {s['what']}{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
