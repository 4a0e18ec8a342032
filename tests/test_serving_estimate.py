"""Serving estimator: KV cache, memory, fit/not-fit, operating points and hostile inputs."""
from __future__ import annotations

import math

import pytest

from gpuplan.errors import UnknownNameError, UsageError
from gpuplan.perf.inference_estimate import estimate_serving
from gpuplan.perf.inference_validation import validation_models


@pytest.fixture(scope="module")
def models():
    return validation_models()


def test_kv_per_token_gqa_and_mla(models):
    # formulas.md §4.1: Llama-3.1-8B 128 KiB BF16; DeepSeek-V3 MLA 61·(512+64)·2 = 68.6 KiB.
    e = estimate_serving(models["llama-3.1-8b"], "H100", input_len=2000, output_len=100)
    assert e.kv_bytes_per_token == 32 * 8 * 128 * 2 * 2
    d = estimate_serving(models["deepseek-v3"], "H200", n_gpus=8, precision="fp8", kv_precision="bf16",
                         input_len=2000, output_len=100)
    assert d.kv_bytes_per_token == 61 * (512 + 64) * 2


def test_llama_8b_h100_kv_capacity_near_formula_example(models):
    # formulas.md §4.2 derives ≈410k tokens with decimal GB (72 − 16 − 2 GB). An H100 has 80 GiB
    # (CUDA reports 79.2 GiB), which adds ≈ 7 %; vLLM logs ≈ 440-450k. Accept 400k-470k and
    # check the working: (0.9·80 GiB − weights − runtime) / 128 KiB.
    e = estimate_serving(models["llama-3.1-8b"], "H100", input_len=2000, output_len=2000)
    assert 400_000 <= e.kv_cache_tokens <= 470_000
    b = e.memory_breakdown_gb
    expected = (0.9 * 80 * 2**30 - b["weights"] * 1e9 - b["runtime_and_activations"] * 1e9) / 131072
    assert e.kv_cache_tokens == pytest.approx(expected, rel=0.001)
    assert b["weights"] == pytest.approx(16.06, rel=0.01)
    # ≈ 200 concurrent 2k-token sequences (formulas.md): here 4k tokens each at full length.
    assert 95 <= e.max_concurrency_full_length <= 115


def test_fp8_kv_doubles_tokens(models):
    a = estimate_serving(models["llama-3.1-8b"], "H100", input_len=1000, output_len=1000)
    b = estimate_serving(models["llama-3.1-8b"], "H100", kv_precision="fp8", input_len=1000, output_len=1000)
    assert b.kv_cache_tokens == pytest.approx(2 * a.kv_cache_tokens, rel=0.01)


def test_mla_latent_replicated_under_tp_unless_dp_attention(models):
    tp = estimate_serving(models["deepseek-v3"], "H200", n_gpus=8, precision="fp8", input_len=2000, output_len=500)
    dp = estimate_serving(models["deepseek-v3"], "H200", n_gpus=8, precision="fp8", input_len=2000, output_len=500,
                          dp_attention=True)
    assert tp.assumptions["kv_shards_per_token"] == 1 and dp.assumptions["kv_shards_per_token"] == 8
    # dp attention replicates attention weights (less KV room per GPU) but shards KV 8 ways.
    assert dp.max_concurrency > 3 * tp.max_concurrency


def test_not_fit_says_how_much_and_what_to_try(models):
    e = estimate_serving(models["llama-3.3-70b"], "H100", n_gpus=1, input_len=1000, output_len=1000)
    assert not e.fits and e.output_tokens_per_s == 0
    assert e.shortfall_gb > 50
    assert "needs" in e.message and "TP1" in e.message and "80 GiB" in e.message
    assert "--gpus 2" in e.message and "--precision fp8" in e.message


def test_smallest_tp_that_fits_is_chosen(models):
    assert estimate_serving(models["llama-3.1-8b"], "H100", input_len=1000, output_len=1000).tp == 1
    assert estimate_serving(models["llama-3.3-70b"], "H100", input_len=1000, output_len=1000).tp == 2
    assert estimate_serving(models["llama-3.3-70b"], "H100", precision="fp8", input_len=1000, output_len=1000).tp == 1
    big = estimate_serving(models["llama-3.1-405b"], "A100-40GB", input_len=1000, output_len=1000)
    assert big.tp == 8 and not big.fits


def test_throughput_rises_and_latency_grows_with_concurrency(models):
    m = models["llama-3.1-8b"]
    res = [estimate_serving(m, "H100", input_len=1000, output_len=500, concurrency=c) for c in (1, 8, 64, 200)]
    thr = [r.output_tokens_per_s for r in res]
    tpot = [r.tpot_ms for r in res]
    assert thr == sorted(thr) and tpot == sorted(tpot)
    # Batch 1 is memory-bound: TPOT ≈ weights / (BW·η_bw·latency factor) (CUDA-graph decode, no engine factor)
    # + the per-layer kernel floor of 32 layers + the per-step overhead.
    a = res[0].assumptions
    floor_ms = (16.06e9 / (3.35e12 * a["eta_bw"] * a["latency_factor"]) + 32 * a["layer_overhead_us"] * 1e-6
                + a["step_overhead_ms"] * 1e-3) * 1e3
    assert res[0].tpot_ms == pytest.approx(floor_ms, rel=0.15)
    assert res[0].decode_bound == "memory"


def test_latency_targets_pick_highest_throughput_that_meets_them(models):
    m = models["llama-3.1-8b"]
    free = estimate_serving(m, "H100", input_len=1000, output_len=500)
    cap = round(free.tpot_ms * 0.6, 1)  # a target the max-throughput point misses
    capped = estimate_serving(m, "H100", input_len=1000, output_len=500, max_tpot_ms=cap)
    assert capped.meets_targets and capped.tpot_ms <= cap
    assert capped.output_tokens_per_s < free.output_tokens_per_s
    one_more = estimate_serving(m, "H100", input_len=1000, output_len=500, concurrency=int(capped.concurrency) + 1)
    assert one_more.tpot_ms > cap
    never = estimate_serving(m, "H100", input_len=1000, output_len=500, max_tpot_ms=0.5)
    assert never.meets_targets is False


