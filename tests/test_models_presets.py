"""Presets: every shape reproduces its published parameter count; KV per token matches formulas.md §4.1."""
from __future__ import annotations

import math

import pytest

from gpuplan.errors import UnknownNameError, UsageError
from gpuplan.models import get_preset, preset_ids, resolve_model
from gpuplan.models.presets import count_tolerances, preset_records

REQUIRED = [
    "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b", "llama-3-70b", "llama-3.1-8b", "llama-3.1-70b",
    "llama-3.1-405b", "llama-3.3-70b", "mistral-7b", "mixtral-8x7b", "mixtral-8x22b", "qwen2.5-7b", "qwen2.5-72b",
    "qwen3-8b", "qwen3-32b", "qwen3-235b-a22b", "deepseek-v3", "gemma-2-9b", "gemma-2-27b", "gpt-3-175b",
    "llama-7b", "llama-13b", "llama-33b", "llama-65b", "pythia-70m", "pythia-6.9b", "opt-175b", "nemotron-4-340b",
    "deepseek-v2", "tinyllama-1.1b", "qwen2.5-14b", "qwen2.5-32b", "llama-3.2-1b", "llama-3.2-3b", "gemma-2-2b",
    "mistral-nemo-12b", "phi-3-mini", "kimi-k2", "gpt-oss-20b", "gpt-oss-120b",
    # Open models trained and served in 2025-26 (issue 13, coverage).
    "llama-4-scout", "llama-4-maverick", "qwen3-0.6b", "qwen3-1.7b", "qwen3-4b", "qwen3-14b", "qwen3-30b-a3b",
    "glm-4.5", "glm-4.5-air", "gemma-3-1b", "gemma-3-4b", "gemma-3-12b", "gemma-3-27b", "phi-4", "phi-4-mini",
    "phi-3.5-moe", "mistral-small-3", "mistral-large-2", "granite-3.3-8b", "olmo-2-7b", "olmo-2-13b", "olmo-2-32b",
    "qwen3-coder-480b-a35b", "minimax-m2", "gemma-3-270m", "olmo-2-1b", "smollm3-3b", "smollm2-135m",
    "olmo-3-7b", "olmo-3-32b", "apertus-8b", "hunyuan-a13b", "ernie-4.5-300b-a47b",
]
RECORDS = {r["id"]: r for r in preset_records()}


def test_required_presets_present():
    missing = set(REQUIRED) - set(preset_ids())
    assert not missing


def test_ids_unique_lowercase_and_documented():
    ids = preset_ids()
    assert len(ids) == len(set(ids))
    for r in preset_records():
        assert r["id"] == r["id"].lower() and " " not in r["id"]
        assert r["source"].strip(), r["id"]
        assert r["published_params"] and r["published_params"] > 0, r["id"]


@pytest.mark.parametrize("pid", preset_ids())
def test_total_params_match_published_within_tolerance(pid):
    """1% of the published total, or a wider tolerance the preset states in data with its reason."""
    spec, rec = get_preset(pid), RECORDS[pid]
    tol, _ = count_tolerances(rec)
    assert spec.total_params() == pytest.approx(spec.published_params, rel=tol)


def test_tolerance_exceptions_are_few_bounded_and_explained():
    exceptions = {pid: r for pid, r in RECORDS.items() if r.get("count_tolerance_pct")}
    assert len(exceptions) <= 3, sorted(exceptions)
    for pid, r in exceptions.items():
        assert 1 < r["count_tolerance_pct"] <= 3, pid
        assert len(r.get("count_tolerance_reason", "")) > 20, pid


@pytest.mark.parametrize("pid", [p for p in preset_ids() if get_preset(p).is_moe])
def test_moe_active_params_match_published(pid):
    spec, rec = get_preset(pid), RECORDS[pid]
    assert spec.published_active_params, f"{pid}: MoE preset without a published active count"
    # gpt-oss publishes active weights without the input embedding lookup (a table read, not a matmul);
    # GLM-4.5 publishes them without the input and the output embedding matrices.
    active = spec.non_embedding_active_params() if rec.get("active_excludes_input_embedding") else spec.active_params()
    if rec.get("active_excludes_embeddings"):
        active = spec.active_params() - spec.embedding_params()
    _, tol = count_tolerances(rec)
    assert tol <= 0.07
    assert active == pytest.approx(spec.published_active_params, rel=tol)
    assert spec.active_params() < 0.5 * spec.total_params()


