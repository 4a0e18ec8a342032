"""A plausible transformer shape for a bare parameter count ("a 70B model", "600B total, 30B active").

Planning rarely needs the exact shape, but memory, FLOPs and KV cache all need *a* shape.
The rules are the ones the Llama/Qwen/DeepSeek families follow, so the result reads like a
real model, and each is one visible constant:

- width/depth: hidden/layers ~ `ASPECT_RATIO` (Llama-2/3: 128 at 7-13B, 102 at 70B, 130 at 405B);
- attention: heads of 64 (hidden < 2048) or 128, 8 KV heads (GQA) once there are 16+ heads;
- FFN: SwiGLU, ~`FFN_RATIO` x hidden, width then fine-tuned so the total lands on the request;
- vocabulary 32k below 1B (active) parameters, 128k above; embeddings tied below 5B total (Llama-3.2 1B/3B);
- MoE: the always-active part (attention, embeddings) is sized like a dense model of the
  *active* count; routed experts hold the rest, with top-k/E matching the active share.
"""
from __future__ import annotations

import math

from gpuplan.errors import UsageError
from gpuplan.models.spec import ModelSpec

ASPECT_RATIO = 128.0
FFN_RATIO = 3.5
MIN_PARAMS = 1e7
MAX_PARAMS = 1e14
MAX_EXPERTS = 1024


def _vocab(total: float) -> int:
    return 32_000 if total < 1e9 else 128_256


def _head_dim(hidden: float) -> int:
    return 64 if hidden < 2048 else 128


def _attention_params(h: int, n_heads: int, n_kv: int, d: int) -> int:
    return h * (n_heads + 2 * n_kv) * d + n_heads * d * h


