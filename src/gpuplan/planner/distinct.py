"""Distinct choices: offers that differ only by region, or by a few percent at the same provider,
GPU, node size and pricing, are one choice on screen that says where else it is available."""
from __future__ import annotations

SAME_CHOICE_COST_TOLERANCE = 0.03  # within 3%: the same choice for a buyer


def collapse_rows(order, keys, costs, wheres, tolerance: float | None = None
                  ) -> tuple[list[int], dict[int, list[str]]]:
    """Keep the first (best-ranked) row of each choice; the rest within `tolerance` of its cost
    become 'also at' entries on it. Returns (kept indices in order, {kept: [also at ...]}).
    Keys, costs and 'where' labels are per row, precomputed (a 100k-offer catalog repeats one
    choice in thousands of regions, so nothing here is quadratic in them)."""
    tol = SAME_CHOICE_COST_TOLERANCE if tolerance is None else tolerance
    kept: list[int] = []
    also: dict[int, list[str]] = {}
    listed: dict[int, set[str]] = {}
    first_of: dict[tuple, list[int]] = {}
    for j in order:
        k = keys[j]
        cj = costs[j]
        match = None
        firsts = first_of.get(k)
        if firsts is not None:
            for i in firsts:
                ci = costs[i]
                if abs(cj - ci) <= tol * max(abs(ci), 1e-9):
                    match = i
                    break
        if match is not None:
            where = wheres[j]
            lst = also.setdefault(match, [])
            seen = listed.setdefault(match, set())
            if where and where not in seen and where != wheres[match]:
                lst.append(where)
                seen.add(where)
            continue
        if firsts is None:
            first_of[k] = [j]
        else:
            firsts.append(j)
        kept.append(j)
    return kept, also


def collapse(order, key_of, cost_of, where_of, tolerance: float = SAME_CHOICE_COST_TOLERANCE
             ) -> tuple[list[int], dict[int, list[str]]]:
    """`collapse_rows` with the key, cost and 'where' of a row given as functions of its index."""
    order = list(order)
    return collapse_rows(order, {j: key_of(j) for j in order}, {j: cost_of(j) for j in order},
                         {j: where_of(j) for j in order}, tolerance)


def where_label(region: str) -> str:
    return region or "?"
