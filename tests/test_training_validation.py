"""Training estimator vs published measurements (perf/data/training-runs.csv).

Pinned rows use looser tolerances than the benchmark shows (benchmarks/validate_training.py),
so a regression in the model fails here while refits that keep the published accuracy pass.
"""
from __future__ import annotations

import json
from importlib import resources

import pytest

from gpuplan.perf.efficiency import FITTED_NAMES, default_efficiency
from gpuplan.perf.training_validation import (err_pct, evaluate, fit_throughput, load_rows, predict, prepare_row,
                                              summarize)


def _row(number: int) -> dict:
    return next(r for r in load_rows() if int(r["row"]) == number)


@pytest.fixture(scope="module")
def throughput_preps():
    return [p for p in (prepare_row(r) for r in load_rows() if r["row_type"] == "THROUGHPUT") if p is not None]


# (row, tolerance %): a spread of GPU generations, sizes and layouts.
PINNED = [
    (9, 25.0),   # Llama-3.1-405B full run, 16,384 H100: GPU-hours
    (16, 25.0),  # Pythia-6.9B full run, 128 A100-40GB
    (17, 25.0),  # PaLM-540B full run, TPU v4 (validation-only specs)
    (24, 15.0),  # Llama-3.1-405B TP8 PP16 DP64 step time
    (34, 15.0),  # Megatron 1T weak scaling (TFLOP/s -> step time, recompute counted)
    (43, 15.0),  # Korthikanti 1T, SP + selective recompute
    (54, 15.0),  # Nemotron-4-340B DGXC recipe
    # Llama-3-70B LoRA DGXC recipe: +20% (pessimistic) since LoRA keeps the memory-bound share of the step and
    # the adapters' traffic (held-out H100 LoRA rows went from -28% to +2%); NVIDIA's fused kernels beat that.
    (55, 25.0),
]


@pytest.mark.parametrize("row,tol", PINNED)
def test_pinned_rows(row, tol):
    p = prepare_row(_row(row))
    assert p is not None and p.fits
    pred, _ = predict(p, default_efficiency())
    assert abs(err_pct(pred, p.measured)) <= tol, (row, pred, p.measured)


def test_throughput_accuracy(throughput_preps):
    s = summarize(evaluate(throughput_preps, default_efficiency()))["THROUGHPUT"]
    assert s["n"] >= 20
    assert s["median_abs_pct"] <= 10.0  # target; measured 5.3 %
    assert s["p90_abs_pct"] <= 30.0


def test_fit_is_reproducible(throughput_preps):
    """Refitting the compute parameters on the shipped rows lands on the shipped values."""
    shipped = default_efficiency()
    refit = fit_throughput(throughput_preps, shipped.with_params(eta_max=0.6, h_half=1200.0, tp_exposed=0.5))
    assert refit.eta_max == pytest.approx(shipped.eta_max, rel=0.05)
    assert refit.h_half == pytest.approx(shipped.h_half, rel=0.25)


def test_shipped_parameters_are_interpretable():
    doc = json.loads(resources.files("gpuplan.perf.data").joinpath("training-efficiency.json").read_text())
    p = doc["params"]
    assert set(FITTED_NAMES) <= set(p)
    assert 0.3 < p["eta_max"] < 0.9
    assert 0 <= p["h_half"] < 10000
    assert 0.5 < p["goodput_base"] <= 1.0
    assert doc["summary_in_sample"]["THROUGHPUT"]["median_abs_pct"] <= 10


def test_rows_are_normalized():
    rows = load_rows()
    assert len(rows) == 56
    kinds = {r["row_type"] for r in rows}
    assert kinds == {"FULL", "THROUGHPUT", "PROJECTION", "BENCHMARK"}
    for r in rows:
        assert r["source"]  # the original text is kept
        if r["use"] == "1":
            assert r["gpu_id"] and r["model_ref"]
        else:
            assert r["skip_reason"]
    assert sum(r["use"] == "1" for r in rows) >= 45


def test_baseline_rule_reproduces_formulas_md():
    """6ND/(peak x 0.4) on the full runs: formulas.md quotes 28 % median, 51 % p90."""
    import numpy as np

    from gpuplan.perf.training_validation import baseline_gpu_hours

    full = [r for r in load_rows() if r["row_type"] == "FULL" and r["use"] == "1"]
    errs = np.abs([err_pct(baseline_gpu_hours(r), float(r["gpu_hours"])) for r in full])
    assert len(full) == 23
    assert np.median(errs) == pytest.approx(28, abs=2)
    assert np.percentile(errs, 90) == pytest.approx(51, abs=3)