def _heads(h: int) -> tuple[int, int, int]:
    d = _head_dim(h)
    n_heads = max(1, h // d)
    n_kv = math.gcd(n_heads, 8) if n_heads >= 16 else n_heads
    return n_heads, n_kv, d


def _backbone(params: float, vocab: int, tied: bool) -> tuple[int, int]:
    """(hidden, layers) of a dense model with `params` weights at the family aspect ratio."""
    emb_factor = 1 if tied else 2
    per_h3 = (3 * FFN_RATIO + 2.25) / ASPECT_RATIO  # SwiGLU FFN + GQA attention, per layer, over h^3

    def total(h: float) -> float:
        return emb_factor * vocab * h + per_h3 * h**3

    lo, hi = 8.0, 1e6
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if total(mid) < params else (lo, mid)
    d = _head_dim(lo)
    unit = d * 8 if lo / d >= 16 else d  # 16+ heads: a multiple of 8, so 8 KV heads divide them
    h = max(2 * d, int(round(lo / unit)) * unit)
    return h, max(1, round(h / ASPECT_RATIO))


def _fit_width(budget_per_layer: float, h: int, width_unit: int, n_mats: int = 3) -> int:
    """Width of an FFN with `budget_per_layer` weights, rounded to `width_unit`."""
    width = budget_per_layer / (n_mats * h)
    return max(width_unit, int(round(width / width_unit)) * width_unit)


def _check(value: float | None, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UsageError(f"{what} must be a number, got {value!r}")
    value = float(value)
    if math.isnan(value) or math.isinf(value):
        raise UsageError(f"{what} must be a finite number, got {value}")
    if value <= 0:
        raise UsageError(f"{what} must be positive, got {value:g}")
    if value > MAX_PARAMS:
        raise UsageError(f"{what} {value:.3g} is beyond any plausible model (limit {MAX_PARAMS:.0e})")
    if value < MIN_PARAMS:
        raise UsageError(f"{what} {value:.3g} is too small to derive a transformer shape (minimum {MIN_PARAMS:.0e})")
    return value


def model_from_params(total_params: float, active_params: float | None = None, name: str | None = None) -> ModelSpec:
    """A Llama-style dense shape, or an MoE shape when active < total, matching the counts."""
    if total_params is None:
        raise UsageError("total parameters are required")
    total = _check(total_params, "total parameters")
    active = _check(active_params, "active parameters")
    if active is not None and active > total * (1 + 1e-9):
        raise UsageError(f"active parameters ({active:.3g}) cannot exceed total parameters ({total:.3g})")
    vocab, tied = _vocab(active if active is not None else total), total < 5e9
    is_moe = active is not None and active < 0.99 * total  # within 1%: a dense model is the better answer
    label = name or (f"derived-{total / 1e9:.3g}b" + (f"-a{active / 1e9:.3g}b" if is_moe else ""))
    rules = (f"derived by gpuplan.models.derive from {total:.4g} total"
             + (f" / {active:.4g} active" if is_moe else "")
             + f" parameters: hidden/layers ~{ASPECT_RATIO:g}, SwiGLU, GQA, vocab {vocab}")
    if is_moe:
        return _moe(total, active, vocab, tied, label, rules)
    return _dense(total, vocab, tied, label, rules)


def _dense(total: float, vocab: int, tied: bool, name: str, source: str) -> ModelSpec:
    h, _ = _backbone(total, vocab, tied)
    n_heads, n_kv, d = _heads(h)
    attn = _attention_params(h, n_heads, n_kv, d)
    emb = vocab * h * (1 if tied else 2) + h
    budget = total - emb
    layer_guess = attn + 3 * h * FFN_RATIO * h + 2 * h
    n_layers = max(1, round(budget / layer_guess))
    best = None
    for unit in (256, 128, 64, 32, 16, 8, 4, 2, 1):
        ffn = _fit_width(budget / n_layers - attn - 2 * h, h, unit)
        spec = ModelSpec(name=name, n_layers=n_layers, hidden_size=h, n_heads=n_heads, n_kv_heads=n_kv, head_dim=d,
                         ffn_size=ffn, vocab_size=vocab, tied_embeddings=tied,
                         attention="mha" if n_kv == n_heads else "gqa", max_seq_len=8192, source=source)
        err = abs(spec.total_params() / total - 1)
        if best is None or err < best[0] - 1e-12:
            best = (err, spec)
        if err < 0.002:
            break
    return best[1]


def _expert_count(k: int, share: float) -> int:
    """Fewest experts with k/E <= share, rounded up to a multiple of 8 once there are 16+."""
    e = max(k + 1, math.ceil(k / share - 1e-9))
    return e if e < 16 else math.ceil(e / 8) * 8


def _split_experts(k: int, share: float, routed_total: float, routed_active: float,
                   router_per_expert: float) -> tuple[int, float, float] | None:
    """Experts E for top-k, recounting the share once the router (always active, h x E per layer) is paid."""
    if k / share > MAX_EXPERTS:
        return None
    n_experts = _expert_count(k, share)
    for _ in range(50):
        router = router_per_expert * n_experts
        rt, ra = routed_total - router, routed_active - router
        if ra <= 0 or k * rt / ra > MAX_EXPERTS:
            return None
        needed = _expert_count(k, ra / rt)
        if needed <= n_experts:
            return n_experts, rt, ra
        n_experts = needed
    return None


def _moe(total: float, active: float, vocab: int, tied: bool, name: str, source: str) -> ModelSpec:
    h, _ = _backbone(active, vocab, tied)
    n_heads, n_kv, d = _heads(h)
    attn = _attention_params(h, n_heads, n_kv, d)
    emb = vocab * h * (1 if tied else 2) + h
    # Depth as for a dense model of the active size; experts fill the per-layer FFN budget.
    n_layers = max(1, round((active - emb) / (attn + 3 * h * FFN_RATIO * h + 2 * h)))
    always = emb + n_layers * (attn + 2 * h)
    share = (active - always) / (total - always)
    if share <= 0:
        raise UsageError(f"{active:.3g} active parameters leave nothing for experts once attention and "
                         f"embeddings of a {total:.3g}-parameter model are counted")
    # Fine-grained top-8 (DeepSeek/Qwen3) or coarse top-2 (Mixtral); fewer routed per token when sparser.
    for k in ((2,) if share >= 0.25 else (8, 4, 2, 1)):
        split = _split_experts(k, share, total - always, active - always, n_layers * h)
        if split:
            break
    else:
        raise UsageError(f"active share {active / total:.2%} is too small for a plausible MoE "
                         f"(at most {MAX_EXPERTS} experts)")
    n_experts, routed_total, routed_active = split
    # E*w + s = routed_total, k*w + s = routed_active (per-layer weights; s = one shared expert).
    expert_w = (routed_total - routed_active) / (n_layers * (n_experts - k))
    shared_w = routed_active / n_layers - k * expert_w
    best = None
    for unit in (128, 64, 32, 16, 8, 4, 2, 1):
        width = _fit_width(expert_w, h, unit)
        shared = _fit_width(shared_w, h, unit) if shared_w >= 3 * h * unit else 0
        if shared and shared < width // 4 and abs(shared_w * n_layers / active) < 0.005:
            shared = 0  # a sliver of a shared expert is not a plausible design; its weights are noise
        spec = ModelSpec(name=name, n_layers=n_layers, hidden_size=h, n_heads=n_heads, n_kv_heads=n_kv, head_dim=d,
                         ffn_size=width, vocab_size=vocab, tied_embeddings=tied,
                         attention="mha" if n_kv == n_heads else "gqa", max_seq_len=8192,
                         n_experts=n_experts, n_active_experts=k, expert_ffn_size=width,
                         n_shared_experts=1 if shared else 0, shared_expert_ffn_size=shared or None, source=source)
        err = max(abs(spec.total_params() / total - 1), abs(spec.active_params() / active - 1))
        if best is None or err < best[0] - 1e-12:
            best = (err, spec)
        if err < 0.005:
            break
    return best[1]
