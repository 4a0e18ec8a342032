"""The SQLite offer store: snapshots, merging, history, schema versions and bad files."""
from __future__ import annotations

import datetime as dt
import sqlite3

import pytest

from gpuplan.catalog.records import Offer
from gpuplan.catalog.store import (SCHEMA_VERSION, Store, merge_current, read_current_offers, resolve_db_path)
from gpuplan.errors import UsageError


def offer(provider="lambda", itype="gpu_1x_h100", gpu="H100-SXM", n=1.0, price=2.5, pricing="on_demand",
          region="us-east-1", as_of=dt.date(2026, 1, 10), confidence="primary", term=None) -> Offer:
    return Offer(provider=provider, instance_type=itype, gpu=gpu, gpus_per_node=n, region=region, pricing=pricing,
                 price_per_hour_usd=price, price_per_gpu_hour_usd=price / n, as_of=as_of, source="test",
                 confidence=confidence, commitment_term_h=term)


SEED = [offer(), offer(itype="gpu_8x_h100", n=8, price=23.92), offer(provider="vast", itype="1x", pricing="community",
                                                                     price=1.8)]


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "s.db", seed=lambda: SEED) as s:
        yield s


def test_resolve_db_path_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("GPUPLAN_DB", str(tmp_path / "env.db"))
    assert resolve_db_path(str(tmp_path / "arg.db")) == tmp_path / "arg.db"
    assert resolve_db_path(None) == tmp_path / "env.db"
    monkeypatch.delenv("GPUPLAN_DB")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert resolve_db_path(None) == tmp_path / "xdg" / "gpuplan" / "catalog.db"


def test_first_open_seeds_bundled_once(tmp_path):
    calls = []

    def seed():
        calls.append(1)
        return SEED
    with Store(tmp_path / "s.db", seed=seed) as s:
        assert s.latest_complete().keys() == {"bundled"}
        assert len(s.current_offers()) == 3
    with Store(tmp_path / "s.db", seed=seed) as s:
        assert s.counts()["complete"] == 1
    assert len(calls) == 1
    assert s.conn is None


def test_real_bundled_catalog_seeds(tmp_path):
    from gpuplan.catalog.bundled import load_bundled_offers

    got = read_current_offers(tmp_path / "none.db")
    assert got is None  # no file: the caller falls back to the bundled catalog
    with Store(tmp_path / "s.db") as s:
        current = s.current_offers()
    assert len(current) > 100
    assert {o.model_dump_json() for o in current} <= {o.model_dump_json() for o in load_bundled_offers()}
    assert read_current_offers(tmp_path / "s.db") == current


def test_round_trip_preserves_every_field(store):
    o = offer(term=8760.0, pricing="reserved", price=1.5)
    o = o.model_copy(update={"vcpus": 26.0, "ram_gb": 214.7, "interconnect": "infiniband", "as_of_note": "n"})
    snap = store.write_snapshot("user:x", [o])
    assert snap.status == "complete" and snap.rows_added == 1
    assert store.snapshot_offers(snap.id) == [o]


def test_newest_complete_snapshot_per_source_wins(store):
    store.write_snapshot("vast", [offer(provider="vast", itype="a", pricing="community", price=2.0, confidence="live")])
    store.write_snapshot("vast", [offer(provider="vast", itype="b", pricing="community", price=1.5, confidence="live")])
    vast = [o for o in store.current_offers() if o.source == "test" and o.confidence == "live"]
    assert [o.instance_type for o in vast] == ["b"]


def test_exception_mid_write_rolls_back(store):
    before = store.counts()

    def gen():
        yield offer(provider="vast", itype="a", pricing="community", confidence="live")
        raise RuntimeError("source died mid-stream")
    with pytest.raises(RuntimeError):
        store.write_snapshot("vast", gen())
    assert store.counts() == before
    assert "vast" not in store.latest_complete()


def test_non_offer_rows_rejected_whole(store):
    before = store.counts()
    with pytest.raises(TypeError):
        store.write_snapshot("vast", [offer(), {"provider": "half"}])
    assert store.counts() == before


