"""Serving memory: weights, runtime overhead and the KV cache that is left per GPU.

KV capacity is what caps concurrency, and concurrency is what makes decoding cheap, so
this is where serving estimates are won or lost. The rules follow the engines: vLLM and
SGLang give a fraction of *total* memory to weights + activations + KV; TensorRT-LLM gives
a fraction of what is *free* after weights. GPU memory sold as "80GB" is 80 GiB of HBM
(an H100 reports 79.2 GiB to CUDA), so device memory here is `memory_gb` binary gigabytes.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from gpuplan.models.spec import LINEAR_KIND_LABELS
from gpuplan.perf.inference_precision import EMBEDDING_BYTES_PER_PARAM, native_is
from gpuplan.units import GIB, gpu_memory_bytes  # noqa: F401  (GIB re-exported: mem.GIB)

# GEMM-class kernels (matrix products and attention) one decode step runs per layer. Each has a minimum
# duration that CUDA graphs do not remove (launch tail, wave ramp, a weight read too small to reach full
# bandwidth); the elementwise kernels between them (norms, RoPE, activation, cache write, top-k) are a few
# microseconds and largely fused. The fitted kernel floor (`layer_overhead_us`) is per dense GQA layer; other
# layers pay it in proportion to their count. A dense GQA layer: QKV, attention, O, gate/up, down.
DENSE_LAYER_KERNELS = 5
# Routed experts replace gate/up and down with the router GEMM and the two grouped GEMMs.
MOE_EXTRA_KERNELS = 1
# Shared experts run their own gate/up and down GEMMs beside the routed ones.
SHARED_EXPERT_KERNELS = 2
# MLA's absorbed decode replaces QKV, attention and O with the fused q_a/kv_a down-projection, the q_b
# up-projection, the W_UK absorption batched GEMM, latent attention, the W_UV batched GEMM and O.
MLA_EXTRA_KERNELS = 3


@dataclass(frozen=True)
class ModelShape:
    """The numbers of a ModelSpec the serving model uses, computed once per model."""

    name: str
    n_layers: int
    hidden: int
    n_heads: int
    n_kv_heads: int
    vocab: int
    attention: str
    sliding_window: int | None
    max_seq_len: int
    total_params: float
    active_params: float
    matmul_params: float  # per-token GEMM weights (active, without the embedding lookup)
    embedding_params: float  # input embedding + untied output head (kept 16-bit)
    input_embedding_params: float  # never read in full during decode
    expert_params: float  # one routed expert of one layer
    n_experts: int
    n_active_experts: int
    n_moe_layers: int
    kv_elems_per_token: float  # all layers, K and V (or MLA latent); a sparse-attention indexer's key apart
    attn_flops_per_ctx: float  # FLOPs per (query token, context token), all layers
    ffn_act: float  # widest FFN activation per token, for the activation buffer
    expert_ffn: int = 0  # intermediate size of one routed expert
    local_window: int | None = None  # window (or chunk) of the local-attention layers
    n_local_layers: int = 0  # layers that attend only to the last local_window tokens
    attention_sinks: bool = False  # gpt-oss: learned sink logit per head (no KV, negligible FLOPs)
    # Prefill FLOPs per (query token, context token), all layers. MLA prefills with the K/V decompressed per head
    # (2·h·(d_qk + d_v)); decode attends in the latent space (the absorbed form, attn_flops_per_ctx). 0: as decode.
    attn_flops_per_ctx_prefill: float = 0.0
    head_params: float = 0.0  # output head (vocab x hidden): 16-bit in quantized checkpoints, run for sampled tokens only
    # A native 4-bit MoE checkpoint (gpt-oss MXFP4) quantizes only the routed experts; attention, router, shared
    # weights and the head stay 16-bit (its quantization_config leaves them out).
    experts_only_lowp: bool = False
    # GEMM-class kernels per layer, averaged over the layers, relative to a dense GQA layer's (DENSE_LAYER_KERNELS):
    # what the per-layer kernel floor of a CUDA-graph decode step scales with.
    layer_kernel_ratio: float = 1.0
    # DeepSeek sparse attention: MLA reads and scores only the index_topk tokens the indexer picks, while the indexer
    # reads its own key (index_bytes_per_token, all layers, fp8 whatever the KV precision; not in kv_elems_per_token)
    # for every cached token and scores it (index_flops_per_ctx, all layers).
    index_topk: int | None = None
    index_bytes_per_token: float = 0.0
    index_flops_per_ctx: float = 0.0
    # A hybrid (Gated DeltaNet: Qwen3-Next, Qwen3.5; Mamba-2: Nemotron-H): n_linear_layers (linear_kind) keep no KV
    # but a recurrent state per sequence (linear_state_bytes, all of them), which a decode step reads and writes back;
    # their token mixing costs a fixed linear_flops_decode / linear_flops_prefill per token (all of them), whatever
    # the context, and prefill runs their chunked scan (linear_scan_bytes of memory traffic per token).
    n_linear_layers: int = 0
    linear_state_bytes: float = 0.0
    linear_flops_decode: float = 0.0
    linear_flops_prefill: float = 0.0
    linear_kind: str = ""
    # set by model_shape: FFNs (one per layer; fewer in a block hybrid, Nemotron-H) and the width of the tokens
    # dispatched to the routed experts (the hidden size; LatentMoE: the latent size)
    n_ffn_layers: int = 0
    moe_width: int = 0
    linear_scan_bytes: float = 0.0

    def attended_context(self, ctx: float) -> float:
        """Context tokens one query's attention reads and scores: what the cache holds (kv_context), at most the
        sparse-attention top-k."""
        held = self.kv_context(ctx)
        return min(held, float(self.index_topk)) if self.index_topk else held

    def kv_context(self, ctx: float) -> float:
        """Context tokens whose KV a sequence of `ctx` tokens holds and reads, averaged over layers:
        every-layer sliding windows cap all layers, interleaved local layers cap only their share."""
        if self.sliding_window:
            ctx = min(ctx, self.sliding_window)
        if self.local_window and self.n_local_layers:
            f = min(1.0, self.n_local_layers / (self.n_layers - self.n_linear_layers))
            return (1 - f) * ctx + f * min(ctx, self.local_window)
        return ctx

    @property
    def routed_expert_params(self) -> float:
        return self.n_moe_layers * self.n_experts * self.expert_params


@functools.lru_cache(maxsize=256)
def model_shape(model) -> ModelShape:
    m = model
    if m.attention == "mla":
        d_qk = (m.qk_nope_head_dim or m.head_dim) + (m.qk_rope_head_dim or 0)
        # Decode with absorbed projections attends in the latent space: scores over
        # (kv_lora + rope) dims and values over kv_lora dims, per query head.
        per_ctx = 2 * m.n_heads * ((m.kv_lora_rank or 0) + (m.qk_rope_head_dim or 0) + (m.kv_lora_rank or 0))
        per_ctx_prefill = 2 * m.n_heads * (d_qk + (m.v_head_dim or m.head_dim))
        per_ctx = max(per_ctx, per_ctx_prefill)
        if m.sparse_attention:
            per_ctx_prefill = per_ctx  # sparse attention runs MLA in its latent (MQA) form in prefill too
    else:
        per_ctx = per_ctx_prefill = 4 * m.n_heads * m.head_dim  # QK^T and A.V, 2 FLOPs per MAC
    if m.is_moe:
        ffn_act = max(m.ffn_size if m.n_dense_layers else 0,
                      m.n_active_experts * (m.expert_ffn_size or m.ffn_size)
                      + (m.shared_expert_ffn_size or (m.expert_ffn_size or m.ffn_size) * m.n_shared_experts))
    else:
        ffn_act = m.ffn_size
    emb_in = float(m.vocab_size * m.hidden_size)
    return ModelShape(
        name=m.name, n_layers=m.n_layers, hidden=m.hidden_size, n_heads=m.n_heads,
        n_kv_heads=m.n_kv_heads, vocab=m.vocab_size, attention=m.attention,
        sliding_window=m.sliding_window, max_seq_len=m.max_seq_len,
        total_params=float(m.total_params()), active_params=float(m.active_params()),
        matmul_params=float(m.non_embedding_active_params()),
        embedding_params=float(m.embedding_params()), input_embedding_params=emb_in,
        expert_params=float(m.expert_params()) if m.is_moe else 0.0,
        n_experts=m.n_experts, n_active_experts=m.n_active_experts, n_moe_layers=m.n_moe_layers,
        kv_elems_per_token=float(m.kv_values_per_token()),
        attn_flops_per_ctx=float(per_ctx * m.n_kv_layers), ffn_act=float(ffn_act),
        expert_ffn=int(m.expert_ffn_size or m.ffn_size) if m.is_moe else 0,
        local_window=getattr(m, "local_attention_window", None),
        n_local_layers=int(getattr(m, "n_local_attention_layers", 0) or 0),
        attention_sinks=bool(getattr(m, "attention_sinks", False)),
        attn_flops_per_ctx_prefill=float(per_ctx_prefill * m.n_kv_layers),
        head_params=float(m.vocab_size * m.hidden_size),
        experts_only_lowp=bool(m.is_moe and native_4bit(getattr(m, "native_precision", None))),
        layer_kernel_ratio=layer_kernel_ratio(m),
        index_topk=m.index_topk,
        index_bytes_per_token=float(m.index_key_bytes_per_token()),
        index_flops_per_ctx=float(2 * (m.index_n_heads or 0) * (m.index_head_dim or 0) * m.n_layers),
        n_ffn_layers=int(m.ffn_layers), moe_width=int(m.moe_width), **_linear_mixing(m),
    )


def _linear_mixing(m) -> dict:
    """A hybrid's linear-attention layers (Gated DeltaNet, Mamba-2): their state and token-mixing cost (ModelSpec)."""
    n = int(getattr(m, "n_linear_attention_layers", 0) or 0)
    if not n:
        return {}
    return dict(n_linear_layers=n, linear_state_bytes=float(m.linear_state_bytes_per_sequence()),
                linear_flops_decode=m.linear_attention_flops_per_token(decode=True),
                linear_flops_prefill=m.linear_attention_flops_per_token(),
                linear_kind=LINEAR_KIND_LABELS[m.linear_attention_kind],
                linear_scan_bytes=m.linear_scan_bytes_per_token())