def test_dense_presets_have_no_active_claim_or_it_matches_total():
    for pid in preset_ids():
        spec = get_preset(pid)
        if not spec.is_moe:
            assert spec.active_params() == spec.total_params()


@pytest.mark.parametrize("pid, kib_bf16", [
    ("llama-3.1-8b", 128.0), ("llama-3.1-70b", 320.0), ("llama-2-70b", 320.0), ("llama-3-70b", 320.0),
    ("llama-3.1-405b", 504.0), ("qwen2.5-7b", 56.0), ("deepseek-v3", 68.6),
])
def test_kv_per_token_matches_formulas_table(pid, kib_bf16):
    spec = get_preset(pid)
    assert spec.kv_bytes_per_token(2.0) / 1024 == pytest.approx(kib_bf16, abs=0.05)
    assert spec.kv_bytes_per_token(1.0) == pytest.approx(spec.kv_bytes_per_token(2.0) / 2)


def test_family_features():
    assert get_preset("gemma-2-9b").tied_embeddings and get_preset("gemma-2-9b").vocab_size == 256000
    assert get_preset("gemma-2-9b").head_dim * get_preset("gemma-2-9b").n_heads != get_preset("gemma-2-9b").hidden_size
    assert get_preset("qwen2.5-7b").qkv_bias and not get_preset("llama-3.1-8b").qkv_bias
    assert not get_preset("pythia-410m").gated_ffn and not get_preset("nemotron-4-340b").gated_ffn
    assert get_preset("mistral-7b").sliding_window == 4096
    mixtral = get_preset("mixtral-8x7b")
    assert mixtral.total_params() / 1e9 == pytest.approx(46.7, abs=0.05)
    assert mixtral.active_params() / 1e9 == pytest.approx(12.9, abs=0.05)
    ds = get_preset("deepseek-v3")
    assert ds.attention == "mla" and ds.n_dense_layers == 3
    assert ds.total_params() / 1e9 == pytest.approx(671, rel=0.002)  # MTP module excluded
    assert get_preset("llama-3.2-1b").tied_embeddings


def test_2025_family_features():
    scout, maverick = get_preset("llama-4-scout"), get_preset("llama-4-maverick")
    assert (scout.n_experts, scout.n_active_experts, scout.n_shared_experts, scout.n_dense_layers) == (16, 1, 1, 0)
    # Maverick alternates 24 dense layers with 24 MoE layers of 128 experts; both activate ~17B.
    assert (maverick.n_experts, maverick.n_dense_layers) == (128, 24)
    assert scout.active_params() / 1e9 == pytest.approx(17.2, abs=0.1)
    assert maverick.active_params() / 1e9 == pytest.approx(17.2, abs=0.1)
    assert maverick.total_params() / 1e9 == pytest.approx(400.7, abs=0.1)  # text backbone, vision encoder excluded
    glm = get_preset("glm-4.5")
    assert glm.qkv_bias and glm.n_dense_layers == 3 and glm.n_shared_experts == 1
    assert (get_preset("glm-4.5-air").n_experts, get_preset("glm-4.5-air").expert_ffn_size) == (128, 1408)
    for pid in ("gemma-3-1b", "gemma-3-4b", "gemma-3-12b", "gemma-3-27b"):
        g = get_preset(pid)
        # Interleaved 5:1 local/global attention: a single window would understate the global layers' KV.
        assert g.tied_embeddings and g.sliding_window is None, pid
    assert get_preset("gemma-3-27b").head_dim == 128 and get_preset("gemma-3-12b").head_dim == 256
    assert [get_preset(p).tied_embeddings for p in ("qwen3-0.6b", "qwen3-1.7b", "qwen3-4b", "qwen3-14b")] == [
        True, True, True, False]
    assert get_preset("olmo-2-7b").attention == "mha" and get_preset("olmo-2-32b").attention == "gqa"
    assert get_preset("phi-3.5-moe").n_active_experts == 2 and get_preset("phi-3.5-moe").qkv_bias
    # hidden 5120 but 32 heads of 128: the head dimension is not hidden / heads.
    ms = get_preset("mistral-small-3")
    assert ms.head_dim * ms.n_heads == 4096 != ms.hidden_size
    assert get_preset("deepseek-r1").native_precision == "fp8"
    # Apertus' xIELU MLP has no gate (two matrices); ERNIE-4.5-300B keeps 3 dense layers and no shared expert.
    assert not get_preset("apertus-8b").gated_ffn
    ernie = get_preset("ernie-4.5-300b-a47b")
    assert (ernie.n_dense_layers, ernie.n_shared_experts, ernie.n_moe_layers) == (3, 0, 51)
    assert get_preset("hunyuan-a13b").n_shared_experts == 1 and get_preset("hunyuan-a13b").n_dense_layers == 0


