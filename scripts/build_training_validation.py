"""Normalize ../shared/data/training-runs.csv into src/gpuplan/perf/data/training-runs.csv.

Run by hand from the repository root:  python scripts/build_training_validation.py

The source rows are free text ("TP8 PP9 CP2 VP7 MBS1 GBS252 seq 8192", "17.50 s/step",
"137 TFLOPs/GPU (counts recompute FLOPs)"). This script turns them into machine-readable
columns: row type, canonical GPU id, layout, sequence length, global batch, measured step time
and how it was obtained. Inputs the source text does not state (sequence length, batch, the
cluster's network) come from the `ANNOTATIONS` table below, each with its reason; the source
column is kept verbatim. Nothing at runtime reads ../shared.

Issue 13 added rows from public tables, each block below with its URL, date and the inputs it does not print:
NVIDIA Megatron-Bridge performance summaries (NeMo 25.09, 25.11, 26.02, 26.04, 26.06, 26.08: dense and MoE,
H100/B200/B300/GB200/GB300, BF16/FP8/NVFP4; 26.04-26.08 appended after the other blocks), NeMo 24.07 pre-training
and fine-tuning (SFT, LoRA), NeMo long-sequence tables (H100, B200; with and without context parallelism),
MosaicML LLM Foundry MPT benchmarks (350M-70B, H100, BF16/FP8, 512-65k tokens), Intel Gaudi 2 training tables
(SynapseAI 1.18, 1.19), the MLPerf Training rows of perf/data/vendor-runs.csv (LoRA on NVIDIA, AMD, Gaudi; GPT-3;
Llama 3.1 405B) and whole runs with published GPU-hours (Llama 2 7B/13B/70B, Llama 3.2 1B/3B, Llama 4
Scout/Maverick, DeepSeek-V3, SmolLM3, BLOOM, StarCoderBase, MPT-7B, Phi-3/3.5/4, GRIN-MoE, Falcon-180B,
StableLM-3B). Every row gets `source_id` (rows of one paper/table/page share it:
leave-one-source-out holds them out together), `source_date` and `regime` (gpuplan.perf.error_bands).
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
    # added for issue #13
    "regime", "source_id", "source_date", "measured_tokens_per_s_per_gpu", "fsdp", "nvlink_domain", "lora_rank",
    "lora_targets", "sample_len",
    # added by the twelfth session: the training stack, where the source names a PyTorch-native one
    "framework",
]

# Sources that ran a PyTorch-native stack (torchtitan / FSDP2, Composer / LLM Foundry, lit-gpt): their FP8 casts are
# kernels of their own (gpuplan.perf.efficiency.TrainingEfficiency.pytorch_fp8_ratio). Every other source ran a
# Megatron-class stack (Megatron-LM / Core, NeMo, Megatron-DeepSpeed, Primus, the MLPerf submitters' own) or an in-house
# one: the column stays empty (the estimator's default, megatron). The torchtitan and AWS rows were appended to the
# CSV by the ninth session, outside this script, with the same column.
PYTORCH_SOURCES = frozenset({"llm-foundry-2023", "mpt7b-card-2023", "tinyllama-2024", "torchtitan-bench-2024-12",
                             "torchtitan-asynctp-2025-06", "torchtitan-trainy-h200-2025-06",
                             "aws-sagemaker-torchtitan-2024-10", "aws-awsome-torchtitan-2025-03", "smollm3-2025"})

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


# ---- Rows added for issue #13 (per-regime, leave-one-source-out validation) ----------------------------------
# Each block is one source (one table or page): its id, date, URL/title, and the rows as published. Measured values
# are copied as printed; inputs a source does not print are stated in the block's `assume` note. Step times are
# derived as global batch x sequence length / (tokens/s/GPU x GPUs) where the source prints tokens/s/GPU.
MB = "https://github.com/NVIDIA-NeMo/Megatron-Bridge/blob/main/docs/performance-summary-archive.md"
MB_MODELS = {"LLAMA3_8B": "llama-3-8b", "LLAMA3_70B": "llama-3-70b", "LLAMA3.1_405B": "llama-3.1-405b",
             "DeepSeekV3": "deepseek-v3", "GPT OSS 120B": "gpt-oss-120b", "Qwen3_30B_a3B": "qwen3-30b-a3b",
             "Qwen3_235B_a22B": "qwen3-235b-a22b", "Kimi_K2": "kimi-k2"}
MB_SYSTEMS = {"DGX-GB300": "GB300", "DGX-GB200": "GB200", "DGX-B300": "B300", "DGX-B200": "B200",
              "DGX-H100": "H100-SXM"}
MB_NOTE = ("NVIDIA runs on DGX systems (400 Gb/s per GPU between nodes; GB200/GB300 NVL72 racks: up to 64 GPUs "
           "treated as one NVLink domain); MoE rows force-balance tokens across experts (dropless) unless marked "
           "tokendrop; FSDP {fsdp}")

# 26.02 container: model, system, GPUs, precision, GBS, MBS, seq, FSDP, TP, PP, CP, VP, EP, tokens/s/GPU
MB_2602 = """
LLAMA3_70B|DGX-GB300|64|NVFP4|256|1|8192|0|1|4|1|5|n/a|6798
LLAMA3_70B|DGX-GB200|64|NVFP4|256|1|8192|0|2|4|1|5|n/a|4458
LLAMA3_70B|DGX-GB300|64|MXFP8|256|1|8192|0|1|4|1|5|n/a|4596
LLAMA3_70B|DGX-GB200|64|MXFP8|256|1|8192|0|2|4|1|5|n/a|3613
LLAMA3_70B|DGX-GB300|64|FP8|256|2|8192|64|1|1|1|n/a|n/a|5003
LLAMA3_70B|DGX-GB200|64|FP8|256|2|8192|64|1|1|1|n/a|n/a|4040
LLAMA3_70B|DGX-H100|64|FP8|256|1|8192|0|4|8|1|5|n/a|1621
LLAMA3.1_405B|DGX-GB300|256|NVFP4|1536|1|8192|0|4|8|1|4|n/a|1333
LLAMA3.1_405B|DGX-GB200|256|NVFP4|1536|1|8192|0|4|16|1|8|n/a|1076
LLAMA3.1_405B|DGX-GB300|256|MXFP8|1536|1|8192|0|2|8|2|4|n/a|931
LLAMA3.1_405B|DGX-GB200|256|MXFP8|1536|1|8192|0|4|16|1|8|n/a|786
LLAMA3.1_405B|DGX-GB300|256|FP8|1536|1|8192|0|4|8|1|4|n/a|988
LLAMA3.1_405B|DGX-GB200|256|FP8|1536|1|8192|0|4|16|1|4|n/a|793
LLAMA3.1_405B|DGX-H100|1024|FP8|1536|1|8192|0|8|8|2|8|n/a|311
DeepSeekV3|DGX-GB300|256|MXFP8|4096|2|4096|0|1|2|1|8|32|4612
DeepSeekV3|DGX-GB200|256|MXFP8|4096|1|4096|0|1|4|1|4|64|3955
DeepSeekV3|DGX-B300|256|MXFP8|4096|1|4096|0|1|16|1|n/a|8|2983
DeepSeekV3|DGX-B200|256|MXFP8|4096|1|4096|0|1|16|1|n/a|8|2689
GPT OSS 120B|DGX-GB300|64|BF16|1280|4|4096|0|1|1|1|n/a|64|19412
GPT OSS 120B|DGX-GB200|64|BF16|1280|4|4096|0|1|1|1|n/a|64|15784
GPT OSS 120B|DGX-B300|64|BF16|1280|4|4096|0|1|1|1|n/a|64|8359
GPT OSS 120B|DGX-B200|64|BF16|1280|4|4096|0|1|1|1|n/a|64|8047
GPT OSS 120B|DGX-H100|64|BF16|1280|1|4096|0|1|4|1|n/a|8|5993
Qwen3_30B_a3B|DGX-GB300|8|MXFP8|512|8|4096|0|1|1|1|n/a|8|30376
Qwen3_30B_a3B|DGX-GB200|8|MXFP8|512|4|4096|0|1|1|1|n/a|8|26084
Qwen3_30B_a3B|DGX-B300|8|MXFP8|512|8|4096|0|1|1|1|n/a|8|29521
Qwen3_30B_a3B|DGX-B200|8|MXFP8|512|1|4096|0|1|1|1|n/a|8|9691
Qwen3_30B_a3B|DGX-H100|16|FP8|1024|1|4096|0|1|2|1|12|8|5113
Qwen3_235B_a22B|DGX-GB300|256|MXFP8|8192|2|4096|0|1|4|1|n/a|32|6583
Qwen3_235B_a22B|DGX-GB200|256|MXFP8|8192|1|4096|0|1|8|1|n/a|32|5448
Qwen3_235B_a22B|DGX-B300|256|MXFP8|8192|1|4096|0|1|8|1|4|8|2691
Qwen3_235B_a22B|DGX-B200|256|MXFP8|8192|1|4096|0|1|8|1|n/a|8|3805
Qwen3_235B_a22B|DGX-H100|256|FP8|8192|1|4096|0|2|8|1|4|32|1633
"""
# 25.11 container: same columns (GA column dropped; precision "FP8-CS (FP8-MX)" read as its first value)
MB_2511 = """
LLAMA3_8B|DGX-GB300|8|FP8-CS|128|2|8192|0|1|1|1|n/a|1|37556
LLAMA3_70B|DGX-GB300|64|FP8-CS|256|2|8192|64|1|1|1|1|1|4520
LLAMA3.1_405B|DGX-GB300|256|FP8-CS|1536|1|8192|0|2|8|2|4|1|999
DeepSeekV3|DGX-GB300|256|BF16|4096|1|4096|0|1|2|1|4|32|3848
DeepSeekV3|DGX-GB300|256|FP8-MX|4096|1|4096|0|1|2|1|4|32|4357
GPT OSS 120B|DGX-GB300|64|BF16|1280|2|8192|0|1|1|1|1|64|18347
Qwen3_30B_a3B|DGX-GB300|8|FP8-MX|512|4|4096|0|1|1|1|1|8|28934
Qwen3_235B_a22B|DGX-GB300|256|BF16|8192|2|4096|0|1|4|1|12|16|6131
LLAMA3_8B|DGX-GB200|8|FP8-CS|128|2|8192|0|1|1|1|n/a|1|31508
LLAMA3_70B|DGX-GB200|64|FP8-CS|256|2|8192|64|1|1|1|1|1|4312
LLAMA3.1_405B|DGX-GB200|256|FP8-CS|1536|1|8192|0|4|16|1|4|1|813
DeepSeekV3|DGX-GB200|256|BF16|4096|1|4096|0|1|4|1|4|64|3139
DeepSeekV3|DGX-GB200|256|FP8-MX|4096|1|4096|0|1|8|1|4|32|4018
GPT OSS 120B|DGX-GB200|64|BF16|1280|1|8192|0|1|1|1|1|64|15876
Qwen3_30B_a3B|DGX-GB200|8|FP8-MX|512|4|4096|0|1|1|1|1|8|23766
Qwen3_235B_a22B|DGX-GB200|256|BF16|8192|1|4096|0|1|8|1|3|32|4916
LLAMA3_8B|DGX-B200|8|FP8-CS|128|2|8192|0|1|1|1|n/a|1|30624
LLAMA3.1_405B|DGX-B200|128|FP8-CS|64|1|8192|0|4|8|2|8|1|661
DeepSeekV3|DGX-B200|256|FP8-MX|2048|1|4096|0|1|16|1|1|8|2139
GPT OSS 120B|DGX-B200|64|BF16|512|4|4096|0|1|1|1|1|8|8213
Qwen3_30B_a3B|DGX-B200|8|FP8-MX|512|1|4096|0|1|1|1|1|8|9299
Qwen3_235B_a22B|DGX-B200|64|FP8-MX|1024|1|4096|0|1|8|1|2|8|3269
LLAMA3_8B|DGX-H100|8|FP8-CS|128|1|8192|8|1|1|1|n/a|1|14451
LLAMA3_70B|DGX-H100|64|FP8-CS|128|1|8192|0|4|8|1|5|1|1602
LLAMA3.1_405B|DGX-H100|1024|FP8-CS|512|1|8192|0|8|8|2|8|1|292
GPT OSS 120B|DGX-H100|64|BF16|512|4|4096|0|1|4|1|1|8|5630
Qwen3_30B_a3B|DGX-H100|16|FP8-CS|512|2|4096|0|1|2|1|24|8|5275
Qwen3_235B_a22B|DGX-H100|256|FP8-CS|2048|1|4096|0|2|8|1|4|32|1575
"""
# 25.09 container (no precision column: the page's footnote on FP8 quantization granularity implies FP8; the
# first of each "a (b)" pair is read)
MB_2509 = """
LLAMA3_8B|DGX-GB200|8|FP8|128|2|8192|0|1|1|1|n/a|1|31357
LLAMA3_70B|DGX-GB200|64|FP8|128|2|8192|64|1|1|1|1|1|3986
LLAMA3.1_405B|DGX-GB200|128|FP8|64|1|8192|64|2|1|1|1|1|729
DeepSeekV3 (tokendrop)|DGX-GB200|256|FP8|2048|1|4096|0|1|4|1|4|64|3454
Qwen3_30B_a3B (tokendrop)|DGX-GB200|8|FP8|512|4|4096|0|1|1|1|1|8|22775
Qwen3_235B_a22B (tokendrop)|DGX-GB200|64|FP8|1024|1|4096|0|2|1|1|1|64|4452
LLAMA3_8B|DGX-B200|8|FP8|128|2|8192|0|1|1|1|n/a|1|29994
LLAMA3.1_405B|DGX-B200|128|FP8|64|1|8192|0|4|8|2|8|1|664
DeepSeekV3 (tokendrop)|DGX-B200|256|FP8|2048|1|4096|0|1|16|1|1|8|2265
Qwen3_30B_a3B (tokendrop)|DGX-B200|8|FP8|512|1|4096|0|1|1|1|1|8|18066
Qwen3_235B_a22B (tokendrop)|DGX-B200|64|FP8|1024|1|4096|0|1|8|1|2|8|4104
LLAMA3_8B|DGX-H100|8|FP8|128|1|8192|8|1|1|1|n/a|1|14079
LLAMA3_70B|DGX-H100|64|FP8|128|1|8192|0|4|8|1|5|1|1619
LLAMA3.1_405B|DGX-H100|1024|FP8|512|1|8192|0|8|8|2|8|1|302
DeepSeekV3 (dropless)|DGX-H100|1024|FP8|8192|1|4096|0|2|8|1|4|64|1297
Qwen3_30B_a3B (tokendrop)|DGX-H100|16|FP8|512|2|4096|0|1|2|1|24|8|10494
Qwen3_235B_a22B (tokendrop)|DGX-H100|256|FP8|2048|1|4096|0|2|8|1|4|32|1204
"""

# Newer containers (Megatron-Bridge snapshot of 2026-08-22, commit 067f987df0): 26.04 and 26.06 from the archive page,
# 26.08 from the current page (MB_CURRENT). Same columns as MB_2602, pre-training tables only; the point releases
# (26.02.01, 26.04.01, 26.06.01) re-measure the same configurations and are not used. Left out: Nemotron_3_* (hybrid
# Mamba, no model preset), DeepSeekV4 Flash (no preset), the 26.06 SFT and LoRA tables for LLAMA3_70B (dataset,
# packing and adapter settings not printed; this parser reads pre-training rows only). The 26.06 and 26.08 tables
# have no FSDP column: 0 (DDP) is written there (assumed; the same layouts in 26.04, which prints the column, all
# show FSDP 0). None of the three prints a GA column; the Model TFLOP/s column is not read.
MB_CURRENT = "https://github.com/NVIDIA-NeMo/Megatron-Bridge/blob/main/docs/performance-summary.md"
# 26.04 container (archive page; FSDP column printed)
MB_2604 = """
LLAMA3_70B|DGX-GB300|64|NVFP4|256|1|8192|0|1|4|1|5|n/a|7397
LLAMA3_70B|DGX-GB200|64|NVFP4|256|1|8192|0|2|4|1|5|n/a|4898
LLAMA3_70B|DGX-GB300|64|MXFP8|256|1|8192|0|1|4|1|5|n/a|4742
LLAMA3_70B|DGX-GB200|64|MXFP8|256|1|8192|0|2|4|1|5|n/a|3828
LLAMA3_70B|DGX-GB300|64|FP8|256|2|8192|64|1|1|1|n/a|n/a|5243
LLAMA3_70B|DGX-GB200|64|FP8|256|2|8192|64|1|1|1|n/a|n/a|4143
LLAMA3_70B|DGX-H100|64|FP8|256|1|8192|0|4|8|1|5|n/a|1633
LLAMA3.1_405B|DGX-GB300|256|NVFP4|1536|1|8192|0|4|8|1|4|n/a|1424
LLAMA3.1_405B|DGX-GB200|256|NVFP4|1536|1|8192|0|4|16|1|8|n/a|1136
LLAMA3.1_405B|DGX-GB300|256|MXFP8|1536|1|8192|0|2|8|2|4|n/a|968
LLAMA3.1_405B|DGX-GB200|256|MXFP8|1536|1|8192|0|4|16|1|8|n/a|793
LLAMA3.1_405B|DGX-GB300|256|FP8|1536|1|8192|0|4|8|1|4|n/a|1036
LLAMA3.1_405B|DGX-GB200|256|FP8|1536|1|8192|0|4|16|1|4|n/a|842
DeepSeekV3|DGX-GB300|256|MXFP8|4096|2|4096|0|1|2|1|8|32|4965
DeepSeekV3|DGX-GB200|256|MXFP8|4096|1|4096|0|1|4|1|4|64|4193
DeepSeekV3|DGX-B300|256|MXFP8|4096|1|4096|0|1|16|1|n/a|8|3131
DeepSeekV3|DGX-B200|256|MXFP8|4096|1|4096|0|1|16|1|n/a|8|2815
GPT OSS 120B|DGX-GB300|64|BF16|1280|4|4096|0|1|1|1|n/a|64|19275
GPT OSS 120B|DGX-GB200|64|BF16|1280|4|4096|0|1|1|1|n/a|64|15938
GPT OSS 120B|DGX-B300|64|BF16|1280|4|4096|0|1|1|1|n/a|8|15114
GPT OSS 120B|DGX-B200|64|BF16|1280|4|4096|0|1|1|1|n/a|8|13045
GPT OSS 120B|DGX-H100|64|BF16|1280|1|4096|0|1|4|1|n/a|8|5810
Qwen3_30B_a3B|DGX-GB300|8|MXFP8|512|8|4096|0|1|1|1|n/a|8|31470
Qwen3_30B_a3B|DGX-GB200|8|MXFP8|512|4|4096|0|1|1|1|n/a|8|26032
Qwen3_30B_a3B|DGX-B300|8|MXFP8|512|8|4096|0|1|1|1|n/a|8|30553
Qwen3_30B_a3B|DGX-B200|8|MXFP8|512|4|4096|0|1|1|1|n/a|8|26859
Qwen3_30B_a3B|DGX-H100|16|FP8|1024|1|4096|0|1|1|1|n/a|16|8901
Qwen3_235B_a22B|DGX-GB300|256|MXFP8|8192|2|4096|0|1|4|1|12|32|6994
Qwen3_235B_a22B|DGX-GB200|256|MXFP8|8192|1|4096|0|1|8|1|3|32|5672
Qwen3_235B_a22B|DGX-B300|256|MXFP8|8192|2|4096|0|1|8|1|n/a|8|4865
Qwen3_235B_a22B|DGX-H100|256|FP8|8192|1|4096|0|2|8|1|4|32|1686
Kimi_K2|DGX-GB300|256|MXFP8|4096|2|4096|0|1|4|1|4|64|5332
"""
# 26.06 container (archive page; no FSDP column: 0 written)
MB_2606 = """
LLAMA3.1_405B|DGX-GB300|256|FP8|1536|1|8192|0|4|8|1|4|n/a|1048
LLAMA3.1_405B|DGX-GB300|256|MXFP8|1536|1|8192|0|2|8|2|4|n/a|952
LLAMA3.1_405B|DGX-GB300|256|NVFP4|1536|1|8192|0|4|8|1|4|n/a|1413
LLAMA3.1_405B|DGX-GB200|256|FP8|1536|1|8192|0|4|16|1|4|n/a|843
LLAMA3.1_405B|DGX-GB200|256|MXFP8|1536|1|8192|0|4|16|1|8|n/a|783
LLAMA3.1_405B|DGX-GB200|256|NVFP4|1536|1|8192|0|4|16|1|8|n/a|1166
LLAMA3.1_405B|DGX-H100|1024|FP8|1536|1|8192|0|8|8|2|8|n/a|326
DeepSeekV3|DGX-GB300|256|MXFP8|4096|1|4096|0|1|2|1|8|32|6338
DeepSeekV3|DGX-GB300|256|MXFP8|15360|1|4096|0|1|2|1|8|32|6422
DeepSeekV3|DGX-GB200|256|MXFP8|4096|1|4096|0|1|4|1|4|64|4969
DeepSeekV3|DGX-B300|256|MXFP8|4096|2|4096|0|1|8|1|n/a|8|3541
GPT OSS 120B|DGX-GB300|64|MXFP8|1280|4|4096|0|1|1|1|n/a|16|33166
GPT OSS 120B|DGX-GB200|64|MXFP8|1280|4|4096|0|1|1|1|n/a|64|28947
GPT OSS 120B|DGX-B300|64|MXFP8|1280|4|4096|0|1|1|1|n/a|8|18534
Qwen3_30B_a3B|DGX-GB300|8|MXFP8|512|8|4096|0|1|1|1|n/a|8|45275
Qwen3_30B_a3B|DGX-GB200|8|MXFP8|512|4|4096|0|1|1|1|n/a|8|40706
Qwen3_30B_a3B|DGX-B300|8|MXFP8|512|8|4096|0|1|1|1|n/a|8|40769
Qwen3_30B_a3B|DGX-H100|16|FP8|1024|1|4096|0|1|1|1|n/a|16|8826
Qwen3_235B_a22B|DGX-GB300|256|MXFP8|8192|2|4096|0|1|4|1|12|32|9015
Qwen3_235B_a22B|DGX-GB200|256|MXFP8|8192|1|4096|0|1|8|1|3|32|7376
Kimi_K2|DGX-GB300|256|MXFP8|4096|2|4096|0|1|4|1|4|64|5372
"""
# 26.08 container (current page; no FSDP column: 0 written)
MB_2608 = """
DeepSeekV3|DGX-GB300|256|MXFP8|4096|1|4096|0|1|2|1|8|32|6288
DeepSeekV3|DGX-GB200|256|MXFP8|4096|1|4096|0|1|4|1|4|64|4912
GPT OSS 120B|DGX-GB300|64|MXFP8|1280|4|4096|0|1|1|1|n/a|16|33024
GPT OSS 120B|DGX-GB200|64|MXFP8|1280|4|4096|0|1|1|1|n/a|64|28672
Qwen3_30B_a3B|DGX-GB300|8|MXFP8|512|8|4096|0|1|1|1|n/a|8|44544
Qwen3_30B_a3B|DGX-GB200|8|MXFP8|512|4|4096|0|1|1|1|n/a|8|39936
Qwen3_235B_a22B|DGX-GB300|256|MXFP8|8192|2|4096|0|1|4|1|12|32|8816
Qwen3_235B_a22B|DGX-GB200|256|MXFP8|8192|1|4096|0|1|8|1|3|32|7280
"""

NEMO_2407 = "https://github.com/NVIDIA/NeMo/blob/main/docs/source/performance/performance_summary.md"
# NeMo 24.07, DGX-H100, FP8: model, GPUs, GBS, MBS, seq, TP, PP, CP, VP, tokens/s/GPU (GPT3-5B/20B and
# Nemotron-8B/22B have no model preset and are left out)
NEMO_2407_PRE = """
GPT3-175B|gpt-3-175b|128|256|1|2048|4|8|1|6|726
GPT3-175B|gpt-3-175b|512|2048|2|2048|4|8|1|6|782
LLAMA2-7B|llama-2-7b|8|128|1|4096|1|1|1|1|16847
LLAMA2-13B|llama-2-13b|16|128|1|4096|1|4|1|10|8646
LLAMA2-70B|llama-2-70b|64|128|1|4096|4|4|1|20|1707
Nemotron-340B|nemotron-4-340b|128|32|1|4096|8|8|1|12|322
LLAMA3-8B|llama-3-8b|8|128|1|8192|1|1|2|1|12036
LLAMA3-70B|llama-3-70b|64|128|1|8192|4|4|2|5|1533
"""
# NeMo 24.07 fine-tuning, DGX-H100, FP8, SQuAD packed to 4096: model, task, GPUs, GBS, MBS, seq, TP, PP, tokens/s/GPU
NEMO_2407_FT = """
LLAMA2-7B|llama-2-7b|SFT|8|32|1|4096|1|1|17120
LLAMA2-13B|llama-2-13b|SFT|8|32|1|4096|1|4|9741
LLAMA2-70B|llama-2-70b|SFT|16|32|1|4096|4|4|1833
LLAMA2-7B|llama-2-7b|LoRA|8|32|1|4096|1|1|25206
LLAMA2-13B|llama-2-13b|LoRA|8|32|1|4096|1|1|14161
LLAMA2-70B|llama-2-70b|LoRA|8|32|1|4096|2|4|2557
"""
NEMO_LONG = "https://github.com/NVIDIA/NeMo/blob/main/docs/source/performance/performance_long_sequence.md"
# NeMo long-sequence tables (page version of May 2025, commit 19fadb67b0): seq (K), GPUs, batch size, TFLOP/s/GPU
# without CP (best layout within memory, not printed), TP, PP, DP, CP, TFLOP/s/GPU with CP. "-" = could not run.
# The May 2025 B200 table prints "# of GPUs" 8..1024, four times TP x PP x DP x CP of its own layouts; the page's
# later revision (same file, B200 table with columns SeqLen, # of GPUs, Batch Size, TP, CP, DP, TFLOPS/GPU) prints
# 2..256 GPUs, equal to TP x CP x DP, with the same TFLOP/s. The B200 counts are taken from that revision
# (B200_GPUS_REVISED); the without-CP runs are read at the same count (the page compares per-GPU TFLOP/s at equal
# counts). The H100 table's counts equal TP x PP x DP x CP and stand.
B200_GPUS_REVISED = {8: 2, 16: 4, 32: 8, 64: 16, 128: 32, 256: 64, 512: 128, 1024: 256}
NEMO_LONG_TABLES = {
    ("nemo-long-seq-h100-24.03", "2024-04", "llama-2-7b", "LLAMA2-7B", "H100-SXM", "NeMo 24.03.01, DGX-H100"): """
