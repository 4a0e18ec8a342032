"""How far one configuration's published measurement moves between sources: a floor under any estimator's error.

A vendor republishes the same benchmark configuration (model, GPUs, precision, layout, batch) with every software
release; two benchmark logs sometimes time the same serving run. Where a configuration appears in two or more
sources, consecutive measurements by publication date are paired and the pair's spread is |log(later / earlier)|.
An estimator that sees only the configuration, not the software release, cannot be closer to both measurements than
half that spread, so the spread per regime says how much of the validation error is software drift rather than
missing physics. Used by benchmarks/validate_training.py and benchmarks/validate_serving.py.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np


def fields_key(fields: tuple[str, ...]) -> Callable[[dict], tuple]:
    """A configuration key from a row's stated fields (blank and missing read alike)."""
    return lambda r: tuple((r.get(k) or "").strip() for k in fields)


def repeat_pairs(rows: Iterable[dict], key: Callable[[dict], tuple], value: Callable[[dict], float | None],
                 regime: Callable[[dict], str]) -> list[dict]:
    """Consecutive measurements (by `source_date`) of one configuration `key` from different `source_id`s:
    {regime, key, earlier, later, source ids, log_ratio = log(later / earlier)}. Rows whose value is missing or not
    positive are left out; two rows of one source never pair (one table's repeats are not software drift)."""
    by: dict[tuple, list[tuple[dict, float]]] = {}
    for r in rows:
        x = value(r)
        if x is None or not math.isfinite(x) or x <= 0:
            continue
        by.setdefault(key(r), []).append((r, x))
    out = []
    for k, group in by.items():
        group.sort(key=lambda rx: (rx[0].get("source_date") or "", rx[0].get("source_id") or ""))
        for (a, xa), (b, xb) in zip(group, group[1:]):
            if a.get("source_id") == b.get("source_id"):
                continue
            out.append({"regime": regime(a), "key": k, "earlier": xa, "later": xb,
                        "earlier_source": a.get("source_id", ""), "later_source": b.get("source_id", ""),
                        "log_ratio": math.log(xb / xa)})
    return out


def spread_table(pairs: list[dict]) -> list[dict]:
    """Per regime, then "all": pairs, sources, median and p90 of the absolute spread and the median signed change,
    as percentages (exp(|log ratio|) - 1: 40% means one measurement is 1.4x the other)."""
    out = []
    for g in sorted({p["regime"] for p in pairs}) + ["all"]:
        sel = [p for p in pairs if g == "all" or p["regime"] == g]
        if not sel:
            continue
        lr = np.array([p["log_ratio"] for p in sel], float)
        a = np.abs(lr)
        out.append({"regime": g, "pairs": len(sel),
                    "sources": len({s for p in sel for s in (p["earlier_source"], p["later_source"])}),
                    "median_pct": 100 * math.expm1(float(np.median(a))),
                    "p90_pct": 100 * math.expm1(float(np.percentile(a, 90))),
                    "signed_median_pct": 100 * math.expm1(float(np.median(lr)))})
    return out
