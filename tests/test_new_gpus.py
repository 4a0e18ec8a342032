"""GPUs the price feeds list that the spec table lacked (issue 13, coverage): B300, GB300, RTX PRO 6000
Blackwell (server and workstation editions), H20 and MI350X (MLPerf Training v6.0 times it), plus the checked H100 NVL
and MI355X rows.

Each resolves by the names the feeds and users write, carries dense figures no higher than the dense
peak its vendor published (sparse datasheet figures halved), maps to an architecture in both
tables, and can be estimated on."""
from __future__ import annotations

import json
from importlib import resources

import pytest

from gpuplan.catalog.bundled import load_bundled_offers
from gpuplan.catalog.capabilities import arch_of as capability_arch
from gpuplan.catalog.capabilities import resolve_serving, resolve_training
from gpuplan.catalog.gpus import all_gpus, get_gpu, resolve_gpu_id
from gpuplan.perf import vendor_efficiency as ve
from gpuplan.perf.inference_estimate import estimate_serving
from gpuplan.perf.training_estimate import estimate_training
from gpuplan.perf.training_time import nvlink_domain
from gpuplan.perf.workload import pretraining

NEW = ["B300", "GB300", "RTX-PRO-6000", "RTX-PRO-6000-WS", "H20", "MI350X"]
CHECKED = ["H100-NVL", "MI355X"]

# Dense peaks as published (TFLOP/s), sparse vendor figures already halved; None = not published.
# B300: HGX B300 page per 8 GPUs (FP4 108 PF dense, FP8 72 / BF16 36 / TF32 18 PF sparse); the Blackwell
#   Ultra datasheet's per-GPU FP4 is 14 PF dense, so either figure bounds the table's.
# GB300: GB300 NVL72 page per 72 GPUs (FP4 1080 PF dense, FP8 720 / BF16 360 / TF32 180 PF sparse).
# RTX PRO 6000 Server: product page 4 / 2 / 1 PFLOPS FP4 / FP8 / BF16 (sparse), TF32 234 TFLOPS.
# RTX PRO 6000 Workstation: 4000 AI TOPS FP4 sparse; FP8 and BF16 at Blackwell's 2x per precision step.
# H20: 148 BF16 / 296 FP8 / 74 TF32 dense (HGX H20 spec sheet as reported).
# H100 NVL: datasheet 1671 / 3341 / 835 sparse. MI355X: AMD brochure 2516.6 / 5033.2 / 10066.3 dense.
# MI350X: 18.45 PF MXFP4 with sparsity (ISC 2025); FP8 and BF16 are MI355X's at its 2.2 GHz clock against 2.4.
PUBLISHED_DENSE = {
    "B300": {"bf16": 36000 / 8 / 2, "fp8": 72000 / 8 / 2, "fp4": 14000, "tf32": 18000 / 8 / 2},
    "GB300": {"bf16": 360000 / 72 / 2, "fp8": 720000 / 72 / 2, "fp4": 1080000 / 72, "tf32": 180000 / 72 / 2},
    "RTX-PRO-6000": {"bf16": 1000 / 2, "fp8": 2000 / 2, "fp4": 4000 / 2, "tf32": 234},
    "RTX-PRO-6000-WS": {"bf16": 4000 / 8, "fp8": 4000 / 4, "fp4": 4000 / 2, "tf32": None},
    "H20": {"bf16": 148, "fp8": 296, "fp4": None, "tf32": 74},
    "H100-NVL": {"bf16": 1671 / 2, "fp8": 3341 / 2, "fp4": None, "tf32": 835 / 2},
    "MI355X": {"bf16": 2516.6, "fp8": 5033.2, "fp4": 10066.3, "tf32": None},
    "MI350X": {"bf16": 2516.6 * 2.2 / 2.4, "fp8": 5033.2 * 2.2 / 2.4, "fp4": 18450 / 2, "tf32": None},
}
# Memory (GB) and bandwidth (TB/s) exactly as published per GPU.
PUBLISHED_MEMORY = {
    "B300": (270, 7.7), "GB300": (279, 8.0), "RTX-PRO-6000": (96, 1.597), "RTX-PRO-6000-WS": (96, 1.792),
    "H20": (96, 4.0), "H100-NVL": (94, 3.9), "MI355X": (288, 8.0), "MI350X": (288, 8.0),
}


