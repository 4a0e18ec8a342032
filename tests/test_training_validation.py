"""Training estimator vs published measurements (perf/data/training-runs.csv), per regime.

Pinned rows: two or three per regime, each within a stated tolerance: today's error (in the comments) plus about 10
points, at least 15 %, so a regression in the model fails here
(refresh the pins when the physics improves). Regimes the estimator is
known to get badly wrong are pinned by a guard on the ratio predicted/measured that today's value passes with a
margin: it fails if the miss grows, not if it shrinks. The leave-one-source-out machinery is tested on a small
synthetic linear model and four real rows (the full run takes a minute or more; it is not run here).
"""
from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from gpuplan.perf.efficiency import FITTED_NAMES, default_efficiency
from gpuplan.perf.error_bands import REGIMES, band_for, classify_fields, classify_training, time_band
from gpuplan.perf.training_validation import (SOURCE_FAMILY_PREFIXES, Linearized, err_pct, held_out_predictions,
                                              load_rows, predict, prepare_row, row_gpu, row_model, source_groups)
from gpuplan.perf.training_shape import model_shape

ROOT = Path(__file__).resolve().parents[1]


def _row(name: str) -> dict:
    """The row of that name; "name#k" = the k-th row of that name (rows of one table can share a name)."""
    base, _, k = name.partition("#")
    hits = [r for r in load_rows() if r["name"] == base]
    assert len(hits) >= int(k or 1), name
    return hits[int(k or 1) - 1]


def _ratio(name: str) -> float:
    p = prepare_row(_row(name))
    assert p is not None
    pred, _ = predict(p, default_efficiency())
    return pred / p.measured


# (row name, regime, tolerance %): today's error (shipped parameters, 2026-11-23, after the FlashAttention-backward,
# EP-overlap and input-correction refit; MoE rows re-read after the token-dropping refit) in the comment; "#2" = the second row of that name
PINNED = [
    ("Llama-3.1-405B", "dense", 30.0),  # -6 %: whole run, 16,384 H100, GPU-hours
    ("Llama-3.1-405B (layout benchmark)", "dense", 15.0),  # -5 %: TP8 PP16 DP64 step time
    ("Nemotron-4-340B (NVIDIA DGXC recipe)", "dense", 15.0),  # -1 %
    # -20 %: whole run, steady-state hours (-14 % before the FlashAttention-2 split, which refitted eta_max and the
    # attention rates on LLM Foundry's small H100 rows); at the layout its GPT-NeoX config states (full recompute,
    # which the planner's layout does without) +4 %: test_a_whole_run_can_be_compared_at_its_published_layout
    ("Pythia-1B", "small", 25.0),
    ("SmolLM3-3B", "small", 25.0),  # -3 %: whole run, 384 H100 x 24 days
    ("MPT-1b seq 2048 x8 H100 BF16 (LLM Foundry)", "small", 15.0),  # +7 %
    ("DeepSeek-V3 (pre-training)", "moe", 20.0),  # -4 %: 2.664M H800-hours
    ("DeepSeekV3 DGX-GB200 MXFP8 (NeMo 26.02)", "moe", 20.0),  # -11 % (+15 % before the NVL72 MoE recipe)
    ("Qwen3_30B_a3B DGX-GB200 MXFP8 (NeMo 26.02)", "moe", 25.0),  # -0 % (+20 % before the NVL72 MoE recipe)
    ("Qwen3_235B_a22B DGX-GB200 MXFP8 (NeMo 26.02)", "moe", 35.0),  # -8 % (+31 % before the NVL72 MoE recipe)
    # +34 %: seq 131072, CP16 (+9 % before PP transfers overlapped in the interleaved schedule, which refitted
    # tp_exposed 0.46 -> 0.79: the bubble of PP16 VP4 over 16 micro-batches is most of the excess; +26 % -> +34 %
    # when torchtitan's rows joined the fit and tp_exposed went 0.81 -> 0.97)
    ("Llama-3.1-405B (layout benchmark)#2", "long_context", 40.0),
    # +26 % (+2 % at tp_exposed 0.46, +16 % at 0.81)
    # -0 % (+26 % before PyTorch's FlashAttention-2 was told apart from Megatron's cuDNN attention)
    ("LLAMA2-7B seq 128K CP4 H100-SXM FP8 (NeMo long sequence)", "long_context", 30.0),
    ("MPT-7b seq 32768 x8 H100 BF16 (LLM Foundry)", "long_context", 35.0),  # -3 % (-24 % before that split)
    ("LLAMA2-70B LoRA DGX-H100 FP8 (NeMo 24.07)", "lora", 20.0),  # +7 %: NeMo default adapters (attention)
    ("MLPerf Llama-2-70B LoRA (GovReport) B200 x8 (T51-LORA8-B200)", "lora", 25.0),  # +12 %
    ("MLPerf Llama-2-70B LoRA (GovReport) GB200 x8 (T50-LORA8-GB200)", "lora", 15.0),  # -1 %
    ("LLAMA3_70B DGX-H100 FP8 (NeMo 26.02)", "fp8", 15.0),  # -1 %
    ("LLAMA3-8B pretrain DGX-H100 FP8 (NeMo 24.07)", "fp8", 15.0),  # -4 %
    ("LLAMA3_8B DGX-GB200 FP8-CS (NeMo 25.11)", "blackwell", 15.0),  # +3 %
    ("LLAMA3_70B DGX-GB200 MXFP8 (NeMo 26.02)", "blackwell", 30.0),  # -16 %
    ("LLaMA V3.1 8B Gaudi2 x8 FP8 (gaudi2-perf-1.19)", "gaudi", 20.0),  # -11 %
    # +15 % (+1 % before TP and CP on Gaudi 2 moved over the 3 links between two cards, 37.5 GB/s, instead of the
    # whole 300 GB/s: every searched layout now lands at +15..+21 %; the layout is not published)
    ("LLaMA V3.1 70B Gaudi2 x64 FP8 (gaudi2-perf-1.18)", "gaudi", 20.0),
    ("MLPerf Llama-2-70B LoRA (GovReport) MI300X x8 (T51-LORA8-MI300X)", "amd", 15.0),  # -1 %
    ("MLPerf Llama-2-70B LoRA (GovReport) MI355X x8 (T51-LORA8-MI355X)", "amd", 15.0),  # -3 %
    # joined 2026-11-29 (twenty-sixth round), predicted with the parameters fitted before they joined:
    ("Olmo-3-32B (stage-1 pre-training)", "dense", 15.0),  # -0 %: 977k H100-hours, 512 then 1024 GPUs
    ("Granite-3.0-2B", "small", 15.0),  # +2 %: 192k H100-hours on 256 GPUs
    ("DeepSeek-V3 671B BF16 256xB200 torchtitan (DeepEP)", "moe", 15.0),  # -1 % (-21 % before ETP1 was timed)
    # joined 2026-11-29 (twenty-seventh round), predicted before they joined:
    ("Qwen3-235B-A22B 256xH800 XTuner/Pai-Megatron (TP2 EP32 PP8 VPP4, DeepEP)", "moe", 15.0),  # +1 %, folded
    ("Kimi-K2 BF16 256xH100 NeMo AutoModel (FSDP2 + EP32 + PP8, DeepEP)", "moe", 20.0),  # +5 %
    # MLPerf Training v6.0 (2026-06), joined 2026-11-30; scored with the shipped fit before they joined in parentheses
    ("MLPerf DeepSeek-V3 671B pretraining GB300 x4096 (T60-DSV3-GB300x4096-CoreWeave)", "moe", 10.0),  # -0 % (-3 %)
    ("MLPerf DeepSeek-V3 671B pretraining GB300 x256 (T60-DSV3-GB300x256-NVIDIA)", "moe", 25.0),  # +15 % (+11 %)
    ("MLPerf GPT-OSS-20B pretraining GB300 x72 (T60-GOSS20-GB300x72-NVIDIA)", "moe", 10.0),  # -2 % (-4 %)
    ("MLPerf GPT-OSS-20B pretraining H100 x128 (T60-GOSS20-H100x128-Cisco, tokendrop cap 1.25)", "moe", 10.0),  # -1 % (-3 %)
    ("MLPerf Llama-3.1-405B pretraining GB300 x72 (T60-L405-GB300x72-HPE)", "blackwell", 10.0),  # -0 % (-0 %)
    ("MLPerf Llama-3.1-8B pretraining B300 x8 (T60-L8-B300x8-Cisco)", "blackwell", 15.0),  # -8 % (-8 %)
    ("MLPerf Llama-2-70B LoRA (GovReport) B300 x8 (T60-LORA8-B300-Cisco)", "lora", 25.0),  # +14 % (+14 %)
    ("MLPerf Llama-2-70B LoRA (GovReport) MI355X x8 (T60-LORA8-MI355X-AMD)", "amd", 10.0),  # -0 % (-0 %)
    ("MLPerf Llama-3.1-8B pretraining H200-SXM x16 (T60-L8-H200x16-Cisco)", "fp8", 10.0),  # +3 % (+3 %)
]