def test_concurrency_beyond_capacity_queues(models):
    m = models["llama-3.1-8b"]
    e = estimate_serving(m, "H100", input_len=2000, output_len=2000, concurrency=5000)
    assert e.running_concurrency == e.max_concurrency < 5000
    assert any("queue" in w for w in e.warnings)
    at_cap = estimate_serving(m, "H100", input_len=2000, output_len=2000, concurrency=e.max_concurrency)
    assert e.output_tokens_per_s == pytest.approx(at_cap.output_tokens_per_s)
    assert e.ttft_ms > 10 * at_cap.ttft_ms


def test_replicas_scale_throughput(models):
    m = models["llama-3.1-8b"]
    one = estimate_serving(m, "H100", n_gpus=1, input_len=1000, output_len=1000)
    four = estimate_serving(m, "H100", n_gpus=4, tp=1, input_len=1000, output_len=1000)
    assert four.replicas == 4 and four.output_tokens_per_s == pytest.approx(4 * one.output_tokens_per_s)
    assert four.output_tokens_per_s_per_gpu == pytest.approx(one.output_tokens_per_s_per_gpu)


def test_tp_pays_a_communication_penalty(models):
    m = models["llama-3.1-8b"]
    tp1 = estimate_serving(m, "H100", n_gpus=8, tp=1, input_len=1000, output_len=1000)
    tp8 = estimate_serving(m, "H100", n_gpus=8, tp=8, input_len=1000, output_len=1000)
    assert tp8.output_tokens_per_s < tp1.output_tokens_per_s
    pcie = estimate_serving(m, "L40S", n_gpus=2, tp=2, input_len=1000, output_len=100, concurrency=1)
    no_comm = estimate_serving(m, "L40S", n_gpus=2, tp=2, input_len=1000, output_len=100, concurrency=1,
                               allreduce_latency_us=1e-3)
    assert pcie.tpot_ms > no_comm.tpot_ms * 1.03  # 64 PCIe all-reduces at ~3x the NVLink latency


def test_moe_reads_only_touched_experts(models):
    from gpuplan.perf.inference_estimate import _Replica
    from gpuplan.perf import inference_memory as mem
    from gpuplan.perf.engines import fitted_efficiency, resolve_engine
    from gpuplan.perf.inference_precision import weight_format
    from gpuplan.catalog.gpus import get_gpu

    import numpy as np

    shape = mem.model_shape(models["deepseek-v3"])
    rep = _Replica(shape, get_gpu("H200"), 8, weight_format("fp8"), "bf16", resolve_engine("vllm"),
                   fitted_efficiency(), 0.9, 1024, False)
    touched = rep.steps.experts_touched(np.array([1.0, 8.0, 10_000.0]))
    assert touched[0] == pytest.approx(8.0)
    assert touched[1] == pytest.approx(256 * (1 - (1 - 8 / 256) ** 8))
    assert touched[2] == pytest.approx(256, rel=1e-6)
    # Active, not total, parameters drive decode FLOPs: 37.5B of 671B.
    assert shape.matmul_params < 0.06 * shape.total_params + 1e9


def test_precision_bytes_and_support(models):
    m = models["llama-3.3-70b"]
    kw = dict(input_len=1000, output_len=1000, n_gpus=2)
    w = {p: estimate_serving(m, "H100", precision=p, **kw).memory_breakdown_gb["weights"] for p in ("bf16", "fp8", "int4")}
    assert w["fp8"] < 0.55 * w["bf16"] and w["int4"] < 0.6 * w["fp8"]
    fp4 = estimate_serving(m, "B200", precision="nvfp4", n_gpus=1, input_len=1000, output_len=1000)
    assert fp4.precision == "fp4" and fp4.fits
    with pytest.raises(UsageError, match="no fp8 tensor cores"):
        estimate_serving(m, "A100-80GB", precision="fp8", **kw)
    with pytest.raises(UsageError, match="fp4"):
        estimate_serving(m, "H100", precision="fp4", **kw)
    assert estimate_serving(m, "A100-80GB", precision="awq", **kw).fits  # weight-only int4 runs on bf16 units
    fp8 = estimate_serving(m, "H100", precision="fp8", **kw)
    bf16 = estimate_serving(m, "H100", precision="bf16", **kw)
    assert fp8.output_tokens_per_s > 1.5 * bf16.output_tokens_per_s


def test_engine_presets_differ_in_capacity_rules(models):
    m = models["llama-3.1-8b"]
    v = estimate_serving(m, "H100", engine="vllm", input_len=1000, output_len=1000)
    t = estimate_serving(m, "H100", engine="TensorRT-LLM", input_len=1000, output_len=1000)
    assert t.engine == "trtllm" and t.assumptions["kv_reserve"] == "maximum"
    assert v.assumptions["kv_reserve"] == "average"
    assert v.assumptions["memory_fraction_of"] == "total" and t.assumptions["memory_fraction_of"] == "free"




def test_vllm_batch_defaults_follow_the_gpu_as_vllm_picks_them(models):
    """vLLM V1 gives a GPU under 70 GiB, or any A100, 256 sequences and 2048 tokens per step; larger ones 1024 and
    8192 (an A800 is not named A100). The cap binds where the KV cache would hold more: an 8B model with 1000-token
    requests on an 80 GB A100 stops at 256 running requests."""
    m = models["llama-3.1-8b"]
    caps = {g: estimate_serving(m, g, engine="vllm", input_len=500, output_len=500).assumptions
            for g in ("A100-80GB-SXM", "A100-40GB-SXM", "L40S", "A800", "H100", "MI300X")}
    assert {g: (a["max_num_seqs"], a["max_num_batched_tokens"]) for g, a in caps.items()} == {
        "A100-80GB-SXM": (256, 2048), "A100-40GB-SXM": (256, 2048), "L40S": (256, 2048),
        "A800": (1024, 8192), "H100": (1024, 8192), "MI300X": (1024, 8192)}
    a100 = estimate_serving(m, "A100-80GB-SXM", engine="vllm", input_len=500, output_len=500)
    assert a100.max_concurrency == 256 and a100.limited_by == "max_num_seqs"
    wider = estimate_serving(m, "A100-80GB-SXM", engine="vllm", input_len=500, output_len=500, max_num_seqs=1024)
    assert wider.max_concurrency > 256 and wider.output_tokens_per_s > a100.output_tokens_per_s
    # TensorRT-LLM keeps its own defaults on every GPU.
    t = estimate_serving(m, "A100-80GB-SXM", engine="trtllm", input_len=500, output_len=500).assumptions
    assert (t["max_num_seqs"], t["max_num_batched_tokens"]) == (2048, 8192)
