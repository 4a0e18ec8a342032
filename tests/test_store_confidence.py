"""Confidence 'aggregated' (feeds that compile providers' APIs): its rank, the v2 -> v3 store migration
(a CHECK change: the offers table is rebuilt in place, atomically), read-only v2 stores, and filtering."""
from __future__ import annotations

import datetime as dt
import os
import sqlite3

import pytest

from gpuplan.catalog.records import CONFIDENCE_RANK, MIN_CONFIDENCE_LEVELS, Offer
from gpuplan.catalog.store import MIGRATIONS, SCHEMA_VERSION, Store
from gpuplan.errors import UsageError


def offer(confidence="primary", provider="lambda", price=2.5, gpu="H100-SXM", itype="gpu_1x_h100") -> Offer:
    return Offer(provider=provider, instance_type=itype, gpu=gpu, gpus_per_node=1, region="us", pricing="on_demand",
                 price_per_hour_usd=price, price_per_gpu_hour_usd=price, as_of=dt.date(2026, 10, 1), source="test",
                 confidence=confidence)


def test_aggregated_ranks_between_primary_and_third_party():
    assert CONFIDENCE_RANK["primary"] > CONFIDENCE_RANK["aggregated"] > CONFIDENCE_RANK["third-party"]
    assert CONFIDENCE_RANK["live"] > CONFIDENCE_RANK["primary"] and CONFIDENCE_RANK["user"] > CONFIDENCE_RANK["primary"]
    assert list(MIN_CONFIDENCE_LEVELS) == sorted(MIN_CONFIDENCE_LEVELS, key=lambda c: -CONFIDENCE_RANK[c])
    assert offer("aggregated").confidence == "aggregated"


def _v2_store(path) -> None:
    """A store exactly as gpuplan with schema 2 left it: migrations 1 and 2, two offers."""
    c = sqlite3.connect(path, isolation_level=None)
    c.execute("BEGIN")
    MIGRATIONS[1](c)
    MIGRATIONS[2](c)
    c.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    c.execute("INSERT INTO schema_version VALUES (2)")
    c.execute("INSERT INTO snapshots (source, taken_at, status, rows_added) VALUES ('user:old', ?, 'complete', 2)",
              (dt.datetime.now(dt.timezone.utc).isoformat(),))
    for conf, price, cluster in (("user", 16.0, 1), ("primary", 20.0, None)):
        c.execute("INSERT INTO offers VALUES (1, 'oldcloud', ?, 'H100-SXM', 8, 'us', 'spot', ?, ?, NULL, NULL, "
                  "'infiniband', NULL, '2026-01-10', '', 'test', ?, ?, 400, 4)", (conf, price, price / 8, conf, cluster))
    c.execute("COMMIT")
    with pytest.raises(sqlite3.IntegrityError):  # the v2 CHECK refuses the new level
        c.execute("INSERT INTO offers VALUES (1, 'x', 'i', 'H100-SXM', 1, 'us', 'spot', 1, 1, NULL, NULL, NULL, NULL, "
                  "'2026-01-10', '', 'test', 'aggregated', NULL, NULL, NULL)")
    c.close()


def _version(path) -> int:
    c = sqlite3.connect(path)
    try:
        return c.execute("SELECT version FROM schema_version").fetchone()[0]
    finally:
        c.close()


def test_v2_store_migrates_in_place_keeping_rows(tmp_path):
    path = tmp_path / "v2.db"
    _v2_store(path)
    assert SCHEMA_VERSION >= 3
    with Store(path, seed=None) as s:
        assert s.conn.execute("SELECT version FROM schema_version").fetchone()[0] == SCHEMA_VERSION
        got = sorted(s.current_offers(), key=lambda o: o.price_per_hour_usd)
        assert [(o.confidence, o.price_per_hour_usd, o.cluster, o.fabric_gbps_per_node, o.max_nodes) for o in got] == [
            ("user", 16.0, True, 400.0, 4), ("primary", 20.0, None, 400.0, 4)]
        idx = {r[0] for r in s.conn.execute("SELECT name FROM sqlite_master WHERE type='index' AND tbl_name='offers'")}
        assert {"offers_by_snapshot", "offers_history"} <= idx
        assert not s.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'offers_v3'").fetchone()
        s.write_snapshot("gpuhunt:runpod", [offer("aggregated")])  # the new level is accepted now
        assert "aggregated" in {o.confidence for o in s.current_offers()}
        with pytest.raises(sqlite3.IntegrityError):  # and the CHECK still refuses nonsense
            s.conn.execute("INSERT INTO offers VALUES (1, 'x', 'i', 'H100-SXM', 1, 'us', 'spot', 1, 1, NULL, NULL, "
                           "NULL, NULL, '2026-01-10', '', 'test', 'bogus', NULL, NULL, NULL)")
        assert s.integrity_ok()
        fk = s.conn.execute("PRAGMA foreign_key_list(offers)").fetchall()
        assert fk and fk[0][2] == "snapshots"  # the rebuilt table still cascades from snapshots


