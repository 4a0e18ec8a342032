"""Serving estimates against published runs (stated tolerances), the regimes, the fitted
parameters, leave-one-source-out and the shipped error bands."""
from __future__ import annotations

import json
import math
from importlib import resources

import pytest

from gpuplan.perf import inference_validation as v
from gpuplan.perf.engines import _UNFITTED, fitted_efficiency


@pytest.fixture(scope="module")
def errs():
    return {(e["row_id"], e["metric"]): e for e in v.errors(fitted_efficiency())}


def _row(source_id: str, model: str, gpu: str, isl: str, osl: str, conc: str = "", tp: str | None = None) -> int:
    hits = [r for r in v.usable_rows() if r["source_id"] == source_id and r["model"] == model and r["gpu"] == gpu
            and r["input_len"] == isl and r["output_len"] == osl and r["concurrency"] == conc
            and (tp is None or r["tp"] == tp)]
    assert len(hits) == 1, (source_id, model, gpu, isl, osl, conc, tp, len(hits))
    return int(hits[0]["row_id"])


# (regime, row locator, metric, tolerance). Throughput rows within 25 %, latency within 30 %, MoE within 40 %
# (the weakest regimes; see the validation summary), a regression beyond these fails.
PINNED = [
    ("dense_throughput", ("trtllm-perf-v1.0", "llama-3.1-8b", "H100-SXM", "1000", "1000"), "output_tokens_per_s", 0.25),
    ("dense_throughput", ("trtllm-perf-v1.0", "llama-3.1-405b", "H100-SXM", "1000", "1000"), "output_tokens_per_s", 0.25),
    ("dense_throughput", ("trtllm-perf-v0.17", "llama-3.1-70b", "A100-80GB-SXM", "1000", "1000"), "output_tokens_per_s", 0.25),
    # MLPerf Inference's Llama-2-70B Server run on 8 H200, at its data set's mean prompt (222 tokens): +1 % / -2 %; with
    # the 684 tokens once assumed it was -45 % and +75 %, its TTFT +1360 % (the prompts' FLOPs alone then exceeded the
    # GPUs' FP8 peak)
    ("dense_throughput", ("mlperf-inference-v4.1", "llama-2-70b", "H200-SXM", "222", "291", "3598"),
     "output_tokens_per_s", 0.15),
    ("dense_throughput", ("mlperf-inference-v4.1", "llama-2-70b", "H200-SXM", "222", "291", "3598"), "tpot_ms", 0.15),
    ("dense_latency", ("trtllm-serving-v0.14", "llama-3.1-8b", "H100-SXM", "467", "16", "1"), "tpot_ms", 0.30),
    ("dense_latency", ("trtllm-serving-v0.14", "llama-3.1-70b", "H200-SXM", "467", "16", "1"), "tpot_ms", 0.30),
    ("dense_latency", ("kipply-fastertransformer", "gpt-13b-fastertransformer", "A100-40GB-SXM", "512", "10", "1", "2"),
     "tpot_ms", 0.30),
    ("dense_latency", ("trtllm-serving-v0.14", "llama-3.1-70b", "H100-SXM", "467", "16", "1"), "ttft_ms", 0.30),
    ("moe_small_active", ("trtllm-perf-v0.17", "mixtral-8x7b", "H100-SXM", "1000", "1000", "", "2"), "output_tokens_per_s", 0.40),
    ("moe_small_active", ("trtllm-perf-v1.0", "qwen3-30b-a3b", "RTX-PRO-6000", "1000", "1000", "", "1"), "output_tokens_per_s", 0.40),
    ("moe_small_active", ("trtllm-perf-v1.2", "gpt-oss-20b", "B200", "1000", "1000"), "output_tokens_per_s", 0.25),
    ("moe_small_active", ("trtllm-perf-v1.2", "qwen3-30b-a3b", "RTX-PRO-6000", "1000", "1000", "", "2"),
     "output_tokens_per_s", 0.40),
    ("moe_small_active", ("trtllm-perf-v0.14", "mixtral-8x7b", "H200-SXM", "1000", "1000", "", "8"), "output_tokens_per_s", 0.30),
    ("moe_small_active", ("gpustack-gpt-oss-20b-h100", "gpt-oss-20b", "H100-SXM", "2000", "94", "500"), "output_tokens_per_s", 0.30),
    # vLLM at moderate concurrency (InferenceX issue 828; before its rows joined the fit: +132 % / -63 % / +365 %)
    ("moe_small_active", ("inferencex-828", "gpt-oss-120b", "H100-SXM", "1024", "1024", "16", "8"), "tpot_ms", 0.25),
    ("moe_small_active", ("inferencex-828", "gpt-oss-120b", "H100-SXM", "1024", "1024", "64", "8"), "output_tokens_per_s", 0.25),
    ("moe_small_active", ("inferencex-828", "gpt-oss-120b", "H100-SXM", "1024", "1024", "64", "2"), "tpot_ms", 0.35),
    # +28 % since the refit with measured matmul realisation moved the kernel floor 72 -> 76 us a layer; +24 % before
    ("moe_small_active", ("emmy-cloudrift-qwen3", "qwen3-30b-a3b", "H200-SXM", "4096", "4096", "1"), "tpot_ms", 0.30),
    ("moe_large", ("trtllm-perf-v1.0", "qwen3-235b-a22b", "H200-SXM", "1000", "1000"), "output_tokens_per_s", 0.40),
    # +58 % since grouped expert GEMMs reach moe_gemm_ratio x t/(t + t_half) (InferenceX's vLLM gpt-oss sweep: a few
    # tokens per expert cost their weight stream, not a compute penalty); +42 % before, +33 % before that. Maverick's
    # measured max throughput is about half of what streaming its weights at its KV-limited batch allows: no shared
    # parameter explains it (a known miss).
    ("moe_large", ("trtllm-perf-v1.0", "llama-4-maverick", "B200", "1000", "1000"), "output_tokens_per_s", 0.65),
    ("moe_large", ("inferencex-870", "deepseek-v3", "H200-SXM", "1024", "1024", "32"), "tpot_ms", 0.45),  # +35 %
    ("moe_large", ("trtllm-perf-v1.2", "deepseek-v3", "B200", "1000", "1000"), "output_tokens_per_s", 0.25),
    # DeepSeek-R1 AWQ decoding alone on 8x H100: -57 % while every layer paid a dense layer's kernel floor, -29 % with
    # the floor per GEMM-class kernel (MLA and shared experts run 2.2x a dense layer's)
    ("moe_large", ("tt-gpu-ref-dsr1-356", "deepseek-v3", "H100-SXM", "128", "128", "1"), "tpot_ms", 0.40),
    ("moe_large", ("trtllm-perf-v1.2", "qwen3-235b-a22b", "B200", "8192", "1024"), "output_tokens_per_s", 0.30),
    ("amd", ("amd-rocm-perf-2025-10", "llama-3.1-70b", "MI300X", "2048", "2048"), "output_tokens_per_s", 0.30),
    ("amd", ("amd-rocm-perf-2025-10", "llama-3.1-70b", "MI300X", "128", "2048", "1"), "tpot_ms", 0.40),
    ("amd", ("inferencex-pr1061-mi300x", "gpt-oss-120b", "MI300X", "1024", "1024", "128"), "output_tokens_per_s", 0.30),
    ("gaudi", ("intel-gaudi3-perf-1.18", "llama-3.1-70b", "Gaudi3", "128", "2048", "600"), "output_tokens_per_s", 0.25),
    ("gaudi", ("intel-gaudi2-perf-1.18", "llama-3.1-8b", "Gaudi2", "2048", "2048", "155"), "output_tokens_per_s", 0.30),
    ("blackwell", ("trtllm-perf-v1.0", "llama-3.3-70b", "GB200", "1000", "1000"), "output_tokens_per_s", 0.25),
    # MLPerf Inference v5.1 Offline, Llama-2-70B at its data set's mean prompt: NVIDIA's harness on 8 B200 (NVFP4), 4
    # GB200 and Dell's 8 H200 (fp8) within 15 % (-7 %, -4 %, -14 % when the rows joined)
    ("blackwell", ("mlperf-inference-v5.1", "llama-2-70b", "B200", "222", "273"), "output_tokens_per_s", 0.15),
    ("blackwell", ("mlperf-inference-v5.1", "llama-2-70b", "GB200", "222", "276"), "output_tokens_per_s", 0.15),
    ("dense_throughput", ("mlperf-inference-v5.1", "llama-2-70b", "H200-SXM", "222", "292"), "output_tokens_per_s", 0.20),
    # ... while AMD's MLPerf harness (a patched vLLM with its own decode scheduler and multi-step decode) beats what the
    # stock-vLLM engine factor allows on MI300X / MI325X / MI355X: 39-42 % pessimistic, scored but not fitted (fit_note),
    # a known miss (the stock-vLLM tables of the same GPUs are 10-30 % optimistic); the bound keeps it from growing
    ("amd", ("mlperf-inference-v5.1", "llama-2-70b", "MI325X", "222", "301"), "output_tokens_per_s", 0.45),
    ("blackwell", ("trtllm-perf-v1.0", "llama-3.3-70b", "RTX-PRO-6000", "1000", "1000"), "output_tokens_per_s", 0.25),
    # MLPerf Inference v6.0 Offline (April 2026), scored before they joined the fit: a GB200 NVL72 rack +1 %, a GB300
    # tray's share +11 %, 8 B300 +16 %, Dell's 8 RTX PRO 6000 -26 % at data-centre Blackwell's factor and -10 % at the
    # sm120 cards' own (Blackwell-RTX); Dell's 8 H200 NVL -21 % (a Hopper PCIe card whose spec peak is 84 % of the SXM's
    # measures 91 % of it: a known miss)
    ("blackwell", ("mlperf-inference-v6.0", "llama-2-70b", "GB200", "222", "272"), "output_tokens_per_s", 0.15),
    ("blackwell", ("mlperf-inference-v6.0", "llama-2-70b", "B300", "222", "273"), "output_tokens_per_s", 0.20),
    ("blackwell", ("mlperf-inference-v6.0", "llama-2-70b", "RTX-PRO-6000", "222", "272"), "output_tokens_per_s", 0.20),
    ("dense_throughput", ("mlperf-inference-v6.0", "llama-2-70b", "H200-NVL", "222", "293"), "output_tokens_per_s", 0.25),
    ("long_input", ("trtllm-perf-v1.0", "llama-3.1-405b", "H200-SXM", "20000", "2000"), "output_tokens_per_s", 0.25),
    ("long_input", ("trtllm-perf-v0.17", "llama-3.1-70b", "H100-SXM", "20000", "2000", "", "4"), "output_tokens_per_s", 0.30),
]