@pytest.mark.parametrize("kw, match", [
    (dict(input_len=0), "input_len"),
    (dict(input_len=-5), "input_len"),
    (dict(input_len=float("nan")), "input_len"),
    (dict(output_len=float("inf")), "output_len"),
    (dict(input_len=1e30), "input_len"),
    (dict(output_len=2.5), "output_len"),
    (dict(concurrency=0), "concurrency"),
    (dict(concurrency=-3), "concurrency"),
    (dict(max_ttft_ms=0), "max_ttft_ms"),
    (dict(max_tpot_ms=float("nan")), "max_tpot_ms"),
    (dict(n_gpus=0), "n_gpus"),
    (dict(n_gpus=4, tp=3), "multiple"),
    (dict(tp=3), "does not divide"),
    (dict(eta_bw=1.5), "eta_bw"),
    (dict(eta_c=-0.1), "eta_c"),
    (dict(memory_fraction=0), "memory_fraction"),
    (dict(precision="fp3"), "unknown precision"),
    (dict(kv_precision="fp2"), "unknown KV precision"),
    (dict(engine="ollama"), "unknown engine"),
    (dict(fixed_lengths=True), "closed-loop clients: give concurrency"),
])
def test_hostile_inputs_raise_usage_error(models, kw, match):
    args = dict(input_len=1000, output_len=100)
    args.update(kw)
    with pytest.raises(UsageError, match=match):
        estimate_serving(models["llama-3.1-8b"], "H100", **args)


def test_unknown_gpu_lists_close_names(models):
    with pytest.raises(UnknownNameError, match="H100"):
        estimate_serving(models["llama-3.1-8b"], "H1000", input_len=10, output_len=10)


def test_result_is_finite_and_explained(models):
    e = estimate_serving(models["deepseek-v3"], "H200", n_gpus=8, precision="fp8", input_len=4000, output_len=1000)
    for k in ("output_tokens_per_s", "output_tokens_per_s_per_gpu", "ttft_ms", "tpot_ms", "memory_per_gpu_gb"):
        v = getattr(e, k)
        assert v > 0 and math.isfinite(v)
    for k in ("eta_bw", "eta_c", "engine", "weight_precision", "kv_precision", "memory_fraction", "tp"):
        assert k in e.assumptions
    assert e.memory_per_gpu_gb <= e.memory_breakdown_gb["device_total"]


def test_short_outputs_still_pay_for_every_prompt(models):
    """With one output token the work is all prefill: throughput can never beat the GPU's peak over
    the prompt FLOPs (it reported 11,000 requests/s for 500-token prompts on one H100 before)."""
    m = models["llama-3.1-8b"]
    e = estimate_serving(m, "H100", input_len=500, output_len=1)
    peak_rps = 989.5e12 / (2 * m.active_params() * 500)
    assert 0 < e.requests_per_s < peak_rps
    longer = estimate_serving(m, "H100", input_len=500, output_len=2)
    assert e.requests_per_s == pytest.approx(longer.requests_per_s, rel=0.2)  # the prompt dominates both


# ---------------------------------------------------------------- issue 13: layouts and low-concurrency physics
def test_expert_parallel_layouts_move_moe_memory_and_throughput_the_right_way(models):
    m = models["deepseek-v3"]
    kw = dict(n_gpus=8, precision="fp8", input_len=2000, output_len=500)
    tp = estimate_serving(m, "H200", **kw)
    ep = estimate_serving(m, "H200", ep=8, **kw)
    dp = estimate_serving(m, "H200", dp_attention=True, **kw)
    # Whole experts on 1/8 of the GPUs hold the same bytes as experts sliced 8 ways.
    assert ep.memory_breakdown_gb["weights"] == pytest.approx(tp.memory_breakdown_gb["weights"], rel=1e-6)
    assert ep.assumptions["ep"] == 8 and tp.assumptions["ep"] == 1 and dp.assumptions["ep"] == 8
    # Attention data parallel replicates attention and dense weights: more weight bytes per GPU...
    assert dp.memory_breakdown_gb["weights"] > 1.05 * tp.memory_breakdown_gb["weights"]
    # ...but each GPU keeps only its own sequences' MLA latent, so far more requests fit and batch.
    assert dp.kv_cache_tokens > 3 * tp.kv_cache_tokens
    assert dp.output_tokens_per_s > 1.3 * tp.output_tokens_per_s
    # At one request the replicated weights are streamed by every GPU: attention-DP decodes slower.
    one_tp = estimate_serving(m, "H200", concurrency=1, **kw)
    one_dp = estimate_serving(m, "H200", concurrency=1, dp_attention=True, **kw)
    assert one_dp.tpot_ms > one_tp.tpot_ms


def test_expert_parallel_imbalance_and_grouped_gemm_efficiency(models):
    from gpuplan.catalog.gpus import get_gpu
    from gpuplan.perf import inference_memory as mem
    from gpuplan.perf.engines import fitted_efficiency, resolve_engine
    from gpuplan.perf.inference_estimate import _Replica
    from gpuplan.perf.inference_precision import weight_format

    import numpy as np

    shape = mem.model_shape(models["qwen3-30b-a3b"])
    args = (shape, get_gpu("H100"), 8, weight_format("fp8"), "fp8", resolve_engine("trtllm"), fitted_efficiency(), 0.9, 2048)
    ep = _Replica(*args, True, 8).steps
    t = np.array([1.0, 64.0, 16384.0])
    imb = ep.ep_imbalance(t)
    # A GPU holding 128/8 experts of popularity CV c carries a share with CV c/sqrt(16); the busiest of 8 sits
    # sqrt(2 ln 8) of those above the mean. Sampling noise fades with many tokens; that skew remains.
    hot = fitted_efficiency().ep_hot_excess * math.sqrt(8 / 128) * math.sqrt(2 * math.log(8))
    assert imb[0] > imb[1] > imb[2] > 1.0
    assert imb[2] == pytest.approx(1.0 + hot + math.sqrt(2 * math.log(8) / (16384 * 8 / 8)), rel=1e-9)
    eff = ep.grouped_gemm_efficiency(t)
    assert eff[0] < eff[1] < eff[2] < 1.0  # more tokens per expert, fuller grouped GEMMs