def test_schema_checks_guard_bad_rows(store):
    with pytest.raises(sqlite3.IntegrityError):
        store.conn.execute("INSERT INTO offers (snapshot_id, provider, instance_type, gpu, gpus_per_node, region, "
                           "pricing, price_per_hour_usd, price_per_gpu_hour_usd, as_of, as_of_note, source, confidence) "
                           "VALUES (1, 'x', 'y', 'H100-SXM', 1, '', 'on_demand', 0, 0, '2026-01-01', '', 's', 'live')")


def test_merge_precedence_user_over_live_over_bundled():
    b = offer(price=2.0, as_of=dt.date(2025, 6, 1))
    live = offer(price=3.0, confidence="live", as_of=dt.date(2026, 2, 1))
    user = offer(price=1.0, confidence="user")
    merged = merge_current({"bundled": [b], "lambda": [live], "user:deal": [user]})
    assert [o.price_per_hour_usd for o in merged] == [1.0]
    merged = merge_current({"bundled": [b], "lambda": [live]})
    assert [o.price_per_hour_usd for o in merged] == [3.0]


def test_live_answer_supersedes_bundled_rows_of_same_gpu_and_pricing():
    old_region = offer(region="eu-west-1", price=2.0)  # not re-listed by the live API
    other_gpu = offer(itype="gpu_1x_a10", gpu="A10", price=0.75)
    spot = offer(pricing="spot", price=1.0)
    live = offer(price=3.99, confidence="live")
    merged = merge_current({"bundled": [old_region, other_gpu, spot], "lambda": [live]})
    keys = {(o.gpu, o.pricing, o.region, o.price_per_hour_usd) for o in merged}
    assert keys == {("H100-SXM", "on_demand", "us-east-1", 3.99), ("A10", "on_demand", "us-east-1", 0.75),
                    ("H100-SXM", "spot", "us-east-1", 1.0)}


def test_history_min_median_by_date_and_provider(store):
    d1, d2 = dt.date(2026, 3, 1), dt.date(2026, 4, 1)
    store.write_snapshot("lambda", [offer(price=3.0, as_of=d1, confidence="live"),
                                    offer(region="us-west-1", price=4.0, as_of=d1, confidence="live"),
                                    offer(region="us-south-1", price=5.0, as_of=d1, confidence="live")])
    store.write_snapshot("lambda", [offer(price=3.5, as_of=d2, confidence="live")])
    h = store.history("H100-SXM", provider="lambda")
    got = {(r["date"], r["pricing"]): (r["min_usd_per_gpu_h"], r["median_usd_per_gpu_h"], r["offers"]) for r in h}
    # the two refreshes ran on the same day: only the newest counts for that day
    assert got == {("2026-01-10", "on_demand"): (2.5, pytest.approx(2.745), 2), ("2026-04-01", "on_demand"): (3.5, 3.5, 1)}
    assert store.history("H100-SXM", pricing="spot") == []
    assert [r["provider"] for r in store.history("H100-SXM", pricing="community")] == ["vast"]
    assert {r["provider"] for r in store.history("H100-SXM")} == {"lambda", "vast"}


def test_history_across_days(store):
    for day, price in ((1, 3.0), (2, 2.8)):
        store.write_snapshot("lambda", [offer(price=price, as_of=dt.date(2026, 5, day), confidence="live")])
        store.conn.execute("UPDATE snapshots SET taken_at = ? WHERE id = (SELECT MAX(id) FROM snapshots)",
                           (f"2026-05-0{day}T00:00:00+00:00",))
    h = store.history("H100-SXM", provider="lambda")
    assert [(r["date"], r["median_usd_per_gpu_h"]) for r in h] == [("2026-01-10", pytest.approx(2.745)), ("2026-05-01", 3.0),
                                                                   ("2026-05-02", 2.8)]


