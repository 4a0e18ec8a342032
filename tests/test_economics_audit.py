"""Economics audit (2026-11): stale API prices warned, own-vs-rent on break-even's rent pool,
dated capex and sourced non-zero colocation/interest defaults, planned TCO band, testtime caveat."""
from __future__ import annotations

import datetime as dt
import json
from types import SimpleNamespace

import pytest

from gpuplan.catalog.records import STALE_AFTER_DAYS
from gpuplan.economics.api_prices import get_api_price
from gpuplan.economics.ownership import own_vs_rent, ownership_defaults
from gpuplan.economics.self_host import catalog_rents, compare_self_host_to_apis, reliable_gpu_price, stale_api_warnings
from gpuplan.economics.tco import compute_tco, make_inputs, planned_final_run_inputs

API = "together/llama-3.3-70b-instruct-turbo"


# ---- 1: stale API prices -------------------------------------------------------------------

def test_api_staleness_uses_the_planner_threshold():
    p = get_api_price(API)
    at_limit = p.as_of + dt.timedelta(days=STALE_AFTER_DAYS)
    assert not p.is_stale(at_limit)
    assert p.is_stale(at_limit + dt.timedelta(days=1))
    assert stale_api_warnings([p], at_limit) == []
    (w,) = stale_api_warnings([p], at_limit + dt.timedelta(days=1))
    assert w.startswith("WARNING:") and f"older than {STALE_AFTER_DAYS} days" in w and p.id in w


def test_breakeven_result_carries_the_warning():
    p = get_api_price(API)
    kw = dict(api=[API], price_per_gpu_hour=4.0, sensitivity=False)
    fresh = compare_self_host_to_apis("llama-3.3-70b", 5e9, today=p.as_of + dt.timedelta(days=10), **kw)
    old = compare_self_host_to_apis("llama-3.3-70b", 5e9, today=p.as_of + dt.timedelta(days=STALE_AFTER_DAYS + 30),
                                    **kw)
    assert fresh["warnings"] == [] and fresh["comparisons"][0]["price_stale"] is False
    assert len(old["warnings"]) == 1 and old["comparisons"][0]["price_stale"] is True
    assert old["comparisons"][0]["price_age_days"] == STALE_AFTER_DAYS + 30


# ---- 2: own-vs-rent rents from break-even's pool -----------------------------------------------

TODAY = dt.date(2026, 11, 23)


class _Offer(SimpleNamespace):
    def is_stale(self, today=None):
        return ((today or TODAY) - self.as_of).days > STALE_AFTER_DAYS


class _Catalog:
    origin = "test"

    def __init__(self, offers, kinds):
        self._offers = offers
        self.providers = {p: SimpleNamespace(kind=k) for p, k in kinds.items()}

    def offers(self, gpu=None, pricing=None, today=None):
        return sorted(self._offers, key=lambda o: o.price_per_gpu_hour_usd)


def _cat():
    fresh, old = TODAY - dt.timedelta(days=20), TODAY - dt.timedelta(days=600)
    offers = [_Offer(provider="big", price_per_gpu_hour_usd=10.0, as_of=fresh) for _ in range(12)]  # many regions
    offers += [_Offer(provider="neo1", price_per_gpu_hour_usd=2.0, as_of=fresh),
               _Offer(provider="neo2", price_per_gpu_hour_usd=3.0, as_of=fresh),
               _Offer(provider="neo2", price_per_gpu_hour_usd=5.0, as_of=fresh),
               _Offer(provider="stale", price_per_gpu_hour_usd=1.0, as_of=old),
               _Offer(provider="market", price_per_gpu_hour_usd=0.5, as_of=fresh)]
    kinds = {"big": "hyperscaler", "neo1": "neocloud", "neo2": "neocloud", "stale": "neocloud",
             "market": "marketplace"}
    return _Catalog(offers, kinds)


def test_catalog_rents_is_breakevens_pool():
    cat = _cat()
    rents, note, basis = catalog_rents("H100-SXM", cat, today=TODAY)
    be = reliable_gpu_price("H100-SXM", cat, today=TODAY)
    # one vote per provider (big 10, neo1 2, neo2 4), no stale or marketplace offer: median 4, not 10
    assert rents["median on-demand"] == pytest.approx(be["usd_per_gpu_hour"]) == pytest.approx(4.0)
    assert rents["cheapest on-demand"] == pytest.approx(2.0)
    assert "3 providers" in note and "20-20 days old" in note
    assert basis["providers"] == {"big": 10.0, "neo1": 2.0, "neo2": 4.0}


# ---- 3: dated capex, sourced non-zero defaults ------------------------------------------------

def test_ownership_defaults_are_sourced_and_pessimistic():
    d = ownership_defaults()
    assert d["interest_rate_per_year"] > 0 and "http" in d["interest_rate_source"]
    assert d["colocation_usd_per_kw_month"] > 0 and "http" in d["colocation_source"]


