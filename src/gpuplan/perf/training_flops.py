"""Training FLOPs per token: the model FLOPs MFU is quoted against, and the hardware FLOPs actually run.

Convention (stated in every estimate's assumptions):
- matrix multiplies: 2 FLOPs per active weight forward, 4 backward -> 6·N_act per token, where
  N_act counts the weights in matrix multiplies (the input embedding is a lookup, the output
  layer is a matmul). MoE uses the routed top-k experts.
- attention scores and values (PaLM App. B): forward 2·a·(d_qk + d_v)·s_ctx per layer and token,
  x3 for fwd+bwd. `attention="causal"` (default, as Llama 3 reports MFU) halves the context,
  `"full"` counts the whole s x s square (NVIDIA/PaLM convention: 12·L·h·s), `"none"` drops it (6·N).
- LoRA/QLoRA: frozen weights get no weight-gradient GEMMs, so forward + input-gradient only:
  2/3 of the full-training FLOPs (NVIDIA: "SFT formula x 2/3") plus 6 FLOPs per adapter weight.
- hardware FLOPs (HFU) add what recomputation re-runs: full recompute one more forward pass;
  selective recompute the attention-core forward (only without FlashAttention, which already
  recomputes it inside its own backward and is not counted).
"""
from __future__ import annotations

from typing import Literal

from gpuplan.perf.training_shape import ModelShape

AttentionConvention = Literal["causal", "full", "none"]
Recompute = Literal["none", "selective", "full"]
RECOMPUTE_CODES = {"none": 0, "selective": 1, "full": 2}
RECOMPUTE_NAMES = {v: k for k, v in RECOMPUTE_CODES.items()}


def _window_context(s: float, w: int | None, attention: str) -> float:
    if attention == "none":
        return 0.0
    if attention == "full":
        return min(s, float(w)) if w else s
    if w and w < s:  # causal with a window: ramps up to w, then flat
        return w - w * w / (2 * s)
    return s / 2


def _context(shape: ModelShape, seq_len: int, attention: str) -> float:
    """Average number of keys each query attends to under the convention, over the softmax-attention layers
    (interleaved local layers see only their window or chunk)."""
    s = float(seq_len)
    if shape.sliding_window or not shape.n_local_attention_layers or not shape.local_attention_window:
        return _window_context(s, shape.sliding_window, attention)
    n_kv = shape.n_kv_layers
    n_loc = min(shape.n_local_attention_layers, n_kv)
    local = _window_context(s, shape.local_attention_window, attention)
    return (n_loc * local + (n_kv - n_loc) * _window_context(s, None, attention)) / n_kv


def attention_forward_flops_per_token(shape: ModelShape, seq_len: int, attention: str = "causal") -> float:
    """Q·Kᵀ and A·V over the softmax-attention layers, forward only; a hybrid's linear-attention layers add their
    fixed token-mixing cost (none under the "none" convention)."""
    ctx = _context(shape, seq_len, attention)
    linear = shape.linear_flops_per_token if attention != "none" else 0.0
    return shape.n_kv_layers * 2.0 * shape.n_heads * (shape.qk_head_dim + shape.v_head_dim) * ctx + linear


def forward_flops_per_token(shape: ModelShape, seq_len: int, attention: str = "causal") -> float:
    return 2.0 * shape.matmul_active_params + attention_forward_flops_per_token(shape, seq_len, attention)


def model_flops_per_token(shape: ModelShape, seq_len: int, method: str = "full", attention: str = "causal",
                          lora_rank: int = 16, lora_targets: str = "all") -> float:
    """Model FLOPs per trained token (what MFU divides by)."""
    fwd = forward_flops_per_token(shape, seq_len, attention)
    if method == "full":
        return 3.0 * fwd
    if method in ("lora", "qlora"):
        return 2.0 * fwd + 6.0 * shape.adapter_params(lora_rank, lora_targets)
    raise ValueError(f"unknown method {method!r}")


def hardware_flops_per_token(shape: ModelShape, seq_len: int, recompute: str, method: str = "full",
                             attention: str = "causal", flash_attention: bool = True,
                             lora_rank: int = 16, lora_targets: str = "all") -> float:
    """FLOPs executed per token including recomputation (what HFU divides by)."""
    base = model_flops_per_token(shape, seq_len, method, attention, lora_rank, lora_targets)
    if recompute == "full":
        return base + forward_flops_per_token(shape, seq_len, attention)
    if recompute == "selective" and not flash_attention:
        return base + attention_forward_flops_per_token(shape, seq_len, attention)
    return base


def recompute_factor(shape: ModelShape, seq_len: int, recompute: str, method: str = "full",
                     attention: str = "causal", flash_attention: bool = True) -> float:
    """Hardware FLOPs / model FLOPs: 4/3 for full recompute of full training."""
    return (hardware_flops_per_token(shape, seq_len, recompute, method, attention, flash_attention)
            / model_flops_per_token(shape, seq_len, method, attention))


def training_flops(shape: ModelShape, tokens: float, seq_len: int, method: str = "full",
                   attention: str = "causal", lora_rank: int = 16, lora_targets: str = "all") -> float:
    """Total model FLOPs of a run."""
    return model_flops_per_token(shape, seq_len, method, attention, lora_rank, lora_targets) * float(tokens)