def test_ep_options_are_checked(models):
    with pytest.raises(UsageError, match="dense"):
        estimate_serving(models["llama-3.1-8b"], "H100", n_gpus=2, ep=2, input_len=100, output_len=10)
    with pytest.raises(UsageError, match="ep must be 1 or"):
        estimate_serving(models["deepseek-v3"], "H200", n_gpus=8, ep=4, precision="fp8", input_len=100, output_len=10)
    with pytest.raises(UsageError, match="attention data parallel"):
        estimate_serving(models["deepseek-v3"], "H200", n_gpus=8, ep=1, dp_attention=True, precision="fp8",
                         input_len=100, output_len=10)


def test_concurrency_one_tpot_does_not_carry_the_throughput_engine_factor(models):
    from dataclasses import replace

    from gpuplan.perf.engines import fitted_efficiency

    m = models["llama-3.1-70b"]
    base = fitted_efficiency()
    slow = replace(base, engine_factor={**base.engine_factor, "vllm": 0.3})
    kw = dict(n_gpus=4, precision="fp8", input_len=200, output_len=200, engine="vllm")
    one, one_slow = (estimate_serving(m, "H100", concurrency=1, efficiency=e, **kw) for e in (base, slow))
    big, big_slow = (estimate_serving(m, "H100", efficiency=e, **kw) for e in (base, slow))
    # The engine factor (fitted on max-throughput rows) barely moves concurrency-1 decode...
    assert one_slow.tpot_ms == pytest.approx(one.tpot_ms, rel=0.05)
    # ...while it does move max throughput.
    assert big_slow.output_tokens_per_s < 0.7 * big.output_tokens_per_s
    # Concurrency-1 TPOT is the weight stream plus per-layer floors and one-shot all-reduces, no more.
    w = 70.55e9 / 4 / (3.35e12 * base.eta_bw * base.latency_factor)
    floor = 80 * base.layer_overhead_us * 1e-6 + base.step_overhead_ms * 1e-3 + 160 * 3 * base.allreduce_latency_us * 1e-6
    assert w * 1e3 < one.tpot_ms < (w + floor) * 1e3 * 1.2


def test_one_shot_allreduce_for_small_messages(models):
    from gpuplan.catalog.gpus import get_gpu
    from gpuplan.perf import inference_memory as mem
    from gpuplan.perf.engines import fitted_efficiency, resolve_engine
    from gpuplan.perf.inference_estimate import _Replica
    from gpuplan.perf.inference_precision import weight_format

    import numpy as np

    shape = mem.model_shape(models["llama-3.1-70b"])
    eff = fitted_efficiency()
    s = _Replica(shape, get_gpu("H100"), 8, weight_format("fp8"), "fp8", resolve_engine("vllm"), eff, 0.9, 256,
                 False).steps
    small, large = s.allreduce_s(np.array([16e3, 256e6]))
    lat = eff.allreduce_latency_us * 1e-6
    # One decode token's activations: one-shot, the latency plus (g-1) small reads, mostly latency.
    assert small == pytest.approx(lat + 7 * 16e3 / s.link_bytes_s, rel=1e-6) and small < 1.2 * lat
    ring_bw = 2 * 7 / 8 * 256e6 / s.link_bytes_s
    assert large == pytest.approx(2 * lat + ring_bw, rel=1e-6)  # bandwidth-bound: two-shot wins


def test_static_batch_engine_prefills_the_whole_batch_first(models):
    m = models["llama-3.1-8b"]
    kw = dict(precision="fp8", input_len=2000, output_len=128, concurrency=256)
    static = estimate_serving(m, "Gaudi3", engine="optimum-habana", **kw)
    cont = estimate_serving(m, "Gaudi3", engine="vllm", **kw)
    assert static.assumptions["batching"] == "static" and cont.assumptions["batching"] == "continuous"
    # Every prompt of the batch is prefilled before the first token of any request.
    assert static.ttft_ms > 10 * cont.ttft_ms
    # Padded static shapes: a 2000-token prompt holds 2048 + 128 KV slots per request.
    assert static.memory_breakdown_gb["kv_in_use"] == pytest.approx(
        256 * 2176 * static.kv_bytes_per_token / 1e9, rel=1e-6)


def test_optimum_habana_fp8_keeps_its_kv_cache_in_fp8(models):
    # Intel's Gaudi 3 table (SynapseAI 1.18) ran Llama 3.1 8B fp8 at 128/2048 with a static batch of 768. INC's fp8
    # path stores the cache in fp8: 768 x 2176 padded tokens x 64 KiB = 110 GB; a bf16 cache would need 219 GB of 128.
    kw = dict(precision="fp8", input_len=128, output_len=2048, concurrency=768, engine="optimum-habana")
    fp8 = estimate_serving(models["llama-3.1-8b"], "Gaudi3", **kw)
    bf16 = estimate_serving(models["llama-3.1-8b"], "Gaudi3", kv_precision="bf16", **kw)
    assert fp8.kv_precision == "fp8" and fp8.max_concurrency >= 0.95 * 768
    assert bf16.max_concurrency < 0.55 * 768 and bf16.running_concurrency < 0.55 * 768
    # A bf16 model on the same engine keeps a bf16 cache.
    assert estimate_serving(models["llama-3.1-8b"], "Gaudi3", **{**kw, "precision": "bf16"}).kv_precision == "bf16"


def test_local_attention_layers_hold_only_their_window(models):
    from gpuplan.models.spec import ModelSpec

    base = models["llama-3.1-8b"]
    local = ModelSpec(**{**base.model_dump(), "name": "local-test", "local_attention_window": 1024,
                         "n_local_attention_layers": 24})
    kw = dict(precision="bf16", input_len=32000, output_len=1000)
    a = estimate_serving(base, "H100", **kw)
    b = estimate_serving(local, "H100", **kw)
    assert b.kv_cache_tokens == a.kv_cache_tokens  # same bytes per token...
    assert b.max_concurrency > 3 * a.max_concurrency  # ...but 24 of 32 layers keep 1k tokens, not 33k
    assert b.output_tokens_per_s > a.output_tokens_per_s


# ---------------------------------------------------------------- issue 13: MoE serving physics
def _steps(models, name, gpu, tp, precision, kv, engine="trtllm", dp=False, ep=1):
    from gpuplan.catalog.gpus import get_gpu
    from gpuplan.perf import inference_memory as mem
    from gpuplan.perf.engines import fitted_efficiency, resolve_engine
    from gpuplan.perf.inference_estimate import _Replica
    from gpuplan.perf.inference_precision import weight_format

    shape = mem.model_shape(models[name])
    return _Replica(shape, get_gpu(gpu), tp, weight_format(precision), kv, resolve_engine(engine),
                    fitted_efficiency(), 0.9, 2048, dp, ep)


