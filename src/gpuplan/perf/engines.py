"""Serving-engine presets: capacity defaults (data) and speed factors (fitted).

Two files, two kinds of knowledge. `inference-engines.json` holds what each engine does by
default (memory fraction, KV reservation, batch caps): facts from its documentation.
`inference-efficiency.json` holds the few numbers fitted to published measurements by
`scripts/fit_serving_efficiency.py`: achieved bandwidth and compute fractions shared by
all rows, a per-step overhead and one speed factor per engine, beside two numbers held at
public measurements (the tensor-parallel all-reduce latency, a served request's front end).
Nothing is fitted per model or per row.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field, replace
from importlib import resources

from gpuplan.errors import UnknownNameError, UsageError

# Used only until the fit has been written once; the fit replaces them.
_UNFITTED = {
    "eta_bw": 0.8,
    "eta_c": 0.6,
    # One small-message all-reduce over NVLink as the engines' own one-shot kernels time it on 8 H100s: 5.9 us
    # (SGLang's TensorRT-LLM-derived kernel) and 9.3-10.1 us (vLLM's custom all-reduce), 512 B to 4 KB, both without
    # CUDA graphs (sgl-project/sglang PR #2904); the middle, 8 us. Measured, not fitted (inference_validation.MEASURED):
    # a fit moves it to explain whatever else it misses (refitted on the sources before 2025-09 it chose 19 us).
    "allreduce_latency_us": 8.0,
    "step_overhead_ms": 1.0,
    "lowp_gemm_ratio": 0.8,
    "latency_factor": 1.0,
    "moe_half_tokens": 16.0,
    "moe_gemm_ratio": 1.0,
    "moe_pair_overhead_ns": 0.0,
    "layer_overhead_us": 0.0,
    "ep_hot_excess": 0.0,
    # Without a served row that measures TTFT: what public measurements put between a client and the engine --
    # vllm-project/vllm PR #54628, `vllm bench serve` client TTFT vs the server's own: +8.4 to +12.2 ms;
    # tenstorrent/tt-inference-server issue #190, vLLM offline -> online: +4 ms. Unknown is not free.
    "frontend_ms": 8.0,
    "engine_factor": {"vllm": 1.0, "sglang": 1.0, "trtllm": 1.0, "optimum-habana": 1.0},
}


@dataclass(frozen=True)
class Efficiency:
    """Shared efficiency parameters of the serving model (all interpretable, all overridable)."""

    eta_bw: float  # achieved fraction of HBM bandwidth in memory-bound kernels
    eta_c: float  # achieved fraction of dense tensor peak in compute-bound GEMMs
    allreduce_latency_us: float  # fixed cost of one TP all-reduce over NVLink
    step_overhead_ms: float  # scheduler/launch time per engine iteration
    engine_factor: dict[str, float] = field(default_factory=dict)  # speed relative to the roofline
    # 8- and 4-bit GEMMs reach a smaller share of their (doubled) peak than bf16: training
    # recipes show fp8 at 43-45 % of fp8 peak vs 52-60 % of bf16 peak for bf16 (formulas.md §5).
    lowp_gemm_ratio: float = 0.8
    # The batch-independent weight stream of a decode step (CUDA-graph captured GEMVs) runs at this share of
    # eta_bw whatever the engine: the engine factor, fitted on max-throughput rows, scales only the work that
    # grows with the batch (FLOPs, KV reads, MoE token traffic), so concurrency-1 latency does not carry it.
    latency_factor: float = 1.0
    # Grouped expert GEMMs reach moe_gemm_ratio x t/(t + moe_half_tokens) of eta_c with t tokens per touched expert:
    # the ratio is what they reach with many tokens per expert (ragged groups, per-expert scales, tile tails); the
    # half-point how fast a few tokens per expert stop paying a whole tile. Below the weight stream they cost nothing
    # extra: a decode step with few tokens per expert is priced by reading the touched experts (inference_timing.py).
    moe_half_tokens: float = 16.0
    moe_gemm_ratio: float = 1.0
    # Router, permutation and unpermutation kernels: seconds x 1e-9 per (token, routed expert, MoE layer),
    # split over the replica's GPUs; small scatter/gather kernels that do not speed up with the GPU.
    moe_pair_overhead_ns: float = 0.0
    # Floor per dense GQA layer per step: a CUDA-graph captured decode hides launch latency, but each of a
    # layer's kernels still has a minimum duration; this is what keeps concurrency-1 TPOT above the weight
    # stream on deep models (it scales with layers and their GEMM-class kernels, inference_memory.layer_kernel_ratio,
    # not with the batch or the GPU).
    layer_overhead_us: float = 0.0
    # Expert-parallel routing is not uniform: ep_hot_excess is the spread (coefficient of variation) of expert
    # popularity; the busiest of ep GPUs carries about 1 + c x sqrt(ep / experts) x sqrt(2 ln ep) of the mean
    # token-expert pairs before sampling noise (no expert-load balancer assumed; inference_timing.py).
    ep_hot_excess: float = 0.0
    # Per request, outside the engine's iterations: the server's HTTP handling, tokenisation, admission into the
    # running batch and the first token's detokenisation and streaming. Added once to TTFT (so to E2E); it does
    # not occupy the GPU, so it costs throughput only through the closed loop's E2E.
    frontend_ms: float = 0.0
    source: str = "unfitted defaults"

    def with_overrides(self, **kw) -> "Efficiency":
        clean = {k: v for k, v in kw.items() if v is not None}
        for k, v in clean.items():
            if k == "engine_factor":
                continue
            _check_positive(k, v, upper=None if k in ("allreduce_latency_us", "step_overhead_ms", "moe_half_tokens",
                                                      "latency_factor", "moe_pair_overhead_ns",
                                                      "layer_overhead_us", "ep_hot_excess",
                                                      "frontend_ms") else 1.0)
        return replace(self, **clean) if clean else self


@dataclass(frozen=True)
class Engine:
    key: str
    name: str
    memory_fraction: float
    memory_fraction_of: str  # 'total' (vLLM, SGLang) or 'free' after weights (TensorRT-LLM)
    kv_reserve: str  # 'average' (on-demand pages) or 'maximum' (input+output reserved)
    block_tokens: int
    max_num_seqs: int
    max_num_batched_tokens: int
    runtime_overhead_gib: float
    default_kv: dict[str, str]
    notes: dict[str, str]
    batching: str = "continuous"  # 'continuous' (vLLM, SGLang, TRT-LLM) or 'static' (Optimum-Habana: fixed, padded batch)
    bucket_tokens: int = 1  # static engines pad sequence lengths to this bucket
    small_gpu: "SmallGpuDefaults | None" = None  # the smaller batch defaults it picks on smaller GPUs (vLLM)

    def on_gpu(self, gpu) -> "Engine":
        """This engine with the batch defaults it picks on `gpu`: vLLM caps a GPU under 70 GiB, or any A100, at
        256 sequences and 2048 tokens per step where larger ones get 1024 and 8192 (NVIDIA and AMD builds)."""
        sg = self.small_gpu
        if sg is None or not sg.applies(gpu):
            return self
        return replace(self, max_num_seqs=sg.max_num_seqs, max_num_batched_tokens=sg.max_num_batched_tokens)


@dataclass(frozen=True)
class SmallGpuDefaults:
    """Batch defaults an engine picks on GPUs under `below_gib` of memory or whose id contains one of `names`."""

    below_gib: float
    names: tuple[str, ...]
    max_num_seqs: int
    max_num_batched_tokens: int

    def applies(self, gpu) -> bool:
        if gpu.vendor not in ("NVIDIA", "AMD"):  # the Gaudi plugin sets its own
            return False
        return gpu.memory_gb < self.below_gib or any(n in gpu.id.lower() for n in self.names)


def _check_positive(name: str, v: float, upper: float | None = 1.0) -> None:
    import math

    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v <= 0:
        raise UsageError(f"{name} must be a positive finite number, got {v!r}")
    if upper is not None and v > upper:
        raise UsageError(f"{name} must be at most {upper}, got {v!r}")
    if upper is None and v > 1e6:
        raise UsageError(f"{name} is implausibly large: {v!r}")


def _read_json(name: str) -> dict | None:
    f = resources.files("gpuplan.perf.data").joinpath(name)
    if not f.is_file():
        return None
    return json.loads(f.read_text(encoding="utf-8"))


@functools.cache
def _engine_data() -> dict:
    data = _read_json("inference-engines.json")
    if data is None:  # pragma: no cover - packaging error
        raise RuntimeError("gpuplan package data inference-engines.json is missing")
    return data


@functools.cache
def all_engines() -> dict[str, Engine]:
    out = {}
    for key, e in _engine_data()["engines"].items():
        out[key] = Engine(
            key=key, name=e["name"], memory_fraction=e["memory_fraction"],
            memory_fraction_of=e["memory_fraction_of"], kv_reserve=e["kv_reserve"],
            block_tokens=int(e["block_tokens"]), max_num_seqs=int(e["max_num_seqs"]),
            max_num_batched_tokens=int(e["max_num_batched_tokens"]),
            runtime_overhead_gib=float(e["runtime_overhead_gib"]), default_kv=dict(e["default_kv"]),
            notes={k: v for k, v in e.items() if k.endswith("_note")},
            batching=e.get("batching", "continuous"), bucket_tokens=int(e.get("bucket_tokens", 1)),
            small_gpu=_small_gpu(e.get("small_gpu")),
        )
    return out


def _small_gpu(d: dict | None) -> SmallGpuDefaults | None:
    if not d:
        return None
    return SmallGpuDefaults(below_gib=float(d["below_gib"]), names=tuple(d["names"]),
                            max_num_seqs=int(d["max_num_seqs"]), max_num_batched_tokens=int(d["max_num_batched_tokens"]))


def resolve_engine(name: str) -> Engine:
    """Engine preset by key or alias ('vllm', 'TensorRT-LLM', 'trt-llm', 'sglang')."""
    if not isinstance(name, str) or not name.strip():
        raise UsageError("engine must be one of: " + ", ".join(all_engines()))
    key = name.strip().lower()
    engines = all_engines()
    if key in engines:
        return engines[key]
    for k, e in _engine_data()["engines"].items():
        if key in e.get("aliases", []):
            return engines[k]
    raise UnknownNameError("engine", name, list(engines))


def interconnect() -> dict:
    return dict(_engine_data()["interconnect"])


@functools.cache
def fitted_efficiency() -> Efficiency:
    """The fitted parameters, or documented starting values before the first fit."""
    data = _read_json("inference-efficiency.json")
    p = dict(_UNFITTED)
    source = "unfitted defaults (run scripts/fit_serving_efficiency.py)"
    if data and "params" in data:
        p.update(data["params"])
        source = data.get("source", "inference-efficiency.json")
    return Efficiency(
        eta_bw=float(p["eta_bw"]), eta_c=float(p["eta_c"]),
        allreduce_latency_us=float(p["allreduce_latency_us"]),
        step_overhead_ms=float(p["step_overhead_ms"]), lowp_gemm_ratio=float(p["lowp_gemm_ratio"]),
        latency_factor=float(p.get("latency_factor", 1.0)), moe_half_tokens=float(p.get("moe_half_tokens", 16.0)),
        moe_gemm_ratio=float(p.get("moe_gemm_ratio", 1.0)),
        moe_pair_overhead_ns=float(p.get("moe_pair_overhead_ns", 0.0)),
        layer_overhead_us=float(p.get("layer_overhead_us", 0.0)), ep_hot_excess=float(p.get("ep_hot_excess", 0.0)),
        frontend_ms=float(p.get("frontend_ms", 0.0)),
        engine_factor={k: float(v) for k, v in p["engine_factor"].items()}, source=source,
    )


def engine_factor(eff: Efficiency, engine: Engine) -> float:
    """An engine without measurements of its own runs at the mean of the fitted factors."""
    if engine.key in eff.engine_factor:
        return eff.engine_factor[engine.key]
    known = all_engines()
    vals = [v for k, v in eff.engine_factor.items() if k in known and known[k].batching == engine.batching]
    return sum(vals) / len(vals) if vals else 1.0