# Known misses (issue 13), guarded so they cannot grow: (row name, lowest and highest allowed predicted/measured)
KNOWN_MISSES = [
    ("Llama-3.2-1B", 0.15, 1.5),  # 0.21 today: the 1B whole run cost far more than its FLOPs suggest
    ("GPT-2-124M (llm.c)", 0.5, 4.5),  # 3.48: a 124M model at ~60 % MFU; predicted far slower (and goodput on 90 min)
    ("LLAMA2-7B seq 1024K CP32 H100-SXM FP8 (NeMo long sequence)", 0.7, 1.5),  # 1.03 (3.01 before the refit)
    ("LLAMA3-8B seq 1024K CP16 B200 FP8 (NeMo long sequence)", 0.7, 2.0),  # 1.43: B200 attention faster than modelled
    ("LLAMA3-8B seq 128K CP4 B200 FP8 (NeMo long sequence)", 0.7, 1.8),  # 1.32
    ("GPT OSS 120B DGX-B200 BF16 (NeMo 26.02)", 0.45, 1.3),  # 0.59: EP64 all-to-all over InfiniBand, not hidden
    ("Qwen3_235B_a22B DGX-H100 FP8 (NeMo 26.02)", 0.5, 3.0),  # 1.00 (2.43 before the MoE changes)
    # joined 2026-11-29: Megatron-Core with Megatron FSDP, full recompute, EP8 inside the node: 276 TFLOP/s per H100,
    # 1.78x the model's step time at its stated layout
    ("Qwen3-235B-A22B BF16 256xH100 Megatron-Core ModelZoo (Megatron FSDP, intra-node EP)", 1.0, 2.4),
    ("Granite-3.0-8B", 0.45, 1.2),  # 0.66: a 2024 H100 model card at ~20 % MFU, like Llama 3 8B's
    ("DeepSeek-V2 BF16 32xMI355X Primus (all optimisations, VPP5)", 0.5, 1.2),  # 0.71: AMD's MoE stack on MI355X
    # joined 2026-11-29 (twenty-seventh round): PyTorch FSDP2 + EP8 with TE and DeepEP, 12,040 tokens/s per H100 in bf16,
    # where NVIDIA's Megatron-Bridge tables print 5,100-10,500 for the same model in FP8 on 16 H100
    ("Qwen3-30B-A3B BF16 8xH100 NeMo AutoModel (FSDP2 + EP8, DeepEP)", 1.2, 2.0),  # 1.64
    # joined 2026-11-30, MLPerf Training v6.0: DeepSeek-V3 on 8,192 GB200 at TP2 PP4 EP32, 16 micro-batches a step and
    # an eval after every step; the same layout's time per micro-batch grows from 0.139 s on 512 GPUs to 0.224 s here,
    # which no term of the model has (0.57 before it joined)
    ("MLPerf DeepSeek-V3 671B pretraining GB200 x8192 (T60-DSV3-GB200x8192-NVIDIA)", 0.5, 1.0),  # 0.60
    # the air-cooled MI350X (1000 W) measures 0.80 of MI355X where its clock gives 0.92
    ("MLPerf Llama-3.1-8B pretraining MI350X x8 (T60-L8-MI350X-AMD)", 0.65, 1.1),  # 0.78
    # gpt-oss-20b on 512 GB300 with one sequence per data-parallel rank, a 92 ms step (0.75 before it joined)
    ("MLPerf GPT-OSS-20B pretraining GB300 x512 (T60-GOSS20-GB300x512-NVIDIA)", 0.6, 1.1),  # 0.77
]