4|4|1024|768|1|1|4|1|768
8|8|512|730|1|2|4|1|730
16|16|256|660|2|1|8|1|660
32|32|128|595|2|1|8|2|610
64|64|64|534|4|1|8|2|574
128|128|32|424|4|1|8|4|555
256|256|16|392|4|1|8|8|549
512|512|8|104|8|1|4|16|549
1024|1024|4|26.5|8|1|4|32|536
""",
    ("nemo-long-seq-b200-25.04", "2025-05", "llama-3-8b", "LLAMA3-8B", "B200", "NeMo 25.04.rc2, DGX-B200"): """
8|8|512|1671|1|1|2|1|1671
16|16|256|1717|1|1|4|1|1717
32|32|128|1549|1|1|4|2|1624
64|64|64|1481|1|1|4|4|1600
128|128|32|1438|2|1|4|4|1588
256|256|16|1162|4|1|4|4|1590
512|512|8|607|4|1|4|8|1619
1024|1024|4|-|4|1|4|16|1608
"""}

# MosaicML LLM Foundry MPT benchmarks (H100 80GB, FSDP FULL_SHARD): model, seq, GPUs, micro batch, global batch,
# tokens/s/GPU, activation checkpointing, precision. MPT shapes (expansion ratio 4, vocab 50368, tied embeddings,
# learned positions) agree with the table's NumParams column to 0.1 %.
LLMF = "https://github.com/mosaicml/llm-foundry/blob/main/scripts/train/benchmarking/README.md"
MPT_SHAPES = {"350m": (24, 1024, 16), "760m": (24, 1536, 12), "1b": (24, 2048, 16), "3b": (32, 2560, 20),
              "7b": (32, 4096, 32), "13b": (40, 5120, 40), "70b": (80, 8192, 64)}
MPT_ROWS = """
3b|65536|8|1|16|3262|1|bf16
3b|32768|8|3|144|5873|1|bf16
3b|16384|8|1|48|11152|0|bf16
3b|8192|8|3|144|16578|0|bf16
3b|4096|8|5|240|20964|0|bf16
3b|2048|64|6|1152|22525|0|bf16
3b|2048|16|10|480|24142|0|bf16
3b|1024|8|20|960|27046|0|bf16
1b|65536|8|1|16|5506|1|bf16
1b|32768|8|1|32|12025|0|bf16
1b|16384|8|2|64|19649|0|bf16
1b|8192|8|3|96|29157|0|bf16
1b|4096|8|7|224|38535|0|bf16
1b|2048|64|20|1280|44402|0|bf16
1b|2048|8|14|112|45455|0|bf16
1b|512|8|56|1792|52275|0|bf16
760m|32768|8|1|16|16291|0|bf16
760m|8192|8|6|96|41825|0|bf16
760m|2048|32|24|768|67971|0|bf16
760m|512|8|96|1536|83749|0|bf16
7b|65536|8|1|16|1956|1|bf16
7b|32768|8|2|32|3318|1|bf16
7b|2048|8|6|48|10643|0|bf16
13b|32768|8|1|24|1976|1|bf16
13b|2048|64|2|128|4800|0|bf16
70b|2048|64|8|2048|1039|1|bf16
3b|32768|8|3|144|5856|1|fp8
3b|8192|8|3|144|19146|0|fp8
3b|2048|8|10|480|30586|0|fp8
3b|512|8|40|1920|36527|0|fp8
1b|32768|8|1|32|12580|0|fp8
1b|8192|8|2|64|32010|0|fp8
1b|512|8|56|1792|70315|0|fp8
350m|32768|8|1|32|24439|0|fp8
350m|16384|8|2|64|42929|0|fp8
350m|512|8|56|1792|154420|0|fp8
"""

GAUDI2_118 = "https://intel.com/content/www/us/en/developer/platform/gaudi/model-performance-gaudi2-training.html"
# Intel Gaudi 2 LLM training throughput (Megatron-DeepSpeed, FP8): model, HPUs, seq, GBS, tokens/s (all HPUs)
GAUDI2_ROWS = {
    ("gaudi2-perf-1.18", "2024-10", "SynapseAI 1.18.0, PyTorch 2.4.0"): """