def layer_kernel_ratio(m) -> float:
    """GEMM-class decode kernels per layer, averaged over the model's layers, over a dense GQA layer's."""
    attn = DENSE_LAYER_KERNELS + (MLA_EXTRA_KERNELS if m.attention == "mla" else 0)
    moe = MOE_EXTRA_KERNELS + (SHARED_EXPERT_KERNELS if m.n_shared_experts else 0)  # on the MoE layers only
    return (attn + m.n_moe_layers / m.n_layers * moe) / DENSE_LAYER_KERNELS


def native_4bit(native_precision: str | None) -> bool:
    """A native 4-bit MoE release (gpt-oss MXFP4, Kimi-K2-Thinking INT4): only the routed experts are 4-bit."""
    return native_is(native_precision, "fp4") or native_is(native_precision, "int4")


def dense_bytes_per_param(shape: ModelShape, bytes_per_param: float) -> float:
    """Bytes per non-expert weight: 16-bit where a native 4-bit MoE checkpoint quantizes only the experts."""
    return max(bytes_per_param, EMBEDDING_BYTES_PER_PARAM) if shape.experts_only_lowp and bytes_per_param < 1.0 else bytes_per_param


def dense_kept_16bit(shape: ModelShape, bytes_per_param: float) -> bool:
    """True where the non-expert weights stay 16-bit while the experts are quantized (native 4-bit MoE checkpoint)."""
    return dense_bytes_per_param(shape, bytes_per_param) != bytes_per_param


