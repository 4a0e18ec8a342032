"""The bundled catalog's dated truth: freshness of the shipped offers and the build's
'newest dated price wins' rule (scripts/build_catalog.py)."""
from __future__ import annotations

import csv
import datetime as dt
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "src" / "gpuplan" / "catalog" / "data"


def _build_module():
    spec = importlib.util.spec_from_file_location("build_catalog_under_test", ROOT / "scripts" / "build_catalog.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _offers() -> list[dict[str, str]]:
    with (DATA / "offers.csv").open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def test_most_bundled_offers_carry_an_observed_date_within_90_days():
    report = json.loads((DATA / "build-report.json").read_text(encoding="utf-8"))
    build_date = dt.date(2026, 11, 23)
    rows = _offers()
    fresh = [r for r in rows if r["as_of_note"].startswith("observed")
             and (build_date - dt.date.fromisoformat(r["as_of"])).days <= 90]
    share = len(fresh) / len(rows)
    assert share >= 0.60, f"{len(fresh)}/{len(rows)} offers observed within 90 days"
    # the report says the same thing as the shipped rows
    assert report["offers"] == len(rows)
    assert report["freshness"]["observed_within_days"]["90"] == pytest.approx(share, abs=0.001)


def test_every_dated_input_row_names_its_source_and_a_real_date():
    text = (ROOT / "scripts" / "inputs" / "prices-dated.csv").read_text(encoding="utf-8")
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    rows = list(csv.DictReader(lines))
    assert rows
    for r in rows:
        assert r["source"].strip(), r
        assert r["date_kind"] in ("observed", "nominal"), r
        if r["date_kind"] == "observed":  # an observation is a day, not a period label
            day = dt.date.fromisoformat(r["as_of"])
            assert day <= dt.date(2026, 11, 23), r


def _row(region: str, as_of: str, note: str, price: str = "2", itype: str = "x") -> dict[str, str]:
    return {"provider": "azure", "instance_type": itype, "gpu": "H100-SXM", "gpus_per_node": "8",
            "pricing": "spot", "region": region, "as_of": as_of, "as_of_note": note,
            "price_per_gpu_hour_usd": price, "source": "s"}


def test_an_undated_any_region_price_gives_way_to_newer_observed_regional_prices():
    mod = _build_module()
    old = _row("", "2025-07-01", "nominal: 2025", "3.687")
    new_east = _row("eastus", "2026-10-10", "observed: 2026-10-10", "2.27")
    keep, history = mod.drop_outdated([old, new_east], [])
    assert [r["region"] for r in keep] == ["eastus"]
    assert history == [old]


def test_a_nominal_regional_row_does_not_retire_an_any_region_price():
    mod = _build_module()
    old = _row("", "2026-05-15", "nominal: 2026-05", "1.39")
    newer_nominal = _row("default", "2026-08-15", "nominal: 2026-08", "1.29")
    keep, history = mod.drop_outdated([old, newer_nominal], [])
    assert len(keep) == 2 and history == []


def test_an_older_regional_price_stays_beside_a_newer_price_elsewhere():
    mod = _build_module()
    west = _row("westus", "2025-07-01", "nominal: 2025", "3.0")
    east = _row("eastus", "2026-10-10", "observed: 2026-10-10", "2.27")
    keep, history = mod.drop_outdated([west, east], [])
    assert len(keep) == 2 and history == []


def test_no_bundled_region_has_an_empty_part():
    # Vast lists hosts without a city as ', CN, AS'; plan tables showed '(, CN, AS)'.
    build = _build_module()
    assert build.clean_region(", CN, AS") == "CN, AS" and build.clean_region(None) == ""
    bad = [r["region"] for r in _offers()
           if any(not part.strip() for place in r["region"].split("/") if place for part in place.split(","))]
    assert bad == []
