"""Read a Hugging Face `config.json` into a ModelSpec, and write one back.

HF families spell the same quantity differently (`n_layer`, `num_hidden_layers`,
`num_layers`...), and leave some fields implicit (KV heads default to the head count,
head_dim to hidden/heads, tied embeddings to a per-family default). This module holds
those spellings and defaults in one table-driven place, and turns every malformed input
into a one-line UsageError that names the file and the field.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gpuplan.errors import UsageError
from gpuplan.models.spec import ModelSpec, odd_block

# Alternative spellings, first match wins.
_LAYERS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
_HIDDEN = ("hidden_size", "n_embd", "d_model", "n_embed", "dim")
_HEADS = ("num_attention_heads", "n_head", "n_heads", "num_heads")
_KV_HEADS = ("num_key_value_heads", "num_kv_heads", "n_kv_heads", "n_head_kv", "multi_query_group_num")
_FFN = ("intermediate_size", "ffn_dim", "n_inner", "ffn_hidden_size", "d_ff", "ffn_size")
_VOCAB = ("vocab_size", "padded_vocab_size", "n_vocab")
_MAX_SEQ = ("max_position_embeddings", "n_positions", "n_ctx", "seq_length", "max_sequence_length", "max_seq_len")
_N_EXPERTS = ("num_local_experts", "n_routed_experts", "num_experts", "moe_num_experts", "n_experts")
_TOP_K = ("num_experts_per_tok", "experts_per_token", "moe_top_k", "num_selected_experts", "top_k")
_ACT = ("hidden_act", "hidden_activation", "activation_function", "activation")

# Families whose FFN is gated (SwiGLU/GeGLU) whatever the activation is called.
_GATED_TYPES = {
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma", "gemma2", "gemma3",
    "gemma3_text", "deepseek_v2", "deepseek_v3", "kimi_k2", "phi3", "gpt_oss", "olmo", "olmo2", "internlm2",
    "yi", "baichuan", "cohere", "granite", "exaone", "minicpm", "glm4_moe", "ernie4_5", "llama4_text",
    "llama4", "minimax_m2", "phimoe", "smollm3", "cohere2", "mistral3", "granitemoe", "granitemoeshared",
}
_UNGATED_TYPES = {"gpt2", "gpt_neox", "opt", "bloom", "falcon", "gptj", "gpt_bigcode", "phi", "starcoder2", "nemotron", "mpt",
                  "nemotron_h"}
_GATED_ACTS = {"silu", "swish", "swiglu", "geglu", "reglu", "silu_and_mul"}
# Families with biases on the q/k/v projections by construction.
_QKV_BIAS_TYPES = {"qwen2", "qwen2_moe", "qwen2_vl", "gpt2", "gpt_neox", "opt", "bloom", "gptj", "gpt_bigcode", "phi"}
# tie_word_embeddings when config.json is silent (HF class defaults; HF's base default is True).
_UNTIED_DEFAULT_TYPES = {
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "deepseek_v2", "deepseek_v3",
    "kimi_k2", "gpt_neox", "phi3", "gpt_oss", "falcon", "nemotron", "olmo", "olmo2", "internlm2", "cohere",
    "llama4_text", "glm4_moe", "minimax_m2", "phimoe", "nemotron_h",
}
# Families with layers that are not softmax attention (state-space, linear or lightning attention): refused unless
# read as a Gated DeltaNet or Mamba-2 hybrid below (_linear_attention, _mamba_blocks, _mamba_layers).
_HYBRID_TYPES = {"jamba", "zamba", "zamba2", "falcon_h1", "nemotron_h", "phi4flash", "lfm2", "qwen3_next", "mamba",
                 "mamba2", "recurrent_gemma", "bamba", "minimax", "minimax_m1"}
_NON_ATTENTION_LAYER_WORDS = ("mamba", "linear", "ssm", "conv", "recurrent", "lightning", "deltanet")

# Sanity caps: bigger than any real model by orders of magnitude, small enough to catch typos.
_CAPS = {
    "n_layers": 10_000, "hidden_size": 1_000_000, "n_heads": 100_000, "n_kv_heads": 100_000, "head_dim": 100_000,
    "ffn_size": 10_000_000, "vocab_size": 10_000_000, "max_seq_len": 1_000_000_000, "n_experts": 100_000,
    "n_active_experts": 100_000, "n_shared_experts": 100_000, "expert_ffn_size": 10_000_000,
    "shared_expert_ffn_size": 10_000_000, "sliding_window": 1_000_000_000, "q_lora_rank": 1_000_000,
    "kv_lora_rank": 1_000_000, "qk_nope_head_dim": 100_000, "qk_rope_head_dim": 100_000, "v_head_dim": 100_000,
    "moe_layer_step": 100_000, "index_topk": 100_000_000, "index_n_heads": 100_000, "index_head_dim": 100_000,
}
_MAX_TOTAL_PARAMS = 1e15
MAX_CONFIG_BYTES = 50_000_000  # real config.json files are a few kB; 50 MB leaves room for odd ones


class _Reader:
    """Typed access to one config dict, with errors that name the file and the field."""

    def __init__(self, cfg: dict[str, Any], label: str):
        self.cfg, self.label = cfg, label

    def fail(self, field: str, why: str) -> UsageError:
        return UsageError(f"{self.label}: field {field!r} {why}")

    def first(self, names: tuple[str, ...]) -> tuple[str | None, Any]:
        for n in names:
            if self.cfg.get(n) is not None:
                return n, self.cfg[n]
        return None, None

    def int_field(self, names: tuple[str, ...] | str, cap_key: str, required: bool = False,
                  default: int | None = None, allow_zero: bool = False) -> int | None:
        names = (names,) if isinstance(names, str) else names
        field, value = self.first(names)
        if field is None:
            if required:
                raise UsageError(f"{self.label}: missing field {names[0]!r}"
                                 + (f" (or {', '.join(repr(n) for n in names[1:])})" if len(names) > 1 else ""))
            return default
        return self.as_int(field, value, cap_key, allow_zero)

    def as_int(self, field: str, value: Any, cap_key: str, allow_zero: bool = False) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(field, f"must be a number, got {_short(value)}")
        if isinstance(value, float):
            if not math.isfinite(value):
                raise self.fail(field, f"must be finite, got {value}")
            if value != int(value):
                raise self.fail(field, f"must be a whole number, got {value}")
        n = int(value)
        if n < 0 or (n == 0 and not allow_zero):
            raise self.fail(field, f"must be {'>= 0' if allow_zero else 'positive'}, got {n}")
        cap = _CAPS[cap_key]
        if n > cap:
            raise self.fail(field, f"is implausibly large ({n:,}; limit {cap:,})")
        return n

    def flag(self, name: str, default: bool) -> bool:
        v = self.cfg.get(name)
        if v is None:
            return default
        if isinstance(v, bool):
            return v
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v in (0, 1):
            return bool(v)
        raise self.fail(name, f"must be true or false, got {_short(v)}")

    def text(self, names: tuple[str, ...]) -> str:
        _, v = self.first(names)
        return v.lower() if isinstance(v, str) else ""


def _short(value: Any) -> str:
    s = json.dumps(value) if isinstance(value, (str, list, dict)) else repr(value)
    return s if len(s) <= 40 else s[:37] + "..."


def load_config(path_or_dict: Any) -> tuple[dict[str, Any], str]:
    """The config dict and a label for messages; a folder means its config.json."""
    if isinstance(path_or_dict, dict):
        return path_or_dict, "config"
    if not isinstance(path_or_dict, (str, Path)):
        raise UsageError(f"model config must be a path or a dict, got {type(path_or_dict).__name__}")
    path = Path(path_or_dict).expanduser()
    label = str(path_or_dict)
    from gpuplan.files import check_in_file

    check_in_file(path, label)
    try:
        if path.is_dir():
            path = path / "config.json"
            label = str(path)
            if not path.is_file():
                raise UsageError(f"{label}: not found (the folder has no config.json)")
        if not path.is_file():
            raise UsageError(f"{label}: file not found")
        # Size first, from stat(): a multi-GB file is refused without reading it; files whose stat
        # size means nothing (/proc) are read only up to the limit.
        size = path.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise UsageError(f"{label}: too large for a config.json ({size:,} bytes; limit {MAX_CONFIG_BYTES:,})")
        with open(path, "rb") as f:
            raw = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as e:
        raise UsageError(f"{label}: cannot read ({e.strerror or e})") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise UsageError(f"{label}: too large for a config.json (over {MAX_CONFIG_BYTES:,} bytes)")
    try:
        cfg = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise UsageError(f"{label}: not a text file (expected a JSON config.json)") from None
    except json.JSONDecodeError as e:
        raise UsageError(f"{label}: not valid JSON (line {e.lineno}: {e.msg})") from None
    except RecursionError:
        raise UsageError(f"{label}: JSON nested too deeply") from None
    except ValueError:  # an integer of thousands of digits (int max-str-digits), or similar
        raise UsageError(f"{label}: holds a number too long to read (over 4,300 digits)") from None
    if not isinstance(cfg, dict):
        raise UsageError(f"{label}: expected a JSON object, got a {type(cfg).__name__}")
    return cfg, label


def _text_part(cfg: dict[str, Any]) -> dict[str, Any]:
    """Multimodal wrappers keep the language model under text_config / llm_config."""
    if any(cfg.get(k) is not None for k in _LAYERS):
        return cfg
    for key in ("text_config", "llm_config", "language_config", "thinker_config"):
        sub = cfg.get(key)
        if isinstance(sub, dict):
            if key == "thinker_config" and isinstance(sub.get("text_config"), dict):
                sub = sub["text_config"]
            merged = dict(sub)
            if "tie_word_embeddings" not in merged and "tie_word_embeddings" in cfg:
                merged["tie_word_embeddings"] = cfg["tie_word_embeddings"]
            return merged
    return cfg


def _native_precision(outer: dict, cfg: dict) -> str:
    """The weights' shipped precision from quantization_config (fp8, mxfp4) or torch_dtype."""
    q = outer.get("quantization_config") or cfg.get("quantization_config")
    if isinstance(q, dict):
        method = str(q.get("quant_method", "")).lower()
        fmt = str(q.get("fmt", "")).lower()
        if method == "fp8" or "e4m3" in fmt:
            return "fp8"
        if method in ("mxfp4", "nvfp4") or "fp4" in method:
            return "fp4"
        if method in ("awq", "gptq") and q.get("bits") in (4, 8):
            return f"int{q['bits']}"
        if method == "compressed-tensors":
            return _compressed_tensors_precision(q)
    dtype = str(outer.get("torch_dtype") or cfg.get("torch_dtype") or "").lower()
    return "fp16" if dtype in ("float16", "fp16") else "bf16"


