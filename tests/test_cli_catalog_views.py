"""`gpuplan gpus | providers | offers` through the real CLI entry point and console script."""
from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys

import pytest

OFFER_JSON_FIELDS = {"provider", "instance_type", "gpu", "gpus_per_node", "region", "pricing", "price_per_hour_usd",
                     "price_per_gpu_hour_usd", "as_of", "source", "confidence"}


def test_offers_json_rows_carry_the_documented_fields(cli):
    code, out, err = cli("offers", "--gpu", "H100", "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert rows and OFFER_JSON_FIELDS <= set(rows[0])
    assert len({r["provider"] for r in rows}) >= 8
    for r in rows:
        assert r["price_per_gpu_hour_usd"] == pytest.approx(r["price_per_hour_usd"] / r["gpus_per_node"])
        assert r["gpu"].startswith("H100")


def test_offers_filters_through_the_cli(cli):
    code, out, _ = cli("offers", "--gpu", "A100-80GB", "--min-gpus", "8", "--pricing", "on_demand",
                       "--max-price", "5", "--sort", "node-price", "--json")
    rows = json.loads(out)
    assert code == 0 and rows
    assert all(r["gpu"] == "A100-80GB-SXM" and r["gpus_per_node"] >= 8 and r["pricing"] == "on_demand"
               and r["price_per_gpu_hour_usd"] <= 5 for r in rows)
    assert [r["price_per_hour_usd"] for r in rows] == sorted(r["price_per_hour_usd"] for r in rows)


def test_offers_csv_has_a_header_and_one_line_per_offer(cli):
    code, out, _ = cli("offers", "--provider", "nebius", "--csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and rows and all(r["provider"] == "nebius" for r in rows)
    code, out2, _ = cli("offers", "--provider", "nebius", "--json")
    assert len(json.loads(out2)) == len(rows)


def test_offers_table_shows_age_and_confidence(cli):
    code, out, _ = cli("offers", "--gpu", "H100", "--limit", "3")
    assert code == 0
    assert "price age" in out and "confidence" in out and "3 offers" in out


def test_providers_json_lists_seed_providers_and_hyperscalers(cli):
    code, out, _ = cli("providers", "--json")
    rows = json.loads(out)
    names = {r["name"] for r in rows}
    assert {"AWS", "GCP", "Azure", "CoreWeave", "Vast.ai", "io.net", "Aethir", "Theta EdgeCloud", "Polaris"} <= names
    lam = next(r for r in rows if r["id"] == "lambda")
    assert lam["offer_count"] > 0 and lam["cheapest_per_gpu_hour_usd"]["H100-SXM"] > 0
    code, out, _ = cli("providers", "--kind", "decentralized", "--json")
    assert {r["kind"] for r in json.loads(out)} == {"decentralized"}


def test_gpus_compare_and_json(cli):
    code, out, _ = cli("gpus", "--compare", "h100,MI300X,b200", "--json")
    assert [g["id"] for g in json.loads(out)] == ["H100-SXM", "MI300X", "B200"]
    code, out, _ = cli("gpus", "--compare", "H100,MI300X")
    assert code == 0 and "H100-SXM" in out and "MI300X" in out


@pytest.mark.parametrize("args, fragment", [
    (["offers", "--gpu", "H1OO"], "unknown GPU 'H1OO'; closest: H100-SXM"),
    (["offers", "--provider", "corweave"], "closest: coreweave"),
    (["offers", "--limit", "-3"], "--limit"),
    (["offers", "--limit", "abc"], "--limit"),
    (["offers", "--max-price", "nan"], "--max-price"),
    (["offers", "--kind", "cloudy"], "unknown provider kind"),
    (["gpus", "--compare", "H100,B900"], "unknown GPU 'B900'"),
    (["providers", "--kind", "x"], "unknown provider kind"),
    (["no-such-command"], "No such command"),
])
def test_bad_input_is_one_line_and_exit_2(cli, args, fragment):
    code, out, err = cli(*args)
    assert code == 2
    assert fragment in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_installed_console_script_runs_as_a_subprocess(tmp_path):
    exe = shutil.which("gpuplan")
    cmd = [exe] if exe else [sys.executable, "-m", "gpuplan.cli.main"]
    env = {"PATH": "/usr/bin:/bin", "XDG_DATA_HOME": str(tmp_path), "HOME": str(tmp_path)}
    import os

    env["PATH"] = os.environ.get("PATH", env["PATH"])
    ok = subprocess.run(cmd + ["offers", "--gpu", "H100", "--json"], capture_output=True, text=True, env=env, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert len({r["provider"] for r in json.loads(ok.stdout)}) >= 8
    bad = subprocess.run(cmd + ["offers", "--gpu", "nope"], capture_output=True, text=True, env=env, timeout=60)
    assert bad.returncode == 2 and bad.stderr.startswith("error: unknown GPU") and "Traceback" not in bad.stderr


def test_providers_show_priced_and_spot_counts_or_why_there_is_no_price(cli):
    code, out, err = cli("providers", "--json")
    assert code == 0, err
    rows = json.loads(out)
    for r in rows:
        assert {"priced_offer_count", "spot_offer_count", "newest_as_of", "no_public_price"} <= set(r)
        if r["priced_offer_count"]:
            assert r["no_public_price"] is None and r["newest_as_of"]
            assert 0 <= r["spot_offer_count"] <= r["priced_offer_count"]
        else:  # every seed provider is priced or says why not
            assert r["no_public_price"] and "reason not recorded" not in r["no_public_price"], r["id"]
    code, out, _ = cli("providers")
    assert "spot offers" in out and "newest as_of" in out


def test_provider_records_accept_no_public_price(cli, tmp_path):
    from gpuplan.catalog.catalog import Catalog
    from gpuplan.catalog.gpus import all_gpus
    from gpuplan.catalog.records import Provider

    p = Provider(id="quiet", name="Quiet", kind="neocloud", no_public_price="contact sales only")
    cat = Catalog(all_gpus(), {"quiet": p}, [], origin="test")
    (row,) = cat.provider_summary()
    assert row["no_public_price"] == "contact sales only" and row["priced_offer_count"] == 0
    assert Provider(id="x", name="X", kind="neocloud").no_public_price is None