@pytest.mark.parametrize("name, expected", [
    ("B300", "B300"), ("NVIDIA B300 SXM6 AC", "B300"), ("HGX B300", "B300"), ("b300-sxm6", "B300"),
    ("GB300", "GB300"), ("GB300 NVL72", "GB300"), ("GB300 (per GPU)", "GB300"),
    ("RTX PRO 6000", "RTX-PRO-6000"), ("RTX-PRO-6000", "RTX-PRO-6000"), ("RTXPRO6000", "RTX-PRO-6000"),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX-PRO-6000"), ("RTX PRO 6000 96GB", "RTX-PRO-6000"),
    ("RTXPRO6000WS", "RTX-PRO-6000-WS"), ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "RTX-PRO-6000-WS"),
    ("H20", "H20"), ("NVIDIA H20", "H20"), ("H20 96GB", "H20"), ("HGX H20", "H20"),
    ("H100 NVL", "H100-NVL"), ("H100-NVL", "H100-NVL"), ("AMD Instinct MI355X", "MI355X"),
    ("MI350X", "MI350X"), ("AMD Instinct MI350X", "MI350X"),
])
def test_feed_and_user_spellings_resolve(name, expected):
    assert resolve_gpu_id(name) == expected


@pytest.mark.parametrize("gid", NEW + CHECKED)
def test_dense_figures_at_or_below_the_published_dense_peak(gid):
    g = get_gpu(gid)
    for precision, published in PUBLISHED_DENSE[gid].items():
        table = {"bf16": g.bf16_tflops, "fp8": g.fp8_tflops, "fp4": g.fp4_tflops, "tf32": g.tf32_tflops}[precision]
        if published is None:
            assert table is None, (gid, precision, "not published, must stay empty")
            continue
        assert table is not None, (gid, precision)
        assert table <= published * (1 + 1e-9), (gid, precision, table, published)
        assert table >= 0.9 * published, (gid, precision, "more than 10% below the published peak")
    assert (g.memory_gb, g.mem_bw_tbps) == PUBLISHED_MEMORY[gid]
    assert g.source.strip()


def test_relations_between_the_new_gpus():
    g = all_gpus()
    # GB300 is the same Blackwell Ultra die as B300 in a higher clock and power bin.
    for p in ("bf16", "fp8", "fp4"):
        assert g["B300"].peak_tflops(p) < g["GB300"].peak_tflops(p)
        assert g["B200"].peak_tflops(p) <= g["B300"].peak_tflops(p)
    assert g["B300"].memory_gb > g["B200"].memory_gb and g["GB300"].memory_gb > g["GB200"].memory_gb
    # Blackwell Ultra's gain is FP4: dense FP8 and BF16 are B200's.
    assert g["B300"].peak_tflops("fp8") == g["B200"].peak_tflops("fp8")
    # H20: about 15% of H100's compute, more memory and bandwidth, NVLink kept.
    assert g["H20"].bf16_tflops / g["H100-SXM"].bf16_tflops == pytest.approx(0.15, abs=0.01)
    assert g["H20"].mem_bw_tbps > g["H100-SXM"].mem_bw_tbps and g["H20"].nvlink_gbps == 900
    assert g["RTX-PRO-6000"].mem_bw_tbps < g["RTX-PRO-6000-WS"].mem_bw_tbps  # server edition runs slower memory
    # MI350X: MI355X's die, memory and Infinity Fabric at a lower clock and power (1000 W air-cooled against 1400 W).
    for p in ("bf16", "fp8", "fp4"):
        assert g["MI350X"].peak_tflops(p) / g["MI355X"].peak_tflops(p) == pytest.approx(2.2 / 2.4, rel=0.002)
    assert (g["MI350X"].memory_gb, g["MI350X"].nvlink_gbps) == (g["MI355X"].memory_gb, g["MI355X"].nvlink_gbps)
    assert g["MI350X"].tdp_w < g["MI355X"].tdp_w
    for gid in ("RTX-PRO-6000", "RTX-PRO-6000-WS"):
        assert g[gid].nvlink_gbps == 0 and not g[gid].is_consumer


