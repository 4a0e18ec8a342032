"""Dated truth at read time: among offers sharing (provider, instance, GPU, GPUs per node, region, pricing),
the newest dated price is current and the others are superseded; `catalog status` reports the conflicts."""
from __future__ import annotations

import datetime as dt
import json

from gpuplan.catalog.records import Offer
from gpuplan.catalog.store import Store, merge_current, price_conflicts


def offer(price, as_of, *, n=8, itype="gpu-h100-sxm", provider="nebius", confidence="primary", source="test",
          region="eu-north1", pricing="on_demand") -> Offer:
    return Offer(provider=provider, instance_type=itype, gpu="H100-SXM", gpus_per_node=n, region=region,
                 pricing=pricing, price_per_hour_usd=price, price_per_gpu_hour_usd=price / n, as_of=as_of,
                 source=source, confidence=confidence)


OLD_CHEAP = offer(8 * 2.95, dt.date(2025, 3, 1), source="nebius pricing page 2025-03")
NEW = offer(8 * 4.50, dt.date(2026, 10, 1), source="nebius pricing page 2026-10")


def test_newest_dated_price_wins_whatever_the_order_or_price():
    for rows in ([OLD_CHEAP, NEW], [NEW, OLD_CHEAP]):
        (got,) = merge_current({"bundled": rows})
        assert got.price_per_gpu_hour_usd == 4.50 and got.as_of == dt.date(2026, 10, 1)
    # across sources too: an aggregated feed dated later beats an older primary row
    agg = offer(8 * 4.20, dt.date(2026, 11, 1), confidence="aggregated", source="gpuhunt")
    (got,) = merge_current({"bundled": [NEW], "gpuhunt:nebius": [agg]})
    assert got.price_per_gpu_hour_usd == 4.20


def test_same_date_prefers_surer_confidence_then_higher_price():
    d = dt.date(2026, 10, 1)
    prim, agg = offer(30.0, d), offer(20.0, d, confidence="aggregated")
    assert merge_current({"a": [agg], "b": [prim]})[0].price_per_hour_usd == 30.0
    lo, hi = offer(20.0, d), offer(24.0, d)
    assert merge_current({"bundled": [lo, hi]})[0].price_per_hour_usd == 24.0  # unknown means pessimistic


def test_gpu_count_is_part_of_the_key():
    one, eight = offer(2.99, dt.date(2026, 9, 1), n=1, itype="H100 SXM"), offer(8 * 2.99, dt.date(2026, 9, 1),
                                                                                  itype="H100 SXM")
    assert len(merge_current({"bundled": [one, eight]})) == 2


def test_user_import_still_overrides_a_newer_price():
    mine = offer(8 * 1.0, dt.date(2025, 1, 1), confidence="user")
    (got,) = merge_current({"bundled": [NEW], "user:contract": [mine]})
    assert got.confidence == "user"


def test_conflicts_name_both_prices_dates_and_sources():
    (c,) = price_conflicts({"bundled": [OLD_CHEAP, NEW]})
    assert (c["provider"], c["gpu"], c["gpus_per_node"], c["region"], c["pricing"]) == (
        "nebius", "H100-SXM", 8, "eu-north1", "on_demand")
    assert c["current"]["price_per_gpu_hour_usd"] == 4.50 and c["current"]["as_of"] == "2026-10-01"
    assert c["current"]["source"] == "nebius pricing page 2026-10"
    (old,) = c["superseded"]
    assert old["price_per_gpu_hour_usd"] == 2.95 and old["as_of"] == "2025-03-01" and old["store_source"] == "bundled"
    # the same price seen twice (within rounding) is no conflict
    assert price_conflicts({"bundled": [NEW, offer(8 * 4.5001, dt.date(2026, 11, 1))]}) == []


def test_catalog_status_reports_conflicts(cli, tmp_path):
    db = tmp_path / "s.db"
    with Store(db, seed=lambda: [OLD_CHEAP, NEW]) as s:
        assert [o.price_per_gpu_hour_usd for o in s.current_offers()] == [4.50]
    code, out, err = cli("catalog", "status", "--db", db, "--json")
    assert code == 0, err
    (c,) = json.loads(out)["conflicts"]
    assert c["current"]["price_per_hour_usd"] == 36.0 and c["superseded"][0]["price_per_hour_usd"] == 23.6
    code, out, err = cli("catalog", "status", "--db", db)
    assert code == 0, err
    assert "price conflicts: 1" in out and "$36/h on 2026-10-01" in out and "$23.6/h on 2025-03-01" in out


def test_bundled_catalog_shows_one_current_offer_per_key():
    from gpuplan.catalog.bundled import load_bundled_offers, load_current_bundled_offers
    from gpuplan.catalog.catalog import Catalog

    cur = load_current_bundled_offers()
    keys = [(o.provider, o.instance_type, o.gpu, o.gpus_per_node, o.region, o.pricing, o.commitment_term_h)
            for o in cur]
    assert len(keys) == len(set(keys))
    assert len(cur) + sum(len(c["superseded"]) for c in price_conflicts({"bundled": list(load_bundled_offers())})) \
        <= len(load_bundled_offers())
    assert len(Catalog.load(use_store=False).all_offers) == len(cur)


def test_fast_tuple_read_path_applies_the_same_truth(tmp_path):
    """The planner's tuple read path (no Offer per row) must pick exactly what merge_current picks."""
    from gpuplan.catalog.store import OFFER_COLUMNS

    with Store(tmp_path / "s.db", seed=lambda: [OLD_CHEAP, NEW, offer(2.99, dt.date(2026, 9, 1), n=1, itype="x"),
                                                 offer(8 * 2.99, dt.date(2026, 9, 1), itype="x")]) as s:
        s.write_snapshot("user:mine", [offer(8 * 1.0, dt.date(2025, 1, 1), itype="x", confidence="user")])
        s.write_snapshot("gpuhunt:nebius", [offer(8 * 4.2, dt.date(2026, 11, 1), confidence="aggregated")])
        if not hasattr(s, "current_offer_tuples"):
            import pytest
            pytest.skip("no tuple read path in this build")
        want = [tuple(getattr(o, c) for c in OFFER_COLUMNS) for o in s.current_offers(with_deployability=True)]
        import collections

        row = collections.namedtuple("Row", OFFER_COLUMNS)  # reads like an Offer, as the planner's rows do
        got = [tuple(r) for r in s.current_offer_tuples(make=lambda values: row(*values))]
    assert got == want
    assert sorted(r[OFFER_COLUMNS.index("price_per_hour_usd")] for r in got) == [2.99, 8.0, 8 * 4.2]
