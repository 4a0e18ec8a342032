"""Ranking parts: distinct choices, the network an offer may assume, uncertainty bands and flips."""
from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pytest

from gpuplan.catalog.records import Offer
from gpuplan.planner.distinct import collapse
from gpuplan.planner.network import default_gbps_per_node, offer_network
from gpuplan.planner.uncertainty import Spread, band, flip_analysis, price_sigma, ranking_cost


def _offer(**kw) -> Offer:
    base = dict(provider="p", instance_type="i", gpu="H100-SXM", gpus_per_node=8, region="r", pricing="on_demand",
                price_per_hour_usd=16.0, price_per_gpu_hour_usd=2.0, as_of=dt.date.today(), source="s",
                confidence="primary")
    base.update(kw)
    return Offer(**base)


def test_collapse_keeps_the_first_of_each_choice_and_lists_the_rest():
    rows = [("a", 100.0, "eu"), ("a", 102.0, "us"), ("a", 110.0, "ap"), ("b", 101.0, "eu")]
    kept, also = collapse(range(4), key_of=lambda j: rows[j][0], cost_of=lambda j: rows[j][1],
                          where_of=lambda j: rows[j][2])
    assert kept == [0, 2, 3]  # 102 is within 3% of 100; 110 is not
    assert also == {0: ["us"]}


def test_unknown_network_is_pessimistic_and_vm_labels_do_not_count():
    unknown = offer_network(_offer(interconnect=None))
    assert unknown.basis == "assumed" and unknown.gbps_per_node == default_gbps_per_node("unknown") == 25
    assert not unknown.multi_node
    vm = offer_network(_offer(interconnect="infiniband", cluster=False))  # provider label on a single VM
    assert vm.fabric == "unknown" and not vm.multi_node
    ib = offer_network(_offer(interconnect="infiniband", cluster=True, fabric_gbps_per_node=3200))
    assert ib.basis == "known" and ib.gbps_per_gpu(8) == 400 and ib.multi_node
    label = offer_network(_offer(interconnect="roce", cluster=True))
    assert label.basis == "label_only" and label.gbps_per_node == 400


def test_price_spread_grows_with_age_and_weaker_sources():
    fresh = price_sigma(_offer())
    old = price_sigma(_offer(as_of=dt.date.today() - dt.timedelta(days=365)))
    blog = price_sigma(_offer(confidence="third-party"))
    feed = price_sigma(_offer(confidence="aggregated"))
    assert fresh < feed < blog and fresh < old  # as CONFIDENCE_RANK orders them
    assert old == pytest.approx(math.hypot(0.03, 0.60), rel=0.01)


def test_band_brackets_the_expected_cost_and_widens_with_uncertainty():
    narrow = band(100.0, 1000.0, 50.0, Spread(0.05, 0.0, 0.0, 0.02), None, seed=1)
    wide = band(100.0, 1000.0, 50.0, Spread(0.30, 0.2, 0.1, 0.2), None, seed=1)
    for b in (narrow, wide):
        assert b["cost_p10_usd"] < 1050.0 < b["cost_p90_usd"] * 1.01
        assert b["wall_p10_hours"] < 100.0 < b["wall_p90_hours"]
    assert wide["cost_p90_usd"] - wide["cost_p10_usd"] > 3 * (narrow["cost_p90_usd"] - narrow["cost_p10_usd"])
    # failure samples stretch the wall time: the band follows them
    samples = np.full(2000, 130.0)
    late = band(100.0, 1000.0, 0.0, Spread(0.0, 0.0, 0.0, 0.0), samples, seed=1)
    assert late["wall_p50_hours"] == pytest.approx(130.0) and late["cost_p50_usd"] == pytest.approx(1300.0)


def test_ranking_cost_penalises_uncertainty():
    sure, unsure = ranking_cost([1000.0, 970.0], [0.0, 0.0], [0.05, 0.4])
    assert sure < unsure


def test_flip_analysis_states_the_price_gap():
    first = {"rank_cost": 1000.0, "compute_usd": 1000.0, "cost_sigma": 0.0, "other_usd": 0.0,
             "cost_at_rate": lambda m: 1000.0 * (1 + 0.01 * m)}
    second = {"rank_cost": 1100.0, "compute_usd": 1100.0, "cost_sigma": 0.0, "other_usd": 0.0}
    lines = flip_analysis(first, second)
    assert lines[0].startswith("#1's price +10%")
    assert "efficiency (MFU / throughput) -9%" in lines[1]
    assert "x10" in lines[2]


