"""Serving estimate: throughput, latency, concurrency and memory for a model on a GPU.

The operating point is a closed loop of B requests on one replica (TP GPUs). Each request
spends TTFT in prefill (chunked, next to B−1 decoding sequences) and OSL−1 iterations
decoding while the other requests' prompts are interleaved into the same iterations, so

    TPOT(B) = t_step(decode B, prefill (B−1)·ISL/OSL)      E2E(B) = TTFT(B) + (OSL−1)·TPOT(B)
    throughput(B) = B·OSL / E2E(B)  per replica

B is capped by the KV cache (after weights and runtime buffers at the engine's memory
fraction) and the engine's max_num_seqs. Without a concurrency the estimate reports the
best throughput; with latency targets, the best throughput whose TTFT and TPOT meet them.
"""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from gpuplan.errors import UsageError
from gpuplan.perf import inference_memory as mem
from gpuplan.perf.achievable_matmul import realisation
from gpuplan.perf.calibration import calibration_entry
from gpuplan.perf.engines import (Efficiency, Engine, all_engines, engine_factor, fitted_efficiency, interconnect,
                                   resolve_engine)
from gpuplan.perf.inference_precision import (KV_BYTES, WeightFormat, check_gpu_runs, kv_format, serving_weight_format,
                                              weight_format)
from gpuplan.perf.inference_timing import ACT_BYTES, StepModel
from gpuplan.perf.scaleup import describe as describe_scaleup, group_share
from gpuplan.perf.training_time import nvlink_domain

MAX_TOKENS = 10_000_000  # longest prompt or output accepted (10M tokens)
MAX_CONCURRENCY = 10_000_000
MAX_GPUS = 100_000
TP_CHOICES = (1, 2, 4, 8)
# Attention-DP MoE exchanges tokens with all-to-all kernels only across rack-scale NVLink (MNNVL: TensorRT-LLM's
# alltoall needs it, DeepEP is opt-in); in an 8-GPU node the engines all-gather the tokens and reduce-scatter the
# outputs (TensorRT-LLM CutlassFusedMoE, vLLM's default all2all backend, SGLang's dp_gather / dp_scatter without
# DeepEP). Gathered inputs travel at the expert GEMM's input precision (quantized before the gather: the element
# sizes KV_BYTES lists for those formats), outputs in 16 bits.
GPUS_PER_NODE = 8


class ServingEstimate(BaseModel):
    """One serving configuration's predicted performance, with the assumptions behind it."""

    model: str
    gpu: str
    n_gpus: int
    tp: int
    replicas: int
    engine: str
    precision: str
    kv_precision: str
    input_len: int
    output_len: int
    fits: bool
    message: str | None = None
    shortfall_gb: float | None = Field(None, description="extra memory per GPU needed to hold one request")
    concurrency: float = Field(0, description="requests in flight, all replicas")
    running_concurrency: float = Field(0, description="requests the GPUs actually batch, all replicas")
    max_concurrency: int = Field(0, description="requests that fit at once, all replicas (KV-limited under the engine's reservation policy, capped by max_num_seqs)")
    max_concurrency_full_length: int = Field(0, description="requests that fit if each holds input+output tokens (vLLM's log line)")
    kv_cache_tokens: int = Field(0, description="KV cache capacity of one replica, in tokens")
    kv_bytes_per_token: float = Field(0, description="KV bytes of one token, all layers, one copy")
    output_tokens_per_s: float = 0.0
    output_tokens_per_s_per_gpu: float = 0.0
    input_tokens_per_s: float = 0.0
    requests_per_s: float = 0.0
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2e_latency_s: float | None = None
    decode_bound: str | None = Field(None, description="memory or compute: what limits a decode iteration")
    limited_by: str | None = Field(None, description="what set the operating concurrency")
    meets_targets: bool | None = None
    memory_per_gpu_gb: float = 0.0
    memory_breakdown_gb: dict[str, float] = Field(default_factory=dict)
    assumptions: dict[str, Any] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)


def scan_bw_share() -> float:
    """Share of HBM bandwidth a hybrid's chunked-scan kernels reach: the training fit's, the one measurement of them
    (perf/efficiency.py, linear_scan_bw_share); prefill runs the same forward kernels."""
    from gpuplan.perf.efficiency import default_efficiency

    return default_efficiency().linear_scan_bw_share


# ---------------------------------------------------------------- input checks ----------
def _check_int(name: str, v: Any, lo: int, hi: int) -> int:
    if isinstance(v, bool) or v is None:
        raise UsageError(f"{name} must be a whole number in {lo}..{hi:,}, got {v!r}")
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be a whole number in {lo}..{hi:,}, got {v!r}") from None
    if not math.isfinite(f) or f < lo or f > hi or f != int(f):
        raise UsageError(f"{name} must be a whole number in {lo}..{hi:,}, got {v!r}")
    return int(f)


def _check_pos(name: str, v: Any, hi: float = 1e9) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be a positive number, got {v!r}") from None
    if isinstance(v, bool) or not math.isfinite(f) or f <= 0 or f > hi:
        raise UsageError(f"{name} must be a positive number up to {hi:g}, got {v!r}")
    return f


def _resolve_model(model):
    from gpuplan.models.spec import ModelSpec

    if isinstance(model, ModelSpec):
        return model
    if isinstance(model, str):
        try:
            from gpuplan.models import resolve_model
        except ImportError:
            raise UsageError("model presets are not available yet; pass a ModelSpec") from None
        return resolve_model(model)
    raise UsageError(f"model must be a preset name or a ModelSpec, got {type(model).__name__}")


def _resolve_gpu(gpu):
    from gpuplan.catalog.records import Gpu

    if isinstance(gpu, Gpu):
        return gpu
    if isinstance(gpu, str):
        from gpuplan.catalog.gpus import get_gpu

        return get_gpu(gpu)
    raise UsageError(f"gpu must be a GPU name or a Gpu record, got {type(gpu).__name__}")