@pytest.mark.parametrize("name,regime,tol", PINNED)
def test_pinned_rows(name, regime, tol):
    row = _row(name)
    assert row["regime"] == regime
    p = prepare_row(row)
    assert p is not None and p.fits
    pred, _ = predict(p, default_efficiency())
    assert abs(err_pct(pred, p.measured)) <= tol, (name, pred, p.measured)


def test_corrected_inputs_follow_their_sources():
    """B200 long-sequence rows: GPU count = TP x PP x DP x CP (the page's later revision); MLPerf LoRA rows: the
    reference's adapters (rank 16 on qkv_proj, o_proj)."""
    rows = [r for r in load_rows() if r["use"] == "1"]
    b200 = [r for r in rows if r["source_id"] == "nemo-long-seq-b200-25.04" and r["tp"]]
    assert len(b200) == 8
    for r in b200:
        assert int(r["gpu_count"]) == int(r["tp"]) * int(r["pp"]) * int(r["dp"]) * int(r["cp"]), r["name"]
    lora = [r for r in rows if r["name"].startswith("MLPerf Llama-2-70B LoRA")]
    assert lora and all(r["lora_targets"] == "attention" and r["lora_rank"] == "16" for r in lora)
    p = prepare_row(lora[0])
    assert p.wl.lora_targets == "attention"


@pytest.mark.parametrize("name,lo,hi", KNOWN_MISSES)
def test_known_misses_do_not_grow(name, lo, hi):
    assert lo <= _ratio(name) <= hi


def test_every_regime_is_pinned():
    assert {g for _, g, _ in PINNED} == set(REGIMES)


def test_rows_are_normalized():
    rows = load_rows()
    used = [r for r in rows if r["use"] == "1"]
    assert len(used) >= 150
    kinds = {r["row_type"] for r in rows}
    assert kinds == {"FULL", "THROUGHPUT", "PROJECTION", "BENCHMARK"}
    for r in rows:
        assert r["source"] and r["source_id"] and r["source_date"][:2] in ("19", "20")
        if r["use"] == "1":
            assert r["gpu_id"] and (r["model_ref"] or r["total_params"]) and r["regime"] in REGIMES
        else:
            assert r["skip_reason"]
    per = {g: sum(r["regime"] == g for r in used) for g in REGIMES}
    assert per["moe"] >= 15 and per["fp8"] >= 15 and per["lora"] >= 15 and per["blackwell"] >= 15
    assert per["gaudi"] >= 10 and per["small"] >= 10 and per["dense"] >= 15
    assert len({r["source_id"] for r in used}) >= 25


def test_regime_column_matches_the_classifier():
    """The CSV's regime is the planner's rule applied to the row (so bands are looked up consistently)."""
    for r in load_rows():
        if r["use"] != "1":
            continue
        spec, gpu = row_model(r), row_gpu(r)
        got = classify_fields(is_moe=spec.n_experts > 0, active_params=model_shape(spec).active_params,
                              gpu_vendor=gpu.vendor, gpu_id=gpu.id, seq_len=int(float(r["seq_len"] or 2048)),
                              method=r["method"] or "full", precision=r["precision"] or "bf16")
        assert got == r["regime"], r["name"]


