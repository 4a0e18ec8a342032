"""Offers that may carry a workload, after the user's constraints; and why the rest may not."""
from __future__ import annotations

import collections
import contextlib
import datetime as dt
import functools
import gc
import threading
from dataclasses import dataclass, field

from gpuplan.catalog.catalog import Catalog
from gpuplan.catalog.records import CONFIDENCE_RANK, Gpu, Offer, Provider
from gpuplan.planner.requests import Constraints

DEFAULT_MAX_GPUS = 16_384

_gc_lock = threading.Lock()
_gc_depth = 0
_gc_was_enabled = False


@contextlib.contextmanager
def gc_paused():
    """No cyclic garbage collection while planning. A large catalog keeps ~10^6 objects alive and the
    planner allocates hundreds of thousands of short-lived ones (freed by reference counting): each
    full collection would rescan the catalog for nothing, a third of a plan's time at 100k offers.
    Re-entrant and thread-safe: collection resumes when the last concurrent plan ends."""
    global _gc_depth, _gc_was_enabled
    with _gc_lock:
        if _gc_depth == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_depth += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_depth -= 1
            if _gc_depth == 0 and _gc_was_enabled:
                gc.enable()


def without_gc(fn):
    """Run `fn` inside `gc_paused()`."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with gc_paused():
            return fn(*args, **kwargs)
    return wrapper


@dataclass
class CandidateSet:
    """Offers that passed the constraints, grouped so that estimates are computed once per group."""

    offers: list[Offer]
    rejected: collections.Counter = field(default_factory=collections.Counter)

    def by_gpu(self) -> dict[str, list[Offer]]:
        groups: dict[str, list[Offer]] = collections.defaultdict(list)
        for o in self.offers:
            groups[o.gpu].append(o)
        return dict(groups)


def filter_offers(
    catalog: Catalog,
    constraints: Constraints,
    precision: str | None = None,
    today: dt.date | None = None,
) -> CandidateSet:
    """Apply the constraints every plan shares; count each rejection by its reason."""
    today = today or dt.date.today()
    rejected: collections.Counter = collections.Counter()
    offers = catalog.offers(
        gpu=constraints.gpus, provider=constraints.providers, kind=constraints.kinds,
        exclude_providers=constraints.exclude, today=today,
    )
    if constraints.regions:
        regions = [r.lower() for r in constraints.regions]
        kept = [o for o in offers if any(r in o.region.lower() for r in regions)]
        rejected["outside --regions"] += len(offers) - len(kept)
        offers = kept
    out = []
    min_rank = CONFIDENCE_RANK[constraints.min_confidence] if constraints.min_confidence else None
    for o in offers:
        gpu = catalog.gpus[o.gpu]
        if constraints.no_spot and o.preemptible:
            rejected["spot excluded (--no-spot)"] += 1
        elif min_rank is not None and CONFIDENCE_RANK[o.confidence] < min_rank:
            rejected["price confidence below --min-confidence"] += 1
        elif constraints.max_price_age_days is not None and o.age_days(today) > constraints.max_price_age_days:
            rejected["price older than --max-price-age"] += 1
        elif precision and not gpu.supports(precision):
            rejected[f"GPU lacks {precision}"] += 1
        else:
            out.append(o)
    return CandidateSet(out, rejected)


def provider_of(catalog: Catalog, offer: Offer) -> Provider:
    return catalog.providers[offer.provider]


def gpu_of(catalog: Catalog, offer: Offer) -> Gpu:
    return catalog.gpus[offer.gpu]


def collapse_rows(order, keys: list, costs: list, wheres: list, tolerance: float | None = None
                  ) -> tuple[list[int], dict[int, list[str]]]:
    """`planner.distinct.collapse` over precomputed per-row keys, costs and 'where' labels: the same
    result, without its quadratic 'already listed?' scans (a 100k-offer catalog repeats one choice
    in thousands of regions)."""
    from gpuplan.planner.distinct import SAME_CHOICE_COST_TOLERANCE

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
