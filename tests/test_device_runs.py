"""gpuplan's training-time model against our own single-H100 PyTorch measurements (perf/data/device-runs-h100.csv).

These rows are HELD OUT: nothing in gpuplan is fitted to them (the efficiency law was fitted to
published, mostly Megatron-class multi-GPU runs, perf/data/training-runs.csv). They were
measured by benchmarks/gpu/measure_training_h100.py on one H100 80GB HBM3 with torch 2.11 on
2026-11-23 (two runs; the second repeats every shape of the first within ~1%); the full table is
printed by benchmarks/validate_device_runs.py.

What was observed with the shipped parameters (eta_max 0.638, h_half 1200):
- eager PyTorch (fp32 weights + bf16 autocast, fused AdamW, flash SDPA): median |error| 4.0%,
  p90 7.4%, n=19 (range -7.2% .. +9.0%);
- torch.compile (per block + head/loss): median |error| 31.7%, p90 55.3%, n=19, every row
  over-predicted (+13.7% .. +56.6%): compiled PyTorch beats the law's small-layer penalty
  (its implied eta fits eta_max ~0.64 but h_half ~500 instead of ~1200), worst at h = 768-1024.
Re-measured 2026-11-23 (second round), after the refit on 254 published rows that added a GEMM
efficiency falling with rows per micro-batch and a fixed cost per layer (parameters now eta_max
0.83, h_half 2238, m_half ~590 rows): eager median |error| 15.8%, p90 34.8%, every row but one
over-predicted (-0.3% .. +41.2%); compile median 45.4%, p90 111% (+17.8% .. +122.6%), worst on the
GPT-2-small shapes. The published whole runs of small models pulled the law towards slower small
shapes; these held-out single-GPU step times say it went too far for one GPU: pessimistic, the
safe side for a plan, and reported in the closing note rather than tuned away.
The pins below are looser than that, so a refit that keeps the published accuracy passes while a
broken time model (a factor in the step time, a lost term) fails: the eager pin catches a model
that became too fast or too slow, the compile pin one that became much slower.
"""
from __future__ import annotations

import csv
import io
import math
from importlib import resources

import numpy as np
import pytest

from gpuplan.models.spec import ModelSpec
from gpuplan.perf.training_estimate import estimate_training
from gpuplan.perf.workload import make_workload

MODES = {"eager", "compile", "compile_full"}
# (mode, observed median |err| %, pinned median %, pinned p90 %)
PINS = [
    ("eager", 15.8, 22.0, 45.0),
    ("compile", 45.4, 60.0, 125.0),
]


def _rows() -> list[dict]:
    text = resources.files("gpuplan.perf.data").joinpath("device-runs-h100.csv").read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text)))


def _spec(row: dict) -> ModelSpec:
    h, a, kv = int(row["hidden"]), int(row["n_heads"]), int(row["n_kv_heads"])
    return ModelSpec(name=row["shape"], n_layers=int(row["n_layers"]), hidden_size=h, n_heads=a, n_kv_heads=kv,
                     head_dim=h // a, ffn_size=int(row["ffn"]), gated_ffn=True, vocab_size=int(row["vocab"]),
                     tied_embeddings=False, attention="gqa" if kv < a else "mha", max_seq_len=int(row["seq_len"]))


def _predicted_step_s(row: dict) -> float:
    """gpuplan at the layout the row ran with: 1 x H100-SXM, no parallelism, no accumulation, no recompute."""
    s, mb = int(row["seq_len"]), int(row["micro_batch"])
    wl = make_workload(kind="pretrain", method="full", tokens=1e9, seq_len=s, global_batch=mb, precision="bf16")
    est = estimate_training(_spec(row), wl, "H100-SXM", 1, tp=1, pp=1, dp=1, cp=1, micro_batch=mb,
                            recompute="none", zero=0, n_runners_up=0)
    assert est.layout.global_batch == mb and est.layout.micro_batches == 1
    return est.step_time_s


@pytest.fixture(scope="module")
def errors() -> dict[str, np.ndarray]:
    out: dict[str, list[float]] = {}
    for row in _rows():
        meas = float(row["step_time_s"])
        out.setdefault(row["mode"], []).append(100.0 * (_predicted_step_s(row) - meas) / meas)
    return {k: np.asarray(v) for k, v in out.items()}


def test_rows_are_sane():
    rows = _rows()
    assert len(rows) >= 20
    for row in rows:
        where = f"{row['shape']} {row['mode']} run {row['run_id']}"
        assert row["mode"] in MODES, where
        assert "measure_training_h100.py" in row["source"] and "H100" in row["source"], where
        assert "H100" in row["device"] and row["torch"] and row["date"], where
        for key in ("n_layers", "hidden", "n_heads", "n_kv_heads", "ffn", "vocab", "seq_len", "micro_batch",
                    "params", "steps_timed"):
            assert int(row[key]) > 0, (where, key)
        for key in ("step_time_s", "step_time_min_s", "step_time_max_s", "tokens_per_s", "peak_mem_gib"):
            v = float(row[key])
            assert math.isfinite(v) and v > 0, (where, key)
        st = float(row["step_time_s"])
        assert float(row["step_time_min_s"]) <= st <= float(row["step_time_max_s"]), where
        assert int(row["steps_timed"]) >= 10, where
        tokens = int(row["micro_batch"]) * int(row["seq_len"])
        assert float(row["tokens_per_s"]) == pytest.approx(tokens / st, rel=1e-3), where
        assert float(row["peak_mem_gib"]) < 80.0, where  # one 80 GB card
        assert int(row["n_heads"]) % int(row["n_kv_heads"]) == 0 and int(row["hidden"]) % int(row["n_heads"]) == 0
        # The model gpuplan is asked about is exactly the one that ran.
        assert int(_spec(row).total_params()) == int(row["params"]), where


def test_both_modes_measured_on_every_shape():
    rows = _rows()
    shapes = {(r["shape"], r["mode"]) for r in rows}
    for name in {r["shape"] for r in rows}:
        assert (name, "eager") in shapes and (name, "compile") in shapes, name


@pytest.mark.parametrize("mode,observed,median_tol,p90_tol", PINS)
def test_step_time_error_is_pinned(errors, mode, observed, median_tol, p90_tol):
    e = np.abs(errors[mode])
    assert len(e) >= 10
    med, p90 = float(np.median(e)), float(np.percentile(e, 90))
    assert med <= median_tol, f"{mode}: median |error| {med:.1f}% (observed {observed}% when pinned)"
    assert p90 <= p90_tol, f"{mode}: p90 |error| {p90:.1f}%"


def test_compiled_runs_are_faster_than_eager_and_the_model_sits_between():
    """The law lands on eager speed; compiled PyTorch is faster on every shape. If the model ever
    predicts faster than the compiled runs by a margin, something changed: say so here."""
    by = {}
    for row in _rows():
        by.setdefault((row["shape"], row["run_id"]), {})[row["mode"]] = row
    pairs = [v for v in by.values() if "eager" in v and "compile" in v]
    assert pairs
    for v in pairs:
        eager, comp = float(v["eager"]["step_time_s"]), float(v["compile"]["step_time_s"])
        assert comp < eager, v["eager"]["shape"]
        pred = _predicted_step_s(v["eager"])
        assert pred > 0.9 * comp, (v["eager"]["shape"], pred, comp)
