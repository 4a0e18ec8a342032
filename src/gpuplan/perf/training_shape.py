"""The handful of numbers the training estimators need from a model, computed once.

A layout search evaluates thousands of candidates; each needs the same per-layer parameter
counts, widths and adapter sizes. Reading them off the ModelSpec once keeps the vectorized
code free of model logic.
"""
from __future__ import annotations

from dataclasses import dataclass

from gpuplan.models.spec import ModelSpec


@dataclass(frozen=True)
class ModelShape:
    name: str
    n_layers: int
    hidden: int
    n_heads: int
    n_kv_heads: int
    qk_head_dim: int  # per-head width of Q·Kᵀ (MLA: nope + rope)
    v_head_dim: int
    ffn_act: float  # FFN width a token passes through in an average layer (MoE: top-k experts + shared)
    vocab: int
    tied: bool
    sliding_window: int | None
    total_params: float
    active_params: float
    matmul_active_params: float  # active weights in matrix multiplies (no input embedding lookup)
    layer_params_nonexpert: float  # per layer, average: attention, norms, dense FFN share, router, shared experts
    expert_params_total: float  # all routed experts in all layers
    n_experts: int
    top_k: int
    n_moe_layers: int
    embed_in_params: float
    embed_out_params: float  # 0 when tied (the output layer reuses the input matrix)
    adapter_attention_per_rank: float  # LoRA params per unit rank, attention projections, all layers
    adapter_ffn_per_rank: float  # LoRA params per unit rank, FFN matrices (all experts), all layers
    routed_active_params: float = 0.0  # routed-expert weights one token passes through, all layers (MoE)
    expert_ffn: float = 0.0  # routed expert FFN width (MoE; 0 for dense models)
    ffn_io_active_per_layer: float = 0.0  # sum of (in + out) widths of the FFN matrices a token passes, average layer
    local_attention_window: int | None = None  # interleaved local layers (Gemma 3, Llama 4 chunks, gpt-oss)
    n_local_attention_layers: int = 0
    shared_experts: bool = False  # MoE layers also run a dense shared expert (tensor-parallel like the attention)
    # A hybrid's linear-attention layers (Gated DeltaNet, Mamba-2): no softmax attention over the context, a fixed
    # token-mixing cost per token instead (the chunked scan, forward, all of them).
    n_linear_layers: int = 0
    linear_flops_per_token: float = 0.0
    linear_scan_bytes: float = 0.0  # the chunked scans' memory traffic per token, forward, all linear layers
    n_ffn_layers: int = 0  # FFN blocks where they are blocks of their own (Nemotron-H); 0: one per layer
    moe_width: int = 0  # width of the tokens dispatched to the routed experts (LatentMoE: the latent size); 0: hidden

    @property
    def n_kv_layers(self) -> int:
        """Softmax-attention layers (all but a hybrid's linear-attention ones)."""
        return self.n_layers - self.n_linear_layers

    @property
    def attention_io_per_layer(self) -> float:
        """Sum of (in + out) widths of the attention projections of one layer."""
        return self.adapter_attention_per_rank / self.n_layers

    @property
    def linear_io_dims_per_layer(self) -> float:
        """Sum of (in + out) widths of every matrix a token passes through in an average layer."""
        return self.attention_io_per_layer + self.ffn_io_active_per_layer

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    def adapter_params(self, rank: int, targets: str) -> float:
        per_rank = self.adapter_attention_per_rank + (self.adapter_ffn_per_rank if targets == "all" else 0.0)
        return float(rank) * per_rank


def model_shape(m: ModelSpec) -> ModelShape:
    h, a, L = m.hidden_size, m.n_heads, m.n_layers
    if m.attention == "mla":
        qk = (m.qk_nope_head_dim or m.head_dim) + (m.qk_rope_head_dim or 0)
        v = m.v_head_dim or m.head_dim
    else:
        qk = v = m.head_dim
    n_ffn_mats = 3 if m.gated_ffn else 2
    total = m.total_params()
    active = m.active_params()
    embed_in = float(m.vocab_size * h)
    embed_out = 0.0 if m.tied_embeddings else float(m.vocab_size * h)
    if m.is_moe:
        expert_total = float(m.n_moe_layers * m.n_experts * m.expert_params())
        fe = m.expert_ffn_size or m.ffn_size
        shared = (m.shared_expert_ffn_size or fe * m.n_shared_experts) if m.n_shared_experts else 0
        moe_ffn = m.n_active_experts * fe + shared
        ffn_act = (m.n_dense_layers * m.ffn_size + m.n_moe_layers * moe_ffn) / L
        w = m.moe_width  # the routed experts' token width (LatentMoE: the latent size)
        ffn_adapter = m.n_dense_layers * n_ffn_mats * (h + m.ffn_size) + m.n_moe_layers * (
            m.n_experts * n_ffn_mats * (w + fe) + (n_ffn_mats * (h + shared) if shared else 0))
        ffn_io_active = (m.n_dense_layers * n_ffn_mats * (h + m.ffn_size) + m.n_moe_layers * (
            m.n_active_experts * n_ffn_mats * (w + fe) + (n_ffn_mats * (h + shared) if shared else 0))) / L
    else:
        expert_total = 0.0
        F = m.ffn_layers  # one per layer, or fewer FFN blocks than mixers (Nemotron-H): averaged over the layers
        ffn_act = float(m.ffn_size) * F / L
        ffn_adapter = F * n_ffn_mats * (h + m.ffn_size)
        ffn_io_active = n_ffn_mats * (h + m.ffn_size) * F / L
    layer_nonexpert = (total - expert_total - embed_in - embed_out) / L
    if m.attention == "mla":
        # Adapters on the q/kv down- and up-projections and the output: approximate by the dense widths.
        attn_adapter = L * ((h + a * qk) + 2 * (h + a * v) + (a * v + h))
    else:
        kv = m.n_kv_heads * m.head_dim
        attn_adapter = L * ((h + a * qk) + 2 * (h + kv) + (a * v + h))
    return ModelShape(
        name=m.name, n_layers=L, hidden=h, n_heads=a, n_kv_heads=m.n_kv_heads, qk_head_dim=qk, v_head_dim=v,
        ffn_act=float(ffn_act), vocab=m.vocab_size, tied=m.tied_embeddings, sliding_window=m.sliding_window,
        total_params=float(total), active_params=float(active),
        matmul_active_params=float(m.non_embedding_active_params()),
        layer_params_nonexpert=float(layer_nonexpert), expert_params_total=expert_total,
        n_experts=m.n_experts, top_k=m.n_active_experts, n_moe_layers=m.n_moe_layers,
        embed_in_params=embed_in, embed_out_params=embed_out,
        adapter_attention_per_rank=float(attn_adapter), adapter_ffn_per_rank=float(ffn_adapter),
        routed_active_params=float(m.n_moe_layers * m.n_active_experts * m.expert_params()) if m.is_moe else 0.0,
        expert_ffn=float(m.expert_ffn_size or m.ffn_size) if m.is_moe else 0.0,
        ffn_io_active_per_layer=float(ffn_io_active),
        local_attention_window=getattr(m, "local_attention_window", None),
        n_local_attention_layers=int(getattr(m, "n_local_attention_layers", 0) or 0),
        shared_experts=bool(m.is_moe and shared),
        n_linear_layers=int(m.n_linear_attention_layers),
        linear_flops_per_token=m.linear_attention_flops_per_token(),
        linear_scan_bytes=m.linear_scan_bytes_per_token(),
        n_ffn_layers=int(m.n_ffn_layers or 0),
        moe_width=int(m.moe_latent_size or 0),
    )
