"""One engine iteration's time, vectorized over batch sizes.

An iteration of a continuous-batching engine runs B decode tokens plus some prefill
tokens through the model. Two kernel classes are rooflined separately because they hit
different limits: the GEMMs (weights read once per step vs 2·N_act FLOPs per token) and
attention (each sequence's KV read vs its score FLOPs). Tensor parallelism adds two
all-reduces per layer (latency + bandwidth over NVLink or PCIe); each iteration also
pays a fixed scheduling overhead. The fitted engine factor scales the device time.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuplan.perf.inference_memory import ModelShape


@dataclass(frozen=True)
class StepModel:
    """Everything an iteration's time depends on, reduced to per-GPU scalars."""

    shape: ModelShape
    tp: int
    dp_attention: bool
    weight_read_bytes_dense: float  # per GPU per step, weights read regardless of routing
    expert_bytes_gpu: float  # one routed expert of one layer, per GPU share
    kv_bytes_per_token_gpu: float  # KV bytes of one context token on one GPU
    bw_bytes_s: float  # achieved HBM bandwidth (peak x eta_bw)
    gemm_flops_s: float  # achieved GEMM FLOP/s at the weight precision (peak x eta_c)
    attn_flops_s: float  # achieved attention FLOP/s (bf16 math)
    allreduce_latency_s: float
    link_bytes_s: float  # per-direction bandwidth available to a collective
    engine_factor: float
    step_overhead_s: float

    def experts_touched(self, tokens: np.ndarray) -> np.ndarray:
        """Expected distinct routed experts per MoE layer for `tokens` tokens: E·(1−(1−k/E)^T)."""
        e, k = self.shape.n_experts, self.shape.n_active_experts
        if not e:
            return np.zeros_like(tokens, dtype=float)
        return e * (1.0 - np.power(1.0 - k / e, tokens))

    def step_time_s(self, decode: np.ndarray, prefill: np.ndarray, context: float, prefill_ctx: float) -> np.ndarray:
        """Seconds for one iteration with `decode` sequences generating one token at average
        context `context`, plus `prefill` prompt tokens whose average causal context is
        `prefill_ctx`. Arrays broadcast."""
        s = self.shape
        decode = np.asarray(decode, dtype=float)
        prefill = np.asarray(prefill, dtype=float)
        tokens = decode + prefill
        g = self.tp
        # GEMMs: read the weights once (routed experts only where some token went), compute 2·N per token.
        weights = self.weight_read_bytes_dense + s.n_moe_layers * self.experts_touched(tokens) * self.expert_bytes_gpu
        gemm = np.maximum(weights / self.bw_bytes_s, 2.0 * s.matmul_params * tokens / g / self.gemm_flops_s)
        # Attention: decode reads each sequence's KV; prefill tokens attend to their prefix.
        kv_ctx = min(context, s.sliding_window) if s.sliding_window else context
        kv_read = decode * kv_ctx * self.kv_bytes_per_token_gpu
        attn_flops = (decode * kv_ctx + prefill * prefill_ctx) * s.attn_flops_per_ctx / g
        attn = np.maximum(kv_read / self.bw_bytes_s, attn_flops / self.attn_flops_s)
        comm = self._comm_s(tokens)
        return (gemm + attn + comm) / self.engine_factor + self.step_overhead_s

    def _comm_s(self, tokens: np.ndarray) -> np.ndarray:
        g = self.tp
        if g <= 1:
            return np.zeros_like(tokens)
        s = self.shape
        act_bytes = tokens * s.hidden * 2.0  # bf16 activations
        if self.dp_attention and s.n_experts:
            # Expert parallel all-to-all: dispatch + combine per MoE layer, own tokens only.
            vol = (tokens / g) * s.n_active_experts * s.hidden * 2.0 * (g - 1) / g
            per_layer = 2 * (self.allreduce_latency_s + vol / self.link_bytes_s)
            return s.n_moe_layers * per_layer
        # Megatron TP: all-reduce after attention and after the FFN, ring volume 2(g-1)/g·S.
        per_ar = self.allreduce_latency_s + 2.0 * (g - 1) / g * act_bytes / self.link_bytes_s
        return 2 * s.n_layers * per_ar
