"""Serving estimates against published runs (stated tolerances) and the fitted parameters."""
from __future__ import annotations

import json
from importlib import resources

import pytest

from gpuplan.perf import inference_validation as v
from gpuplan.perf.engines import fitted_efficiency


@pytest.fixture(scope="module")
def errs():
    return {(e["row_id"], e["metric"]): e for e in v.errors(fitted_efficiency())}


# (row, metric, tolerance): TensorRT-LLM and vLLM max-throughput rows within 25 %, latency within 30 %.
PINNED = [
    (4, "output_tokens_per_s", 0.25),   # Llama-3.1-8B fp8, H100, 128/128
    (5, "output_tokens_per_s", 0.25),   # Llama-3.1-8B fp8, H100, 1000/1000
    (7, "output_tokens_per_s", 0.25),   # Llama-3.3-70B fp8, 2xH100 TP2
    (10, "output_tokens_per_s", 0.25),  # Llama-3.1-405B fp8, 8xH100 TP8
    (11, "output_tokens_per_s", 0.25),  # Llama-3.1-70B fp8, 8xMI300X TP8, vLLM
    (16, "ttft_ms", 0.30),              # 13B fp16 batch-1 A100 (FasterTransformer)
    (16, "tpot_ms", 0.30),
    (17, "tpot_ms", 0.30),              # same at TP2
]


@pytest.mark.parametrize("row, metric, tol", PINNED)
def test_pinned_rows(errs, row, metric, tol):
    e = errs[(row, metric)]
    assert abs(e["error"]) <= tol, f"{e['label']} {metric}: predicted {e['predicted']:.1f} vs {e['measured']:.1f}"


def test_max_throughput_median_within_target(errs):
    s = v.summarize(list(errs.values()))
    assert s["max_throughput"]["n"] >= 8
    assert s["max_throughput"]["median_abs_pct"] <= 25.0


def test_stored_fit_reports_loo_next_to_in_sample():
    doc = json.loads(resources.files("gpuplan.perf.data").joinpath("inference-efficiency.json").read_text())
    for name in ("in_sample", "leave_one_out"):
        assert doc["summary"][name]["max_throughput"]["median_abs_pct"] <= 25.0
    # In-sample errors in the file match a fresh prediction with the stored parameters.
    live = v.errors(fitted_efficiency())
    stored = {(r["row_id"], r["metric"]): r["error_pct"] for r in doc["rows"]}
    for e in live:
        # parameters are stored to 4 decimals: a 4000% error row moves by a few tenths
        assert 100 * e["error"] == pytest.approx(stored[(e["row_id"], e["metric"])], abs=0.2, rel=1e-3)


def test_parameters_are_few_and_physical():
    eff = fitted_efficiency()
    assert 0.5 <= eff.eta_bw <= 0.95 and 0.3 <= eff.eta_c <= 0.9
    assert 0 < eff.allreduce_latency_us < 200 and 0 <= eff.step_overhead_ms < 20
    assert set(eff.engine_factor) <= {"vllm", "sglang", "trtllm"} and eff.engine_factor["trtllm"] == 1.0


def test_refit_reproduces_stored_parameters():
    eff = v.fit(iters=300)
    stored = fitted_efficiency()
    assert eff.eta_bw == pytest.approx(stored.eta_bw, rel=0.05)
    assert eff.eta_c == pytest.approx(stored.eta_c, rel=0.05)
    assert eff.engine_factor["vllm"] == pytest.approx(stored.engine_factor["vllm"], rel=0.05)


def test_rows_are_normalized_and_skips_have_reasons():
    rows = v.validation_rows()
    assert len(rows) >= 15
    for r in rows:
        assert r["scenario"] in {"max_throughput", "server_slo", "latency", "fixed_concurrency", "disaggregated"}
        assert r["source"]
        if r["use"] == "skip":
            assert r["skip_reason"]
        else:
            assert r["gpu"] and r["model"] in v.validation_models() and int(r["input_len"]) > 0
    assert any("RTX PRO 6000" in r["skip_reason"] for r in rows)
    # Rows with an assumed input length are validated but never fitted.
    assert all(r["input_len_assumed"] != "1" for r in v.fit_rows())