def known_context(model) -> int | None:
    """The model's maximum context (input + output tokens) when it is known: a preset's published one. A model
    derived from a parameter count or read from a config.json carries a default where its source gave none, so
    it is not enforced there (None)."""
    from gpuplan.models.presets import get_preset, resolve_preset_id

    name = getattr(model, "name", None)
    if not isinstance(name, str) or resolve_preset_id(name) is None:
        return None
    preset = get_preset(name)
    return preset.max_seq_len if preset.max_seq_len == model.max_seq_len else None


def check_context(model, input_len: int, output_len: int) -> None:
    """A request longer than the model's known context is a usage error (engines refuse it: vLLM caps
    --max-model-len at the model's max_position_embeddings)."""
    limit = known_context(model)
    if limit is not None and input_len + output_len > limit:
        raise UsageError(f"input+output {input_len + output_len:,} tokens exceeds {model.name}'s context of "
                         f"{limit:,} tokens; shorten --input-len/--output-len")


def serving_engines(gpu, precision: str) -> list[str]:
    """Engines that serve `precision` weights on `gpu`: the planner's check (catalog.capabilities.resolve_serving)
    for the continuous-batching engines; the static-batch one (Optimum-Habana) runs on Intel Gaudi (HPU) only."""
    return [e.key for e in all_engines().values() if _engine_refusal(gpu, e, precision) is None]


def _engine_refusal(g, eng: Engine, precision: str) -> str | None:
    if eng.batching == "static":
        return None if g.vendor == "Intel" else f"{eng.key} runs on Intel Gaudi (HPU) only"
    from gpuplan.catalog.capabilities import resolve_serving

    res = resolve_serving(g, precision, eng.key)
    return None if res.ok else (res.reason or f"{eng.key} cannot serve {precision} on {g.id}")


def check_engine_serves(gpu, engine: str, precision: str) -> None:
    """Refuse an engine that cannot run on the GPU (the same check `plan serve` ranks offers by), naming
    the engines that can."""
    g = _resolve_gpu(gpu)
    eng = resolve_engine(engine)
    key = weight_format(precision).key
    why = _engine_refusal(g, eng, key)
    if why is not None:
        others = serving_engines(g, key)
        raise UsageError(f"{eng.key} cannot serve {key} weights on {g.id}: {why}; engines that can: "
                         + (", ".join(others) if others else "none"))