def test_collapse_rows_matches_collapse_on_random_rows():
    """The planners' fast path gives exactly what planner.distinct.collapse gives."""
    import random

    from gpuplan.planner.distinct import collapse_rows

    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(1, 40)
        keys = [(rng.choice("abc"), rng.choice((1, 8))) for _ in range(n)]
        costs = [rng.choice((100.0, 101.0, 102.5, 110.0, 200.0)) * rng.uniform(0.99, 1.01) for _ in range(n)]
        wheres = [rng.choice(("eu", "us", "ap", "", "us (x)")) for _ in range(n)]
        order = sorted(range(n), key=lambda j: costs[j])
        slow = collapse(order, key_of=lambda j: keys[j], cost_of=lambda j: costs[j], where_of=lambda j: wheres[j])
        assert collapse_rows(order, keys, costs, wheres) == slow


def test_catalog_filters_read_the_same_offers_as_filtering_everything(tmp_path):
    """A --gpu / --provider filter may be pushed down to the store: the offers must be the same."""
    from gpuplan.catalog.bundled import load_bundled_offers
    from gpuplan.catalog.catalog import Catalog
    from gpuplan.catalog.store import Store

    db = tmp_path / "s.db"
    with Store(db, seed=lambda: list(load_bundled_offers())):
        pass
    store_cat, bundled_cat = Catalog.load(str(db)), Catalog.load(use_store=False)
    def rows(offers):  # ties in price may come in either order
        return sorted((o.model_dump_json() for o in offers))

    for kw in ({"gpu": "H100"}, {"provider": "nebius"}, {"gpu": "MI300X", "pricing": "on_demand"}, {}):
        got, want = store_cat.offers(**kw), bundled_cat.offers(**kw)
        assert rows(got) == rows(want), kw
        assert [o.price_per_gpu_hour_usd for o in got] == [o.price_per_gpu_hour_usd for o in want]


def _collapse_linear(order, keys, costs, wheres, tol):
    """The definition collapse_rows implements: each row against every kept row of its key, in order."""
    kept, also, listed, first_of = [], {}, {}, {}
    for j in order:
        match = next((i for i in first_of.get(keys[j], ()) if abs(costs[j] - costs[i]) <= tol * max(abs(costs[i]), 1e-9)),
                     None)
        if match is None:
            first_of.setdefault(keys[j], []).append(j)
            kept.append(j)
            continue
        w, seen = wheres[j], listed.setdefault(match, set())
        lst = also.setdefault(match, [])
        if w and w not in seen and w != wheres[match]:
            lst.append(w)
            seen.add(w)
    return kept, also


def test_collapse_rows_buckets_match_the_linear_definition():
    """Log-spaced cost buckets find the same earliest kept row as a scan of every kept row, with costs
    at the tolerance's edge, zero, negative and spanning nine decades."""
    import random

    from gpuplan.planner.distinct import collapse_rows

    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(0, 300)
        keys = [rng.randint(0, 4) for _ in range(n)]
        costs = [rng.choice([0.0, -1.0, 1.0, 1.03, 1.0 / 1.03, rng.uniform(1, 1.2), round(rng.uniform(1, 2), 2),
                             10 ** rng.uniform(-3, 6)]) for _ in range(n)]
        wheres = [rng.choice(["a", "b", "c", ""]) for _ in range(n)]
        order = list(range(n))
        rng.shuffle(order)
        tol = rng.choice([0.03, 0.0, 0.5])
        kept, also = _collapse_linear(order, keys, costs, wheres, tol)
        assert collapse_rows(order, keys, costs, wheres, tol) == (kept, also)
        limit = rng.randint(1, 12)  # only the rows a plan shows: the same rows and the same 'also at'
        assert collapse_rows(order, keys, costs, wheres, tol, limit=limit) == (
            kept[:limit], {i: w for i, w in also.items() if i in kept[:limit]})


def test_estimator_basis_names_how_its_band_was_held_out():
    """The training bands are written leave-one-source-out, the serving bands leave-one-family-out: each plan's
    estimator basis says which, read from the band file's own command."""
    from gpuplan.planner.uncertainty import estimator_regime

    _, train_sigma, train_basis = estimator_regime("train", total_params=70e9)
    _, serve_sigma, serve_basis = estimator_regime("serve", concurrency=64)
    assert "leave-one-source-out" in train_basis and "family" not in train_basis
    assert "leave-one-family-out" in serve_basis
    assert 0.05 < train_sigma < 1.0 and 0.05 < serve_sigma < 1.0