@pytest.mark.parametrize("regime, loc, metric, tol", PINNED, ids=[f"{p[0]}-{p[1][1]}-{p[1][2]}-{p[2]}" for p in PINNED])
def test_pinned_rows(errs, regime, loc, metric, tol):
    rid = _row(*loc)
    e = errs[(rid, metric)]
    assert e["regime"] == regime
    assert abs(e["error"]) <= tol, f"{e['label']} {metric}: predicted {e['predicted']:.1f} vs {e['measured']:.1f}"


def test_every_regime_is_covered_and_rows_carry_their_source():
    rows = v.usable_rows()
    assert len(rows) >= 60
    for reg in v.REGIMES:
        assert sum(r["regime"] == reg for r in rows) >= 5, reg
    for r in v.validation_rows():
        assert r["source"] and r["source_id"] and r["source_date"], r["row_id"]
        assert r["scenario"] in {"max_throughput", "server_slo", "latency", "fixed_concurrency", "disaggregated",
                                 "static_batch"}
        if r["use"] == "skip":
            assert r["skip_reason"]
        else:
            assert r["gpu"] and r["model"] in v.validation_models() and int(r["input_len"]) > 0
            assert r["regime"] in v.REGIMES
            spec = v.validation_models()[r["model"]]
            conc = int(float(r["concurrency"])) if r["concurrency"] else None
            assert v.classify_regime(spec, r["gpu"], conc, int(r["input_len"]), r["engine"]) == r["regime"]
    # Rows with an assumed input length are validated but never fitted.
    assert all(r["input_len_assumed"] != "1" for r in v.fit_rows())


