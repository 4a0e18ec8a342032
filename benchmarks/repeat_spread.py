"""The repeat-measurement table benchmarks/validate_training.py and validate_serving.py print (see
gpuplan.perf.repeatability)."""
from __future__ import annotations


def print_spread(pairs: list[dict], what: str) -> None:
    from gpuplan.perf.repeatability import spread_table

    table = spread_table(pairs)
    print()
    if not table:
        print(f"Repeat measurements: no configuration of {what} appears in two sources.")
        return
    print(f"Repeat measurements: {len(pairs)} pairs of consecutive sources timing the same configuration of {what}; "
          "spread = |later / earlier - 1| (an estimator that cannot see the software release misses one of each pair "
          "by about half of it or more); change = median signed, later vs earlier")
    print(f"{'regime':18} {'pairs':>5} {'src':>4}  {'spread med':>10} {'spread p90':>10} {'change':>7}")
    for t in table:
        print(f"{t['regime']:18} {t['pairs']:>5} {t['sources']:>4}  {t['median_pct']:>9.1f}% {t['p90_pct']:>9.1f}% "
              f"{t['signed_median_pct']:>+6.1f}%")