def test_classifier_order():
    base = dict(is_moe=False, active_params=70e9, gpu_vendor="NVIDIA", gpu_id="H100-SXM", seq_len=8192)
    assert classify_fields(**base) == "dense"
    assert classify_fields(**base, precision="fp8") == "fp8"
    assert classify_fields(**{**base, "gpu_id": "B200"}, precision="fp8") == "blackwell"
    assert classify_fields(**{**base, "active_params": 3e9}) == "small"
    assert classify_fields(**{**base, "seq_len": 65536}) == "long_context"
    assert classify_fields(**base, method="qlora") == "lora"
    assert classify_fields(**{**base, "is_moe": True}, method="lora") == "moe"
    assert classify_fields(**{**base, "is_moe": True, "gpu_vendor": "AMD", "gpu_id": "MI300X"}) == "amd"
    assert classify_fields(**{**base, "gpu_vendor": "Intel", "gpu_id": "Gaudi3"}) == "gaudi"


def test_classify_training_from_a_request():
    from gpuplan.catalog.gpus import get_gpu
    from gpuplan.models import resolve_model
    from gpuplan.perf.workload import make_workload

    wl = make_workload(kind="pretrain", tokens=1e12, seq_len=4096, precision="bf16")
    assert classify_training(resolve_model("qwen3-30b-a3b"), get_gpu("H100-SXM"), wl) == "moe"
    assert classify_training(resolve_model("llama-3.1-70b"), get_gpu("H100-SXM"), wl) == "dense"
    assert classify_training(resolve_model("llama-3.2-1b"), get_gpu("H100-SXM"), wl) == "small"
    assert classify_training(resolve_model("llama-3.1-70b"), get_gpu("MI300X"), wl) == "amd"


def _fake(source: str, kind: str = "THROUGHPUT", measured: float = 1.0):
    return SimpleNamespace(kind=kind, measured=measured, n=8,
                           row={"source_id": source, "row": 0, "hours_basis": "", "regime": "dense"})


def _lin(rows: int, jac: float = 1.0) -> Linearized:
    """One fitted parameter (eta_max 0.6, step 0.06); every row's log prediction moves by `jac` per step."""
    return Linearized(names=["eta_max"], theta=np.array([0.6]), step=np.array([0.06]), logp=np.zeros(rows),
                      jac=np.full((rows, 1), jac))


def test_loso_drops_every_row_of_a_source():
    """Source A's four rows want the parameter one step up, source B's two rows one step down. Leaving out one A row
    still fits A (three A rows outvote B); leaving out all of A must fall back to B's fit."""
    preps = [_fake("A", measured=np.e) for _ in range(4)] + [_fake("B", measured=1 / np.e) for _ in range(2)]
    eff = default_efficiency()
    groups = source_groups(preps)
    assert sorted(map(len, groups)) == [2, 4]
    loso = held_out_predictions(preps, _lin(6), eff, groups, exact=False)
    assert np.allclose(loso[:4], 1 / np.e, rtol=1e-3)  # A predicted with B's fit
    assert np.allclose(loso[4:], np.e, rtol=1e-3)  # B predicted with A's fit
    loo = held_out_predictions(preps, _lin(6), eff, [[i] for i in range(len(preps))], exact=False)
    assert np.allclose(loo[:4], np.e, rtol=1e-3)  # one A row out: the other A rows still decide
    lin = _lin(6)
    fit = held_out_predictions(preps, lin, eff, [None], exact=False)
    assert np.allclose(fit[:4], np.e, rtol=1e-3) and lin.fitted["eta_max"] == pytest.approx(0.66, abs=1e-3)


def test_by_family_holds_a_publishers_releases_out_together():
    """Megatron-Bridge 25.09 and 26.08 are one family (NVIDIA's table at two releases); MLPerf rounds are one; a
    model card stays its own source."""
    from gpuplan.perf.training_validation import source_family

    assert source_family("megatron-bridge-25.09") == source_family("megatron-bridge-26.08") == "megatron-bridge"
    assert source_family("mlperf-training-v4.0") == source_family("mlperf-training-v5.1") == "mlperf-training"
    assert source_family("llama3-card-2024") == "llama3-card-2024"
    preps = [_fake("megatron-bridge-25.09"), _fake("megatron-bridge-26.08"), _fake("llama3-card-2024")]
    assert sorted(map(len, source_groups(preps))) == [1, 1, 1]
    assert sorted(map(len, source_groups(preps, by_family=True))) == [1, 2]
    # every family of the shipped rows has rows from more than one source, or it would not need a prefix
    rows = [r for r in load_rows() if r["use"] == "1"]
    for prefix in SOURCE_FAMILY_PREFIXES:
        assert len({r["source_id"] for r in rows if r["source_id"].startswith(prefix)}) >= 2, prefix


def test_loso_refits_goodput_without_the_source():
    """A wall-clock full run is predicted with goodput fitted on the other full runs only."""
    preps = [_fake("A", "FULL", 2.0), _fake("B", "FULL", 1.25), _fake("C", "FULL", 1.25)]
    loso = held_out_predictions(preps, _lin(3, jac=0.0), default_efficiency(), source_groups(preps), exact=False)
    assert loso[0] == pytest.approx(1.25, rel=0.05)  # B and C say goodput 0.8, A's own 0.5 is not used


def test_linearized_refit_matches_the_model():
    """On real rows the linear model at the refitted parameters agrees with the full model."""
    from gpuplan.perf.training_validation import linearize

    rows = [_row(n) for n in ("LLAMA3_70B DGX-H100 FP8 (NeMo 26.02)", "Qwen3_30B_a3B DGX-GB200 MXFP8 (NeMo 26.02)",
                               "MPT-1b seq 2048 x8 H100 BF16 (LLM Foundry)", "Pythia-1B")]
    preps = [prepare_row(r) for r in rows]
    eff = default_efficiency()
    lin = linearize(preps, eff)
    assert "eta_max" in lin.names and lin.jac.shape == (4, len(lin.names))
    exact = held_out_predictions(preps, lin, eff, [None])
    linear = held_out_predictions(preps, lin, eff, [None], exact=False)
    assert np.allclose(exact, linear, rtol=0.1)