def test_mlperf_llama2_rows_run_their_data_sets_mean_prompt():
    """MLPerf's Llama-2-70B result logs give tokens and samples but no prompt length; the benchmark's fixed OpenOrca
    sample (24,576 prompts, 5,463,976 tokens) gives the mean, 222. Every such row uses it (the vendor rows too, see
    test_vendor_efficiency), and none is left out of the fit as an assumption (AMD's harness rows are left out for
    another reason, their fit_note)."""
    rows = [r for r in v.usable_rows() if r["model"] == "llama-2-70b" and r["source_id"].startswith("mlperf-inference")]
    assert len(rows) == 16
    assert {r["input_len"] for r in rows} == {str(round(5_463_976 / 24_576))} == {"222"}
    assert all(r["input_len_assumed"] == "0" for r in rows)


def test_rows_run_by_other_software_than_their_engine_key_are_scored_not_fitted(errs):
    """AMD's MLPerf Inference submissions run its own harness (a patched vLLM with its own decode scheduler) under the
    'vllm' key: fitting them would speed up every stock-vLLM estimate, so they carry a fit_note, stay out of every fit
    (the full one, each held-out refit, forward in time) and are still scored, 30-46 % pessimistic."""
    harness = [r for r in v.usable_rows() if r["source_id"].startswith("mlperf-inference") and r["gpu"].startswith("MI")]
    assert len(harness) == 6 and all(r["fit_note"] and r["engine"] == "vllm" for r in harness)
    fitted = {r["row_id"] for r in v.fit_rows()}
    assert not fitted & {r["row_id"] for r in harness}
    assert {r["row_id"] for r in v.usable_rows() if not r["fit_note"] and r["input_len_assumed"] != "1"} == fitted
    for r in harness:
        e = errs[(int(r["row_id"]), "output_tokens_per_s")]
        assert -0.50 < e["error"] < -0.25, (e["label"], e["error"])


