"""Normalize ../shared/data/training-runs.csv into src/gpuplan/perf/data/training-runs.csv.

Run by hand from the repository root:  python scripts/build_training_validation.py

The source rows are free text ("TP8 PP9 CP2 VP7 MBS1 GBS252 seq 8192", "17.50 s/step",
"137 TFLOPs/GPU (counts recompute FLOPs)"). This script turns them into machine-readable
columns: row type, canonical GPU id, layout, sequence length, global batch, measured step time
and how it was obtained. Inputs the source text does not state (sequence length, batch, the
cluster's network) come from the `ANNOTATIONS` table below, each with its reason; the source
column is kept verbatim. Nothing at runtime reads ../shared.
"""
from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT.parent / "shared" / "data" / "training-runs.csv"
OUT = ROOT / "src" / "gpuplan" / "perf" / "data" / "training-runs.csv"

COLUMNS = [
    "row", "name", "row_type", "use", "skip_reason", "model_ref", "total_params", "active_params", "tokens",
    "gpu_id", "gpu_peak_tflops", "gpu_mem_bw_tbps", "gpu_memory_gb", "gpu_nvlink_gbps", "gpu_count", "gpu_hours",
    "wall_days", "hours_basis", "precision", "method", "tp", "pp", "dp", "cp", "ep", "vp", "micro_batch", "recompute",
    "flash_attention", "seq_len", "global_batch", "inter_node_gbps", "step_time_s", "step_time_basis",
    "measured_tflops_per_gpu", "measured_mfu", "counts_recompute", "flops_convention", "notes", "source_gpu",
    "source_mfu_or_tflops", "source",
]

# GPUs the catalog does not hold, described only for validation (TPU v4: 275 bf16 TFLOP/s,
# 32 GB HBM2 at 1.2 TB/s; TPU v3: 123 TFLOP/s, 32 GB at 0.9 TB/s per chip). Their ICI torus is
# treated as an NVLink-class link inside groups of 8 and 400 Gb/s-class between groups.
VALIDATION_ONLY_GPUS = {
    "TPU v4": {"gpu_id": "TPU-v4 (validation only)", "gpu_peak_tflops": 275, "gpu_mem_bw_tbps": 1.2,
               "gpu_memory_gb": 32, "gpu_nvlink_gbps": 300},
    "TPU v3": {"gpu_id": "TPU-v3 (validation only)", "gpu_peak_tflops": 123, "gpu_mem_bw_tbps": 0.9,
               "gpu_memory_gb": 32, "gpu_nvlink_gbps": 160},
}
GPU_OVERRIDES = {"V100": "V100-SXM2-32GB"}  # Microsoft's GPT-3 cluster used 32 GB V100s

# What a full run's published GPU-hours measure. "wall": GPU count x wall-clock (or allocated
# chip-hours), so restarts, evaluation and stalls are inside the number and the prediction divides
# by goodput. "steady": the authors computed the hours from measured throughput (logged iteration
# time, or tokens / stated tokens/s/GPU), so downtime is not in the number and the prediction is
# steady-state hours. Evidence must be in the row itself: an explicit statement, or a stated
# tokens/s/GPU that reproduces the GPU-hours within STEADY_MATCH; anything else is "wall".
STEADY_TEXT = re.compile(r"computed from logged iteration time|computed from (?:measured )?throughput", re.I)
STEADY_MATCH = 0.02