def _compressed_tensors_precision(q: dict) -> str:
    """compressed-tensors (llm-compressor): the weights' type and bits in its config groups (Kimi-K2-Thinking's
    routed experts: int, 4 bits, group 32); 16-bit where no group says."""
    groups = q.get("config_groups")
    for group in groups.values() if isinstance(groups, dict) else ():
        w = group.get("weights") if isinstance(group, dict) else None
        if isinstance(w, dict):
            kind, bits = str(w.get("type", "")).lower(), w.get("num_bits")
            if kind == "float" and bits == 8:
                return "fp8"
            if kind == "float" and bits == 4:
                return "fp4"
            if kind == "int" and bits in (4, 8):
                return f"int{bits}"
    return "bf16"


def model_from_config(path_or_dict: Any, name: str | None = None) -> ModelSpec:
    """A ModelSpec from a HF config.json path, a folder holding one, or a parsed dict."""
    cfg, label = load_config(path_or_dict)
    outer = cfg
    cfg = _text_part(cfg)
    r = _Reader(cfg, label)
    model_type = cfg.get("model_type") if isinstance(cfg.get("model_type"), str) else ""
    model_type = model_type.lower()

    n_layers = r.int_field(_LAYERS, "n_layers", required=True)
    hidden = r.int_field(_HIDDEN, "hidden_size", required=True)
    n_heads = r.int_field(_HEADS, "n_heads", required=True)
    vocab = r.int_field(_VOCAB, "vocab_size", required=True)

    # MLA (DeepSeek-V2/V3, Kimi-K2): compressed KV; every head has its own K/V after up-projection.
    kv_lora = r.int_field("kv_lora_rank", "kv_lora_rank")
    mla: dict[str, Any] = {}
    if kv_lora:
        rope = r.int_field("qk_rope_head_dim", "qk_rope_head_dim", required=True)
        nope = r.int_field("qk_nope_head_dim", "qk_nope_head_dim", required=True)
        v_dim = r.int_field("v_head_dim", "v_head_dim", default=nope)
        mla = dict(attention="mla", kv_lora_rank=kv_lora, q_lora_rank=r.int_field("q_lora_rank", "q_lora_rank"),
                   qk_rope_head_dim=rope, qk_nope_head_dim=nope, v_head_dim=v_dim)
        # DeepSeek sparse attention (deepseek_v32): the lightning indexer and its top-k.
        topk = r.int_field("index_topk", "index_topk")
        if topk:
            mla.update(index_topk=topk, index_n_heads=r.int_field("index_n_heads", "index_n_heads", required=True),
                       index_head_dim=r.int_field("index_head_dim", "index_head_dim", required=True))
        n_kv, head_dim = n_heads, nope + rope
    else:
        if cfg.get("multi_query") is True and r.first(_KV_HEADS)[0] is None:
            n_kv = 1
        else:
            n_kv = r.int_field(_KV_HEADS, "n_kv_heads", default=n_heads)
        head_dim = r.int_field(("head_dim", "kv_channels", "attention_head_dim"), "head_dim")
        if head_dim is None:
            if hidden % n_heads:
                raise r.fail(r.first(_HIDDEN)[0] or "hidden_size",
                             f"({hidden}) is not divisible by the head count ({n_heads}) and no head_dim is given")
            head_dim = hidden // n_heads
        if n_heads % n_kv:
            raise r.fail(r.first(_KV_HEADS)[0] or "num_key_value_heads",
                         f"({n_kv}) must divide the attention head count ({n_heads})")

    blocks = _mamba_blocks(r, n_layers)
    if blocks:  # Nemotron-H: n_layers counts the token-mixer blocks from here on, n_ffn_layers the FFN blocks
        n_layers = blocks["n_layers"]
        linear = blocks
    else:
        linear = _linear_attention(r, model_type, n_layers) or _mamba_layers(r, model_type, n_layers, hidden)
    if not linear:
        _refuse_hybrid(r, model_type, n_layers)
    gated = _is_gated(model_type, r.text(_ACT))
    ffn_field, _ = r.first(_FFN)
    if ffn_field is None and model_type in {"gpt2", "bloom", "falcon", "gptj", "gpt_bigcode", "mpt"} | {""}:
        ffn = 4 * hidden  # GPT-2 style: n_inner null means 4 * n_embd
        if model_type == "mpt" and isinstance(cfg.get("expansion_ratio"), (int, float)):
            ffn = r.as_int("expansion_ratio", cfg["expansion_ratio"] * hidden, "ffn_size")
    elif ffn_field is None and blocks and "-" not in blocks["block_pattern"]:  # MoE blocks only: no dense width
        ffn = r.int_field("moe_intermediate_size", "ffn_size", required=True)
    else:
        ffn = r.int_field(_FFN, "ffn_size", required=True)

    moe = _moe_fields(r, model_type, n_layers, ffn) if not blocks else _block_moe(r, blocks, ffn)
    if model_type.startswith("granitemoehybrid") and not moe and r.cfg.get("shared_intermediate_size"):
        ffn = r.int_field("shared_intermediate_size", "ffn_size")  # no experts: the shared MLP is the FFN
    if model_type.startswith("llama4") and r.cfg.get("intermediate_size_mlp") is not None:
        ffn = r.int_field("intermediate_size_mlp", "ffn_size")  # Llama 4: the dense layers' FFN (experts: intermediate_size)
    tied = r.flag("tie_word_embeddings", model_type not in _UNTIED_DEFAULT_TYPES)
    if "tie_word_embeddings" not in cfg and outer is not cfg and isinstance(outer.get("tie_word_embeddings"), bool):
        tied = outer["tie_word_embeddings"]
    qkv_bias = r.flag("attention_bias", model_type in _QKV_BIAS_TYPES) or r.flag("qkv_bias", False)
    if model_type in {"opt", "bloom"}:
        qkv_bias = r.flag("enable_bias", True)
    elif model_type == "falcon":
        qkv_bias = r.flag("bias", False)
    max_seq = r.int_field(_MAX_SEQ, "max_seq_len", default=4096)
    attention = mla.pop("attention", "mha" if n_kv == n_heads else "gqa")

    fields: dict[str, Any] = dict(
        name=name or _name(outer, cfg, label), n_layers=n_layers, hidden_size=hidden, n_heads=n_heads,
        n_kv_heads=n_kv, head_dim=head_dim, ffn_size=ffn, gated_ffn=gated, vocab_size=vocab,
        tied_embeddings=tied, attention=attention, qkv_bias=qkv_bias, max_seq_len=max_seq,
        source=label if label != "config" else "config.json", attention_sinks=model_type == "gpt_oss",
        native_precision=_native_precision(outer, cfg), **_windows(r, model_type, n_layers), **mla, **moe,
        **{k: v for k, v in linear.items() if k != "n_layers"},
    )
    try:
        spec = ModelSpec(**fields)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err.get("loc", ())) or "config"
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        raise UsageError(f"{label}: inconsistent model shape ({loc}: {msg})") from None
    if spec.total_params() > _MAX_TOTAL_PARAMS:
        raise UsageError(f"{label}: implausible shape: {spec.total_params():.3g} parameters (limit {_MAX_TOTAL_PARAMS:.0e})")
    return spec


