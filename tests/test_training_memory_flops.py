"""Training FLOPs and memory against published worked values (formulas.md §1-2)."""
from __future__ import annotations

import pytest

from gpuplan.models.spec import ModelSpec
from gpuplan.perf.training_flops import model_flops_per_token, recompute_factor
from gpuplan.perf.training_memory import GIB, memory_breakdown_bytes
from gpuplan.perf.training_shape import model_shape
from gpuplan.perf.workload import make_workload


def gpt(h, a, L, vocab=51200):
    return ModelSpec(name=f"gpt-{h}", n_layers=L, hidden_size=h, n_heads=a, n_kv_heads=a, head_dim=h // a,
                     ffn_size=4 * h, gated_ffn=False, vocab_size=vocab, attention="mha", max_seq_len=2048)


# Korthikanti et al. 2022 Fig. 1 (A100 80 GB, GiB per GPU): model states (18 B/param), activations
# without recompute (TP, no SP) and with SP + selective recompute. (h, a, L, t, p, b, v, B).
KORTHIKANTI = [
    ((6144, 64, 48, 8, 1, 4, 1, 4), 45.6, 59.3, 9.6),
    ((20480, 128, 105, 8, 35, 1, 3, 280), 31.6, 114.0, 23.1),
    ((25600, 160, 128, 8, 64, 1, 1, 512), 33.0, 131.3, 26.6),
]


@pytest.mark.parametrize("cfg,states_gib,act_none_gib,act_sel_gib", KORTHIKANTI)
def test_korthikanti_activation_and_state_memory(cfg, states_gib, act_none_gib, act_sel_gib):
    h, a, L, t, p, b, v, B = cfg
    shape = model_shape(gpt(h, a, L))
    acts = {}
    for rc, sp in ((0, False), (1, True)):
        wl = make_workload(tokens=1e12, seq_len=2048, global_batch=B, fp32_grads=True, flash_attention=False,
                           sequence_parallel=sp)
        m = memory_breakdown_bytes(shape, wl, t, p, 1, 1, 1, b, rc, 0, v)
        acts[rc] = float(m["activations"]) / GIB
        states = float(m["weights"] + m["gradients"] + m["optimizer"]) / GIB
    assert acts[0] == pytest.approx(act_none_gib, rel=0.02)
    assert acts[1] == pytest.approx(act_sel_gib, rel=0.02)
    # Korthikanti leaves the embedding out; the first pipeline stage holds it (V·h/t extra).
    assert states == pytest.approx(states_gib, rel=0.10)
    assert states >= states_gib * 0.99


def test_bytes_per_param_by_zero_stage():
    """16 B/param mixed-precision Adam; ZeRO-1/2/3 = 4+12/d, 2+14/d, 16/d; fp32 grads 18."""
    shape = model_shape(gpt(4096, 32, 32))
    d = 8
    per_param = {}
    for fp32 in (False, True):
        wl = make_workload(tokens=1e12, seq_len=2048, fp32_grads=fp32)
        for z in range(4):
            m = memory_breakdown_bytes(shape, wl, 1, 1, d, 1, 1, 1, 0, z, 1)
            per_param[(fp32, z)] = float(m["weights"] + m["gradients"] + m["optimizer"]) / shape.total_params
    assert per_param[(False, 0)] == pytest.approx(16)
    assert per_param[(True, 0)] == pytest.approx(18)
    assert per_param[(False, 1)] == pytest.approx(4 + 12 / d)
    assert per_param[(False, 2)] == pytest.approx(2 + 14 / d)
    assert per_param[(False, 3)] == pytest.approx(16 / d)


def test_lora_and_qlora_base_bytes():
    shape = model_shape(gpt(4096, 32, 32))
    n = shape.total_params
    out = {}
    for method in ("lora", "qlora"):
        wl = make_workload(kind="finetune", method=method, tokens=1e9, seq_len=2048, lora_rank=16)
        m = memory_breakdown_bytes(shape, wl, 1, 1, 1, 1, 1, 1, 0, 0, 1)
        out[method] = float(m["weights"]) / n
        adapters = shape.adapter_params(16, "all")
        assert float(m["optimizer"]) == pytest.approx(12 * adapters)
    assert 1.95 < out["lora"] < 2.05
    assert 0.55 < out["qlora"] < 0.75  # NF4 layers + bf16 embeddings