def test_classify_regime():
    m = v.validation_models()
    assert v.classify_regime(m["llama-3.1-8b"], "H100", None, 1000) == "dense_throughput"
    assert v.classify_regime(m["llama-3.1-8b"], "H100", 1, 1000) == "dense_latency"
    assert v.classify_regime(m["llama-3.1-8b"], "H100", None, 20000) == "long_input"
    assert v.classify_regime(m["qwen3-30b-a3b"], "H100", None, 1000) == "moe_small_active"
    assert v.classify_regime(m["deepseek-v3"], "H200", None, 1000) == "moe_large"
    assert v.classify_regime(m["llama-3.1-8b"], "MI325X", None, 1000) == "amd"
    assert v.classify_regime(m["llama-3.1-8b"], "Gaudi3", None, 1000) == "gaudi"
    assert v.classify_regime(m["llama-3.1-8b"], "H100", 64, 1000, "optimum-habana") == "gaudi"
    assert v.classify_regime(m["llama-3.1-8b"], "RTX-PRO-6000", None, 1000) == "blackwell"


def test_stored_fit_matches_live_predictions(errs):
    doc = json.loads(resources.files("gpuplan.perf.data").joinpath("inference-efficiency.json").read_text())
    stored = {(r["row_id"], r["metric"]): r["error_pct"] for r in doc["rows"]}
    for k, e in errs.items():
        # parameters are stored rounded: a very large error moves by a few tenths of a percent
        assert 100 * e["error"] == pytest.approx(stored[k], abs=0.5, rel=2e-3)
    assert doc["summary"]["in_sample"]["all"]["all"]["median_ape"] <= 15.0


def test_parameters_are_few_and_physical():
    eff = fitted_efficiency()
    assert 0.5 <= eff.eta_bw <= v.ETA_BW_MAX and 0.3 <= eff.eta_c <= 0.9
    assert eff.eta_bw * eff.latency_factor <= 1.0 + 1e-9
    assert v.ALLREDUCE_US_RANGE[0] <= eff.allreduce_latency_us <= v.ALLREDUCE_US_RANGE[1] <= 25  # published NVLink range
    assert eff.allreduce_latency_us == _UNFITTED["allreduce_latency_us"] == 8.0  # held at the engines' kernels' timing
    assert 0 <= eff.step_overhead_ms < 10 and 0 <= eff.layer_overhead_us < 200
    assert 1 <= eff.moe_half_tokens <= 512 and 0 <= eff.moe_pair_overhead_ns <= 200
    assert 0 <= eff.ep_hot_excess <= v.EP_SKEW_MAX <= 1.5  # CV of expert popularity: a physical ceiling
    assert 0 <= eff.frontend_ms < v.FRONTEND_MS_MAX  # a served request's front end: milliseconds, not seconds
    assert set(eff.engine_factor) <= {"vllm", "sglang", "trtllm", "optimum-habana"} and eff.engine_factor["trtllm"] == 1.0
    assert 0.1 <= eff.moe_gemm_ratio <= 1.0  # grouped expert GEMMs: a share of eta_c, never above it
    assert len(v._NAMES) <= 13


