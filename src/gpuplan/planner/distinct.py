"""Distinct choices: offers that differ only by region, or by a few percent at the same provider,
GPU, node size and pricing, are one choice on screen that says where else it is available."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

SAME_CHOICE_COST_TOLERANCE = 0.03  # within 3%: the same choice for a buyer


def collapse(order: Sequence[int], key_of: Callable[[int], tuple], cost_of: Callable[[int], float],
             where_of: Callable[[int], str], tolerance: float = SAME_CHOICE_COST_TOLERANCE
             ) -> tuple[list[int], dict[int, list[str]]]:
    """Keep the first (best-ranked) row of each choice; the rest within `tolerance` of its cost
    become 'also at' entries on it. Returns (kept indices in order, {kept: [also at ...]})."""
    kept: list[int] = []
    also: dict[int, list[str]] = {}
    first_of: dict[tuple, list[int]] = {}
    for j in order:
        k = key_of(j)
        match = None
        for i in first_of.get(k, []):
            ci = cost_of(i)
            if abs(cost_of(j) - ci) <= tolerance * max(abs(ci), 1e-9):
                match = i
                break
        if match is not None:
            where = where_of(j)
            lst = also.setdefault(match, [])
            if where and where not in lst and where != where_of(match):
                lst.append(where)
            continue
        first_of.setdefault(k, []).append(j)
        kept.append(j)
    return kept, also


def where_label(region: str, instance_type: str, base: Any = None) -> str:
    return f"{region or '?'} ({instance_type})" if base is not None and instance_type != base else (region or "?")