def test_scale_up_domains():
    g = all_gpus()
    assert nvlink_domain(g["GB300"], 4) == 72
    assert nvlink_domain(g["B300"], 8) == 8
    assert nvlink_domain(g["H20"], 8) == 8
    assert nvlink_domain(g["RTX-PRO-6000"], 8) == 1


@pytest.mark.parametrize("gid", NEW + CHECKED)
def test_every_new_gpu_has_an_architecture_in_both_tables(gid):
    shipped = json.loads(resources.files("gpuplan.perf.data").joinpath("vendor-efficiency.json").read_text())
    expected = {"H20": "Hopper", "H100-NVL": "Hopper", "MI355X": "CDNA4", "MI350X": "CDNA4"}.get(gid, "Blackwell")
    # the sm120 RTX cards are Blackwell for what they can run, their own class for efficiency
    efficiency = "Blackwell-RTX" if gid.startswith("RTX") else expected
    assert shipped["gpu_arch"][gid] == efficiency
    assert ve.arch_of(gid) == efficiency
    assert capability_arch(get_gpu(gid)) == expected


@pytest.mark.parametrize("gid, fp4", [("B300", True), ("GB300", True), ("RTX-PRO-6000", True),
                                      ("RTX-PRO-6000-WS", True), ("H20", False), ("MI350X", True)])
def test_precisions_follow_the_architecture(gid, fp4):
    g = get_gpu(gid)
    assert resolve_training(g, "bf16").ok and resolve_training(g, "fp8").ok
    assert resolve_training(g, "fp4").ok is fp4
    assert resolve_serving(g, "fp8", "vllm").ok


@pytest.fixture(scope="module")
def training():
    return {gid: estimate_training("llama-3.1-8b", pretraining(1e10), gid, 8) for gid in NEW + ["H100-SXM"]}


@pytest.mark.parametrize("gid", NEW)
def test_a_training_estimate_runs_on_each(training, gid):
    t = training[gid]
    assert t.gpu == gid and t.n_gpus == 8 and t.fits
    assert 0 < t.mfu < 1 and t.tokens_per_s > 0 and t.gpu_hours > 0


def test_training_speed_follows_the_hardware(training):
    tps = {gid: t.tokens_per_s for gid, t in training.items()}
    assert tps["GB300"] > tps["B300"] > tps["H100-SXM"] > tps["H20"]
    assert tps["H100-SXM"] > tps["RTX-PRO-6000"]


@pytest.mark.parametrize("gid", NEW)
def test_a_serving_estimate_runs_on_each(gid):
    s = estimate_serving("llama-3.1-8b", gid, 1, precision="fp8")
    assert s.gpu == gid and s.fits
    assert s.output_tokens_per_s > 0 and s.tpot_ms and s.tpot_ms > 0
    # A bandwidth-bound decode: more HBM bandwidth, lower time per output token at concurrency 1.
    one = estimate_serving("llama-3.1-8b", gid, 1, precision="bf16", concurrency=1)
    assert one.tpot_ms > 1e3 * 16e9 / (get_gpu(gid).mem_bw_tbps * 1e12)  # cannot beat reading the weights


def test_large_models_fit_where_the_memory_says():
    # Llama-3.1-405B in FP8 (~405 GB of weights) fits on 2 x B300 but not on 4 x RTX PRO 6000 (384 GB).
    assert estimate_serving("llama-3.1-405b", "B300", 2, precision="fp8").fits
    assert not estimate_serving("llama-3.1-405b", "RTX-PRO-6000", 4, precision="fp8").fits


def test_feed_offers_for_the_workstation_edition_are_kept():
    offers = [o for o in load_bundled_offers() if o.gpu == "RTX-PRO-6000-WS"]
    assert offers and all(o.provider == "vast" for o in offers)
    assert {o.gpus_per_node for o in offers} == {1, 2}
