"""config.json parsing: real HF configs, round trips of every preset, and hostile input."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuplan.errors import UsageError
from gpuplan.models import get_preset, model_from_config, preset_ids, resolve_model
from gpuplan.models.hf_config import spec_to_config
from gpuplan.models.spec import ModelSpec

# Shape fields as published in each model's config.json on the Hugging Face hub.
LLAMA31_8B = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu", "hidden_size": 4096,
    "intermediate_size": 14336, "max_position_embeddings": 131072, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 128256, "tie_word_embeddings": False,
    "attention_bias": False, "rope_theta": 500000.0, "torch_dtype": "bfloat16",
}
QWEN25_7B = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu", "hidden_size": 3584,
    "intermediate_size": 18944, "max_position_embeddings": 131072, "num_attention_heads": 28, "num_hidden_layers": 28,
    "num_key_value_heads": 4, "sliding_window": 131072, "use_sliding_window": False, "tie_word_embeddings": False,
    "vocab_size": 152064,
}
MIXTRAL_8X7B = {
    "model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 32768,
    "num_attention_heads": 32, "num_experts_per_tok": 2, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "num_local_experts": 8, "sliding_window": None, "tie_word_embeddings": False, "vocab_size": 32000,
}
DEEPSEEK_V3 = {
    "model_type": "deepseek_v3", "vocab_size": 129280, "hidden_size": 7168, "intermediate_size": 18432,
    "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_nextn_predict_layers": 1, "num_attention_heads": 128,
    "num_key_value_heads": 128, "n_shared_experts": 1, "n_routed_experts": 256, "kv_lora_rank": 512, "q_lora_rank": 1536,
    "qk_rope_head_dim": 64, "v_head_dim": 128, "qk_nope_head_dim": 128, "num_experts_per_tok": 8, "moe_layer_freq": 1,
    "first_k_dense_replace": 3, "hidden_act": "silu", "max_position_embeddings": 163840, "tie_word_embeddings": False,
}
GEMMA2_9B = {
    "model_type": "gemma2", "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 3584,
    "intermediate_size": 14336, "max_position_embeddings": 8192, "num_attention_heads": 16, "num_hidden_layers": 42,
    "num_key_value_heads": 8, "sliding_window": 4096, "vocab_size": 256000,
}
QWEN3_235B = {
    "model_type": "qwen3_moe", "head_dim": 128, "hidden_size": 4096, "intermediate_size": 12288,
    "max_position_embeddings": 40960, "moe_intermediate_size": 1536, "mlp_only_layers": [], "decoder_sparse_step": 1,
    "num_attention_heads": 64, "num_experts": 128, "num_experts_per_tok": 8, "num_hidden_layers": 94,
    "num_key_value_heads": 4, "tie_word_embeddings": False, "use_sliding_window": False, "vocab_size": 151936,
}
QWEN15_MOE = {  # Qwen1.5-MoE-A2.7B: 14.3B total, 2.7B active, one wide shared expert
    "model_type": "qwen2_moe", "hidden_size": 2048, "intermediate_size": 5632, "moe_intermediate_size": 1408,
    "shared_expert_intermediate_size": 5632, "num_experts": 60, "num_experts_per_tok": 4, "num_hidden_layers": 24,
    "num_attention_heads": 16, "num_key_value_heads": 16, "vocab_size": 151936, "tie_word_embeddings": False,
    "decoder_sparse_step": 1, "max_position_embeddings": 8192,
}
DEEPSEEK_V2_LITE = {  # no q_lora_rank: queries are projected directly; 15.7B total
    "model_type": "deepseek_v2", "hidden_size": 2048, "intermediate_size": 10944, "moe_intermediate_size": 1408,
    "num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16, "n_shared_experts": 2,
    "n_routed_experts": 64, "num_experts_per_tok": 6, "first_k_dense_replace": 1, "moe_layer_freq": 1,
    "kv_lora_rank": 512, "q_lora_rank": None, "qk_rope_head_dim": 64, "v_head_dim": 128, "qk_nope_head_dim": 128,
    "vocab_size": 102400, "max_position_embeddings": 163840, "tie_word_embeddings": False,
}
GPT2 = {"model_type": "gpt2", "n_layer": 12, "n_embd": 768, "n_head": 12, "n_inner": None, "n_positions": 1024,
        "vocab_size": 50257, "activation_function": "gelu_new"}
PYTHIA_70M = {"model_type": "gpt_neox", "hidden_act": "gelu", "hidden_size": 512, "intermediate_size": 2048,
              "max_position_embeddings": 2048, "num_attention_heads": 8, "num_hidden_layers": 6,
              "tie_word_embeddings": False, "vocab_size": 50304, "use_parallel_residual": True}
MISTRAL_7B = {"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
              "num_hidden_layers": 32, "num_key_value_heads": 8, "sliding_window": 4096, "vocab_size": 32000,
              "max_position_embeddings": 32768, "tie_word_embeddings": False}


@pytest.mark.parametrize("cfg, total, active, rel", [
    (LLAMA31_8B, 8_030_261_248, None, 1e-9),
    (QWEN25_7B, 7_615_616_512, None, 1e-9),
    (MIXTRAL_8X7B, 46_702_792_704, 12.9e9, 0.005),
    (DEEPSEEK_V3, 671e9, 37e9, 0.02),
    (GEMMA2_9B, 9_241_705_984, None, 0.001),
    (QWEN3_235B, 235_093_634_560, 22e9, 0.02),
    (QWEN15_MOE, 14.3e9, 2.7e9, 0.01),
    (DEEPSEEK_V2_LITE, 15.7e9, None, 0.02),  # its "2.4B active" seems to leave out the 0.2B input embedding
    (GPT2, 124_439_808, None, 0.01),  # HF count includes 0.8M learned positions and biases
    (PYTHIA_70M, 70_426_624, None, 0.001),
    (MISTRAL_7B, 7_241_732_096, None, 1e-9),
])
def test_real_configs_give_published_counts(cfg, total, active, rel):
    spec = model_from_config(cfg)
    assert spec.total_params() == pytest.approx(total, rel=rel)
    if active:
        assert spec.active_params() == pytest.approx(active, rel=rel)


def test_family_details_from_config():
    assert model_from_config(QWEN25_7B).qkv_bias and model_from_config(QWEN25_7B).sliding_window is None
    assert model_from_config(GEMMA2_9B).tied_embeddings  # gemma default
    assert model_from_config(GEMMA2_9B).sliding_window is None  # alternating local/global layers
    assert model_from_config(MISTRAL_7B).sliding_window == 4096
    assert not model_from_config(GPT2).gated_ffn and model_from_config(GPT2).ffn_size == 4 * 768
    assert model_from_config(GPT2).tied_embeddings and not model_from_config(PYTHIA_70M).tied_embeddings
    lite = model_from_config(DEEPSEEK_V2_LITE)
    assert lite.attention == "mla" and lite.q_lora_rank is None and lite.n_dense_layers == 1
    assert lite.kv_bytes_per_token(2.0) == 27 * (512 + 64) * 2
    assert model_from_config(QWEN15_MOE).shared_expert_ffn_size == 5632
    assert model_from_config(LLAMA31_8B).attention == "gqa"
    assert model_from_config(GPT2).attention == "mha"


def test_multimodal_wrapper_uses_text_config():
    cfg = {"model_type": "llava", "architectures": ["LlavaForConditionalGeneration"],
           "vision_config": {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16},
           "text_config": dict(LLAMA31_8B)}
    assert model_from_config(cfg).total_params() == 8_030_261_248
    cfg["text_config"].pop("tie_word_embeddings")
    cfg["tie_word_embeddings"] = True
    assert model_from_config(cfg).tied_embeddings


@pytest.mark.parametrize("pid", preset_ids())
def test_round_trip_every_preset_through_a_file(pid, tmp_path):
    spec = get_preset(pid)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(spec_to_config(spec)))
    back = model_from_config(path)
    assert back.total_params() == spec.total_params()
    assert back.active_params() == spec.active_params()
    assert back.kv_bytes_per_token(2.0) == spec.kv_bytes_per_token(2.0)
    assert back.name == spec.name
    assert resolve_model(str(tmp_path)).total_params() == spec.total_params()  # a folder holding config.json


def test_resolve_model_accepts_a_path(tmp_path):
    p = tmp_path / "my-model" / "config.json"
    p.parent.mkdir()
    p.write_text(json.dumps(LLAMA31_8B))
    assert resolve_model(str(p)).total_params() == 8_030_261_248


BASE = dict(LLAMA31_8B)


def _with(**changes):
    cfg = dict(BASE)
    for k, v in changes.items():
        if v is _DROP:
            cfg.pop(k, None)
        else:
            cfg[k] = v
    return cfg


_DROP = object()


@pytest.mark.parametrize("cfg, field", [
    (_with(num_hidden_layers=0), "num_hidden_layers"),
    (_with(num_hidden_layers=-3), "num_hidden_layers"),
    (_with(num_hidden_layers=1e12), "num_hidden_layers"),
    (_with(num_hidden_layers=float("nan")), "num_hidden_layers"),
    (_with(hidden_size=float("inf")), "hidden_size"),
    (_with(hidden_size=4096.5), "hidden_size"),
    (_with(hidden_size="4096"), "hidden_size"),
    (_with(hidden_size=True), "hidden_size"),
    (_with(num_hidden_layers=_DROP), "num_hidden_layers"),
    (_with(vocab_size=_DROP), "vocab_size"),
    (_with(intermediate_size=_DROP), "intermediate_size"),
    (_with(num_key_value_heads=5), "num_key_value_heads"),
    (_with(num_attention_heads=30), "hidden_size"),
    (_with(vocab_size=[1, 2]), "vocab_size"),
    (_with(tie_word_embeddings="yes"), "tie_word_embeddings"),
    (_with(num_local_experts=8, num_experts_per_tok=9), "num_experts_per_tok"),
    (_with(num_local_experts=8), "num_experts_per_tok"),
    (_with(kv_lora_rank=512), "qk_rope_head_dim"),
])
def test_hostile_configs_name_the_field(cfg, field, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg, allow_nan=True))
    with pytest.raises(UsageError) as ei:
        model_from_config(path)
    msg = str(ei.value)
    assert "\n" not in msg and str(path) in msg and field in msg


@pytest.mark.parametrize("content, needle", [
    (b"not json at all", "not valid JSON"),
    (b"", "not valid JSON"),
    (b"[1, 2, 3]", "JSON object"),
    (b"42", "JSON object"),
    (b"\xff\xfe\x00\x00garbage", "not a text file"),
    (b"{}", "missing field"),
    (b'{"num_hidden_layers": 2', "not valid JSON"),
])
def test_hostile_files(content, needle, tmp_path):
    path = tmp_path / "config.json"
    path.write_bytes(content)
    with pytest.raises(UsageError) as ei:
        model_from_config(str(path))
    assert needle in str(ei.value) and "\n" not in str(ei.value)


def test_missing_paths(tmp_path):
    with pytest.raises(UsageError, match="file not found"):
        model_from_config(tmp_path / "nope.json")
    with pytest.raises(UsageError, match="no config.json"):
        model_from_config(tmp_path)
    with pytest.raises(UsageError, match="file not found"):
        resolve_model(str(tmp_path / "missing" / "config.json"))
    with pytest.raises(UsageError):
        model_from_config(12345)


def test_absurd_but_individually_valid_shape_is_rejected():
    cfg = _with(num_hidden_layers=9000, hidden_size=900_000, num_attention_heads=7031, num_key_value_heads=7031,
                head_dim=128, intermediate_size=9_000_000)
    with pytest.raises(UsageError, match="implausible"):
        model_from_config(cfg)


_KEYS = ["model_type", "num_hidden_layers", "n_layer", "hidden_size", "n_embd", "num_attention_heads", "n_head",
         "num_key_value_heads", "head_dim", "intermediate_size", "n_inner", "vocab_size", "tie_word_embeddings",
         "num_local_experts", "n_routed_experts", "num_experts", "num_experts_per_tok", "n_shared_experts",
         "moe_intermediate_size", "shared_expert_intermediate_size", "first_k_dense_replace", "kv_lora_rank",
         "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "max_position_embeddings",
         "sliding_window", "use_sliding_window", "attention_bias", "hidden_act", "mlp_only_layers",
         "decoder_sparse_step", "layer_types", "text_config", "multi_query"]
_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10, 10), st.integers(1, 70000), st.integers(-2**70, 2**70),
              st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1e12, 4096.0, 0.5, -1.0]),
              st.text(max_size=8), st.sampled_from(["llama", "gpt2", "gemma2", "deepseek_v3", "qwen2_moe", "silu"])),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(_KEYS), inner, max_size=6)),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(_KEYS), _values, max_size=20), st.booleans())
def test_random_dicts_give_a_spec_or_a_usage_error(cfg, start_valid):
    if start_valid:  # mutate a valid config so the parser gets deep, not just to the first missing field
        cfg = {**BASE, **cfg}
    try:
        spec = model_from_config(cfg)
    except UsageError as e:
        assert "\n" not in str(e)
        return
    assert isinstance(spec, ModelSpec)
    assert math.isfinite(spec.total_params()) and spec.total_params() > 0
    assert 0 < spec.active_params() <= spec.total_params()
    assert spec.kv_bytes_per_token(2.0) > 0


# ---- 2025-26 families (issue 13): interleaved MoE, local/global attention, sinks, hybrids ----------------------
# Llama-4-Maverick text_config as published (copied in TensorRT-LLM's Llama 4 tests, there cut to 2 layers).
LLAMA4_MAVERICK = {
    "model_type": "llama4", "architectures": ["Llama4ForConditionalGeneration"],
    "text_config": {
        "attention_bias": False, "attention_chunk_size": 8192, "head_dim": 128, "hidden_act": "silu",
        "hidden_size": 5120, "interleave_moe_layer_step": 2, "intermediate_size": 8192,
        "intermediate_size_mlp": 16384, "max_position_embeddings": 1048576, "model_type": "llama4_text",
        "num_attention_heads": 40, "num_experts_per_tok": 1, "num_hidden_layers": 48, "num_key_value_heads": 8,
        "num_local_experts": 128, "use_qk_norm": False, "vocab_size": 202048, "torch_dtype": "bfloat16",
    },
    "vision_config": {"model_type": "llama4_vision_model", "hidden_size": 1408, "num_hidden_layers": 34},
}
GPT_OSS_20B = {
    "model_type": "gpt_oss", "num_hidden_layers": 24, "num_local_experts": 32, "experts_per_token": 4,
    "vocab_size": 201088, "hidden_size": 2880, "intermediate_size": 2880, "head_dim": 64, "num_attention_heads": 64,
    "num_key_value_heads": 8, "sliding_window": 128, "attention_bias": True, "tie_word_embeddings": False,
    "max_position_embeddings": 131072, "layer_types": ["sliding_attention", "full_attention"] * 12,
    "quantization_config": {"quant_method": "mxfp4"},
}
GEMMA3_1B = {
    "model_type": "gemma3_text", "hidden_size": 1152, "intermediate_size": 6912, "num_hidden_layers": 26,
    "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256, "vocab_size": 262144,
    "sliding_window": 512, "sliding_window_pattern": 6, "max_position_embeddings": 32768,
    "hidden_activation": "gelu_pytorch_tanh",
}
MINIMAX_M2 = {  # the real config.json's architecture block (attn_type_list: all softmax attention)
    "model_type": "minimax_m2", "head_dim": 128, "hidden_act": "silu", "hidden_size": 3072, "intermediate_size": 1536,
    "max_position_embeddings": 196608, "mlp_intermediate_size": 8192, "num_attention_heads": 48,
    "num_experts_per_tok": 8, "num_hidden_layers": 62, "num_key_value_heads": 8, "num_local_experts": 256,
    "shared_intermediate_size": 0, "sliding_window": None, "tie_word_embeddings": False, "vocab_size": 200064,
    "attn_type_list": [1] * 62, "quantization_config": {"quant_method": "fp8", "fmt": "float8_e4m3fn"},
}
QWEN3_CODER_480B = {
    "model_type": "qwen3_moe", "decoder_sparse_step": 1, "head_dim": 128, "hidden_size": 6144,
    "intermediate_size": 8192, "max_position_embeddings": 262144, "mlp_only_layers": [], "moe_intermediate_size": 2560,
    "num_attention_heads": 96, "num_experts": 160, "num_experts_per_tok": 8, "num_hidden_layers": 62,
    "num_key_value_heads": 8, "shared_expert_intermediate_size": 0, "tie_word_embeddings": False,
    "use_sliding_window": False, "sliding_window": None, "vocab_size": 151936,
}


def test_llama4_maverick_alternates_dense_and_moe_layers():
    m = model_from_config(LLAMA4_MAVERICK)
    assert (m.n_experts, m.n_active_experts, m.n_shared_experts, m.shared_expert_ffn_size) == (128, 1, 1, 8192)
    assert (m.ffn_size, m.expert_ffn_size) == (16384, 8192)  # intermediate_size_mlp is the dense FFN
    assert (m.n_dense_layers, m.n_moe_layers, m.moe_layer_step) == (24, 24, 2)
    assert m.moe_layer_mask()[:4] == (False, True, False, True)
    assert m.total_params() == get_preset("llama-4-maverick").total_params()
    assert m.total_params() / 1e9 == pytest.approx(400.71, abs=0.01)  # text backbone of the 401.6B checkpoint
    assert m.active_params() / 1e9 == pytest.approx(17.2, abs=0.1)
    # chunked attention: 8192-token chunks on the RoPE layers, 3 of every 4
    assert (m.local_attention_window, m.n_local_attention_layers) == (8192, 36) and m.sliding_window is None


def test_llama4_scout_every_layer_moe():
    cfg = json.loads(json.dumps(LLAMA4_MAVERICK))
    cfg["text_config"].update(interleave_moe_layer_step=1, num_local_experts=16)
    s = model_from_config(cfg)
    assert (s.n_dense_layers, s.n_moe_layers, s.moe_layer_step) == (0, 48, 1)
    assert s.total_params() / 1e9 == pytest.approx(107.77, abs=0.01)
    assert s.total_params() == get_preset("llama-4-scout").total_params()
    # an explicit moe_layers list wins over the interval
    cfg["text_config"]["moe_layers"] = [1, 3]
    assert model_from_config(cfg).n_moe_layers == 2


def test_dense_layer_conventions_per_family():
    # DeepSeek: MoE where i >= first_k_dense_replace and i % moe_layer_freq == 0
    ds = dict(DEEPSEEK_V2_LITE, num_hidden_layers=8, first_k_dense_replace=1, moe_layer_freq=2)
    assert model_from_config(ds).n_moe_layers == 3  # layers 2, 4, 6
    # Qwen-MoE: MoE where i not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0
    q = dict(QWEN3_235B, num_hidden_layers=8, decoder_sparse_step=2)
    spec = model_from_config(q)
    assert (spec.n_moe_layers, spec.moe_layer_step) == (4, 2) and spec.moe_layer_mask()[:2] == (False, True)
    q = dict(QWEN3_235B, mlp_only_layers=[0, 1, 93])
    spec = model_from_config(q)
    assert (spec.n_dense_layers, spec.moe_layer_step) == (3, 1)


@pytest.mark.parametrize("quantization_config, native", [
    # compressed-tensors (llm-compressor) as Kimi-K2-Thinking ships it: int, 4 bits, group 32, weight-only
    ({"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"group_0": {
        "targets": ["Linear"], "input_activations": None,
        "weights": {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group", "group_size": 32}}}}, "int4"),
    ({"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {"group_0": {
        "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}}}, "fp8"),
    ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "int"}}}},
     "int8"),
    ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"}, "int4"),
    ({"quant_method": "gptq", "bits": 8, "group_size": 128, "desc_act": False}, "int8"),
    ({"quant_method": "compressed-tensors", "config_groups": "garbage"}, "bf16"),  # unreadable: 16-bit, no crash
])
def test_native_precision_of_integer_and_compressed_tensors_checkpoints(quantization_config, native):
    cfg = dict(QWEN3_CODER_480B, quantization_config=quantization_config)
    assert model_from_config(cfg).native_precision == native


def test_deepseek_v32_sparse_attention_indexer_from_its_config():
    """deepseek_v32 is V3's shape plus the lightning indexer (NeMo AutoModel's DeepseekV32Config fields)."""
    v32 = model_from_config(dict(DEEPSEEK_V3, model_type="deepseek_v32", index_topk=2048, index_n_heads=64,
                                 index_head_dim=128))
    v3 = model_from_config(DEEPSEEK_V3)
    assert v32.sparse_attention and not v3.sparse_attention
    # wq_b (1536 x 64*128) + wk (7168 x 128) + LayerNorm (2 x 128) + weights_proj (7168 x 64) per layer
    assert v32.indexer_params_per_layer() == 1536 * 8192 + 7168 * 128 + 256 + 7168 * 64 == 13_959_424
    assert v32.total_params() - v3.total_params() == 61 * 13_959_424
    assert v32.total_params() == get_preset("deepseek-v3.2").total_params()
    # its key cache: fp8 plus one fp32 scale per 128 values, 132 bytes per token and layer whatever the KV precision
    assert v32.kv_bytes_per_token(2.0) - v3.kv_bytes_per_token(2.0) == pytest.approx(61 * 132)
    with pytest.raises(UsageError, match="index_n_heads"):
        model_from_config(dict(DEEPSEEK_V3, index_topk=2048))


def test_gpt_oss_windows_sinks_and_experts():
    g = model_from_config(GPT_OSS_20B)
    assert (g.n_experts, g.n_active_experts, g.qkv_bias, g.attention_sinks) == (32, 4, True, True)
    assert (g.local_attention_window, g.n_local_attention_layers, g.sliding_window) == (128, 12, None)
    assert g.native_precision == "fp4"
    assert g.total_params() == get_preset("gpt-oss-20b").total_params()
    assert g.total_params() / 1e9 == pytest.approx(20.91, rel=0.002)
    # sinks: one weight per head and layer
    assert g.attention_params_per_layer() - g.model_copy(update={"attention_sinks": False}).attention_params_per_layer() == 64
    # without layer_types: alternating from the first layer
    no_types = {k: v for k, v in GPT_OSS_20B.items() if k != "layer_types"}
    assert model_from_config(no_types).n_local_attention_layers == 12


def test_gemma_local_global_patterns():
    g3 = model_from_config(GEMMA3_1B)
    assert (g3.local_attention_window, g3.n_local_attention_layers, g3.sliding_window) == (512, 22, None)
    assert g3.total_params() == get_preset("gemma-3-1b").total_params()
    typed = {k: v for k, v in GEMMA3_1B.items() if k != "sliding_window_pattern"}
    typed["layer_types"] = ["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(26)]
    assert model_from_config(typed).n_local_attention_layers == 22
    assert model_from_config({k: v for k, v in GEMMA3_1B.items() if k != "sliding_window_pattern"}
                             ).n_local_attention_layers == 22  # gemma3 default pattern 6
    g2 = model_from_config(GEMMA2_9B)
    assert (g2.local_attention_window, g2.n_local_attention_layers) == (4096, 21)
    # all layers sliding in layer_types: one window for every layer
    all_local = dict(MISTRAL_7B, layer_types=["sliding_attention"] * 32)
    assert model_from_config(all_local).sliding_window == 4096


def test_kv_cache_with_local_layers_at_long_context():
    g = get_preset("gemma-3-27b")
    per_layer = g.kv_bytes_per_token(2.0) / g.n_layers
    ctx = 131072
    expected = per_layer * (52 * 1024 + 10 * ctx)
    assert g.kv_bytes_per_sequence(ctx, 2.0) == pytest.approx(expected)
    assert g.kv_bytes_per_sequence(ctx, 2.0) < 0.2 * g.kv_bytes_per_token(2.0) * ctx
    # below the window every layer keeps every token
    assert g.kv_bytes_per_sequence(512, 2.0) == pytest.approx(g.kv_bytes_per_token(2.0) * 512)
    full = get_preset("llama-3.1-8b")
    assert full.kv_bytes_per_sequence(ctx) == full.kv_bytes_per_token() * ctx
    assert get_preset("mistral-7b").kv_bytes_per_sequence(ctx) == get_preset("mistral-7b").kv_bytes_per_token() * 4096


def test_minimax_m2_and_qwen3_coder_configs():
    m = model_from_config(MINIMAX_M2)
    assert (m.n_experts, m.n_active_experts, m.n_shared_experts, m.expert_ffn_size) == (256, 8, 0, 1536)
    assert m.native_precision == "fp8" and m.n_dense_layers == 0
    assert m.total_params() == get_preset("minimax-m2").total_params()
    q = model_from_config(QWEN3_CODER_480B)
    assert q.n_shared_experts == 0 and q.total_params() == get_preset("qwen3-coder-480b-a35b").total_params()
    assert q.total_params() / 1e9 == pytest.approx(480, rel=0.01)
    assert q.active_params() / 1e9 == pytest.approx(35, rel=0.02)


@pytest.mark.parametrize("cfg, needle", [
    (dict(LLAMA31_8B, model_type="granitemoehybrid", layer_types=["mamba"] * 30 + ["attention"] * 2), "mamba"),
    (dict(LLAMA31_8B, model_type="qwen3_next"), "qwen3_next"),  # no linear_* fields: not a Gated DeltaNet it can read
    (dict(MINIMAX_M2, model_type="minimax", attn_type_list=[0] * 7 + [1]), "lightning"),
    (dict(LLAMA31_8B, layer_types=["linear_attention", "full_attention"] * 16), "linear_attention"),
])
def test_state_space_and_linear_attention_hybrids_are_refused(cfg, needle):
    with pytest.raises(UsageError) as ei:
        model_from_config(cfg)
    msg = str(ei.value)
    assert needle in msg and "\n" not in msg and "not modelled" in msg


# Qwen3-Next-80B-A3B's config.json (Qwen/Qwen3-Next-80B-A3B-Instruct; the linear_* fields also transformers'
# Qwen3NextConfig defaults): Gated DeltaNet on 3 of every 4 layers, gated softmax attention on the 4th.
QWEN3_NEXT_80B = json.loads((Path(__file__).parent / "fixtures" / "configs" / "qwen3-next-80b-a3b.json").read_text())


def test_gated_deltanet_hybrid_is_read_not_refused():
    m = model_from_config(QWEN3_NEXT_80B)
    assert (m.n_linear_attention_layers, m.n_kv_layers, m.attn_output_gate) == (36, 12, True)
    # Gated DeltaNet layer: q/k/v/z projection, beta and decay, depthwise conv over q, k, v, dt bias and A, the gated
    # norm, the output projection
    assert m.linear_attention_params_per_layer() == (2048 * (2 * 2048 + 2 * 4096) + 2048 * 64 + 8192 * 4 + 64 + 128
                                                     + 4096 * 2048)
    # the gated attention's query projection also emits the gate
    assert m.attention_params_per_layer() == 2048 * (4096 + 4096 + 1024) + 4096 * 2048
    assert m.total_params() / 1e9 == pytest.approx(80, rel=0.01)  # "80B in total"
    assert (m.active_params() - m.embedding_params()) / 1e9 == pytest.approx(3.25, abs=0.01)  # "3B activated"
    # KV only on the 12 attention layers (2 KV heads of 256); a fixed state on the other 36
    assert m.kv_bytes_per_token(2.0) == 12 * 2 * 2 * 256 * 2
    assert m.linear_state_bytes_per_sequence() == 36 * (32 * 128 * 128 * 2 + (2 * 2048 + 4096) * 3 * 2)
    assert m.kv_bytes_per_sequence(1000) == m.kv_bytes_per_token(2.0) * 1000 + m.linear_state_bytes_per_sequence()
    # Qwen3.5's form: layer_types, the gate stated, the state kept in fp32
    q35 = dict(QWEN3_NEXT_80B, model_type="qwen3_5_moe_text", attn_output_gate=True, mamba_ssm_dtype="float32",
               layer_types=["linear_attention", "linear_attention", "linear_attention", "full_attention"] * 12)
    q35.pop("full_attention_interval")
    m35 = model_from_config(q35)
    assert m35.n_linear_attention_layers == 36 and m35.linear_state_bytes_per_value == 4.0
    assert m35.total_params() == m.total_params()
    # written back as a config it reads the same
    for spec in (m, m35):
        again = model_from_config(spec_to_config(spec), name=spec.name)
        assert again.model_dump(exclude={"source"}) == spec.model_dump(exclude={"source"})


def test_attention_only_granite_hybrid_type_is_accepted():
    cfg = dict(LLAMA31_8B, model_type="granitemoehybrid", layer_types=["attention"] * 32)
    assert model_from_config(cfg).total_params() == 8_030_261_248
