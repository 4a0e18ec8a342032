"""Store and refresh timings: refresh from a local HTTP server, reading the current offers,
and a history query over many snapshots.

    python benchmarks/bench_store.py [--listings 5000] [--days 30]

Serves a synthetic Vast answer (N listings built from the recorded fixture rows) and the
recorded payloads of every source from 127.0.0.1, so timings measure parsing, validation
and SQLite writes, not the internet.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "sources"))
from fake_server import FakeServer, json_reply, serve_all  # noqa: E402


def timed(fn, repeat: int = 3):
    runs = []
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        runs.append(time.perf_counter() - t0)
    return min(runs), statistics.median(runs), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--listings", type=int, default=5000)
    ap.add_argument("--days", type=int, default=30)
    a = ap.parse_args()

    server = FakeServer()
    os.environ.update(serve_all(server))
    os.environ["LAMBDA_API_KEY"] = "bench-key-0000"
    base_rows = [r for r in json.loads((ROOT / "tests/fixtures/sources/vast_bundles.json").read_text())["offers"]
                 if isinstance(r, dict) and r.get("gpu_name") in ("RTX 4090", "H100 SXM", "A100 SXM4")]
    listings = [dict(base_rows[i % len(base_rows)], id=i, machine_id=100000 + i,
                     dph_base=base_rows[i % len(base_rows)]["dph_base"] * (0.9 + 0.2 * (i % 17) / 16))
                for i in range(a.listings)]
    server.set("POST", "/api/v0/bundles/", json_reply({"offers": listings}))

    from gpuplan.catalog.store import Store, read_current_offers

    rows = []
    with tempfile.TemporaryDirectory() as d:
        db = Path(d) / "bench.db"
        t0 = time.perf_counter()
        Store(db).close()
        rows.append(("first open (schema + bundled seed)", time.perf_counter() - t0, None, ""))

        def refresh(names):
            with Store(db) as s:
                return s.refresh(names, force=True)

        best, med, out = timed(lambda: refresh(["vast"]))
        rows.append((f"refresh vast ({a.listings} listings -> {out[0].rows_added} offers)", best, med, out[0].status))
        names = ["runpod", "azure", "vultr", "lambda", "skypilot:lambda", "skypilot:gcp", "skypilot:vast", "gpuhunt:aws"]
        best, med, out = timed(lambda: refresh(names))
        rows.append((f"refresh 8 recorded sources ({sum(o.rows_added for o in out)} offers)", best, med,
                     ",".join(sorted({o.status for o in out}))))

        best, med, offers = timed(lambda: read_current_offers(db), repeat=5)
        rows.append((f"read_current_offers ({len(offers)} merged offers)", best, med, ""))

        # history: N daily snapshots of the big vast answer
        with Store(db) as s:
            snap_offers = s.snapshot_offers(s.latest_complete()["vast"])
            for day in range(a.days):
                s.write_snapshot("vast", snap_offers)
                s.conn.execute("UPDATE snapshots SET taken_at = ? WHERE id = (SELECT MAX(id) FROM snapshots)",
                               (f"2026-06-{1 + day % 28:02d}T00:{day // 28:02d}:00+00:00",))
            n_offers = s.counts()["offers"]
        with Store(db) as s:
            best, med, h = timed(lambda: s.history("RTX-4090"), repeat=5)
            rows.append((f"history RTX-4090, all providers ({n_offers} stored offers, {len(h)} points)", best, med, ""))
            best, med, h = timed(lambda: s.history("H100-SXM", provider="vast", pricing="community"), repeat=5)
            rows.append((f"history H100-SXM vast community ({len(h)} points)", best, med, ""))
        best, med, offers = timed(lambda: read_current_offers(db), repeat=5)
        rows.append((f"read_current_offers after {a.days} more snapshots ({len(offers)} offers)", best, med, ""))
        size_mb = sum(p.stat().st_size for p in Path(d).glob("bench.db*")) / 1e6
    server.close()

    print(f"{'measurement':<78} {'best s':>8} {'median s':>9}  status")
    for name, best, med, status in rows:
        print(f"{name:<78} {best:>8.3f} {('-' if med is None else f'{med:.3f}'):>9}  {status}")
    print(f"store size after the run: {size_mb:.1f} MB")


if __name__ == "__main__":
    main()
