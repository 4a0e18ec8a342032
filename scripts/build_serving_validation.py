#!/usr/bin/env python3
"""Copy /work/shared/data/inference-runs.csv into package data with machine-readable columns.

The shared file is written for people ('FP8 (submitter-chosen...)', 'H200-SXM-141GB',
'max-throughput offline, TP2'). The serving validation needs model keys, canonical GPU
ids, precision keys, an engine key, the parallel layout, the scenario kind and the
measured numbers. How each published run was set up (its layout, a dataset's mean input
length when the row does not give it) is stated below per source row with the reason;
rows the estimator cannot represent are kept with `use=skip` and a stated reason.

Run by hand:  python scripts/build_serving_validation.py [--shared ../shared]
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src/gpuplan/perf/data/inference-runs.csv"
MODELS = ROOT / "src/gpuplan/perf/data/inference-models.json"

COLUMNS = [
    "row_id", "model", "model_label", "params_b", "active_params_b", "gpu", "gpu_label", "n_gpus", "tp",
    "dp_attention", "precision", "kv_precision", "engine", "engine_label", "scenario", "input_len", "output_len",
    "concurrency", "max_num_seqs", "input_len_assumed", "measured_output_tokens_per_s", "measured_ttft_ms",
    "measured_tpot_ms", "use", "skip_reason", "notes", "source",
]

# MLPerf llama2-70b (OpenOrca subset): the rows give output length but not input length.
MLPERF_ISL = 684
MLPERF_ISL_NOTE = ("mean input length not in the source row; assumed 684 tokens for the MLPerf OpenOrca "
                   "subset (inputs capped at 1024) - unverified")

# How each source row (0-based, in file order) was run, keyed by a check on its text so a
# reordered or edited source file fails loudly instead of mislabelling rows.
SETUP = [
    dict(check="H200-SXM-141GB", model="llama-2-70b", precision="fp8", kv="fp8", engine="trtllm", tp=1,
         scenario="server_slo", isl=MLPERF_ISL, assumed=True,
         notes="8 replicas of TP1 (70B fp8 fits one H200); Server TTFT/TPOT are means under Poisson load; " + MLPERF_ISL_NOTE),
    dict(check="8xMI300X", model="llama-2-70b", precision="fp8", kv="fp8", engine="vllm", tp=1,
         scenario="max_throughput", isl=MLPERF_ISL, assumed=True,
         notes="8 replicas of TP1 (70B fp8 fits one MI300X); " + MLPERF_ISL_NOTE),
    dict(check="1xMI300X", model="llama-2-70b", precision="fp8", kv="fp8", engine="vllm", tp=1,
         scenario="max_throughput", isl=MLPERF_ISL, assumed=True, notes=MLPERF_ISL_NOTE),
    dict(check="H100-SXM-80GBx2", model="llama-2-70b", precision="fp8", kv="fp8", engine="trtllm", tp=2,
         scenario="server_slo", isl=MLPERF_ISL, assumed=True,
         notes="one TP2 replica; Server TTFT/TPOT are means under Poisson load; " + MLPERF_ISL_NOTE),
    dict(check="128,128", model="llama-3.1-8b", precision="fp8", kv="fp8", engine="trtllm", tp=1, scenario="max_throughput",
         notes="NVIDIA fp8 checkpoint (fp8 KV)"),
    dict(check="1000,1000", model="llama-3.1-8b", precision="fp8", kv="fp8", engine="trtllm", tp=1, scenario="max_throughput",
         notes="NVIDIA fp8 checkpoint (fp8 KV)"),
    dict(check="2048,128", model="llama-3.1-8b", precision="fp8", kv="fp8", engine="trtllm", tp=1, scenario="max_throughput",
         notes="NVIDIA fp8 checkpoint (fp8 KV)"),
    dict(check="TP2\",1000,1000", model="llama-3.3-70b", precision="fp8", kv="fp8", engine="trtllm", tp=2,
         scenario="max_throughput", notes="NVIDIA fp8 checkpoint (fp8 KV)"),
    dict(check="20000,2000", model="llama-3.3-70b", precision="fp8", kv="fp8", engine="trtllm", tp=2,
         scenario="max_throughput", notes="NVIDIA fp8 checkpoint (fp8 KV)"),
    dict(check="NVFP4", model="llama-3.3-70b", precision="fp4", kv="fp8", engine="trtllm", tp=1, scenario="max_throughput",
         notes="NVIDIA NVFP4 checkpoint (fp8 KV)"),
    dict(check="TP8\",1000,1000", model="llama-3.1-405b", precision="fp8", kv="fp8", engine="trtllm", tp=8,
         scenario="max_throughput", notes="NVIDIA fp8 checkpoint (fp8 KV)"),
    dict(check="max_num_seqs 3200", model="llama-3.1-70b", precision="fp8", kv="fp8", engine="vllm", tp=8,
         scenario="max_throughput", max_num_seqs=3200,
         notes="3200 prompts at max_num_seqs 3200: concurrency column is the engine cap, not a fixed load"),
    dict(check="static batch", model="llama-3.1-405b", precision="fp8", kv=None, engine="vllm", tp=8,
         scenario="fixed_concurrency", notes="static batch of 256 (benchmark_latency.py)"),
    dict(check="benchmark_throughput", model="llama-3.1-405b", precision="fp8", kv=None, engine="vllm", tp=8,
         scenario="max_throughput", notes="benchmark_throughput.py, default engine settings"),
    dict(check="large-scale-ep", model="deepseek-v3", precision="fp8", kv="bf16", engine="sglang", tp=8, dp=True,
         scenario="disaggregated",
         skip="prefill/decode disaggregation over 12 nodes with DeepEP expert parallelism; gpuplan models one aggregated replica"),
    dict(check="open-infra-index", model="deepseek-v3", precision="fp8", kv="bf16", engine="sglang", tp=8, dp=True,
         scenario="disaggregated",
         skip="in-house disaggregated service (EP144 decode); gpuplan models one aggregated replica; lengths not fixed"),
    dict(check=",batch 1 latency,512", model="gpt-13b-fastertransformer", precision="fp16", kv="fp16", engine="trtllm", tp=1,
         scenario="latency", notes="FasterTransformer (TensorRT-LLM's predecessor) mapped to the trtllm engine preset"),
    dict(check="TP2\",512", model="gpt-13b-fastertransformer", precision="fp16", kv="fp16", engine="trtllm", tp=2,
         scenario="latency", notes="FasterTransformer (TensorRT-LLM's predecessor) mapped to the trtllm engine preset"),
    dict(check="RTX PRO 6000", model="llama-3.1-8b", precision="bf16", kv=None, engine="vllm", tp=1,
         scenario="server_slo", skip="GPU 'RTX PRO 6000 Blackwell' is not in the GPU table; ShareGPT lengths are not fixed"),
    dict(check="Kimi-K2.5", model="kimi-k2", precision="fp4", kv=None, engine="vllm", tp=8,
         scenario="fixed_concurrency",
         notes="Kimi-K2.5 text stack = Kimi-K2 shape; TP8 attention + EP experts (vLLM default)"),
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=str(ROOT.parent / "shared"), help="the shared folder (default ../shared)")
    args = ap.parse_args(argv)
    src = Path(args.shared) / "data/inference-runs.csv"
    lines = src.read_text(encoding="utf-8").splitlines()
    rows = list(csv.DictReader(lines))
    raw_lines = lines[1:]
    if len(rows) != len(SETUP):
        print(f"error: {src} has {len(rows)} rows, this script knows {len(SETUP)}; update SETUP", file=sys.stderr)
        return 1

    from gpuplan.catalog.gpus import resolve_gpu_id
    from gpuplan.errors import UnknownNameError
    from gpuplan.models.spec import ModelSpec

    shapes = json.loads(MODELS.read_text())["models"]
    _check_presets(shapes)
    out = []
    for i, (r, s) in enumerate(zip(rows, SETUP)):
        raw = next((ln for ln in raw_lines if r["source"][:60] in ln and s["check"] in ln), None)
        if raw is None:
            print(f"error: row {i} ({r['model']}, {r['scenario'][:40]}) does not match its setup check {s['check']!r}", file=sys.stderr)
            return 1
        spec = ModelSpec(**shapes[s["model"]])
        skip = s.get("skip", "")
        try:
            gpu = resolve_gpu_id(r["gpu"])
        except UnknownNameError:
            gpu = ""
            skip = skip or f"GPU {r['gpu']!r} is not in the GPU table"
        n = int(r["gpu_count"])
        isl = r["input_len"] if r["input_len"].isdigit() else (s.get("isl") or "")
        osl = r["output_len"] if r["output_len"].isdigit() else ""
        if not skip and (not isl or not osl):
            skip = "input or output length not given"
        conc = r["concurrency"] if s["scenario"] in ("server_slo", "fixed_concurrency", "latency") else ""
        out.append({
            "row_id": i, "model": s["model"], "model_label": r["model"],
            "params_b": round(spec.total_params() / 1e9, 2), "active_params_b": round(spec.active_params() / 1e9, 2),
            "gpu": gpu, "gpu_label": r["gpu"], "n_gpus": n, "tp": s["tp"], "dp_attention": int(bool(s.get("dp"))),
            "precision": s["precision"], "kv_precision": s["kv"] or "", "engine": s["engine"], "engine_label": r["engine"],
            "scenario": s["scenario"], "input_len": isl, "output_len": osl, "concurrency": conc,
            "max_num_seqs": s.get("max_num_seqs", ""), "input_len_assumed": int(bool(s.get("assumed"))),
            "measured_output_tokens_per_s": r["output_tokens_per_s"], "measured_ttft_ms": r["ttft_ms"],
            "measured_tpot_ms": r["tpot_ms"], "use": "skip" if skip else "yes", "skip_reason": skip,
            "notes": s.get("notes", ""), "source": r["source"],
        })
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(out)
    used = sum(r["use"] == "yes" for r in out)
    print(f"wrote {OUT.relative_to(ROOT)}: {len(out)} rows, {used} usable, {len(out) - used} skipped")
    for r in out:
        if r["use"] == "skip":
            print(f"  skip row {r['row_id']} ({r['model_label']}): {r['skip_reason']}")
    return 0


def _check_presets(shapes: dict) -> None:
    """Warn when a pinned validation shape disagrees with the model preset of the same name."""
    try:
        from gpuplan.models import resolve_model
    except ImportError:
        print("note: gpuplan.models.resolve_model not available; pinned shapes not cross-checked")
        return
    from gpuplan.models.spec import ModelSpec

    for key, d in shapes.items():
        try:
            preset = resolve_model(key)
        except Exception:  # noqa: BLE001 - a missing preset is fine, the shape is pinned here
            continue
        mine = ModelSpec(**d)
        a, b = mine.total_params(), preset.total_params()
        if abs(a - b) > 0.01 * b or mine.kv_bytes_per_token() != preset.kv_bytes_per_token():
            print(f"warning: pinned shape {key} ({a / 1e9:.2f}B) differs from preset ({b / 1e9:.2f}B)")


if __name__ == "__main__":
    sys.exit(main())