def test_a_whole_run_is_predicted_at_the_layout_the_planner_would_pick():
    """Without a stated layout a global batch is rounded to each candidate's dp x micro-batch, so candidates differ in
    batch: the one with the shortest step (Llama 2 7B on 288 A100s: TP2 PP8 DP18 at 1,026 sequences) is not the one
    with the fewest GPU-hours (pure data parallelism at 1,152). Like the planner, rank by time per useful sequence."""
    prep = prepare_row(_row("Llama-2-7B"))
    eff = default_efficiency()
    _, layout = predict(prep, eff)
    assert (layout["tp"], layout["pp"]) == (1, 1) and layout["dp"] == prep.n


def test_a_whole_run_can_be_compared_at_its_published_layout():
    """A whole run is predicted at the layout the planner would pick (what a user asking for the GPU-hours gets);
    where its source publishes a layout (Pythia's GPT-NeoX configs: tensor parallelism, micro-batch, full activation
    recompute), the check beside the headline predicts it at that layout, which re-runs the forward pass: longer, and
    for Pythia closer to the published hours."""
    from gpuplan.perf.training_validation import stated_layout_check, states_layout

    row = _row("Pythia-6.9B")
    searched, stated = prepare_row(row), prepare_row(row, stated_layout=True)
    assert set(stated.layouts["tp"]) == {2} and set(stated.layouts["recompute"]) == {2}
    assert set(stated.layouts["micro_batch"]) == {8} and set(stated.layouts["dp"]) == {64}
    eff = default_efficiency()
    (h_searched, lay), (h_stated, _) = predict(searched, eff), predict(stated, eff)
    assert lay["recompute"] == 0 and h_stated > 1.2 * h_searched
    assert abs(err_pct(h_stated, stated.measured)) < abs(err_pct(h_searched, searched.measured))
    assert not states_layout(_row("Llama-2-7B")) and states_layout(row)
    check = {r["name"]: r for r in stated_layout_check(eff)}
    assert "Llama-2-7B" not in check
    pythia = [r for n, r in check.items() if n.startswith("Pythia")]
    assert len(pythia) == 6 and all(r["stated_layout"]["recompute"] == 2 for r in pythia)
    assert np.median([abs(r["stated_error_pct"]) for r in pythia]) < 15 < np.median(
        [abs(r["planner_error_pct"]) for r in pythia])


def test_forward_in_time_fits_on_the_older_rows_only():
    """Rows from the cutoff month on are predicted by a fit on the older rows alone: the same predictions as leaving
    the newer rows out together; a cutoff with nothing on one side is refused."""
    from gpuplan.perf.training_validation import forward_in_time, linearize

    rows = [_row(n) for n in ("LLAMA3_70B DGX-H100 FP8 (NeMo 26.02)", "Qwen3_30B_a3B DGX-GB200 MXFP8 (NeMo 26.02)",
                               "MPT-1b seq 2048 x8 H100 BF16 (LLM Foundry)", "Pythia-1B")]
    preps = [prepare_row(r) for r in rows]
    eff = default_efficiency()
    fwd = forward_in_time(preps, eff, "2026-01")
    assert [f["row"] for f in fwd] == [int(r["row"]) for r in rows[:2]]
    held = held_out_predictions(preps, linearize(preps, eff), eff, [[0, 1]])
    assert [f["error_pct"] for f in fwd] == pytest.approx([err_pct(held[i], preps[i].measured) for i in (0, 1)])
    for cutoff in ("2030-01", "2000-01"):
        with pytest.raises(ValueError, match="need some on each side"):
            forward_in_time(preps, eff, cutoff)


def test_error_bands_file():
    doc = json.loads(resources.files("gpuplan.perf.data").joinpath("training-error-bands.json").read_text())
    assert doc["_source"]["command"] == "python benchmarks/validate_training.py --write-bands"
    for g in REGIMES:
        b = doc["regimes"][g]
        assert b["n"] >= 5 and b["p10"] <= b["p50"] <= b["p90"]
    assert band_for("moe") == doc["regimes"]["moe"]
    lo, mid, hi = time_band(100.0, "long_context")
    assert lo <= mid <= hi and hi > 100.0 > lo


def test_shipped_parameters_are_interpretable():
    doc = json.loads(resources.files("gpuplan.perf.data").joinpath("training-efficiency.json").read_text())
    p = doc["params"]
    assert set(FITTED_NAMES) <= set(p)
    assert 0.3 < p["eta_max"] < 0.9
    assert 0 <= p["h_half"] < 10000
    assert 0.5 < p["goodput_base"] <= 1.0


def test_baseline_rule_reproduces_formulas_md():
    """6ND/(peak x 0.4) on the original 23 full runs: formulas.md quotes 28 % median, 51 % p90."""
    from gpuplan.perf.training_validation import baseline_gpu_hours

    full = [r for r in load_rows() if r["row_type"] == "FULL" and r["use"] == "1" and int(r["row"]) < 56]
    errs = np.abs([err_pct(baseline_gpu_hours(r), float(r["gpu_hours"])) for r in full])
    assert len(full) == 23
    assert np.median(errs) == pytest.approx(28, abs=2)
    assert np.percentile(errs, 90) == pytest.approx(51, abs=3)