def test_all_to_all_sends_a_token_once_per_destination_gpu(models):
    import numpy as np

    # Qwen3-30B-A3B routes each token to 8 of 128 experts. Over 2 GPUs nearly every token has an expert on the
    # other GPU, but it crosses once, not 8 x 1/2 = 4 times; over 8 GPUs it reaches 7(1 - (7/8)^8) = 4.6 others.
    two = _steps(models, "qwen3-30b-a3b", "H100", 2, "fp8", "fp8", dp=True, ep=2).steps
    eight = _steps(models, "qwen3-30b-a3b", "H100", 8, "fp8", "fp8", dp=True, ep=8).steps
    assert two.remote_gpus_per_token() == pytest.approx(1 - 0.5 ** 8)
    assert eight.remote_gpus_per_token() == pytest.approx(7 * (1 - (7 / 8) ** 8))
    # Top-1 routing (Llama-4 Maverick) sends a token to another GPU with probability (g-1)/g.
    mav = _steps(models, "llama-4-maverick", "H200", 8, "fp8", "fp8", dp=True, ep=8).steps
    assert mav.remote_gpus_per_token() == pytest.approx(7 / 8)
    # Across a rack-scale NVLink domain (GB200 NVL72: the engines' all-to-all kernels) the exchanged bytes follow:
    # 48 MoE layers x dispatch + combine of 2048-wide bf16 tokens.
    rack = _steps(models, "qwen3-30b-a3b", "GB200", 2, "fp8", "fp8", dp=True, ep=2).steps
    assert rack.moe_alltoall and not two.moe_alltoall
    tok = np.array([65536.0])
    lat = 2 * 48 * rack.allreduce_latency_s
    vol = 2 * 48 * 65536 / 2 * (1 - 0.5 ** 8) * 2048 * 2
    assert float(rack._comm_s(tok)[0]) == pytest.approx(lat + vol / rack.link_bytes_s, rel=1e-9)


def test_attention_dp_in_one_node_gathers_every_token(models):
    import numpy as np

    # In an 8-GPU NVLink node the engines all-gather the tokens (fp8: quantized before the gather) and
    # reduce-scatter the 16-bit expert outputs: each GPU receives the other 7 GPUs' share of both, whatever k.
    mav = _steps(models, "llama-4-maverick", "H200", 8, "fp8", "fp8", dp=True, ep=8).steps
    qwen = _steps(models, "qwen3-30b-a3b", "H200", 8, "fp8", "fp8", dp=True, ep=8).steps
    tok = np.array([8 * 4096.0])
    for st in (mav, qwen):
        s = st.shape
        vol = s.n_moe_layers * 4096 * 7 * s.hidden * (1.0 + 2.0)
        lat = s.n_moe_layers * 2 * st.allreduce_latency_s
        assert not st.moe_alltoall
        assert float(st._comm_s(tok)[0]) == pytest.approx(lat + vol / st.link_bytes_s, rel=1e-9)
    # Top-1 routing would send a token to 7/8 of a GPU each way (bf16 both ways: 3.5 hidden-widths of bytes); the
    # gather moves 7 x (1 + 2) = 21, six times as much. A 16-bit model gathers 2-byte tokens.
    a2a = 2 * (7 / 8) * 2
    assert 7 * (1.0 + 2.0) / a2a == pytest.approx(6.0)
    bf16 = _steps(models, "qwen3-30b-a3b", "H200", 8, "bf16", "bf16", dp=True, ep=8).steps
    assert bf16.dispatch_bytes == 2.0 and qwen.dispatch_bytes == 1.0


def test_expert_skew_matters_less_with_many_experts_per_gpu(models):
    import numpy as np

    many = _steps(models, "qwen3-30b-a3b", "H100", 8, "fp8", "fp8", dp=True, ep=8).steps  # 16 experts per GPU
    few = _steps(models, "mixtral-8x7b", "H100", 8, "fp8", "fp8", dp=True, ep=8).steps  # 1 expert per GPU
    t = np.array([1e6])
    assert 1.0 < many.ep_imbalance(t)[0] < few.ep_imbalance(t)[0] <= 8.0


def test_mla_prefills_decompressed_and_decodes_in_the_latent_space(models):
    from gpuplan.perf import inference_memory as mem

    s = mem.model_shape(models["deepseek-v3"])
    # 61 layers, 128 heads: decode scores over 512 + 64 latent dims and values over 512; prefill over the
    # decompressed 192-dim queries/keys and 128-dim values (3.4x fewer FLOPs per context token).
    assert s.attn_flops_per_ctx == 61 * 2 * 128 * (512 + 64 + 512)
    assert s.attn_flops_per_ctx_prefill == 61 * 2 * 128 * (192 + 128)
    g = mem.model_shape(models["llama-3.1-8b"])
    assert g.attn_flops_per_ctx_prefill == g.attn_flops_per_ctx == 32 * 4 * 32 * 128


def test_output_head_runs_for_sampled_tokens_only_at_bf16_rate(models):
    from dataclasses import replace

    import numpy as np

    s = _steps(models, "llama-3.1-8b", "H100", 1, "fp8", "fp8").steps
    headless = replace(s, shape=replace(s.shape, head_params=0.0, matmul_params=s.shape.matmul_params - s.shape.head_params))
    one = np.array([1.0])
    # A prefill-only step never runs the head...
    assert float(s.step_time_s(0 * one, 4096 * one, 500.0, 2048.0)[0]) == pytest.approx(
        float(headless.step_time_s(0 * one, 4096 * one, 500.0, 2048.0)[0]), rel=1e-12)
    # ...a compute-bound decode step runs it once per sequence, at the bf16 rate (the head stays 16-bit).
    d = float(s.step_time_s(4096 * one, 0 * one, 500.0, 0.0)[0] - headless.step_time_s(4096 * one, 0 * one, 500.0, 0.0)[0])
    assert d == pytest.approx(2 * 128256 * 4096 * 4096 / s.head_flops_s / s.engine_factor, rel=1e-6)
    assert s.head_flops_s < s.gemm_flops_s  # fp8 GEMMs for the body, bf16 for the head