LLaMA V2 7B|llama-2-7b|8|4096|1024|68464
LLaMA V2 13B|llama-2-13b|16|4096|256|58282
LLaMA V2 70B|llama-2-70b|64|4096|1024|54274
LLaMA V3.1 8B|llama-3.1-8b|8|8192|128|36309
LLaMA V3.1 70B|llama-3.1-70b|64|8192|128|43677
""",
    ("gaudi2-perf-1.19", "2024-12", "SynapseAI 1.19.0, PyTorch 2.5.1"): """
LLaMA V2 7B|llama-2-7b|8|4096|1024|70523
LLaMA V2 13B|llama-2-13b|16|4096|256|59397
LLaMA V2 70B|llama-2-70b|64|4096|1024|54614
LLaMA V3.1 8B|llama-3.1-8b|8|8192|128|37440
LLaMA V3.1 70B|llama-3.1-70b|64|8192|128|43332
"""}

# MLPerf Training results as normalized in vendor-runs.csv (samples/s or tokens/s from the MLLOG files). The
# benchmarks' shapes: Llama-2-70B LoRA on GovReport at seq 8192; GPT-3 175B at seq 2048; Llama 3.1 405B at seq 8192.
# The per-submission global batch is not in vendor-runs.csv: assumed 8 (LoRA), 1536 (GPT-3) and 1152 (405B), the
# reference implementations' values; the throughput compared is per sample, so the assumption mainly sets how
# many micro-batches share one optimizer step. The LoRA benchmark's adapters are fixed by its reference
# (github.com/mlcommons/training llama2_70b_lora/run_llama_70B_scrolls_r16.sh: --lora_r 16
# --lora_target_modules "qkv_proj,o_proj"): rank 16 on the attention projections only.
MLPERF_SHAPES = {
    "Llama-2-70B LoRA": dict(model_ref="llama-2-70b", method="lora", seq_len=8192, global_batch=8, lora_rank=16,
                             lora_targets="attention"),
    "GPT-3 175B": dict(model_ref="gpt-3-175b", method="full", seq_len=2048, global_batch=1536),
    "Llama 3.1 405B": dict(model_ref="llama-3.1-405b", method="full", seq_len=8192, global_batch=1152),
}
# layout from the submission's config file name (nodes x GPUs x MBS x tp pp cp) where vendor-runs.csv quotes it
MLPERF_LAYOUT = re.compile(r"config_\w+?_(\d+)x(\d+)x(\d+)(?:xtp(\d+)pp(\d+)cp(\d+))?\.sh")

# Whole runs with published GPU-hours (model cards and reports).
FULL_RUNS = [
    dict(name="Llama-3.2-1B", model_ref="llama-3.2-1b", tokens=9e12, gpu_id="H100-SXM", gpu_hours=370e3,
         seq_len=8192, precision="bf16", source_id="llama32-card-2024", source_date="2024-09",
         source="FULL RUN. Meta Llama 3.2 model card (meta-llama/llama-models models/llama3_2/MODEL_CARD.md) "
                "Training Energy table: 370k H100-80GB GPU-hours; 'up to 9T tokens'",
         notes="tokens = the card's upper bound (9T); logit generation from the 8B/70B teachers (86k GPU-hours for "
               "both models) is listed separately and not counted; seq_len 8192 assumed (Llama 3 pretraining); "
               "GPU count not published (planner default)"),
    dict(name="Llama-3.2-3B", model_ref="llama-3.2-3b", tokens=9e12, gpu_id="H100-SXM", gpu_hours=460e3,
         seq_len=8192, precision="bf16", source_id="llama32-card-2024", source_date="2024-09",
         source="FULL RUN. Meta Llama 3.2 model card (meta-llama/llama-models models/llama3_2/MODEL_CARD.md) "
                "Training Energy table: 460k H100-80GB GPU-hours; 'up to 9T tokens'",
         notes="as Llama-3.2-1B"),
    dict(name="Llama-4-Scout", model_ref="llama-4-scout", tokens=40e12, gpu_id="H100-SXM", gpu_hours=5.0e6,
         seq_len=8192, precision="bf16", source_id="llama4-card-2025", source_date="2025-04",
         source="FULL RUN. Meta Llama 4 model card (meta-llama/llama-models models/llama4/MODEL_CARD.md): "
                "5.0M H100-80GB GPU-hours; pretrained on ~40T tokens of multimodal data",
         notes="precision not stated for Scout (Meta's blog names FP8 for Behemoth): bf16 assumed (pessimistic); "
               "seq_len 8192 assumed; GPU count not published (planner default); multimodal tokens counted as text"),
    dict(name="Llama-4-Maverick", model_ref="llama-4-maverick", tokens=22e12, gpu_id="H100-SXM", gpu_hours=2.38e6,
         seq_len=8192, precision="bf16", source_id="llama4-card-2025", source_date="2025-04",
         source="FULL RUN. Meta Llama 4 model card (meta-llama/llama-models models/llama4/MODEL_CARD.md): "
                "2.38M H100-80GB GPU-hours; pretrained on ~22T tokens",
         notes="as Llama-4-Scout"),
    dict(name="DeepSeek-V3 (pre-training)", model_ref="deepseek-v3", tokens=14.8e12, gpu_id="H800",
         gpu_hours=2.664e6, gpu_count=2048, seq_len=4096, global_batch=15360, precision="fp8",
         source_id="deepseek-v3-2024", source_date="2024-12",
         source="FULL RUN. DeepSeek-AI 2024 DeepSeek-V3 Technical Report (arXiv 2412.19437) Table 1 and Sec 3-4: "
                "2.664M H800 GPU-hours for pre-training on 14.8T tokens, 2048 H800, FP8 mixed precision, "
                "seq 4096, batch ramped to 15360",
         notes="context extension (119K GPU-hours) and post-training excluded; the report's hours are "
               "180K per trillion tokens (throughput-based): compared at steady state", hours_basis="steady"),
    dict(name="SmolLM3-3B", model_ref="", total_params=3.08e9, tokens=11.2e12, gpu_id="H100-SXM",
         gpu_hours=384 * 24 * 24, gpu_count=384, seq_len=4096, global_batch=576, precision="bf16",
         source_id="smollm3-2025", source_date="2025-07",
         source="FULL RUN. Hugging Face 2025 'SmolLM3: smol, multilingual, long-context reasoner' (huggingface.co/"
                "blog/smollm3): 11.2T tokens on 384 H100 for 24 days; GBS 2,359,296 tokens "
                "(HuggingFaceTB/SmolLM3-3B-checkpoints)",
         notes="GPU-hours derived 384 x 24 d x 24 h (wall clock); global_batch = 2,359,296 / 4096 sequences; "
               "model from parameter count (3.08B, no preset)"),
    dict(name="GPT-2-124M (llm.c)", model_ref="shape:gpt2-124m,12,768,12,3072,50257,tied", tokens=10e9,
         gpu_id="A100-80GB-SXM", gpu_hours=8 * 1.5, gpu_count=8, seq_len=1024, global_batch=512, precision="bf16",
         source_id="llmc-gpt2-2024", source_date="2024-05",
         source="FULL RUN. Karpathy 2024 'Reproducing GPT-2 (124M) in llm.c in 90 minutes for $20' (karpathy/llm.c "
                "discussion #481): 12 layers, 768 wide, 12 heads, 10B FineWeb tokens, one 8X A100 80GB SXM node, "
                "~90 minutes, 0.5M-token batches of 1024-token sequences",
         notes="GPU-hours derived 8 x 1.5 h (wall clock, '~90 minutes'); inside one node"),
    # Llama 2 7B/13B/70B: same table as the Llama-2-34B row of ../shared (source id "llama2-2023").
    *[dict(name=f"Llama-2-{size}", model_ref=f"llama-2-{size.lower()}", tokens=2.0e12, gpu_id="A100-80GB-SXM",
           gpu_hours=hours, seq_len=4096, global_batch=1024, precision="bf16", source_id="llama2-2023",
           source_date="2023-07",
           source=f"FULL RUN. Touvron et al. 2023 Llama 2 (arXiv 2307.09288) Table 2 (CO2 table: GPU-hours, A100-80GB) "
                  f"and Table 1 (2.0T tokens, 4k context, global batch 4M tokens); same table in meta-llama/llama "
                  f"MODEL_CARD.md: Llama 2 {size} {hours:,} GPU hours",
           notes="GPU count and wall time not reported (planner default); global_batch = 4M tokens / 4096; bf16 "
                 "assumed (as the Llama-2-34B row); 200 Gb/s per GPU between nodes (Meta's clusters per the paper, "
                 "as the Llama-2-34B row)", inter_node_gbps=A100_HDR)
      for size, hours in (("7B", 184320), ("13B", 368640), ("70B", 1720320))],
    dict(name="BLOOM-176B", model_ref="bloom-176b", tokens=366e9, gpu_id="A100-80GB-SXM", gpu_hours=1082990,
         gpu_count=384, seq_len=2048, global_batch=2048, precision="bf16", source_id="bloom-2022",
         source_date="2022-11",
         source="FULL RUN. BigScience 2022 BLOOM (arXiv 2211.05100) Sec 3.4-3.5: 1,082,990 compute hours on 48 nodes "
                "of 8 A100 80GB (384 GPUs), ~3.5 months, 366B tokens (also GENCI press release: 1,082,990 hours on "
                "48 Jean Zay nodes); layout from bigscience-workshop/bigscience train/tr11-176B-ml/README.md: TP4 "
                "PP12 DP8, seq 2048, GBS 2048 after a ramp from 192, bf16, DeepSpeed activation checkpointing",
         notes="wall clock (restarts, evals and the GBS ramp inside the hours); the last days ran on 24 of the 48 "
               "nodes; Jean Zay has 4 x 100 Gb/s Omni-Path per 8-GPU node: 50 Gb/s per GPU between nodes; the paper "
               "PDF itself was read only through quotations of Sec 3.4.1", inter_node_gbps=AWS_P4D),
    dict(name="StarCoderBase-15.5B", model_ref="starcoderbase-15.5b", tokens=1.0e12, gpu_id="A100-80GB-SXM",
         gpu_hours=512 * 24 * 24, gpu_count=512, seq_len=8192, global_batch=512, precision="bf16",
         source_id="starcoder-2023", source_date="2023-05",
         source="FULL RUN. BigCode 2023 StarCoder model card (bigcode/starcoder, Training): 250k pretraining steps, "
                "1 trillion tokens, bfloat16, 512 Tesla A100, training time 24 days; Li et al. 2023 StarCoder "
                "(arXiv 2305.06161): 512 A100 80GB on 64 nodes, TP4 PP4 DP32, MBS 1, GBS 512 (4M tokens)",
         notes="GPU-hours derived 512 x 24 d x 24 h (wall clock, '24 days' rounded); A100 80GB from the paper; "
               "fabric not stated: 200 Gb/s per GPU assumed (A100-generation HDR)", inter_node_gbps=A100_HDR),
    dict(name="MPT-7B", model_ref="shape:mpt-7b,32,4096,32,16384,50432,tied", tokens=1.0e12, gpu_id="A100-40GB-SXM",
         gpu_hours=440 * 9.5 * 24, gpu_count=440, seq_len=2048, global_batch=1760, precision="bf16",
         source_id="mpt7b-card-2023", source_date="2023-05",
         source="FULL RUN. MosaicML 2023 MPT-7B model card (huggingface.co/mosaicml/mpt-7b), Training Configuration: "
                "440 A100-40GBs for about 9.5 days, FSDP, LION; 1T tokens with batch size 1760 and sequence length "
                "2048; 32 layers, d_model 4096, 32 heads, vocab 50432, 6.7B parameters",
         notes="GPU-hours derived 440 x 9.5 d x 24 h (wall clock, 'about 9.5 days'); bf16 assumed (not stated for "
               "training); FFN 4 x d_model and tied embeddings as the llm-foundry MPT rows (6.65B, card: 6.7B); fabric "
               "not stated: 200 Gb/s per GPU assumed (A100-generation HDR)", inter_node_gbps=A100_HDR),
    dict(name="Phi-3-mini (3.3T)", model_ref="phi-3-mini", tokens=3.3e12, gpu_id="H100-SXM", gpu_hours=512 * 7 * 24,
         gpu_count=512, seq_len=4096, precision="bf16", source_id="phi3-mini-card-2024", source_date="2024-04",
         source="FULL RUN. Microsoft 2024 Phi-3-mini-128K-instruct model card (first release, Training/Model): "
                "3.8B dense, GPUs 512 H100-80G, training time 7 days, training data 3.3T tokens, trained between "
                "February and April 2024",
         notes="GPU-hours derived 512 x 7 d x 24 h (wall clock); the card's time is for the instruct model (SFT and "
               "DPO inside, small next to 3.3T tokens); seq_len 4096 and bf16 assumed; H100 SXM assumed "
               "('H100-80G'); the June 2024 update (4.9T tokens, 10 days) is a different run, not used"),
    dict(name="Phi-3.5-mini", model_ref="phi-3-mini", tokens=3.4e12, gpu_id="H100-SXM", gpu_hours=512 * 10 * 24,
         gpu_count=512, seq_len=4096, precision="bf16", source_id="phi35-mini-card-2024", source_date="2024-08",
         source="FULL RUN. Microsoft 2024 Phi-3.5-mini-instruct model card (Training/Model): 3.8B dense, same "
                "tokenizer as Phi-3 Mini, GPUs 512 H100-80G, training time 10 days, training data 3.4T tokens, "
                "trained between June and August 2024",
         notes="GPU-hours derived 512 x 10 d x 24 h (wall clock, instruct model); Phi-3-mini shape (same "
               "architecture, 128K context by extension); seq_len 4096 and bf16 assumed; H100 SXM assumed"),
    dict(name="Phi-3.5-MoE", model_ref="phi-3.5-moe", tokens=4.9e12, gpu_id="H100-SXM", gpu_hours=512 * 23 * 24,
         gpu_count=512, seq_len=4096, precision="bf16", source_id="phi35-moe-card-2024", source_date="2024-08",
         source="FULL RUN. Microsoft 2024 Phi-3.5-MoE-instruct model card (Training/Model): 16x3.8B, 6.6B active "
                "with 2 experts, GPUs 512 H100-80G, training time 23 days, training data 4.9T tokens, trained "
                "between April and August 2024",
         notes="GPU-hours derived 512 x 23 d x 24 h (wall clock, instruct model); seq_len 4096 and bf16 assumed; "
               "H100 SXM assumed"),
    dict(name="Phi-3-medium", model_ref="", total_params=14e9, tokens=4.8e12, gpu_id="H100-SXM",
         gpu_hours=512 * 42 * 24, gpu_count=512, seq_len=4096, precision="bf16", source_id="phi3-medium-card-2024",
         source_date="2024-05",
         source="FULL RUN. Microsoft 2024 Phi-3-Medium-4K-Instruct model card (Training/Model): 14B dense, context "
                "4K tokens, GPUs 512 H100-80G, training time 42 days, training data 4.8T tokens, trained between "
                "February and April 2024, weights released May 21 2024",
         notes="GPU-hours derived 512 x 42 d x 24 h (wall clock, instruct model); model from parameter count (14B, no "
               "preset); seq_len = the card's 4K context; bf16 assumed; H100 SXM assumed"),
    dict(name="GRIN-MoE", model_ref="phi-3.5-moe", tokens=4.0e12, gpu_id="H100-SXM", gpu_hours=512 * 18 * 24,
         gpu_count=512, seq_len=4096, precision="bf16", source_id="grin-moe-2024", source_date="2024-09",
         source="FULL RUN. Microsoft 2024 GRIN MoE model card (microsoft/GRIN-MoE README, Training/Model): 16x3.8B, "
                "6.6B active with 2 experts, vocab 32,064, context 4K, GPUs 512 H100-80G, training time 18 days, "
                "training data 4.0T tokens, released Sep 2024; trained with neither expert parallelism nor token "
                "dropping",
         notes="GPU-hours derived 512 x 18 d x 24 h (wall clock, instruct model); Phi-3.5-MoE shape assumed (same "
               "16x3.8B / 6.6B active / vocab 32,064 in the card; no GRIN config read); seq_len = the card's 4K "
               "context; bf16 assumed; H100 SXM assumed; the layout search may pick EP > 1, which GRIN did not use"),
    dict(name="Phi-4", model_ref="phi-4", tokens=9.8e12, gpu_id="H100-SXM", gpu_hours=1920 * 21 * 24,
         gpu_count=1920, seq_len=4096, precision="bf16", source_id="phi4-card-2024", source_date="2024-12",
         source="FULL RUN. Microsoft Research 2024 phi-4 model card (huggingface.co/microsoft/phi-4, Model Summary): "
                "14B dense, context 16K, GPUs 1920 H100-80G, training time 21 days, training data 9.8T tokens, "
                "October-November 2024 (Abdin et al. 2024, arXiv 2412.08905)",
         notes="GPU-hours derived 1920 x 21 d x 24 h (wall clock, includes post-training); seq_len 4096 assumed "
               "(the 16K context is reached late in training), bf16 assumed; H100 SXM assumed"),
    dict(name="Phi-4-mini", model_ref="phi-4-mini", tokens=5e12, gpu_id="A100-80GB-SXM", gpu_hours=512 * 21 * 24,
         gpu_count=512, seq_len=4096, precision="bf16", source_id="phi4-mini-card-2025", source_date="2025-02",
         source="FULL RUN. Microsoft 2025 Phi-4-mini-instruct model card (Training/Model): 3.8B dense, 200K vocab, "
                "GQA, tied embeddings, GPUs 512 A100-80G, training time 21 days, training data 5T tokens, trained "
                "between November and December 2024",
         notes="GPU-hours derived 512 x 21 d x 24 h (wall clock, instruct model); seq_len 4096 and bf16 assumed; "
               "A100 SXM assumed; fabric not stated: 200 Gb/s per GPU assumed (A100-generation HDR)",
         inter_node_gbps=A100_HDR),
    dict(name="Falcon-180B", model_ref="falcon-180b", tokens=3.5e12, gpu_id="A100-40GB-SXM", gpu_hours=7.0e6,
         gpu_count=4096, seq_len=2048, global_batch=2048, precision="bf16", source_id="falcon180b-2023",
         source_date="2023-09",
         source="FULL RUN. Hugging Face 2023 'Spread Your Wings: Falcon 180B is here' (huggingface/blog "
                "falcon-180b.md): "
                "3.5 trillion tokens on up to 4096 GPUs, Amazon SageMaker, ~7,000,000 GPU hours; tiiuae/falcon-180B "
                "model card: up to 4,096 A100 40GB (P4d), TP8 PP8 DP64 with ZeRO, bfloat16, batch 2048 (100B-token "
                "ramp-up), seq 2048 (Almazrouei et al. 2023, arXiv 2311.16867)",
         notes="'~7,000,000' is rounded; 'up to 4,096' GPUs: 4096 used as the count; AWS P4d has 400 Gb/s per "
               "8-GPU node: 50 Gb/s per GPU between nodes", inter_node_gbps=AWS_P4D),
    dict(name="StableLM-3B-4E1T", model_ref="shape:stablelm-3b-4e1t,32,2560,32,6912,50304,gated", tokens=4.0e12,
         gpu_id="A100-40GB-SXM", gpu_hours=256 * 30 * 24, gpu_count=256, seq_len=4096, global_batch=1024,
         precision="bf16", source_id="stablelm3b-card-2023", source_date="2023-09",
         source="FULL RUN. Stability AI 2023 StableLM-3B-4E1T model card (stabilityai/stablelm-3b-4e1t): 1T tokens "
                "for 4 epochs, bfloat16, 256 NVIDIA A100 40GB (AWS P4d), began August 23 2023, approximately 30 "
                "days; Stability-AI/StableLM configs/stablelm-3b-4e1t.yml: 32 layers, hidden 2560, 32 heads, seq "
                "4096, SwiGLU, untied, micro batch 4, 955,000 iterations ~ 4.0T tokens at 4M-token batches",
         notes="GPU-hours derived 256 x 30 d x 24 h (wall clock, 'approximately 30 days'); FFN 6912 and vocab "
               "50304 reproduce the card's 2,795,443,200 parameters exactly; global_batch = 256 GPUs x 4; the "
               "config checkpoints activations; source_date from the training dates (card undated); AWS P4d: 50 Gb/s "
               "per GPU between nodes", inter_node_gbps=AWS_P4D),
]


def _cell(v: str):
    v = v.strip()
    return "" if v in ("", "n/a", "-") else v


def _precision(text: str) -> str:
    t = text.upper()
    return "fp4" if "FP4" in t else ("fp8" if "FP8" in t else "bf16")


def _base(**kw) -> dict:
    out = {c: "" for c in COLUMNS}
    out.update(use=1, method="full", flash_attention=1, ep=1, vp=1)
    out.update({k: v for k, v in kw.items() if v not in (None,)})
    return out


# SQuAD packed into 4096-token sequences (NeMo's packed SFT keeps each example's attention to itself, THD /
# cu_seqlens): a SQuAD v1.1 example is one Wikipedia paragraph, a question and a short answer (Rajpurkar et al.
# 2016, arXiv 1606.05250); NVIDIA does not state the mean packed example length, so 512 tokens is assumed, on the
# long side (a longer span costs more attention: pessimistic).
SQUAD_SAMPLE_LEN = 512
SQUAD_PACKING_NOTE = ("; packed SQuAD examples attend within themselves (NeMo packed SFT): mean example length not "
                      f"stated, {SQUAD_SAMPLE_LEN} tokens assumed (one Wikipedia paragraph, a question and a short "
                      "answer; on the long side)")


def _throughput_row(*, name, model_ref, gpu_id, n, prec, gbs, mbs, seq, tok_s_gpu, source, source_id, date,
                    notes, tp="", pp="", cp="", vp="", ep="", dp="", fsdp="", method="full", nvl="",
                    inter=H100_NDR, lora_rank="", lora_targets="", sample_len="") -> dict:
    step = float(gbs) * float(seq) / (float(tok_s_gpu) * float(n))
    return _base(name=name, row_type="THROUGHPUT", model_ref=model_ref, gpu_id=gpu_id, gpu_count=n, precision=prec,
                 method=method, tp=tp, pp=pp, dp=dp, cp=cp, ep=ep or 1, vp=vp or 1, micro_batch=mbs,
                 seq_len=seq, global_batch=gbs, inter_node_gbps=inter, step_time_s=round(step, 6),
                 step_time_basis="global batch x seq / (tokens/s/GPU x GPUs)",
                 measured_tokens_per_s_per_gpu=tok_s_gpu, source=source, source_id=source_id, source_date=date,
                 notes=notes, fsdp=fsdp, nvlink_domain=nvl, lora_rank=lora_rank, lora_targets=lora_targets,
                 sample_len=sample_len, source_gpu=gpu_id, source_mfu_or_tflops=f"{tok_s_gpu} tokens/s/GPU")


# (table, source id, date, container, page URL, FSDP column printed). MB_BLOCKS come first in the CSV; MB_BLOCKS_NEW
# are appended after every other block so that the earlier rows keep their row numbers.
MB_BLOCKS = ((MB_2602, "megatron-bridge-26.02", "2026-02", "26.02", MB, True),
             (MB_2511, "megatron-bridge-25.11", "2025-11", "25.11", MB, True),
             (MB_2509, "megatron-bridge-25.09", "2025-09", "25.09", MB, True))
MB_BLOCKS_NEW = ((MB_2604, "megatron-bridge-26.04", "2026-04", "26.04", MB, True),
                 (MB_2606, "megatron-bridge-26.06", "2026-06", "26.06", MB, False),
                 (MB_2608, "megatron-bridge-26.08", "2026-08", "26.08", MB_CURRENT, False))

NEW_MB_SOURCES = {block[1] for block in MB_BLOCKS_NEW}


def megatron_bridge_rows(blocks=MB_BLOCKS) -> list[dict]:
    out = []
    for table, sid, date, cont, url, has_fsdp in blocks:
        new = sid in NEW_MB_SOURCES
        # the newer blocks name the page section they come from; the older rows' source text is kept as it was
        where = f"{url}, section '{cont} NeMo Container' / Pre-Training Performance" if new else url
        for line in table.strip().splitlines():
            c = [_cell(x) for x in line.split("|")]
            model, system, n, prec, gbs, mbs, seq, fsdp, tp, pp, cp, vp, ep, tok = c
            base = re.sub(r" \(.*\)$", "", model)
            gpu = MB_SYSTEMS[system]
            nvl = min(int(n), 64) if gpu in ("GB200", "GB300") else ""
            note = MB_NOTE.format(fsdp=fsdp or 0)
            if "(tokendrop)" in model:
                note += "; token-dropping MoE"
            if sid.endswith("25.09"):
                note += "; precision FP8 read from the page's footnote (no precision column)"
            if not has_fsdp:
                note += "; no FSDP column in this container's table: FSDP 0 (DDP) assumed"
            if base == "Kimi_K2":
                note += "; the page notes the Muon optimizer was used for Kimi-K2 pre-training"
            out.append(_throughput_row(
                name=f"{base} {system} {prec} (NeMo {cont})", model_ref=MB_MODELS[base], gpu_id=gpu, n=int(n),
                prec=_precision(prec), gbs=int(gbs), mbs=int(mbs), seq=int(seq), tok_s_gpu=float(tok),
                source=f"THROUGHPUT. NVIDIA Megatron-Bridge performance summary, {cont} NeMo container, {system} "
                       f"({where}); {prec} TP{tp or 1} PP{pp or 1} CP{cp or 1} VP{vp or '-'} EP{ep or 1} MBS{mbs} "
                       f"GBS{gbs} seq {seq}",
                source_id=sid, date=date, notes=note, tp=tp or 1, pp=pp or 1, cp=cp or 1, vp=vp, ep=ep, fsdp=fsdp,
                nvl=nvl))
    return out


def nemo_rows() -> list[dict]:
    out = []
    for line in NEMO_2407_PRE.strip().splitlines():
        name, ref, n, gbs, mbs, seq, tp, pp, cp, vp, tok = [_cell(x) for x in line.split("|")]
        out.append(_throughput_row(
            name=f"{name} pretrain DGX-H100 FP8 (NeMo 24.07)", model_ref=ref, gpu_id="H100-SXM", n=int(n), prec="fp8",
            gbs=int(gbs), mbs=int(mbs), seq=int(seq), tok_s_gpu=float(tok), tp=tp, pp=pp, cp=cp, vp=vp,
            source=f"THROUGHPUT. NVIDIA NeMo Framework performance summary, NeMo 24.07, DGX-H100, FP8 "
                   f"({NEMO_2407}): TP{tp} PP{pp} CP{cp} VP{vp} MBS{mbs} GBS{gbs} seq {seq}",
            source_id="nemo-perf-24.07", date="2024-07", notes="DGX H100, 400 Gb/s per GPU between nodes"))
    for line in NEMO_2407_FT.strip().splitlines():
        name, ref, task, n, gbs, mbs, seq, tp, pp, tok = [_cell(x) for x in line.split("|")]
        method = "lora" if task == "LoRA" else "full"
        out.append(_throughput_row(
            name=f"{name} {task} DGX-H100 FP8 (NeMo 24.07)", model_ref=ref, gpu_id="H100-SXM", n=int(n), prec="fp8",
            gbs=int(gbs), mbs=int(mbs), seq=int(seq), tok_s_gpu=float(tok), tp=tp, pp=pp, method=method,
            lora_rank=32 if method == "lora" else "", lora_targets="attention" if method == "lora" else "",
            source=f"THROUGHPUT. NVIDIA NeMo Framework performance summary, NeMo 24.07 fine-tuning, DGX-H100, FP8 "
                   f"({NEMO_2407}): {task}, SQuAD packed to {seq}, TP{tp} PP{pp} MBS{mbs} GBS{gbs}",
            source_id="nemo-perf-24.07-finetune", date="2024-07", sample_len=SQUAD_SAMPLE_LEN,
            notes=(("fine-tuning; LoRA adapters not printed: NeMo's default PEFT config assumed "
                    "(examples/nlp/language_modeling/tuning/conf/megatron_gpt_finetuning_config.yaml: lora_tuning "
                    "target_modules ['attention_qkv'], adapter_dim 32), read as rank 32 on the attention "
                    "projections (qkv + output: the estimator's narrowest target set, pessimistic)")
                   if method == "lora"
                   else "supervised fine-tuning (all weights trained)") + SQUAD_PACKING_NOTE))
    for (sid, date, ref, mname, gpu, cont), table in NEMO_LONG_TABLES.items():
        for line in table.strip().splitlines():
            k, n, gbs, nocp, tp, pp, dp, cp, tflops = [_cell(x).replace(",", "") for x in line.split("|")]
            seq = int(k) * 1024
            n_printed = n
            if gpu == "B200":
                n = str(B200_GPUS_REVISED[int(n)])
            assert int(n) == int(tp) * int(pp) * int(dp) * int(cp), (sid, k)
            common = dict(row_type="THROUGHPUT", model_ref=ref, gpu_id=gpu, gpu_count=int(n), precision="fp8",
                          micro_batch=1, seq_len=seq, global_batch=int(gbs), inter_node_gbps=H100_NDR,
                          flops_convention="nvidia (full attention)", source_id=sid, source_date=date, source_gpu=gpu,
                          step_time_basis="derived from stated TFLOPs/GPU (see validation code)")
            src = (f"THROUGHPUT. NVIDIA NeMo long-sequence performance ({NEMO_LONG}, May 2025 version), {mname} FP8, "
                   f"{cont}: seq {k}K on {n} GPUs, batch {gbs}")
            note = ("step time derived from TFLOP/s/GPU with NVIDIA's model-FLOP count (full attention, as NeMo "
                    "reports); micro batch 1 assumed")
            if n != n_printed:
                note += (f"; GPU count {n} = TP x PP x DP x CP from the page's later revision (May 2025 version "
                         f"printed {n_printed})")
            out.append(_base(name=f"{mname} seq {k}K CP{cp} {gpu} FP8 (NeMo long sequence)", tp=tp, pp=pp, dp=dp,
                             cp=cp, measured_tflops_per_gpu=float(tflops), source_mfu_or_tflops=f"{tflops} TFLOP/s/GPU",
                             source=f"{src}, with CP: TP{tp} PP{pp} DP{dp} CP{cp}, {tflops} TFLOP/s/GPU", notes=note,
                             **common))
            if nocp and int(k) >= 32:  # without CP: the page's best layout is not printed (searched, CP pinned to 1)
                out.append(_base(name=f"{mname} seq {k}K no CP {gpu} FP8 (NeMo long sequence)", cp=1,
                                 measured_tflops_per_gpu=float(nocp), source_mfu_or_tflops=f"{nocp} TFLOP/s/GPU",
                                 source=f"{src}, without CP: {nocp} TFLOP/s/GPU (most performant layout within "
                                        f"memory, not printed)",
                                 notes=note + "; layout searched with CP = 1", **common))
    for line in MPT_ROWS.strip().splitlines():
        m, seq, n, mbs, gbs, tok, ckpt, prec = [_cell(x) for x in line.split("|")]
        layers, hidden, heads = MPT_SHAPES[m]
        ref = f"shape:mpt-{m},{layers},{hidden},{heads},{4 * hidden},50368,tied"
        row = _throughput_row(
            name=f"MPT-{m} seq {seq} x{n} H100 {prec.upper()} (LLM Foundry)", model_ref=ref, gpu_id="H100-SXM",
            n=int(n), prec=prec, gbs=int(gbs), mbs=int(mbs), seq=int(seq), tok_s_gpu=float(tok), fsdp=int(n),
            source=f"THROUGHPUT. MosaicML LLM Foundry MPT training benchmarks ({LLMF}), H100 80GB "
                   f"{'BF16' if prec == 'bf16' else 'FP8'} table: MPT-{m}, seq {seq}, {n} GPUs, micro batch {mbs}, "
                   f"global batch {gbs}, FSDP FULL_SHARD, activation checkpointing {bool(int(ckpt))}, {tok} T/s/GPU",
            source_id="llm-foundry-2023", date="2023-10",
            notes="MPT shape from the LLM Foundry yamls (MHA, non-gated 4x FFN); FSDP FULL_SHARD read as ZeRO-3; "
                  "measured with learned position embeddings (counted in the table's parameters, not here)")
        row["recompute"] = 2 if int(ckpt) else 0
        out.append(row)
    return out


def gaudi_rows() -> list[dict]:
    out = []
    for (sid, date, sw), table in GAUDI2_ROWS.items():
        for line in table.strip().splitlines():
            name, ref, n, seq, gbs, tok = [_cell(x) for x in line.split("|")]
            out.append(_throughput_row(
                name=f"{name} Gaudi2 x{n} FP8 ({sid})", model_ref=ref, gpu_id="Gaudi2", n=int(n), prec="fp8",
                gbs=int(gbs), mbs="", seq=int(seq), tok_s_gpu=round(float(tok) / int(n), 3),
                source=f"THROUGHPUT. Intel Gaudi 2 model performance data, training ({GAUDI2_118}; {sw}): {name}, "
                       f"{n} HPU, seq {seq}, FP8, batch {gbs}, {tok} tokens/s",
                source_id=sid, date=date,
                notes="tokens/s printed for all HPUs (divided by the count); batch read as global batch in sequences; "
                      "layout not printed (Megatron-DeepSpeed): searched; scale-out 3 x 100 GbE ports per card "
                      "(300 Gb/s per card between nodes)", inter=300))
    return out


# Config names of the v4.0 NVIDIA-stack LoRA submissions carry MINIBS (x4 / x2), not the micro batch: their
# config_common.sh sets MBS=1. Read from the submissions, per vendor-runs.csv row.
MLPERF_MICRO_BATCH = {
    "T40-LORA8-H100": (1, "micro batch 1 and 4 micro-batches per DP rank: config_common.sh MBS=1, the config name's "
                          "x4 is MINIBS (mlcommons/training_results_v4.0 NVIDIA/benchmarks/llama2_70b_lora/"
                          "implementations/nemo); FP8 attention (FP8_DPA=1)"),
    "T40-LORA64-L40S": (1, "micro batch 1: config_L40S_16x4x2xtp4pp1cp2.sh MINIBS=1 and config_common.sh MBS=1 "
                           "(mlcommons/training_results_v4.0); FP8_DPA=False"),
}


def mlperf_rows() -> list[dict]:
    path = ROOT / "src" / "gpuplan" / "perf" / "data" / "vendor-runs.csv"
    out = []
    with path.open(newline="", encoding="utf-8") as f:
        vend = [r for r in csv.DictReader(f) if r["regime"] == "training"]
    for r in vend:
        shape = next((v for k, v in MLPERF_SHAPES.items() if r["benchmark"].startswith(f"MLPerf Training {k}")), None)
        if shape is None or r["metric"] not in ("samples_per_s", "tokens_per_s"):
            continue
        n, meas = int(r["gpu_count"]), float(r["measured"])
        seq, gbs = shape["seq_len"], shape["global_batch"]
        samples_s = meas if r["metric"] == "samples_per_s" else meas / seq
        m = MLPERF_LAYOUT.search(r["notes"])
        lay = {}
        if m:
            lay = dict(micro_batch=int(m.group(3)))
            if m.group(4):
                lay.update(tp=int(m.group(4)), pp=int(m.group(5)), cp=int(m.group(6)))
        mbs_fix = MLPERF_MICRO_BATCH.get(r["row_id"])
        if mbs_fix:
            lay["micro_batch"] = mbs_fix[0]
        use, skip = 1, ""
        if r["precision"] not in ("bf16", "fp8", "fp4"):
            use, skip = 0, f"precision {r['precision']} is not a training precision of the estimator"
        if r["gpu_id"].startswith("TPU"):
            use, skip = 0, "TPU results are compared in vendor-runs.csv (no TPU training specs in the catalog)"
        nvl = 8
        row = _throughput_row(
            name=f"{r['benchmark'].replace('MLPerf Training ', 'MLPerf ')[:48]} {r['gpu_id']} x{n} ({r['row_id']})",
            model_ref=shape["model_ref"], gpu_id=r["gpu_id"], n=n, prec=r["precision"], gbs=gbs,
            mbs=lay.get("micro_batch", ""), seq=seq, tok_s_gpu=round(samples_s * seq / n, 3),
            tp=lay.get("tp", ""), pp=lay.get("pp", ""), cp=lay.get("cp", ""), method=shape["method"],
            lora_rank=shape.get("lora_rank", ""), lora_targets=shape.get("lora_targets", ""), nvl=nvl if r["gpu_id"] in ("GB200", "GB300") else "",
            source=f"THROUGHPUT. {r['benchmark']}, {r['scenario']} ({r['source']}); {r['metric']} {r['measured']} "
                   f"as normalized in vendor-runs.csv row {r['row_id']}",
            source_id=r["source_id"], date=r["date"],
            notes=f"global batch {gbs} and seq {seq} assumed{'; ' + mbs_fix[1] if mbs_fix else ''} (benchmark "
                  f"reference shapes); layout from the config name where quoted, else searched; vendor-runs.csv "
                  f"note: {r['notes'][:160]}")
        row["use"], row["skip_reason"] = use, skip
        out.append(row)
    return out


def full_rows() -> list[dict]:
    out = []
    for d in FULL_RUNS:
        d = dict(d)
        hb = d.pop("hours_basis", "wall")
        out.append(_base(row_type="FULL", hours_basis=hb, inter_node_gbps=d.pop("inter_node_gbps", H100_NDR),
                         global_batch=d.pop("global_batch", ""), gpu_count=d.pop("gpu_count", ""),
                         source_gpu=d["gpu_id"], **d))
    return out


# Source id and date of the original rows, from their source text (first match wins).
SOURCE_IDS = [
    (r"Touvron et al\. 2023 LLaMA", "llama1-2023", "2023-02"),
    (r"Llama 2 \(arXiv", "llama2-2023", "2023-07"),
    (r"Meta Llama 3 model card", "llama3-card-2024", "2024-04"),
    (r"Llama 3\.1 model card", "llama31-card-2024", "2024-07"),
    (r"Llama Team 2024", "llama3-herd-2024", "2024-07"),
    (r"OPT \(arXiv", "opt-2022", "2022-05"),
    (r"Pythia", "pythia-2023", "2023-04"),
    (r"PaLM \(arXiv", "palm-2022", "2022-04"),
    (r"Gopher", "gopher-2021", "2021-12"),
    (r"Brown et al\. 2020", "gpt3-2020", "2020-05"),
    (r"BloombergGPT", "bloomberggpt-2023", "2023-03"),
    (r"TinyLlama", "tinyllama-2024", "2024-01"),
    (r"DeepSeek-V2", "deepseek-v2-2024", "2024-05"),
    (r"Nemotron-4 340B Technical Report", "nemotron4-2024", "2024-06"),
    (r"Smith et al\. 2022 MT-NLG", "mtnlg-2022", "2022-01"),
    (r"Narayanan et al\. 2021", "narayanan-2021", "2021-04"),
    (r"Korthikanti et al\. 2022", "korthikanti-2022", "2022-05"),
    (r"MLPerf Training v3\.0", "mlperf-training-v3.0", "2023-06"),
    (r"MLPerf Training v3\.1", "mlperf-training-v3.1", "2023-11"),
    (r"MLPerf Training v4\.0", "mlperf-training-v4.0", "2024-06"),
    (r"MLPerf Training v5\.1", "mlperf-training-v5.1", "2025-11"),
    (r"dgxc-benchmarking", "dgxc-benchmarking-2025", "2025-06"),
]


def source_id(src: str) -> tuple[str, str]:
    for pat, sid, date in SOURCE_IDS:
        if re.search(pat, src):
            return sid, date
    raise SystemExit(f"no source id for {src[:60]!r}")


def regime(row: dict) -> str:
    """The row's regime, by the same rule the planner uses (gpuplan.perf.error_bands)."""
    from gpuplan.perf.error_bands import classify_fields
    from gpuplan.perf.training_validation import row_gpu, row_model
    from gpuplan.perf.training_shape import model_shape

    if not row["gpu_id"] or (not row["model_ref"] and not row["total_params"]):
        return ""
    spec = row_model(row)
    shape = model_shape(spec)
    gpu = row_gpu(row)
    return classify_fields(is_moe=spec.n_experts > 0, active_params=shape.active_params, gpu_vendor=gpu.vendor,
                           gpu_id=gpu.id, seq_len=int(float(row["seq_len"] or 2048)), method=row["method"] or "full",
                           precision=row["precision"] or "bf16")


def main() -> int:
    if not SRC.exists():
        print(f"missing {SRC}", file=sys.stderr)
        return 1
    sys.path.insert(0, str(ROOT / "src"))
    with SRC.open(newline="", encoding="utf-8") as f:
        rows = [normalize(r, i) for i, r in enumerate(csv.DictReader(f))]
    for r in rows:
        r["source_id"], r["source_date"] = source_id(r["source"])
    rows += megatron_bridge_rows() + nemo_rows() + gaudi_rows() + mlperf_rows() + full_rows()
    rows += megatron_bridge_rows(MB_BLOCKS_NEW)  # appended last: earlier rows keep their row numbers
    for i, r in enumerate(rows):
        r["row"] = i
        r["regime"] = regime(r)
        r["framework"] = "pytorch" if r["source_id"] in PYTORCH_SOURCES else ""
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    used = sum(1 for r in rows if r["use"] == 1)
    print(f"wrote {OUT.relative_to(ROOT)}: {len(rows)} rows, {used} usable")
    from collections import Counter

    print("  usable rows per regime:", dict(Counter(r["regime"] for r in rows if r["use"] == 1)))
    for r in rows:
        if r["use"] != 1:
            print(f"  skip row {r['row']} {r['name']}: {r['skip_reason']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