def _is_gated(model_type: str, act: str) -> bool:
    if model_type in _GATED_TYPES:
        return True
    if model_type in _UNGATED_TYPES:
        return False
    return act in _GATED_ACTS or act.endswith("glu")


def _int_list(r: _Reader, name: str) -> list[int] | None:
    v = r.cfg.get(name)
    if not isinstance(v, list):
        return None
    return [i for i in v if isinstance(i, int) and not isinstance(i, bool)]


def _linear_attention(r: _Reader, model_type: str, n_layers: int) -> dict[str, Any]:
    """Gated DeltaNet hybrids (Qwen3-Next, Qwen3.5): the linear-attention layers, from layer_types
    ("linear_attention") or, in Qwen3-Next's first configs, every layer but each full_attention_interval-th; their
    head counts and widths (linear_*); the full-attention layers' output gate; the recurrent state's dtype
    (mamba_ssm_dtype). Any other hybrid, or one without the linear_* fields, is refused by _refuse_hybrid."""
    kinds = r.cfg.get("layer_types")
    if isinstance(kinds, list) and kinds:
        others = [k for k in kinds[:n_layers] if k not in ("linear_attention", "full_attention")]
        if others:
            return {}
        n_lin = sum(1 for k in kinds[:n_layers] if k == "linear_attention")
    elif model_type.startswith("qwen3_next"):
        interval = r.int_field("full_attention_interval", "n_layers", default=4)
        n_lin = n_layers - n_layers // interval
    else:
        return {}
    names = ("linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
             "linear_conv_kernel_dim")
    if not n_lin or any(r.cfg.get(n) is None for n in names):
        return {}
    out: dict[str, Any] = {n: r.int_field(n, "head_dim") for n in names}
    gated_default = model_type.startswith(("qwen3_next", "qwen3_5"))
    state = str(r.cfg.get("mamba_ssm_dtype") or "").lower()
    return dict(out, n_linear_attention_layers=n_lin, attn_output_gate=r.flag("attn_output_gate", gated_default),
                linear_state_bytes_per_value=4.0 if state in ("float32", "fp32") else 2.0)