def test_failed_migration_leaves_the_v2_store_intact(tmp_path, monkeypatch):
    import gpuplan.catalog.store as st

    path = tmp_path / "v2.db"
    _v2_store(path)
    before = sqlite3.connect(path).execute("SELECT * FROM offers ORDER BY rowid").fetchall()

    real = MIGRATIONS[3]

    def half_then_die(conn):
        real(conn)  # the real rebuild ran inside the transaction ...
        raise KeyboardInterrupt  # ... and the process is interrupted before COMMIT
    monkeypatch.setitem(st.MIGRATIONS, 3, half_then_die)
    with pytest.raises(KeyboardInterrupt):
        Store(path, seed=None)
    monkeypatch.undo()
    assert _version(path) == 2
    c = sqlite3.connect(path)
    assert c.execute("SELECT * FROM offers ORDER BY rowid").fetchall() == before
    assert not c.execute("SELECT 1 FROM sqlite_master WHERE name = 'offers_v3'").fetchone()
    c.close()
    with Store(path, seed=None) as s:  # the next open migrates cleanly
        assert len(s.current_offers()) == 2
    assert _version(path) == SCHEMA_VERSION


def test_read_only_v2_store_reads_without_migrating(tmp_path, monkeypatch):
    path = tmp_path / "v2.db"
    _v2_store(path)
    before = path.read_bytes()
    real = os.access

    def access(p, mode, *a, **kw):  # root ignores permission bits: report the folder unwritable
        if mode & os.W_OK and str(p).startswith(str(tmp_path)):
            return False
        return real(p, mode, *a, **kw)
    monkeypatch.setattr(os, "access", access)
    with Store(path) as s:
        assert s.readonly
        assert len(s.current_offers()) == 2
        with pytest.raises(UsageError, match="read-only"):
            s.write_snapshot("gpuhunt:x", [offer("aggregated")])
    assert _version(path) == 2 and path.read_bytes() == before


def test_fresh_store_accepts_every_level(tmp_path):
    with Store(tmp_path / "s.db", seed=None) as s:
        snap = s.write_snapshot("t", [offer(c, itype=c) for c in CONFIDENCE_RANK])
        assert {o.confidence for o in s.snapshot_offers(snap.id)} == set(CONFIDENCE_RANK)


# ---- filtering -----------------------------------------------------------------------------------

def _catalog():
    from gpuplan.catalog.bundled import load_bundled_providers
    from gpuplan.catalog.catalog import Catalog
    from gpuplan.catalog.gpus import all_gpus

    offers = [offer("primary", itype="p", price=3.0), offer("aggregated", itype="a", price=2.0),
              offer("third-party", itype="t", price=1.5), offer("unverified", itype="u", price=1.0)]
    return Catalog(all_gpus(), load_bundled_providers(), offers, origin="test")


def test_min_confidence_filters_offers():
    cat = _catalog()
    got = {lvl: sorted(o.instance_type for o in cat.offers(min_confidence=lvl)) for lvl in MIN_CONFIDENCE_LEVELS}
    assert got == {"primary": ["p"], "aggregated": ["a", "p"], "third-party": ["a", "p", "t"],
                   "unverified": ["a", "p", "t", "u"]}
    with pytest.raises(UsageError, match="aggregated"):
        cat.offers(min_confidence="sure")


def test_min_confidence_in_planner_constraints():
    from gpuplan.planner.candidates import filter_offers
    from gpuplan.planner.requests import Constraints

    cat = _catalog()
    kept = filter_offers(cat, Constraints(min_confidence="aggregated"))
    assert sorted(o.instance_type for o in kept.offers) == ["a", "p"]
    assert kept.rejected["price confidence below --min-confidence"] == 2
