"""The bundled offer catalog: loading, validation, every filter, per-GPU arithmetic."""
from __future__ import annotations

import datetime as dt
import math

import pytest
from pydantic import ValidationError

from gpuplan.catalog.catalog import Catalog
from gpuplan.catalog.records import Offer, parse_as_of
from gpuplan.catalog.validation import price_problem
from gpuplan.catalog.gpus import get_gpu
from gpuplan.errors import UnknownNameError, UsageError

TODAY = dt.date(2026, 11, 22)


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return Catalog.load(use_store=False)


def test_loads_hundreds_of_validated_offers(cat):
    assert cat.origin == "bundled"
    assert len(cat.all_offers) >= 200  # the 2026-11 rebuild keeps dated rows only (730 -> ~250)
    for o in cat.all_offers:
        assert o.gpu in cat.gpus, o
        assert o.provider in cat.providers, o
        assert math.isclose(o.price_per_gpu_hour_usd * o.gpus_per_node, o.price_per_hour_usd, rel_tol=1e-6)
        assert price_problem(cat.gpus[o.gpu], o.price_per_gpu_hour_usd) is None, o
        assert o.source and o.confidence and o.as_of


def test_offers_are_unique_per_key(cat):
    keys = [(o.provider, o.instance_type, o.gpu, o.gpus_per_node, o.region, o.pricing) for o in cat.all_offers]
    assert len(keys) == len(set(keys))


def test_spot_never_above_on_demand_for_the_same_instance(cat):
    on_demand = {(o.provider, o.instance_type, o.region): o.price_per_hour_usd for o in cat.all_offers if o.pricing == "on_demand"}
    for o in cat.all_offers:
        if o.pricing == "spot" and (o.provider, o.instance_type, o.region) in on_demand:
            assert o.price_per_hour_usd < on_demand[(o.provider, o.instance_type, o.region)]


def test_h100_offers_span_at_least_eight_providers(cat):
    offers = cat.offers(gpu="H100")
    assert len({o.provider for o in offers}) >= 8
    assert {o.gpu for o in offers} >= {"H100-SXM", "H100-PCIe"}  # bare chip name = every variant
    assert {o.gpu for o in cat.offers(gpu="H100-PCIe")} == {"H100-PCIe"}


def test_sorted_cheapest_per_gpu_hour_first(cat):
    prices = [o.price_per_gpu_hour_usd for o in cat.offers(gpu="H100")]
    assert prices == sorted(prices)
    node = [o.price_per_hour_usd for o in cat.offers(gpu="A100", sort="node-price")]
    assert node == sorted(node)


@pytest.mark.parametrize("kwargs, check", [
    ({"min_gpus": 8}, lambda o, c: o.gpus_per_node >= 8),
    ({"provider": "Lambda Labs"}, lambda o, c: o.provider == "lambda"),
    ({"provider": "lambda,nebius"}, lambda o, c: o.provider in ("lambda", "nebius")),
    ({"kind": "hyperscaler"}, lambda o, c: c.providers[o.provider].kind == "hyperscaler"),
    ({"pricing": "spot"}, lambda o, c: o.pricing == "spot"),
    ({"pricing": "On-Demand"}, lambda o, c: o.pricing == "on_demand"),
    ({"region": "EU-NORTH"}, lambda o, c: "eu-north" in o.region.lower()),
    ({"max_price": 2.0}, lambda o, c: o.price_per_gpu_hour_usd <= 2.0),
    ({"min_confidence": "primary"}, lambda o, c: o.confidence in ("primary", "live", "user")),
    ({"max_age_days": 120, "today": TODAY}, lambda o, c: (TODAY - o.as_of).days <= 120),
    ({"exclude_providers": ["lambda", "cudo"]}, lambda o, c: o.provider not in ("lambda", "cudo")),
])
def test_each_filter_keeps_only_matching_offers(cat, kwargs, check):
    got = cat.offers(**kwargs)
    assert got, kwargs
    assert all(check(o, cat) for o in got)
    assert len(got) < len(cat.all_offers)


def test_limit(cat):
    assert len(cat.offers(limit=5)) == 5