def test_native_4bit_moe_checkpoint_keeps_non_expert_weights_16bit(models):
    from gpuplan.models import resolve_model
    from gpuplan.perf import inference_memory as mem

    oss = resolve_model("gpt-oss-120b")
    s = mem.model_shape(oss)
    assert s.experts_only_lowp and not mem.model_shape(models["qwen3-30b-a3b"]).experts_only_lowp
    e = estimate_serving(oss, "B200", precision="fp4", input_len=1000, output_len=1000)
    experts = s.routed_expert_params
    # MXFP4: one e8m0 scale per 32 weights (NVFP4 would carry one fp8 scale per 16)
    expect = ((s.total_params - s.embedding_params - experts) * 2.0 + experts * (0.5 + 1 / 32)
              + s.embedding_params * 2.0) / 1e9
    assert e.memory_breakdown_gb["weights"] == pytest.approx(expect, rel=1e-6)
    assert "16-bit" in e.assumptions["moe_experts"]
    # An 8-bit re-quantization is a different checkpoint: everything 1 byte.
    f8 = estimate_serving(oss, "H200", precision="fp8", input_len=1000, output_len=1000)
    assert "16-bit" not in f8.assumptions["moe_experts"]


def test_native_int4_moe_release_quantizes_only_the_experts():
    """Kimi-K2-Thinking (and K2.5 / K2.6) ship INT4 routed experts from quantization-aware training: served at their
    native precision by default, the non-expert weights 16-bit, about 560 GB in all where the FP8 Kimi-K2 is about
    1.03 TB."""
    from gpuplan.models import resolve_model
    from gpuplan.perf import inference_memory as mem
    from gpuplan.perf.inference_precision import weight_format
    from gpuplan.planner.requests import ServeEstimateRequest, estimate_serve

    k2t = resolve_model("moonshotai/Kimi-K2-Thinking")
    assert k2t.native_precision == "int4" and resolve_model("Kimi-K2.5").name == "kimi-k2-thinking"
    s = mem.model_shape(k2t)
    assert s.experts_only_lowp
    e = estimate_serve(ServeEstimateRequest(model="kimi-k2-thinking", gpu="H200", gpus=8))
    assert e.precision == "int4" and "native" in e.assumptions["precision_basis"]
    int4 = weight_format("int4").bytes_per_param
    experts = s.routed_expert_params
    expect = ((s.total_params - s.embedding_params - experts) * 2.0 + experts * int4 + s.embedding_params * 2.0) / 1e9
    assert e.memory_breakdown_gb["weights"] * 8 == pytest.approx(expect, rel=1e-6)
    assert 540 < expect < 600
    fp8 = estimate_serve(ServeEstimateRequest(model="kimi-k2", gpu="H200", gpus=8))
    assert fp8.precision == "fp8" and fp8.memory_breakdown_gb["weights"] * 8 > 1000
    # A user's int4 re-quantization of a 16-bit MoE (AWQ) quantizes every linear layer: no 16-bit remainder.
    assert not mem.model_shape(resolve_model("qwen3-30b-a3b")).experts_only_lowp


def test_deepseek_sparse_attention_reads_the_top_k_and_the_indexer_reads_everything():
    """DeepSeek-V3.2 is V3 plus sparse attention: MLA reads and scores at most 2,048 tokens per query, the indexer
    reads its 132-byte key of every cached token and scores it. Long contexts get cheaper; short ones do not."""
    from gpuplan.models import resolve_model
    from gpuplan.perf import inference_memory as mem

    v3, v32 = resolve_model("deepseek-v3"), resolve_model("deepseek-v3.2")
    s3, s32 = mem.model_shape(v3), mem.model_shape(v32)
    assert s32.attended_context(128_000) == 2048 and s32.kv_context(128_000) == 128_000  # the cache holds it all
    assert s32.attended_context(1000) == s3.attended_context(1000) == 1000
    assert s32.index_bytes_per_token == pytest.approx(61 * 132) and s3.index_bytes_per_token == 0
    assert s32.attn_flops_per_ctx_prefill == s32.attn_flops_per_ctx  # prefill in the latent (MQA) form too

    def served(name, ctx):
        return estimate_serving(resolve_model(name), "H200", n_gpus=8, precision="fp8", input_len=int(ctx),
                                output_len=16, concurrency=4)

    long3, long32 = served("deepseek-v3", 120_000), served("deepseek-v3.2", 120_000)
    assert long32.tpot_ms < 0.6 * long3.tpot_ms and long32.ttft_ms < 0.6 * long3.ttft_ms
    short3, short32 = served("deepseek-v3", 1000), served("deepseek-v3.2", 1000)
    assert short32.tpot_ms == pytest.approx(short3.tpot_ms, rel=0.05) and short32.tpot_ms >= short3.tpot_ms * 0.999
    # the indexer key makes each cached token bigger: fewer tokens fit
    assert long32.kv_bytes_per_token > long3.kv_bytes_per_token and long32.kv_cache_tokens < long3.kv_cache_tokens
    assert "2,048 tokens" in long32.assumptions["sparse_attention"] and long3.assumptions["sparse_attention"] is None


def test_gated_deltanet_hybrid_keeps_a_fixed_state_and_no_kv_on_its_linear_layers():
    """Qwen3-Next: 36 of 48 layers are Gated DeltaNet. Against the same model with softmax attention on every layer,
    long contexts fit more sequences and decode faster; the state (its share per GPU) is charged to every sequence."""
    import json
    from pathlib import Path

    from gpuplan.models import model_from_config
    from gpuplan.perf import inference_memory as mem

    cfg = json.loads((Path(__file__).parent / "fixtures" / "configs" / "qwen3-next-80b-a3b.json").read_text())
    hybrid = model_from_config(cfg, name="qwen3-next-80b-a3b")
    dense_attn = hybrid.model_copy(update={
        "n_linear_attention_layers": 0, "linear_num_key_heads": None, "linear_num_value_heads": None,
        "linear_key_head_dim": None, "linear_value_head_dim": None, "linear_conv_kernel_dim": None})
    s = mem.model_shape(hybrid)
    assert s.n_linear_layers == 36 and s.attn_flops_per_ctx == 12 * 4 * 16 * 256
    assert mem.model_shape(dense_attn).attn_flops_per_ctx == 48 * 4 * 16 * 256

    def served(model, isl, conc=None):
        return estimate_serving(model, "H200", n_gpus=4, precision="bf16", input_len=isl, output_len=1000,
                                concurrency=conc)

    long_h, long_d = served(hybrid, 100_000), served(dense_attn, 100_000)
    assert long_h.max_concurrency > 3 * long_d.max_concurrency
    assert served(hybrid, 100_000, 8).tpot_ms < served(dense_attn, 100_000, 8).tpot_ms
    assert "36 of 48 layers are Gated DeltaNet" in long_h.assumptions["linear_attention"]
    # one request of 100 + 1000 tokens holds, per GPU, its average context's KV (vLLM: 600 tokens in blocks of 16, the
    # 2 KV heads over TP4 kept twice) and a quarter of its 39.5 MB state
    one = served(hybrid, 100, 1)
    expect = 608 * one.kv_bytes_per_token / 2 + s.linear_state_bytes / 4
    assert one.memory_breakdown_gb["kv_in_use"] * 1e9 == pytest.approx(expect, rel=1e-6)


