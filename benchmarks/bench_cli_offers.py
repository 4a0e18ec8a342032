#!/usr/bin/env python3
"""Time `gpuplan offers --gpu H100` end to end (process start to exit), as a user runs it.

    python benchmarks/bench_cli_offers.py [--runs 15]

Target (issue #2): under 0.5 s on a 2-core machine. Prints min / median / p90 wall seconds.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    exe = shutil.which("gpuplan")
    cmd = [exe] if exe else [sys.executable, "-m", "gpuplan.cli.main"]
    with tempfile.TemporaryDirectory() as home:  # no user store: the bundled catalog
        env = dict(os.environ, XDG_DATA_HOME=home, GPUPLAN_DB=os.path.join(home, "none.db"))
        for label, extra in [("offers --gpu H100", []), ("offers --gpu H100 --json", ["--json"])]:
            times = []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                r = subprocess.run(cmd + ["offers", "--gpu", "H100", *extra], capture_output=True, env=env)
                times.append(time.perf_counter() - t0)
                if r.returncode != 0:
                    raise SystemExit(r.stderr.decode())
            times.sort()
            p90 = times[min(len(times) - 1, int(0.9 * len(times)))]
            print(f"gpuplan {label:<28} runs={args.runs}  min={times[0]:.3f}s  median={statistics.median(times):.3f}s  p90={p90:.3f}s")


if __name__ == "__main__":
    main()