@pytest.mark.parametrize("kwargs, message", [
    ({"gpu": "H1OO"}, "unknown GPU"),
    ({"provider": "lamda"}, "closest: lambda"),
    ({"kind": "cloudy"}, "unknown provider kind"),
    ({"pricing": "cheap"}, "unknown pricing type"),
    ({"min_gpus": 0}, "--min-gpus"),
    ({"min_gpus": float("nan")}, "--min-gpus"),
    ({"max_price": -1}, "--max-price"),
    ({"limit": 0}, "--limit"),
    ({"sort": "vibes"}, "unknown sort"),
    ({"min_confidence": "certain"}, "unknown confidence"),
])
def test_bad_filters_raise_one_line_usage_errors(cat, kwargs, message):
    with pytest.raises(UsageError) as e:
        cat.offers(**kwargs)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_per_gpu_price_must_match_instance_price():
    base = dict(provider="x", instance_type="8x", gpu="H100-SXM", gpus_per_node=8, pricing="on_demand",
                as_of=TODAY, source="test", confidence="user")
    ok = Offer(**base, price_per_hour_usd=24.0, price_per_gpu_hour_usd=3.0)
    assert ok.price_per_gpu_hour_usd == 3.0
    with pytest.raises(ValidationError):
        Offer(**base, price_per_hour_usd=24.0, price_per_gpu_hour_usd=24.0)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValidationError):
            Offer(**base, price_per_hour_usd=bad, price_per_gpu_hour_usd=bad / 8)


def test_price_sanity_floor_and_ceiling():
    h100 = get_gpu("H100-SXM")
    assert price_problem(h100, 2.5) is None
    assert "floor" in price_problem(h100, 0.01)
    assert "zero" in price_problem(h100, 0.0)
    assert "ceiling" in price_problem(h100, 500.0)
    assert price_problem(get_gpu("RTX-4090"), 0.30) is None


@pytest.mark.parametrize("label, expected", [
    ("2026-10-07", dt.date(2026, 10, 7)), ("2026-05", dt.date(2026, 5, 15)), ("2025", dt.date(2025, 7, 1)),
    ("2025 (undated snapshot)", dt.date(2025, 7, 1)), ("2024-Q4 (launch)", dt.date(2024, 11, 15)),
    ("2025-26", dt.date(2025, 12, 31)), ("2025-06 (after cut)", dt.date(2025, 6, 15)),
])
def test_as_of_labels_become_mid_period_dates(label, expected):
    assert parse_as_of(label) == expected


def test_stale_flag():
    o = Offer(provider="x", instance_type="1x", gpu="L4", gpus_per_node=1, pricing="on_demand",
              price_per_hour_usd=0.8, price_per_gpu_hour_usd=0.8, as_of=dt.date(2025, 1, 1),
              source="t", confidence="user")
    assert o.is_stale(TODAY) and not o.is_stale(dt.date(2025, 2, 1))


def test_providers_cover_seeds_and_hyperscalers(cat):
    names = {p.name for p in cat.providers.values()}
    for n in ["CoreWeave", "Lambda", "RunPod", "Vast.ai", "Voltage Park", "Paperspace (DigitalOcean)",
              "TensorWave", "Nebius", "io.net", "Aethir", "Oracle Cloud", "IBM Cloud", "Vultr", "E2E Networks",
              "Latitude.sh", "Hyperbolic", "Theta EdgeCloud", "Polaris", "AWS", "GCP", "Azure", "Cudo Compute",
              "Fluidstack"]:
        assert n in names, n
    kinds = {p.kind for p in cat.providers.values()}
    assert kinds == {"hyperscaler", "neocloud", "marketplace", "decentralized"}


def test_unknown_attributes_stay_unknown(cat):
    polaris = cat.provider("Polaris")
    assert polaris.kind_unverified
    assert polaris.billing_increment_s is None and polaris.has_spot is None and polaris.egress_usd_per_gb is None


def test_unknown_provider_name(cat):
    with pytest.raises(UnknownNameError, match="closest"):
        cat.provider("corweave")