def test_benchmark_rejects_bad_regime():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "validate_training.py"), "--regime", "nope"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "nope" in out.stderr
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "validate_training.py"), "--forward", "2026-13"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "YYYY-MM" in out.stderr and out.stderr.strip().count("\n") == 0


def test_token_dropping_rows_skip_the_dropless_host_sync():
    """Megatron-Bridge 25.09 MoE rows are token-dropping (fixed capacity, static all-to-all sizes): no per-layer host
    sync, so `moe_layer_overhead_us` does not apply to them; dropless rows (the estimator's default) pay it."""
    from gpuplan.perf.training_validation import steady_state, token_dropping

    rows = [r for r in load_rows() if r["use"] == "1" and r["source_id"].startswith("megatron-bridge")]
    dropping = {r["name"] for r in rows if token_dropping(r)}
    assert dropping and all("(NeMo 25.09)" in n for n in dropping)
    assert "Qwen3_30B_a3B DGX-B200 FP8 (NeMo 25.09)" in dropping
    assert "Qwen3_30B_a3B DGX-B200 FP8-MX (NeMo 25.11)" not in dropping
    eff = default_efficiency().with_params(moe_layer_overhead_us=2000.0)
    p = prepare_row(_row("Qwen3_30B_a3B DGX-B200 FP8 (NeMo 25.09)"))
    dropless = dict(p.row, notes=p.row["notes"].replace("token-dropping", "dropless"))
    q = prepare_row(dropless)
    t_drop, t_dropless = steady_state(p, eff)[0], steady_state(q, eff)[0]
    assert t_drop < t_dropless
    assert steady_state(p, eff.with_params(moe_layer_overhead_us=0.0))[0] == pytest.approx(t_drop)


def test_every_fitted_parameter_acts_on_prepared_rows():
    """The fit and the leave-one-source-out refits evaluate parameters on rows prepared once: a parameter that the
    prepared features froze (attention on Blackwell once did) would leave the loss flat and its 'fit' a random walk.
    Each fitted compute parameter must move some prepared row's step time."""
    from gpuplan.perf.training_validation import prepare_all, steady_state

    eff = default_efficiency()
    preps = [p for p in prepare_all(eff) if p.kind == "THROUGHPUT"]
    base = np.array([steady_state(p, eff)[0] for p in preps])
    blackwell = np.array([p.gpu.id in ("B200", "B300", "GB200", "GB300") for p in preps])
    for name in ("attn_blackwell", "attn_ratio", "m_half", "ep_exposed", "moe_layer_overhead_us", "moe_expert_overhead_us",
                 "h_half"):
        # m_half fitted near 0 on 372 rows: nudge it to 16 token rows so the check still sees whether it acts
        bumped = max(getattr(eff, name) * 1.3 + 0.1, 16.0) if name == "m_half" else getattr(eff, name) * 1.3 + 0.1
        moved = np.array([steady_state(p, eff.with_params(**{name: bumped}))[0] for p in preps])
        assert np.any(np.abs(moved / base - 1) > 1e-3), name
        if name == "attn_blackwell":  # only Blackwell rows, and only faster
            assert np.allclose(moved[~blackwell], base[~blackwell])
            assert np.all(moved[blackwell] <= base[blackwell] * (1 + 1e-9)) and np.any(moved[blackwell] < base[blackwell])


def test_a_stated_fsdp_column_fixes_the_zero_stage():
    """NVIDIA's tables print FSDP 0 for Megatron data parallelism with the distributed optimizer (ZeRO-1) and the
    shard count where FSDP is on (ZeRO-3); a row that does not state it leaves the layout search free."""
    from gpuplan.perf.training_validation import row_fixed

    rows = [r for r in load_rows() if r["use"] == "1"]
    stated_off = next(r for r in rows if r["fsdp"] == "0" and r["row_type"] == "THROUGHPUT")
    stated_on = next(r for r in rows if (r["fsdp"] or "0") not in ("0", "") and r["row_type"] == "THROUGHPUT")
    unstated = next(r for r in rows if r["fsdp"] == "" and r["row_type"] == "THROUGHPUT")
    assert row_fixed(stated_off).zero == 1 and row_fixed(stated_on).zero == 3 and row_fixed(unstated).zero is None
    p = prepare_row(stated_off)
    assert set(p.layouts["zero"].tolist()) == {1}


def test_a_run_without_tp_overlap_exposes_all_of_its_tensor_parallel_traffic():
    """torchtitan's async-TP table runs one layout twice: vanilla TP (collectives on the critical path) and async TP
    (overlapped). The row input, not a per-row correction, makes the vanilla run slower by its TP traffic."""
    from gpuplan.perf.training_validation import row_efficiency, tp_not_overlapped

    vanilla = _row("Llama-3.1-70B Vanilla TP None (bfloat16) FSDP32 TP8 256xH100 (torchtitan AsyncTP Jun-2025)")
    overlapped = _row("Llama-3.1-70B Async TP None (bfloat16) FSDP32 TP8 256xH100 (torchtitan AsyncTP Jun-2025)")
    assert tp_not_overlapped(vanilla) and not tp_not_overlapped(overlapped)
    pv, po = prepare_row(vanilla), prepare_row(overlapped)
    eff = default_efficiency()
    assert row_efficiency(pv, eff).tp_exposed == 1.0 and row_efficiency(po, eff).tp_exposed == eff.tp_exposed
    # the mechanism at an overlap that hides half the traffic (the shipped fit sits at or near the bound, 1.0: across
    # all rows the overlap hides little, so there the two runs are timed alike)
    half = eff.with_params(tp_exposed=0.5)
    assert row_efficiency(pv, half).tp_exposed == 1.0
    tv, to = predict(pv, half)[0], predict(po, half)[0]
    measured = pv.measured / po.measured  # 652.4 / 597.3 tokens/s per GPU = 1.09
    assert 1.0 < tv / to < 1.0 + 3 * (measured - 1.0)


