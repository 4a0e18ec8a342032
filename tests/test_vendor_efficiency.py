"""Per-architecture efficiency factors: shipped JSON vs a refit, bands, priors, the row table, the reader."""
from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import pytest

from gpuplan.perf import vendor_efficiency as ve

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "src/gpuplan/perf/data/vendor-runs.csv"
GPUS = ROOT / "src/gpuplan/catalog/data/gpus.csv"
SHIPPED = ROOT / "src/gpuplan/perf/data/vendor-efficiency.json"


@pytest.fixture(scope="module")
def shipped():
    return json.loads(SHIPPED.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def rows():
    with open(RUNS, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_mlperf_llama2_rows_run_their_data_sets_mean_prompt(rows):
    """As the serving rows: 5,463,976 prompt tokens over the 24,576 OpenOrca prompts, a mean of 222."""
    llama2 = [r for r in rows if r["model"] == "llama-2-70b" and r["source_id"].startswith("mlperf")]
    assert llama2 and {r["input_len"] for r in llama2} == {"222"}


def test_shipped_json_matches_a_refit_of_the_csv(vendor_fit, shipped):
    fresh = vendor_fit.fit_all()
    assert json.dumps(fresh, indent=1) + "\n" == SHIPPED.read_text(encoding="utf-8"), \
        "vendor-efficiency.json is stale: run python scripts/fit_vendor_efficiency.py"


def test_every_architecture_has_both_regimes_and_a_known_basis(shipped):
    for regime in ve.REGIMES:
        assert set(shipped[regime]) == set(ve.ARCHITECTURES)
        for arch, e in shipped[regime].items():
            assert e["basis"] in ("fitted", "prior"), (regime, arch)
            assert e["note"], (regime, arch)
            if e["basis"] == "fitted":
                assert e["n_rows"] >= 1 and e["n_sources"] >= 1, (regime, arch)
            else:
                assert e["n_rows"] == 0, (regime, arch)


def test_hopper_is_the_reference(shipped):
    for regime in ve.REGIMES:
        assert shipped[regime]["Hopper"]["factor"] == 1.0


def test_no_parity_for_other_architectures_without_data(shipped):
    for regime in ve.REGIMES:
        for arch, e in shipped[regime].items():
            if arch != "Hopper" and e["basis"] != "fitted":
                assert e["factor"] != 1.0, f"{regime}/{arch}: parity without data"
                assert e["factor"] < 1.0, f"{regime}/{arch}: a prior should not favour an unmeasured architecture"


def test_bands_contain_the_factor_with_the_floor(shipped):
    for regime in ve.REGIMES:
        for arch, e in shipped[regime].items():
            assert 0 < e["p10"] <= e["factor"] <= e["p90"], (regime, arch, e)
            if e["basis"] == "fitted":
                assert e["p10"] <= 0.85 * e["factor"] + 1e-3 and e["p90"] >= 1.15 * e["factor"] - 1e-3, (regime, arch, e)
            if e["basis"] == "fitted" and e["n_sources"] == 1:
                assert e["p10"] <= 0.7 * e["factor"] + 1e-3 and e["p90"] >= 1.3 * e["factor"] - 1e-3, (regime, arch, e)


def test_every_catalog_gpu_maps_to_a_known_architecture(shipped):
    with open(GPUS, newline="", encoding="utf-8") as f:
        ids = [r["id"] for r in csv.DictReader(f)]
    for gpu in ids + ["B300", "GB300", "RTX-PRO-6000", "H20"]:
        assert shipped["gpu_arch"].get(gpu) in ve.ARCHITECTURES, gpu
        assert ve.arch_of(gpu) in ve.ARCHITECTURES, gpu


def test_every_row_has_a_source_a_date_and_a_valid_reference(rows):
    ids = {r["row_id"] for r in rows}
    assert len(ids) == len(rows), "duplicate row_id"
    for r in rows:
        assert r["source"].strip() and r["source_id"].strip(), r["row_id"]
        assert re.fullmatch(r"(19|20)\d\d(-[01]\d)?", r["date"]), (r["row_id"], r["date"])
        assert r["regime"] in ve.REGIMES and r["use"] in ("0", "1"), r["row_id"]
        assert float(r["measured"]) > 0 and int(r["gpu_count"]) > 0, r["row_id"]
        if r["use"] == "0":
            assert r["skip_reason"].strip(), f"{r['row_id']}: unused without a reason"
        if r["ref_row"]:
            assert r["ref_row"] in ids, r["row_id"]
        elif r["use"] == "1":
            assert ve.infer_arch(r["gpu_id"]) == "Hopper", f"{r['row_id']}: a used non-reference row needs a reference"


def test_used_serving_comparisons_carry_the_estimator_roof(rows):
    for r in rows:
        if r["regime"] == "serving" and r["use"] == "1" and r["ref_row"]:
            assert float(r["model_speed_ratio"]) > 0, f"{r['row_id']}: run --refresh-model-ratios"


def test_the_serving_roof_column_is_fresh_and_holds_no_factor(vendor_fit, rows, monkeypatch):
    """model_speed_ratio is what the estimator explains of a row's speed ratio by itself. It must follow
    the serving estimator (a stale column fits factors to an estimator that no longer exists) and must
    not contain the factors fitted from it: with them inside, a refit returns the residual (~1.0)."""
    fresh = vendor_fit.model_speed_ratios(rows)
    stored = {r["row_id"]: float(r["model_speed_ratio"]) for r in rows if r["model_speed_ratio"]}
    assert set(stored) <= set(fresh) and len(stored) >= 20
    stale = {k: (v, round(fresh[k], 4)) for k, v in stored.items() if abs(fresh[k] / v - 1) > 0.03}
    assert not stale, f"run python scripts/fit_vendor_efficiency.py --refresh-model-ratios: {stale}"

    real = ve.load()
    doctored = {**real, "serving": {a: {**e, "factor": e["factor"] * (0.5 if a != "Hopper" else 1.0)}
                                    for a, e in real["serving"].items()}, "by_gpu": {}}
    monkeypatch.setattr(ve, "load", lambda: doctored)
    assert ve.applied_factor("MI300X", "serving").factor == pytest.approx(real["serving"]["CDNA3"]["factor"] / 2)
    with ve.physics_only():
        assert ve.applied_factor("MI300X", "serving").factor == 1.0
    assert vendor_fit.model_speed_ratios(rows) == fresh  # halving every factor leaves the column as it was


def test_cdna3_training_factor_is_the_median_of_its_rows(shipped, rows):
    """Pinned: CDNA3 training = geometric median of the four MLPerf LoRA rows (MI300X ~0.68-0.72, MI325X ~0.94-0.98)."""
    ratios = sorted(v["ratio"] for v in shipped["rows"].values() if v["regime"] == "training" and v["arch"] == "CDNA3")
    assert len(ratios) == 4
    median = math.exp((math.log(ratios[1]) + math.log(ratios[2])) / 2)
    e = shipped["training"]["CDNA3"]
    assert e["factor"] == pytest.approx(median, rel=0.005)
    assert e["factor"] == pytest.approx(0.82, abs=0.03)
    # the MI300X row recomputed by hand from the CSV: (MI300X / H200 samples/s) x H200->H100 x (H100 / MI300X fp8 peak)
    by_id = {r["row_id"]: r for r in rows}
    mi, h200 = float(by_id["T50-LORA8-MI300X"]["measured"]), float(by_id["T50-LORA8-H200"]["measured"])
    hand = mi / h200 * shipped["hopper_relative"]["training"]["H200-SXM"] * 1978.9 / 2614.9
    assert shipped["rows"]["T50-LORA8-MI300X"]["ratio"] == pytest.approx(hand, rel=0.002)


def test_amd_no_longer_outranks_hopper_per_peak(shipped):
    """The motivation: MI300X at Hopper efficiency would beat H100 by its 1.32x peak; the factors keep it near H100.
    Serving's compute roof also holds MI300X's measured matmul realisation (perf/achievable_matmul.py)."""
    from gpuplan.catalog.gpus import get_gpu
    from gpuplan.perf.achievable_matmul import realisation

    for regime in ve.REGIMES:
        matmul = realisation(get_gpu("MI300X"), "fp8").factor if regime == "serving" else 1.0
        effective = shipped[regime]["CDNA3"]["factor"] * matmul * 2614.9 / 1978.9
        assert 0.8 < effective < 1.2, (regime, effective)


def test_reader_factor_and_arch(shipped):
    f = ve.factor("MI300X", "training")
    assert f.arch == "CDNA3" and f.basis == "fitted" and f.factor == shipped["training"]["CDNA3"]["factor"]
    assert f.p10 <= f.factor <= f.p90 and f.n_rows == 4
    assert ve.factor("H100-SXM", "serving").factor == 1.0
    assert ve.factor("V100-SXM2-32GB", "serving").basis == "prior"
    assert ve.arch_of("GB200") == "Blackwell" and ve.arch_of("GH200") == "Hopper" and ve.arch_of("RTX-6000-Ada") == "Ada"
    assert ve.arch_of("Gaudi 3 HL-325L") == "Gaudi3" and ve.arch_of("mystery-chip", vendor="Google") == "TPU"


def test_the_sm120_rtx_cards_have_their_own_class(shipped, rows):
    """The RTX PRO 6000 (sm120) is catalogued Blackwell (it runs FP4) but is fitted apart from the data-centre parts:
    its serving rows against the same tables' Hopper rows sit above their factor (read onto it, every RTX PRO 6000
    serving row came out 2-39 % pessimistic); with no training pair its training factor is the data-centre one's with a
    wider band, not a guess above it."""
    for gid in ("RTX-PRO-6000", "RTX-PRO-6000-WS", "RTX-5090", "RTX-5060-Ti"):
        assert ve.arch_of(gid) == "Blackwell-RTX", gid
    for gid in ("B200", "GB200", "B300", "GB300"):
        assert ve.arch_of(gid) == "Blackwell", gid
    rtx, dc = shipped["serving"]["Blackwell-RTX"], shipped["serving"]["Blackwell"]
    used = [r for r in rows if r["regime"] == "serving" and r["use"] == "1" and r["gpu_id"] == "RTX-PRO-6000"]
    assert rtx["basis"] == "fitted" and rtx["n_rows"] == len(used) >= 3 and rtx["n_sources"] >= 2
    assert rtx["factor"] > dc["factor"] and ve.factor("RTX-PRO-6000", "serving").factor == rtx["factor"]
    train = shipped["training"]["Blackwell-RTX"]
    assert train["basis"] == "prior" and train["factor"] == shipped["training"]["Blackwell"]["factor"]
    assert train["p10"] < shipped["training"]["Blackwell"]["p10"] and train["p90"] > shipped["training"]["Blackwell"]["p90"]


def test_reader_unknown_gpu_gets_a_pessimistic_prior():
    f = ve.factor("NoSuchAccelerator-9000", "serving")
    assert f.arch == ve.UNKNOWN and f.basis == "prior" and f.n_rows == 0
    assert f.factor < 1.0 and f.p10 <= f.factor <= f.p90
    with pytest.raises(ValueError):
        ve.factor("H100-SXM", "inference")


def test_a_gpu_below_its_architecture_runs_at_its_own_rows():
    """MI300X's own MLPerf rows sit below CDNA3's pooled factor (MI325X pulls it up): the estimators
    use MI300X's; a chip whose rows sit above its architecture keeps the architecture's (pessimistic)."""
    import json
    from importlib import resources

    from gpuplan.perf.vendor_efficiency import applied_factor, factor

    doc = json.loads(resources.files("gpuplan.perf.data").joinpath("vendor-efficiency.json").read_text())
    own = doc["by_gpu"]["training"]
    arch = factor("MI300X", "training").factor
    assert own["MI300X"]["factor"] < arch < own["MI325X"]["factor"]
    mi300x, mi325x = applied_factor("MI300X", "training"), applied_factor("MI325X", "training")
    assert mi300x.factor == own["MI300X"]["factor"] and mi300x.p10 < mi300x.factor < mi300x.p90
    assert mi325x.factor == arch
