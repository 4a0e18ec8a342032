"""gpuplan's training-time model in three regimes where it is known to be optimistic, against our
own single-H100 PyTorch measurements (perf/data/device-regimes-h100.csv, HELD OUT: nothing is
fitted to them). Measured by benchmarks/gpu/measure_regimes_h100.py on one H100 80GB HBM3 with
torch 2.11 on 2026-11-23 (two runs of every job; they agree within ~1%); the full table is printed
by benchmarks/validate_device_regimes.py.

Pinned as it is today (error = (predicted - measured) / measured; negative = gpuplan predicts a
faster step than ran):
- LoRA r16 on all block linears, Llama-3.2-1B/3B shapes, s 2-4k, eager: median +2.3%, worst +8.8%
  since the time model keeps the memory-bound share of the step (h_half / (h + h_half), from the
  fitted curve) at full-training size and adds the adapters' own memory traffic. Before that it was
  -27.9% / -30.9% (LoRA costed at 2/3 of full training; measured 0.72-0.91). These rows showed
  which physics was missing, so for LoRA they are no longer an untouched held-out check; the
  published NVIDIA DGXC 70B LoRA row (training-runs.csv row 55) moved from -2% to +20%.
- long context (1.1B, full training, one GPU, flash SDPA): -3% at 4k growing to -15% at 16k, and
  with full recompute -17% at 32k and -24% at 64k (median of the >= 32k rows -20.9%, 1.27x).
  Not the 2-3.7x of the published multi-GPU 32k-128k rows: one GPU has no context-parallel cost.
- FP8 (block linears through torch._scaled_mm, per-tensor dynamic scaling, head in bf16), small
  models h 768-4096, eager: median -58.7% (2.5x), worst -64.9% -- FP8 is SLOWER than bf16
  there (0.52-0.78x) while gpuplan promises 1.37x (1.56x before the dynamic-scaling cast traffic
  was counted). Compiled (casts fused): FP8 gives 0.98-1.34x over compiled bf16: speed-up error
  median -19.5%, worst -27.8% (was -29.8% / -38.1%).
- FP8 GEMM kernel alone at (8192 x h) @ (h x 4h): gpuplan's lowp_ratio 0.8 holds (measured
  0.70-0.91, median 0.82: error +2.6%); with the per-call quantization of both operands included
  it is 0.09-0.44 (median 0.28: -64.9%), worst at h = 768.
- control: the bf16 rows of the FP8 shapes, measured in the same session, sit at -4.8% (eager),
  as the earlier device-runs rows do, so the shortfalls above are not drift of the machine.
Re-pinned 2026-11-23 (second round) after the estimator was refitted on 254 published rows with
new physics (GEMM efficiency vs rows per micro-batch, a fixed cost per layer, attention timed at
attn_ratio 0.52 of the GEMM efficiency, fp8 lowp ratio fitted to ~1.0 with the casts timed apart).
None of these rows was in that fit, and they moved: LoRA +2.3% -> +19.6% (pessimistic, worst
+25.3%); long context -20.9% -> +23.6% (now pessimistic on one GPU, more so the longer the
sequence); the bf16 control -4.8% -> +12.2%; the FP8 kernel alone +2.6% -> -17.7% (the public FP8
rows pull lowp to 1.0 where this H100 reaches 0.82); eager FP8 steps still 2.2x optimistic
(-54.9%). The published-row fit and these held-out single-GPU rows disagree on small shapes;
both are reported, neither is tuned to the other.
Third refit (2026-11-23: FlashAttention backward counted as 2.5 forward passes, EP all-to-all hidden behind
compute up to it, corrected B200 long-sequence GPU counts and LoRA adapter sets): every group stayed within
PIN_TOL except the bf16 control's worst row, +19.4% -> +14.9% (median +12.2% -> +10.5%).
Fourth refit (2026-11-23, fourth session: attention on Blackwell timed at attn_blackwell x Hopper's, refit from
the shipped point): LoRA +19.6% -> +15.0% (worst +25.3% -> +20.9%); long context +23.6% -> +25.9% (worst
+26.9%); the bf16 control +10.5% -> +7.8%; the others moved less than 2 points.
Fifth refit (2026-11-23, seventh session: MoE fixed costs per local expert, no per-layer MoE host sync on NVL72
racks, FP8 casts fused as TransformerEngine runs them (2.5 bytes per dim, was 5 unfused), the interleaved pipeline's
transfers overlapped with compute; refit on 330 rows): eta_max 0.727 -> 0.680, layer_overhead_us 459 -> 500 and
tp_exposed 0.59 -> 0.79 made these single-GPU rows more pessimistic: LoRA +15.0% -> +17.7% (worst +21.5%), long
context +25.9% -> +31.4% (worst +32.8%), the bf16 control +7.8% -> +8.6%, the compiled FP8 speed-up -25.7% ->
-28.4%; the others moved less than 2 points. The published rows' leave-one-source-out throughput error went the
other way: median 10.6% -> 8.7%, p90 29.4% -> 30.0% on a set grown from 218 to 279 throughput rows.
Sixth refit (2026-11-24: routed experts no longer slowed by the efficiency law at their narrow width; fine
granularity is charged per local expert): every group moved less than 0.5 points (dense single-GPU shapes).
Seventh refit (2026-11-24, ninth session: 42 rows from torchtitan, AWS and AMD joined the fit, TP overlap read from
the rows): attention slowed (attn_ratio 0.52 -> 0.48) and the long-context rows grew more pessimistic, +31.8% ->
+37.7% (worst +33.3% -> +40.1%; all long-context rows +19.9% -> +22.5%); LoRA +17.1% -> +15.1%; the others moved
less than 2 points.
Eighth refit (2026-11-24, tenth session: dp_exposed, a share of every data-parallel collective that never hides,
fitted 0.82; rows that name the plain 1F1B schedule keep one chunk per stage): these single-GPU rows have no data
parallelism, but the refit moved eta_max 0.662 -> 0.688 and every group moved toward its measurement: LoRA +17.1%
-> +10.6% (worst +21.5% -> +15.1%), long context +37.7% -> +33.2% (worst +40.1% -> +35.7%; all long-context rows
+22.5% -> +17.9%), the bf16 control +8.6% -> +1.2%, eager FP8 -57.5% -> -59.7%.
Ninth refit (2026-11-27, twelfth session: a `framework` input, PyTorch-native FP8 keeping the fitted pytorch_fp8_ratio
0.70 of Megatron's low-precision GEMM efficiency, moved dp_exposed 0.82 -> 0.70, eta_max 0.688 -> 0.705 and m_half
22 -> 107): these rows are timed at the default framework (Megatron), so only the shared parameters moved them: long
context +33.2% -> +30.7% (worst +35.7% -> +32.8%; all long-context rows +17.9% -> +16.6%), the others less than 1 point.
Tenth refit (2026-11-27, thirteenth session: a PyTorch-native stack's attention on Hopper / Blackwell keeps the fitted
pytorch_attn_ratio 0.59 of Megatron's cuDNN attention speed; attention runs at attn_ratio of the wide-layer GEMM
efficiency whatever the hidden size, and heads narrower than 128 run slower, attn_dhalf 29 (these rows' 64-wide heads at
0.85x); attn_ratio 0.48 -> 0.44, eta_max 0.705 -> 0.721, h_half 1243 -> 1254): timed at the default framework
(Megatron) these rows moved toward their measurements: long context +30.7% -> +7.9% (worst +8.0%; all long-context rows
+16.6% -> +2.0%), LoRA +11.2% -> +7.1%, the bf16 control +1.9% -> -7.6% (worst -11.6%), eager FP8 -59.5% -> -64.2%.
These runs are PyTorch (flash SDPA = FlashAttention-2 on H100 in torch 2.11): timed as `--framework pytorch` the
long-context rows would be +12% at 4k to +67% at 64k. Our own runs and the published PyTorch rows (LLM Foundry 2023,
torchtitan's context-parallel runs on 500 W H100s) disagree on how much slower that stack's attention is: the published
rows carry more than the kernel (2023-24 stacks, ring attention in PyTorch); both are reported, neither is tuned to the
other.
The pins are two-sided (PIN_TOL percentage points around today's value): an estimator change
that closes a gap fails here as visibly as one that widens it; update the pins with the numbers.
"""
from __future__ import annotations

