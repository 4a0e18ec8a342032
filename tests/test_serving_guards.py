"""Serving guards: native MXFP4 weights on GPUs without FP4, engines the GPU runs, the native precision by
default in `estimate serve`, and the model's context enforced in estimate serve, plan serve and plan batch."""
from __future__ import annotations

import json

import pytest

from gpuplan.catalog.catalog import Catalog
from gpuplan.catalog.gpus import get_gpu
from gpuplan.errors import UsageError
from gpuplan.perf.inference_estimate import estimate_serving, serving_engines
from gpuplan.perf.inference_precision import MXFP4_BYTES_PER_PARAM, weight_format
from gpuplan.planner.batch_plan import plan_batch
from gpuplan.planner.batch_request import BatchPlanRequest
from gpuplan.planner.candidates import gpu_lacks
from gpuplan.planner.requests import ServeEstimateRequest, ServePlanRequest, estimate_serve
from gpuplan.planner.serve_plan import plan_serving


@pytest.fixture(scope="module")
def catalog():
    return Catalog.load(use_store=False)


def _est(**kw):
    return estimate_serve(ServeEstimateRequest(**kw))


# ---- 1. native MXFP4 on GPUs without FP4 tensor cores -------------------------------------------------

@pytest.mark.parametrize("gpu", ["H100", "H200", "A100-80GB", "MI300X"])
def test_gpt_oss_runs_weight_only_where_fp4_tensor_cores_are_missing(gpu):
    est = _est(model="gpt-oss-120b", gpu=gpu)
    a = est.assumptions
    assert est.fits and est.precision == "fp4" and est.tp == 1  # 120b fits one 80 GB GPU (vLLM recipe)
    assert a["gemm_math"] == "bf16" and a["bytes_per_param"] == pytest.approx(MXFP4_BYTES_PER_PARAM)
    assert "dequantized to bf16" in a["weight_dequantized"] and get_gpu(gpu).id in a["weight_dequantized"]
    # experts at ~0.53 B/param, attention/embeddings 16-bit: between all-4-bit and all-16-bit
    total = 116.79e9
    assert total * MXFP4_BYTES_PER_PARAM / 1e9 < a_weights(est) < total * 0.7 / 1e9
    assert est.output_tokens_per_s > 100 and est.kv_precision == "bf16"


def a_weights(est) -> float:
    return est.memory_breakdown_gb["weights"] * est.tp


def test_dequantized_mxfp4_is_timed_as_weight_only_int4():
    """Same bytes and bf16 math as AWQ/GPTQ: the estimator must give the same answer for both."""
    fp4 = _est(model="gpt-oss-120b", gpu="H200", input_len=2000, output_len=500)
    int4 = _est(model="gpt-oss-120b", gpu="H200", input_len=2000, output_len=500, precision="int4")
    assert fp4.output_tokens_per_s == pytest.approx(int4.output_tokens_per_s, rel=1e-9)
    assert fp4.memory_breakdown_gb["weights"] == pytest.approx(int4.memory_breakdown_gb["weights"], rel=1e-9)


def test_blackwell_runs_native_mxfp4_at_the_8bit_rate():
    """gpt-oss's MXFP4 experts meet MXFP8 activations on Blackwell (W4A8): 4-bit weight bytes, 8-bit math. A
    checkpoint quantized to NVFP4 (weights and activations) keeps the 4-bit tensor cores."""
    est = _est(model="gpt-oss-120b", gpu="B200")
    a = est.assumptions
    assert est.precision == "fp4" and a["gemm_math"] == "fp8" and "MXFP8" in a["weight_format"]
    assert a["weight_dequantized"] is None
    assert a["bytes_per_param"] == pytest.approx(MXFP4_BYTES_PER_PARAM)
    nvfp4 = _est(model="llama-3.1-8b", gpu="B200", precision="fp4")
    assert nvfp4.assumptions["gemm_math"] == "fp4"
    assert nvfp4.assumptions["bytes_per_param"] == pytest.approx(weight_format("fp4").bytes_per_param)


