"""Self-host vs API break-even: formulas.md §11 worked table, step costs, crossings."""
from __future__ import annotations

import pytest

from gpuplan.economics.api_prices import get_api_price
from gpuplan.economics.breakeven import breakeven, monthly_gpu_cost
from gpuplan.errors import UsageError


def run(unit_usd, out_capacity, api_id, share=0.5, demand=1e9, **kw):
    """1000-in/1000-out: total tokens are twice the output tokens."""
    p = get_api_price(api_id)
    return breakeven(unit_usd, out_capacity * 2, p.input_usd_per_mtok, p.output_usd_per_mtok, share, demand, **kw)


def test_worked_70b_two_h100():
    """2×H100 at $2/h = $2,920/month for 11.05B output tokens; break-even ≈ 1.7B vs Together, ≈ 4.6B vs DeepInfra."""
    unit = monthly_gpu_cost(2, 2.0)
    assert unit == pytest.approx(2920.0)
    together = run(unit, 11.05e9, "together/llama-3.3-70b-instruct-turbo")
    assert together.breakeven_output_tokens_per_month == pytest.approx(1.7e9, rel=0.05)
    assert together.breakeven_utilisation == pytest.approx(0.15, abs=0.01)
    assert together.self_host_usd_per_mtok_at_full * 2 == pytest.approx(0.26, abs=0.01)  # per output token
    deepinfra = run(unit, 11.05e9, "deepinfra/meta-llama-3.1-70b-instruct")
    assert deepinfra.breakeven_output_tokens_per_month == pytest.approx(4.6e9, rel=0.05)
    assert deepinfra.breakeven_utilisation == pytest.approx(0.42, abs=0.01)
    groq = run(unit, 11.05e9, "groq/llama-3.3-70b-versatile")
    assert groq.breakeven_utilisation == pytest.approx(0.19, abs=0.01)


@pytest.mark.parametrize("gpus,usd_per_mout,api,util", [
    (1, 0.037, "together/meta-llama-3.1-8b-instruct-turbo", 0.10),
    (1, 0.037, "groq/llama-3.1-8b-instant", 0.28),
    (1, 0.037, "deepinfra/meta-llama-3.1-8b-instruct", 0.46),
    (8, 1.52, "together/meta-llama-3.1-405b-instruct-turbo", 0.22),
    (8, 1.52, "deepinfra/meta-llama-3.1-405b-instruct", 0.95),
])
def test_worked_table_breakeven_utilisation(gpus, usd_per_mout, api, util):
    unit = monthly_gpu_cost(gpus, 2.0)
    out_capacity = unit / usd_per_mout * 1e6  # the table's $/M output at 100 % fixes the capacity
    r = run(unit, out_capacity, api)
    assert r.breakeven_utilisation == pytest.approx(util, abs=0.015)


def test_costs_at_a_volume_and_the_crossing():
    r = breakeven(1000.0, 10e9, 0.5, 1.5, 0.5, 2e9)
    assert r.api_usd_per_mtok == pytest.approx(1.0)
    assert r.api_usd_per_month == pytest.approx(2000.0)
    assert r.self_host_usd_per_month == pytest.approx(1000.0) and r.cheaper == "self-host"
    assert r.breakeven_tokens_per_month == pytest.approx(1e9)
    below = breakeven(1000.0, 10e9, 0.5, 1.5, 0.5, 0.9e9)
    assert below.cheaper == "api" and below.utilisation == pytest.approx(0.09)


def test_step_function_adds_units():
    r = breakeven(1000.0, 10e9, 0.5, 1.5, 0.5, 25e9, max_utilisation=0.8)
    assert r.units == 4  # 25B over 8B usable per unit
    assert r.self_host_usd_per_month == pytest.approx(4000.0)
    assert r.utilisation == pytest.approx(25 / 40)
    ys = r.curve.self_host_usd_per_month
    assert all(b >= a for a, b in zip(ys, ys[1:]))
    assert len(r.curve.tokens_per_month) == len(ys) == len(r.curve.api_usd_per_month)


