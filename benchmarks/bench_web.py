#!/usr/bin/env python3
"""Load the web API: many concurrent POST /api/plan/train over loopback against `gpuplan web`.

    python benchmarks/bench_web.py [--requests 200] [--timeout 180] [--workers N] [--runs varied,cold]

Starts `gpuplan web` on 127.0.0.1 on a free port (bundled catalog, no user store), waits for
/api/health, then fires all requests at once (httpx.AsyncClient + asyncio.gather) three ways:

  varied          every request a different token count: the plan LRU cannot answer any
  identical       the same request N times, cold: all arrive before the first is planned
  identical-warm  the same request again, now in the plan LRU
  cold            every request a different plan with a cold layout search: llama-3.1-8b or -70b,
                  each with its own global batch (the 2026-11 review's train-varied-cold)

and prints requests, errors (must be 0), p50 / p95 / max latency in ms, wall seconds and
requests/s for each. Loopback only, a fixed number of requests, a per-request and a total
timeout; the server is stopped at the end, whatever happens.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import httpx

HOST = "127.0.0.1"
BASE = {"model": "llama-3.1-8b", "tokens": 1e10, "limit": 5}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def start_server(port: int, home: str, workers: int | None = None, db: str | None = None) -> subprocess.Popen:
    exe = shutil.which("gpuplan")
    cmd = [exe] if exe else [sys.executable, "-m", "gpuplan.cli.main"]
    env = dict(os.environ, XDG_DATA_HOME=home, XDG_CONFIG_HOME=home, XDG_CACHE_HOME=home,
               GPUPLAN_DB=db or os.path.join(home, "none.db"))
    extra = ["--workers", str(workers)] if workers else []
    return subprocess.Popen(cmd + ["web", "--host", HOST, "--port", str(port), *extra], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def bodies_for(label: str, n: int) -> list[dict]:
    """The request bodies of one run (see the module docstring)."""
    if label == "varied":
        return [{**BASE, "tokens": BASE["tokens"] * (1 + i / 1000)} for i in range(n)]
    if label in ("identical", "identical-warm"):
        return [{**BASE, "tokens": 2e10}] * n
    if label == "cold":
        return [{"model": ("llama-3.1-8b", "llama-3.1-70b")[i % 2], "tokens": 1e11, "limit": 5,
                 "global_batch": 256 + 8 * (i // 2)} for i in range(n)]
    raise SystemExit(f"unknown run {label!r}; use varied, identical, identical-warm, cold")


def wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"gpuplan web exited with {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")
        try:
            r = httpx.get(url + "/api/health", timeout=2.0)
            if r.status_code == 200:
                return r.json()
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"gpuplan web did not answer /api/health within {timeout:.0f} s")


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


async def fire(url: str, bodies: list[dict], timeout: float) -> tuple[list[float], list[str], float]:
    """Send every body at once; latencies (s) of the successes, error strings, and wall seconds."""
    limits = httpx.Limits(max_connections=len(bodies), max_keepalive_connections=len(bodies))
    async with httpx.AsyncClient(base_url=url, timeout=timeout, limits=limits) as client:

        async def one(body: dict) -> tuple[float | None, str | None]:
            t0 = time.perf_counter()
            try:
                r = await client.post("/api/plan/train", json=body)
            except httpx.HTTPError as e:
                return None, f"{type(e).__name__}: {e}"
            dt = time.perf_counter() - t0
            if r.status_code != 200:
                return None, f"HTTP {r.status_code}: {r.text[:200]}"
            if not r.json().get("plans"):
                return None, "no plans in the answer"
            return dt, None

        t0 = time.perf_counter()
        results = await asyncio.gather(*(one(b) for b in bodies))
        wall = time.perf_counter() - t0
    latencies = [dt for dt, err in results if err is None]
    errors = [err for _, err in results if err is not None]
    return latencies, errors, wall


def _pct(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, max(0, round(q * len(sorted_values)) - 1))]


def summary(n: int, latencies: list[float], errors: list[str], wall: float) -> dict:
    lat = sorted(x * 1000 for x in latencies)
    return {"requests": n, "errors": len(errors), "p50_ms": _pct(lat, 0.50), "p95_ms": _pct(lat, 0.95),
            "max_ms": lat[-1] if lat else float("nan"), "wall_s": wall, "rps": n / wall}


def report(label: str, n: int, latencies: list[float], errors: list[str], wall: float) -> dict:
    s = summary(n, latencies, errors, wall)
    print(f"{label:<15} requests={n}  errors={s['errors']}  p50={s['p50_ms']:.0f}ms  p95={s['p95_ms']:.0f}ms  "
          f"max={s['max_ms']:.0f}ms  wall={wall:.2f}s  rps={s['rps']:.1f}")
    for err in errors[:3]:
        print(f"    error: {err}")
    return s


def run_load(labels: list[str], n: int, timeout: float, workers: int | None = None, db: str | None = None,
             quiet: bool = False) -> dict[str, dict]:
    """Start a server, fire each run of `labels` at it, stop it: {label: summary}."""
    port = _free_port()
    url = f"http://{HOST}:{port}"
    out: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as home:
        proc = start_server(port, home, workers, db)
        try:
            t0 = time.perf_counter()
            health = wait_healthy(url, proc, timeout=120.0)
            if not quiet:
                print(f"gpuplan web on {url}: up in {time.perf_counter() - t0:.2f}s, {health['offers']} offers "
                      f"({health['catalog']}), --workers {workers or 'default'}; {os.cpu_count()} CPUs")
            for label in labels:
                latencies, errors, wall = asyncio.run(
                    asyncio.wait_for(fire(url, bodies_for(label, n), timeout), timeout=timeout + 30))
                out[label] = summary(n, latencies, errors, wall) if quiet else report(label, n, latencies, errors,
                                                                                     wall)
        finally:
            stop_server(proc)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds per request, and per run")
    ap.add_argument("--workers", type=int, help="gpuplan web --workers (default: the server's default, the cores)")
    ap.add_argument("--runs", default="varied,identical,identical-warm", help="comma-separated: varied, identical, "
                    "identical-warm, cold")
    args = ap.parse_args()
    if not 1 <= args.requests <= 2000:
        raise SystemExit("--requests must be in 1..2000")
    out = run_load([r for r in args.runs.split(",") if r], args.requests, args.timeout, args.workers)
    if any(s["errors"] for s in out.values()):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