def test_ttft_waits_for_the_iteration_in_flight(models):
    import numpy as np

    r = _steps(models, "llama-3.1-8b", "H100", 1, "fp8", "fp8")
    ttft, tpot = r.latency(np.array([1.0, 8.0]), 500, 200)
    fe = r.frontend_s  # the server's front end, once per request
    assert fe > 0
    alone = r.steps.step_time_s(0.0, 500.0, 600.0, 250.0)
    assert ttft[0] == pytest.approx(float(alone) + fe, rel=1e-9)  # nobody else running: no wait
    busy = r.steps.step_time_s(7.0, 500.0, 600.0, 250.0)
    assert ttft[1] == pytest.approx(float(busy) + 0.5 * tpot[1] + fe, rel=1e-9)


def test_front_end_time_adds_to_ttft_only_and_is_overridable(models):
    from dataclasses import replace

    from gpuplan.perf.engines import fitted_efficiency

    m = models["llama-3.1-8b"]
    eff = fitted_efficiency()
    assert 0 < eff.frontend_ms < 50
    kw = dict(input_len=500, output_len=200, concurrency=4)
    with_fe = estimate_serving(m, "H100", efficiency=eff, **kw)
    without = estimate_serving(m, "H100", efficiency=replace(eff, frontend_ms=0.0), **kw)
    assert with_fe.ttft_ms - without.ttft_ms == pytest.approx(eff.frontend_ms, rel=1e-6)
    assert with_fe.tpot_ms == pytest.approx(without.tpot_ms, rel=1e-12)
    assert with_fe.assumptions["frontend_ms"] == pytest.approx(eff.frontend_ms)
    # A static-batch engine is an offline harness: no front end in its timings.
    static = estimate_serving(m, "H100", engine="optimum-habana", efficiency=eff, **kw)
    assert static.assumptions["frontend_ms"] == 0.0


def _spread_step_s(rep, b: float, isl: int, osl: int) -> float:
    """The old model: every iteration carries b·isl/osl prompt tokens."""
    import numpy as np

    return float(rep.steps.step_time_s(np.array([b]), np.array([b * isl / osl]), isl + osl / 2.0, isl / 2.0)[0])


def test_moe_prompts_scheduled_whole_touch_fewer_experts_than_spread_thinly(models):
    """DeepSeek-V3 on 8 H200 at 8 requests, 1024/1024: 7 prompt tokens spread over every iteration would route to
    ~40 more experts per layer each time; whole prompts touch every expert once, in 8 of 1024 iterations."""
    import numpy as np

    rep = _steps(models, "deepseek-v3", "H200", 8, "fp8", "fp8", engine="sglang")
    b, isl, osl = 8.0, 1024, 1024
    whole = float(rep._mean_step_s(np.array([b]), np.array([(b - 1) * isl]), isl, osl)[0])
    assert whole < 0.85 * _spread_step_s(rep, b, isl, osl)
    decode_only = float(rep.steps.step_time_s(np.array([b]), np.array([0.0]), isl + osl / 2, isl / 2)[0])
    assert decode_only < whole < 1.1 * decode_only  # 7 prompt iterations in 1024 barely move the mean


def test_dense_prompts_do_not_hide_under_a_memory_bound_decode(models):
    """Llama-3.1-8B on one H100 at 19 requests, 467/256: the decode is weight-stream bound, and a prompt runs in its
    own (compute-bound) iteration, so its work is not free as it would be spread over idle decode compute."""
    import numpy as np

    rep = _steps(models, "llama-3.1-8b", "H100", 1, "bf16", "bf16")
    b, isl, osl = 19.0, 467, 256
    whole = float(rep._mean_step_s(np.array([b]), np.array([b * isl]), isl, osl)[0])
    assert whole > 1.05 * _spread_step_s(rep, b, isl, osl)
    # Once prompts outnumber iterations, every iteration carries prompt tokens: the two models agree.
    b, isl, osl = 512.0, 2048, 128
    whole = float(rep._mean_step_s(np.array([b]), np.array([b * isl]), isl, osl)[0])
    assert whole == pytest.approx(_spread_step_s(rep, b, isl, osl), rel=1e-9)


def test_few_tokens_per_expert_are_priced_by_the_expert_weight_stream(models):
    """gpt-oss-120b on 2 H100 (TP2) with vLLM at 64 requests: 64 decode tokens spread over 128 experts (top-4) is
    2 tokens per expert. The grouped GEMM is then memory-bound: the step reads every touched expert once, as
    InferenceX measured (TPOT 15.2 ms, issue 828). The old law priced those GEMMs at t/(t + 177) of eta_c, 4-5x the
    stream (a 70 ms step); with many tokens per expert they still reach only moe_gemm_ratio of eta_c."""
    import numpy as np

    rep = _steps(models, "gpt-oss-120b", "H100", 2, "int4", "bf16", engine="vllm")
    s, sh = rep.steps, rep.steps.shape
    b = np.array([64.0])
    step = float(s.step_time_s(b, np.array([0.0]), 1024 + 512, 512)[0])
    touched = s.experts_touched(b)
    stream = float((s.weight_read_bytes_dense + sh.n_moe_layers * touched * s.expert_bytes_gpu)[0]
                   / (s.bw_bytes_s * s.latency_factor))
    assert step < 2.0 * stream
    assert 5.0 < step * 1e3 < 25.0  # measured 15.2 ms (mean TPOT over a 1k/1k closed loop)
    big = float(s.grouped_gemm_efficiency(np.array([1e6]))[0])
    assert big == pytest.approx(s.moe_gemm_ratio, rel=0.01) and 0.3 <= big < 1.0


