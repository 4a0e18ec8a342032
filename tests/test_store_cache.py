"""The store keeps its merged current offers between reads (issue 15): a cached read gives exactly
what merging the snapshots gives, any change to the snapshots or the rules is seen at once, and a
damaged or foreign blob is never trusted."""
from __future__ import annotations

import datetime as dt
import io

import numpy as np
import pytest

from gpuplan.catalog import row_cache
from gpuplan.catalog.bundled import load_bundled_offers
from gpuplan.catalog.store import MERGED_ORDER_COLUMNS, OFFER_COLUMNS, Store
from gpuplan.planner.offer_rows import OfferRow


def _fill(path):
    base = list(load_bundled_offers())
    with Store(path) as s:
        s.write_snapshot("copies", [o.model_copy(update={
            "region": o.region if i % 3 == 0 else f"{o.region}-x{i % 5}",
            "price_per_hour_usd": o.price_per_hour_usd * 1.1, "price_per_gpu_hour_usd": o.price_per_gpu_hour_usd * 1.1,
            "as_of": o.as_of + dt.timedelta(days=i % 3 - 1), "source": "test copies"}) for i, o in enumerate(base[:200])])
        s.write_snapshot("user:quotes", [o.model_copy(update={
            "price_per_hour_usd": o.price_per_hour_usd / 2, "price_per_gpu_hour_usd": o.price_per_gpu_hour_usd / 2,
            "confidence": "user", "source": "my quote"}) for o in base[3:30:3]])
    return base


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "s.db"
    _fill(path)
    with Store(path) as s:
        yield s


FILTERS = [(None, None), (["H100-SXM"], None), (None, ["aws", "vast"]),
           (["A100-80GB-SXM", "no-such-gpu"], ["lambda", "runpod"]), ([], None)]


@pytest.mark.parametrize("gpus,providers", FILTERS)
@pytest.mark.parametrize("by_price", [False, True])
def test_cached_read_is_the_merge(store, gpus, providers, by_price):
    want = store._merged_tuples(make=OfferRow, gpus=gpus, providers=providers, by_price=by_price)
    first = store.current_offer_tuples(make=OfferRow, gpus=gpus, providers=providers, by_price=by_price)
    assert store.conn.execute("SELECT COUNT(*) FROM current_cache").fetchone()[0] == 1
    again = store.current_offer_tuples(make=OfferRow, gpus=gpus, providers=providers, by_price=by_price)
    assert first == want and again == want
    assert all(type(r) is OfferRow for r in again)
    # exact types too: a date stays a date, 8.0 GPUs per node stays a float, None stays None
    for a, b in zip(again, want):
        assert list(map(type, a)) == list(map(type, b))
    if gpus == ["H100-SXM"]:
        assert want and {r.gpu for r in want} == {"H100-SXM"}


def test_second_read_does_not_merge_again(store, monkeypatch):
    want = store.current_offer_tuples(make=OfferRow, by_price=True)

    def boom(**kw):
        raise AssertionError("merged again")

    monkeypatch.setattr(store, "_merged_tuples", boom)
    assert store.current_offer_tuples(make=OfferRow, by_price=True) == want


def test_a_new_snapshot_or_a_removed_source_is_seen(store):
    before = store.current_offer_tuples(make=OfferRow)
    o = list(load_bundled_offers())[0]
    store.write_snapshot("later", [o.model_copy(update={"region": "mars-1", "source": "later"})])
    assert store.conn.execute("SELECT COUNT(*) FROM current_cache").fetchone()[0] == 0  # dropped with the write
    after = store.current_offer_tuples(make=OfferRow)
    assert len(after) == len(before) + 1 and any(r.region == "mars-1" for r in after)
    store.remove_source("later")
    assert store.current_offer_tuples(make=OfferRow) == before


def test_another_process_writing_is_seen(store):
    """The key names each source's newest snapshot: a write through another connection is seen."""
    store.current_offer_tuples(make=OfferRow)
    o = list(load_bundled_offers())[0]
    with Store(store.path) as other:
        other.write_snapshot("elsewhere", [o.model_copy(update={"region": "venus-2", "source": "x"})])
    assert any(r.region == "venus-2" for r in store.current_offer_tuples(make=OfferRow))


def test_new_rules_miss_the_cache(store, monkeypatch):
    store.current_offer_tuples(make=OfferRow)
    calls = []
    real = store._merged_tuples

    def counted(**kw):
        calls.append(kw)
        return real(**kw)

    monkeypatch.setattr(store, "_merged_tuples", counted)
    monkeypatch.setattr(row_cache, "rules_fingerprint", lambda: "other deployability table")
    store.current_offer_tuples(make=OfferRow)
    assert calls  # merged again under the new rules


@pytest.mark.parametrize("damage", ["garbage", "truncated", "pickled", "other columns"])
def test_a_damaged_or_foreign_blob_is_not_trusted(store, damage):
    want = store._merged_tuples(make=OfferRow)
    store.current_offer_tuples(make=OfferRow)
    key, blob = store.conn.execute("SELECT key, blob FROM current_cache").fetchone()
    if damage == "garbage":
        bad = b"\x00not an npz" * 10
    elif damage == "truncated":
        bad = blob[: len(blob) // 2]
    elif damage == "pickled":  # an object array would need pickle to load: refused, never executed
        buf = io.BytesIO()
        np.savez(buf, meta=np.array([{"format": row_cache.FORMAT}], dtype=object))
        bad = buf.getvalue()
    else:
        rows = store._merged_tuples(make=tuple)
        bad = row_cache.encode([r[:-1] for r in rows], OFFER_COLUMNS[:-1], MERGED_ORDER_COLUMNS)[0]
    store.conn.execute("UPDATE current_cache SET blob = ?", (bad,))
    assert store.current_offer_tuples(make=OfferRow) == want
    assert store.conn.execute("SELECT blob FROM current_cache").fetchone()[0] != bad  # replaced


def test_read_only_store_reads_without_a_cache(tmp_path):
    path = tmp_path / "ro.db"
    _fill(path)
    with Store(path) as s:
        want = s._merged_tuples(make=OfferRow, by_price=True)
    with Store(path, readonly=True) as s:
        assert s.current_offer_tuples(make=OfferRow, by_price=True) == want
    with Store(path) as s:
        assert s.conn.execute("SELECT COUNT(*) FROM current_cache").fetchone()[0] == 0


def test_codes_keep_equal_values_of_different_types_apart():
    rows = [(1, "a", 2.5, 1.0), (1.0, "b", 3.5, 1.0), (True, "a", 1.5, 2.0), (None, "b", 0.5, 1.0)]
    cols = ("x", "gpu", "price_per_hour_usd", "price_per_gpu_hour_usd")
    blob, merged, listing = row_cache.encode(rows, cols, ("gpu",))
    assert merged.tolist() == [0, 2, 1, 3]  # by gpu, ties in the given order
    got = row_cache.decode(blob, cols, make=tuple)
    assert got == [rows[i] for i in merged] and [type(r[0]) for r in got] == [int, bool, float, type(None)]
    # listing: per GPU-hour, then per node-hour, ties in merged order
    assert row_cache.decode(blob, cols, make=tuple, by_price=True) == [rows[3], rows[0], rows[1], rows[2]]
    assert row_cache.decode(blob, cols, make=tuple, by_price=True, gpus=["a"]) == [rows[0], rows[2]]