@pytest.mark.parametrize("by_family", [False, True], ids=["by-source", "by-family"])
def test_leave_out_never_fits_on_the_held_out_group(monkeypatch, by_family):
    seen = []

    def fake_fit(rows, start=None, iters=0, restarts=0):
        seen.append({r["source_id"] for r in rows})
        return start

    monkeypatch.setattr(v, "fit", fake_fit)
    monkeypatch.setattr(v, "errors", lambda eff, rows: [{"source_id": r["source_id"]} for r in rows])
    out = v.leave_one_source_out(fitted_efficiency(), by_family=by_family)
    key = v.source_family if by_family else (lambda sid: sid)
    groups = sorted({key(r["source_id"]) for r in v.usable_rows()})
    assert len(seen) == len(groups)
    for held, used in zip(groups, seen):
        assert not any(key(sid) == held for sid in used)
    assert len(out) == len(v.usable_rows())
    if by_family:
        # TensorRT-LLM's v1.0 and v1.2 tables re-measure the same setups: one family, held out together.
        assert len(groups) < len({r["source_id"] for r in v.usable_rows()})
        assert v.source_family("trtllm-perf-v1.0") == v.source_family("trtllm-perf-v1.2")


def test_held_out_refits_run_the_shipped_fits_converged_search(monkeypatch):
    """A held-out refit that stops short scores its search, not the estimator: 100 steps without restarts left
    inferencex-870's fold 12 % above its converged loss and moved its held-out median by 5 points. Every fold, and the
    forward check, runs the shipped fit's own search (FIT_ITERS steps and FIT_RESTARTS restarts) unless told."""
    import inspect

    seen = []

    def fake_fit(rows, start=None, iters=0, restarts=0):
        seen.append((iters, restarts))
        return start

    for fn in (v.fit, v.leave_one_source_out, v.forward_in_time):
        params = inspect.signature(fn).parameters
        assert (params["iters"].default, params["restarts"].default) == (v.FIT_ITERS, v.FIT_RESTARTS) == (300, 4)
    monkeypatch.setattr(v, "fit", fake_fit)
    monkeypatch.setattr(v, "errors", lambda eff, rows: [])
    v.leave_one_source_out(fitted_efficiency())
    v.forward_in_time(fitted_efficiency(), "2025-09")
    v.leave_one_source_out(fitted_efficiency(), iters=7, restarts=0)
    n = len({r["source_id"] for r in v.usable_rows()})
    assert seen == [(300, 4)] * (n + 1) + [(7, 0)] * n


def test_held_out_refits_in_parallel_give_the_serial_answer(monkeypatch, vendor_fit):
    """--jobs runs the folds in worker processes: the same rows, in the same order, with the same errors, and each
    fold under its own architecture factors (Intel's Gaudi 3 table held out: Gaudi 3 at its prior, not its fit)."""
    from dataclasses import replace

    monkeypatch.setattr(v, "fit", lambda rows, start=None, iters=0, restarts=0:
                        replace(start, eta_bw=start.eta_bw * (1 - len(rows) / 10_000)))
    serial = v.leave_one_source_out(fitted_efficiency(), factors_without=vendor_fit.factors_without)
    parallel = v.leave_one_source_out(fitted_efficiency(), factors_without=vendor_fit.factors_without, jobs=2)
    key = lambda errs: [(e["row_id"], e["metric"], e["predicted"]) for e in errs]  # noqa: E731
    assert len(serial) == len(v.comparisons(v.usable_rows())) and key(parallel) == key(serial)
    plain = {(e["row_id"], e["metric"]): e for e in v.leave_one_source_out(fitted_efficiency(), jobs=2)}
    moved = {e["source_id"] for e in parallel if e["predicted"] != plain[(e["row_id"], e["metric"])]["predicted"]}
    assert "intel-gaudi3-perf-1.18" in moved and "inferencex-828" not in moved