# Nemotron-H's block kinds, as hybrid_override_pattern writes them and as layers_block_type spells them.
_BLOCK_WORDS = {"mamba": "M", "attention": "*", "mlp": "-", "moe": "E"}


def _mamba_blocks(r: _Reader, n_blocks: int) -> dict[str, Any]:
    """Mamba-2 hybrids built of single-purpose blocks (Nemotron-H, Nemotron Nano 2, Nemotron 3): the blocks from
    hybrid_override_pattern ("M" Mamba-2, "*" attention, "-" MLP, "E" MoE) or layers_block_type ("mamba",
    "attention", "mlp", "moe"); the Mamba-2 heads (mamba_num_heads x mamba_head_dim), its n_groups B/C projections of
    ssm_state_size, the convolution kernel and the state's dtype (mamba_ssm_cache_dtype). {} where neither list is
    given."""
    pattern, words = r.cfg.get("hybrid_override_pattern"), r.cfg.get("layers_block_type")
    if isinstance(pattern, str) and pattern:
        field = "hybrid_override_pattern"
    elif isinstance(words, list) and words and all(isinstance(w, str) for w in words):
        field = "layers_block_type"
        odd = [w for w in words if w.lower() not in _BLOCK_WORDS]
        if odd:
            raise r.fail(field, f"holds {odd[0]!r}; the blocks modelled are {', '.join(_BLOCK_WORDS)}")
        pattern = "".join(_BLOCK_WORDS[w.lower()] for w in words)
    else:
        return {}
    if odd_block(pattern):
        raise r.fail(field, odd_block(pattern))
    if len(pattern) != n_blocks:
        raise r.fail(field, f"lists {len(pattern)} blocks where num_hidden_layers is {n_blocks}")
    n_mamba, n_attn = pattern.count("M"), pattern.count("*")
    n_ffn = pattern.count("-") + pattern.count("E")
    if not n_mamba or not n_attn or not n_ffn:
        raise r.fail(field, f"needs Mamba-2, attention and FFN blocks ({n_mamba} / {n_attn} / {n_ffn})")
    heads = r.int_field("mamba_num_heads", "head_dim", required=True)
    head_dim = r.int_field("mamba_head_dim", "head_dim", required=True)
    state = str(r.cfg.get("mamba_ssm_cache_dtype") or "").lower()
    return dict(n_layers=n_mamba + n_attn, n_ffn_layers=n_ffn, block_pattern=pattern, linear_attention_kind="mamba2",
                n_linear_attention_layers=n_mamba, linear_num_value_heads=heads, linear_value_head_dim=head_dim,
                linear_num_key_heads=r.int_field("n_groups", "head_dim", default=1),
                linear_key_head_dim=r.int_field("ssm_state_size", "head_dim", required=True),
                linear_conv_kernel_dim=r.int_field("conv_kernel", "head_dim", default=4),
                linear_state_bytes_per_value=4.0 if state in ("float32", "fp32") else 2.0)