def test_failed_refresh_recorded_and_status(store):
    store.write_snapshot("vast", [offer(provider="vast", itype="a", pricing="community", confidence="live")])
    store.record_failure("vast", "HTTP 500 from x")
    rows = {r["source"]: r for r in store.sources()}
    assert rows["vast"]["last_status"] == "failed" and rows["vast"]["offers"] == 1
    assert rows["vast"]["last_error"] == "HTTP 500 from x" and rows["vast"]["stale"] is False
    assert rows["bundled"]["stale"] is True  # newest as_of 2026-01-10 vs the 180-day limit... relative to today
    store.conn.execute("UPDATE snapshots SET taken_at = '2020-01-01T00:00:00+00:00' WHERE source = 'vast'")
    assert {r["source"]: r for r in store.sources()}["vast"]["stale"] is True


def test_newer_schema_refused(tmp_path):
    path = tmp_path / "s.db"
    Store(path, seed=None).close()
    c = sqlite3.connect(path)
    c.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    c.commit()
    c.close()
    with pytest.raises(UsageError, match="newer gpuplan"):
        Store(path, seed=None)


def test_migration_hook_runs_pending_steps(tmp_path, monkeypatch):
    import gpuplan.catalog.store as st

    path = tmp_path / "s.db"
    Store(path, seed=lambda: SEED).close()
    ran = []
    nxt = st.SCHEMA_VERSION + 1

    def m_next(conn):
        ran.append(nxt)
        conn.execute("ALTER TABLE offers ADD COLUMN zone TEXT")
    monkeypatch.setattr(st, "SCHEMA_VERSION", nxt)
    monkeypatch.setitem(st.MIGRATIONS, nxt, m_next)
    with Store(path, seed=lambda: SEED) as s:
        assert ran == [nxt]
        assert s.conn.execute("SELECT version FROM schema_version").fetchone()[0] == nxt
        assert len(s.current_offers()) == 3  # data survived the migration
    with Store(path, seed=lambda: SEED):
        assert ran == [nxt]  # not run twice


def test_not_a_store_file(tmp_path):
    bad = tmp_path / "s.db"
    bad.write_text("hello, not sqlite")
    with pytest.raises(UsageError, match="not a gpuplan catalog store"):
        Store(bad)
    with pytest.raises(UsageError, match="is a folder"):
        Store(tmp_path)


def test_cli_db_option_and_env(cli, tmp_path, monkeypatch):
    db = tmp_path / "a.db"
    code, out, err = cli("catalog", "status", "--db", str(db))
    assert code == 0 and "bundled" in out and db.exists()
    monkeypatch.setenv("GPUPLAN_DB", str(tmp_path / "b.db"))
    code, out, err = cli("catalog", "status", "--json")
    assert code == 0 and str(tmp_path / "b.db") in out


def test_cli_history(cli, tmp_path):
    db = str(tmp_path / "a.db")
    code, out, err = cli("catalog", "history", "--gpu", "h100", "--db", db)
    assert code == 0 and "H100-SXM price history" in out
    code, out, err = cli("catalog", "history", "--gpu", "h100", "--provider", "lambda", "--pricing", "on_demand",
                         "--json", "--db", db)
    import json
    data = json.loads(out)
    assert data["gpu"] == "H100-SXM" and data["points"]
    assert all(p["provider"] == "lambda" and p["min_usd_per_gpu_h"] <= p["median_usd_per_gpu_h"] for p in data["points"])
    code, out, err = cli("catalog", "history", "--gpu", "h100", "--provider", "lambdaa", "--db", db)
    assert code == 2 and "unknown provider 'lambdaa'" in err and "lambda" in err
    code, out, err = cli("catalog", "history", "--gpu", "H1000", "--db", db)
    assert code == 2 and "unknown GPU" in err
    code, out, err = cli("catalog", "history", "--gpu", "h100", "--pricing", "cheap", "--db", db)
    assert code == 2 and "unknown pricing" in err


def test_sparkline_shape():
    from gpuplan.cli.cmd_catalog import sparkline

    assert sparkline([1.0, 2.0, 3.0]) == "▁▄█"
    assert sparkline([2.0, 2.0]) == "▄▄"