# Inputs the source row lacks, keyed by row name (+ GPU count where names repeat). Values are the
# models' own papers' sequence length / batch (sequences) and the cluster's per-GPU network.
A100_HDR, H100_NDR, AWS_P4D = 200, 400, 50
ANNOTATIONS: dict[str, dict] = {
    "LLaMA-7B": dict(model_ref="llama-7b", seq_len=2048, global_batch=2048, inter_node_gbps=A100_HDR),
    "LLaMA-13B": dict(model_ref="llama-13b", seq_len=2048, global_batch=2048, inter_node_gbps=A100_HDR),
    "LLaMA-33B": dict(model_ref="llama-33b", seq_len=2048, global_batch=2048, inter_node_gbps=A100_HDR),
    "LLaMA-65B": dict(model_ref="llama-65b", seq_len=2048, global_batch=2048, inter_node_gbps=A100_HDR),
    "Llama-2-34B": dict(model_ref="llama-2-34b", seq_len=4096, global_batch=1024, inter_node_gbps=A100_HDR),
    "Llama-3-8B": dict(model_ref="llama-3-8b", seq_len=8192, inter_node_gbps=H100_NDR),
    "Llama-3-70B": dict(model_ref="llama-3-70b", seq_len=8192, inter_node_gbps=H100_NDR),
    "Llama-3.1-8B": dict(model_ref="llama-3.1-8b", seq_len=8192, inter_node_gbps=H100_NDR),
    "Llama-3.1-70B": dict(model_ref="llama-3.1-70b", seq_len=8192, inter_node_gbps=H100_NDR),
    "Llama-3.1-405B": dict(model_ref="llama-3.1-405b", seq_len=8192, global_batch=2048, inter_node_gbps=H100_NDR),
    "OPT-175B": dict(model_ref="opt-175b", seq_len=2048, global_batch=1024, inter_node_gbps=A100_HDR,
                     flash_attention=0),
    "Pythia-70M": dict(model_ref="pythia-70m", seq_len=2048, global_batch=1024, inter_node_gbps=AWS_P4D),
    "Pythia-160M": dict(model_ref="pythia-160m", seq_len=2048, global_batch=1024, inter_node_gbps=AWS_P4D),
    "Pythia-410M": dict(model_ref="pythia-410m", seq_len=2048, global_batch=1024, inter_node_gbps=AWS_P4D),
    "Pythia-1B": dict(model_ref="pythia-1b", seq_len=2048, global_batch=1024, inter_node_gbps=AWS_P4D),
    "Pythia-2.8B": dict(model_ref="pythia-2.8b", seq_len=2048, global_batch=1024, inter_node_gbps=AWS_P4D),
    "Pythia-6.9B": dict(model_ref="pythia-6.9b", seq_len=2048, global_batch=1024, inter_node_gbps=AWS_P4D),
    "PaLM-540B": dict(model_ref="palm-540b", seq_len=2048, global_batch=2048, inter_node_gbps=400, flash_attention=0),
    "Gopher-280B": dict(model_ref="gopher-280b", seq_len=2048, global_batch=2048, inter_node_gbps=400,
                        flash_attention=0),
    "GPT-3-175B": dict(model_ref="gpt-3-175b", seq_len=2048, global_batch=1536, inter_node_gbps=50,
                       flash_attention=0),
    "BloombergGPT-50B": dict(model_ref="bloomberggpt-50b", seq_len=2048, global_batch=1024,
                             inter_node_gbps=AWS_P4D),
    "TinyLlama-1.1B": dict(model_ref="tinyllama-1.1b", seq_len=2048, global_batch=1024, inter_node_gbps=A100_HDR),
    "DeepSeek-V2": dict(model_ref="deepseek-v2", seq_len=4096, global_batch=9216, inter_node_gbps=H100_NDR),
    "Nemotron-4-340B": dict(model_ref="nemotron-4-340b", seq_len=4096, global_batch=2304, inter_node_gbps=H100_NDR,
                            step_time_s=8.0, step_time_basis="stated s/iter"),
    "Llama-3.1-405B (layout benchmark)|8192": dict(model_ref="llama-3.1-405b", tp=8, cp=1, pp=16, dp=64,
                                                   seq_len=8192, global_batch=2048, inter_node_gbps=H100_NDR),
    "Llama-3.1-405B (layout benchmark)|16384": dict(model_ref="llama-3.1-405b", tp=8, cp=16, pp=16, dp=8,
                                                    seq_len=131072, global_batch=128, inter_node_gbps=H100_NDR),
    "MT-NLG-530B": dict(model_ref="mt-nlg-530b", tp=8, pp=35, seq_len=2048, global_batch=1920,
                        inter_node_gbps=A100_HDR, recompute=2, flash_attention=0),
    "Megatron GPT 1.7B (weak scaling)": dict(model_ref="megatron-gpt-1.7b"),
    "Megatron GPT 3.6B (weak scaling)": dict(model_ref="megatron-gpt-3.6b"),
    "Megatron GPT 18.4B (weak scaling)": dict(model_ref="megatron-gpt-18.4b"),
    "Megatron GPT 76.1B (weak scaling)": dict(model_ref="megatron-gpt-76.1b"),
    "Megatron GPT 310.1B (weak scaling)": dict(model_ref="megatron-gpt-310.1b"),
    "Megatron GPT 1008B (weak scaling)": dict(model_ref="megatron-gpt-1008b"),
    "Megatron GPT-3 175B (PTD-P, 300B-token projection)": dict(model_ref="gpt-3-175b", seq_len=2048,
                                                                global_batch=1536),
    "Megatron 530B (PTD-P, 300B-token projection)": dict(model_ref="megatron-gpt-530b", seq_len=2048,
                                                          global_batch=2240),
    "Megatron GPT-3 175B (in-text estimate)": dict(model_ref="gpt-3-175b", seq_len=2048, global_batch=1536),
    "Megatron GPT 1T (in-text estimate)": dict(model_ref="megatron-gpt-1008b", seq_len=2048, global_batch=3072),
    "Megatron 22B (seq-par + selective recompute)": dict(model_ref="megatron-gpt-22b", dp=1, global_batch=4,
                                                         micro_batch=4),
    "Megatron 530B (MT-NLG) (seq-par + selective recompute)": dict(model_ref="megatron-gpt-530b", dp=1, vp=3,
                                                                   global_batch=280, micro_batch=1),
    "Megatron 1T (seq-par + selective recompute)": dict(model_ref="megatron-gpt-1008b", dp=1, global_batch=512,
                                                        micro_batch=1),
    "Llama-3.1-405B (NVIDIA DGXC recipe)": dict(model_ref="llama-3.1-405b"),
    "Llama-3.1-8B (NVIDIA DGXC recipe)": dict(model_ref="llama-3.1-8b"),
    "GPT-3-175B (NeMo) (NVIDIA DGXC recipe)": dict(model_ref="gpt-3-175b"),
    "Nemotron-4-340B (NVIDIA DGXC recipe)": dict(model_ref="nemotron-4-340b"),
    "Llama-3-70B LoRA fine-tune (NVIDIA DGXC recipe)": dict(model_ref="llama-3-70b", method="lora"),
}