import csv
import importlib.util
import io
import math
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from gpuplan.catalog.gpus import get_gpu
from gpuplan.models.spec import ModelSpec
from gpuplan.perf.efficiency import default_efficiency
from gpuplan.perf.training_estimate import estimate_training
from gpuplan.perf.training_shape import model_shape
from gpuplan.perf.workload import finetuning, make_workload

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "validate_device_regimes.py"
REGIMES = {"lora", "long_context", "fp8", "fp8_gemm"}
PIN_TOL = 4.0  # percentage points, either way
# (summary group, today's median signed error %, today's worst signed error %)
PINS = [
    ("lora", 7.1, 9.7),  # 19.6 / 25.3 before the fourth refit, 11.2 / 15.4 before the tenth (see docstring)
    ("long_context", 7.9, 8.0),  # 37.7 / 40.1 before the eighth refit, 30.7 / 32.8 before the tenth (docstring)
    ("long_context_all", 2.0, 8.0),
    ("fp8", -64.2, -68.8),
    ("fp8_speedup_eager", -62.0, -65.1),
    ("fp8_speedup_compile", -29.2, -35.1),
    ("fp8_bf16_ref", -7.6, -11.6),  # worst 19.4 -> 14.9 -> 11.7 -> 10.9 -> 10.8 -> 2.7 -> 3.6 -> -11.6, third to tenth
    ("fp8_gemm", -17.4, -29.7),
    ("fp8_gemm_cast", -71.7, -90.9),
]
TRAIN_INPUTS = ("n_layers", "hidden", "n_heads", "n_kv_heads", "ffn", "vocab", "seq_len", "micro_batch", "params",
                "trainable_params", "steps_timed")


