"""The store's admin side: read-only stores, old schemas, `catalog remove`, `catalog prune`, scrubbed notes."""
from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3

import pytest

from gpuplan.catalog.records import Offer
from gpuplan.catalog.store import (MIGRATIONS, SCHEMA_VERSION, Store, read_current_offers, scrub)
from gpuplan.errors import UnknownNameError, UsageError


def offer(provider="lambda", itype="gpu_1x_h100", price=2.5, region="us-east-1", **kw) -> Offer:
    return Offer(provider=provider, instance_type=itype, gpu="H100-SXM", gpus_per_node=1.0, region=region,
                 pricing="on_demand", price_per_hour_usd=price, price_per_gpu_hour_usd=price,
                 as_of=dt.date(2026, 1, 10), source="test", confidence="primary", **kw)


SEED = [offer(), offer(provider="vast", itype="1x", price=1.8)]


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "s.db"
    with Store(path, seed=lambda: SEED) as s:
        s.write_snapshot("user:mine", [offer(provider="mycluster", itype="8x", price=16.0)])
    return path


def unwritable(monkeypatch, folder):
    """Root ignores permission bits: make os.access report `folder` unwritable, as for a shared catalog."""
    real = os.access

    def access(path, mode, *a, **kw):
        if mode & os.W_OK and str(path).startswith(str(folder)):
            return False
        return real(path, mode, *a, **kw)
    monkeypatch.setattr(os, "access", access)


# ---- read-only ---------------------------------------------------------------------------------

def test_unwritable_store_opens_read_only_and_reads(db, monkeypatch):
    unwritable(monkeypatch, db.parent)
    before = db.read_bytes()
    with Store(db, seed=lambda: [offer(provider="new")]) as s:
        assert s.readonly and "not writable" in s.readonly_reason
        assert {o.provider for o in s.current_offers()} == {"lambda", "vast", "mycluster"}
        assert [r["source"] for r in s.sources()] == ["bundled", "user:mine"]  # no seeding, no migration
        for write in (lambda: s.write_snapshot("user:x", [offer()]), lambda: s.record_failure("vast", "x"),
                      lambda: s.remove_source("user:mine"), lambda: s.prune(1), lambda: s.refresh(["vast"])):
            with pytest.raises(UsageError, match="read-only"):
                write()
        with pytest.raises(sqlite3.OperationalError):  # and SQLite itself refuses: mode=ro + query_only
            s.conn.execute("DELETE FROM offers")
    assert db.read_bytes() == before
    assert read_current_offers(db) is not None


def test_writers_refuse_a_read_only_store_up_front(db, monkeypatch):
    unwritable(monkeypatch, db.parent)
    with pytest.raises(UsageError, match="read-only here .*this command writes it"):
        Store(db, readonly=False)


def test_forced_read_only(db):
    with Store(db, readonly=True) as s:
        assert s.readonly and len(s.current_offers()) == 3
        with pytest.raises(UsageError, match="read-only"):
            s.write_snapshot("user:y", [offer()])


def _v1_store(path):
    """A store as an older gpuplan (schema 1) left it: no cluster/fabric/max_nodes columns."""
    c = sqlite3.connect(path, isolation_level=None)
    MIGRATIONS[1](c)
    c.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    c.execute("INSERT INTO schema_version VALUES (1)")
    c.execute("INSERT INTO snapshots (source, taken_at, status, rows_added) VALUES ('user:old', ?, 'complete', 1)",
              (dt.datetime.now(dt.timezone.utc).isoformat(),))
    c.execute("INSERT INTO offers VALUES (1, 'oldcloud', 'i', 'H100-SXM', 8, 'us', 'spot', 16, 2, NULL, NULL, "
              "'infiniband', NULL, '2026-01-10', '', 'test', 'user')")
    c.close()


def test_older_schema_reads_read_only_with_new_columns_unknown(tmp_path, monkeypatch):
    path = tmp_path / "old.db"
    _v1_store(path)
    unwritable(monkeypatch, tmp_path)
    with Store(path) as s:
        assert s.readonly
        (o,) = s.current_offers()
    assert o.provider == "oldcloud" and o.interconnect == "infiniband"
    assert o.cluster is None and o.fabric_gbps_per_node is None and o.max_nodes is None
    c = sqlite3.connect(path)
    assert c.execute("SELECT version FROM schema_version").fetchone()[0] == 1  # not migrated
    c.close()
    monkeypatch.undo()
    with Store(path, seed=None) as s:  # with write access it migrates as before
        assert s.conn.execute("SELECT version FROM schema_version").fetchone()[0] == SCHEMA_VERSION


