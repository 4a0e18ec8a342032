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