def test_activations_shrink_with_tp_cp_and_recompute():
    shape = model_shape(gpt(8192, 64, 80))
    wl = make_workload(tokens=1e12, seq_len=8192)
    base = lambda t, c, rc: float(memory_breakdown_bytes(shape, wl, t, 1, 1, c, 1, 1, rc, 1, 1)["activations"])  # noqa
    assert base(8, 1, 0) == pytest.approx(base(1, 1, 0) / 8, rel=1e-9)
    assert base(1, 4, 0) == pytest.approx(base(1, 1, 0) / 4, rel=1e-9)
    assert base(1, 1, 2) < base(1, 1, 1) < base(1, 1, 0)


def test_pipeline_first_stage_holds_about_L_layers():
    shape = model_shape(gpt(8192, 64, 64))
    wl = make_workload(tokens=1e12, seq_len=4096, global_batch=512)
    a1 = float(memory_breakdown_bytes(shape, wl, 8, 1, 1, 1, 1, 1, 0, 1, 1)["activations"])
    a8 = float(memory_breakdown_bytes(shape, wl, 8, 8, 1, 1, 1, 1, 0, 1, 1)["activations"])
    a8v = float(memory_breakdown_bytes(shape, wl, 8, 8, 1, 1, 1, 1, 0, 1, 2)["activations"])
    assert a8 == pytest.approx(a1, rel=1e-9)
    assert a8v == pytest.approx(a1 * (1 + 7 / 16), rel=1e-9)


def test_flops_conventions_and_recompute():
    spec = gpt(12288, 96, 96)
    shape = model_shape(spec)
    s = 2048
    n = shape.matmul_active_params
    causal = model_flops_per_token(shape, s, attention="causal")
    full = model_flops_per_token(shape, s, attention="full")
    none = model_flops_per_token(shape, s, attention="none")
    assert none == pytest.approx(6 * n)
    assert full - none == pytest.approx(12 * 96 * 12288 * s)  # PaLM: 12·L·h·s
    assert causal - none == pytest.approx((full - none) / 2)
    assert recompute_factor(shape, s, "full", attention="none") == pytest.approx(4 / 3)
    lora = model_flops_per_token(shape, s, method="lora", attention="none", lora_rank=8)
    assert lora == pytest.approx(4 * n + 6 * shape.adapter_params(8, "all"))
    # Megatron (Narayanan eq. 3): 72·B·s·L·h²·(1 + s/6h + V/12Lh) per step, non-causal, no recompute.
    mega = 72 * s * 96 * 12288**2 * (1 + s / (6 * 12288) + 51200 / (12 * 96 * 12288))
    assert full * s == pytest.approx(mega, rel=0.01)


def test_moe_flops_use_active_params():
    from gpuplan.models import resolve_model

    m = resolve_model("mixtral-8x7b")
    shape = model_shape(m)
    f = model_flops_per_token(shape, 4096, attention="none")
    assert f == pytest.approx(6 * m.non_embedding_active_params())
    assert f < 6 * m.total_params() * 0.35


def test_hybrid_linear_attention_pays_softmax_attention_on_its_kv_layers_only():
    """Qwen3-Next: softmax attention on 12 of 48 layers grows with the sequence; the 36 Gated DeltaNet layers cost a
    fixed amount per token, whatever the sequence."""
    import json
    from pathlib import Path

    from gpuplan.models import model_from_config
    from gpuplan.perf.training_flops import attention_forward_flops_per_token

    cfg = json.loads((Path(__file__).parent / "fixtures" / "configs" / "qwen3-next-80b-a3b.json").read_text())
    shape = model_shape(model_from_config(cfg))
    assert (shape.n_linear_layers, shape.n_kv_layers) == (36, 12)
    per_ctx = 12 * 2.0 * 16 * (256 + 256)
    linear = 36 * 32 * (2 * 64 * 256 + 4 * 128 * 128)
    assert shape.linear_flops_per_token == linear
    for s in (4096, 65536):
        assert attention_forward_flops_per_token(shape, s) == pytest.approx(per_ctx * s / 2 + linear)
    assert attention_forward_flops_per_token(shape, 4096, "none") == 0.0
