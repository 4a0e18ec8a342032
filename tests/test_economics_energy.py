"""Energy (Epoch AI accounting) and grid carbon intensity."""
from __future__ import annotations

import pytest

from gpuplan.economics import energy as en
from gpuplan.errors import UnknownNameError, UsageError


def test_energy_formula():
    # 1,000 H100-hours: 700 W x 1.82 x 0.75 x 1.25 = 1.194 kW per GPU-hour
    assert en.energy_kwh(1000, 700) == pytest.approx(1000 * 0.7 * 1.82 * 0.75 * 1.25)
    assert en.energy_kwh(1000, 700, pue=1.1, avg_power_fraction=0.5, chip_to_server=1.0) == pytest.approx(385.0)


def test_report_uses_gpu_tdp_vendor_and_kind():
    rep = en.energy_report(1000, gpu="h100", region="FR", provider_kind="hyperscaler")
    a = rep["assumptions"]
    assert a["tdp_w"] == 700 and a["pue"] == 1.1 and a["avg_power_fraction"] == 0.75
    assert rep["emissions_kg"] == pytest.approx(rep["energy_kwh"] * 56 / 1000)
    assert a["grid"]["year"] == 2023


def test_grid_lookup_by_code_name_geography_and_region_text():
    assert en.grid_intensity("fr").g_co2e_per_kwh == 56
    assert en.grid_intensity("India").code == "IN"
    assert en.grid_intensity("us-east").g_co2e_per_kwh > en.grid_intensity("NO").g_co2e_per_kwh
    assert en.grid_intensity(None).code == "world"
    hit = en.grid_intensity("eu-north1")
    assert hit.code == "eu" and "geography" in hit.matched_by
    with pytest.raises(UnknownNameError):
        en.grid_intensity("Narnia")


def test_every_row_has_source_and_sane_value():
    import csv
    from importlib import resources

    with resources.files("gpuplan.economics").joinpath("data/grid_carbon.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) >= 30
    for r in rows:
        assert r["source"] and r["confidence"] in ("third-party", "unverified", "primary")
        assert 10 <= float(r["g_co2e_per_kwh"]) <= 1000


@pytest.mark.parametrize("call", [
    lambda: en.energy_kwh(-1, 700),
    lambda: en.energy_kwh(10, 0),
    lambda: en.energy_kwh(10, 700, pue=0.9),
    lambda: en.energy_report(10),
    lambda: en.energy_report(10, gpu="TPU-v5p"),  # no TDP in the spec table
    lambda: en.energy_report(10, tdp_w=float("nan")),
])
def test_hostile(call):
    with pytest.raises(UsageError):
        call()