def _mamba_layers(r: _Reader, model_type: str, n_layers: int, hidden: int) -> dict[str, Any]:
    """Mamba-2 hybrids whose every layer is a token mixer and an FFN (Granite-4.0-H: layer_types "mamba" /
    "attention", each followed by its MoE or MLP): the Mamba-2 heads (mamba_n_heads x mamba_d_head, "auto" =
    mamba_expand x hidden / heads), its mamba_n_groups B/C projections of mamba_d_state, the convolution kernel. {}
    where the layer list or the head count and state size are missing (refused by _refuse_hybrid)."""
    kinds = r.cfg.get("layer_types")
    if not model_type.startswith("granitemoehybrid") or not isinstance(kinds, list) or "mamba" not in kinds:
        return {}
    if any(k not in ("mamba", "attention") for k in kinds[:n_layers]) or \
            r.cfg.get("mamba_n_heads") is None or r.cfg.get("mamba_d_state") is None:
        return {}
    heads = r.int_field("mamba_n_heads", "head_dim", required=True)
    if r.cfg.get("mamba_d_head") in (None, "auto"):
        inner = r.int_field("mamba_expand", "head_dim", default=2) * hidden
        if inner % heads:
            raise r.fail("mamba_n_heads", f"({heads}) does not divide the inner width {inner} (mamba_expand x hidden)")
        head_dim = inner // heads
    else:
        head_dim = r.int_field("mamba_d_head", "head_dim")
    return dict(linear_attention_kind="mamba2", n_linear_attention_layers=sum(1 for k in kinds[:n_layers] if k == "mamba"),
                linear_num_value_heads=heads, linear_value_head_dim=head_dim,
                linear_num_key_heads=r.int_field("mamba_n_groups", "head_dim", default=1),
                linear_key_head_dim=r.int_field("mamba_d_state", "head_dim", required=True),
                linear_conv_kernel_dim=r.int_field("mamba_d_conv", "head_dim", default=4))