def test_fp4_on_amd_is_mxfp4():
    """CDNA4 runs OCP MXFP4 (an e8m0 scale per 32 weights), not NVFP4 (an fp8 scale per 16): 405B in MXFP4 leaves one
    MI355X room for about the 64 requests vLLM ran at once there (PR 25135: TPOT and Little's law agree; 63 here, the
    runtime reserve is a little conservative), NVFP4 bytes for 47."""
    amd = _est(model="llama-3.1-405b", gpu="MI355X", precision="fp4", input_len=1022, output_len=1024)
    assert amd.assumptions["gemm_math"] == "fp4" and "MXFP4" in amd.assumptions["weight_format"]
    assert amd.assumptions["bytes_per_param"] == pytest.approx(MXFP4_BYTES_PER_PARAM)
    assert amd.max_concurrency >= 60
    nv = _est(model="llama-3.1-405b", gpu="B200", precision="fp4", input_len=1022, output_len=1024)
    assert nv.assumptions["bytes_per_param"] == pytest.approx(weight_format("fp4").bytes_per_param)


def test_nvfp4_bytes_would_not_hold_the_measured_batch_on_mi355x(monkeypatch):
    import gpuplan.perf.inference_estimate as ie

    work = dict(model="llama-3.1-405b", gpu="MI355X", precision="fp4", input_len=1022, output_len=1024)
    mx = _est(**work)
    monkeypatch.setattr(ie, "serving_weight_format", lambda wf, gpu, native: wf)  # NVFP4's bytes
    assert _est(**work).max_concurrency < 0.8 * mx.max_concurrency


def test_native_mxfp4_prefill_is_slower_than_4bit_math_would_be(monkeypatch):
    """Prefill-heavy work is compute-bound: timed at the 8-bit rate it takes longer than at the (wrong) 4-bit one."""
    import gpuplan.perf.inference_estimate as ie

    work = dict(model="gpt-oss-120b", gpu="B200", input_len=8192, output_len=64, concurrency=64)
    w4a8 = _est(**work)
    monkeypatch.setattr(ie, "serving_weight_format", lambda wf, gpu, native: wf)  # 4-bit activations (not served)
    w4a4 = _est(**work)
    assert w4a4.assumptions["gemm_math"] == "fp4"
    assert w4a8.ttft_ms > 1.2 * w4a4.ttft_ms


@pytest.mark.parametrize("model,gpu", [("llama-3.1-8b", "H100"),  # not a native FP4 checkpoint
                                       ("gpt-oss-20b", "V100"),  # no bf16, no Marlin
                                       ("gpt-oss-20b", "L40S")])  # Ada: not listed by the vLLM recipe
def test_fp4_still_refused_without_a_weight_only_path(model, gpu):
    with pytest.raises(UsageError, match="no fp4 tensor cores"):
        _est(model=model, gpu=gpu, precision="fp4")


def test_candidate_filter_keeps_hopper_for_native_fp4_only():
    h100, v100, b200 = get_gpu("H100"), get_gpu("V100"), get_gpu("B200")
    assert not gpu_lacks(h100, "fp4", "fp4") and gpu_lacks(h100, "fp4", "bf16") and gpu_lacks(h100, "fp4")
    assert gpu_lacks(v100, "fp4", "fp4") and not gpu_lacks(b200, "fp4", "bf16")
    assert gpu_lacks(get_gpu("A100-80GB"), "fp8", "fp8")  # only FP4 has the weight-only fallback here


def test_plan_serve_ranks_hopper_and_amd_for_gpt_oss_with_a_note(catalog):
    res = plan_serving(ServePlanRequest(model="gpt-oss-120b", tokens_per_month="10B", limit=1000), catalog)
    gpus = {p.gpu for p in res.plans}
    assert gpus & {"H100-SXM", "H200-SXM", "MI300X"} and gpus & {"B200", "B300"}
    for p in res.plans:
        dq = any("dequantized to bf16" in n for n in p.risk_notes)
        assert dq == (not get_gpu(p.gpu).supports("fp4")), p.gpu
    assert any("dequantized to bf16" in w for w in res.why)


