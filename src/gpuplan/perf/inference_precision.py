"""Serving precisions: bytes each weight and KV element takes, and which tensor cores run it.

Weight precision sets memory and decode bandwidth; it also picks the GEMM math: fp8/int8
W8A8 checkpoints run on 8-bit tensor cores, fp4 (NVFP4/MXFP4) on 4-bit ones, while
weight-only int4 (AWQ/GPTQ) dequantizes to bf16 and computes there. A GPU without the
needed tensor cores cannot serve that checkpoint at speed, so it is refused, not guessed, with one
exception engines really take: a model published in 4-bit floating point (gpt-oss ships MXFP4) is
served on GPUs without FP4 tensor cores as weight-only 4-bit, its weights dequantized to bf16 inside
the GEMM (vLLM's Marlin / Triton MoE kernels), like AWQ/GPTQ. Where FP4 tensor cores exist, such a model's
activations are 8-bit (MXFP8), so its GEMMs run at the 8-bit rate; FP4 on AMD is MXFP4 (an e8m0 scale per 32
weights), NVFP4 (an fp8 scale per 16) on NVIDIA.
"""
from __future__ import annotations

from dataclasses import dataclass

from gpuplan.errors import UsageError


@dataclass(frozen=True)
class WeightFormat:
    key: str
    bytes_per_param: float  # including block scales
    compute: str  # precision passed to Gpu.peak_tflops
    needs: str | None  # tensor-core precision the GPU must support, None = any
    note: str


# int4 and fp4 carry block scales: AWQ/GPTQ one fp16 scale + zero per 128 weights,
# NVFP4 one fp8 scale per 16 weights (MXFP4: one e8m0 per 32).
WEIGHT_FORMATS: dict[str, WeightFormat] = {
    "bf16": WeightFormat("bf16", 2.0, "bf16", None, "16-bit weights and math"),
    "fp16": WeightFormat("fp16", 2.0, "bf16", None, "16-bit weights and math"),
    "fp8": WeightFormat("fp8", 1.0, "fp8", "fp8", "W8A8 fp8 GEMMs"),
    "int8": WeightFormat("int8", 1.0, "int8", None, "W8A8 int8 GEMMs (SmoothQuant-style)"),
    "int4": WeightFormat("int4", 0.5 + 4 / 128, "bf16", None, "weight-only int4 (AWQ/GPTQ, group 128), bf16 math"),
    "fp4": WeightFormat("fp4", 0.5 + 1 / 16, "fp4", "fp4", "NVFP4/MXFP4 weights and 4-bit GEMMs"),
}
WEIGHT_ALIASES = {"awq": "int4", "gptq": "int4", "w4a16": "int4", "nvfp4": "fp4", "mxfp4": "fp4",
                  "float16": "fp16", "bfloat16": "bf16", "w8a8": "int8", "fp8_e4m3": "fp8"}

# KV cache element sizes. fp8 KV is storage only (dequantized in the attention kernel), so
# it runs on any GPU an engine supports; fp4 KV needs Blackwell-class 4-bit support.
KV_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "fp4": 0.5 + 1 / 16}
KV_NEEDS = {"fp4": "fp4"}
KV_ALIASES = {"auto": None, "float16": "fp16", "bfloat16": "bf16", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "nvfp4": "fp4"}

# Embedding and output head stay 16-bit in the usual fp8/int4/fp4 checkpoints.
EMBEDDING_BYTES_PER_PARAM = 2.0


# A native FP4 checkpoint on a GPU without FP4 tensor cores: weight-only, 4-bit values plus one e8m0 scale per 32
# weights (OCP MX; gpt-oss's quantization_config "mxfp4", https://huggingface.co/openai/gpt-oss-120b), bf16 math.
MXFP4_BYTES_PER_PARAM = 0.5 + 1 / 32
# Architectures whose engines serve a native FP4 checkpoint weight-only (dequantized to 16-bit in the kernel). The
# vLLM gpt-oss recipe (https://raw.githubusercontent.com/vllm-project/recipes/main/OpenAI/GPT-OSS.md, read 2026-11-23)
# runs it on H100/H200 (Hopper), on A100 "by default ... Marlin MXFP4 MoE" (Ampere) and on MI300x/MI325x (gfx942,
# CDNA3); Ada is "actively working on" there and CDNA2, Volta/Turing (no bf16), Gaudi and TPU are not listed:
# unknown, so refused.
FP4_WEIGHT_ONLY_ARCHS = frozenset({"Ampere", "Hopper", "CDNA3"})


def fp4_weight_only_ok(gpu) -> bool:
    """Whether `gpu` (without FP4 tensor cores) serves a native FP4 checkpoint weight-only, dequantized to bf16."""
    from gpuplan.catalog.capabilities import arch_of

    return arch_of(gpu) in FP4_WEIGHT_ONLY_ARCHS and gpu.supports("bf16")


def dequantized_fp4(gpu) -> WeightFormat:
    """A native MXFP4 checkpoint served on `gpu` without FP4 tensor cores: weight-only 4-bit, bf16 math."""
    return WeightFormat("fp4", MXFP4_BYTES_PER_PARAM, "bf16", None,
                        f"MXFP4 weights dequantized to bf16 on {gpu.id}: no FP4 tensor cores")


