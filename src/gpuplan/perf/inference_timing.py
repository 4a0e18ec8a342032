"""One engine iteration's time, vectorized over batch sizes.

An iteration of a continuous-batching engine runs B decode tokens plus some prefill tokens
through the model. Per GPU it costs:

* the GEMMs: the larger of streaming the weights once (routed experts only where some token
  went: E·(1−(1−k/E)^T) distinct experts per MoE layer) and their FLOPs. The weight stream does
  not grow with the batch; a decode step is CUDA-graph captured, so it runs at the fitted
  ``latency_factor`` share of the achieved bandwidth and never carries the engine factor.
  The FLOPs do: 2·N per token at eta_c, routed experts' grouped GEMMs at t/(t + t½) of it for
  t tokens per touched expert, with expert-parallel load imbalance (experts of unequal
  popularity: the busiest of ep GPUs holding E/ep experts carries 1 + c·sqrt(ep/E)·sqrt(2 ln ep)
  of the mean, c fitted, plus sampling noise). The 16-bit output head runs only for the sampled
  (decoding) tokens, at bf16 rate; a native 4-bit MoE checkpoint (gpt-oss) keeps its non-expert
  weights 16-bit;
* attention (each sequence's KV read vs its score FLOPs; sliding-window and interleaved local
  layers read only their window; MLA prefills decompressed, 2·h·(d_qk + d_v) per context token,
  and decodes in the latent space; DeepSeek sparse attention runs MLA latent over only the top-k
  tokens its indexer picks, the indexer reading and scoring every cached token; a linear-attention hybrid's
  linear-attention layers read and write their recurrent state per decode step, at a fixed cost per token)
  and the MoE token traffic (dispatch, combine and the expert
  activations, plus a fitted router/permutation time per token-expert pair), all per token,
  all scaled by the engine factor;
* collectives, not scaled by any factor: tensor parallelism's two all-reduces per layer at the
  cheaper of a one-shot (latency + (g−1)·S/B) and a two-shot (2·latency + 2(g−1)/g·S/B)
  algorithm on NVLink, a ring on PCIe; with attention data parallel, the experts' dispatch and
  combine all-to-alls instead, each token sent once to each other GPU holding one of its k experts
  ((g−1)(1−(1−1/g)^k) GPUs on average), not once per expert, where the fabric has the engines' all-to-all
  kernels (rack-scale NVLink, MNNVL); on an 8-GPU NVLink node the engines' default instead all-gathers every
  GPU's tokens (at the expert GEMM's input precision) and reduce-scatters the 16-bit expert outputs, so each
  token reaches all g−1 other GPUs whatever its k;
* a fixed per-step scheduling overhead, and a per-layer kernel floor: CUDA graphs remove launch
  latency from decode but not each kernel's minimum duration, so a layer pays it in proportion to
  its kernel count (MLA and routed experts run more kernels than a dense GQA layer).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuplan.perf.inference_memory import ModelShape

ACT_BYTES = 2.0  # bf16 activations on the wire and in the MoE permutation


@dataclass(frozen=True)
class StepModel:
    """Everything an iteration's time depends on, reduced to per-GPU scalars."""

    shape: ModelShape
    tp: int  # GPUs of the replica
    dp_attention: bool
    weight_read_bytes_dense: float  # per GPU per step, weights read regardless of routing
    expert_bytes_gpu: float  # one routed expert of one layer, per GPU share (expected)
    kv_bytes_per_token_gpu: float  # KV bytes of one context token on one GPU
    bw_bytes_s: float  # achieved HBM bandwidth (peak x eta_bw)
    gemm_flops_s: float  # achieved GEMM FLOP/s at the weight precision (peak x eta_c)
    attn_flops_s: float  # achieved attention FLOP/s (bf16 math)
    allreduce_latency_s: float
    link_bytes_s: float  # per-direction bandwidth available to a collective
    engine_factor: float
    step_overhead_s: float
    ep: int = 1  # expert-parallel degree (1: experts tensor-sliced)
    latency_factor: float = 1.0
    moe_half_tokens: float = 16.0
    moe_gemm_ratio: float = 1.0  # share of eta_c grouped expert GEMMs reach with many tokens per expert
    ep_hot_excess: float = 0.0  # extra load on the busiest expert-parallel GPU from skewed routing
    layer_overhead_s: float = 0.0  # kernel floor per dense GQA layer per step (CUDA-graph decode)
    moe_pair_overhead_s: float = 0.0  # router + permute + unpermute time per (token, expert, layer), GPU-independent
    nvlink: bool = True
    dense_flops_s: float = 0.0  # achieved GEMM FLOP/s of the non-expert weights (0: gemm_flops_s)
    head_flops_s: float = 0.0  # achieved GEMM FLOP/s of the 16-bit output head (0: gemm_flops_s)
    moe_alltoall: bool = False  # attention-DP MoE exchange: all-to-all (True) or all-gather + reduce-scatter
    dispatch_bytes: float = ACT_BYTES  # bytes per hidden element of the gathered expert inputs
    index_share: float = 0.0  # sparse attention: the indexer key's share of a token's cached bytes
    scan_bw_s: float = 0.0  # bandwidth a hybrid's chunked-scan kernels reach in prefill (0: bw_bytes_s)

    def experts_touched(self, tokens: np.ndarray) -> np.ndarray:
        """Expected distinct routed experts per MoE layer for `tokens` tokens: E·(1−(1−k/E)^T)."""
        e, k = self.shape.n_experts, self.shape.n_active_experts
        if not e:
            return np.zeros_like(tokens, dtype=float)
        return e * (1.0 - np.power(1.0 - k / e, tokens))

    def grouped_gemm_efficiency(self, tokens: np.ndarray) -> np.ndarray:
        """Share of eta_c the routed experts' grouped GEMM reaches: r·t/(t + t½), t tokens per touched expert."""
        s = self.shape
        if not s.n_experts:
            return np.ones_like(tokens, dtype=float)
        touched = np.maximum(self.experts_touched(tokens), 1e-9)
        t = tokens * s.n_active_experts / touched
        return self.moe_gemm_ratio * t / (t + self.moe_half_tokens)

    def ep_imbalance(self, tokens: np.ndarray) -> np.ndarray:
        """Load of the busiest of ep GPUs over the mean, m token-expert pairs per GPU. Experts are not
        equally popular: with a coefficient of variation c (``ep_hot_excess``, fitted) across experts, a GPU
        holding E/ep of them carries a share whose CV is c·sqrt(ep/E), and the busiest of ep such GPUs sits
        about sqrt(2 ln ep) of those above the mean; sampling m pairs adds sqrt(2 ln(ep) / m)."""
        s = self.shape
        if self.ep <= 1 or not s.n_experts:
            return np.ones_like(tokens, dtype=float)
        m = np.maximum(tokens * s.n_active_experts / self.ep, 1.0)
        spread = math.sqrt(2.0 * math.log(self.ep))
        hot = self.ep_hot_excess * math.sqrt(min(1.0, self.ep / s.n_experts)) * spread
        return np.minimum(1.0 + hot + spread / np.sqrt(m), float(self.ep))

    def remote_gpus_per_token(self) -> float:
        """Expected GPUs other than its own that one token's k routed experts sit on, with experts spread
        evenly over the replica's g GPUs: the dispatch sends a token once per destination GPU, not once per expert."""
        g, k = self.tp, self.shape.n_active_experts
        return (g - 1) * (1.0 - (1.0 - 1.0 / g) ** k) if g > 1 and k else 0.0

    def step_time_s(self, decode: np.ndarray, prefill: np.ndarray, context: float, prefill_ctx: float) -> np.ndarray:
        """Seconds for one iteration with `decode` sequences generating one token at average
        context `context`, plus `prefill` prompt tokens whose average causal context is
        `prefill_ctx`. Arrays broadcast."""
        s = self.shape
        decode = np.asarray(decode, dtype=float)
        prefill = np.asarray(prefill, dtype=float)
        tokens = decode + prefill
        g = self.tp
        # GEMMs: stream the weights once per step (batch-independent), or compute 2·N per token. The output
        # head (16-bit) runs only for the tokens that are sampled: the decoding ones (a prompt's first sampled token
        # is left out: one head pass per request, small beside its prefill).
        dense_rate = self.dense_flops_s or self.gemm_flops_s
        head_t = 2.0 * s.head_params * decode / g / (self.head_flops_s or self.gemm_flops_s)
        body = s.matmul_params - s.head_params
        if s.n_experts:
            touched = self.experts_touched(tokens)
            weights = self.weight_read_bytes_dense + s.n_moe_layers * touched * self.expert_bytes_gpu
            routed_active = s.n_moe_layers * s.n_active_experts * s.expert_params
            dense_flops = 2.0 * (body - routed_active) * tokens / g
            expert_flops = 2.0 * routed_active * tokens / g * self.ep_imbalance(tokens)
            flops_t = (dense_flops / dense_rate + expert_flops / self.grouped_gemm_efficiency(tokens) / self.gemm_flops_s
                       + head_t)
        else:
            weights = self.weight_read_bytes_dense
            flops_t = 2.0 * body * tokens / g / dense_rate + head_t
        stream = weights / (self.bw_bytes_s * self.latency_factor)
        gemm = np.maximum(stream, flops_t / self.engine_factor)
        # Attention: decode reads each sequence's KV; prefill tokens attend to their prefix. With sparse attention
        # MLA reads and scores only the top-k tokens, and the indexer reads its key of, and scores, every one.
        kv_ctx, held = s.attended_context(context), s.kv_context(context)
        kv_read = decode * (kv_ctx * (1.0 - self.index_share) + held * self.index_share) * self.kv_bytes_per_token_gpu
        attn_flops = (decode * (kv_ctx * s.attn_flops_per_ctx + held * s.index_flops_per_ctx)
                      + prefill * (s.attended_context(prefill_ctx) * (s.attn_flops_per_ctx_prefill or s.attn_flops_per_ctx)
                                   + s.kv_context(prefill_ctx) * s.index_flops_per_ctx)) / g
        scan = 0.0
        if s.n_linear_layers:  # a hybrid's linear-attention layers: their state read and written back per decode
            kv_read = kv_read + decode * 2.0 * s.linear_state_bytes / g
            attn_flops = attn_flops + (decode * s.linear_flops_decode + prefill * s.linear_flops_prefill) / g
            # ... and prefill runs their chunked scan, a chain of short memory-bound kernels.
            scan = prefill * s.linear_scan_bytes / g / (self.scan_bw_s or self.bw_bytes_s)
        attn = np.maximum(kv_read / self.bw_bytes_s, attn_flops / self.attn_flops_s) + scan
        # MoE token traffic: dispatch + combine (read and write) and the experts' gate/up/act tensors.
        pairs = s.n_moe_layers * tokens * s.n_active_experts / g
        moe = (pairs * (4 * s.moe_width + 3 * s.expert_ffn) * ACT_BYTES / self.bw_bytes_s
               + pairs * self.moe_pair_overhead_s) if s.n_experts else 0.0
        comm = self._comm_s(tokens)
        return (gemm + (attn + moe) / self.engine_factor + comm + self.step_overhead_s
                + s.n_layers * s.layer_kernel_ratio * self.layer_overhead_s)

    def allreduce_s(self, nbytes: np.ndarray) -> np.ndarray:
        """One all-reduce of `nbytes` over the replica's GPUs."""
        g, lat, bw = self.tp, self.allreduce_latency_s, self.link_bytes_s
        if g <= 1:
            return np.zeros_like(nbytes)
        two_shot = 2 * lat + 2.0 * (g - 1) / g * nbytes / bw
        if not self.nvlink:
            return lat * (g - 1) + 2.0 * (g - 1) / g * nbytes / bw  # ring over PCIe
        one_shot = lat + (g - 1) * nbytes / bw
        return np.minimum(one_shot, two_shot)

    def _comm_s(self, tokens: np.ndarray) -> np.ndarray:
        g = self.tp
        if g <= 1:
            return np.zeros_like(tokens)
        s = self.shape
        if self.dp_attention and s.n_experts:
            lat = self.allreduce_latency_s * (1 if self.nvlink else g - 1)
            if self.moe_alltoall:
                # Expert parallel all-to-all: dispatch + combine per MoE layer, each GPU's own tokens only, each
                # sent once to every other GPU that holds one of its experts.
                vol = (tokens / g) * self.remote_gpus_per_token() * s.moe_width * ACT_BYTES
                return s.n_moe_layers * 2 * (lat + vol / self.link_bytes_s)
            # All-gather every GPU's tokens, then reduce-scatter the experts' 16-bit outputs: each GPU receives
            # (and sends) the other g−1 GPUs' share of both, whatever the routing.
            vol = (tokens / g) * (g - 1) * s.moe_width * (self.dispatch_bytes + ACT_BYTES)
            return s.n_moe_layers * (2 * lat + vol / self.link_bytes_s)
        # Megatron TP: all-reduce after each token mixer and each FFN (two per layer; one per block in a block hybrid).
        return (s.n_layers + s.n_ffn_layers) * self.allreduce_s(tokens * s.hidden * ACT_BYTES)
