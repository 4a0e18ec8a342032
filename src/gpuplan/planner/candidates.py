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
from gpuplan.catalog.records import CONFIDENCE_RANK, STALE_AFTER_DAYS, Gpu, Offer, Provider
from gpuplan.planner.offer_rows import COLUMNS
from gpuplan.planner.requests import Constraints

DEFAULT_MAX_GPUS = 16_384
# Host memory a node needs besides the weights it loads through host memory: OS, CUDA context,
# data loaders or the serving engine.
HOST_RAM_BASE_GB = 8.0


def served_weights_gb(model, precision: str) -> float:
    """Weights one serving replica loads, GB, at the served precision (block scales included)."""
    from gpuplan.perf.inference_precision import weight_format

    return model.total_params() * weight_format(precision).bytes_per_param / 1e9


def gpu_lacks(gpu: Gpu, needs: str | None, native_precision: str | None = None) -> bool:
    """True where `gpu` has no tensor cores for `needs` ('fp8', 'fp4') and no way round them: a model
    published in FP4 (gpt-oss, MXFP4) is still served weight-only, dequantized to bf16, where the engines
    have kernels for it (perf.inference_precision.FP4_WEIGHT_ONLY_ARCHS)."""
    if not needs or gpu.supports(needs):
        return False
    from gpuplan.perf.inference_precision import fp4_weight_only_ok, native_is

    return not (needs == "fp4" and native_is(native_precision, "fp4") and fp4_weight_only_ok(gpu))


def weight_notes(capacity) -> list[str]:
    """A plan's note on how its GPU runs the weights (a native MXFP4 checkpoint dequantized to bf16)."""
    note = (getattr(capacity, "assumptions", None) or {}).get("weight_dequantized")
    return [note] if note else []


def weight_lines(plans) -> list[str]:
    """One 'why' line naming the shown GPUs that run the weights dequantized (weight-only, bf16 math)."""
    gpus = list(dict.fromkeys(p.gpu for p in plans if p.assumptions.get("weight_dequantized")))
    if not gpus:
        return []
    return [f"MXFP4 weights dequantized to bf16 on {', '.join(gpus)}: no FP4 tensor cores (weight-only 4-bit, "
            f"bf16 math); Blackwell runs them against MXFP8 activations (W4A8, 8-bit math)"]

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
    native_precision: str | None = None,
) -> CandidateSet:
    """Apply the constraints every plan shares; count each rejection by its reason. `precision` is the
    tensor-core precision the weights need ('fp8', 'fp4'); `native_precision` the model's published one
    (a native FP4 checkpoint also runs weight-only on GPUs without FP4)."""
    today = today or dt.date.today()
    rejected: collections.Counter = collections.Counter()
    offers = catalog.offers(
        gpu=constraints.gpus, provider=constraints.providers, kind=constraints.kinds,
        exclude_providers=constraints.exclude, today=today,
    )
    return _apply_constraints(catalog, offers, constraints, precision, today, rejected, native_precision)


def _apply_constraints(catalog: Catalog, offers, constraints: Constraints, precision: str | None, today: dt.date,
                       rejected: collections.Counter, native_precision: str | None = None) -> CandidateSet:
    if constraints.regions:
        regions = [r.lower() for r in constraints.regions]
        kept = [o for o in offers if any(r in o.region.lower() for r in regions)]
        rejected["outside --regions"] += len(offers) - len(kept)
        offers = kept
    # A price older than the stale threshold is not a price one can book at: such offers are not
    # ranked unless --max-price-age-days asks for older ones (the cut is on the date, one comparison per row).
    max_age = constraints.max_price_age_days
    oldest = today - dt.timedelta(days=STALE_AFTER_DAYS if max_age is None else max_age)
    kept = [o for o in offers if o.as_of >= oldest]
    if len(kept) < len(offers):
        rejected["price older than --max-price-age" if max_age is not None else
                 f"price older than {STALE_AFTER_DAYS} days (stale: refresh it, or rank it with "
                 f"--max-price-age-days)"] += len(offers) - len(kept)
        offers = kept
    min_rank = CONFIDENCE_RANK[constraints.min_confidence] if constraints.min_confidence else None
    if not (constraints.no_spot or min_rank is not None or precision):
        return CandidateSet(list(offers), rejected)
    out = []
    lacks: dict[str, bool] = {}
    for o in offers:
        if o.gpu not in lacks:
            lacks[o.gpu] = gpu_lacks(catalog.gpus[o.gpu], precision, native_precision)
        if constraints.no_spot and o.preemptible:
            rejected["spot excluded (--no-spot)"] += 1
        elif min_rank is not None and CONFIDENCE_RANK[o.confidence] < min_rank:
            rejected["price confidence below --min-confidence"] += 1
        elif lacks[o.gpu]:
            rejected[f"GPU lacks {precision}"] += 1
        else:
            out.append(o)
    return CandidateSet(out, rejected)


def filter_offer_rows(catalog: Catalog, constraints: Constraints, precision: str | None = None,
                      today: dt.date | None = None, native_precision: str | None = None) -> CandidateSet:
    """`filter_offers` with offers as `OfferRow` tuples, read from the store without building an Offer
    per row when the catalog has not loaded them: the same offers, in the same order, with the same
    rejection counts. GPU and provider filters are pushed into the store's SQL."""
    from gpuplan.catalog.catalog import _check_kind, _union
    from gpuplan.planner.offer_rows import OfferRow, row_of

    today = today or dt.date.today()
    gpu_ids = _union(constraints.gpus, catalog.gpu_ids_matching)
    provider_ids = _union(constraints.providers, lambda p: {catalog.provider_id(p)})
    excluded = _union(constraints.exclude, lambda p: {catalog.provider_id(p)}) or set()
    kinds = _union(constraints.kinds, _check_kind)
    push = provider_ids
    if kinds is not None:
        of_kind = {pid for pid, p in catalog.providers.items() if p.kind in kinds}
        push = of_kind if push is None else push & of_kind
    raw = catalog.offer_tuples(gpu_ids, push, by_price=True, make=OfferRow)  # Catalog.offers' default order
    if raw is None:  # offers already in memory (or the bundled catalog): as filter_offers
        cands = filter_offers(catalog, constraints, precision, today, native_precision)
        return CandidateSet([row_of(o) for o in cands.offers], cands.rejected)
    if excluded or kinds is not None or (provider_ids is not None and provider_ids != push):
        kind_of = {pid: p.kind for pid, p in catalog.providers.items()}
        i_prov = COLUMNS.index("provider")
        rows = [t for t in raw if t[i_prov] not in excluded and (provider_ids is None or t[i_prov] in provider_ids)
                and (kinds is None or kind_of.get(t[i_prov]) in kinds)]
    else:  # GPUs and providers were filtered in SQL
        rows = raw
    del raw
    return _apply_constraints(catalog, rows, constraints, precision, today, collections.Counter(), native_precision)


def provider_of(catalog: Catalog, offer: Offer) -> Provider:
    return catalog.providers[offer.provider]


def gpu_of(catalog: Catalog, offer: Offer) -> Gpu:
    return catalog.gpus[offer.gpu]