def test_crossing_with_overhead_matches_a_dense_scan():
    """With engineering overhead the curves may cross only after several units; check by brute force."""
    unit, cap, eng, price = 1000.0, 1e9, 3500.0, 1.5  # $/M; one full unit earns $1,500 of API spend
    r = breakeven(unit, cap, price, price, 0.5, 1e9, eng_usd_per_month=eng)
    import math

    first = None
    for i in range(1, 200001):
        t = i * 1e5
        self_host = max(1, math.ceil(t / cap - 1e-12)) * unit + eng
        if t * price / 1e6 >= self_host - 1e-9:
            first = t
            break
    assert r.breakeven_tokens_per_month == pytest.approx(first, rel=1e-4)
    assert r.breakeven_tokens_per_month > cap  # not within the first unit


def test_api_always_cheaper_gives_none():
    r = breakeven(5000.0, 1e9, 0.1, 0.1, 0.5, 5e9)
    assert r.breakeven_tokens_per_month is None and r.breakeven_utilisation > 1 and r.cheaper == "api"


def test_discount_lowers_api_price():
    full = breakeven(1000.0, 10e9, 1.0, 1.0, 0.5, 1e9)
    batch = breakeven(1000.0, 10e9, 1.0, 1.0, 0.5, 1e9, api_discount=0.5)
    assert batch.api_usd_per_month == pytest.approx(full.api_usd_per_month / 2)
    assert batch.breakeven_tokens_per_month == pytest.approx(2 * full.breakeven_tokens_per_month)


@pytest.mark.parametrize("args", [
    (0, 1e9, 1, 1, 0.5, 1e9), (-1, 1e9, 1, 1, 0.5, 1e9), (1000, 0, 1, 1, 0.5, 1e9),
    (1000, 1e9, -1, 1, 0.5, 1e9), (1000, 1e9, 1, 1, 1.5, 1e9), (1000, 1e9, 1, 1, 1.0, 1e9),
    (1000, 1e9, 1, 1, 0.5, -1), (1000, 1e9, 1, 1, 0.5, float("nan")), (1000, 1e9, 0, 0, 0.5, 1e9),
    (float("inf"), 1e9, 1, 1, 0.5, 1e9),
])
def test_bad_inputs(args):
    with pytest.raises(UsageError):
        breakeven(*args)


def test_monthly_gpu_cost_validation():
    assert monthly_gpu_cost(8, 2.5, ops_usd_per_month=100) == pytest.approx(8 * 2.5 * 730 + 100)
    for bad in [(0, 2.0), (2, -1.0), (2, float("nan")), (1.5, 2.0)]:
        with pytest.raises(UsageError):
            monthly_gpu_cost(*bad)


# ---- peak factor and N+1 spares in the step function --------------------------------------------

def test_defaults_of_the_formula_are_flat_and_without_spares():
    """breakeven() itself stays the plain formulas.md §11 model unless asked: peak 1, no spare."""
    plain = breakeven(1000.0, 10e9, 0.5, 1.5, 0.5, 2e9)
    explicit = breakeven(1000.0, 10e9, 0.5, 1.5, 0.5, 2e9, peak_factor=1.0, spare_units=0)
    assert plain.model_dump() == explicit.model_dump()
    assert plain.spare_units == 0 and plain.serving_units == plain.units == 1