def test_own_vs_rent_includes_colocation_and_interest_and_dates_capex():
    base = own_vs_rent("H100-SXM", [4.0], today=TODAY)
    free = own_vs_rent("H100-SXM", [4.0], interest_rate_per_year=0, colocation_usd_per_kw_month=0, today=TODAY)
    d = ownership_defaults()
    kw = base.assumptions["tdp_w"] / 1000 * d["power"]["chip_to_server_ratio"]
    assert base.colocation_usd_per_hour == pytest.approx(kw * d["colocation_usd_per_kw_month"] / 730, rel=1e-3)
    assert free.colocation_usd_per_hour == 0 and base.capex_usd_per_hour > free.capex_usd_per_hour
    assert base.owned_usd_per_hour == pytest.approx(base.capex_usd_per_hour + base.power_usd_per_hour
                                                    + base.colocation_usd_per_hour + base.ops_usd_per_hour)
    assert base.purchase_as_of == "2022-09-29" and base.purchase_age_days == (TODAY - dt.date(2022, 9, 29)).days
    assert any("days old" in c for c in base.caveats)
    given = own_vs_rent("H100-SXM", [4.0], purchase_usd=30000, today=TODAY)
    assert given.purchase_source == "given" and given.purchase_age_days is None


def test_own_vs_rent_cli_prints_date_assumptions_and_rent(cli):
    code, out, err = cli("own-vs-rent", "--gpu", "H100", "--rent-usd-per-gpu-hour", "3")
    assert code == 0, err
    assert "price as of 2022-09-29" in out and "days old" in out
    assert "cost of capital 7.5%/year [--interest-rate]" in out and "[--colocation-usd-per-kw-month]" in out
    code, out, err = cli("own-vs-rent", "--gpu", "H100", "--json")
    if code != 0 and "no on-demand" in err:
        pytest.skip("catalog has no on-demand H100 offers")
    d = json.loads(out)
    assert d["rent_basis"] is not None and "providers" in d["rent_source"] and "days old" in d["rent_source"]
    median = [c for c in d["comparisons"] if c["label"] == "median on-demand"][0]
    assert median["rent_usd_per_gpu_hour"] == pytest.approx(d["rent_basis"]["usd_per_gpu_hour"])


# ---- 4: planned final run keeps its band ------------------------------------------------------

def test_tco_planned_final_run_band_reaches_the_total():
    plan = {"cost_usd": 100_000.0, "cost_p10_usd": 80_000.0, "cost_p90_usd": 150_000.0}
    planned = compute_tco(make_inputs(final_run_usd=100_000, **planned_final_run_inputs(plan, "X 2x8 H100")))
    given = compute_tco(make_inputs(final_run_usd=100_000))
    line = planned.lines[0]
    assert line.basis.startswith("planned: X 2x8 H100") and (line.low_usd, line.high_usd) == (80_000, 150_000)
    assert given.lines[0].basis == "given" and given.lines[0].low_usd == given.lines[0].high_usd
    assert planned.total_usd == pytest.approx(given.total_usd)
    assert planned.total_low_usd < given.total_low_usd and planned.total_high_usd > given.total_high_usd
    assert planned.total_high_usd == pytest.approx(given.total_high_usd * 1.5)
    with pytest.raises(Exception, match="contain"):
        compute_tco(make_inputs(final_run_usd=100_000, **planned_final_run_inputs({**plan, "cost_p10_usd": 1.2e5})))


# ---- 5: testtime says what it assumes ---------------------------------------------------------

def test_testtime_caveat_in_table_and_json(cli, tmp_path):
    f = tmp_path / "q.csv"
    f.write_text("id,p_success\na,0.5\nb,0.1\n")
    code, out, err = cli("testtime", str(f), "--budget", "4")
    assert code == 0, err
    assert "independent attempts" in out and "perfect verifier" in out
    code, out, _ = cli("testtime", str(f), "--budget", "4", "--json")
    a = json.loads(out)["assumptions"]
    assert a["attempts_independent"] is True and "perfect" in a["verifier"] and "upper bound" in a["caveat"]


def test_breakeven_cli_prints_the_warning_line_and_json(cli):
    args = ["breakeven", "-m", "llama-3.3-70b", "--tokens-per-month", "5B", "--api", API,
            "--price-per-gpu-hour", "4"]
    code, out, err = cli(*args)  # the 2025-09-01 row only ever gets older
    assert code == 0, err
    assert out.splitlines()[0].startswith("WARNING:") and f"older than {STALE_AFTER_DAYS} days" in out
    code, out, _ = cli(*args, "--json")
    assert len(json.loads(out)["warnings"]) == 1


def test_apis_stale_column_uses_the_same_threshold(cli):
    code, out, _ = cli("apis", "--json")
    rows = json.loads(out)
    assert code == 0 and rows
    assert all(r["stale"] == (r["age_days"] > STALE_AFTER_DAYS) for r in rows)
    for rid in ("openai/gpt-5.6", "anthropic/claude-opus-4-7", "deepseek/deepseek-chat-2026-02"):
        p = get_api_price(rid)
        assert p.as_of >= dt.date(2026, 2, 25) and p.source.startswith("litellm") and "https://" in p.source