def test_small_steps_on_many_gpus_pay_the_exposed_share_of_their_gradient_traffic():
    """MLPerf's Llama 3.1 8B runs one 8k-token sequence per data-parallel rank and step: the gradient reduce could
    hide behind the backward pass, yet the runs are 10-45 % slower than the compute. `dp_exposed` (fitted) is the
    share of every data-parallel collective that never hides; on one node of 8 GPUs it costs little, on 16 nodes it
    is most of the gap. The prediction with it lies between the fully hidden and the fully exposed reduce."""
    eff = default_efficiency()
    assert 0.0 < eff.dp_exposed <= 1.0
    rows = {n: prepare_row(_row(f"MLPerf Llama-3.1-8B pretraining {n}")) for n in
            ("B200 x8 (T51-L8-B200x8-Lenovo)", "H100-SXM x128 (T51-L8-H100-SXMx128-Cisco)")}
    added = {}
    for name, p in rows.items():
        hidden, shipped, exposed = (predict(p, eff.with_params(dp_exposed=x))[0] for x in (0.0, eff.dp_exposed, 1.0))
        assert hidden < shipped < exposed, name
        assert shipped - hidden == pytest.approx(eff.dp_exposed * (exposed - hidden), rel=0.02), name
        assert abs(np.log(shipped / p.measured)) < abs(np.log(hidden / p.measured)), name
        added[name] = shipped / hidden - 1.0
    single, multi = added.values()
    assert single < 0.12 and multi > 2 * single


def test_a_row_that_names_the_plain_1f1b_schedule_is_not_searched_as_interleaved():
    """The build script writes vp 1 wherever a source prints no virtual stages, so vp 1 alone leaves the search free.
    torchtitan's table runs Llama 3.1 405B on PP8 with both schedules: the row whose notes say "not interleaved" keeps
    one chunk per stage and pays the full bubble (measured 100 against 128 tokens/s per GPU)."""
    from gpuplan.perf.training_validation import not_interleaved

    plain = _row("Llama-3.1-405B 1F1B FSDP8 TP8 PP8 512xH100 Float8 (torchtitan Dec-2024 Table 5)")
    inter = _row("Llama-3.1-405B Interleaved 1F1B FSDP8 TP8 PP8 512xH100 Float8 (torchtitan Dec-2024 Table 5)")
    assert not_interleaved(plain) and not not_interleaved(inter)
    pp, pi = prepare_row(plain), prepare_row(inter)
    assert set(pp.layouts["vp"].tolist()) == {1} and pi.layouts["vp"].max() > 1
    eff = default_efficiency()
    ratio = predict(pp, eff)[0] / predict(pi, eff)[0]
    assert 1.1 < ratio < 1.6  # measured 128 / 100 = 1.28
    defaulted = next(r for r in load_rows() if r["use"] == "1" and r["vp"] == "1" and (r["pp"] or "1") != "1"
                     and not not_interleaved(r) and r["row_type"] == "THROUGHPUT")
    assert prepare_row(defaulted).layouts["vp"].max() > 1


def test_a_pytorch_native_stack_keeps_less_of_the_fp8_speedup():
    """The framework column: torchtitan, the AWS torchtitan samples and LLM Foundry are PyTorch-native stacks whose FP8
    casts (torchao float8, TE linears outside Megatron) run as kernels of their own. Their FP8 rows pay the fitted
    pytorch_fp8_ratio on the 8-bit GEMMs; their 16-bit rows, and every Megatron row, are untouched by it."""
    from gpuplan.perf.training_validation import steady_state

    rows = [r for r in load_rows() if r["use"] == "1"]
    pytorch = {r["source_id"] for r in rows if r["framework"] == "pytorch"}
    assert {"torchtitan-bench-2024-12", "llm-foundry-2023", "aws-sagemaker-torchtitan-2024-10"} <= pytorch
    assert not any(s.startswith(("megatron-bridge", "nemo", "mlperf")) for s in pytorch)
    assert set(r["framework"] for r in rows) == {"", "pytorch"}
    eff = default_efficiency()
    assert 0.4 <= eff.pytorch_fp8_ratio < 1.0  # fitted: PyTorch FP8 keeps less than Megatron's
    slower = eff.with_params(pytorch_fp8_ratio=eff.pytorch_fp8_ratio * 0.8)
    fp8 = prepare_row(_row("Llama-3.1-8B FSDP + torch.compile + Float8 8xH100 (torchtitan Dec-2024 Table 1)"))
    bf16 = prepare_row(_row("Llama-3.1-8B FSDP + torch.compile 8xH100 (torchtitan Dec-2024 Table 1)"))
    nemo = prepare_row(_row("LLAMA3-8B pretrain DGX-H100 FP8 (NeMo 24.07)"))
    assert fp8.wl.framework == "pytorch" and nemo.wl.framework == "megatron"
    assert steady_state(fp8, slower)[0] > steady_state(fp8, eff)[0] * 1.05
    for p in (bf16, nemo):
        assert steady_state(p, slower)[0] == pytest.approx(steady_state(p, eff)[0])
    # the PyTorch FP8 rows' median error with the ratio fitted vs at 1 (Megatron's): nearer their measurements
    preps = [prepare_row(r) for r in rows if r["framework"] == "pytorch" and r["precision"] == "fp8"
             and r["row_type"] == "THROUGHPUT"]
    preps = [p for p in preps if p is not None and p.fits]
    at_one = eff.with_params(pytorch_fp8_ratio=1.0)
    err = lambda e: np.median([abs(np.log(steady_state(p, e)[0] / p.measured)) for p in preps])  # noqa: E731
    assert len(preps) >= 20 and err(eff) < err(at_one)


