#!/usr/bin/env python3
"""Copy /work/shared/data/inference-runs.csv into package data with machine-readable columns.

The shared file is written for people ('FP8 (submitter-chosen...)', 'H200-SXM-141GB',
'max-throughput offline, TP2'). The serving validation needs model keys, canonical GPU
ids, precision keys, an engine key, the parallel layout, the scenario kind and the
measured numbers. How each published run was set up (its layout, a dataset's mean input
length when the row does not give it) is stated below per source row with the reason;
rows the estimator cannot represent are kept with `use=skip` and a stated reason.

The package file has since grown by rows added to it directly, each with its source (InferenceX, GPUStack, the
vLLM PRs, MLPerf Inference v5.1, ...): this script no longer knows them, so it refuses to overwrite a file holding
rows it would not write back (--force drops them).

Run by hand:  python scripts/build_serving_validation.py [--shared ../shared] [--force]
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src/gpuplan/perf/data/inference-runs.csv"
MODELS = ROOT / "src/gpuplan/perf/data/inference-models.json"

COLUMNS = [
    "row_id", "source_id", "source_date", "regime", "model", "model_label", "params_b", "active_params_b", "gpu",
    "gpu_label", "n_gpus", "tp", "ep", "dp_attention", "precision", "kv_precision", "engine", "engine_label", "scenario", "served",
    "input_len", "output_len",
    "concurrency", "max_num_seqs", "num_prompts", "fixed_lengths", "input_len_assumed", "measured_output_tokens_per_s", "measured_ttft_ms",
    "measured_tpot_ms", "use", "skip_reason", "fit_note", "notes", "source",
]

# Sources benchmarked with `vllm bench serve` against `vllm serve` (their TTFT includes the server's front end).
SERVED_SOURCES = {"gpustack-gpt-oss-20b-h100", "gpustack-gpt-oss-20b-a100"}

# Closed-loop benchmarks whose every prompt and output has one length, as their sources show (the printed token totals
# divide exactly, or the command runs a random data set at range ratio 0 / sglang's 1.0 with --ignore-eos): their
# clients arrive in groups (gpuplan.perf.inference_estimate._Replica.arrival_group). InferenceX draws lengths at range
# ratio 0.8 (its benchmark-tmpl.yml), GPUStack's latency pages use ShareGPT: those lengths vary.
FIXED_LENGTH_SOURCES = {"achatbot-sglang-gptoss-183", "vllm-pr48757-qwen3-32b", "vllm-recipes-pr431-mi300x"}

# trtllm-bench's offline runs. Every version of NVIDIA's performance overview prepares each ISL/OSL dataset with a
# stated request count (its "$num_requests" table, `prepare_dataset.py --num-requests`), all queued at once: a run with
# fewer requests than fit at once never fills the engine, and one a little over ends in a partial wave. The v1.2 page
# lists 1024/1024 (3000) but not the 1000/1000 of its own tables: those take the 3000 every earlier page gives 1000/1000.
TRTLLM_BENCH_SOURCES = {"trtllm-perf-v0.14", "trtllm-perf-v0.17", "trtllm-perf-v1.0", "trtllm-perf-v1.2"}
TRTLLM_BENCH_REQUESTS = {
    (128, 128): 30000, (128, 2048): 3000, (128, 4096): 1500, (1000, 2000): 1500, (2048, 128): 3000, (2048, 2048): 1500,
    (5000, 500): 1500, (1000, 1000): 3000, (500, 2000): 3000, (20000, 2000): 1000, (1024, 1024): 3000,
    (8192, 1024): 1500, (1024, 8192): 1500, (32768, 1024): 1000, (1024, 32768): 1000,
}


def bench_requests(row: dict) -> str:
    """The request count of a trtllm-bench offline row (TRTLLM_BENCH_REQUESTS), '' for any other row."""
    if row["source_id"] in TRTLLM_BENCH_SOURCES and row["scenario"] == "max_throughput" and not row["concurrency"]:
        return str(TRTLLM_BENCH_REQUESTS[(int(row["input_len"]), int(row["output_len"]))])
    return row.get("num_prompts", "")


# MLPerf llama2-70b (OpenOrca subset): the result logs give output length but not input length. The benchmark's fixed
# data set (open_orca_gpt4_tokenized_llama.sampled_24576.pkl, md5 c247a315b9328365f66d2c2585b35cd4) holds 24,576 prompts
# of 48-1,021 tokens, 5,463,976 in all: a mean of 222.3 (its length table as FlashLab-MBZUAI/HBFSim's
# validation/calibration/h100-llama2-70b-calibration-protocol.json pins it, digest-checked against that file).
MLPERF_ISL = 222
MLPERF_ISL_NOTE = ("mean input length from the benchmark's data set: 5,463,976 tokens over its 24,576 prompts (48-1,021 "
                   "each) = 222.3, per the length table pinned to the official pickle's digest")

# AMD's MLPerf Inference submissions run its own harness, not stock vLLM: scored under the 'vllm' key, never fitted.
AMD_HARNESS = ("AMD's MLPerf harness: a patched vLLM with its own decode-batch scheduler and several decode steps per "
               "scheduling call, not the stock vLLM whose speed the 'vllm' engine factor stands for; scored, not fitted "
               "(fitting it would speed up every stock-vLLM estimate); it sets the CDNA architecture factors instead "
               "(vendor-runs.csv, against TensorRT-LLM)")

# How each source row (0-based, in file order) was run, keyed by a check on its text so a
# reordered or edited source file fails loudly instead of mislabelling rows.
SETUP = [
    dict(check="H200-SXM-141GB", model="llama-2-70b", precision="fp8", kv="fp8", engine="trtllm", tp=1,
         scenario="server_slo", isl=MLPERF_ISL,
         notes="8 replicas of TP1 (70B fp8 fits one H200); Server TTFT/TPOT are means under Poisson load; " + MLPERF_ISL_NOTE),
    dict(check="8xMI300X", model="llama-2-70b", precision="fp8", kv="fp8", engine="vllm", tp=1,
         scenario="max_throughput", isl=MLPERF_ISL, fit_note=AMD_HARNESS,
         notes="8 replicas of TP1 (70B fp8 fits one MI300X); " + MLPERF_ISL_NOTE),
    dict(check="1xMI300X", model="llama-2-70b", precision="fp8", kv="fp8", engine="vllm", tp=1,
         scenario="max_throughput", isl=MLPERF_ISL, fit_note=AMD_HARNESS, notes=MLPERF_ISL_NOTE),
    dict(check="H100-SXM-80GBx2", model="llama-2-70b", precision="fp8", kv="fp8", engine="trtllm", tp=2,
         scenario="server_slo", isl=MLPERF_ISL,
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
    dict(check="Kimi-K2.5", model="kimi-k2", precision="fp4", kv=None, engine="vllm", tp=8, ep=8,
         scenario="fixed_concurrency",
         notes="Kimi-K2.5 text stack = Kimi-K2 shape; TP8 attention + EP experts (vLLM default)"),
]

# Where each legacy row (by index) comes from: (source_id, date of the measurement or its publication).
LEGACY_SOURCES = {
    0: ("mlperf-inference-v4.1", "2024-08"), 1: ("mlperf-inference-v4.1", "2024-08"), 2: ("mlperf-inference-v4.1", "2024-08"),
    3: ("mlperf-inference-v4.0", "2024-03"), **{i: ("trtllm-perf-v1.0", "2025-09") for i in range(4, 11)},
    11: ("amd-rocm-perf-2025-04", "2025-04-13"), 12: ("oracle-mi300x-405b", "2024"), 13: ("oracle-mi300x-405b", "2024"),
    14: ("lmsys-large-ep", "2025-05-05"), 15: ("deepseek-infra-overview", "2025-03-01"),
    16: ("kipply-fastertransformer", "2022"), 17: ("kipply-fastertransformer", "2022"),
    18: ("llmservingsim-validation", "2026"), 19: ("aiconfigurator-1396", "2026"),
}

# Sources of the rows below: url, title, date.
SOURCES = {
    "trtllm-perf-v1.0": ("https://github.com/NVIDIA/TensorRT-LLM/blob/00f37686aa854010d68bcbd0f4ab000221541ca6/docs/source/performance/perf-overview.md",
                         "TensorRT-LLM performance overview, v1.0 tables (trtllm-bench throughput, PyTorch backend, infinite rate, "
                         "fixed ISL/OSL, Total Output Throughput); MoE runs use attention DP + EP", "2025-09"),
    "trtllm-perf-v0.17": ("https://github.com/NVIDIA/TensorRT-LLM/blob/258c7540c03517def55d9a5aadfa9288af474e1b/docs/source/performance/perf-overview.md",
                          "TensorRT-LLM performance overview, v0.17 throughput table (engine flow, in-flight batching, tokens/s)", "2025-02"),
    "trtllm-serving-v0.14": ("https://github.com/NVIDIA/TensorRT-LLM/blob/258c7540c03517def55d9a5aadfa9288af474e1b/docs/source/performance/perf-overview.md",
                             "TensorRT-LLM performance overview, 'Online Serving Measurements' (Triton backend, v0.14.0, BF16, 500 requests, mean TTFT / ITL)", "2024-11"),
    "amd-rocm-perf-2025-10": ("https://www.amd.com/zh-cn/developer/resources/rocm-hub/dev-ai/performance-results.html",
                              "AMD ROCm AI performance results, vLLM (rocm/vllm:rocm7.0.0_vllm_0.10.2_20251006), 8x MI300X", "2025-10-06"),
    "amd-rocm-perf-2025-07": ("https://www.amd.com/en/developer/resources/rocm-hub/dev-ai/performance-results.html",
                              "AMD ROCm AI performance results, vLLM (rocm/vllm rocm6.4.1_vllm_0.9.1_20250715), 8x MI300X", "2025-07-16"),
    "oracle-mi300x-405b": ("https://blogs.oracle.com/cloud-infrastructure/serving-llama-31-405b-model-with-amd-mi300x-gpus",
                           "Oracle OCI blog: serving Llama 3.1 405B with AMD MI300X (vLLM benchmark_latency / benchmark_throughput)", "2024"),
    "intel-gaudi3-perf-1.18": ("https://intel.com/content/www/us/en/developer/platform/gaudi/model-performance.html",
                               "Intel Gaudi 3 model performance data, LLM throughput (Optimum-Habana, SynapseAI 1.18.0)", "2024-10"),
    "intel-gaudi2-perf-1.18": ("https://intel.com/content/www/us/en/developer/platform/gaudi/model-performance-gaudi2-inference.html",
                               "Intel Gaudi 2 model performance data, LLM throughput (Optimum-Habana, SynapseAI 1.18.0)", "2024-10"),
    "trtllm-perf-v1.2": ("https://github.com/NVIDIA/TensorRT-LLM/blob/03e27c7d5ff0c6e89f8328838c0a8e64f1b34f9d/docs/source/developer-guide/perf-overview.md",
                         "TensorRT-LLM performance overview as published for release 1.2.0 "
                         "(https://nvidia.github.io/TensorRT-LLM/1.2.0/developer-guide/perf-overview.html): trtllm-bench throughput, "
                         "PyTorch backend, fixed ISL/OSL, 'Per GPU Output Throughput'; DEPn = attention DP + EP over n GPUs", "2025-10 or later"),
    "gpustack-gpt-oss-20b-h100": ("https://github.com/gpustack/gpustack/blob/7b50d5067ddbdeba0739e7f72d6f40e53d3b9a04/docs/performance-lab/gpt-oss-20b/h100.md",
                                  "GPUStack performance lab, GPT-OSS-20B on one H100 SXM: 'Baseline benchmark results' (vllm serve "
                                  "openai/gpt-oss-20b, vLLM v0.11.0 defaults; vllm bench serve, random dataset, all prompts sent at once)", "2025"),
    "gpustack-gpt-oss-20b-a100": ("https://github.com/gpustack/gpustack/blob/7ae332aaf05783e657560ef927c527b156e2536d/docs/performance-lab/gpt-oss-20b/a100.md",
                                  "GPUStack performance lab, GPT-OSS-20B on one A100 SXM 80GB: 'Baseline benchmark results' (vllm serve "
                                  "openai/gpt-oss-20b, vLLM v0.11.0 defaults; vllm bench serve, random dataset, all prompts sent at once)", "2025"),
    "trtllm-perf-v0.14": ("https://github.com/arthurrasmusson/TensorRT-LLM/blob/e00d4e6564921307dd264b61fe1d46f116095e0e/docs/source/performance/perf-overview.md",
                          "TensorRT-LLM performance overview, throughput table 'generated using version 0.14.0' (engine flow, "
                          "in-flight batching, tokens/s); read from a fork's copy of NVIDIA's doc", "2024-11"),
}

# source_id|model|gpu|n_gpus|tp|ep|attn_dp|precision|kv|engine|scenario|isl|osl|conc|max_num_seqs|out_tok_s|ttft_ms|tpot_ms|notes
# Every number is as printed by the source, or derived from printed numbers as the notes say.
NEW_ROWS = """
trtllm-perf-v1.0|llama-3.3-70b|H200-SXM|1|1|1|0|fp8|fp8|trtllm|max_throughput|1000|1000|||2909|||NVIDIA fp8 checkpoint (fp8 KV)
trtllm-perf-v1.0|llama-3.3-70b|H200-SXM|1|1|1|0|fp8|fp8|trtllm|max_throughput|5000|500|||566|||NVIDIA fp8 checkpoint (fp8 KV)
trtllm-perf-v1.0|llama-3.3-70b|H100-SXM|2|2|1|0|fp8|fp8|trtllm|max_throughput|128|2048|||6651|||NVIDIA fp8 checkpoint (fp8 KV)
trtllm-perf-v1.0|llama-3.3-70b|H100-SXM|2|2|1|0|fp8|fp8|trtllm|max_throughput|2048|128|||762|||NVIDIA fp8 checkpoint (fp8 KV)
trtllm-perf-v1.0|llama-3.3-70b|H100-SXM|2|2|1|0|fp8|fp8|trtllm|max_throughput|5000|500|||898|||NVIDIA fp8 checkpoint (fp8 KV)
trtllm-perf-v1.0|llama-3.3-70b|B200|1|1|1|0|fp4|fp8|trtllm|max_throughput|128|2048|||9922|||NVIDIA NVFP4 checkpoint (fp8 KV)
trtllm-perf-v1.0|llama-3.3-70b|B200|1|1|1|0|fp4|fp8|trtllm|max_throughput|20000|2000|||665|||NVIDIA NVFP4 checkpoint (fp8 KV)
trtllm-perf-v1.0|llama-3.3-70b|GB200|1|1|1|0|fp4|fp8|trtllm|max_throughput|1000|1000|||7326|||NVIDIA NVFP4 checkpoint (fp8 KV)
trtllm-perf-v1.0|llama-3.1-405b|H200-SXM|8|8|1|0|fp8|fp8|trtllm|max_throughput|1000|1000|||3330|||NVIDIA fp8 checkpoint (fp8 KV)
trtllm-perf-v1.0|llama-3.1-405b|H200-SXM|8|8|1|0|fp8|fp8|trtllm|max_throughput|20000|2000|||505|||NVIDIA fp8 checkpoint (fp8 KV)
trtllm-perf-v1.0|llama-3.1-405b|B200|4|4|1|0|fp4|fp8|trtllm|max_throughput|1000|1000|||5209|||NVIDIA NVFP4 checkpoint (fp8 KV)
trtllm-perf-v1.0|llama-3.1-8b|H200-SXM|1|1|1|0|fp8|fp8|trtllm|max_throughput|1000|1000|||17744|||NVIDIA fp8 checkpoint (fp8 KV)
trtllm-perf-v1.0|llama-3.1-8b|H200-SXM|1|1|1|0|fp8|fp8|trtllm|max_throughput|128|2048|||26221|||NVIDIA fp8 checkpoint (fp8 KV)
trtllm-perf-v1.0|llama-3.1-8b|H200-SXM|1|1|1|0|fp8|fp8|trtllm|max_throughput|20000|2000|||1804|||NVIDIA fp8 checkpoint (fp8 KV)
trtllm-perf-v1.0|llama-3.1-8b|H100-SXM|1|1|1|0|fp8|fp8|trtllm|max_throughput|20000|2000|||1351|||NVIDIA fp8 checkpoint (fp8 KV)
trtllm-perf-v1.0|llama-3.1-8b|H100-SXM|1|1|1|0|fp8|fp8|trtllm|max_throughput|5000|500|||3459|||NVIDIA fp8 checkpoint (fp8 KV)
trtllm-perf-v1.0|llama-3.3-70b|RTX-PRO-6000|1|1|1|0|fp4|fp8|trtllm|max_throughput|1000|1000|||1787|||RTX PRO 6000 Blackwell Server Edition table, 1 GPU TP1 PP1; NVFP4 checkpoint (fp8 KV)
trtllm-perf-v1.0|llama-3.3-70b|RTX-PRO-6000|1|1|1|0|fp4|fp8|trtllm|max_throughput|128|2048|||2422|||RTX PRO 6000 Blackwell Server Edition table, 1 GPU TP1 PP1; NVFP4 checkpoint (fp8 KV)
trtllm-perf-v1.0|qwen3-30b-a3b|RTX-PRO-6000|1|1|1|0|fp4|fp8|trtllm|max_throughput|1000|1000|||9910|||RTX PRO 6000 Server Edition table, TP1 PP1; NVFP4; MoE run per the doc's MoE command (attention DP + EP; ep assumed = TP)
trtllm-perf-v1.0|qwen3-30b-a3b|RTX-PRO-6000|1|1|1|0|fp4|fp8|trtllm|max_throughput|2048|128|||3257|||RTX PRO 6000 Server Edition table, TP1 PP1; NVFP4
trtllm-perf-v1.0|qwen3-30b-a3b|RTX-PRO-6000|2|2|2|1|fp4|fp8|trtllm|max_throughput|1000|1000|||16431|||RTX PRO 6000 Server Edition table, TP2 PP1; NVFP4; attention DP + EP per the doc's MoE command (ep assumed = TP)
trtllm-perf-v1.0|qwen3-30b-a3b|RTX-PRO-6000|4|4|4|1|fp4|fp8|trtllm|max_throughput|1000|1000|||24046|||RTX PRO 6000 Server Edition table, TP4 PP1; NVFP4; attention DP + EP (ep assumed = TP)
trtllm-perf-v1.0|qwen3-30b-a3b|RTX-PRO-6000|8|8|8|1|fp4|fp8|trtllm|max_throughput|1000|1000|||31785|||RTX PRO 6000 Server Edition table, TP8 PP1; NVFP4; attention DP + EP (ep assumed = TP)
trtllm-perf-v1.0|qwen3-30b-a3b|B200|1|1|1|0|fp4|fp8|trtllm|max_throughput|1000|1000|||25828|||NVFP4 checkpoint (fp8 KV)
trtllm-perf-v1.0|qwen3-30b-a3b|B200|1|1|1|0|fp4|fp8|trtllm|max_throughput|128|2048|||37844|||NVFP4 checkpoint (fp8 KV)
trtllm-perf-v1.0|qwen3-30b-a3b|B200|1|1|1|0|fp4|fp8|trtllm|max_throughput|2048|128|||6251|||NVFP4 checkpoint (fp8 KV)
trtllm-perf-v1.0|qwen3-30b-a3b|GB200|1|1|1|0|fp4|fp8|trtllm|max_throughput|1000|1000|||17481|||NVFP4 checkpoint (fp8 KV)
trtllm-perf-v1.0|qwen3-235b-a22b|H200-SXM|8|8|8|1|fp8|fp8|trtllm|max_throughput|1000|1000|||23789|||fp8 checkpoint; attention DP + EP per the doc's MoE command (ep assumed = TP)
trtllm-perf-v1.0|qwen3-235b-a22b|H200-SXM|8|8|8|1|fp8|fp8|trtllm|max_throughput|128|2048|||42821|||fp8 checkpoint; attention DP + EP (ep assumed = TP)
trtllm-perf-v1.0|qwen3-235b-a22b|H200-SXM|8|8|8|1|fp8|fp8|trtllm|max_throughput|2048|128|||3331|||fp8 checkpoint; attention DP + EP (ep assumed = TP)
trtllm-perf-v1.0|qwen3-235b-a22b|H100-SXM|8|8|8|1|fp8|fp8|trtllm|max_throughput|1000|1000|||14898|||fp8 checkpoint; attention DP + EP (ep assumed = TP)
trtllm-perf-v1.0|qwen3-235b-a22b|B200|8|8|8|1|fp4|fp8|trtllm|max_throughput|1000|1000|||42391|||NVFP4 checkpoint; attention DP + EP (ep assumed = TP)
trtllm-perf-v1.0|llama-4-maverick|H200-SXM|8|8|8|1|fp8|fp8|trtllm|max_throughput|1000|1000|||31782|||fp8 checkpoint; attention DP + EP (ep assumed = TP)
trtllm-perf-v1.0|llama-4-maverick|H200-SXM|8|8|8|1|fp8|fp8|trtllm|max_throughput|2048|128|||7307|||fp8 checkpoint; attention DP + EP (ep assumed = TP)
trtllm-perf-v1.0|llama-4-maverick|H100-SXM|8|8|8|1|fp8|fp8|trtllm|max_throughput|1000|1000|||9677|||fp8 checkpoint; attention DP + EP (ep assumed = TP)
trtllm-perf-v1.0|llama-4-maverick|B200|8|8|8|1|fp4|fp8|trtllm|max_throughput|1000|1000|||79617|||NVFP4 checkpoint; attention DP + EP (ep assumed = TP)
trtllm-perf-v1.0|llama-4-scout|H100-SXM|4|4|4|1|fp8|fp8|trtllm|max_throughput|1000|1000|||12129|||fp8 checkpoint; attention DP + EP (ep assumed = TP)
trtllm-perf-v1.0|llama-4-scout|H200-SXM|4|4|4|1|fp8|fp8|trtllm|max_throughput|1000|1000|||21636|||fp8 checkpoint; attention DP + EP (ep assumed = TP)
trtllm-perf-v1.0|llama-4-scout|B200|1|1|1|0|fp4|fp8|trtllm|max_throughput|1000|1000|||10591|||NVFP4 checkpoint (fp8 KV)
trtllm-perf-v0.17|llama-3.1-8b|L40S|1|1|1|0|fp8|fp8|trtllm|max_throughput|1000|1000|||4054.71|||FP8 engine (KV fp8 with FP8 quantization per the doc)
trtllm-perf-v0.17|llama-3.1-8b|L40S|1|1|1|0|fp8|fp8|trtllm|max_throughput|128|2048|||5365.81|||FP8 engine (KV fp8)
trtllm-perf-v0.17|llama-3.1-8b|L40S|1|1|1|0|fp8|fp8|trtllm|max_throughput|2048|128|||1066.52|||FP8 engine (KV fp8)
trtllm-perf-v0.17|llama-3.1-8b|A100-80GB-SXM|1|1|1|0|fp16|fp16|trtllm|max_throughput|1000|1000|||3786.83|||FP16 engine
trtllm-perf-v0.17|llama-3.1-8b|A100-80GB-SXM|1|1|1|0|fp16|fp16|trtllm|max_throughput|2048|2048|||2424.16|||FP16 engine
trtllm-perf-v0.17|llama-3.1-8b|H100-SXM|1|1|1|0|fp8|fp8|trtllm|max_throughput|2048|2048|||9488.42|||FP8 engine (KV fp8)
trtllm-perf-v0.17|llama-3.1-70b|H100-SXM|4|4|1|0|fp8|fp8|trtllm|max_throughput|1000|1000|||7430.99|||FP8 engine (KV fp8)
trtllm-perf-v0.17|llama-3.1-70b|H100-SXM|4|4|1|0|fp8|fp8|trtllm|max_throughput|20000|2000|||920.19|||FP8 engine (KV fp8)
trtllm-perf-v0.17|llama-3.1-70b|H100-SXM|8|8|1|0|fp8|fp8|trtllm|max_throughput|1000|1000|||11451.16|||FP8 engine (KV fp8)
trtllm-perf-v0.17|llama-3.1-70b|H200-SXM|1|1|1|0|fp8|fp8|trtllm|max_throughput|1000|1000|||2823.45|||FP8 engine (KV fp8)
trtllm-perf-v0.17|llama-3.1-70b|A100-80GB-SXM|4|4|1|0|fp16|fp16|trtllm|max_throughput|1000|1000|||1921.77|||FP16 engine
trtllm-perf-v0.17|llama-3.1-70b|L40S|4|4|1|0|fp8|fp8|trtllm|max_throughput|1000|1000|||1209.25|||FP8 engine (KV fp8); PCIe, no NVLink
trtllm-perf-v0.17|mixtral-8x7b|H100-SXM|1|1|1|0|fp8|fp8|trtllm|max_throughput|1000|1000|||6868.52|||FP8 engine; experts tensor-parallel (engine build, no EP)
trtllm-perf-v0.17|mixtral-8x7b|H200-SXM|1|1|1|0|fp8|fp8|trtllm|max_throughput|1000|1000|||10371.36|||FP8 engine
trtllm-perf-v0.17|mixtral-8x7b|H100-SXM|2|2|1|0|fp8|fp8|trtllm|max_throughput|1000|1000|||15770.89|||FP8 engine; experts tensor-parallel
trtllm-perf-v0.17|mixtral-8x7b|H100-SXM|4|4|1|0|fp8|fp8|trtllm|max_throughput|1000|1000|||27784.74|||FP8 engine; experts tensor-parallel
trtllm-perf-v0.17|mixtral-8x7b|A100-80GB-SXM|4|4|1|0|fp16|fp16|trtllm|max_throughput|1000|1000|||7122.84|||FP16 engine; experts tensor-parallel
trtllm-perf-v0.17|mixtral-8x22b|H100-SXM|8|8|1|0|fp8|fp8|trtllm|max_throughput|1000|1000|||16573.24|||FP8 engine; experts tensor-parallel
trtllm-serving-v0.14|llama-3.1-8b|H100-SXM|1|1|1|0|bf16|bf16|trtllm|server_slo|467|256|4|||23|8|Triton TRT-LLM backend, BF16, Poisson 2 QPS; concurrency = Little's law 2 req/s x (TTFT + 255 ITL) = 4.1; TPOT = mean ITL
trtllm-serving-v0.14|llama-3.1-8b|H100-SXM|1|1|1|0|bf16|bf16|trtllm|server_slo|467|16|1|||19|7|2 QPS; Little's law concurrency 0.25 (rounded up to 1); TPOT = mean ITL
trtllm-serving-v0.14|llama-3.1-8b|H100-SXM|1|1|1|0|bf16|bf16|trtllm|server_slo|202|214|3|||19|7|2 QPS; Little's law concurrency 3.0
trtllm-serving-v0.14|llama-3.1-8b|H100-SXM|1|1|1|0|bf16|bf16|trtllm|server_slo|467|256|19|||26|9|8 QPS (8 req/s achieved); Little's law concurrency 18.6
trtllm-serving-v0.14|llama-3.1-70b|H100-SXM|4|4|1|0|bf16|bf16|trtllm|server_slo|467|16|1|||53|18|2 QPS; Little's law concurrency 0.65 (rounded up to 1)
trtllm-serving-v0.14|llama-3.1-70b|H100-SXM|4|4|1|0|bf16|bf16|trtllm|server_slo|202|214|9|||48|20|2 QPS; Little's law concurrency 8.6
trtllm-serving-v0.14|llama-3.1-8b|H200-SXM|1|1|1|0|bf16|bf16|trtllm|server_slo|467|16|1|||18|5|2 QPS; Little's law concurrency 0.19 (rounded up to 1)
trtllm-serving-v0.14|llama-3.1-8b|H200-SXM|1|1|1|0|bf16|bf16|trtllm|server_slo|467|256|3|||21|6|2 QPS; Little's law concurrency 3.1
trtllm-serving-v0.14|llama-3.1-70b|H200-SXM|4|4|1|0|bf16|bf16|trtllm|server_slo|467|16|1|||50|15|2 QPS; Little's law concurrency 0.55 (rounded up to 1)
trtllm-serving-v0.14|llama-3.1-70b|H200-SXM|4|4|1|0|bf16|bf16|trtllm|server_slo|202|214|7|||43|17|2 QPS; Little's law concurrency 7.3
amd-rocm-perf-2025-10|llama-3.1-70b|MI300X|8|8|1|0|fp8|fp8|vllm|max_throughput|128|2048||3200|13212.5|||amd/Llama-3.1-70B-Instruct-FP8-KV; 3200 prompts, max_num_seqs 3200; 'Throughput' read as output tokens/s (as row 11)
amd-rocm-perf-2025-10|llama-3.1-70b|MI300X|8|8|1|0|fp8|fp8|vllm|max_throughput|500|2000||2000|11376.7|||FP8-KV checkpoint; 2000 prompts at max_num_seqs 2000
amd-rocm-perf-2025-10|llama-3.1-70b|MI300X|8|8|1|0|fp8|fp8|vllm|max_throughput|2048|2048||1500|7252.1|||FP8-KV checkpoint; 1500 prompts at max_num_seqs 1500
amd-rocm-perf-2025-10|llama-3.1-405b|MI300X|8|8|1|0|fp8|fp8|vllm|max_throughput|128|2048||1500|4201.7|||FP8-KV checkpoint; 1500 prompts at max_num_seqs 1500
amd-rocm-perf-2025-10|llama-3.1-405b|MI300X|8|8|1|0|fp8|fp8|vllm|max_throughput|2048|2048||500|2153.7|||FP8-KV checkpoint; 500 prompts at max_num_seqs 500
amd-rocm-perf-2025-10|llama-3.1-70b|MI300X|8|8|1|0|fp8|fp8|vllm|fixed_concurrency|128|2048|1||||7.755|benchmark_latency batch 1: 15.882 s end to end; TPOT derived = latency / 2048 (prefill of 128 tokens included, <1%)
amd-rocm-perf-2025-10|llama-3.1-70b|MI300X|8|8|1|0|fp8|fp8|vllm|fixed_concurrency|128|2048|2||||8.757|benchmark_latency batch 2: 17.934 s; TPOT derived = latency / 2048
amd-rocm-perf-2025-10|llama-3.1-70b|MI300X|8|8|1|0|fp8|fp8|vllm|fixed_concurrency|128|2048|4||||9.027|benchmark_latency batch 4: 18.487 s; TPOT derived = latency / 2048
amd-rocm-perf-2025-07|llama-3.1-70b|MI300X|8|8|1|0|fp8|fp8|vllm|max_throughput|128|2048||3200|12638.9|||rocm/vllm 0.9.1 container; FP8-KV checkpoint; 'Throughput' read as output tokens/s
amd-rocm-perf-2025-07|llama-3.1-405b|MI300X|8|8|1|0|fp8|fp8|vllm|max_throughput|128|2048||1500|3912.8|||rocm/vllm 0.9.1 container; FP8-KV checkpoint
amd-rocm-perf-2025-07|llama-3.1-70b|MI300X|8|8|1|0|fp8|fp8|vllm|fixed_concurrency|128|2048|1||||8.416|benchmark_latency batch 1: 17.236 s; TPOT derived = latency / 2048
amd-rocm-perf-2025-07|llama-3.1-70b|MI300X|8|8|1|0|fp8|fp8|vllm|fixed_concurrency|128|2048|2||||8.817|benchmark_latency batch 2: 18.057 s; TPOT derived = latency / 2048
oracle-mi300x-405b|llama-3.1-405b|MI300X|8|8|1|0|fp8||vllm|fixed_concurrency|128|128|1||||27.58|benchmark_latency batch 1: 3.530 s; TPOT derived = latency / 128 (prefill included, ~2%)
oracle-mi300x-405b|llama-3.1-405b|MI300X|8|8|1|0|fp8||vllm|fixed_concurrency|128|128|8||||31.05|benchmark_latency batch 8: 3.974 s; TPOT derived = latency / 128
oracle-mi300x-405b|llama-3.1-405b|MI300X|8|8|1|0|fp8||vllm|fixed_concurrency|128|128|64||1184|||benchmark_latency batch 64 (static batch); output tok/s as printed
oracle-mi300x-405b|llama-3.1-405b|MI300X|8|8|1|0|fp8||vllm|max_throughput|128|2048|||2794|||benchmark_throughput.py generation-heavy case, default engine settings
intel-gaudi3-perf-1.18|llama-3.1-8b|Gaudi3|1|1|1|0|fp8|bf16|optimum-habana|static_batch|128|128|1536||24310|||Optimum-Habana static batch 1536; fp8 weights (INC), KV precision not stated (bf16 assumed); throughput read as generated tokens/s
intel-gaudi3-perf-1.18|llama-3.1-8b|Gaudi3|1|1|1|0|fp8|bf16|optimum-habana|static_batch|128|2048|768||18830|||static batch 768
intel-gaudi3-perf-1.18|llama-3.1-8b|Gaudi3|1|1|1|0|fp8|bf16|optimum-habana|static_batch|2048|128|256||2652|||static batch 256
intel-gaudi3-perf-1.18|llama-3.1-8b|Gaudi3|1|1|1|0|fp8|bf16|optimum-habana|static_batch|2048|2048|364||7405|||static batch 364
intel-gaudi3-perf-1.18|llama-3.1-70b|Gaudi3|2|2|1|0|fp8|bf16|optimum-habana|static_batch|128|2048|450||5776|||2 HPU (DeepSpeed TP2), static batch 450
intel-gaudi3-perf-1.18|llama-3.1-70b|Gaudi3|2|2|1|0|fp8|bf16|optimum-habana|static_batch|2048|128|223||497|||2 HPU TP2, static batch 223
intel-gaudi3-perf-1.18|llama-3.1-70b|Gaudi3|2|2|1|0|fp8|bf16|optimum-habana|static_batch|2048|2048|175||2588|||2 HPU TP2, static batch 175
intel-gaudi3-perf-1.18|llama-3.1-70b|Gaudi3|8|8|1|0|fp8|bf16|optimum-habana|static_batch|128|2048|600||15711|||8 HPU TP8, static batch 600
intel-gaudi3-perf-1.18|llama-3.1-70b|Gaudi3|8|8|1|0|fp8|bf16|optimum-habana|static_batch|2048|2048|600||8946|||8 HPU TP8, static batch 600
intel-gaudi2-perf-1.18|llama-3.1-8b|Gaudi2|1|1|1|0|fp8|bf16|optimum-habana|static_batch|128|128|2429||18201|||Optimum-Habana static batch 2429; KV bf16 assumed
intel-gaudi2-perf-1.18|llama-3.1-8b|Gaudi2|1|1|1|0|fp8|bf16|optimum-habana|static_batch|128|2048|289||11138|||static batch 289
intel-gaudi2-perf-1.18|llama-3.1-8b|Gaudi2|1|1|1|0|fp8|bf16|optimum-habana|static_batch|2048|128|179||2028|||static batch 179
intel-gaudi2-perf-1.18|llama-3.1-8b|Gaudi2|1|1|1|0|fp8|bf16|optimum-habana|static_batch|2048|2048|155||5511|||static batch 155
intel-gaudi2-perf-1.18|llama-2-70b|Gaudi2|2|2|1|0|fp8|bf16|optimum-habana|static_batch|2048|2048|78||1438|||2 HPU TP2, static batch 78
intel-gaudi2-perf-1.18|llama-2-70b|Gaudi2|2|2|1|0|fp8|bf16|optimum-habana|static_batch|2048|128|95||310|||2 HPU TP2, static batch 95
trtllm-perf-v0.17|llama-3.1-70b|H200-SXM|2|2|1|0|fp8|fp8|trtllm|max_throughput|20000|2000|||640.62|||FP8 engine (KV fp8)
trtllm-perf-v0.17|llama-3.1-70b|H100-SXM|2|2|1|0|fp8|fp8|trtllm|max_throughput|20000|2000|||443.01|||FP8 engine (KV fp8)
trtllm-perf-v0.17|llama-3.1-70b|H100-SXM|8|8|1|0|fp8|fp8|trtllm|max_throughput|20000|2000|||1512.6|||FP8 engine (KV fp8)
trtllm-perf-v0.17|llama-3.1-8b|L40S|1|1|1|0|fp8|fp8|trtllm|max_throughput|20000|2000|||327.97|||FP8 engine (KV fp8); PCIe card
trtllm-perf-v0.17|llama-3.1-8b|A100-80GB-SXM|1|1|1|0|fp16|fp16|trtllm|max_throughput|20000|2000|||330.04|||FP16 engine
trtllm-perf-v0.17|llama-3.1-405b|H200-SXM|8|8|1|0|fp8|fp8|trtllm|max_throughput|20000|2000|||535.31|||FP8 engine (KV fp8)
trtllm-perf-v0.17|mistral-7b|H100-SXM|1|1|1|0|fp8|fp8|trtllm|max_throughput|1000|1000|||16035.66|||FP8 engine; contexts stay under Mistral-7B's 4096-token window, so whether the engine applies it does not matter
trtllm-perf-v0.17|mistral-7b|H100-SXM|1|1|1|0|fp8|fp8|trtllm|max_throughput|20000|2000|||1373.24|||SKIP: TensorRT-LLM v0.17 ran Mistral-7B with full attention here (its 20k-token throughput equals Llama-3.1-8B's, 1351 tok/s, where a 4096 window would make it ~2.5x faster), so the row does not match the windowed model shape
trtllm-perf-v0.17|mistral-7b|H200-SXM|1|1|1|0|fp8|fp8|trtllm|max_throughput|20000|2000|||1822.69|||SKIP: full attention in effect, as the H100 row (1822.69 vs Llama-3.1-8B's 1804.1 on H200)
trtllm-perf-v1.0|llama-3.1-405b|GB200|4|4|1|0|fp4|fp8|trtllm|max_throughput|1000|1000|||5389|||NVFP4 checkpoint (fp8 KV)
trtllm-perf-v1.0|llama-3.3-70b|B200|1|1|1|0|fp4|fp8|trtllm|max_throughput|2048|128|||1339|||NVFP4 checkpoint (fp8 KV)
trtllm-perf-v1.0|llama-3.3-70b|GB200|1|1|1|0|fp4|fp8|trtllm|max_throughput|20000|2000|||755|||NVFP4 checkpoint (fp8 KV)
trtllm-perf-v1.0|llama-3.1-405b|B200|4|4|1|0|fp4|fp8|trtllm|max_throughput|20000|2000|||672|||NVFP4 checkpoint (fp8 KV)
trtllm-perf-v1.0|llama-3.3-70b|RTX-PRO-6000|1|1|1|0|fp4|fp8|trtllm|max_throughput|2048|128|||393|||RTX PRO 6000 Server Edition table, 1 GPU TP1 PP1; NVFP4
trtllm-perf-v1.0|llama-3.3-70b|RTX-PRO-6000|1|1|1|0|fp4|fp8|trtllm|max_throughput|20000|2000|||142|||RTX PRO 6000 Server Edition table, 1 GPU TP1 PP1; NVFP4
trtllm-perf-v1.2|gpt-oss-120b|B200|2|2|2|1|fp4|fp8|trtllm|max_throughput|1000|1000|||51886|||DEP2; 25,943/GPU x 2; gpt-oss checkpoint (MXFP4 experts) on Blackwell 4-bit tensor cores, fp8 KV per the doc's options
trtllm-perf-v1.2|gpt-oss-120b|B200|2|2|2|1|fp4|fp8|trtllm|max_throughput|1024|8192|||34578|||DEP2; 17,289/GPU x 2; gpt-oss checkpoint (MXFP4 experts) on Blackwell 4-bit tensor cores, fp8 KV per the doc's options
trtllm-perf-v1.2|gpt-oss-120b|B200|2|2|2|1|fp4|fp8|trtllm|max_throughput|8192|1024|||12222|||DEP2; 6,111/GPU x 2; gpt-oss checkpoint (MXFP4 experts) on Blackwell 4-bit tensor cores, fp8 KV per the doc's options
trtllm-perf-v1.2|gpt-oss-120b|GB200|1|1|1|0|fp4|fp8|trtllm|max_throughput|1000|1000|||27198|||TP1; gpt-oss checkpoint (MXFP4 experts) on Blackwell 4-bit tensor cores, fp8 KV per the doc's options
trtllm-perf-v1.2|gpt-oss-120b|GB200|1|1|1|0|fp4|fp8|trtllm|max_throughput|8192|1024|||6835|||TP1; gpt-oss checkpoint (MXFP4 experts) on Blackwell 4-bit tensor cores, fp8 KV per the doc's options
trtllm-perf-v1.2|gpt-oss-120b|H200-SXM|1|1|1|0|int4|bf16|trtllm|max_throughput|1000|1000|||6868|||TP1; gpt-oss checkpoint: MXFP4 experts run weight-only on Hopper (no 4-bit tensor cores; the table labels the column FP8), KV auto (bf16)
trtllm-perf-v1.2|gpt-oss-120b|H200-SXM|1|1|1|0|int4|bf16|trtllm|max_throughput|8192|1024|||1828|||TP1; gpt-oss checkpoint: MXFP4 experts run weight-only on Hopper (no 4-bit tensor cores; the table labels the column FP8), KV auto (bf16)
trtllm-perf-v1.2|gpt-oss-120b|H100-SXM|4|4|4|1|int4|bf16|trtllm|max_throughput|1000|1000|||18740|||DEP4; 4,685/GPU x 4; gpt-oss checkpoint: MXFP4 experts run weight-only on Hopper (no 4-bit tensor cores; the table labels the column FP8), KV auto (bf16)
trtllm-perf-v1.2|gpt-oss-120b|H100-SXM|4|4|4|1|int4|bf16|trtllm|max_throughput|8192|1024|||4676|||DEP4; 1,169/GPU x 4; gpt-oss checkpoint: MXFP4 experts run weight-only on Hopper (no 4-bit tensor cores; the table labels the column FP8), KV auto (bf16)
trtllm-perf-v1.2|gpt-oss-20b|B200|1|1|1|0|fp4|fp8|trtllm|max_throughput|1000|1000|||53812|||TP1; gpt-oss checkpoint (MXFP4 experts) on Blackwell 4-bit tensor cores, fp8 KV per the doc's options
trtllm-perf-v1.2|gpt-oss-20b|B200|1|1|1|0|fp4|fp8|trtllm|max_throughput|1024|8192|||34702|||TP1; gpt-oss checkpoint (MXFP4 experts) on Blackwell 4-bit tensor cores, fp8 KV per the doc's options
trtllm-perf-v1.2|gpt-oss-20b|B200|1|1|1|0|fp4|fp8|trtllm|max_throughput|8192|1024|||11904|||TP1; gpt-oss checkpoint (MXFP4 experts) on Blackwell 4-bit tensor cores, fp8 KV per the doc's options
trtllm-perf-v1.2|gpt-oss-20b|GB200|1|1|1|0|fp4|fp8|trtllm|max_throughput|1000|1000|||55823|||TP1; gpt-oss checkpoint (MXFP4 experts) on Blackwell 4-bit tensor cores, fp8 KV per the doc's options
trtllm-perf-v1.2|gpt-oss-20b|GB200|1|1|1|0|fp4|fp8|trtllm|max_throughput|8192|1024|||12941|||TP1; gpt-oss checkpoint (MXFP4 experts) on Blackwell 4-bit tensor cores, fp8 KV per the doc's options
trtllm-perf-v1.2|gpt-oss-20b|H200-SXM|1|1|1|0|int4|bf16|trtllm|max_throughput|1000|1000|||13858|||TP1; gpt-oss checkpoint: MXFP4 experts run weight-only on Hopper (no 4-bit tensor cores; the table labels the column FP8), KV auto (bf16)
trtllm-perf-v1.2|gpt-oss-20b|H200-SXM|1|1|1|0|int4|bf16|trtllm|max_throughput|8192|1024|||4015|||TP1; gpt-oss checkpoint: MXFP4 experts run weight-only on Hopper (no 4-bit tensor cores; the table labels the column FP8), KV auto (bf16)
trtllm-perf-v1.2|gpt-oss-20b|H100-SXM|1|1|1|0|int4|bf16|trtllm|max_throughput|1000|1000|||11557|||TP1; gpt-oss checkpoint: MXFP4 experts run weight-only on Hopper (no 4-bit tensor cores; the table labels the column FP8), KV auto (bf16)
trtllm-perf-v1.2|gpt-oss-20b|H100-SXM|1|1|1|0|int4|bf16|trtllm|max_throughput|8192|1024|||3366|||TP1; gpt-oss checkpoint: MXFP4 experts run weight-only on Hopper (no 4-bit tensor cores; the table labels the column FP8), KV auto (bf16)
trtllm-perf-v1.2|qwen3-30b-a3b|B200|1|1|1|0|fp4|fp8|trtllm|max_throughput|1000|1000|||26971|||TP1; nvidia/Qwen3-30B-A3B-FP4 (NVFP4, fp8 KV as the v1.0 rows)
trtllm-perf-v1.2|qwen3-30b-a3b|B200|1|1|1|0|fp4|fp8|trtllm|max_throughput|1024|8192|||13497|||TP1; nvidia/Qwen3-30B-A3B-FP4 (NVFP4, fp8 KV as the v1.0 rows)
trtllm-perf-v1.2|qwen3-30b-a3b|B200|1|1|1|0|fp4|fp8|trtllm|max_throughput|8192|1024|||5735|||TP1; nvidia/Qwen3-30B-A3B-FP4 (NVFP4, fp8 KV as the v1.0 rows)
trtllm-perf-v1.2|qwen3-30b-a3b|GB200|1|1|1|0|fp4|fp8|trtllm|max_throughput|1000|1000|||22856|||TP1; nvidia/Qwen3-30B-A3B-FP4 (NVFP4, fp8 KV as the v1.0 rows)
trtllm-perf-v1.2|qwen3-30b-a3b|GB200|1|1|1|0|fp4|fp8|trtllm|max_throughput|8192|1024|||6201|||TP1; nvidia/Qwen3-30B-A3B-FP4 (NVFP4, fp8 KV as the v1.0 rows)
trtllm-perf-v1.2|qwen3-30b-a3b|RTX-PRO-6000|1|1|1|0|fp4|fp8|trtllm|max_throughput|1000|1000|||9938|||RTX PRO 6000 Server table, TP1 PP1; nvidia/Qwen3-30B-A3B-FP4 (NVFP4, fp8 KV as the v1.0 rows)
trtllm-perf-v1.2|qwen3-30b-a3b|RTX-PRO-6000|1|1|1|0|fp4|fp8|trtllm|max_throughput|1024|8192|||3621|||RTX PRO 6000 Server table, TP1 PP1; nvidia/Qwen3-30B-A3B-FP4 (NVFP4, fp8 KV as the v1.0 rows)
trtllm-perf-v1.2|qwen3-30b-a3b|RTX-PRO-6000|1|1|1|0|fp4|fp8|trtllm|max_throughput|8192|1024|||1914|||RTX PRO 6000 Server table, TP1 PP1; nvidia/Qwen3-30B-A3B-FP4 (NVFP4, fp8 KV as the v1.0 rows)
trtllm-perf-v1.2|qwen3-30b-a3b|RTX-PRO-6000|2|2|2|1|fp4|fp8|trtllm|max_throughput|1000|1000|||16818|||RTX PRO 6000 Server table, DEP2 PP1; 8,409/GPU x 2; nvidia/Qwen3-30B-A3B-FP4 (NVFP4, fp8 KV as the v1.0 rows)
trtllm-perf-v1.2|qwen3-30b-a3b|RTX-PRO-6000|2|2|2|1|fp4|fp8|trtllm|max_throughput|1024|8192|||7154|||RTX PRO 6000 Server table, DEP2 PP1; 3,577/GPU x 2; nvidia/Qwen3-30B-A3B-FP4 (NVFP4, fp8 KV as the v1.0 rows)
trtllm-perf-v1.2|qwen3-30b-a3b|RTX-PRO-6000|8|8|8|1|fp4|fp8|trtllm|max_throughput|1000|1000|||31880|||RTX PRO 6000 Server table, DEP8 PP1; 3,985/GPU x 8; nvidia/Qwen3-30B-A3B-FP4 (NVFP4, fp8 KV as the v1.0 rows)
trtllm-perf-v1.2|qwen3-30b-a3b|RTX-PRO-6000|8|8|8|1|fp4|fp8|trtllm|max_throughput|1024|8192|||19248|||RTX PRO 6000 Server table, DEP8 PP1; 2,406/GPU x 8; nvidia/Qwen3-30B-A3B-FP4 (NVFP4, fp8 KV as the v1.0 rows)
trtllm-perf-v1.2|qwen3-235b-a22b|B200|4|4|4|1|fp4|fp8|trtllm|max_throughput|1000|1000|||23056|||DEP4; 5,764/GPU x 4; nvidia/Qwen3-235B-A22B-FP4 (fp8 KV as the v1.0 rows)
trtllm-perf-v1.2|qwen3-235b-a22b|B200|4|4|4|1|fp4|fp8|trtllm|max_throughput|8192|1024|||5640|||DEP4; 1,410/GPU x 4; nvidia/Qwen3-235B-A22B-FP4 (fp8 KV as the v1.0 rows)
trtllm-perf-v1.2|qwen3-235b-a22b|GB200|4|4|4|1|fp4|fp8|trtllm|max_throughput|1000|1000|||24688|||DEP4; 6,172/GPU x 4; nvidia/Qwen3-235B-A22B-FP4 (fp8 KV as the v1.0 rows)
trtllm-perf-v1.2|qwen3-235b-a22b|H200-SXM|4|4|4|1|fp8|fp8|trtllm|max_throughput|1000|1000|||13152|||DEP4; 3,288/GPU x 4; nvidia/Qwen3-235B-A22B-FP8 (fp8 KV as the v1.0 rows)
trtllm-perf-v1.2|qwen3-235b-a22b|H200-SXM|4|4|4|1|fp8|fp8|trtllm|max_throughput|8192|1024|||2508|||DEP4; 627/GPU x 4; nvidia/Qwen3-235B-A22B-FP8 (fp8 KV as the v1.0 rows)
trtllm-perf-v1.2|qwen3-235b-a22b|H100-SXM|8|8|8|1|fp8|fp8|trtllm|max_throughput|1000|1000|||15456|||DEP8; 1,932/GPU x 8; nvidia/Qwen3-235B-A22B-FP8 (fp8 KV as the v1.0 rows)
trtllm-perf-v1.2|qwen3-235b-a22b|RTX-PRO-6000|8|8|8|1|fp4|fp8|trtllm|max_throughput|1000|1000|||7752|||DEP8; 969/GPU x 8; nvidia/Qwen3-235B-A22B-FP4 (fp8 KV as the v1.0 rows)
trtllm-perf-v1.2|llama-4-maverick|B200|4|4|4|1|fp4|fp8|trtllm|max_throughput|1000|1000|||45348|||DEP4; 11,337/GPU x 4; NVIDIA FP4 checkpoint (fp8 KV as the v1.0 rows)
trtllm-perf-v1.2|llama-4-maverick|B200|4|4|4|1|fp4|fp8|trtllm|max_throughput|8192|1024|||13116|||DEP4; 3,279/GPU x 4; NVIDIA FP4 checkpoint (fp8 KV as the v1.0 rows)
trtllm-perf-v1.2|llama-4-maverick|H200-SXM|8|8|8|1|fp8|fp8|trtllm|max_throughput|1000|1000|||33168|||DEP8; 4,146/GPU x 8; NVIDIA FP8 checkpoint (fp8 KV as the v1.0 rows)
trtllm-perf-v1.2|llama-4-maverick|H200-SXM|8|8|8|1|fp8|fp8|trtllm|max_throughput|8192|1024|||10208|||DEP8; 1,276/GPU x 8; NVIDIA FP8 checkpoint (fp8 KV as the v1.0 rows)
trtllm-perf-v1.2|deepseek-v3|B200|4|4|4|1|fp4|fp8|trtllm|max_throughput|1000|1000|||25852|||DeepSeek-R1-0528 (DeepSeek-V3 shape); DEP4; 6,463/GPU x 4; fp8 KV per the doc's options
trtllm-perf-v1.2|deepseek-v3|B200|4|4|4|1|fp4|fp8|trtllm|max_throughput|8192|1024|||4672|||DeepSeek-R1-0528 (DeepSeek-V3 shape); DEP4; 1,168/GPU x 4; fp8 KV per the doc's options
trtllm-perf-v1.2|deepseek-v3|H200-SXM|8|8|8|1|fp8|fp8|trtllm|max_throughput|1000|1000|||13016|||DeepSeek-R1-0528 (DeepSeek-V3 shape); DEP8; 1,627/GPU x 8; fp8 KV per the doc's options
trtllm-perf-v1.2|llama-3.3-70b|B200|1|1|1|0|fp4|fp8|trtllm|max_throughput|1000|1000|||6920|||TP1; 6,920/GPU x 1; NVIDIA FP4 checkpoint (fp8 KV)
trtllm-perf-v1.2|llama-3.3-70b|B200|1|1|1|0|fp4|fp8|trtllm|max_throughput|8192|1024|||1362|||TP1; 1,362/GPU x 1; NVIDIA FP4 checkpoint (fp8 KV)
trtllm-perf-v1.2|llama-3.3-70b|H200-SXM|2|2|1|0|fp8|fp8|trtllm|max_throughput|1000|1000|||5174|||TP2; 2,587/GPU x 2; NVIDIA FP8 checkpoint (fp8 KV)
trtllm-perf-v1.2|llama-3.3-70b|H200-SXM|2|2|1|0|fp8|fp8|trtllm|max_throughput|8192|1024|||1074|||TP2; 537/GPU x 2; NVIDIA FP8 checkpoint (fp8 KV)
trtllm-perf-v1.2|llama-3.3-70b|H100-SXM|2|2|1|0|fp8|fp8|trtllm|max_throughput|1000|1000|||4418|||TP2; 2,209/GPU x 2; NVIDIA FP8 checkpoint (fp8 KV)
trtllm-perf-v1.2|llama-3.3-70b|H100-SXM|2|2|1|0|fp8|fp8|trtllm|max_throughput|8192|1024|||796|||TP2; 398/GPU x 2; NVIDIA FP8 checkpoint (fp8 KV)
trtllm-perf-v0.14|mixtral-8x7b|H100-SXM|8|8|1|0|fp8|fp8|trtllm|max_throughput|1000|1000|||40573.0499|||FP8 engine (fp8 KV); experts tensor-parallel (engine build, no EP)
trtllm-perf-v0.14|mixtral-8x7b|H200-SXM|2|2|1|0|fp8|fp8|trtllm|max_throughput|1000|1000|||18712.2046|||FP8 engine (fp8 KV); experts tensor-parallel (engine build, no EP)
trtllm-perf-v0.14|mixtral-8x7b|H200-SXM|4|4|1|0|fp8|fp8|trtllm|max_throughput|1000|1000|||32834.0923|||FP8 engine (fp8 KV); experts tensor-parallel (engine build, no EP)
trtllm-perf-v0.14|mixtral-8x7b|H200-SXM|8|8|1|0|fp8|fp8|trtllm|max_throughput|1000|1000|||44410.7533|||FP8 engine (fp8 KV); experts tensor-parallel (engine build, no EP)
trtllm-perf-v0.14|mixtral-8x7b|H100-SXM|2|2|1|0|fp8|fp8|trtllm|max_throughput|2048|128|||2883.5166|||FP8 engine (fp8 KV); experts tensor-parallel (engine build, no EP)
trtllm-perf-v0.14|mixtral-8x7b|H100-SXM|8|8|1|0|fp8|fp8|trtllm|max_throughput|2048|128|||6532.721|||FP8 engine (fp8 KV); experts tensor-parallel (engine build, no EP)
trtllm-perf-v0.14|mixtral-8x7b|H100-SXM|4|4|1|0|fp8|fp8|trtllm|max_throughput|128|2048|||40668.5928|||FP8 engine (fp8 KV); experts tensor-parallel (engine build, no EP)
trtllm-perf-v0.14|mixtral-8x7b|H100-SXM|4|4|1|0|fp8|fp8|trtllm|max_throughput|500|2000|||31693.8787|||FP8 engine (fp8 KV); experts tensor-parallel (engine build, no EP)
trtllm-perf-v0.14|mixtral-8x7b|A100-80GB-SXM|8|8|1|0|fp16|fp16|trtllm|max_throughput|1000|1000|||13948.1533|||FP16 engine; experts tensor-parallel
trtllm-perf-v0.14|mixtral-8x7b|L40S|4|4|1|0|fp8|fp8|trtllm|max_throughput|1000|1000|||5060.8399|||FP8 engine (fp8 KV); PCIe, no NVLink; experts tensor-parallel
trtllm-perf-v0.14|mixtral-8x22b|H200-SXM|8|8|1|0|fp8|fp8|trtllm|max_throughput|1000|1000|||18557.43|||FP8 engine (fp8 KV); experts tensor-parallel (engine build, no EP)
trtllm-perf-v0.14|mixtral-8x22b|H100-SXM|8|8|1|0|fp8|fp8|trtllm|max_throughput|2048|128|||2917.1362|||FP8 engine (fp8 KV); experts tensor-parallel (engine build, no EP)
gpustack-gpt-oss-20b-h100|gpt-oss-20b|H100-SXM|1|1|1|0|int4|bf16|vllm|fixed_concurrency|2000|94|500||1443.44|||vLLM bench: 500 prompts at once (request rate inf), so concurrency = 500; random outputs stop early (no --ignore-eos): output_len = printed generated tokens / requests (47022/500), rounded; output tok/s as printed; MXFP4 experts run weight-only on Hopper (int4 here), KV auto (bf16)
gpustack-gpt-oss-20b-h100|gpt-oss-20b|H100-SXM|1|1|1|0|int4|bf16|vllm|fixed_concurrency|4000|105|500||847.43|||vLLM bench: 500 prompts at once (request rate inf), so concurrency = 500; random outputs stop early (no --ignore-eos): output_len = printed generated tokens / requests (52309/500), rounded; output tok/s as printed; MXFP4 experts run weight-only on Hopper (int4 here), KV auto (bf16)
gpustack-gpt-oss-20b-h100|gpt-oss-20b|H100-SXM|1|1|1|0|int4|bf16|vllm|fixed_concurrency|32000|94|100||86.62|||vLLM bench: 100 prompts at once (request rate inf), so concurrency = 100; random outputs stop early (no --ignore-eos): output_len = printed generated tokens / requests (9350/100), rounded; output tok/s as printed; MXFP4 experts run weight-only on Hopper (int4 here), KV auto (bf16)
gpustack-gpt-oss-20b-h100|gpt-oss-20b|H100-SXM|1|1|1|0|int4|bf16|vllm|fixed_concurrency|128|4|1000||851.04|||SKIP: 4-token outputs at ~200 requests/s: bound by per-request HTTP, tokenizer and scheduler work outside the GPU model
gpustack-gpt-oss-20b-a100|gpt-oss-20b|A100-80GB-SXM|1|1|1|0|int4|bf16|vllm|fixed_concurrency|2000|94|500||813.35|||vLLM bench: 500 prompts at once (request rate inf), so concurrency = 500; random outputs stop early (no --ignore-eos): output_len = printed generated tokens / requests (47224/500), rounded; output tok/s as printed; MXFP4 experts run weight-only on Ampere (int4 here), KV auto (bf16)
gpustack-gpt-oss-20b-a100|gpt-oss-20b|A100-80GB-SXM|1|1|1|0|int4|bf16|vllm|fixed_concurrency|4000|107|500||415.64|||vLLM bench: 500 prompts at once (request rate inf), so concurrency = 500; random outputs stop early (no --ignore-eos): output_len = printed generated tokens / requests (53530/500), rounded; output tok/s as printed; MXFP4 experts run weight-only on Ampere (int4 here), KV auto (bf16)
gpustack-gpt-oss-20b-a100|gpt-oss-20b|A100-80GB-SXM|1|1|1|0|int4|bf16|vllm|fixed_concurrency|32000|95|100||21.62|||vLLM bench: 100 prompts at once (request rate inf), so concurrency = 100; random outputs stop early (no --ignore-eos): output_len = printed generated tokens / requests (9533/100), rounded; output tok/s as printed; MXFP4 experts run weight-only on Ampere (int4 here), KV auto (bf16)
gpustack-gpt-oss-20b-a100|gpt-oss-20b|A100-80GB-SXM|1|1|1|0|int4|bf16|vllm|fixed_concurrency|128|4|1000||735.4|||SKIP: 4-token outputs at ~200 requests/s: bound by per-request HTTP, tokenizer and scheduler work outside the GPU model
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=str(ROOT.parent / "shared"), help="the shared folder (default ../shared)")
    ap.add_argument("--force", action="store_true", help="overwrite even where the package file holds rows this "
                    "script does not write (they are lost)")
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
        sid, date = LEGACY_SOURCES[i]
        out.append({
            "row_id": i, "source_id": sid, "source_date": date, "model": s["model"], "model_label": r["model"],
            "params_b": round(spec.total_params() / 1e9, 2), "active_params_b": round(spec.active_params() / 1e9, 2),
            "gpu": gpu, "gpu_label": r["gpu"], "n_gpus": n, "tp": s["tp"], "ep": s.get("ep", s["tp"] if s.get("dp") else 1),
            "dp_attention": int(bool(s.get("dp"))),
            "precision": s["precision"], "kv_precision": s["kv"] or "", "engine": s["engine"], "engine_label": r["engine"],
            "scenario": s["scenario"], "input_len": isl, "output_len": osl, "concurrency": conc,
            "max_num_seqs": s.get("max_num_seqs", ""), "input_len_assumed": int(bool(s.get("assumed"))),
            "measured_output_tokens_per_s": r["output_tokens_per_s"], "measured_ttft_ms": r["ttft_ms"],
            "measured_tpot_ms": r["tpot_ms"], "use": "skip" if skip else "yes", "skip_reason": skip,
            "fit_note": s.get("fit_note", ""), "notes": s.get("notes", ""), "source": r["source"],
        })
    _pin_shapes(shapes)
    specs = {k: ModelSpec(**v) for k, v in json.loads(MODELS.read_text())["models"].items()}
    for line in NEW_ROWS.strip().splitlines():
        f = line.split("|")
        if len(f) != 19:
            print(f"error: new row has {len(f)} fields, not 19: {line[:80]}", file=sys.stderr)
            return 1
        (sid, model, gpu, n, tp, ep, dp, prec, kv, eng, scen, isl, osl, conc, seqs, thr, ttft, tpot, notes) = f
        url, title, date = SOURCES[sid]
        spec = specs[model]
        resolve_gpu_id(gpu)
        out.append({
            "row_id": len(out), "source_id": sid, "source_date": date, "model": model, "model_label": model,
            "params_b": round(spec.total_params() / 1e9, 2), "active_params_b": round(spec.active_params() / 1e9, 2),
            "gpu": gpu, "gpu_label": gpu, "n_gpus": int(n), "tp": int(tp), "ep": int(ep), "dp_attention": int(dp),
            "precision": prec, "kv_precision": kv, "engine": eng, "engine_label": eng, "scenario": scen,
            "input_len": isl, "output_len": osl, "concurrency": conc, "max_num_seqs": seqs, "input_len_assumed": 0,
            "measured_output_tokens_per_s": thr, "measured_ttft_ms": ttft, "measured_tpot_ms": tpot,
            "use": "skip" if notes.startswith("SKIP: ") else "yes",
            "skip_reason": notes[6:] if notes.startswith("SKIP: ") else "", "notes": "" if notes.startswith("SKIP: ") else notes,
            "source": f"{url} ; {title}",
        })
    from gpuplan.perf.inference_validation import classify_regime

    for r in out:
        # Timed through a serving front end: an SLO scenario, or a source benchmarked against its HTTP server.
        r["served"] = "yes" if r["scenario"] == "server_slo" or r["source_id"] in SERVED_SOURCES else ""
        r["num_prompts"] = bench_requests(r)
        r["fixed_lengths"] = "yes" if r["source_id"] in FIXED_LENGTH_SOURCES else ""
        r["regime"] = classify_regime(specs[r["model"]], r["gpu"] or None, int(float(r["concurrency"])) if r["concurrency"] else None,
                                      int(r["input_len"]) if str(r["input_len"]).isdigit() else 0, r["engine"])
    if OUT.exists() and not args.force:
        kept = Counter(_run_key(r) for r in csv.DictReader(OUT.read_text(encoding="utf-8").splitlines()))
        lost = kept - Counter(_run_key(r) for r in out)
        if lost:
            sids = sorted({k[0] for k in lost})
            print(f"error: {OUT.relative_to(ROOT)} holds {len(lost)} rows this script does not write ({', '.join(sids[:4])}"
                  f"{', ...' if len(sids) > 4 else ''}); nothing written (--force drops them)", file=sys.stderr)
            return 1
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(out)
    used = sum(r["use"] == "yes" for r in out)
    print(f"wrote {OUT.relative_to(ROOT)}: {len(out)} rows, {used} usable, {len(out) - used} skipped")
    for reg, k in sorted(Counter(r["regime"] for r in out if r["use"] == "yes").items()):
        print(f"  {reg:<18} {k:>3} used rows")
    for r in out:
        if r["use"] == "skip":
            print(f"  skip row {r['row_id']} ({r['model_label']}): {r['skip_reason']}")
    return 0


def _run_key(r: dict) -> tuple[str, ...]:
    """What identifies one published measurement, whatever the file's row numbers: its source, the run's setup and
    its measured numbers (rows of one table share a source, so the source alone would hide a lost row)."""
    return tuple(str(r[k]) for k in ("source_id", "model", "gpu", "n_gpus", "tp", "precision", "engine", "scenario",
                                     "input_len", "output_len", "concurrency", "measured_output_tokens_per_s",
                                     "measured_ttft_ms", "measured_tpot_ms"))


def _pin_shapes(shapes: dict) -> None:
    """Pin the shape of every model a new row names (from the gpuplan preset, with its source)."""
    from gpuplan.models import resolve_model

    need = {line.split("|")[1] for line in NEW_ROWS.strip().splitlines()}
    changed = False
    for key in sorted(need - set(shapes)):
        spec = resolve_model(key)
        shapes[key] = {**spec.model_dump(exclude_defaults=True), "name": key}
        changed = True
    if changed:
        doc = json.loads(MODELS.read_text())
        doc["models"] = shapes
        MODELS.write_text(json.dumps(doc, indent=None, separators=(", ", ": ")).replace('"models": {', '"models": {\n') + "\n")


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