def native_fp4_w4a8(gpu) -> WeightFormat:
    """A native MXFP4 checkpoint on a GPU with FP4 tensor cores: its 4-bit expert weights meet activations quantized
    to MXFP8, not to FP4, so the expert GEMMs run at the 8-bit rate (TensorRT-LLM's gpt-oss MoE support matrix:
    Blackwell "MXFP8 activations, MXFP4 weights"; Hopper BF16 activations. No engine quantizes gpt-oss activations to
    4 bits, https://nvidia.github.io/TensorRT-LLM/deployment-guide/deployment-guide-for-gpt-oss-on-trtllm.html,
    read 2026-11-27). On other FP4 GPUs (MI355X) the engines' activation format is not documented: the 8-bit rate is
    the cautious one."""
    known = gpu.vendor == "NVIDIA"
    return WeightFormat("fp4", MXFP4_BYTES_PER_PARAM, "fp8", "fp4",
                        f"MXFP4 weights x MXFP8 activations (W4A8) on {gpu.id}: 8-bit math"
                        + ("" if known else " (activation format not documented there: assumed)"))


def amd_mxfp4(gpu) -> WeightFormat:
    """FP4 on AMD is MXFP4 (OCP MX: one e8m0 scale per 32 weights), the format CDNA4's 4-bit matrix cores run and AMD
    Quark exports; NVFP4's fp8 scale per 16 weights is NVIDIA's."""
    return WeightFormat("fp4", MXFP4_BYTES_PER_PARAM, "fp4", "fp4", f"MXFP4 weights and 4-bit GEMMs on {gpu.id}")


def serving_weight_format(wf: WeightFormat, gpu, native_precision: str | None) -> WeightFormat:
    """The format `gpu` runs for `wf`: a native FP4 checkpoint computes at the 8-bit rate (its activations are MXFP8)
    on GPUs with FP4 tensor cores, and falls back to weight-only 4-bit (bf16 math) where the GPU has none but its
    engines dequantize FP4 (FP4_WEIGHT_ONLY_ARCHS); FP4 on AMD takes MXFP4's bytes; anything else as is."""
    if wf.key == "fp4" and wf.needs and native_is(native_precision, "fp4"):
        if gpu.supports(wf.needs):
            return native_fp4_w4a8(gpu)
        if fp4_weight_only_ok(gpu):
            return dequantized_fp4(gpu)
    if wf.key == "fp4" and gpu.vendor == "AMD":
        return amd_mxfp4(gpu)
    return wf


def native_is(native_precision: str | None, key: str) -> bool:
    """Whether a model's native precision spells the weight format `key` ('mxfp4' is 'fp4')."""
    if not isinstance(native_precision, str) or not native_precision.strip():
        return False
    p = native_precision.strip().lower()
    return WEIGHT_ALIASES.get(p, p) == key


def gpu_serves_weights(gpu, precision: str, native_precision: str | None = None) -> bool:
    """Whether `gpu` has what `precision` weights need: their tensor cores, or (native FP4) a weight-only path."""
    wf = weight_format(precision)
    return serving_weight_format(wf, gpu, native_precision).needs is None or gpu.supports(wf.needs)


def weight_format(precision: str) -> WeightFormat:
    """The weight format for a user's spelling ('bf16', 'FP8', 'awq', 'nvfp4'...)."""
    if not isinstance(precision, str) or not precision.strip():
        raise UsageError("precision must be one of: " + ", ".join(WEIGHT_FORMATS))
    p = precision.strip().lower()
    p = WEIGHT_ALIASES.get(p, p)
    if p not in WEIGHT_FORMATS:
        raise UsageError(f"unknown precision {precision!r}; use one of: {', '.join(WEIGHT_FORMATS)} (or awq, gptq, nvfp4)")
    return WEIGHT_FORMATS[p]


def kv_format(kv_precision: str | None, default: str) -> str:
    """Canonical KV precision key; None or 'auto' takes the engine's default for the weights."""
    if kv_precision is None:
        return default
    if not isinstance(kv_precision, str) or not kv_precision.strip():
        raise UsageError("kv precision must be one of: " + ", ".join(KV_BYTES))
    k = kv_precision.strip().lower()
    k = KV_ALIASES.get(k, k)
    if k is None:
        return default
    if k not in KV_BYTES:
        raise UsageError(f"unknown KV precision {kv_precision!r}; use one of: {', '.join(KV_BYTES)}")
    return k


def check_gpu_runs(gpu, wf: WeightFormat, kv: str) -> None:
    """Refuse a precision whose tensor cores the GPU lacks, naming what it can run instead."""
    if wf.needs and not gpu.supports(wf.needs):
        alt = "fp8" if wf.needs == "fp4" and gpu.supports("fp8") else "int8 or int4 (awq)"
        raise UsageError(f"{gpu.id} has no {wf.needs} tensor cores for {wf.key} weights; use bf16 or {alt}")
    need = KV_NEEDS.get(kv)
    if need and not gpu.supports(need):
        raise UsageError(f"{gpu.id} cannot run a {kv} KV cache; use fp8 or bf16")
