"""How `offers`, `plan train` and `plan serve` scale with the number of offers in the store (issue 15).

Builds stores of 1k, 10k, 100k (and, with --sizes, 1M) offers: the bundled offers replicated with a
region suffix and the price jittered x U(0.85, 1.15), written with `Store.write_snapshot` into
temporary SQLite files. Then times each command as a subprocess with `--db` (median of --repeat runs)
and reports the peak RSS of the children (resource.getrusage). --profile SIZE runs `plan train` at
that size under cProfile in process and prints the top functions.

--web W1,W2 also loads `gpuplan web --workers W` (fresh server, bundled catalog) with --web-requests
different concurrent plans (POST /api/plan/train, a different token count each: the 2026-11
review's burst) and reports p50 / p95 latency and throughput per worker count (benchmarks/bench_web.py).

The store keeps its merged current offers between reads (gpuplan.catalog.row_cache): the timed
runs read that cache; the last column is the first `plan train` after the snapshots change (cache
dropped first), which merges the snapshots and saves the cache.

Every figure is printed with the machine's 1-minute load average when it was taken (`uptime`):
on a shared machine, compare CPU seconds, and wall times only at similar load.

    python benchmarks/bench_scale.py                      # 1k, 10k, 100k
    python benchmarks/bench_scale.py --sizes 1000,1000000 --repeat 1
    python benchmarks/bench_scale.py --sizes 100000 --profile 100000 --keep /tmp/scale
    python benchmarks/bench_scale.py --sizes "" --web 1,2  # the web app only
"""
from __future__ import annotations

import argparse
import os
import pathlib
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

COMMANDS = {
    "offers --gpu H100 --limit 20": ["offers", "--gpu", "H100", "--limit", "20"],
    "plan train 8B --json": ["plan", "train", "--model", "llama-3.1-8b", "--tokens", "1e12", "--json"],
    "plan serve 8B 5 rps --json": ["plan", "serve", "--model", "llama-3.1-8b", "--requests-per-s", "5", "--json"],
}


def synthetic_offers(n: int, seed: int = 0):
    """n offers: the bundled ones first, then copies with a region suffix and a jittered price."""
    from gpuplan.catalog.bundled import load_bundled_offers

    base = list(load_bundled_offers())
    rng = random.Random(seed)
    for o in base[:n]:
        yield o
    copy = 0
    made = len(base)
    while made < n:
        copy += 1
        for o in base:
            if made >= n:
                return
            f = rng.uniform(0.85, 1.15)
            price = o.price_per_hour_usd * f
            yield o.model_copy(update={
                "region": f"{o.region or 'any'}-syn{copy}", "price_per_hour_usd": price,
                "price_per_gpu_hour_usd": price / o.gpus_per_node, "source": "synthetic", "as_of_note": ""})
            made += 1


def build_store(path: pathlib.Path, n: int) -> float:
    from gpuplan.catalog.store import Store

    t = time.perf_counter()
    with Store(path) as s:  # seeded with the bundled snapshot on creation
        if n > 730:
            from gpuplan.catalog.bundled import load_bundled_offers

            skip = len(load_bundled_offers())
            gen = synthetic_offers(n)
            for _ in range(skip):
                next(gen)
            s.write_snapshot("synthetic", gen)
    return time.perf_counter() - t


TRAIN = "plan train 8B --json"


def _drop_current_cache(db: pathlib.Path) -> None:
    """Forget the store's merged rows, as adding or removing a snapshot does."""
    import sqlite3

    c = sqlite3.connect(db)
    try:
        if c.execute("SELECT 1 FROM sqlite_master WHERE name = 'current_cache'").fetchone():
            c.execute("DELETE FROM current_cache")
            c.commit()
    finally:
        c.close()


