"""Measured matmul realisation (perf/achievable_matmul.py, perf/data/achievable-matmul.csv)."""
from __future__ import annotations

import csv
from importlib import resources

import pytest

from gpuplan.catalog.gpus import all_gpus, get_gpu
from gpuplan.perf import achievable_matmul as am
from gpuplan.perf.inference_estimate import estimate_serving
from gpuplan.perf.vendor_efficiency import physics_only


def _rows() -> list[dict]:
    text = resources.files("gpuplan.perf.data").joinpath(am.DATA_FILE).read_text(encoding="utf-8")
    return list(csv.DictReader(text.splitlines()))


def test_every_measurement_names_a_catalog_gpu_a_source_and_stays_under_its_spec():
    gpus = all_gpus()
    rows = _rows()
    assert len(rows) >= 20
    seen = set()
    for r in rows:
        key = (r["gpu_id"], r["precision"])
        assert key not in seen, key
        seen.add(key)
        assert r["gpu_id"] in gpus, r["gpu_id"]
        assert r["precision"] in ("bf16", "fp8")
        assert "ml-engineering@" in r["source"] and "README.md" in r["source"]
        mamf, spec = float(r["mamf_tflops"]), gpus[r["gpu_id"]].peak_tflops(r["precision"])
        # A timed matmul never beats the spec sheet; nor does any device here reach under 40% of it.
        assert 0.4 * spec < mamf < spec, (key, mamf, spec)


def test_the_reference_is_one_and_unmeasured_devices_keep_their_spec():
    for p in ("bf16", "fp8", "fp4"):
        assert am.realisation(get_gpu("H100-SXM"), p).factor == pytest.approx(1.0)
    r = am.realisation(get_gpu("L40S"), "fp8")
    assert r.factor == 1.0 and r.measured_precision is None and "no matmul measurement" in r.note


def test_gaudi3_realises_less_of_its_spec_than_gaudi2_and_mi300x_fp8_falls_back_to_bf16():
    g2, g3 = get_gpu("Gaudi2"), get_gpu("Gaudi3")
    r2, r3 = am.realisation(g2, "fp8"), am.realisation(g3, "fp8")
    # Spec: Gaudi 3 has 2.1x Gaudi 2's FP8 peak; timed, 1.56x.
    achieved = g3.peak_tflops("fp8") * r3.factor / (g2.peak_tflops("fp8") * r2.factor)
    assert achieved == pytest.approx(1289.5 / 826.5, rel=1e-3)
    assert achieved < 0.8 * g3.peak_tflops("fp8") / g2.peak_tflops("fp8")
    mi = am.realisation(get_gpu("MI300X"), "fp8")
    assert mi.measured_precision == "bf16" and mi.factor == pytest.approx((668.4 / 1307.4) / (794.5 / 989.5), rel=1e-3)


def _prefill_heavy(gpu: str) -> float:
    est = estimate_serving("llama-3.1-8b", gpu, n_gpus=1, precision="fp8", input_len=2048, output_len=128,
                           engine="vllm")
    return est.output_tokens_per_s


def test_the_serving_compute_roof_follows_the_measurement_even_with_every_factor_off(monkeypatch):
    with physics_only():
        est = estimate_serving("llama-3.1-8b", "Gaudi3", n_gpus=1, precision="fp8", input_len=2048,
                               output_len=128, engine="optimum-habana")
        assert est.assumptions["matmul_realisation"] == pytest.approx(am.realisation(get_gpu("Gaudi3"), "fp8").factor,
                                                                     abs=1e-3)
        measured = _prefill_heavy("MI300X")
        table = dict(am.measurements())
        monkeypatch.setattr(am, "measurements", lambda: {k: v for k, v in table.items() if k[0] != "MI300X"})
        spec_only = _prefill_heavy("MI300X")
    # A prefill-bound run on MI300X is compute bound: at 64% of H100's realisation it is clearly slower.
    assert measured < 0.85 * spec_only


def test_an_untimed_die_sibling_takes_the_timed_parts_share_and_never_comes_out_faster():
    """MI350X is MI355X's CDNA4 die at 2.2 GHz against 2.4 and 1000 W against 1400: nobody has timed its matmuls, so
    its row is MI355X's measurement at its clock, marked 'not timed' (with 1.0 it served 11% faster than MI355X)."""
    r350, r355 = am.realisation(get_gpu("MI350X"), "bf16"), am.realisation(get_gpu("MI355X"), "bf16")
    assert r350.factor == pytest.approx(r355.factor, rel=1e-3)
    assert am.derived("MI350X", "bf16") and not am.derived("MI355X", "bf16")
    assert "measured at" not in r350.note and "sibling" in r350.note and "measured at" in r355.note
    fast = {g: estimate_serving("llama-3.1-70b", g, 1, precision="fp8").output_tokens_per_s for g in ("MI350X", "MI355X")}
    assert fast["MI350X"] < fast["MI355X"]
