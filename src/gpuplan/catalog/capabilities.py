"""What a GPU can run: tensor-core precisions, attention kernels and serving engines, per architecture.

A plan the hardware cannot run is not a plan. V100 and T4 have no bf16 tensor cores and no
FlashAttention-2; vLLM refuses bf16 on compute capability 7.0; SGLang and TensorRT-LLM do not run
on every vendor. Where practitioners fall back (fp16 with loss scaling on V100), the fallback is
taken and said; where nothing runs, the reason is given. The facts and their sources live in
data/architectures.json.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from importlib import resources

from gpuplan.catalog.records import Gpu

SIXTEEN_BIT = frozenset({"bf16", "fp16"})
# Engines that never run on a vendor, whatever the architecture table says.
VENDOR_ENGINES = {"NVIDIA": {"vllm", "sglang", "trtllm"}, "AMD": {"vllm", "sglang"}, "Intel": {"vllm"},
                  "Google": {"vllm"}}


@functools.cache
def _data() -> dict:
    with resources.files("gpuplan.catalog.data").joinpath("architectures.json").open(encoding="utf-8") as f:
        return json.load(f)


def arch_of(gpu: Gpu | str, vendor: str = "") -> str:
    """The architecture family of a GPU id ('H100-SXM' -> 'Hopper'); 'unknown' when not listed."""
    gid = gpu.id if isinstance(gpu, Gpu) else str(gpu)
    return _data()["gpu_arch"].get(gid, "unknown")


@dataclass(frozen=True)
class Resolution:
    """Whether a GPU can run a job as asked, what it runs instead, and why."""

    ok: bool
    precision: str
    flash_attention: bool = True
    notes: tuple[str, ...] = ()
    reason: str | None = None  # why not, when ok is False


@dataclass(frozen=True)
class ArchInfo:
    name: str
    precisions: frozenset[str]
    flash_attention: str | None
    attention_kernel: str
    engines: dict[str, str | None] = field(default_factory=dict)
    fallback_16bit: str | None = None
    software: str | None = None  # the stack a non-CUDA architecture needs


def arch_info(gpu: Gpu) -> ArchInfo | None:
    name = arch_of(gpu)
    d = _data()["arch"].get(name)
    if d is None:
        return None
    return ArchInfo(name=name, precisions=frozenset(d["precisions"]), flash_attention=d.get("flash_attention"),
                    attention_kernel=d.get("attention_kernel", ""), engines=dict(d.get("engines", {})),
                    fallback_16bit=d.get("fallback_16bit"), software=d.get("software"))


def _has_precision(gpu: Gpu, info: ArchInfo | None, precision: str) -> bool:
    if precision in ("fp8", "fp4") and not gpu.supports(precision):
        return False
    return info is None or precision in info.precisions


def _sixteen_bit(gpu: Gpu, info: ArchInfo | None, precision: str) -> str | None:
    """The 16-bit format this GPU runs for a requested bf16/fp16 (None: none at all)."""
    if _has_precision(gpu, info, precision):
        return precision
    return next((p for p in ("fp16", "bf16") if _has_precision(gpu, info, p)), None)


def resolve_training(gpu: Gpu, precision: str) -> Resolution:
    """The precision and attention kernel a training job runs with on this GPU.

    bf16 on a GPU without bf16 falls back to fp16 with dynamic loss scaling (what Megatron and
    DeepSpeed do on V100/T4), at the same tensor-core rate (the spec table's bf16 column holds the
    fp16 figure there). Without FlashAttention-2 the attention scores are materialised: the memory
    and time model follow (workload.flash_attention = False)."""
    info = arch_info(gpu)
    notes: list[str] = []
    used = precision
    if precision in SIXTEEN_BIT:
        used = _sixteen_bit(gpu, info, precision)
        if used is None:
            return Resolution(False, precision, reason=f"{gpu.id} has no 16-bit tensor cores")
        if used != precision:
            notes.append(f"{gpu.id} has no {precision}: trains in {used} with dynamic loss scaling")
    elif not _has_precision(gpu, info, precision):
        return Resolution(False, precision, reason=f"{gpu.id} ({info.name if info else 'unknown architecture'}) "
                                                   f"has no {precision} tensor cores")
    fa = bool(info is None or info.flash_attention)
    if not fa:
        notes.append(f"no FlashAttention-2 on {info.name}: attention scores are materialised "
                     f"({info.attention_kernel}), costing memory and time")
    if info is not None and info.software:
        notes.append(f"software: {info.software}")
    return Resolution(True, used, flash_attention=fa, notes=tuple(notes))


def resolve_serving(gpu: Gpu, precision: str, engine: str | None) -> Resolution:
    """Whether `engine` serves `precision` weights on this GPU; bf16 falls back to fp16 where needed."""
    info = arch_info(gpu)
    notes: list[str] = []
    used = precision
    engine_key = (engine or "vllm").lower()
    if engine_key not in VENDOR_ENGINES.get(gpu.vendor, {engine_key}):
        return Resolution(False, precision, reason=f"{engine_key} does not run on {gpu.vendor} GPUs")
    if info is not None and engine_key in info.engines and not info.engines[engine_key]:
        return Resolution(False, precision, reason=f"{engine_key} does not support {info.name} ({gpu.id})")
    if precision in SIXTEEN_BIT:
        used = _sixteen_bit(gpu, info, precision)
        if used is None:
            return Resolution(False, precision, reason=f"{gpu.id} has no 16-bit tensor cores")
        if used != precision:
            notes.append(f"{gpu.id} has no {precision}: serves {used} weights (same size)")
    if info is not None and engine_key in info.engines and info.engines[engine_key] not in ("yes", None):
        notes.append(f"{engine_key} on {info.name}: {info.engines[engine_key]}")
    return Resolution(True, used, flash_attention=bool(info is None or info.flash_attention), notes=tuple(notes))
