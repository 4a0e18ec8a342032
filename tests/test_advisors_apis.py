"""API price table: clean ids, dates, sources, forgiving lookups."""
from __future__ import annotations

import datetime as dt
import re

import pytest

from gpuplan.economics.api_prices import get_api_price, list_api_prices
from gpuplan.errors import UnknownNameError, UsageError


def test_rows_have_clean_ids_dates_and_sources():
    rows = list_api_prices()
    assert len(rows) >= 40
    ids = [r.id for r in rows]
    assert len(ids) == len(set(ids))
    for r in rows:
        assert re.fullmatch(r"[a-z0-9-]+/[a-z0-9.-]+", r.id), r.id
        assert isinstance(r.as_of, dt.date) and r.as_of.year >= 2024
        assert r.source and r.input_usd_per_mtok >= 0 and r.output_usd_per_mtok >= 0
    assert "together/meta-llama-3.1-70b-instruct-turbo" in ids


def test_open_model_mapping_points_at_real_presets():
    from gpuplan.models.presets import preset_ids

    presets = set(preset_ids())
    mapped = {r.open_model for r in list_api_prices() if r.open_model}
    assert {"llama-3.1-8b", "llama-3.1-70b", "llama-3.3-70b", "llama-3.1-405b", "deepseek-v3",
            "qwen3-235b-a22b"} <= mapped
    assert mapped <= presets
    closed = [r for r in list_api_prices() if r.provider in ("OpenAI", "Anthropic", "Google")]
    assert closed and all(not r.open_model for r in closed)


def test_worked_table_prices_present():
    t = get_api_price("together/llama-3.3-70b-instruct-turbo")
    assert (t.input_usd_per_mtok, t.output_usd_per_mtok) == (0.88, 0.88)
    assert t.blended_usd_per_mtok(0.5) == pytest.approx(0.88)


@pytest.mark.parametrize("name", [
    "together/meta-llama-3.1-70b-instruct-turbo",
    "TOGETHER/Meta-Llama-3.1-70B-Instruct-Turbo",
    "Together AI/meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo",
    "  together/meta-llama-3.1-70b-instruct-turbo ",
])
def test_forgiving_lookup(name):
    assert get_api_price(name).id == "together/meta-llama-3.1-70b-instruct-turbo"


def test_model_alone_when_unique_and_ambiguous_otherwise():
    assert get_api_price("gpt-4o").id == "openai/gpt-4o"
    with pytest.raises(UsageError) as e:
        get_api_price("deepseek-v3")
    assert "together/deepseek-v3" in str(e.value) and "deepinfra/deepseek-v3" in str(e.value)


def test_unknown_gives_closest():
    with pytest.raises(UnknownNameError) as e:
        get_api_price("gpt4o")
    assert "openai/gpt-4o" in e.value.suggestions
    with pytest.raises(UsageError):
        get_api_price("")


def test_filters():
    assert {r.provider_id for r in list_api_prices(provider="Together AI")} == {"together"}
    assert all("70b" in r.id for r in list_api_prices(model_like="70B"))
    assert {r.open_model for r in list_api_prices(model_like="llama-3.3-70b")} == {"llama-3.3-70b"}
    with pytest.raises(UnknownNameError):
        list_api_prices(provider="nope")


def test_age_and_staleness():
    r = get_api_price("openai/gpt-4o")
    assert r.age_days(dt.date(2025, 9, 11)) == 10 and not r.is_stale(dt.date(2025, 9, 11))
    assert r.is_stale(dt.date(2026, 9, 1))
    assert r.as_row(dt.date(2025, 9, 11))["age_days"] == 10


def test_same_architecture_is_not_same_weights():
    r1 = get_api_price("together/deepseek-r1")
    v3 = get_api_price("together/deepseek-v3")
    assert r1.open_model == v3.open_model == "deepseek-v3"
    assert v3.same_weights and not r1.same_weights
    assert not get_api_price("openai/gpt-4o").same_weights