def weight_bytes(shape: ModelShape, bytes_per_param: float) -> float:
    """All weights of one copy of the model; embeddings stay 16-bit in quantized checkpoints."""
    emb = shape.embedding_params
    experts = shape.routed_expert_params
    dense = dense_bytes_per_param(shape, bytes_per_param)
    return (shape.total_params - emb - experts) * dense + experts * bytes_per_param + emb * EMBEDDING_BYTES_PER_PARAM


def weight_bytes_per_gpu(shape: ModelShape, bytes_per_param: float, tp: int, dp_attention: bool, ep: int = 1) -> float:
    """TP shards every matrix. Expert parallelism (ep = the replica's GPUs) places whole routed
    experts, E/ep per GPU, instead of slicing each; with data-parallel attention the attention
    and dense weights are replicated on every GPU of the replica."""
    total = weight_bytes(shape, bytes_per_param)
    if not shape.n_experts:
        return total / tp
    experts = shape.routed_expert_params * bytes_per_param
    rest = total - experts
    return rest / (1 if dp_attention else tp) + experts / (ep if ep > 1 else tp)


def kv_shards(shape: ModelShape, tp: int, dp_attention: bool) -> int:
    """Over how many GPUs one token's KV is split. MLA's latent has no heads to split, so
    tensor-parallel attention replicates it; GQA cannot split below one KV head per GPU."""
    if dp_attention:
        return tp
    if shape.attention == "mla":
        return 1
    return max(1, min(tp, shape.n_kv_heads))


def activation_bytes_per_gpu(shape: ModelShape, tp: int, batched_tokens: int, max_seqs: int) -> float:
    """Peak forward-pass buffers at the engine's token budget, plus fp32 logits."""
    per_token = (8 * shape.hidden + 3 * shape.ffn_act / tp) * 2.0
    logits = min(max_seqs, batched_tokens) * shape.vocab * 4.0
    return batched_tokens * per_token + logits


def device_memory_bytes(gpu) -> float:
    return gpu_memory_bytes(gpu.memory_gb)


def kv_available_bytes_per_gpu(gpu, weights_gpu: float, overhead_gpu: float, fraction: float, of: str) -> float:
    mem = device_memory_bytes(gpu)
    if of == "free":
        return fraction * (mem - weights_gpu - overhead_gpu)
    return fraction * mem - weights_gpu - overhead_gpu


def tokens_per_sequence(input_len: float, output_len: float, reserve: str, block: int, window: int | None,
                        shape: ModelShape | None = None) -> float:
    """KV tokens one request holds: its full length when the engine reserves the maximum,
    its average length while decoding when pages are allocated on demand; block-rounded.
    With a shape, sliding-window and interleaved local-attention layers hold only their window."""
    ctx = input_len + (output_len if reserve == "maximum" else output_len / 2.0)
    ctx = math.ceil(ctx / block) * block
    if shape is not None:
        return shape.kv_context(ctx)
    if window:
        ctx = min(ctx, window)
    return ctx