def test_peak_factor_sizes_units_to_the_peak():
    flat = breakeven(1000.0, 10e9, 0.5, 1.5, 0.5, 25e9, max_utilisation=0.8)
    peaky = breakeven(1000.0, 10e9, 0.5, 1.5, 0.5, 25e9, max_utilisation=0.8, peak_factor=2.0)
    assert flat.units == 4 and peaky.units == 7  # ceil(25 / 8) vs ceil(50 / 8)
    assert peaky.self_host_usd_per_month == pytest.approx(7000.0)
    assert peaky.average_capacity_tokens_per_month == pytest.approx(4e9)
    assert peaky.capacity_tokens_per_month == pytest.approx(8e9)
    # a unit earns half as much API spend, so the crossing moves out (here: 1B -> 1B still within unit 1)
    assert peaky.breakeven_tokens_per_month >= flat.breakeven_tokens_per_month
    # with cap·price/peak below the unit cost the API always wins
    never = breakeven(1000.0, 1.5e9, 0.5, 1.5, 0.5, 1e9, peak_factor=2.0)
    assert never.breakeven_tokens_per_month is None and never.cheaper == "api"
    assert breakeven(1000.0, 1.5e9, 0.5, 1.5, 0.5, 1e9).breakeven_tokens_per_month == pytest.approx(1e9)


def test_spare_replica_is_paid_at_every_volume():
    base = breakeven(1000.0, 10e9, 0.5, 1.5, 0.5, 25e9, max_utilisation=0.8)
    n1 = breakeven(1000.0, 10e9, 0.5, 1.5, 0.5, 25e9, max_utilisation=0.8, spare_units=1)
    assert n1.units == base.units + 1 and n1.serving_units == base.units and n1.spare_units == 1
    assert n1.self_host_usd_per_month == pytest.approx(base.self_host_usd_per_month + 1000.0)
    assert min(n1.curve.self_host_usd_per_month) == pytest.approx(2000.0)  # N+1: never fewer than 2 units
    assert n1.utilisation == pytest.approx(25e9 / (5 * 10e9))
    assert n1.breakeven_tokens_per_month == pytest.approx(2e9)  # two units' cost at $1/M


@pytest.mark.parametrize("peak,spare,eng", [(2.0, 1, 8000.0), (1.5, 1, 0.0), (3.0, 0, 2500.0), (1.0, 2, 500.0)])
def test_crossing_with_peak_and_spares_matches_a_dense_scan(peak, spare, eng):
    import math

    unit, cap, price = 1000.0, 1e9, 6.0  # $/M; a unit at its average load earns more than it costs
    r = breakeven(unit, cap, price, price, 0.5, 1e9, max_utilisation=0.8, eng_usd_per_month=eng,
                  peak_factor=peak, spare_units=spare)
    first = None
    for i in range(1, 400001):
        t = i * 1e5
        cost = (max(1, math.ceil(t * peak / (cap * 0.8) - 1e-12)) + spare) * unit + eng
        if t * price / 1e6 >= cost - 1e-9:
            first = t
            break
    assert first is not None and first - 1e5 < r.breakeven_tokens_per_month <= first  # within one scan step
    # the reported utilisation is the load of every paid unit at that volume
    units = max(1, math.ceil(first * peak / (cap * 0.8) - 1e-12)) + spare
    assert r.breakeven_utilisation == pytest.approx(first / (units * cap), rel=1e-3)


@pytest.mark.parametrize("kw", [{"peak_factor": 0.5}, {"peak_factor": 0}, {"peak_factor": float("nan")},
                                {"peak_factor": 1e6}, {"spare_units": -1}, {"spare_units": 1.5},
                                {"spare_units": True}, {"spare_units": 10**6}])
def test_bad_peak_and_spares(kw):
    with pytest.raises(UsageError):
        breakeven(1000.0, 1e9, 1, 1, 0.5, 1e9, **kw)


# ---- the default GPU price: median of reliable on-demand offers ------------------------------------

def _catalog(rows, today):
    """A catalog of (provider, price, pricing, age in days, region) H100-SXM offers."""
    import datetime as dt

    from gpuplan.catalog.bundled import load_bundled_providers
    from gpuplan.catalog.catalog import Catalog
    from gpuplan.catalog.gpus import all_gpus
    from gpuplan.catalog.records import Offer

    offers = [Offer(provider=p, instance_type=f"{p}-{i}", gpu="H100-SXM", gpus_per_node=1, region=region,
                    pricing=pricing, price_per_hour_usd=price, price_per_gpu_hour_usd=price,
                    as_of=today - dt.timedelta(days=age), source="test", confidence="primary")
              for i, (p, price, pricing, age, region) in enumerate(rows)]
    return Catalog(all_gpus(), load_bundled_providers(), offers, origin="test")