def test_held_out_refits_use_factors_fitted_without_the_sources_vendor_rows(monkeypatch, vendor_fit):
    """Intel's Gaudi 3 table gave both serving rows and the Gaudi 3 architecture factor: held out, it must be
    predicted by a factor that never saw it (Gaudi 2's, at most 1.0, as for a Gaudi 3 without rows), and a source that
    published no vendor row keeps the shipped factors."""
    from gpuplan.perf import vendor_efficiency as ve

    seen = {}

    def fake_errors(eff, rows):
        sids = {r["source_id"] for r in rows}
        seen[frozenset(sids)] = {g: ve.applied_factor(g, "serving") for g in ("Gaudi3", "B200", "MI300X")}
        return [{"source_id": r["source_id"]} for r in rows]

    monkeypatch.setattr(v, "fit", lambda rows, start=None, iters=0, restarts=0: start)
    monkeypatch.setattr(v, "errors", fake_errors)
    shipped = {g: ve.applied_factor(g, "serving") for g in ("Gaudi3", "B200", "MI300X")}
    assert shipped["Gaudi3"].basis == "fitted"
    v.leave_one_source_out(fitted_efficiency(), factors_without=vendor_fit.factors_without)

    g3 = seen[frozenset({"intel-gaudi3-perf-1.18"})]["Gaudi3"]
    # Gaudi 2's factor, never above the reference's 1.0 (a device without rows is not credited with beating Hopper).
    assert g3.basis == "prior" and g3.factor == min(ve.factor("Gaudi2", "serving").factor, 1.0) != shipped["Gaudi3"].factor
    blackwell = seen[frozenset({"trtllm-perf-v1.0"})]["B200"]
    assert blackwell.n_rows < shipped["B200"].n_rows  # the table's own B200/GB200 rows are out
    unrelated = seen[frozenset({"inferencex-828"})]
    assert all(unrelated[g] == shipped[g] for g in shipped)
    assert {g: ve.applied_factor(g, "serving") for g in shipped} == shipped  # nothing leaks out of the refits


def test_forward_in_time_fits_on_older_sources_only(monkeypatch):
    seen = []

    def fake_fit(rows, start=None, iters=0, restarts=0):
        seen.append(rows)
        return start

    monkeypatch.setattr(v, "fit", fake_fit)
    monkeypatch.setattr(v, "errors", lambda eff, rows: [{"month": v._month(r["source_date"])} for r in rows])
    out = v.forward_in_time(fitted_efficiency(), "2025-09")
    assert len(seen) == 1 and seen[0] and all(v._month(r["source_date"]) < "2025-09" for r in seen[0])
    assert out and all(e["month"] >= "2025-09" for e in out)
    assert len(out) + len({r["row_id"] for r in seen[0]}) <= len(v.usable_rows())
    assert v._month("2025-10 or later") == "2025-10" and v._month("2026") == "2026-01" and v._month("") == ""
    with pytest.raises(ValueError, match="need some on each side"):
        v.forward_in_time(fitted_efficiency(), "2030-01")


def test_error_bands_ship_per_regime():
    doc = v.error_bands()
    assert doc["command"].startswith("python benchmarks/validate_serving.py") and doc["date"]
    for reg in v.REGIMES:
        b = v.error_band(reg)
        assert b is not None and b["n"] >= 5, reg
        assert b["p10"] <= b["p50"] <= b["p90"]
    assert v.error_band("no-such-regime") is None


def test_a_fit_holds_what_its_rows_cannot_inform():
    eff = fitted_efficiency()
    rows = v.fit_rows()
    assert v.unidentified(rows) == set()  # the full fit informs every parameter
    no_served = [r for r in rows if not v.served(r)]
    assert "frontend_ms" in v.unidentified(no_served)
    # A held-out source that was a parameter's only evidence: the refit assumes the unfitted default, not the full fit.
    # The front end's default is the public client-vs-engine TTFT gap (engines._UNFITTED), not zero.
    assert v._unfitted_for(eff, {"frontend_ms", "f_vllm"}).frontend_ms == 8.0
    assert v._unfitted_for(eff, {"f_vllm"}).engine_factor["vllm"] == 1.0
    gaudi = [r for r in rows if r["engine"] == "optimum-habana"][:3]
    assert {"f_vllm", "frontend_ms"} <= v.unidentified(gaudi)
    refit = v.fit(gaudi, start=eff, iters=3, restarts=0)
    assert refit.engine_factor["vllm"] == pytest.approx(eff.engine_factor["vllm"], rel=1e-9)
    assert refit.frontend_ms == pytest.approx(eff.frontend_ms, rel=1e-9)


