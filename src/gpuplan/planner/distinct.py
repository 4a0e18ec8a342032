"""Distinct choices: offers that differ only by region, or by a few percent at the same provider,
GPU, node size and pricing, are one choice on screen that says where else it is available."""
from __future__ import annotations

import itertools
import math

SAME_CHOICE_COST_TOLERANCE = 0.03  # within 3%: the same choice for a buyer


def collapse_rows(order, keys, costs, wheres, tolerance: float | None = None, limit: int | None = None
                  ) -> tuple[list[int], dict[int, list[str]]]:
    """Keep the first (best-ranked) row of each choice; the rest within `tolerance` of its cost
    become 'also at' entries on it. Returns (kept indices in order, {kept: [also at ...]}).
    Keys, costs and 'where' labels are per row, precomputed (a 100k-offer catalog repeats one
    choice in thousands of regions, so nothing here is quadratic in them): a row is matched against
    the earliest kept row of its key within tolerance, looked up among the kept rows whose cost lies
    in the same few log-spaced buckets (positive costs), or all of the key's kept rows otherwise.

    `limit`: only the first `limit` kept rows are wanted (a plan shows that many). Once they are
    found, a later row can only add an 'also at' to one of them (kept rows are matched earliest
    first), so rows of other keys are skipped, and `wheres` is read only for rows that match."""
    tol = SAME_CHOICE_COST_TOLERANCE if tolerance is None else tolerance
    width = math.log1p(tol) if 0 < tol < 1 else 0.0
    kept: list[int] = []
    rank: dict[int, int] = {}  # kept row -> its place in `kept`
    also: dict[int, list[str]] = {}
    listed: dict[int, set[str]] = {}
    first_of: dict[tuple, list[int]] = {}  # every kept row of a key
    bucketed: dict[tuple, dict[int, list[int]]] = {}  # key -> bucket -> kept rows with a positive cost
    unbucketed: dict[tuple, list[int]] = {}  # key -> kept rows with a cost <= 0
    log = math.log
    order = iter(order)
    for j in order:
        if limit is not None and len(kept) >= limit:
            _attach_rest(itertools.chain((j,), order), keys, costs, wheres, tol, first_of, also, listed)
            break
        k = keys[j]
        cj = costs[j]
        match = None
        firsts = first_of.get(k)
        if firsts is not None:
            if width and cj > 0:
                # one bucket more on each side: a cost exactly at the tolerance survives rounding
                lo, hi = int(log(cj / (1 + tol)) // width) - 1, int(log(cj / (1 - tol)) // width) + 1
                buckets = bucketed[k]
                candidates = [i for b in range(lo, hi + 1) for i in buckets.get(b, ())]
                candidates += unbucketed.get(k, ())
            else:
                candidates = firsts
            for i in candidates:
                ci = costs[i]
                if abs(cj - ci) <= tol * max(abs(ci), 1e-9) and (match is None or rank[i] < rank[match]):
                    match = i
        if match is not None:
            _attach(j, match, wheres, also, listed)
            continue
        if firsts is None:
            firsts = first_of[k] = []
            bucketed[k] = {}
        firsts.append(j)
        if width and cj > 0:
            bucketed[k].setdefault(int(log(cj) // width), []).append(j)
        else:
            unbucketed.setdefault(k, []).append(j)
        rank[j] = len(kept)
        kept.append(j)
    return kept, also


def _attach_rest(order, keys, costs, wheres, tol, first_of, also, listed) -> None:
    """collapse_rows after its `limit` kept rows: each remaining row joins the earliest of them
    within tolerance of its key, or is dropped."""
    for j in order:
        firsts = first_of.get(keys[j])
        if firsts is None:
            continue
        cj = costs[j]
        for i in firsts:  # in kept order: the earliest match wins
            ci = costs[i]
            if abs(cj - ci) <= tol * max(abs(ci), 1e-9):
                _attach(j, i, wheres, also, listed)
                break


def _attach(j: int, kept: int, wheres, also: dict, listed: dict) -> None:
    """Row j is the same choice as the kept row: its place joins the kept row's 'also at' list."""
    where = wheres[j]
    lst = also.setdefault(kept, [])
    seen = listed.setdefault(kept, set())
    if where and where not in seen and where != wheres[kept]:
        lst.append(where)
        seen.add(where)


def collapse(order, key_of, cost_of, where_of, tolerance: float = SAME_CHOICE_COST_TOLERANCE
             ) -> tuple[list[int], dict[int, list[str]]]:
    """`collapse_rows` with the key, cost and 'where' of a row given as functions of its index."""
    order = list(order)
    return collapse_rows(order, {j: key_of(j) for j in order}, {j: cost_of(j) for j in order},
                         {j: where_of(j) for j in order}, tolerance)


def where_label(region: str) -> str:
    return region or "?"