def _block_moe(r: _Reader, blocks: dict[str, Any], ffn: int) -> dict[str, Any]:
    """A block hybrid's experts: every "E" block routed, the "-" blocks dense MLPs."""
    pattern = blocks["block_pattern"]
    if "E" not in pattern:
        return {}
    out = _moe_fields(r, "", blocks["n_ffn_layers"], ffn)
    if not out:
        raise r.fail("n_routed_experts", "is missing or below 2 where the block list holds MoE blocks")
    out.pop("moe_layer_step", None)
    out["n_dense_layers"] = pattern.count("-")
    return out


def _refuse_hybrid(r: _Reader, model_type: str, n_layers: int) -> None:
    """State-space / linear-attention hybrids other than Gated DeltaNet and Mamba-2 ones (MiniMax-M1's lightning
    attention, Jamba, Falcon-H1; a Qwen3-Next, Granite-4.0-H or Nemotron-H config without its linear_* / mamba_* fields
    or block list) are refused, not miscounted."""
    kinds = r.cfg.get("layer_types") or r.cfg.get("layers_block_type")
    odd = [k for k in kinds if isinstance(k, str) and any(w in k.lower() for w in _NON_ATTENTION_LAYER_WORDS)] \
        if isinstance(kinds, list) else []
    attn_types = r.cfg.get("attn_type_list")  # MiniMax: 0 = lightning (linear) attention, 1 = softmax
    if isinstance(attn_types, list) and any(t == 0 and not isinstance(t, bool) for t in attn_types[:n_layers]):
        odd.append("lightning")
    if odd or model_type in _HYBRID_TYPES:
        what = odd[0] if odd else model_type
        raise UsageError(f"{r.label}: {what!r} layers (a state-space or linear-attention hybrid) are not modelled; "
                         "give the size instead (--params)")


def _moe_fields(r: _Reader, model_type: str, n_layers: int, ffn: int) -> dict[str, Any]:
    """Experts, top-k, shared experts and which layers are sparse, family by family.

    - DeepSeek-V2/V3, Kimi-K2, GLM-4.5: layer i is MoE when i >= first_k_dense_replace and i % moe_layer_freq == 0.
    - Qwen2/3-MoE: MoE when i is not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0.
    - Llama 4: MoE on the layers in moe_layers, by default every interleave_moe_layer_step-th ((i + 1) % step == 0);
      experts are intermediate_size wide, one shared expert of the same width, dense layers intermediate_size_mlp.
    """
    n_experts = r.int_field(_N_EXPERTS, "n_experts", default=0, allow_zero=True)
    if not n_experts or n_experts == 1:
        return {}
    top_k = r.int_field(_TOP_K, "n_active_experts", required=True)
    if top_k > n_experts:
        raise r.fail(r.first(_TOP_K)[0], f"({top_k}) exceeds the number of experts ({n_experts})")
    expert_ffn = r.int_field(("moe_intermediate_size", "expert_intermediate_size", "moe_ffn_hidden_size"),
                             "expert_ffn_size", default=ffn)
    out: dict[str, Any] = dict(n_experts=n_experts, n_active_experts=top_k, expert_ffn_size=expert_ffn)
    latent = r.int_field("moe_latent_size", "hidden_size")  # LatentMoE (Nemotron 3 Super)
    if latent:
        out["moe_latent_size"] = latent
    shared_size = r.int_field(("shared_expert_intermediate_size", "shared_intermediate_size",
                               "moe_shared_expert_intermediate_size"), "shared_expert_ffn_size",
                              allow_zero=True)
    n_shared = r.int_field(("n_shared_experts", "num_shared_experts"), "n_shared_experts", default=0, allow_zero=True)
    is_llama4 = model_type.startswith("llama4")
    if is_llama4:  # one shared expert as wide as a routed one, in every MoE layer
        out.update(n_shared_experts=1, shared_expert_ffn_size=expert_ffn)
    elif shared_size:  # Qwen-MoE: one shared expert of its own width
        out.update(n_shared_experts=max(1, n_shared), shared_expert_ffn_size=shared_size)
    elif n_shared and shared_size != 0:
        out.update(n_shared_experts=n_shared)

    L = min(n_layers, 10_000)
    step = 1
    if is_llama4:
        step = r.int_field("interleave_moe_layer_step", "moe_layer_step", default=1)
        listed = _int_list(r, "moe_layers")
        moe_set = set(listed) if listed else {i for i in range(L) if (i + 1) % step == 0}
    elif r.cfg.get("decoder_sparse_step") is not None or r.cfg.get("mlp_only_layers") is not None:
        step = r.int_field("decoder_sparse_step", "moe_layer_step", default=1)
        dense_only = set(_int_list(r, "mlp_only_layers") or [])
        moe_set = {i for i in range(L) if i not in dense_only and (i + 1) % step == 0}
        step = step if not dense_only else 1
    else:
        first_dense = r.int_field("first_k_dense_replace", "n_layers", default=0, allow_zero=True)
        freq = r.int_field("moe_layer_freq", "moe_layer_step", default=1)
        moe_set = {i for i in range(L) if i >= first_dense and i % freq == 0}
        step = 1
    moe_set = {i for i in moe_set if 0 <= i < L}
    if not moe_set:
        return {}  # no layer is sparse: a dense model
    out["n_dense_layers"] = L - len(moe_set)
    # Keep the interval only where it reproduces exactly these layers; otherwise the counts stand alone.
    if step > 1 and moe_set == {i for i in range(L) if (i + 1) % step == 0}:
        out["moe_layer_step"] = step
    return out