def test_held_out_tp8_low_batch_decode_stays_near_its_measurement():
    """InferenceX's vLLM gpt-oss-120b sweep on H100 (TP 2-8, 4-64 requests) is the only source of tensor-parallel
    decode at a few tokens per expert. Held out, the refit used to explain the rest of the data with a 44 us
    all-reduce (published NVLink all-reduces take 5-25 us) and missed the sweep by a median 56 %; with the all-reduce
    held at its measured 8 us it misses by about 32 %. One short refit (120 steps, no restart; leave-one-source-out runs
    the converged search, minutes), about 20 s."""
    import numpy as np

    eff = fitted_efficiency()
    train = [r for r in v.fit_rows() if r["source_id"] != "inferencex-828"]
    held = [r for r in v.usable_rows() if r["source_id"] == "inferencex-828"]
    assert len(held) >= 10
    refit = v.fit(train, start=v._unfitted_for(eff, v.unidentified(train)), iters=120, restarts=0)
    assert refit.allreduce_latency_us == pytest.approx(eff.allreduce_latency_us, rel=1e-9)  # measured, never refitted
    ape = [abs(e["error"]) for e in v.errors(refit, held)]
    assert float(np.median(ape)) < 0.40


def test_decode_kernel_floor_is_paid_per_gemm_class_kernel():
    """A CUDA-graph decode step still pays each kernel's minimum duration. A dense GQA layer runs five GEMM-class
    kernels (QKV, attention, O, gate/up, down); MLA's absorbed decode runs three more, routed experts one more (the
    router), shared experts two more. DeepSeek-V3 (3 dense + 58 MoE layers) pays 2.2x a Llama layer's floor, gpt-oss
    1.2x; with one floor per layer its AWQ decode at one request was predicted 57 % too fast."""
    import numpy as np

    from gpuplan.models import resolve_model
    from gpuplan.perf.inference_memory import model_shape

    ratio = {m: model_shape(resolve_model(m)).layer_kernel_ratio for m in ("llama-3.1-70b", "deepseek-v3", "gpt-oss-120b")}
    assert ratio["llama-3.1-70b"] == 1.0
    assert ratio["deepseek-v3"] == pytest.approx((5 + 3 + 58 / 61 * (1 + 2)) / 5)
    assert ratio["gpt-oss-120b"] == pytest.approx(6 / 5)
    c1 = [e for e in v.errors(fitted_efficiency()) if e["source_id"] == "tt-gpu-ref-dsr1-356" and e["metric"] == "tpot_ms"]
    assert len(c1) >= 6
    assert float(np.median([abs(e["error"]) for e in c1])) < 0.40


def test_forward_in_time_holds_the_measured_all_reduce():
    """Refitted on the sources published before 2025-09 alone, the fit once moved the all-reduce to 19 us (NCCL's
    figure, not the engines' kernels') and predicted the 190 newer comparisons at a median 24.6 %; held at its
    measured 8 us, 18.4 % (21.8 % since Gaudi's scale-up links and Gaudi 2's factor changed the older rows' fit; the
    same 100-step search from mid-range, whose end point moves by a few points with any change to the loss). One
    short refit, as benchmarks/validate_serving.py --forward 2025-09 --iters 100 --restarts 0 runs it; the converged
    search takes minutes."""
    import numpy as np

    eff = fitted_efficiency()
    fwd = v.forward_in_time(eff, "2025-09", iters=100, restarts=0)
    assert len(fwd) >= 150
    ape = [abs(e["error"]) for e in fwd if e["group"] != "assumed_input"]
    assert float(np.median(ape)) < 0.23


def test_a_benchmarks_first_wave_is_in_its_mean_ttft():
    # `vllm bench serve --num-prompts N --max-concurrency C` starts C requests at once: their prompts queue for the
    # token budget, and the mean TTFT it prints counts that wave. Each such row is predicted closer with it than
    # at steady state alone, and none of its other metrics moves. (Where C exceeds what fits at once, the queue
    # beyond it sets TTFT and the wave is not added: vllm-pr25135's 405B on one MI355X.)
    eff = fitted_efficiency()
    rows = [r for r in v.usable_rows() if r["num_prompts"] and r["measured_ttft_ms"] and int(r["concurrency"]) > 4]
    assert {r["source_id"] for r in rows} >= {"inferencex-870", "vllm-recipes-pr431-mi300x"}
    for r in rows:
        with_wave = v.predict_row(r, eff)
        steady = v.predict_row({**r, "num_prompts": ""}, eff)
        measured = float(r["measured_ttft_ms"])
        if int(r["concurrency"]) > steady.max_concurrency:
            assert with_wave.ttft_ms == steady.ttft_ms
            continue
        assert abs(with_wave.ttft_ms / measured - 1) < abs(steady.ttft_ms / measured - 1), r["row_id"]
        assert with_wave.tpot_ms == steady.tpot_ms and with_wave.output_tokens_per_s == steady.output_tokens_per_s