# ---- 2. engines the GPU runs ---------------------------------------------------------------------------

@pytest.mark.parametrize("gpu,engine,can", [("MI300X", "trtllm", "vllm, sglang"), ("Gaudi2", "trtllm", "vllm"),
                                            ("H100", "optimum-habana", "trtllm")])
def test_estimate_serve_refuses_an_engine_the_gpu_cannot_run(cli, gpu, engine, can):
    code, out, err = cli("estimate", "serve", "--model", "llama-3.1-8b", "--gpu", gpu, "--engine", engine)
    assert code == 2 and out == ""
    line = err.strip()
    assert "\n" not in line and f"{engine} cannot serve" in line and can in line and "Traceback" not in line


def test_engines_named_are_those_plan_serve_accepts():
    from gpuplan.catalog.capabilities import resolve_serving

    for gid in ("MI300X", "Gaudi3", "TPU-v5e", "H100", "V100"):
        g = get_gpu(gid)
        named = set(serving_engines(g, "bf16"))
        assert {e for e in ("vllm", "sglang", "trtllm") if resolve_serving(g, "bf16", e).ok} == named - {"optimum-habana"}
        assert ("optimum-habana" in named) == (g.vendor == "Intel")
    assert _est(model="llama-3.1-8b", gpu="Gaudi2", engine="optimum-habana").fits


# ---- 3. native precision by default --------------------------------------------------------------------

def test_estimate_serve_defaults_to_the_native_precision(cli):
    est = _est(model="deepseek-v3", gpu="H200")
    assert est.precision == "fp8" and est.fits and "native" in est.assumptions["precision_basis"]
    given = _est(model="deepseek-v3", gpu="H200", precision="bf16")
    assert given.precision == "bf16" and not given.fits and given.assumptions["precision_basis"] == "given"
    assert "native" in _est(model="deepseek-v3", gpu="H200", precision="fp8").assumptions["precision_basis"]
    assert _est(params="7B", gpu="H100").precision == "bf16"
    code, out, err = cli("estimate", "serve", "--model", "deepseek-v3", "--gpu", "H200")
    assert code == 0 and "fp8 (native)" in out and "native precision (fp8)" in err


# ---- 4. the model's context ----------------------------------------------------------------------------

def test_estimate_serve_refuses_requests_longer_than_the_context(cli):
    assert _est(model="llama-3.1-8b", gpu="H100", input_len=130_072, output_len=1000).fits  # exactly 131,072
    with pytest.raises(UsageError, match="context of 131,072"):
        _est(model="llama-3.1-8b", gpu="H100", input_len=130_073, output_len=1000)
    code, out, err = cli("estimate", "serve", "--model", "llama-3.1-8b", "--gpu", "H100", "--input-len", "1000000")
    assert code == 2 and out == "" and "context of 131,072" in err and "\n" not in err.strip()
    # a model derived from a parameter count has no known context: a warning, as before
    est = estimate_serving(_est_model("7B"), "H100", input_len=10_000, output_len=100)
    assert est.fits and any("context" in w for w in est.warnings)


def _est_model(params: str):
    from gpuplan.planner.requests import ModelChoice

    return ModelChoice(params=params).resolve_model()


def test_plan_serve_and_batch_refuse_requests_longer_than_the_context(catalog, cli):
    with pytest.raises(UsageError, match="llama-3.1-8b's context of 131,072"):
        plan_serving(ServePlanRequest(model="llama-3.1-8b", input_len=200_000, tokens_per_month="1B"), catalog)
    with pytest.raises(UsageError, match="qwen3-8b's context of 40,960"):
        plan_batch(BatchPlanRequest(model="qwen3-8b", input_len=100_000, items=1000, deadline_hours=24), catalog)
    code, out, err = cli("plan", "batch", "--model", "qwen3-8b", "--input-len", "100000", "--items", "1000",
                         "--deadline", "24h", "--json")
    assert code == 2 and "context of 40,960" in err and json.loads(out or "null") is None