def _windows(r: _Reader, model_type: str, n_layers: int) -> dict[str, Any]:
    """Attention windows: one for every layer (Mistral-7B: sliding_window), or local/global interleaving.

    Local layers, by family: an explicit layer_types list ("sliding_attention" / "chunked_attention");
    Gemma 3 and Cohere 2 without one: all but every sliding_window_pattern-th layer; Gemma 2 and gpt-oss:
    every other layer from the first; Llama 4: the RoPE layers (no_rope_layers 1, by default 3 of 4) attend
    within attention_chunk_size chunks.
    """
    L = min(n_layers, 10_000)
    if model_type.startswith("llama4"):
        chunk = r.int_field("attention_chunk_size", "sliding_window")
        if not chunk:
            return {}
        flags = _int_list(r, "no_rope_layers")
        interval = r.int_field("no_rope_layer_interval", "n_layers", default=4)
        n_local = sum(1 for f in flags[:L] if f) if flags else sum(1 for i in range(L) if (i + 1) % interval)
        return _local(chunk, n_local, L)
    if r.cfg.get("use_sliding_window") is False:
        return {}
    window = r.int_field(("sliding_window",), "sliding_window")
    if not window:
        return {}
    layer_types = r.cfg.get("layer_types")
    if isinstance(layer_types, list) and layer_types:
        n_local = sum(1 for t in layer_types[:L] if t in ("sliding_attention", "chunked_attention", "local_attention"))
        return _local(window, n_local, L)
    pattern = r.cfg.get("sliding_window_pattern", r.cfg.get("_sliding_window_pattern"))
    if model_type.startswith(("gemma3", "cohere2")) or (isinstance(pattern, int) and not isinstance(pattern, bool)
                                                        and pattern > 1):
        p = pattern if isinstance(pattern, int) and not isinstance(pattern, bool) and pattern > 0 else \
            (6 if model_type.startswith("gemma3") else 4)
        return _local(window, sum(1 for i in range(L) if (i + 1) % p), L)
    if model_type.startswith(("gemma2", "gpt_oss")):
        return _local(window, (L + 1) // 2, L)
    return {"sliding_window": window}


def _local(window: int, n_local: int, n_layers: int) -> dict[str, Any]:
    if n_local <= 0:
        return {}
    if n_local >= n_layers:
        return {"sliding_window": window}
    return {"local_attention_window": window, "n_local_attention_layers": n_local}


def _name(outer: dict[str, Any], cfg: dict[str, Any], label: str) -> str:
    for d in (outer, cfg):
        v = d.get("_name_or_path")
        if isinstance(v, str) and v.strip():
            return v.strip().rstrip("/").rsplit("/", 1)[-1][:100]
    if label != "config":
        parent = Path(label).parent.name
        if parent:
            return parent[:100]
    for d in (outer, cfg):
        archs = d.get("architectures")
        if isinstance(archs, list) and archs and isinstance(archs[0], str):
            return archs[0][:100]
        if isinstance(d.get("model_type"), str) and d["model_type"]:
            return d["model_type"][:100]
    return "custom-model"


def spec_to_config(spec: ModelSpec) -> dict[str, Any]:
    """An HF-style config.json dict for a spec (what a checkpoint of this shape would carry)."""
    if spec.attention == "mla":
        model_type = "deepseek_v32" if spec.sparse_attention else "deepseek_v3"
    elif spec.attention_sinks:
        model_type = "gpt_oss"
    elif spec.is_moe:
        model_type = "mixtral"
    elif not spec.gated_ffn:
        model_type = "gpt_neox"
    else:
        model_type = "qwen2" if spec.qkv_bias else "llama"
    cfg: dict[str, Any] = {
        "_name_or_path": spec.name,
        "model_type": model_type,
        "num_hidden_layers": spec.n_layers,
        "hidden_size": spec.hidden_size,
        "num_attention_heads": spec.n_heads,
        "num_key_value_heads": spec.n_kv_heads,
        "head_dim": spec.head_dim,
        "intermediate_size": spec.ffn_size,
        "hidden_act": "silu" if spec.gated_ffn else "gelu",
        "vocab_size": spec.vocab_size,
        "tie_word_embeddings": spec.tied_embeddings,
        "attention_bias": spec.qkv_bias,
        "max_position_embeddings": spec.max_seq_len,
        "sliding_window": spec.sliding_window,
    }
    if spec.local_attention_window:  # local layers first, global ones last: only the counts matter here
        cfg["sliding_window"] = spec.local_attention_window
        cfg["layer_types"] = (["sliding_attention"] * spec.n_local_attention_layers
                              + ["full_attention"] * (spec.n_layers - spec.n_local_attention_layers))
    if spec.attention == "mla":
        cfg.update(q_lora_rank=spec.q_lora_rank, kv_lora_rank=spec.kv_lora_rank, qk_nope_head_dim=spec.qk_nope_head_dim,
                   qk_rope_head_dim=spec.qk_rope_head_dim, v_head_dim=spec.v_head_dim)
        if spec.sparse_attention:
            cfg.update(index_topk=spec.index_topk, index_n_heads=spec.index_n_heads, index_head_dim=spec.index_head_dim)
        cfg.pop("head_dim")
    if spec.block_pattern:  # a Mamba-2 block hybrid, written as Nemotron-H writes it
        return _nemotron_h_config(spec, cfg)
    if spec.linear_attention_kind == "mamba2":  # Mamba-2 mixers in layers with an FFN each, as Granite-4.0-H
        return _granite_hybrid_config(spec, cfg)
    if spec.n_linear_attention_layers:  # a Gated DeltaNet hybrid, written as Qwen3-Next writes it
        cfg.update(model_type="qwen3_next", attn_output_gate=spec.attn_output_gate,
                   layer_types=(["linear_attention"] * spec.n_linear_attention_layers
                                + ["full_attention"] * spec.n_kv_layers),
                   linear_num_key_heads=spec.linear_num_key_heads, linear_num_value_heads=spec.linear_num_value_heads,
                   linear_key_head_dim=spec.linear_key_head_dim, linear_value_head_dim=spec.linear_value_head_dim,
                   linear_conv_kernel_dim=spec.linear_conv_kernel_dim,
                   mamba_ssm_dtype="float32" if spec.linear_state_bytes_per_value == 4.0 else "bfloat16")
    if spec.is_moe:
        _write_experts(cfg, spec, "num_local_experts", "shared_expert_intermediate_size")
        if spec.moe_layer_step > 1:
            cfg["decoder_sparse_step"] = spec.moe_layer_step
        else:
            cfg["first_k_dense_replace"] = spec.n_dense_layers
    return cfg


def _write_experts(cfg: dict[str, Any], spec: ModelSpec, experts_key: str, shared_key: str) -> None:
    """The routed experts, top-k, expert width and shared experts, under the family's names for the count and the
    shared width."""
    cfg.update({experts_key: spec.n_experts, "num_experts_per_tok": spec.n_active_experts,
                "moe_intermediate_size": spec.expert_ffn_size or spec.ffn_size})
    if spec.moe_latent_size:
        cfg["moe_latent_size"] = spec.moe_latent_size
    if spec.n_shared_experts:
        cfg["n_shared_experts"] = spec.n_shared_experts
        if spec.shared_expert_ffn_size:
            cfg[shared_key] = spec.shared_expert_ffn_size


def _nemotron_h_config(spec: ModelSpec, cfg: dict[str, Any]) -> dict[str, Any]:
    """Nemotron-H's config.json fields for a block hybrid (its pattern, Mamba-2 heads and experts)."""
    cfg.pop("hidden_act")  # Nemotron-H names its FFN activation mlp_hidden_act
    cfg.update(model_type="nemotron_h", num_hidden_layers=len(spec.block_pattern),
               hybrid_override_pattern=spec.block_pattern, mlp_hidden_act="relu2",
               mamba_num_heads=spec.linear_num_value_heads, mamba_head_dim=spec.linear_value_head_dim,
               n_groups=spec.linear_num_key_heads, ssm_state_size=spec.linear_key_head_dim,
               conv_kernel=spec.linear_conv_kernel_dim,
               mamba_ssm_cache_dtype="float32" if spec.linear_state_bytes_per_value == 4.0 else "bfloat16")
    if spec.is_moe:
        _write_experts(cfg, spec, "n_routed_experts", "moe_shared_expert_intermediate_size")
    return cfg


def _granite_hybrid_config(spec: ModelSpec, cfg: dict[str, Any]) -> dict[str, Any]:
    """Granite-4.0-H's config.json fields for a Mamba-2 hybrid whose layers each keep an FFN."""
    cfg.update(model_type="granitemoehybrid",
               layer_types=["mamba"] * spec.n_linear_attention_layers + ["attention"] * spec.n_kv_layers,
               mamba_n_heads=spec.linear_num_value_heads, mamba_d_head=spec.linear_value_head_dim,
               mamba_n_groups=spec.linear_num_key_heads, mamba_d_state=spec.linear_key_head_dim,
               mamba_d_conv=spec.linear_conv_kernel_dim, shared_intermediate_size=spec.ffn_size)
    if spec.is_moe:
        cfg.update(num_local_experts=spec.n_experts, num_experts_per_tok=spec.n_active_experts,
                   intermediate_size=spec.expert_ffn_size or spec.ffn_size,
                   shared_intermediate_size=spec.shared_expert_ffn_size or 0)
    return cfg