# ---------------------------------------------------------------- the setup ----------
class _Replica:
    """Memory and timing of one replica (tp GPUs) for a fixed model/GPU/precision/engine."""

    def __init__(self, shape: mem.ModelShape, gpu, tp: int, wf: WeightFormat, kv: str, engine: Engine,
                 eff: Efficiency, memory_fraction: float, max_num_seqs: int, dp_attention: bool, ep: int = 1,
                 grouped: bool = False):
        self.shape, self.gpu, self.tp, self.wf, self.kv, self.engine = shape, gpu, tp, wf, kv, engine
        dp_attention = dp_attention and bool(shape.n_experts)
        ep = ep if shape.n_experts else 1
        self.ep = ep
        self.static = engine.batching == "static"
        # Closed-loop clients with one prompt and one output length: prompts arrive in groups (arrival_group).
        self.grouped = grouped and not self.static
        # With attention data parallel every GPU runs its own scheduler (vLLM DP engines, TRT-LLM ADP ranks):
        # the sequence cap and the token budget are per GPU.
        self.max_num_seqs = max_num_seqs * (tp if dp_attention else 1)
        self.token_budget = float(engine.max_num_batched_tokens * (tp if dp_attention else 1))
        self.memory_fraction = memory_fraction
        # A served request's time outside the iterations (HTTP, tokenisation, admission, streaming). A static-batch
        # engine is an offline harness here (Optimum-Habana's generation script): no server in front of it.
        self.frontend_s = 0.0 if self.static else eff.frontend_ms * 1e-3
        self.dp_attention = dp_attention
        self.weights_gpu = mem.weight_bytes_per_gpu(shape, wf.bytes_per_param, tp, dp_attention, ep)
        seqs = max_num_seqs
        self.runtime_gpu = engine.runtime_overhead_gib * mem.GIB + mem.activation_bytes_per_gpu(
            shape, 1 if dp_attention else tp, engine.max_num_batched_tokens, seqs)
        self.kv_avail_gpu = mem.kv_available_bytes_per_gpu(
            gpu, self.weights_gpu, self.runtime_gpu, memory_fraction, engine.memory_fraction_of)
        self.kv_bytes_token = shape.kv_elems_per_token * KV_BYTES[kv] + shape.index_bytes_per_token
        self.kv_shards = mem.kv_shards(shape, tp, dp_attention)
        self.kv_bytes_token_gpu = self.kv_bytes_token / self.kv_shards
        self.kv_tokens = int(max(0.0, self.kv_avail_gpu) / self.kv_bytes_token_gpu) if self.kv_bytes_token_gpu else 0
        self.kv_tokens -= self.kv_tokens % engine.block_tokens

        ic = interconnect()
        if gpu.nvlink_gbps > 0:
            # On a point-to-point mesh (MI300X, Gaudi) the replica's collectives use only the links among its GPUs.
            link = gpu.nvlink_gbps / 2 * 1e9 * group_share(gpu, tp)
            lat = eff.allreduce_latency_us * 1e-6
        else:
            gen5 = "gen5" in gpu.form_factor.lower()
            link = (ic["pcie_gen5_gb_per_s"] if gen5 else ic["pcie_gen4_gb_per_s"]) * 1e9
            lat = eff.allreduce_latency_us * 1e-6 * ic["pcie_latency_factor"]
        gemm_peak = gpu.peak_tflops(wf.compute)
        # The architecture's serving efficiency relative to Hopper (perf/data/vendor-efficiency.json).
        from gpuplan.perf.vendor_efficiency import applied_factor

        self.arch_factor = af = applied_factor(gpu.id, "serving", gpu.vendor).factor
        expert_bytes = shape.expert_params * wf.bytes_per_param / tp  # = whole experts on 1/ep of the GPUs
        dense_read = mem.weight_bytes(shape, wf.bytes_per_param) - shape.routed_expert_params * wf.bytes_per_param
        dense_read -= shape.input_embedding_params * mem.EMBEDDING_BYTES_PER_PARAM  # lookup, not a GEMM
        dense_read = dense_read if dp_attention and shape.n_experts else dense_read / tp
        # 8/4-bit GEMMs reach a smaller share of their own (higher) peak; so do weight-only (mixed-input) GEMMs, which
        # dequantize their narrow weights to the 16-bit math inside the main loop.
        mixed_input = wf.compute == "bf16" and wf.bytes_per_param < 2.0
        # Measured matmul realisation against Hopper's (perf/achievable_matmul.py): physics, so it holds under
        # vendor_efficiency.physics_only() too.
        self.gemm_realisation = realisation(gpu, wf.compute)
        gemm_rate = gemm_peak * 1e12 * eff.eta_c * af * self.gemm_realisation.factor * (
            eff.lowp_gemm_ratio if gemm_peak > gpu.bf16_tflops or mixed_input else 1.0)
        bf16_rate = gpu.peak_tflops("bf16") * 1e12 * eff.eta_c * af * realisation(gpu, "bf16").factor
        dense_rate = bf16_rate if mem.dense_kept_16bit(shape, wf.bytes_per_param) else gemm_rate
        self.steps = StepModel(
            shape=shape, tp=tp, dp_attention=dp_attention, ep=ep, nvlink=gpu.nvlink_gbps > 0,
            latency_factor=eff.latency_factor, moe_half_tokens=eff.moe_half_tokens, moe_gemm_ratio=eff.moe_gemm_ratio,
            moe_pair_overhead_s=eff.moe_pair_overhead_ns * 1e-9, layer_overhead_s=eff.layer_overhead_us * 1e-6,
            ep_hot_excess=eff.ep_hot_excess,
            weight_read_bytes_dense=dense_read, expert_bytes_gpu=expert_bytes,
            kv_bytes_per_token_gpu=self.kv_bytes_token_gpu,
            index_share=shape.index_bytes_per_token / self.kv_bytes_token if self.kv_bytes_token else 0.0,
            bw_bytes_s=gpu.mem_bw_bytes_per_s * eff.eta_bw * af,
            gemm_flops_s=gemm_rate, dense_flops_s=dense_rate, head_flops_s=bf16_rate,
            attn_flops_s=bf16_rate,
            allreduce_latency_s=lat, link_bytes_s=link * ic["link_efficiency"],
            engine_factor=engine_factor(eff, engine), step_overhead_s=eff.step_overhead_ms * 1e-3,
            moe_alltoall=nvlink_domain(gpu, GPUS_PER_NODE) > GPUS_PER_NODE,
            dispatch_bytes=KV_BYTES.get(wf.compute, ACT_BYTES),
            scan_bw_s=gpu.mem_bw_bytes_per_s * scan_bw_share() * af if shape.n_linear_layers else 0.0,
        )

    def seq_tokens(self, isl: int, osl: int, reserve: str | None = None) -> float:
        """KV tokens one request holds; a hybrid's recurrent state (its share on this GPU) counted as the tokens
        of KV it displaces."""
        state = self.shape.linear_state_bytes / self.tp / self.kv_bytes_token_gpu if self.kv_bytes_token_gpu else 0.0
        return mem.tokens_per_sequence(isl, osl, reserve or self.engine.kv_reserve, self.engine.block_tokens,
                                       self.shape.sliding_window, self.shape) + state

    def max_running(self, isl: int, osl: int) -> int:
        per = self.seq_tokens(isl, osl)
        return int(min(self.kv_tokens // per, self.max_num_seqs)) if per else 0

    def needed_per_gpu_bytes(self, isl: int, osl: int) -> float:
        """Device memory one GPU needs to run a single request of this length."""
        one = self.seq_tokens(isl, osl, "maximum") * self.kv_bytes_token_gpu
        need = self.weights_gpu + self.runtime_gpu + one
        return need / self.memory_fraction

    def _static_ctx(self, isl: int, osl: int) -> tuple[float, float]:
        """Static engines pad the prompt and the decode context to their bucket."""
        bk = max(1, self.engine.bucket_tokens)
        pad_in = math.ceil(isl / bk) * bk
        return pad_in, math.ceil((pad_in + osl / 2.0) / bk) * bk

    def latency(self, b: np.ndarray, isl: int, osl: int) -> tuple[np.ndarray, np.ndarray]:
        """(TTFT s, TPOT s) for b running requests."""
        if self.static:
            # A fixed batch: every prompt (padded) is prefilled before the first decode step, in passes
            # of at most max_num_batched_tokens; then b sequences decode in lock-step.
            pad_in, ctx = self._static_ctx(isl, osl)
            budget = self.token_budget
            passes = np.ceil(b * pad_in / budget)
            ttft = passes * self.steps.step_time_s(0.0, b * pad_in / passes, ctx, pad_in / 2.0)
            return ttft, self.steps.step_time_s(b, 0.0, ctx, 0.0)
        ctx = isl + osl / 2.0
        others = np.maximum(b - 1.0, 0.0)
        chunk = self._chunk_tokens(others)
        n_chunks = np.ceil(isl / chunk)
        ttft = n_chunks * self.steps.step_time_s(others, isl / n_chunks, ctx, isl / 2.0)
        if self.grouped:
            # Each group's prompts are prefilled together beside the others' decodes, the last one's first token
            # waiting for the whole group's.
            group = np.broadcast_to(self.arrival_group(b, isl), np.shape(ttft))
            running = np.broadcast_to(np.asarray(b, dtype=float), np.shape(ttft))
            ttft = np.array([self._wave_ttft(int(k), isl, osl, decoding=float(n - k)) if k > 1 else t
                             for k, n, t in zip(group.ravel(), running.ravel(), np.ravel(ttft))]).reshape(np.shape(ttft))
        # Between its first and last token a request shares the engine with the others' prompts: their
        # prefill chunks stall its decode steps.
        tpot = self._mean_step_s(b, others * isl, isl, osl)
        # A request that arrives while others run waits for the iteration in flight to end before its
        # prompt is scheduled: half an iteration on average (none when it runs alone).
        ttft = ttft + 0.5 * np.minimum(others, 1.0) * tpot + self.frontend_s
        return ttft, tpot

    def cycle_s(self, b: np.ndarray, isl: int, osl: int) -> np.ndarray:
        """Steady-state time for b running requests to each finish once: osl engine steps that
        together carry all b prompts (b·isl prefill tokens) and b·osl decode tokens. Throughput is
        never faster than this, however short the output (with osl = 1 the work is all prefill)."""
        if self.static:
            ttft, tpot = self.latency(b, isl, osl)
            return ttft + (osl - 1) * tpot
        return osl * self._mean_step_s(b, b * isl, isl, osl)

    def _chunk_tokens(self, decoding: np.ndarray) -> np.ndarray:
        """Prompt tokens one iteration carries beside `decoding` decode tokens: what is left of the token budget
        (vLLM / SGLang / TRT-LLM schedule the decodes first, then fill the budget with prefill chunks)."""
        budget = self.token_budget
        return np.maximum(budget - decoding, budget / 8.0)

    def _mean_step_s(self, b: np.ndarray, prompt_tokens: np.ndarray, isl: int, osl: int) -> np.ndarray:
        """Mean iteration time over `osl` iterations of b decoding requests that also prefill `prompt_tokens`.
        In steady state requests finish one at a time and each successor's prompt is scheduled whole in the next
        iteration (in chunks of what the token budget leaves, if longer), so some iterations carry a prompt and
        the others decode only; only when more prompts arrive than there are iterations do several share one.
        Spreading the prompts thinly over every iteration instead would make each one touch more of an MoE
        model's experts than whole prompts do, and would hide prefill work under a memory-bound decode's idle
        compute, which it does not share an iteration with."""
        ctx = isl + osl / 2.0
        n, per_chunk = self._prompt_iterations(b, prompt_tokens, isl, osl)
        b, per_chunk = np.broadcast_arrays(np.asarray(b, dtype=float), per_chunk)
        both = self.steps.step_time_s(np.concatenate([b.ravel(), b.ravel()]),  # one call: with and without a prompt
                                      np.concatenate([per_chunk.ravel(), np.zeros(b.size)]), ctx, isl / 2.0)
        with_prompt, decode_only = both[:b.size].reshape(b.shape), both[b.size:].reshape(b.shape)
        return (n * with_prompt + (osl - n) * decode_only) / osl

    def arrival_group(self, b, isl: int):
        """Prompts that arrive together in steady state. Closed-loop clients whose prompts and outputs all have one
        length (a benchmark's fixed-length random data set with --ignore-eos) stay in the groups their first wave was
        admitted in: the prompts one iteration's token budget prefills reach their last token in one iteration too,
        and their clients' next prompts arrive together. Otherwise completions spread out and prompts arrive one at a
        time."""
        if not self.grouped:
            return 1.0
        return np.clip(np.floor(self.token_budget / isl), 1.0, np.maximum(np.asarray(b, dtype=float), 1.0))

    def _prompt_iterations(self, b, prompt_tokens, isl: int, osl: int):
        """(iterations out of osl that carry prompt tokens, prompt tokens each carries): whole prompts (a group of
        them where they arrive together), several to an iteration only when more arrive than there are iterations,
        never beyond what the token budget leaves."""
        arriving = self.arrival_group(b, isl) * float(isl)
        per_step = np.minimum(self._chunk_tokens(b), np.maximum(arriving, prompt_tokens / osl))
        n = np.clip(prompt_tokens / per_step, 1e-9, osl)
        return n, prompt_tokens / n

    def first_wave_ttft(self, b: int, isl: int, osl: int) -> float:
        """Mean TTFT (s) of b requests whose prompts all arrive at once, as a benchmark client's first wave
        does: each iteration runs the decodes of the prompts already done, then fills what is left of the token
        budget with the waiting prompts in arrival order (chunked), so the last of them waits for all the others."""
        return self._wave_ttft(b, isl, osl) + self.frontend_s

    def _wave_ttft(self, b: int, isl: int, osl: int, decoding: float = 0.0) -> float:
        """Mean engine time (s) to the first token of b prompts arriving together beside `decoding` running
        requests (first_wave_ttft, and a fixed-length closed loop's groups)."""
        need, done = float(b) * isl, 0.0
        decodes, chunks, ends = [], [], []
        budget = self.token_budget
        while done < need:
            d = decoding + min(float(b), math.floor(done / isl))
            p = min(max(budget - d, budget / 8.0), need - done)  # _chunk_tokens(d), in floats: this loop runs per iteration
            decodes.append(d)
            chunks.append(p)
            done += p
            ends.append(done)
        ctx = isl + osl / 2.0
        t = np.cumsum(self.steps.step_time_s(np.asarray(decodes), np.asarray(chunks), ctx, isl / 2.0))
        first_token = t[np.searchsorted(np.asarray(ends), isl * np.arange(1, b + 1, dtype=float) - 1e-6)]
        return float(first_token.mean())

    def decode_bound(self, b: float, isl: int, osl: int) -> str:
        """What limits the typical iteration: decode only, unless prompts are so many that every one carries some."""
        s = self.steps
        ctx = isl + osl / 2.0
        n, per_chunk = self._prompt_iterations(b, max(b - 1, 0) * isl, isl, osl)
        tokens = np.asarray([b + (float(per_chunk) if n >= osl else 0.0)], dtype=float)
        w = (s.weight_read_bytes_dense + self.shape.n_moe_layers * s.experts_touched(tokens)[0] * s.expert_bytes_gpu
             + b * ctx * s.kv_bytes_per_token_gpu) / s.bw_bytes_s
        c = 2 * self.shape.matmul_params * tokens[0] / self.tp / s.gemm_flops_s
        return "memory" if w >= c else "compute"


@functools.lru_cache(maxsize=4096)
def _grid(b_max: int) -> np.ndarray:
    """Concurrencies tried: every one up to 128, then ~1 % steps (the throughput curve is smooth there)."""
    if b_max <= 128:
        return np.arange(1, b_max + 1, dtype=float)
    g = np.unique(np.round(np.geomspace(1, b_max, 256)))
    out = np.unique(np.concatenate([g, [b_max]])).astype(float)
    out.flags.writeable = False
    return out


# ---------------------------------------------------------------- public API ----------
def estimate_serving(
    model,
    gpu,
    n_gpus: int | None = None,
    precision: str = "bf16",
    kv_precision: str | None = None,
    input_len: int = 1000,
    output_len: int = 1000,
    concurrency: int | None = None,
    max_ttft_ms: float | None = None,
    max_tpot_ms: float | None = None,
    engine: str = "vllm",
    tp: int | None = None,
    dp_attention: bool = False,
    memory_fraction: float | None = None,
    max_num_seqs: int | None = None,
    eta_bw: float | None = None,
    eta_c: float | None = None,
    allreduce_latency_us: float | None = None,
    step_overhead_ms: float | None = None,
    efficiency: Efficiency | None = None,
    ep: int | None = None,
    requests: int | None = None,
    fixed_lengths: bool = False,
) -> ServingEstimate:
    """Predict serving throughput and latency.

    n_gpus is the total; tp the GPUs per replica (default: all of n_gpus, or without n_gpus
    the smallest of 1, 2, 4, 8 that holds the model). `concurrency` is requests in flight
    across all replicas; without it the best-throughput point is reported, and with
    max_ttft_ms / max_tpot_ms the best point meeting them. eta_* and the rest override
    the fitted efficiency (see `assumptions` in the result). For MoE models `ep` (1 or the
    replica's GPU count) places whole experts on each GPU instead of slicing them, and
    `dp_attention` (attention data parallel, implies ep = tp) replicates attention so each GPU
    runs its own sequences; the experts exchange tokens by all-to-all across rack-scale NVLink
    (GB200/GB300 NVL72), by all-gather and reduce-scatter inside an 8-GPU node.
    `requests` (with `concurrency`) reads TTFT as a benchmark client reports it: `requests` prompts through
    `concurrency` closed-loop clients (`vllm bench serve --num-prompts N --max-concurrency C`), the first wave of
    C arriving together and queueing for the token budget; TTFT is the mean over all N. `requests` without
    `concurrency` is an offline benchmark (`trtllm-bench throughput`, `vllm bench throughput --num-prompts N`): all
    N queued at once, run in waves of as many as fit, the last one partial. `fixed_lengths` (with `concurrency`) says
    every prompt and every output has the one length (`vllm bench serve`'s random data set at its default range ratio
    0 with --ignore-eos): the closed loop's clients then stay in the groups their first wave was admitted in, a token
    budget's worth of prompts arriving and prefilled together (longer TTFT, and prompt iterations that no longer hide
    under the decodes); with lengths that vary, completions spread out and prompts arrive one at a time.
    """
    m = _resolve_model(model)
    g = _resolve_gpu(gpu)
    eng = resolve_engine(engine).on_gpu(g)
    # A native MXFP4 checkpoint runs against MXFP8 activations where the GPU has FP4 tensor cores (8-bit math), and
    # weight-only, dequantized to bf16, where it has none.
    wf = serving_weight_format(weight_format(precision), g, getattr(m, "native_precision", None))
    dequantized = wf.key == "fp4" and wf.compute == "bf16"
    # Weight-only 4-bit keeps the engine's weight-only KV default (TensorRT-LLM: bf16 KV for gpt-oss on Hopper).
    kv = kv_format(kv_precision, eng.default_kv.get("int4" if dequantized else wf.key, "bf16"))
    check_gpu_runs(g, wf, kv)
    isl = _check_int("input_len", input_len, 1, MAX_TOKENS)
    osl = _check_int("output_len", output_len, 1, MAX_TOKENS)
    check_context(m, isl, osl)
    conc = None if concurrency is None else _check_int("concurrency", concurrency, 1, MAX_CONCURRENCY)
    n_req = None if requests is None else _check_int("requests", requests, 1, MAX_CONCURRENCY)
    if fixed_lengths and conc is None:
        raise UsageError("fixed lengths describe a benchmark's closed-loop clients: give concurrency (its "
                         "--max-concurrency) too")
    ttft_cap = None if max_ttft_ms is None else _check_pos("max_ttft_ms", max_ttft_ms)
    tpot_cap = None if max_tpot_ms is None else _check_pos("max_tpot_ms", max_tpot_ms)
    frac = eng.memory_fraction if memory_fraction is None else _check_pos("memory_fraction", memory_fraction, 1.0)
    seqs_cap = eng.max_num_seqs if max_num_seqs is None else _check_int("max_num_seqs", max_num_seqs, 1, MAX_CONCURRENCY)
    eff = (efficiency or fitted_efficiency()).with_overrides(
        eta_bw=eta_bw, eta_c=eta_c, allreduce_latency_us=allreduce_latency_us, step_overhead_ms=step_overhead_ms)
    shape = mem.model_shape(m)

    total = None if n_gpus is None else _check_int("n_gpus", n_gpus, 1, MAX_GPUS)
    if tp is not None:
        tp = _check_int("tp", tp, 1, 1024)
        if total is None:
            total = tp
    if total is not None and tp is None:
        tp = total
    if tp is not None and total % tp:
        raise UsageError(f"n_gpus {total} is not a multiple of tp {tp}")

    ep_req = None if ep is None else _check_int("ep", ep, 1, MAX_GPUS)
    if ep_req is not None and ep_req > 1 and not shape.n_experts:
        raise UsageError(f"ep {ep_req} needs a mixture-of-experts model; {m.name} is dense")
    if dp_attention and not shape.n_experts:
        dp_attention = False  # attention data parallel is an MoE layout; a dense model keeps tensor parallelism

    def ep_for(t: int) -> int:
        if ep_req is None:
            return t if dp_attention else 1
        if ep_req not in (1, t):
            raise UsageError(f"ep must be 1 or the replica's GPU count ({t}), got {ep_req}")
        if dp_attention and ep_req != t:
            raise UsageError(f"attention data parallel shards the experts over all {t} GPUs: use ep {t} or leave it out")
        return ep_req

    def build(t: int) -> _Replica:
        if not dp_attention and shape.n_heads % t:
            raise UsageError(f"tp {t} does not divide {m.name}'s {shape.n_heads} attention heads; use a divisor such as "
                             + ", ".join(str(d) for d in TP_CHOICES if shape.n_heads % d == 0))
        return _Replica(shape, g, t, wf, kv, eng, eff, frac, seqs_cap, dp_attention, ep_for(t), grouped=fixed_lengths)

    if tp is None:
        rep = None
        for t in TP_CHOICES:
            if shape.n_heads % t and not dp_attention:
                continue
            cand = build(t)
            rep = cand
            if cand.max_running(isl, osl) >= 1:
                break
        tp = rep.tp
        total = tp
    else:
        rep = build(tp)
    replicas = total // tp
    warnings: list[str] = []
    if isl + osl > m.max_seq_len:  # a known context was refused above: this one is a default
        warnings.append(f"input+output {isl + osl:,} tokens exceeds {m.name}'s context of {m.max_seq_len:,}")
    if tp > 8 and g.nvlink_gbps < 1000:
        warnings.append(f"tp {tp} spans more than one 8-GPU NVLink domain; cross-node all-reduces are slower than modelled")

    kv_gb = rep.kv_tokens * rep.kv_bytes_token_gpu / 1e9
    breakdown = {
        "weights": rep.weights_gpu / 1e9,
        "runtime_and_activations": rep.runtime_gpu / 1e9,
        "kv_cache": max(kv_gb, 0.0),
        "device_total": mem.device_memory_bytes(g) / 1e9,
    }
    assumptions = {
        "engine": eng.name, "engine_factor": engine_factor(eff, eng), "eta_bw": eff.eta_bw, "eta_c": eff.eta_c,
        "architecture_factor": rep.arch_factor, "matmul_realisation": round(rep.gemm_realisation.factor, 3),
        "matmul_realisation_note": rep.gemm_realisation.note, "calibration": calibration_entry(g.id, "serving", g.vendor),
        "allreduce_latency_us": eff.allreduce_latency_us, "step_overhead_ms": eff.step_overhead_ms,
        "scaleup_link": describe_scaleup(g, tp) if tp > 1 else None,
        "lowp_gemm_ratio": eff.lowp_gemm_ratio,
        "efficiency_source": eff.source, "weight_precision": wf.key, "weight_format": wf.note,
        "bytes_per_param": wf.bytes_per_param, "gemm_math": wf.compute, "kv_precision": kv,
        "weight_dequantized": wf.note if dequantized else None,
        "weight_w4a8": wf.note if wf.key == "fp4" and wf.compute == "fp8" else None,
        "memory_fraction": frac, "memory_fraction_of": eng.memory_fraction_of,
        "kv_reserve": eng.kv_reserve, "kv_block_tokens": eng.block_tokens, "max_num_seqs": seqs_cap,
        "max_num_batched_tokens": eng.max_num_batched_tokens, "tp": tp, "replicas": replicas,
        "dp_attention": dp_attention, "ep": rep.ep, "kv_shards_per_token": rep.kv_shards,
        "batching": eng.batching, "latency_factor": eff.latency_factor, "moe_half_tokens": eff.moe_half_tokens,
        "moe_gemm_ratio": eff.moe_gemm_ratio,
        "moe_pair_overhead_ns": eff.moe_pair_overhead_ns, "layer_overhead_us": eff.layer_overhead_us,
        "layer_kernel_ratio": round(shape.layer_kernel_ratio, 3),
        "ep_hot_excess": eff.ep_hot_excess, "frontend_ms": rep.frontend_s * 1e3,
        "decode_latency": "weight stream at eta_bw x latency_factor (CUDA-graph decode), no engine factor; "
                          "all-reduce: cheaper of one-shot and two-shot on NVLink, ring on PCIe",
        "local_attention": (f"{shape.n_local_layers} of {shape.n_layers} layers attend to the last {shape.local_window} tokens"
                            if shape.local_window and shape.n_local_layers else None),
        "attention_sinks": ("a learned sink logit per head: no KV, negligible FLOPs" if shape.attention_sinks else None),
        "linear_attention": (f"{shape.n_linear_layers} of {shape.n_layers} layers are {shape.linear_kind}: no KV, a "
                             f"{shape.linear_state_bytes / 1e6:.1f} MB recurrent state per sequence, read and written "
                             "each decode step" if shape.n_linear_layers else None),
        "sparse_attention": (f"DeepSeek sparse attention: MLA reads and scores at most {shape.index_topk:,} tokens per "
                             "query; the indexer reads its fp8 key of every cached token and scores it"
                             if shape.index_topk else None),
        "device_memory": "memory_gb read as GiB (marketing 80GB HBM = 80 GiB)",
        "ttft": ("server front end (HTTP, tokenisation, admission, streaming) + "
                 "prefill in chunks next to running decodes, after half an iteration's wait for the one in flight; "
                 "closed loop, queueing only beyond max concurrency"
                 + (f"; fixed lengths: prompts arrive in the groups the first wave was admitted in "
                    f"({float(rep.arrival_group(conc / replicas, isl)):.0f} at a time) and are prefilled together"
                    if rep.grouped else "")
                 + (f"; mean over {n_req:,} benchmark requests, the first wave of {min(conc, n_req):,} arriving "
                    "together and prefilled in turn" if n_req is not None and conc is not None and not rep.static else "")
                 + (f"; offline: {n_req:,} requests queued at once, run in waves of as many as fit (the last one "
                    "partial), each wave's TTFT counting the waves before it" if n_req is not None and conc is None
                    else "")),
        "output_head": "16-bit, run for sampled tokens only, at bf16 rate",
        "moe_experts": ("expected distinct experts per step E(1-(1-k/E)^tokens); grouped GEMM at t/(t+t_half) "
                        "of eta_c for t tokens per expert; EP load of the busiest GPU 1 + c*sqrt(ep/E)*sqrt(2 ln ep) "
                        "+ sqrt(2 ln ep / m), c = ep_hot_excess (CV of expert popularity)"
                        + ("" if not rep.dp_attention else
                           "; attention DP over rack-scale NVLink: all-to-all sends a token once per other GPU holding "
                           "one of its experts" if rep.steps.moe_alltoall else
                           "; attention DP inside a node: every GPU's tokens all-gathered (at the expert GEMM's input "
                           "precision) and the 16-bit outputs reduce-scattered (the engines' default without "
                           "rack-scale NVLink or DeepEP)")
                        + ("; non-expert weights 16-bit (native 4-bit checkpoint quantizes experts only)"
                           if mem.dense_kept_16bit(shape, wf.bytes_per_param) else "")) if shape.n_experts else None,
    }
    base = dict(model=m.name, gpu=g.id, n_gpus=total, tp=tp, replicas=replicas, engine=eng.key, precision=wf.key,
                kv_precision=kv, input_len=isl, output_len=osl, kv_bytes_per_token=rep.kv_bytes_token,
                kv_cache_tokens=max(rep.kv_tokens, 0), memory_breakdown_gb=breakdown,
                assumptions=assumptions, warnings=warnings)

    b_max = rep.max_running(isl, osl)
    if b_max < 1:
        need = rep.needed_per_gpu_bytes(isl, osl)
        have = mem.device_memory_bytes(g)
        short = max(need - have, 0.0) / 1e9
        msg = _not_fit_message(m.name, g, wf, tp, need, have, isl, osl, shape, eng, eff, frac, seqs_cap, dp_attention, kv,
                               rep.ep)
        return ServingEstimate(**base, fits=False, message=msg, shortfall_gb=round(short, 2),
                               memory_per_gpu_gb=need / 1e9)

    full = int(min(rep.kv_tokens // rep.seq_tokens(isl, osl, "maximum"), rep.max_num_seqs))
    meets = None
    if conc is not None:
        per_rep = conc / replicas
        running = min(per_rep, float(b_max))
        t1, t2 = rep.latency(np.asarray([running]), isl, osl)
        t1, t2 = float(t1[0]), float(t2[0])
        x = running * osl / max(t1 + (osl - 1) * t2, float(rep.cycle_s(np.asarray([running]), isl, osl)[0]))
        if per_rep > b_max:
            # The rest wait in the queue: Little's law on the closed loop of per_rep clients.
            e2e_q = per_rep * osl / x
            t1 = e2e_q - (osl - 1) * t2
            limited = "kv_cache" if b_max < rep.max_num_seqs else "max_num_seqs"
            warnings.append(f"concurrency {conc:,} exceeds the {b_max * replicas:,} requests that fit at once; the rest queue")
        else:
            limited = "concurrency"
            if n_req is not None and not rep.static:
                # A benchmark's first wave: min(N, C) prompts at once, the rest at steady state.
                per_req = n_req / replicas
                wave = max(1, round(min(per_rep, per_req)))
                t1 = (wave * rep.first_wave_ttft(wave, isl, osl) + max(per_req - wave, 0.0) * t1) / max(per_req, wave)
        if ttft_cap is not None or tpot_cap is not None:
            meets = (ttft_cap is None or t1 * 1e3 <= ttft_cap) and (tpot_cap is None or t2 * 1e3 <= tpot_cap)
        op_b, op_ttft, op_tpot, op_x = per_rep, t1, t2, x
        op_running = running
    elif n_req is not None:
        op_b, op_ttft, op_tpot, op_x, limited = _offline_run(rep, n_req / replicas, b_max, isl, osl)
        op_running = op_b
        if ttft_cap is not None or tpot_cap is not None:
            meets = (ttft_cap is None or op_ttft * 1e3 <= ttft_cap) and (tpot_cap is None or op_tpot * 1e3 <= tpot_cap)
    else:
        # No concurrency and no request count: the best operating point over a grid of batch sizes.
        grid = _grid(b_max)
        ttft, tpot = rep.latency(grid, isl, osl)
        thr = grid * osl / np.maximum(ttft + (osl - 1) * tpot, rep.cycle_s(grid, isl, osl))
        ok = np.ones_like(grid, dtype=bool)
        if ttft_cap is not None:
            ok &= ttft * 1e3 <= ttft_cap
        if tpot_cap is not None:
            ok &= tpot * 1e3 <= tpot_cap
        if ttft_cap is not None or tpot_cap is not None:
            meets = bool(ok.any())
        if not ok.any():
            i = 0
            limited = "latency targets unreachable even at concurrency 1"
            warnings.append(f"no concurrency meets the targets; at 1 request TTFT {ttft[0] * 1e3:.0f} ms, TPOT {tpot[0] * 1e3:.1f} ms")
        else:
            i = int(np.argmax(np.where(ok, thr, -1.0)))
            if i < len(grid) - 1 and grid[i + 1] - grid[i] > 1:
                # The coarse grid skipped concurrencies: refine between this point and the next one.
                sub = np.arange(grid[i], grid[i + 1] + 1, dtype=float)
                s_ttft, s_tpot = rep.latency(sub, isl, osl)
                s_thr = sub * osl / np.maximum(s_ttft + (osl - 1) * s_tpot, rep.cycle_s(sub, isl, osl))
                s_ok = np.ones_like(sub, dtype=bool)
                if ttft_cap is not None:
                    s_ok &= s_ttft * 1e3 <= ttft_cap
                if tpot_cap is not None:
                    s_ok &= s_tpot * 1e3 <= tpot_cap
                if s_ok.any():
                    j = int(np.argmax(np.where(s_ok, s_thr, -1.0)))
                    if s_thr[j] >= thr[i]:
                        grid = np.concatenate([grid[:i], sub[j:j + 1], grid[i + 1:]])
                        ttft = np.concatenate([ttft[:i], s_ttft[j:j + 1], ttft[i + 1:]])
                        tpot = np.concatenate([tpot[:i], s_tpot[j:j + 1], tpot[i + 1:]])
                        thr = np.concatenate([thr[:i], s_thr[j:j + 1], thr[i + 1:]])
            if ttft_cap is None and tpot_cap is None:
                limited = ("kv_cache" if b_max < rep.max_num_seqs else "max_num_seqs") if i == len(grid) - 1 else "throughput peak"
            else:
                limited = "latency targets" if i < len(grid) - 1 else ("kv_cache" if b_max < rep.max_num_seqs else "max_num_seqs")
        op_b = op_running = float(grid[i])
        op_ttft, op_tpot, op_x = float(ttft[i]), float(tpot[i]), float(thr[i])

    x_total = op_x * replicas
    used = rep.weights_gpu + rep.runtime_gpu + op_running * rep.seq_tokens(isl, osl) * rep.kv_bytes_token_gpu
    base["memory_breakdown_gb"] = {
        **breakdown, "kv_in_use": op_running * rep.seq_tokens(isl, osl) * rep.kv_bytes_token_gpu / 1e9,
        "in_use_total": used / 1e9}
    return ServingEstimate(
        **base, fits=True, concurrency=op_b * replicas, running_concurrency=op_running * replicas,
        max_concurrency=b_max * replicas, max_concurrency_full_length=full * replicas,
        output_tokens_per_s=x_total, output_tokens_per_s_per_gpu=x_total / total,
        input_tokens_per_s=x_total * isl / osl, requests_per_s=x_total / osl,
        ttft_ms=op_ttft * 1e3, tpot_ms=op_tpot * 1e3, e2e_latency_s=op_ttft + (osl - 1) * op_tpot,
        decode_bound=rep.decode_bound(op_running, isl, osl), limited_by=limited, meets_targets=meets,
        memory_per_gpu_gb=(rep.weights_gpu + rep.runtime_gpu + max(rep.kv_avail_gpu, 0)) / 1e9,
    )


def _offline_run(rep: _Replica, n: float, b_max: int, isl: int, osl: int) -> tuple[float, float, float, float, str]:
    """An offline benchmark's n requests per replica, all queued at once (`trtllm-bench throughput`, `vllm bench
    throughput`): the engine admits as many as fit, never more than there are, runs them to their end, then the next
    wave; the last, partial wave runs at its own smaller batch. TTFT counts each wave's wait for the waves before it.
    Returns (running, TTFT s, TPOT s, output tokens/s, what limits the batch)."""
    def wave(b: float) -> tuple[float, float, float]:
        arr = np.asarray([b])
        t1, t2 = rep.latency(arr, isl, osl)
        return max(float(t1[0]) + (osl - 1) * float(t2[0]), float(rep.cycle_s(arr, isl, osl)[0])), float(t1[0]), float(t2[0])

    b = min(float(b_max), n)
    full = math.floor(n / b + 1e-9)
    rest = n - full * b
    wave_s, ttft, tpot = wave(b)
    if not rep.static:
        ttft = rep.first_wave_ttft(max(1, round(b)), isl, osl)
    total_s, waited = full * wave_s, b * wave_s * full * (full - 1) / 2.0
    if rest >= 0.5:  # a fraction of a request per replica is how n divides, not a wave
        waited += rest * full * wave_s
        total_s += wave(rest)[0]
    limited = "requests" if n <= b_max else ("kv_cache" if b_max < rep.max_num_seqs else "max_num_seqs")
    return b, ttft + waited / n, tpot, n * osl / total_s, limited


def _not_fit_message(name, g, wf, tp, need, have, isl, osl, shape, eng, eff, frac, seqs, dp_attention, kv, ep=1) -> str:
    """'needs 141 GB per GPU at TP1, has 80; try --gpus 2 or --precision fp8'."""
    hints = []
    for t in (2, 4, 8, 16, 32, 64):
        if t <= tp or (shape.n_heads % t and not dp_attention):
            continue
        if _Replica(shape, g, t, wf, kv, eng, eff, frac, seqs, dp_attention, t if ep > 1 else 1).max_running(isl, osl) >= 1:
            hints.append(f"--gpus {t}")
            break
    for alt in ("fp8", "int4", "fp4"):
        w = weight_format(alt)
        if w.bytes_per_param >= wf.bytes_per_param or (w.needs and not g.supports(w.needs)):
            continue
        if _Replica(shape, g, tp, w, kv, eng, eff, frac, seqs, dp_attention, ep).max_running(isl, osl) >= 1:
            hints.append(f"--precision {alt}")
            break
    hint = f"; try {' or '.join(hints)}" if hints else "; no TP up to 64 or lower precision fits it"
    return (f"{name} ({wf.key}, {isl + osl:,}-token requests) needs {need / mem.GIB:.0f} GiB per GPU at TP{tp} "
            f"(weights {wf.bytes_per_param:g} B/param at {frac:g} memory use), {g.id} has {have / mem.GIB:.0f} GiB{hint}")