def test_local_attention_sinks_and_moe_interval_presets():
    # (window, local layers) as each config.json's layer pattern gives them
    expected = {"gemma-2-2b": (4096, 13), "gemma-2-9b": (4096, 21), "gemma-2-27b": (4096, 23),
                "gemma-3-270m": (512, 15), "gemma-3-1b": (512, 22), "gemma-3-4b": (1024, 29),
                "gemma-3-12b": (1024, 40), "gemma-3-27b": (1024, 52), "gpt-oss-20b": (128, 12),
                "gpt-oss-120b": (128, 18), "llama-4-scout": (8192, 36), "llama-4-maverick": (8192, 36),
                "olmo-3-7b": (4096, 24), "olmo-3-32b": (4096, 48)}
    for pid, pair in expected.items():
        spec = get_preset(pid)
        assert (spec.local_attention_window, spec.n_local_attention_layers) == pair, pid
        assert spec.n_global_attention_layers == spec.n_layers - pair[1]
    assert get_preset("mistral-7b").n_global_attention_layers == 0
    assert get_preset("llama-3.1-8b").n_global_attention_layers == 32
    assert get_preset("gpt-oss-120b").attention_sinks and not get_preset("llama-3.1-8b").attention_sinks
    mav = get_preset("llama-4-maverick")
    assert mav.moe_layer_step == 2 and sum(mav.moe_layer_mask()) == mav.n_moe_layers == 24
    ds = get_preset("deepseek-v3")
    assert ds.moe_layer_mask()[:4] == (False, False, False, True) and sum(ds.moe_layer_mask()) == 58
    with pytest.raises(ValueError):  # an interval that contradicts the dense count is refused
        mav.model_validate({**mav.model_dump(), "n_dense_layers": 10})
    with pytest.raises(ValueError):  # a window without its layer count (or the reverse)
        mav.model_validate({**mav.model_dump(), "n_local_attention_layers": 0})


def test_2025_presets_carry_their_config_source():
    for pid in ("llama-4-scout", "llama-4-maverick", "qwen3-0.6b", "qwen3-14b", "glm-4.5", "glm-4.5-air",
                "gemma-3-4b", "phi-4", "phi-3.5-moe", "mistral-small-3", "mistral-large-2", "granite-3.3-8b",
                "olmo-2-32b", "qwen3-coder-480b-a35b", "minimax-m2", "gemma-3-270m", "olmo-2-1b", "smollm3-3b",
                "olmo-3-7b", "olmo-3-32b", "apertus-8b", "hunyuan-a13b", "ernie-4.5-300b-a47b"):
        rec = RECORDS[pid]
        assert f"https://huggingface.co/{rec['hf_id']}/blob/main/config.json" in rec["source"], pid