def _num(text: str) -> float | None:
    text = (text or "").strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _row_type(source: str) -> str:
    head = source.strip().upper()
    for kind in ("FULL RUN", "THROUGHPUT", "PROJECTION", "BENCHMARK"):
        if head.startswith(kind):
            return kind.split()[0]
    raise SystemExit(f"unknown row type in {source[:40]!r}")


def _find(pattern: str, text: str, cast=float):
    m = re.search(pattern, text, flags=re.I)
    return cast(m.group(1).replace(",", "")) if m else None


def _annotation(name: str, count: str) -> dict:
    for key in (f"{name}|{count}", name, re.sub(r" \(\d+ DGX nodes\)$", "", name)):
        if key in ANNOTATIONS:
            return dict(ANNOTATIONS[key])
    return {}


def _tokens_per_s_per_gpu(text: str) -> float | None:
    m = re.search(r"([\d.,]+)\s*(k?)\s*tok(?:en)?s/s/GPU", text, flags=re.I)
    if not m:
        return None
    return float(m.group(1).replace(",", "")) * (1e3 if m.group(2).lower() == "k" else 1.0)


def hours_basis(row: dict) -> str:
    """"steady" when the row shows its GPU-hours were computed from throughput, else "wall"."""
    text = f"{row['mfu_or_tflops']} {row['source']}"
    if STEADY_TEXT.search(text):
        return "steady"
    tok_s, tokens, hours = _tokens_per_s_per_gpu(text), _num(row["tokens"]), _num(row["gpu_hours"])
    if tok_s and tokens and hours and abs(tokens / (tok_s * 3600.0) / hours - 1.0) <= STEADY_MATCH:
        return "steady"
    return "wall"