def test_read_only_empty_or_newer_store_is_one_line(tmp_path, monkeypatch):
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).execute("CREATE TABLE t (x)").connection.close()
    newer = tmp_path / "newer.db"
    Store(newer, seed=None).close()
    c = sqlite3.connect(newer)
    c.execute("UPDATE schema_version SET version = 99")
    c.commit()
    c.close()
    unwritable(monkeypatch, tmp_path)
    with pytest.raises(UsageError, match="holds no catalog yet"):
        Store(empty)
    with pytest.raises(UsageError, match="newer gpuplan"):
        Store(newer)


@pytest.mark.parametrize("kind,needle", [("fifo", "not a regular file"), ("loop", "symlink loop"),
                                         ("dangling", "broken symlink")])
def test_store_paths_that_are_not_files(tmp_path, kind, needle):
    path = tmp_path / "s.db"
    if kind == "fifo":
        os.mkfifo(path)  # never opened: no hang
    elif kind == "loop":
        (tmp_path / "t.db").symlink_to(path)
        path.symlink_to(tmp_path / "t.db")
    else:
        path.symlink_to(tmp_path / "missing" / "s.db")
    with pytest.raises(UsageError, match=needle):
        Store(path)
    if kind != "fifo":
        with pytest.raises(UsageError, match=needle):  # not silently "no store, use the bundled catalog"
            read_current_offers(path)


# ---- remove and prune ---------------------------------------------------------------------------

def test_remove_source_by_import_name(db):
    with Store(db, seed=None) as s:
        s.record_failure("user:mine", "late failure")
        assert s.resolve_source("mine") == s.resolve_source("user:mine") == "user:mine"
        assert s.remove_source("user:mine") == {"snapshots": 2, "offers": 1}
        assert set(s.latest_complete()) == {"bundled"}
        assert s.conn.execute("SELECT COUNT(*) FROM offers").fetchone()[0] == 2
        with pytest.raises(UnknownNameError, match="unknown source 'mine'"):
            s.resolve_source("mine")
        with pytest.raises(UsageError, match="cannot be removed"):
            s.remove_source("bundled")
        assert s.integrity_ok()


def test_prune_keeps_the_newest_snapshots_and_shrinks_the_file(tmp_path):
    path = tmp_path / "s.db"
    big = [offer(provider="p", itype=f"i{i}", region=f"r{i}" * 20) for i in range(3000)]
    with Store(path, seed=lambda: SEED) as s:
        for _ in range(4):
            s.write_snapshot("user:big", big)
        s.record_failure("user:big", "old failure")  # newer than every complete one: kept
        s.record_failure("vast", "never worked 1")
        s.record_failure("vast", "never worked 2")
        newest = s.latest_complete()["user:big"]
        size_before = s.size_bytes()
        out = s.prune(keep=2)
        assert out["snapshots"] == 2 + 1 and out["offers"] == 6000
        assert out["bytes_after"] < out["bytes_before"] == size_before
        rows = s.conn.execute("SELECT source, status FROM snapshots ORDER BY id").fetchall()
        assert rows == [("bundled", "complete"), ("user:big", "complete"), ("user:big", "complete"),
                        ("user:big", "failed"), ("vast", "failed")]
        assert s.latest_complete()["user:big"] == newest and len(s.current_offers()) == 3002
        assert {r["source"]: r["last_error"] for r in s.sources()}["vast"] == "never worked 2"
        with pytest.raises(UsageError, match="at least 1"):
            s.prune(keep=0)
        assert s.integrity_ok()


def test_cli_remove_and_prune(cli, db):
    code, out, err = cli("catalog", "remove", "mine", "--db", str(db), "--json")
    assert code == 0, err
    assert json.loads(out) == {"source": "user:mine", "removed_snapshots": 1, "removed_offers": 1}
    code, out, err = cli("catalog", "remove", "mine", "--db", str(db))
    assert code == 2 and err.startswith("error: unknown source 'mine'")
    code, out, err = cli("catalog", "prune", "--db", str(db))
    assert code == 0 and "pruned 0 snapshot(s)" in out and "MiB" in out, err
    code, out, err = cli("catalog", "prune", "--keep", "0", "--db", str(db))
    assert code == 2 and "--keep" in err


# ---- secrets in notes -----------------------------------------------------------------------------

def test_url_credentials_are_scrubbed_before_storing_and_printing(db):
    assert scrub("cannot reach scott:TIGERPASS@127.0.0.1:9/bundles/") == "cannot reach scott:***@127.0.0.1:9/bundles/"
    assert scrub("GET https://tok3n@api.example.com/x failed") == "GET https://***@api.example.com/x failed"
    assert scrub("HTTP 500 from api.example.com/v1") == "HTTP 500 from api.example.com/v1"
    with Store(db, seed=None) as s:
        s.record_failure("vast", "cannot reach http://u:TIGERPASS@h/x")
        s.write_snapshot("user:n", [offer()], note="from https://a:TIGERPASS@h/")
        s.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        notes = [r["last_error"] for r in s.sources()]
    assert not [n for n in notes if "TIGERPASS" in n]
    assert b"TIGERPASS" not in db.read_bytes()