def _rows() -> list[dict]:
    text = resources.files("gpuplan.perf.data").joinpath("device-regimes-h100.csv").read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text)))


def _train(rows):
    return [r for r in rows if r["regime"] != "fp8_gemm"]


def _gemm(rows):
    return [r for r in rows if r["regime"] == "fp8_gemm"]


def _spec(row: dict) -> ModelSpec:
    h, a, kv = int(row["hidden"]), int(row["n_heads"]), int(row["n_kv_heads"])
    return ModelSpec(name=row["shape"], n_layers=int(row["n_layers"]), hidden_size=h, n_heads=a, n_kv_heads=kv,
                     head_dim=h // a, ffn_size=int(row["ffn"]), gated_ffn=True, vocab_size=int(row["vocab"]),
                     tied_embeddings=False, attention="gqa" if kv < a else "mha", max_seq_len=int(row["seq_len"]))


def _predicted_step_s(row: dict) -> float:
    """gpuplan at the layout the row ran with: 1 x H100-SXM, no parallelism, no accumulation."""
    s, mb = int(row["seq_len"]), int(row["micro_batch"])
    if row["method"] == "lora":
        wl = finetuning(method="lora", tokens=1e9, seq_len=s, global_batch=mb, precision=row["precision"],
                        lora_rank=int(row["lora_rank"]), lora_targets="all")
    else:
        wl = make_workload(kind="pretrain", method="full", tokens=1e9, seq_len=s, global_batch=mb,
                           precision=row["precision"])
    est = estimate_training(_spec(row), wl, "H100-SXM", 1, tp=1, pp=1, dp=1, cp=1, micro_batch=mb,
                            recompute=row["recompute"], zero=0, n_runners_up=0)
    assert est.layout.global_batch == mb and est.layout.micro_batches == 1
    assert est.layout.recompute == row["recompute"] and est.method == row["method"]
    return est.step_time_s


def _err(pred: float, meas: float) -> float:
    return 100.0 * (pred - meas) / meas