def load_avg() -> float:
    """The 1-minute load average (what `uptime` shows first)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def run_once(args: list[str], db: pathlib.Path) -> tuple[float, float, float]:
    """(wall s, peak RSS MB, CPU s (user + system) of this child)."""
    import resource

    env = dict(os.environ)  # as a user runs it: the entry point sets the BLAS thread defaults itself
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "gpuplan.cli.main", *args, "--db", str(db)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({p.returncode}): {p.stderr.decode()[-2000:]}")
    # ru_maxrss of children is the largest of any child so far: run each command in a fresh helper.
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, ru.ru_maxrss / 1024, ru.ru_utime + ru.ru_stime


def measure(args: list[str], db: pathlib.Path, repeat: int) -> tuple[float, float, float]:
    """Median wall s, peak RSS MB and median CPU s, each run in a fresh Python so RUSAGE_CHILDREN is
    per command. On a shared machine CPU time is the steadier figure."""
    code = ("import sys, json, pathlib; sys.path.insert(0, %r); import bench_scale as b; "
            "print(json.dumps(b.run_once(json.loads(sys.argv[1]), pathlib.Path(sys.argv[2]))))"
            % str(pathlib.Path(__file__).parent))
    import json

    walls, rss, cpus = [], [], []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", code, json.dumps(args), str(db)],
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(out.stderr[-2000:])
        w, m, c = json.loads(out.stdout.strip().splitlines()[-1])
        walls.append(w)
        rss.append(m)
        cpus.append(c)
    return statistics.median(walls), max(rss), statistics.median(cpus)


def profile(db: pathlib.Path, top: int = 30) -> None:
    import cProfile
    import pstats

    from gpuplan.catalog.catalog import Catalog
    from gpuplan.planner.requests import TrainPlanRequest
    from gpuplan.planner.train_plan import plan_training

    pr = cProfile.Profile()
    pr.enable()
    cat = Catalog.load(str(db))
    plan_training(TrainPlanRequest(model="llama-3.1-8b", tokens=1e12), cat)
    pr.disable()
    pstats.Stats(pr).sort_stats("cumulative").print_stats(top)
    pstats.Stats(pr).sort_stats("tottime").print_stats(top)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", help="folder for the stores (reused when present); default a temp folder")
    ap.add_argument("--profile", type=int, help="profile plan train at this size")
    ap.add_argument("--commands", default=",".join(str(i) for i in range(len(COMMANDS))),
                    help="indices of the commands to time (0 offers, 1 train, 2 serve); empty: only build")
    ap.add_argument("--web", default="", help="comma-separated worker counts to load the web app with, e.g. 1,2")
    ap.add_argument("--web-requests", type=int, default=200)
    ap.add_argument("--web-run", default="varied", help="bench_web.py run: varied (default), cold, identical")
    a = ap.parse_args()
    sizes = [int(float(s)) for s in a.sizes.split(",") if s]
    folder = pathlib.Path(a.keep) if a.keep else pathlib.Path(tempfile.mkdtemp(prefix="gpuplan-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    chosen = [list(COMMANDS)[int(i)] for i in a.commands.split(",") if i]
    try:
        rows = []
        for n in sizes:
            db = folder / f"s{n}.db"
            if not db.exists():
                built = build_store(db, n)
                print(f"built {db} ({n:,} offers) in {built:.1f} s, {db.stat().st_size / 1e6:.1f} MB", file=sys.stderr)
            first = None
            if TRAIN in chosen:  # the first plan after the snapshots change merges them and saves the result
                _drop_current_cache(db)
                load = load_avg()
                w, m, c = measure(COMMANDS[TRAIN], db, 1)
                first = (w, m, c, max(load, load_avg()))
                print(f"  {n:>9,} first {TRAIN} after a change: {w:.2f} s wall, {c:.2f} s CPU, {m:.0f} MB",
                      file=sys.stderr)
            cells = []
            for name in chosen:
                load = load_avg()
                w, m, c = measure(COMMANDS[name], db, a.repeat)
                cells.append((w, m, c, max(load, load_avg())))
                print(f"  {n:>9,} {name}: {w:.2f} s wall, {c:.2f} s CPU, {m:.0f} MB (load {cells[-1][3]:.1f})",
                      file=sys.stderr)
            rows.append((n, cells, first))
            if a.profile == n:
                profile(db)
        if rows and chosen:
            cold = TRAIN in chosen
            head = ("| offers | " + " | ".join(f"{c}: CPU s / wall s / peak MB (load)" for c in chosen)
                    + (" | first plan train after a catalog change |" if cold else " |"))
            print(head)
            print("|" + "---|" * (len(chosen) + 1 + cold))
            for n, cells, first in rows:
                print(f"| {n:,} | " + " | ".join(f"{c:.2f} / {w:.2f} / {m:.0f} ({ld:.1f})"
                                                 for w, m, c, ld in cells + ([first] if cold else [])) + " |")
        if a.web:
            sys.path.insert(0, str(pathlib.Path(__file__).parent))
            import bench_web

            print(f"\n| gpuplan web --workers | {a.web_requests} concurrent {a.web_run} plans: p50 s | p95 s | "
                  "plans/s | errors | load |")
            print("|---|---|---|---|---|---|")
            for w in [int(x) for x in a.web.split(",") if x]:
                load = load_avg()
                s = bench_web.run_load([a.web_run], a.web_requests, 300.0, workers=w, quiet=True)[a.web_run]
                print(f"| {w} | {s['p50_ms'] / 1000:.1f} | {s['p95_ms'] / 1000:.1f} | {s['rps']:.1f} | {s['errors']} | "
                      f"{max(load, load_avg()):.1f} |", flush=True)
    finally:
        if not a.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