def test_fixed_length_benchmarks_are_predicted_with_grouped_arrivals():
    # Only sources whose token totals or commands show one prompt and one output length are marked; InferenceX draws
    # its lengths at range ratio 0.8 and GPUStack's latency pages use ShareGPT. The one marked row with a measured
    # TTFT at concurrency (AMD's Qwen3 8B on MI300X at 32 clients, 645 ms) is predicted closer with its clients
    # arriving in groups than one at a time.
    eff = fitted_efficiency()
    fixed = [r for r in v.usable_rows() if r["fixed_lengths"] == "yes"]
    assert {r["source_id"] for r in fixed} == {"achatbot-sglang-gptoss-183", "vllm-pr48757-qwen3-32b",
                                               "vllm-recipes-pr431-mi300x"}
    assert not any(r["fixed_lengths"] for r in v.usable_rows() if r["source_id"].startswith(("inferencex", "gpustack")))
    timed = [r for r in fixed if r["measured_ttft_ms"] and int(r["concurrency"]) > 1]
    assert timed
    for r in timed:
        grouped = v.predict_row(r, eff)
        spread = v.predict_row({**r, "fixed_lengths": ""}, eff)
        measured = float(r["measured_ttft_ms"])
        assert abs(grouped.ttft_ms / measured - 1) < 0.3 < abs(spread.ttft_ms / measured - 1), r["row_id"]


def test_trtllm_bench_rows_run_their_datasets_request_count():
    """NVIDIA's performance overview prepares each ISL/OSL dataset with a stated request count (3000 for 1000/1000,
    1000 for 20000/2000, ...), all queued at once. Predicted at the engine's steady state instead, the MoE rows whose
    engines hold more than 3000 such requests (attention DP over 4-8 GPUs) came out up to 46 % fast; run as the
    benchmark ran them, in waves of as many as fit, each is slower than at steady state and together they are closer
    (Qwen3-235B on 8 H200, measured at the steady-state figure, moves 0 % -> -3 %)."""
    import numpy as np

    rows = [r for r in v.usable_rows() if r["source_id"].startswith("trtllm-perf")]
    assert len(rows) > 100 and all(r["num_prompts"] in ("1000", "1500", "3000", "30000") for r in rows)
    assert {r["num_prompts"] for r in rows if (r["input_len"], r["output_len"]) == ("1000", "1000")} == {"3000"}
    eff = fitted_efficiency()
    moe = [r for r in rows if r["regime"] == "moe_large" and r["input_len"] == "1000" and int(r["n_gpus"]) >= 4
           and v.predict_row({**r, "num_prompts": ""}, eff).max_concurrency > 3300]
    assert len(moe) >= 4
    run, steady = [], []
    for r in moe:
        measured = float(r["measured_output_tokens_per_s"])
        run.append(v.predict_row(r, eff).output_tokens_per_s / measured - 1)
        steady.append(v.predict_row({**r, "num_prompts": ""}, eff).output_tokens_per_s / measured - 1)
        assert run[-1] < steady[-1], r["model_label"]
    assert np.median(np.abs(run)) < np.median(np.abs(steady)) - 0.05
    large = [abs(e["error"]) for e in v.errors(eff) if e["regime"] == "moe_large"]
    assert float(np.median(large)) < 0.20  # 22.9 % at steady state, 16.8 % now


def test_error_bands_leave_out_rows_that_time_other_software():
    """A row with a fit_note (AMD's MLPerf harness, not the stock vLLM its engine key names) is scored but neither
    fitted nor counted in the band a plan for that engine carries."""
    other = {int(r["row_id"]) for r in v.usable_rows() if r.get("fit_note")}
    plain = int(v.fit_rows()[0]["row_id"])
    errs = [dict(row_id=i, metric="output_tokens_per_s", group="max_throughput", regime="amd", error=-0.4) for i in other]
    errs.append(dict(row_id=plain, metric="output_tokens_per_s", group="max_throughput", regime="amd", error=0.1))
    band = v.residual_bands(errs)["amd"]
    assert other and band["n"] == 1 and band["p10"] == band["p90"] == round(math.log(1.1), 4)
