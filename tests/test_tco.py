"""Full-cost accounting: lines, defaults, overrides, ranges, energy; and `gpuplan tco`."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from gpuplan.economics.tco import compute_tco, make_inputs, tco_defaults
from gpuplan.errors import UsageError

KEYS = ["final_run", "experiments", "data", "storage_networking", "labour", "safety", "hosting"]


def _line(res, key):
    return next(ln for ln in res.lines if ln.key == key)


def test_defaults_reproduce_seed_table_shares():
    res = compute_tco(make_inputs(final_run_usd=1e6))
    assert [ln.key for ln in res.lines] == KEYS
    sh = {ln.key: ln.share for ln in res.lines}
    # seeds/004: successful run 30-40 %, failed experiments 15-25 %, data 10-15 %, storage 5-10 %,
    # labour 20-30 %, safety 5-10 % of the total
    assert 0.30 <= sh["final_run"] <= 0.40
    assert 0.15 <= sh["experiments"] <= 0.25
    assert 0.10 <= sh["data"] <= 0.15
    assert 0.05 <= sh["storage_networking"] <= 0.10
    assert 0.20 <= sh["labour"] <= 0.30
    assert 0.05 <= sh["safety"] <= 0.10
    assert sum(sh.values()) == pytest.approx(1.0)
    assert res.total_usd == pytest.approx(sum(ln.usd for ln in res.lines))
    assert _line(res, "experiments").usd == pytest.approx(0.5e6)  # OLMo 1.5x default
    assert _line(res, "experiments").low_usd == pytest.approx(0.2e6)  # Epoch 1.2x
    assert _line(res, "experiments").high_usd == pytest.approx(3.0e6)  # Epoch 4x
    assert res.total_low_usd < res.total_usd < res.total_high_usd
    assert all(ln.source for ln in res.lines if ln.key != "hosting")


def test_gpu_hours_times_price():
    res = compute_tco(make_inputs(gpu_hours=1000, price_per_gpu_hour=2.0))
    assert _line(res, "final_run").usd == 2000
    with pytest.raises(UsageError):
        compute_tco(make_inputs(final_run_usd=5000, gpu_hours=1000, price_per_gpu_hour=2.0))


def test_overrides_replace_defaults_and_rescale_the_rest():
    base = compute_tco(make_inputs(final_run_usd=1e6))
    res = compute_tco(make_inputs(final_run_usd=1e6, experiments_multiplier=2.2, engineers=4, months=6,
                                  salary_usd_per_year=300000, labour_overhead=1.4, data_usd=50000,
                                  storage_tb=100, egress_tb=5, safety_fraction=0.1,
                                  hosting_months=6, hosting_usd_per_month=10000))
    assert _line(res, "experiments").usd == pytest.approx(1.2e6) and _line(res, "experiments").overridden
    assert _line(res, "labour").usd == pytest.approx(4 * 0.5 * 300000 * 1.4)
    assert _line(res, "data").usd == 50000 and _line(res, "data").overridden
    assert _line(res, "storage_networking").usd == pytest.approx(100 * 1000 * 0.023 * 6 + 5 * 1000 * 0.09)
    assert _line(res, "hosting").usd == 60000
    known = 1e6 + 1.2e6 + 4 * 0.5 * 300000 * 1.4 + 50000 + _line(res, "storage_networking").usd
    assert res.development_usd == pytest.approx(known / (1 - 0.1))
    assert _line(res, "safety").usd == pytest.approx(0.1 * res.development_usd)
    assert res.total_usd == pytest.approx(res.development_usd + 60000)
    assert not _line(base, "labour").overridden


def test_monotone_in_final_run_and_multiplier():
    a = compute_tco(make_inputs(final_run_usd=1e5)).total_usd
    b = compute_tco(make_inputs(final_run_usd=2e5)).total_usd
    c = compute_tco(make_inputs(final_run_usd=2e5, experiments_multiplier=3)).total_usd
    assert a < b < c


def test_energy_and_emissions_alongside():
    res = compute_tco(make_inputs(gpu_hours=10000, price_per_gpu_hour=2.0, gpu="H100", region="IN"))
    assert res.energy_kwh == pytest.approx(10000 * 1.5 * 0.7 * 1.82 * 0.75 * 1.25)
    assert res.energy_final_run_kwh == pytest.approx(res.energy_kwh / 1.5)
    assert res.emissions_kg == pytest.approx(res.energy_kwh * 713 / 1000)
    assert all(ln.key != "energy" for ln in res.lines)  # information, not a line
    chart = res.chart()
    assert chart[0]["usd"] == max(ln.usd for ln in res.lines) and len(chart) == 7


@pytest.mark.parametrize("kw", [
    dict(), dict(final_run_usd=-1), dict(final_run_usd=float("nan")), dict(final_run_usd=0),
    dict(final_run_usd=1e20), dict(final_run_usd=1e5, experiments_multiplier=0.5),
    dict(final_run_usd=1e5, engineers=3), dict(final_run_usd=1e5, hosting_months=3),
    dict(final_run_usd=1e5, safety_fraction=1.5), dict(final_run_usd=1e5, data_fraction=0.5, labour_fraction=0.4),
    dict(final_run_usd=1e5, region="Narnia"), dict(final_run_usd=1e5, labour_usd=1, engineers=2, months=2),
    dict(gpu_hours=100),
])
def test_hostile_inputs(kw):
    with pytest.raises(UsageError) as e:
        compute_tco(make_inputs(**kw))
    assert "\n" not in str(e.value)


def test_make_inputs_rejects_unknown_field_and_wrong_type():
    with pytest.raises(UsageError):
        make_inputs(final_run=5)
    with pytest.raises(UsageError):
        make_inputs(final_run_usd="lots")


def test_defaults_file_documents_sources():
    d = tco_defaults()
    assert d["experiments_multiplier"]["default"] == 1.5
    assert d["experiments_multiplier"]["low"] == 1.2 and d["experiments_multiplier"]["high"] == 4.0
    assert all(v["source"] for v in d["shares_of_total"].values())


# ----------------------------------------------------------------------------- CLI
def test_cli_table(cli):
    code, out, err = cli("tco", "--gpu-hours", "100000", "--price-per-gpu-hour", "2.5", "--gpu", "h100",
                         "--region", "us-east", "--engineers", "3", "--months", "4")
    assert code == 0, err
    for name in ("Final training run", "Failed experiments", "Data acquisition", "Storage and networking",
                 "Engineering labour", "Safety and alignment", "Hosting", "Total", "kWh", "CO2e"):
        assert name in out
    assert "█" in out


def test_cli_json(cli):
    code, out, err = cli("tco", "--final-run-usd", "1e6", "--experiments-multiplier", "2.2", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["total_usd"] == pytest.approx(sum(ln["usd"] for ln in data["lines"]))
    assert len(data["chart"]) == 7
    assert data["assumptions"]["experiments_multiplier"] == 2.2


@pytest.mark.parametrize("args", [
    ["tco"], ["tco", "--final-run-usd", "-3"], ["tco", "--final-run-usd", "nan"],
    ["tco", "--final-run-usd", "1e5", "--hosting-months", "2"], ["tco", "--final-run-usd", "abc"],
])
def test_cli_errors_one_line_exit_2(cli, args):
    code, out, err = cli(*args)
    assert code == 2
    assert err.startswith("error:") and err.strip().count("\n") == 0


def test_console_script():
    exe = shutil.which("gpuplan")
    cmd = [exe] if exe else [sys.executable, "-m", "gpuplan.cli.main"]
    ok = subprocess.run(cmd + ["tco", "--final-run-usd", "250000", "--json"], capture_output=True, text=True,
                        timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["lines"][0]["usd"] == 250000
    bad = subprocess.run(cmd + ["tco", "--gpu-hours", "-1", "--price-per-gpu-hour", "2"], capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.startswith("error:") and "Traceback" not in bad.stderr