def normalize(row: dict, i: int) -> dict:
    from gpuplan.catalog.gpus import get_gpu
    from gpuplan.errors import UsageError

    src, perf = row["source"], row["mfu_or_tflops"]
    text = f"{perf} {src}"
    out = {c: "" for c in COLUMNS}
    kind = _row_type(src)
    out.update(row=i, name=row["model"], row_type=kind, total_params=row["total_params"],
               active_params=row["active_params"], tokens=row["tokens"], gpu_count=row["gpu_count"],
               gpu_hours=row["gpu_hours"], wall_days=row["wall_days"], source_gpu=row["gpu"],
               source_mfu_or_tflops=perf, source=src)
    prec = row["precision"].lower()
    out["precision"] = "fp8" if prec.startswith("fp8") else ("fp4" if prec.startswith("fp4") else "bf16")

    gpu_name = GPU_OVERRIDES.get(row["gpu"], row["gpu"])
    if gpu_name in VALIDATION_ONLY_GPUS:
        out.update(VALIDATION_ONLY_GPUS[gpu_name])
    else:
        try:
            out["gpu_id"] = get_gpu(gpu_name).id
        except UsageError:
            out["gpu_id"] = ""

    # Layout in the two spellings the source uses.
    for key, pats in {"tp": (r"\bTP(\d+)", r"\bt=(\d+)"), "pp": (r"\bPP(\d+)", r"\bp=(\d+)"),
                      "dp": (r"\bDP(\d+)", r"\bd=(\d+)"), "cp": (r"\bCP(\d+)",), "vp": (r"\bVP(\d+)",),
                      "micro_batch": (r"\bMBS(\d+)",)}.items():
        for pat in pats:
            v = _find(pat, src, int)
            if v is not None:
                out[key] = v
                break
    gbs = _find(r"\bGBS\s?(\d+)", text, int) or _find(r"global batch (\d+)", src, int)
    if gbs:
        out["global_batch"] = gbs
    seq = _find(r"seq (\d+)", text, int)
    if seq:
        out["seq_len"] = seq
    if "full activation recompute" in src or "counts recompute" in perf:
        out["recompute"] = 2
    if "selective recompute" in row["model"]:
        out["recompute"] = 1
        out["flash_attention"] = 0
    if "Narayanan" in src or "Korthikanti" in src or "MT-NLG" in row["model"]:
        out["flash_attention"] = 0
    if kind in ("THROUGHPUT", "PROJECTION") and not out["inter_node_gbps"]:
        out["inter_node_gbps"] = H100_NDR if "H100" in out["gpu_id"] else A100_HDR

    # Measured speed, and the step time it implies.
    step = _find(r"([\d.]+) s/step", perf) or _find(r"([\d.]+) s/iter", perf)
    tflops = _find(r"([\d.]+) TFLOPs/GPU", perf)
    mfu = _find(r"MFU ~?([\d.]+)%", perf)
    tok_s = _find(r"([\d,]+) tok/s", perf)
    out["measured_tflops_per_gpu"] = tflops if tflops is not None else ""
    out["measured_mfu"] = mfu / 100 if mfu is not None else ""
    if "counts recompute" in perf or "hardware FLOPs incl. recompute" in perf or "incl. recompute" in perf:
        out["counts_recompute"] = 1
    if "NVIDIA FLOP formula" in perf or "NVIDIA's model-FLOP" in src:
        out["flops_convention"] = "nvidia (full attention)"
    elif "72BsLh^2" in perf:
        out["flops_convention"] = "megatron 72BsLh2 (no recompute)"
    elif out["counts_recompute"]:
        out["flops_convention"] = "megatron 96BsLh2 (with recompute)"
    if step is not None:
        out["step_time_s"], out["step_time_basis"] = step, "stated s/step"
    elif tok_s is not None and out["global_batch"] and out["seq_len"]:
        out["step_time_s"] = out["global_batch"] * out["seq_len"] / tok_s
        out["step_time_basis"] = "global batch x seq / stated tok/s"

    ann = _annotation(row["model"], row["gpu_count"])
    notes = []
    for k, v in ann.items():
        if out.get(k) in ("", None):
            out[k] = v
            if k not in ("model_ref",):
                notes.append(f"{k}={v} (annotation)")
        elif k == "model_ref":
            out[k] = v

    if kind == "THROUGHPUT" and not out["step_time_s"] and tflops is not None:
        out["step_time_basis"] = "derived from stated TFLOPs/GPU (see validation code)"
    if kind == "FULL" and not out["gpu_hours"]:
        if out["step_time_s"]:
            out["row_type"] = kind = "THROUGHPUT"
            notes.append("full run without GPU-hours: its stated s/iter is used as a throughput row, layout searched")
        else:
            out["use"], out["skip_reason"] = 0, "no GPU-hours"
    if kind == "FULL" and out["gpu_hours"]:
        out["hours_basis"] = hours_basis(row)
        if out["hours_basis"] == "steady":
            notes.append("GPU-hours computed from throughput by the source (no downtime): compared at steady state")
    if kind == "BENCHMARK":
        out["use"], out["skip_reason"] = 0, "time-to-target benchmark: tokens trained are not stated"
    if out["use"] == "":
        if not out["gpu_id"]:
            out["use"], out["skip_reason"] = 0, f"unknown GPU {row['gpu']!r}"
        else:
            out["use"] = 1
    if out["gpu_id"] and "(validation only)" in out["gpu_id"]:
        notes.append("TPU described by validation-only peak/bandwidth columns; ICI treated as NVLink-class")
    if gpu_name != row["gpu"]:
        notes.append(f"GPU {row['gpu']!r} read as {gpu_name}")
    for k, default in (("ep", 1), ("vp", 1), ("method", "full"), ("flash_attention", 1)):
        if out[k] == "":
            out[k] = default
    if kind == "PROJECTION" and "Narayanan" in src and out["recompute"] == "":
        out["recompute"] = 2  # PTD-P runs used full activation recomputation
    out["notes"] = "; ".join(notes)
    return out


def main() -> int:
    if not SRC.exists():
        print(f"missing {SRC}", file=sys.stderr)
        return 1
    sys.path.insert(0, str(ROOT / "src"))
    with SRC.open(newline="", encoding="utf-8") as f:
        rows = [normalize(r, i) for i, r in enumerate(csv.DictReader(f))]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    used = sum(1 for r in rows if r["use"] == 1)
    print(f"wrote {OUT.relative_to(ROOT)}: {len(rows)} rows, {used} usable")
    for r in rows:
        if r["use"] != 1:
            print(f"  skip row {r['row']} {r['name']}: {r['skip_reason']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
