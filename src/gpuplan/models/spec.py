"""A transformer's shape, and the parameter and KV-cache counts that follow from it.

Everything the estimators need about a model is here: total parameters drive memory,
active parameters drive FLOPs (MoE), and the attention kind drives the KV cache.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

AttentionKind = Literal["mha", "gqa", "mla"]
# A hybrid's linear (state-space) token mixers: Gated DeltaNet (Qwen3-Next, Qwen3.5) or Mamba-2 (Nemotron-H).
LinearAttentionKind = Literal["gated_deltanet", "mamba2"]
# DeepSeek sparse attention's indexer key, cached as fp8 with one fp32 scale per 128 values whatever the KV cache's
# own precision (vLLM's and SGLang's DeepSeek-V3.2 indexer caches: 132 bytes per token and layer).
INDEX_KEY_BYTES_PER_VALUE = 1.0 + 4.0 / 128
# Chunk length of the chunked scans prefill and training run: the delta rule's (flash-linear-attention's kernels, in
# vLLM and SGLang) and Mamba-2's state-space duality (SSD; Nemotron-H's config.json chunk_size).
LINEAR_CHUNK = {"gated_deltanet": 64, "mamba2": 128}
# Nemotron-H's hybrid_override_pattern: one character per block, each block one token mixer or one FFN.
BLOCK_KINDS = {"M": "Mamba-2", "*": "attention", "-": "MLP", "E": "MoE"}
LINEAR_KIND_LABELS = {"gated_deltanet": "Gated DeltaNet", "mamba2": "Mamba-2"}


def odd_block(pattern: str) -> str | None:
    """Why a block pattern holds a character that is not a block kind, or None."""
    odd = sorted(set(pattern) - set(BLOCK_KINDS))
    kinds = ", ".join(f"{k} ({v})" for k, v in BLOCK_KINDS.items())
    return f"holds {odd[0]!r}; the blocks modelled are {kinds}" if odd else None


class ModelSpec(BaseModel):
    """Decoder-only transformer. Field names follow Hugging Face config.json where one exists."""

    model_config = ConfigDict(frozen=True)

    name: str
    n_layers: int = Field(gt=0, le=100_000)
    hidden_size: int = Field(gt=0, le=1_000_000)
    n_heads: int = Field(gt=0, le=100_000)
    n_kv_heads: int = Field(gt=0, le=100_000)
    head_dim: int = Field(gt=0, le=100_000)
    ffn_size: int = Field(gt=0, le=10_000_000, description="dense FFN intermediate size")
    gated_ffn: bool = True  # SwiGLU/GeGLU: three matrices instead of two
    vocab_size: int = Field(gt=0, le=10_000_000)
    tied_embeddings: bool = False
    attention: AttentionKind = "gqa"
    qkv_bias: bool = False
    max_seq_len: int = Field(default=4096, gt=0)
    sliding_window: int | None = Field(default=None, gt=0, description="window of EVERY layer (Mistral-7B)")
    # Interleaved local/global attention (Gemma 2/3, gpt-oss, Llama 4 chunked attention, Cohere 2): only
    # `n_local_attention_layers` layers attend to the last `local_attention_window` tokens (or their chunk);
    # the other layers see the whole context. Unset: every layer is global (or `sliding_window` applies).
    local_attention_window: int | None = Field(default=None, gt=0)
    n_local_attention_layers: int = Field(default=0, ge=0)
    # gpt-oss: a learned sink logit per head and layer (n_heads weights per layer).
    attention_sinks: bool = False
    # Full attention with a sigmoid output gate (Qwen3-Next, Qwen3.5): the query projection also emits the gate.
    attn_output_gate: bool = False
    # Hybrid linear attention (Qwen3-Next, Qwen3.5: Gated DeltaNet on 3 of every 4 layers; Nemotron-H: Mamba-2 on most
    # mixer blocks): these layers keep no KV
    # cache but a fixed recurrent state per sequence (linear_num_value_heads x key dim x value dim, plus a short
    # convolution's last inputs), and their cost per token does not grow with the context.
    n_linear_attention_layers: int = Field(default=0, ge=0)
    linear_num_key_heads: int | None = Field(default=None, gt=0)
    linear_num_value_heads: int | None = Field(default=None, gt=0)
    linear_key_head_dim: int | None = Field(default=None, gt=0)
    linear_value_head_dim: int | None = Field(default=None, gt=0)
    linear_conv_kernel_dim: int | None = Field(default=None, gt=0)
    linear_state_bytes_per_value: float = Field(default=2.0, gt=0, le=8)  # bf16; 4 where the config keeps fp32
    # Which linear mixer those layers are. Mamba-2 maps onto the same fields as the delta rule: its n_groups B/C
    # projections are the key heads (width ssm_state_size), its mamba_num_heads x mamba_head_dim the value heads.
    linear_attention_kind: LinearAttentionKind = "gated_deltanet"
    # Models whose blocks are each either a token mixer or an FFN, not both (Nemotron-H: Mamba-2, attention, MLP and
    # MoE blocks in the order `block_pattern` gives): n_layers counts the mixer blocks, n_ffn_layers the FFN blocks.
    # Unset: one FFN per layer, as in every other decoder.
    n_ffn_layers: int | None = Field(default=None, gt=0, le=100_000)
    block_pattern: str | None = Field(default=None, max_length=100_000)
    # MLA (DeepSeek-V2/V3): low-rank compressed KV.
    q_lora_rank: int | None = Field(default=None, gt=0)
    kv_lora_rank: int | None = Field(default=None, gt=0)
    qk_nope_head_dim: int | None = Field(default=None, gt=0)
    qk_rope_head_dim: int | None = Field(default=None, gt=0)
    v_head_dim: int | None = Field(default=None, gt=0)
    # DeepSeek Sparse Attention (DeepSeek-V3.2): a lightning indexer (index_n_heads heads of index_head_dim, one
    # shared key per token) scores every previous token; MLA then attends only to the index_topk best of them.
    index_n_heads: int | None = Field(default=None, gt=0)
    index_head_dim: int | None = Field(default=None, gt=0)
    index_topk: int | None = Field(default=None, gt=0)
    # Mixture of experts; n_experts == 0 means dense.
    n_experts: int = Field(default=0, ge=0)
    n_active_experts: int = Field(default=0, ge=0)
    n_shared_experts: int = Field(default=0, ge=0)
    expert_ffn_size: int | None = Field(default=None, gt=0)
    shared_expert_ffn_size: int | None = Field(default=None, gt=0)
    # LatentMoE (Nemotron 3 Super): each MoE block projects its tokens down to this width before the dispatch and back
    # up after the combine; the routed experts run at it (the router and the shared experts at the hidden size).
    moe_latent_size: int | None = Field(default=None, gt=0)
    n_dense_layers: int = Field(default=0, ge=0, description="layers with a dense FFN (MoE models): leading ones, "
                                "or interleaved ones when moe_layer_step > 1")
    # MoE FFN on every Nth layer (Llama-4 Maverick: 2, layers 1, 3, 5, ...); 1: every layer after the leading
    # n_dense_layers dense ones (DeepSeek-V3: 3 dense, then 58 MoE).
    moe_layer_step: int = Field(default=1, ge=1, le=100_000)
    # The precision its authors ship the weights in (DeepSeek-V3/R1 and Kimi-K2: fp8; gpt-oss: MXFP4):
    # serving defaults to it.
    native_precision: str = "bf16"
    # What the model's authors published, for checking the counts above.
    published_params: float | None = None
    published_active_params: float | None = None
    source: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> "ModelSpec":
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_heads {self.n_heads} is not a multiple of n_kv_heads {self.n_kv_heads}")
        F = self.ffn_layers
        if self.n_experts:
            if not 0 < self.n_active_experts <= self.n_experts:
                raise ValueError("n_active_experts must be in 1..n_experts")
            if self.n_dense_layers > F:
                raise ValueError("n_dense_layers exceeds the FFN layers")
            if self.moe_layer_step > 1 and self.n_dense_layers != F - F // self.moe_layer_step:
                raise ValueError(f"moe_layer_step {self.moe_layer_step} over {F} layers leaves "
                                 f"{F - F // self.moe_layer_step} dense layers, not n_dense_layers {self.n_dense_layers}")
        if self.moe_latent_size and not self.n_experts:
            raise ValueError("moe_latent_size needs routed experts")
        if self.n_local_attention_layers > self.n_layers:
            raise ValueError("n_local_attention_layers exceeds n_layers")
        if bool(self.n_local_attention_layers) != bool(self.local_attention_window):
            raise ValueError("local_attention_window and n_local_attention_layers go together")
        if self.attention == "mla" and not (self.kv_lora_rank and self.qk_rope_head_dim):
            raise ValueError("MLA needs kv_lora_rank and qk_rope_head_dim")
        linear = (self.linear_num_key_heads, self.linear_num_value_heads, self.linear_key_head_dim,
                  self.linear_value_head_dim, self.linear_conv_kernel_dim)
        if bool(self.n_linear_attention_layers) != all(linear) or any(linear) != all(linear):
            raise ValueError("n_linear_attention_layers and the linear_* head counts, head dims and conv kernel go "
                             "together (hybrid linear attention)")
        if self.n_linear_attention_layers and self.n_linear_attention_layers + self.n_local_attention_layers >= self.n_layers:
            raise ValueError("a hybrid keeps at least one full-attention layer: n_linear_attention_layers "
                             "(+ n_local_attention_layers) must be below n_layers")
        if self.n_linear_attention_layers and (self.attention == "mla" or self.sliding_window):
            raise ValueError("hybrid linear attention is modelled with GQA / MHA full-attention layers only")
        if self.linear_attention_kind != "gated_deltanet" and not self.n_linear_attention_layers:
            raise ValueError(f"linear_attention_kind {self.linear_attention_kind!r} needs n_linear_attention_layers")
        if self.block_pattern is not None:
            self._check_block_pattern()
        index = (self.index_n_heads, self.index_head_dim, self.index_topk)
        if any(index) and not all(index):
            raise ValueError("index_n_heads, index_head_dim and index_topk go together (DeepSeek sparse attention)")
        if all(index) and not (self.attention == "mla" and self.q_lora_rank):
            raise ValueError("DeepSeek sparse attention's indexer needs MLA with a q_lora_rank")
        return self

    def _check_block_pattern(self) -> None:
        p = self.block_pattern or ""
        if odd_block(p):
            raise ValueError(f"block_pattern {odd_block(p)}")
        count = {k: p.count(k) for k in BLOCK_KINDS}
        want = {"M": self.n_linear_attention_layers, "*": self.n_kv_layers, "-": self.n_dense_layers if self.is_moe
                else self.ffn_layers, "E": self.n_moe_layers}
        if self.n_ffn_layers is None or count != want or (count["M"] and self.linear_attention_kind != "mamba2"):
            raise ValueError(f"block_pattern's blocks ({count['M']} Mamba-2, {count['*']} attention, {count['-']} MLP, "
                             f"{count['E']} MoE) disagree with the shape ({want['M']}, {want['*']}, {want['-']}, "
                             f"{want['E']}; n_ffn_layers {self.n_ffn_layers})")

    # ---- structure -------------------------------------------------------------------------
    @property
    def ffn_layers(self) -> int:
        """FFN blocks: one per layer, or n_ffn_layers where mixers and FFNs are blocks of their own (Nemotron-H)."""
        return self.n_ffn_layers or self.n_layers

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def sparse_attention(self) -> bool:
        """DeepSeek sparse attention: each query attends to index_topk tokens its indexer picks."""
        return bool(self.index_topk)

    def indexer_params_per_layer(self) -> int:
        """The lightning indexer: its query projection from the q latent, one key projection, the key's LayerNorm
        (weight and bias) and a per-head weight projection."""
        if not self.sparse_attention:
            return 0
        hi, di = self.index_n_heads, self.index_head_dim
        return self.q_lora_rank * hi * di + self.hidden_size * di + 2 * di + self.hidden_size * hi

    @property
    def n_moe_layers(self) -> int:
        return self.ffn_layers - self.n_dense_layers if self.is_moe else 0

    def moe_layer_mask(self) -> tuple[bool, ...]:
        """Which FFN layers (0-based) carry the routed experts: every moe_layer_step-th, or all after the leading
        dense ones."""
        F = self.ffn_layers
        if not self.is_moe:
            return (False,) * F
        if self.moe_layer_step > 1:
            return tuple((i + 1) % self.moe_layer_step == 0 for i in range(F))
        return tuple(i >= self.n_dense_layers for i in range(F))

    @property
    def n_kv_layers(self) -> int:
        """Softmax-attention layers, the ones that keep a KV cache (all but a hybrid's linear-attention layers)."""
        return self.n_layers - self.n_linear_attention_layers

    @property
    def n_global_attention_layers(self) -> int:
        """Layers that attend to the whole context (all the KV layers unless a window applies)."""
        if self.sliding_window:
            return 0
        return self.n_kv_layers - self.n_local_attention_layers

    def attended_tokens_per_layer(self, context_tokens: int) -> float:
        """Mean over the KV layers of the tokens one query attends to (and keeps KV for) at this context length."""
        ctx = max(0, int(context_tokens))
        if self.sliding_window:
            return float(min(ctx, self.sliding_window))
        local = self.n_local_attention_layers * min(ctx, self.local_attention_window or ctx)
        return (local + self.n_global_attention_layers * ctx) / self.n_kv_layers

    def linear_attention_params_per_layer(self) -> int:
        """A Gated DeltaNet layer: the fused q/k/v/gate projection, the per-value-head beta and decay projection,
        the depthwise causal convolution over q, k and v, two per-head vectors (dt bias, A), the gated RMSNorm and the
        output projection (Hugging Face's Qwen3NextGatedDeltaNet). A Mamba-2 layer: the in-projection to z, x, B, C
        and one dt per head, the depthwise convolution over x, B and C with its bias, three per-head vectors (dt bias,
        A, D), the gated RMSNorm over the inner width and the output projection (Hugging Face's Mamba2Mixer)."""
        if not self.n_linear_attention_layers:
            return 0
        h, hk, hv = self.hidden_size, self.linear_num_key_heads, self.linear_num_value_heads
        dk, dv = self.linear_key_head_dim, self.linear_value_head_dim
        qk, v = hk * dk, hv * dv
        conv = (2 * qk + v) * self.linear_conv_kernel_dim
        if self.linear_attention_kind == "mamba2":
            return h * (2 * v + 2 * qk + hv) + conv + (2 * qk + v) + 3 * hv + v + v * h
        return h * (2 * qk + 2 * v) + h * 2 * hv + conv + 2 * hv + dv + v * h

    def linear_state_bytes_per_sequence(self) -> float:
        """A hybrid's recurrent state for one sequence, all its linear-attention layers: the value-heads x key-dim x
        value-dim matrix (the delta rule's, or Mamba-2's heads x state size x head dim), and the convolution's last
        kernel-1 inputs (16-bit)."""
        if not self.n_linear_attention_layers:
            return 0.0
        hk, hv = self.linear_num_key_heads, self.linear_num_value_heads
        dk, dv = self.linear_key_head_dim, self.linear_value_head_dim
        state = hv * dk * dv * self.linear_state_bytes_per_value
        conv = (2 * hk * dk + hv * dv) * (self.linear_conv_kernel_dim - 1) * 2.0
        return self.n_linear_attention_layers * (state + conv)

    def linear_attention_flops_per_token(self, decode: bool = False) -> float:
        """Token mixing of a hybrid's linear-attention layers, per token, all of them. Per value head, decode updates
        the dk x dv state (decay and a rank-one update: 2 dk dv) and reads it out (2 dk dv); prefill and training run
        the chunked form, attention within a chunk (2 C (dk + dv)) plus the state's update and read-out (4 dk dv).
        Mamba-2's SSD is the same count with its own chunk (B, C as keys and queries, x as values)."""
        if not self.n_linear_attention_layers:
            return 0.0
        dk, dv = self.linear_key_head_dim, self.linear_value_head_dim
        per_head = 4 * dk * dv + (0 if decode else 2 * LINEAR_CHUNK[self.linear_attention_kind] * (dk + dv))
        return float(self.n_linear_attention_layers * self.linear_num_value_heads * per_head)

    def linear_scan_bytes_per_token(self) -> float:
        """Memory traffic of the chunked scan's kernel chain, forward, per token, all linear-attention layers (the
        kernels are memory-bound: a chunk's matrices are C x (dk + dv), far below a GEMM's arithmetic intensity).
        Per layer, in 16-bit unless said: the short convolution reads and writes q/B, k/C and v/x (2 x 2 B each);
        the chunk-state and chunk-scan kernels read them again (2 x 2 B); the per-chunk states, value heads x dk x dv
        per C tokens in fp32, are written, read and rewritten by the state passing and read by the scan (4 x 4 B);
        the output is written and the gated norm reads it with its gate and writes the result (4 x 2 B per value).
        Mamba-2's SSD (causal_conv1d, then chunk_cumsum / chunk_state / state_passing / bmm_chunk / chunk_scan, then
        the gated RMSNorm) and the chunked delta rule have this shape. The backward pass moves about twice this."""
        if not self.n_linear_attention_layers:
            return 0.0
        qk = self.linear_num_key_heads * self.linear_key_head_dim
        v = self.linear_num_value_heads * self.linear_value_head_dim
        states = self.linear_num_value_heads * self.linear_key_head_dim * self.linear_value_head_dim
        per_layer = 8 * (2 * qk + v) + 16 * states / LINEAR_CHUNK[self.linear_attention_kind] + 8 * v
        return float(self.n_linear_attention_layers * per_layer)

    def _mixer_params(self) -> int:
        """Token-mixer weights of every layer: softmax attention on the KV layers, the linear mixer on the others."""
        return self.n_kv_layers * self.attention_params_per_layer() + (
            self.n_linear_attention_layers * self.linear_attention_params_per_layer())

    def _ffn_params(self, ffn_size: int, width: int | None = None) -> int:
        return (3 if self.gated_ffn else 2) * (width or self.hidden_size) * ffn_size

    @property
    def moe_width(self) -> int:
        """Width of the tokens the routed experts see and the dispatch moves: the latent size (LatentMoE) or the
        hidden size."""
        return self.moe_latent_size or self.hidden_size

    def _latent_projection_params(self) -> int:
        """LatentMoE's down- and up-projections around the dispatch, per MoE layer (no bias)."""
        return 2 * self.hidden_size * self.moe_latent_size if self.moe_latent_size else 0

    def attention_params_per_layer(self) -> int:
        h, a = self.hidden_size, self.n_heads
        if self.attention == "mla":
            nope = self.qk_nope_head_dim or self.head_dim
            rope = self.qk_rope_head_dim or 0
            v = self.v_head_dim or self.head_dim
            qk = nope + rope
            q = (h * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * a * qk) if self.q_lora_rank else h * a * qk
            kv = h * (self.kv_lora_rank + rope) + self.kv_lora_rank + self.kv_lora_rank * a * (nope + v)
            return q + kv + a * v * h + self.indexer_params_per_layer()
        d = self.head_dim
        q_out = a * d
        kv_out = 2 * self.n_kv_heads * d
        bias = (q_out + kv_out) if self.qkv_bias else 0
        gate = q_out if self.attn_output_gate else 0
        return h * (q_out + gate + kv_out) + q_out * h + bias + (a if self.attention_sinks else 0)

    def expert_params(self) -> int:
        """One routed expert's FFN (at the latent width under LatentMoE)."""
        return self._ffn_params(self.expert_ffn_size or self.ffn_size, self.moe_width)

    def _shared_expert_params(self) -> int:
        if not self.n_shared_experts:
            return 0
        size = self.shared_expert_ffn_size or (self.expert_ffn_size or self.ffn_size) * self.n_shared_experts
        return self._ffn_params(size)

    def embedding_params(self) -> int:
        return self.vocab_size * self.hidden_size * (1 if self.tied_embeddings else 2)

    def _norm_params(self) -> int:
        """One RMSNorm per mixer and per FFN (two per layer, or one per block), and the final one."""
        return self.hidden_size * (self.n_layers + self.ffn_layers + 1)

    # ---- counts ----------------------------------------------------------------------------
    def total_params(self) -> float:
        """All weights: what memory holds."""
        n = self.embedding_params() + self._norm_params() + self._mixer_params()
        if not self.is_moe:
            return float(n + self.ffn_layers * self._ffn_params(self.ffn_size))
        n += self.n_dense_layers * self._ffn_params(self.ffn_size)
        per_moe = (self.n_experts * self.expert_params() + self._shared_expert_params() + self.hidden_size * self.n_experts
                   + self._latent_projection_params())
        return float(n + self.n_moe_layers * per_moe)

    def active_params(self) -> float:
        """Weights each token passes through: what FLOPs scale with."""
        if not self.is_moe:
            return self.total_params()
        n = self.embedding_params() + self._norm_params() + self._mixer_params()
        n += self.n_dense_layers * self._ffn_params(self.ffn_size)
        per_moe = (self.n_active_experts * self.expert_params() + self._shared_expert_params()
                   + self.hidden_size * self.n_experts + self._latent_projection_params())
        return float(n + self.n_moe_layers * per_moe)

    def non_embedding_active_params(self) -> float:
        """Active weights in matrix multiplies per token, without the input embedding lookup."""
        return self.active_params() - self.vocab_size * self.hidden_size * (0 if self.tied_embeddings else 1)

    def kv_bytes_per_token(self, bytes_per_element: float = 2.0) -> float:
        """KV cache for one token across all layers: 2·L·G_kv·d_h·b, or L·(r_kv + d_rope)·b for MLA (plus the
        sparse-attention indexer's fp8 key).

        Every layer counted, windows ignored: the bound for a context no longer than the smallest window.
        """
        return self.kv_values_per_token() * bytes_per_element + self.index_key_bytes_per_token()

    def kv_values_per_token(self) -> int:
        """Values cached per token at the KV cache's precision, all layers: K and V of the softmax-attention layers, or
        MLA's latent and rope key (a sparse-attention indexer's fp8 key apart)."""
        if self.attention == "mla":
            return self.n_layers * (self.kv_lora_rank + self.qk_rope_head_dim)
        return 2 * self.n_kv_layers * self.n_kv_heads * self.head_dim

    def index_key_bytes_per_token(self) -> float:
        """DeepSeek sparse attention's indexer key cache for one token, all layers (fp8 whatever the KV precision)."""
        return self.n_layers * (self.index_head_dim or 0) * INDEX_KEY_BYTES_PER_VALUE if self.sparse_attention else 0.0

    def kv_bytes_per_sequence(self, context_tokens: int, bytes_per_element: float = 2.0) -> float:
        """KV cache of one sequence of `context_tokens`: local-window layers keep at most their window, a hybrid's
        linear-attention layers their fixed recurrent state."""
        return (self.kv_bytes_per_token(bytes_per_element) * self.attended_tokens_per_layer(context_tokens)
                + self.linear_state_bytes_per_sequence())