def test_reliable_price_ignores_marketplaces_spot_and_stale_and_votes_once_per_provider():
    import datetime as dt

    from gpuplan.economics.self_host import reliable_gpu_price

    today = dt.date(2026, 11, 1)
    rows = [("hyperbolic", 1.29, "on_demand", 10, "us"),      # marketplace: not reliable
            ("vast", 0.9, "on_demand", 10, "us"),             # marketplace
            ("lambda", 1.0, "spot", 10, "us"),                # not on-demand
            ("aws", 2.0, "on_demand", 400, "us"),             # stale while fresh offers exist
            ("nebius", 3.0, "on_demand", 10, "eu")]
    rows += [("lambda", 4.0, "on_demand", 10, f"r{i}") for i in range(20)]  # one provider, twenty regions
    rows += [("gcp", 10.0, "on_demand", 10, "us"), ("gcp", 12.0, "on_demand", 10, "eu")]
    b = reliable_gpu_price("H100-SXM", _catalog(rows, today), today=today)
    assert b["providers"] == {"gcp": 11.0, "lambda": 4.0, "nebius": 3.0}
    assert b["usd_per_gpu_hour"] == 4.0 and b["offers"] == 23
    assert b["reliable_only"] and not b["stale_included"]
    assert "3 providers" in b["note"] and "23 offers" in b["note"] and "nebius $3.00" in b["note"]
    # thirty cheap rows of one provider would set a per-offer median ($2.00, 30 of 53 rows); one vote each
    # gives the median of {2, 3, 4, 11}
    more = rows + [("cudo", 2.0, "on_demand", 10, f"c{i}") for i in range(30)]
    assert reliable_gpu_price("H100-SXM", _catalog(more, today), today=today)["usd_per_gpu_hour"] == 3.5


def test_reliable_price_falls_back_and_says_so():
    import datetime as dt

    from gpuplan.economics.self_host import reliable_gpu_price

    today = dt.date(2026, 11, 1)
    stale = reliable_gpu_price("H100-SXM", _catalog([("aws", 6.0, "on_demand", 400, "us"),
                                                     ("vast", 1.0, "on_demand", 1, "us")], today), today=today)
    assert stale["usd_per_gpu_hour"] == 6.0 and stale["stale_included"] and "older than" in stale["note"]
    market = reliable_gpu_price("H100-SXM", _catalog([("vast", 1.0, "on_demand", 1, "us"),
                                                      ("hyperbolic", 2.0, "on_demand", 1, "us")], today), today=today)
    assert market["usd_per_gpu_hour"] == 1.5 and not market["reliable_only"] and "any kind" in market["note"]
    with pytest.raises(UsageError, match="no on-demand"):
        reliable_gpu_price("H100-SXM", _catalog([("aws", 6.0, "spot", 1, "us")], today), today=today)


def test_compare_uses_the_catalog_it_is_given(monkeypatch):
    """The catalog is passed in, never loaded, when the caller has one."""
    import datetime as dt

    from gpuplan.catalog.catalog import Catalog
    from gpuplan.economics.self_host import compare_self_host_to_apis

    monkeypatch.setattr(Catalog, "load", classmethod(lambda cls, *a, **k: pytest.fail("loaded a catalog")))
    cat = _catalog([("nebius", 2.2, "on_demand", 5, "eu")], dt.date.today())
    out = compare_self_host_to_apis("llama-3.1-8b", 1e9, catalog=cat)
    assert out["price_per_gpu_hour_usd"] == 2.2 and out["price_basis"]["providers"] == {"nebius": 2.2}
    assert out["price_basis"]["catalog"] == "test"