@pytest.fixture(scope="module")
def validation():
    spec = importlib.util.spec_from_file_location("validate_device_regimes", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def summary(validation):
    return validation.evaluate()[2]


@pytest.fixture(scope="module")
def recomputed() -> dict[str, np.ndarray]:
    """The per-group errors, recomputed here from the rows without the validation script."""
    out: dict[str, list[float]] = {}
    preds = {}
    for i, row in enumerate(_train(_rows())):
        meas, pred = float(row["step_time_s"]), _predicted_step_s(row)
        preds[i] = (row, meas, pred)
        e = _err(pred, meas)
        if row["regime"] == "lora" and row["mode"] == "eager":
            out.setdefault("lora", []).append(e)
        if row["regime"] == "long_context":
            out.setdefault("long_context_all", []).append(e)
            if int(row["seq_len"]) >= 32768:
                out.setdefault("long_context", []).append(e)
        if row["regime"] == "fp8" and row["mode"] == "eager":
            out.setdefault("fp8" if row["precision"] == "fp8" else "fp8_bf16_ref", []).append(e)
    # FP8 / bf16 speed-up at the same shape, mode and run.
    pair: dict[tuple, dict] = {}
    for row, meas, pred in preds.values():
        if row["regime"] == "fp8":
            key = (row["shape"], row["seq_len"], row["micro_batch"], row["mode"], row["run_id"])
            pair.setdefault(key, {})[row["precision"]] = (meas, pred)
    for (_, _, _, mode, _), p in pair.items():
        (mb, pb), (mf, pf) = p["bf16"], p["fp8"]
        out.setdefault(f"fp8_speedup_{mode}", []).append(100.0 * ((mb / mf) / (pb / pf) - 1.0))
    # GEMM: measured lowp ratio against gpuplan's.
    gpu = get_gpu("H100-SXM")
    assumed = default_efficiency().lowp_ratio["fp8"]
    tf: dict[tuple, dict] = {}
    for r in _gemm(_rows()):
        key = (r["gemm_m"], r["gemm_k"], r["gemm_n"], r["run_id"])
        tf.setdefault(key, {})[r["precision"]] = float(r["gemm_tflops"])
    for t in tf.values():
        bf = t["bf16"] / gpu.peak_tflops("bf16")
        out.setdefault("fp8_gemm", []).append(100.0 * ((t["fp8"] / gpu.peak_tflops("fp8")) / bf / assumed - 1.0))
        out.setdefault("fp8_gemm_cast", []).append(
            100.0 * ((t["fp8+cast"] / gpu.peak_tflops("fp8")) / bf / assumed - 1.0))
    return {k: np.asarray(v) for k, v in out.items()}


def test_csv_parses_and_every_row_has_a_source_and_its_inputs():
    rows = _rows()
    assert {r["regime"] for r in rows} == REGIMES
    for row in rows:
        where = f"{row['regime']} {row['shape']} run {row['run_id']}"
        assert "measure_regimes_h100.py" in row["source"] and "H100" in row["source"], where
        assert "held out" in row["source"], where
        assert "H100" in row["device"] and row["torch"].startswith("2.11") and row["date"] == "2026-11-23", where
        assert row["run_id"] in {"1", "2"}, where
        if row["regime"] == "fp8_gemm":
            assert row["precision"] in {"bf16", "fp8", "fp8+cast"}, where
            m, k, n = (int(row[c]) for c in ("gemm_m", "gemm_k", "gemm_n"))
            assert m > 0 and n == 4 * k, where
            t_ms, tflops = float(row["gemm_time_ms"]), float(row["gemm_tflops"])
            assert tflops == pytest.approx(2.0 * m * k * n / (t_ms * 1e-3) / 1e12, rel=2e-3), where
            assert 0 < tflops < get_gpu("H100-SXM").peak_tflops("fp8" if "fp8" in row["precision"] else "bf16")
            continue
        assert row["method"] in {"full", "lora"} and row["precision"] in {"bf16", "fp8"}, where
        assert row["recompute"] in {"none", "full"} and row["mode"] in {"eager", "compile"}, where
        for key in TRAIN_INPUTS:
            assert int(row[key]) > 0, (where, key)
        for key in ("step_time_s", "step_time_min_s", "step_time_max_s", "tokens_per_s", "peak_mem_gib"):
            v = float(row[key])
            assert math.isfinite(v) and v > 0, (where, key)
        st = float(row["step_time_s"])
        assert float(row["step_time_min_s"]) <= st <= float(row["step_time_max_s"]), where
        assert int(row["steps_timed"]) >= 3, where
        assert float(row["tokens_per_s"]) == pytest.approx(int(row["micro_batch"]) * int(row["seq_len"]) / st,
                                                           rel=1e-3), where
        assert float(row["peak_mem_gib"]) < 80.0, where
        # The model gpuplan is asked about is exactly the one that ran, adapters included.
        spec = _spec(row)
        assert int(spec.total_params()) == int(row["params"]), where
        if row["method"] == "lora":
            assert int(row["lora_rank"]) == 16, where
            assert int(model_shape(spec).adapter_params(16, "all")) == int(row["trainable_params"]), where
        else:
            assert int(row["lora_rank"]) == 0 and int(row["trainable_params"]) == int(row["params"]), where


def test_what_each_regime_covers():
    rows = _train(_rows())
    lora = [r for r in rows if r["regime"] == "lora"]
    assert {(int(r["hidden"]), int(r["seq_len"])) for r in lora} >= {(2048, 2048), (2048, 4096), (3072, 2048),
                                                                     (3072, 4096)}
    long = [r for r in rows if r["regime"] == "long_context"]
    assert max(int(r["seq_len"]) for r in long) >= 65536
    assert {r["recompute"] for r in long if int(r["seq_len"]) >= 32768} == {"full"}
    fp8 = {(r["shape"], r["mode"], r["precision"]) for r in rows if r["regime"] == "fp8"}
    for shape, mode, _ in list(fp8):
        assert (shape, mode, "bf16") in fp8 and (shape, mode, "fp8") in fp8, (shape, mode)


def test_runs_repeat():
    """Both runs measured the same thing: the step times agree within 3%."""
    by: dict[tuple, dict] = {}
    for r in _train(_rows()):
        key = (r["regime"], r["shape"], r["mode"], r["precision"], r["recompute"], r["seq_len"], r["micro_batch"])
        by.setdefault(key, {})[r["run_id"]] = float(r["step_time_s"])
    pairs = [v for v in by.values() if len(v) == 2]
    assert len(pairs) >= 20
    for v in pairs:
        assert v["1"] == pytest.approx(v["2"], rel=0.03), v


def test_validation_script_numbers_are_computed_from_the_rows(validation, summary, recomputed):
    assert set(recomputed) <= set(summary)
    for key, e in recomputed.items():
        s = summary[key]
        assert s["n"] == e.size, key
        assert s["median_pct"] == pytest.approx(float(np.median(e)), abs=1e-9), key
        assert s["worst_pct"] == pytest.approx(float(e[np.argmax(np.abs(e))]), abs=1e-9), key
    results, gemm, _ = validation.evaluate()
    assert len(results) == len(_train(_rows())) and len(gemm) * 3 == len(_gemm(_rows()))


@pytest.mark.parametrize("group,median,worst", PINS)
def test_regime_error_is_pinned(recomputed, group, median, worst):
    e = recomputed[group]
    med, wst = float(np.median(e)), float(e[np.argmax(np.abs(e))])
    assert abs(med - median) <= PIN_TOL, (f"{group}: median error {med:+.1f}% (pinned {median:+.1f}% +- {PIN_TOL}): "
                                          "the estimator moved; update PINS and the docstring")
    assert abs(wst - worst) <= PIN_TOL, f"{group}: worst error {wst:+.1f}% (pinned {worst:+.1f}%)"


def test_known_shortfalls_are_on_the_optimistic_side(recomputed):
    """Every FP8 row is predicted too fast; long context on one GPU within 10%, and its error no longer
    grows with the sequence (it did, up to +33% at 64k, before the stacks' attention was told apart);
    LoRA is pessimistic by less than 30%; the bf16 control within 20%."""
    for group in ("fp8", "fp8_speedup_eager", "fp8_speedup_compile"):
        assert (recomputed[group] < 0).all(), group
    assert (np.abs(recomputed["long_context_all"]) < 10.0).all()
    assert ((recomputed["lora"] > 0) & (recomputed["lora"] < 30.0)).all()
    assert abs(float(np.median(recomputed["fp8_bf16_ref"]))) < 20.0
    long = sorted((int(r["seq_len"]), _err(_predicted_step_s(r), float(r["step_time_s"])))
                  for r in _train(_rows()) if r["regime"] == "long_context" and r["recompute"] == "full")
    errs = [e for _, e in long]
    assert len(errs) >= 3 and max(errs) - min(errs) < 10.0, long  # 16k to 64k within 10 points of each other