def test_narrow_attention_heads_run_slower_than_wide_ones():
    """Attention kernels do less math per K / V tile loaded with narrow heads: the fitted attn_dhalf slows 64-wide
    heads (GPT-2, Pythia, Llama-3.2-1B, MPT-350m) against the 128-wide heads attn_ratio is counted at, leaves 128-wide
    heads where they were, and the long-context rows with 64-wide heads sit nearer their measurements with it."""
    from gpuplan.perf.training_validation import steady_state

    eff = default_efficiency()
    assert 5.0 <= eff.attn_dhalf <= 128.0  # 64-wide heads at 0.65-0.95x of 128-wide ones
    wider = eff.with_params(attn_dhalf=eff.attn_dhalf * 2.0)
    narrow = prepare_row(_row("MPT-350m seq 32768 x8 H100 FP8 (LLM Foundry)"))  # d_model 1024, 16 heads: 64 wide
    wide = prepare_row(_row("LLAMA2-7B seq 128K CP4 H100-SXM FP8 (NeMo long sequence)"))  # 128 wide
    assert narrow.shape.qk_head_dim == 64 and wide.shape.qk_head_dim == 128
    assert steady_state(narrow, wider)[0] > steady_state(narrow, eff)[0] * 1.03
    assert steady_state(wide, wider)[0] == pytest.approx(steady_state(wide, eff)[0])
    rows = [r for r in load_rows() if r["use"] == "1" and r["regime"] in ("long_context", "small")
            and r["row_type"] == "THROUGHPUT"]
    preps = [p for p in (prepare_row(r) for r in rows) if p is not None and p.fits and p.shape.qk_head_dim < 128]
    at_zero = eff.with_params(attn_dhalf=0.0)
    err = lambda e: np.median([abs(np.log(steady_state(p, e)[0] / p.measured)) for p in preps])  # noqa: E731
    assert len(preps) >= 5 and err(eff) < err(at_zero)


def test_a_pytorch_native_stack_runs_flashattention2_on_hopper_and_blackwell():
    """PyTorch SDPA's flash backend is FlashAttention-2, written for Ampere's tensor-core instructions; Megatron runs
    Transformer Engine's cuDNN attention, which uses Hopper's. A PyTorch-native row on H100 pays the fitted
    pytorch_attn_ratio on its attention, the more the longer its sequence; the same stack on A100 (FlashAttention-2
    everywhere) and every Megatron row are untouched by it, and the PyTorch long-context rows sit nearer their
    measurements with the ratio fitted than at 1."""
    from gpuplan.perf.training_validation import steady_state

    eff = default_efficiency()
    assert 0.3 <= eff.pytorch_attn_ratio < 0.9  # fitted: about FlashAttention-2's share of FlashAttention-3's speed
    slower = eff.with_params(pytorch_attn_ratio=eff.pytorch_attn_ratio * 0.8)
    ratio = lambda p: steady_state(p, slower)[0] / steady_state(p, eff)[0]  # noqa: E731
    long = prepare_row(_row("Llama-3.1-8B seq 128K FSDP2 CP4 8xH100 Float8 (torchtitan Dec-2024 Table 2)"))
    short = prepare_row(_row("Llama-3.1-8B FSDP + torch.compile 8xH100 (torchtitan Dec-2024 Table 1)"))
    assert long.wl.framework == short.wl.framework == "pytorch"
    assert ratio(long) > ratio(short) > 1.0 and ratio(long) > 1.1
    untouched = [prepare_row(_row("LLAMA2-7B seq 128K CP4 H100-SXM FP8 (NeMo long sequence)")),
                 prepare_row(_row("TinyLlama-1.1B"))]  # Megatron on H100; PyTorch on A100
    assert untouched[1].wl.framework == "pytorch" and untouched[1].gpu.id.startswith("A100")
    for p in untouched:
        assert ratio(p) == pytest.approx(1.0)
    rows = [r for r in load_rows() if r["use"] == "1" and r["framework"] == "pytorch" and r["regime"] == "long_context"]
    preps = [p for p in (prepare_row(r) for r in rows) if p is not None and p.fits]
    at_one = eff.with_params(pytorch_attn_ratio=1.0)
    err = lambda e: np.median([abs(np.log(steady_state(p, e)[0] / p.measured)) for p in preps])  # noqa: E731
    assert len(preps) >= 15 and err(eff) < 0.7 * err(at_one)