def test_a_benchmark_first_wave_queues_its_prompts_for_the_token_budget(models):
    import numpy as np

    rep = _steps(models, "llama-3.1-8b", "H100", 1, "bf16", "bf16", engine="vllm")
    budget = int(rep.token_budget)
    # Two prompts of half the budget share the first iteration: both wait for exactly that one prefill step.
    one_step = float(rep.steps.step_time_s(np.array([0.0]), np.array([float(budget)]), budget / 2 + 50, budget / 4)[0])
    assert rep.first_wave_ttft(2, budget // 2, 100) == pytest.approx(one_step + rep.frontend_s, rel=1e-9)
    # Sixteen such prompts take eight iterations: the mean waits for several, the last for all.
    assert rep.first_wave_ttft(16, budget // 2, 100) > 4 * one_step
    # Reported through estimate_serving: only TTFT moves, towards steady state as the run gets longer.
    kw = dict(precision="bf16", input_len=2048, output_len=512, engine="vllm", concurrency=64)
    steady = estimate_serving(models["llama-3.1-8b"], "H100", **kw)
    short = estimate_serving(models["llama-3.1-8b"], "H100", requests=64, **kw)
    long = estimate_serving(models["llama-3.1-8b"], "H100", requests=6400, **kw)
    assert short.ttft_ms > long.ttft_ms > steady.ttft_ms
    assert long.ttft_ms == pytest.approx(steady.ttft_ms + (short.ttft_ms - steady.ttft_ms) / 100, rel=1e-6)
    assert short.tpot_ms == steady.tpot_ms and short.output_tokens_per_s == steady.output_tokens_per_s
    assert "first wave of 64" in short.assumptions["ttft"]
    # One request at a time has no wave.
    one = dict(kw, concurrency=1)
    assert estimate_serving(models["llama-3.1-8b"], "H100", requests=10, **one).ttft_ms == pytest.approx(
        estimate_serving(models["llama-3.1-8b"], "H100", **one).ttft_ms, rel=1e-9)


def test_an_offline_benchmark_runs_its_requests_in_waves(models):
    """`trtllm-bench throughput` queues its dataset's N requests at once (NVIDIA's tables: 3000 of 1000/1000). The
    engine runs as many as fit, never more than there are: N below the capacity is one wave at N, N a little over it
    ends in a partial wave at a small batch, and many waves approach the steady state. DeepSeek-V3 on 8 H200 with
    attention DP holds about 4,700 such requests, so the 3000 of NVIDIA's run were all of its batch."""
    kw = dict(precision="fp8", input_len=1000, output_len=1000, engine="trtllm")
    steady = estimate_serving(models["llama-3.1-8b"], "H100", **kw)
    cap = int(steady.max_concurrency)
    assert steady.limited_by == "kv_cache" and cap > 100
    small = estimate_serving(models["llama-3.1-8b"], "H100", requests=cap // 4, **kw)
    assert small.running_concurrency == cap // 4 and small.limited_by == "requests"
    assert small.output_tokens_per_s < steady.output_tokens_per_s
    over = estimate_serving(models["llama-3.1-8b"], "H100", requests=cap + cap // 10, **kw)
    exact = estimate_serving(models["llama-3.1-8b"], "H100", requests=2 * cap, **kw)
    many = estimate_serving(models["llama-3.1-8b"], "H100", requests=50 * cap, **kw)
    assert over.output_tokens_per_s < exact.output_tokens_per_s  # the partial second wave runs at a tenth of the batch
    assert exact.output_tokens_per_s <= many.output_tokens_per_s * 1.001
    assert many.output_tokens_per_s == pytest.approx(steady.output_tokens_per_s, rel=0.01)
    assert small.ttft_ms < exact.ttft_ms < many.ttft_ms  # each wave waits for the ones before it
    assert "offline: 3,000 requests" in estimate_serving(models["llama-3.1-8b"], "H100", requests=3000,
                                                         **kw).assumptions["ttft"]
    ds = dict(kw, n_gpus=8, dp_attention=True)
    ds_steady = estimate_serving(models["deepseek-v3"], "H200", **ds)
    ds_run = estimate_serving(models["deepseek-v3"], "H200", requests=3000, **ds)
    assert ds_steady.max_concurrency > 3000 and ds_run.running_concurrency == 3000
    assert ds_run.output_tokens_per_s < ds_steady.output_tokens_per_s


def test_fixed_lengths_group_a_closed_loops_arrivals(models):
    """Closed-loop clients with one prompt and one output length stay in the groups their first wave was admitted
    in: 8 prompts of 1,024 tokens fill vLLM's 8,192-token budget, so each group's prompts arrive and are prefilled
    together, the last waiting for the whole group. TTFT grows, and prompt iterations no longer hide under the
    decodes; lengths that vary keep the one-at-a-time arrivals, and a prompt as long as the budget has no group."""
    import numpy as np

    m = models["qwen3-8b"]
    kw = dict(input_len=1024, output_len=1024, concurrency=32)
    spread = estimate_serving(m, "MI300X", **kw)
    grouped = estimate_serving(m, "MI300X", fixed_lengths=True, **kw)
    assert grouped.ttft_ms > 1.3 * spread.ttft_ms
    assert grouped.output_tokens_per_s < spread.output_tokens_per_s
    assert "(8 at a time)" in grouped.assumptions["ttft"] and "fixed lengths" not in spread.assumptions["ttft"]
    r = _steps(models, "qwen3-8b", "MI300X", 1, "bf16", "bf16")
    assert r.arrival_group(np.array([32.0]), 1024) == 1.0  # not grouped unless told
    r.grouped = True
    assert list(r.arrival_group(np.array([4.0, 32.0]), 1024)) == [4.0, 8.0]  # never more than are running
    ttft, _ = r.latency(np.array([32.0]), 1024, 1024)
    group = r._wave_ttft(8, 1024, 1024, decoding=24.0) + r.frontend_s
    assert ttft[0] > group  # plus half an iteration's wait for the one in flight
    # A prompt that fills the budget arrives alone either way; static batches have their own waves.
    long = dict(input_len=8192, output_len=256, concurrency=16)
    assert estimate_serving(m, "MI300X", fixed_lengths=True, **long).ttft_ms == estimate_serving(m, "MI300X", **long).ttft_ms
