"""Two processes write the store at once, and one is killed (SIGKILL) while its transaction
is open: the store still opens, passes integrity_check and serves the newest complete data."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "sources"))
from fake_server import FakeServer, Reply, fixture_bytes, serve_all  # noqa: E402

pytestmark = pytest.mark.skipif(os.name != "posix", reason="needs POSIX signals")

WRITER = r"""
import datetime as dt, sys, time
from gpuplan.catalog.records import Offer
from gpuplan.catalog.store import Store

def rows():
    for i in range(1200):
        if i == 700:
            print("IN_TX", flush=True)   # transaction open, 700 rows written, not committed
            time.sleep(60)
        yield Offer(provider="vast", instance_type=f"half-{i}", gpu="RTX-4090", gpus_per_node=1, region="x",
                    pricing="community", price_per_hour_usd=0.3, price_per_gpu_hour_usd=0.3,
                    as_of=dt.date(2026, 1, 1), source="killed writer", confidence="live")

with Store(sys.argv[1], seed=None) as s:
    s.write_snapshot("vast", rows())
"""


def _env(extra: dict) -> dict:
    env = dict(os.environ)
    env.update(extra)
    env["GPUPLAN_HTTP_RETRIES"] = "0"
    env["NO_PROXY"] = "127.0.0.1,localhost"
    return env


def _wait_for(pred, timeout_s=20.0, what="condition"):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def server():
    s = FakeServer()
    yield s
    s.close()


def _gpuplan_cmd() -> list[str]:
    exe = shutil.which("gpuplan")
    return [exe] if exe else [sys.executable, "-m", "gpuplan.cli.main"]


def test_kill_mid_write_while_another_refresh_waits(tmp_path, server):
    from gpuplan.catalog.store import Store

    urls = serve_all(server)
    env = _env(urls)
    db = str(tmp_path / "store.db")
    # previous good data for 'vast'
    r = subprocess.run([*_gpuplan_cmd(), "catalog", "refresh", "--source", "vast", "--db", db], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    with Store(db, seed=None) as s:
        first_id = s.latest_complete()["vast"]
        n_before = s.counts()["offers"]

    writer = subprocess.Popen([sys.executable, "-c", WRITER, db], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "IN_TX"
        # a second refresh from a slow source: it fetches, then waits on the writer's lock
        server.set("POST", "/api/v0/bundles/", Reply(200, fixture_bytes("vast_bundles.json"), delay_s=0.2))
        n_req = len(server.requests)
        other = subprocess.Popen([*_gpuplan_cmd(), "catalog", "refresh", "--source", "vast", "--db", db], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _wait_for(lambda: len(server.requests) > n_req, what="second refresh to fetch")
        time.sleep(0.6)  # it has its answer and is now blocked on the write lock
        assert other.poll() is None, "second refresh should be waiting for the lock"
        # meanwhile readers still see the previous complete snapshot
        with Store(db, seed=None) as s:
            assert s.latest_complete()["vast"] == first_id
            assert not any(o.instance_type.startswith("half-") for o in s.current_offers())
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=10)
        out, err = other.communicate(timeout=60)
        assert other.returncode == 0, err
    finally:
        if writer.poll() is None:
            writer.kill()
        writer.wait(timeout=10)
        writer.stdout.close()

    with Store(db, seed=None) as s:
        assert s.integrity_ok()
        counts = s.counts()
        assert counts["pending"] == 0
        latest = s.latest_complete()["vast"]
        assert latest > first_id
        offers = s.snapshot_offers(latest)
        assert len(offers) == 11
        assert counts["offers"] == n_before + 11  # nothing of the killed writer's 700 rows
        assert not s.conn.execute("SELECT 1 FROM offers WHERE instance_type LIKE 'half-%'").fetchone()


def test_kill_alone_leaves_previous_data(tmp_path):
    from gpuplan.catalog.store import Store

    db = str(tmp_path / "store.db")
    with Store(db) as s:
        before = s.current_offers()
        counts = s.counts()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, db], stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline().strip() == "IN_TX"
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=10)
    writer.stdout.close()
    with Store(db) as s:
        assert s.integrity_ok()
        assert s.counts() == counts
        assert s.current_offers() == before


def test_two_refreshes_at_once_both_commit(tmp_path, server):
    from gpuplan.catalog.store import Store

    urls = serve_all(server)
    server.set("POST", "/api/v0/bundles/", Reply(200, fixture_bytes("vast_bundles.json"), delay_s=0.1))
    env = _env(urls)
    db = str(tmp_path / "store.db")
    Store(db).close()
    cmd = [sys.executable, "-m", "gpuplan.cli.main", "catalog", "refresh", "--db", db]
    procs = [subprocess.Popen([*cmd, "--source", src], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for src in ("vast", "runpod")]
    for p in procs:
        _out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
    with Store(db) as s:
        assert s.integrity_ok()
        assert {"bundled", "vast", "runpod"} <= set(s.latest_complete())
