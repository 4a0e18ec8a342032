"""Own vs rent: Epoch's worked example, break-even utilisation and payback consistency."""
from __future__ import annotations

import pytest

from gpuplan.economics.ownership import own_vs_rent, power_usd_per_hour, rental_prices_from_offers
from gpuplan.errors import UsageError


def test_epoch_worked_example_h100_at_40k():
    """formulas.md §10: 40000 · 1.64 / 0.81 · 0.322 / 8766 ≈ $2.97 per GPU-hour."""
    r = own_vs_rent("H100-SXM", [3.0], purchase_usd=40000, depreciation="epoch", utilization=1.0,
                    power_usd_per_kwh=0.0, colocation_usd_per_kw_month=0.0)
    assert r.capex_usd_per_hour == pytest.approx(2.97, abs=0.01)
    assert r.owned_usd_per_gpu_hour == pytest.approx(r.capex_usd_per_hour)


def test_straight_line_and_power_components():
    r = own_vs_rent("H100-SXM", [2.0], purchase_usd=30000, life_years=5, utilization=1.0, interest_rate_per_year=0)
    capex = 30000 * 1.64 / 0.81
    assert r.capex_usd == pytest.approx(capex)
    assert r.capex_usd_per_hour == pytest.approx(capex / (5 * 8766))
    assert r.power_usd_per_hour == pytest.approx(0.700 * 1.82 * 0.75 * 1.25 * 0.075)
    assert power_usd_per_hour(1000, 1.82, 0.75, 1.1, 0.1) == pytest.approx(1.0 * 1.82 * 0.75 * 1.1 * 0.1)


def test_breakeven_utilisation_is_where_costs_match():
    r = own_vs_rent("H100-SXM", {"x": 3.5}, purchase_usd=35000, ops_usd_per_gpu_hour=0.3)
    u = r.comparisons[0].breakeven_utilization
    assert 0 < u < 1
    at_u = own_vs_rent("H100-SXM", {"x": 3.5}, purchase_usd=35000, ops_usd_per_gpu_hour=0.3, utilization=u)
    assert at_u.owned_usd_per_gpu_hour == pytest.approx(3.5, rel=1e-9)
    above = own_vs_rent("H100-SXM", {"x": 3.5}, purchase_usd=35000, ops_usd_per_gpu_hour=0.3, utilization=min(1, u * 1.1))
    assert above.comparisons[0].owned_cheaper
    assert r.comparisons[0].owned_cheaper == (r.utilization > u)


def test_payback_matches_a_month_by_month_simulation():
    r = own_vs_rent("H100-SXM", {"rent": 4.0}, purchase_usd=33750, utilization=0.8)
    months, cum = 0, 0.0
    while cum < r.capex_usd:
        cum += 4.0 * 730 * 0.8 - (r.power_usd_per_hour + r.colocation_usd_per_hour) * 730
        months += 1
    assert months - 1 < r.comparisons[0].payback_months <= months


def test_cheap_rent_never_pays_back():
    r = own_vs_rent("H100-SXM", {"cheap": 0.05}, purchase_usd=33750, utilization=0.5)
    c = r.comparisons[0]
    assert c.payback_months is None and not c.owned_cheaper and c.breakeven_utilization > 1


def test_interest_and_residual():
    base = own_vs_rent("H100-SXM", [2.0], purchase_usd=33750, interest_rate_per_year=0)
    financed = own_vs_rent("H100-SXM", [2.0], purchase_usd=33750, interest_rate_per_year=0.08)
    resale = own_vs_rent("H100-SXM", [2.0], purchase_usd=33750, residual_fraction=0.2, interest_rate_per_year=0)
    assert financed.capex_usd_per_hour > base.capex_usd_per_hour > resale.capex_usd_per_hour


def test_default_purchase_price_and_missing_one():
    assert own_vs_rent("h100", [2.0]).purchase_usd == 33750
    with pytest.raises(UsageError) as e:
        own_vs_rent("A100-80GB-SXM", [2.0])
    assert "--purchase-usd" in str(e.value)


@pytest.mark.parametrize("kw", [
    {"utilization": 0}, {"utilization": 1.2}, {"utilization": float("nan")}, {"purchase_usd": -5},
    {"life_years": 0}, {"pue": 0.8}, {"power_usd_per_kwh": -1}, {"depreciation": "double-declining"},
    {"residual_fraction": 1.0}, {"ops_usd_per_gpu_hour": float("inf")},
])
def test_bad_inputs(kw):
    with pytest.raises(UsageError):
        own_vs_rent("H100-SXM", [2.0], **{"purchase_usd": 30000, **kw})


@pytest.mark.parametrize("rents", [[], [0], [-2.0], [float("nan")], {}])
def test_bad_rents(rents):
    with pytest.raises(UsageError):
        own_vs_rent("H100-SXM", rents, purchase_usd=30000)


def test_rental_prices_from_offers():
    assert rental_prices_from_offers([3.0, 1.0, 2.0, float("nan"), -1]) == {"cheapest on-demand": 1.0,
                                                                            "median on-demand": 2.0}
    assert rental_prices_from_offers([]) == {}