@pytest.mark.parametrize("spelling, pid", [
    ("Llama-3.1-70B", "llama-3.1-70b"), ("llama3.1-70b", "llama-3.1-70b"), ("meta-llama/Llama-3.1-70B", "llama-3.1-70b"),
    ("meta-llama/Meta-Llama-3.1-70B-Instruct", "llama-3.1-70b"), ("LLAMA_3.1_8B", "llama-3.1-8b"),
    ("Llama-2-70B-chat", "llama-2-70b"), ("Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b"), ("google/gemma-2-27b-it", "gemma-2-27b"),
    ("DeepSeek-R1", "deepseek-v3"), ("Mixtral-8x7B", "mixtral-8x7b"), ("LLaMA-33B", "llama-33b"), ("Pythia-1.4B", "pythia-1.4b"),
    ("GPT-3-175B", "gpt-3-175b"), ("TinyLlama-1.1B", "tinyllama-1.1b"), ("Kimi-K2.5", "kimi-k2-thinking"),
    ("moonshotai/Kimi-K2-Thinking", "kimi-k2-thinking"), ("moonshotai/Kimi-K2-Instruct-0905", "kimi-k2"),
    ("Qwen/Qwen3-235B-A22B-Thinking-2507", "qwen3-235b-a22b"),
    ("Llama-3.3-70B-Instruct", "llama-3.3-70b"), ("mistralai/Mistral-Nemo-Instruct-2407", "mistral-nemo-12b"),
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "llama-4-scout"), ("Llama-4-Maverick", "llama-4-maverick"),
    ("meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8", "llama-4-maverick"), ("Qwen/Qwen3-4B", "qwen3-4b"),
    ("Qwen3-0.6B", "qwen3-0.6b"), ("zai-org/GLM-4.5-Air", "glm-4.5-air"), ("GLM-4.5", "glm-4.5"),
    ("google/gemma-3-27b-it", "gemma-3-27b"), ("gemma-3-1b-it", "gemma-3-1b"), ("microsoft/phi-4", "phi-4"),
    ("Phi-4-mini-instruct", "phi-4-mini"), ("microsoft/Phi-3.5-MoE-instruct", "phi-3.5-moe"),
    ("mistralai/Mistral-Small-24B-Instruct-2501", "mistral-small-3"),
    ("Mistral-Large-Instruct-2411", "mistral-large-2"),
    ("ibm-granite/granite-3.3-8b-instruct", "granite-3.3-8b"), ("allenai/OLMo-2-0325-32B-Instruct", "olmo-2-32b"),
    ("OLMo-2-7B", "olmo-2-7b"), ("deepseek-ai/DeepSeek-R1-0528", "deepseek-v3"),
    ("Qwen/Qwen3-Coder-480B-A35B-Instruct", "qwen3-coder-480b-a35b"), ("MiniMaxAI/MiniMax-M2", "minimax-m2"),
    ("google/gemma-3-270m-it", "gemma-3-270m"), ("allenai/OLMo-2-0425-1B-Instruct", "olmo-2-1b"),
    ("HuggingFaceTB/SmolLM3-3B", "smollm3-3b"), ("deepseek-r1", "deepseek-v3"),
    ("allenai/Olmo-3-7B-Instruct", "olmo-3-7b"), ("allenai/Olmo-3.1-32B-Think", "olmo-3-32b"),
    ("swiss-ai/Apertus-8B-Instruct-2509", "apertus-8b"), ("tencent/Hunyuan-A13B-Instruct", "hunyuan-a13b"),
    ("baidu/ERNIE-4.5-300B-A47B-PT", "ernie-4.5-300b-a47b"), ("deepseek-ai/DeepSeek-V3.2-Exp", "deepseek-v3.2"), ("DeepSeek-V3.2", "deepseek-v3.2"),
    ("deepseek-ai/DeepSeek-V3.1", "deepseek-v3"), ("nvidia/Llama-3.1-Nemotron-70B-Instruct-HF", "llama-3.1-70b"),
    ("zai-org/GLM-4.6", "glm-4.5"),
])
def test_forgiving_names(spelling, pid):
    assert get_preset(spelling).name == pid
    assert resolve_model(spelling).name == pid


def test_every_alias_resolves_to_its_own_preset():
    for r in preset_records():
        for name in [r["id"], r["display_name"], r.get("hf_id"), *r["aliases"]]:
            if name:
                assert get_preset(name).name == r["id"], name


@pytest.mark.parametrize("bad", ["llama-4-70b", "gpt5", "", "   ", "qwen9-7b"])
def test_unknown_names_are_usage_errors_with_suggestions(bad):
    with pytest.raises(UsageError) as ei:
        resolve_model(bad)
    assert "\n" not in str(ei.value)
    if bad.strip():
        assert isinstance(ei.value, UnknownNameError)
        assert ei.value.suggestions


def test_unknown_name_suggests_the_family():
    with pytest.raises(UnknownNameError) as ei:
        get_preset("llama-3.1-7b")
    assert any(s.startswith("llama-3.1") for s in ei.value.suggestions)


def test_presets_are_cached_and_frozen():
    a, b = get_preset("llama-3.1-8b"), get_preset("Llama-3.1-8B")
    assert a is b
    with pytest.raises(Exception):
        a.n_layers = 1  # type: ignore[misc]
    assert math.isfinite(a.total_params())
