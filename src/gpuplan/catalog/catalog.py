"""The catalog: GPUs, providers and offers behind one query interface.

Reads the user's store when it exists (live refreshes, imports), else the bundled files.
"""
from __future__ import annotations

import datetime as dt
import gc
import re
import threading
from collections.abc import Iterable

from gpuplan.catalog.gpus import all_gpus, normalize_gpu_name, resolve_gpu_id
from gpuplan.catalog.records import (
    CONFIDENCE_RANK, PRICING_TYPES, PROVIDER_KINDS, Gpu, Offer, Provider,
)
from gpuplan.errors import UnknownNameError, UsageError

# A bare chip name ('h100', 'a100') means every variant of it; a variant name means that one.
GPU_FAMILIES = {"a100": "A100-", "h100": "H100-", "h200": "H200-", "v100": "V100-"}

OFFER_SORT_KEYS = {
    "price": lambda o: (o.price_per_gpu_hour_usd, o.price_per_hour_usd),
    "node-price": lambda o: (o.price_per_hour_usd, o.price_per_gpu_hour_usd),
    "gpus": lambda o: (-o.gpus_per_node, o.price_per_gpu_hour_usd),
    "provider": lambda o: (o.provider, o.gpu, o.price_per_gpu_hour_usd),
    "gpu": lambda o: (o.gpu, o.price_per_gpu_hour_usd),
    "age": lambda o: (-o.as_of.toordinal(), o.price_per_gpu_hour_usd),
    "confidence": lambda o: (-CONFIDENCE_RANK[o.confidence], o.price_per_gpu_hour_usd),
}


def normalize_pricing(text: str) -> str:
    p = text.strip().lower().replace("-", "_").replace(" ", "_")
    p = {"ondemand": "on_demand", "preemptible": "spot", "bid": "interruptible"}.get(p, p)
    if p not in PRICING_TYPES:
        raise UsageError(f"unknown pricing type {text!r}; use one of: {', '.join(PRICING_TYPES)}")
    return p


class Catalog:
    """GPUs, providers and offers; `origin` says where the offers came from."""

    def __init__(self, gpus: dict[str, Gpu], providers: dict[str, Provider], offers: Iterable[Offer], origin: str,
                 *, deployability_applied: bool = False):
        """`deployability_applied`: the offers already went through `with_deployability` (the store
        fills it in while reading)."""
        from gpuplan.catalog.deployability import with_deployability

        self.gpus = gpus
        was = gc.isenabled()
        gc.disable()  # 100k surviving offers: the cyclic collector would rescan them for nothing
        try:
            self._all = tuple(offers) if deployability_applied else tuple(with_deployability(o) for o in offers)
        finally:
            if was:
                gc.enable()
        self._store = None
        self._subsets: dict[tuple, tuple[Offer, ...]] = {}
        self._lock = threading.Lock()
        self._set_providers(providers, {o.provider for o in self._all})
        self.origin = origin

    def _set_providers(self, providers: dict[str, Provider], present: set[str]) -> None:
        # A provider known only from the user's imports (a private cluster) is a provider like any
        # other, with every attribute unknown.
        missing = present - set(providers)
        self.providers = {**providers, **{pid: _imported_provider(pid) for pid in sorted(missing)}}

    @classmethod
    def _from_store(cls, gpus: dict[str, Gpu], providers: dict[str, Provider], store, path) -> "Catalog | None":
        """A catalog over the store at `path` whose offers are read when first asked for: all of them,
        or only the GPUs / providers a filter names (a large store holds 10^5-10^6 offers; a query for
        H100s need not build every A10G). None when there is no store file."""
        present = store.read_current_providers(path)
        if present is None:
            return None
        self = cls.__new__(cls)
        self.gpus = gpus
        self._all = None
        self._store = (store, path)
        self._subsets = {}
        self._lock = threading.Lock()
        self._set_providers(providers, present)
        self.origin = str(path)
        return self

    @property
    def _offers(self) -> tuple[Offer, ...]:
        if self._all is None:
            with self._lock:
                if self._all is None:
                    self._all = self._read(None, None)
                    self._subsets.clear()
        return self._all

    def _read(self, gpus: set[str] | None, providers: set[str] | None) -> tuple[Offer, ...]:
        store, path = self._store
        offers = store.read_current_offers(path, with_deployability=True, gpus=gpus, providers=providers)
        if offers is None:  # the store file went away since load(): as load() would have read then
            from gpuplan.catalog.bundled import load_current_bundled_offers
            from gpuplan.catalog.deployability import with_deployability

            offers = [with_deployability(o) for o in load_current_bundled_offers()
                      if (gpus is None or o.gpu in gpus) and (providers is None or o.provider in providers)]
        return tuple(offers)

    def offer_tuples(self, gpu_ids: set[str] | None, provider_ids: set[str] | None, *, make,
                     by_price: bool = False) -> list[tuple] | None:
        """A superset of the offers on `gpu_ids` at `provider_ids` (None: any) as rows built by `make`
        (a tuple subclass in the store's OFFER_COLUMNS order that reads like an Offer), in catalog
        order, read without building Offer objects; None
        when the offers are already in memory (or there is no store): use `offers()` then.
        `by_price`: in `offers()`'s default order (sort="price") instead of catalog order."""
        if self._all is not None or self._store is None:
            return None
        store, path = self._store
        read = getattr(store, "read_current_offer_tuples", None)
        return None if read is None else read(path, gpus=gpu_ids, providers=provider_ids, by_price=by_price,
                                                  make=make)

    _SUBSETS_KEPT = 8

    def _candidates(self, gpu_ids: set[str] | None, provider_ids: set[str] | None) -> tuple[Offer, ...]:
        """Every offer, or a superset of those on `gpu_ids` at `provider_ids` (each None: any),
        in catalog order."""
        if self._all is not None or (gpu_ids is None and provider_ids is None):
            return self._offers
        key = (None if gpu_ids is None else frozenset(gpu_ids), None if provider_ids is None else frozenset(provider_ids))
        got = self._subsets.get(key)
        if got is None:
            if len(self._subsets) >= self._SUBSETS_KEPT:  # many different queries: read everything once
                return self._offers
            got = self._read(gpu_ids, provider_ids)
            with self._lock:
                if self._all is None:
                    self._subsets[key] = got
        return got

    @classmethod
    def load(cls, db: str | None = None, use_store: bool = True) -> "Catalog":
        """The store at `db` (or GPUPLAN_DB, or the user data dir) when it exists, else the bundled files."""
        from gpuplan.catalog.bundled import load_bundled_providers, load_current_bundled_offers

        providers = load_bundled_providers()
        if use_store:
            import importlib

            try:
                store = importlib.import_module("gpuplan.catalog.store")
            except ModuleNotFoundError as e:  # store not installed in this build
                if e.name != "gpuplan.catalog.store":
                    raise
            else:
                path = store.resolve_db_path(db)
                lazy = cls._from_store(all_gpus(), providers, store, path)
                if lazy is not None:
                    return lazy
        return cls(all_gpus(), providers, load_current_bundled_offers(), origin="bundled")

    # ---- lookups ----------------------------------------------------------------------------
    def gpu(self, name: str) -> Gpu:
        return self.gpus[resolve_gpu_id(name)]

    def provider_id(self, name: str) -> str:
        key = name.strip().lower()
        for p in self.providers.values():
            if key in (p.id, p.name.lower(), *[a.lower() for a in p.aliases]):
                return p.id
        known = [p.id for p in self.providers.values()]
        raise UnknownNameError("provider", name, known + [p.name for p in self.providers.values()])

    def provider(self, name: str) -> Provider:
        return self.providers[self.provider_id(name)]

    def provider_record(self, provider_id: str) -> Provider:
        """The provider of an offer; one known only from the user's imports (a private cluster) gets
        a record whose attributes are all unknown."""
        p = self.providers.get(provider_id)
        return p if p is not None else _imported_provider(provider_id)

    def gpu_ids_matching(self, name: str) -> set[str]:
        """Every GPU id a user's name means: 'H100' is all H100 variants, 'H100-PCIe' one."""
        family = GPU_FAMILIES.get(normalize_gpu_name(name))
        if family:
            return {g for g in self.gpus if g.startswith(family)}
        return {resolve_gpu_id(name)}

    # ---- offers -----------------------------------------------------------------------------
    @property
    def all_offers(self) -> tuple[Offer, ...]:
        return self._offers

    def offers(
        self,
        gpu: str | Iterable[str] | None = None,
        min_gpus: float | None = None,
        provider: str | Iterable[str] | None = None,
        kind: str | Iterable[str] | None = None,
        pricing: str | Iterable[str] | None = None,
        region: str | None = None,
        max_price: float | None = None,
        max_age_days: int | None = None,
        min_confidence: str | None = None,
        exclude_providers: Iterable[str] | None = None,
        sort: str = "price",
        limit: int | None = None,
        today: dt.date | None = None,
    ) -> list[Offer]:
        """Offers matching every given filter, sorted (default: cheapest per GPU-hour first)."""
        gpu_ids = _union(gpu, self.gpu_ids_matching)
        provider_ids = _union(provider, lambda p: {self.provider_id(p)})
        excluded = _union(exclude_providers, lambda p: {self.provider_id(p)}) or set()
        kinds = _union(kind, _check_kind)
        pricings = _union(pricing, lambda p: {normalize_pricing(p)})
        if min_gpus is not None and not (min_gpus > 0):
            raise UsageError(f"--min-gpus must be a positive number, got {min_gpus}")
        if max_price is not None and not (max_price > 0):
            raise UsageError(f"--max-price must be a positive number of USD per GPU-hour, got {max_price}")
        if max_age_days is not None and max_age_days < 0:
            raise UsageError("--max-price-age must be zero or more days")
        min_rank = None
        if min_confidence is not None:
            if min_confidence not in CONFIDENCE_RANK:
                raise UsageError(f"unknown confidence {min_confidence!r}; use primary, aggregated, third-party or unverified")
            min_rank = CONFIDENCE_RANK[min_confidence]
        if sort not in OFFER_SORT_KEYS:
            raise UsageError(f"unknown sort {sort!r}; use one of: {', '.join(OFFER_SORT_KEYS)}")
        if limit is not None and limit <= 0:
            raise UsageError(f"--limit must be a positive integer, got {limit}")
        region_re = re.compile(re.escape(region.strip()), re.I) if region else None
        today = today or dt.date.today()

        push_providers = provider_ids
        if kinds is not None:  # the providers of those kinds (a store read can filter on providers)
            of_kind = {pid for pid in self.providers if self._kind_of(pid) in kinds}
            push_providers = of_kind if push_providers is None else push_providers & of_kind
        out = []
        rows = None
        if limit and self._all is None and self._store is not None:
            # A page of a large store: filter and sort light rows, build Offer objects for the page only.
            from gpuplan.planner.offer_rows import OfferRow

            rows = self.offer_tuples(gpu_ids, push_providers, make=OfferRow, by_price=sort == "price")
        for o in (rows if rows is not None else self._candidates(gpu_ids, push_providers)):
            if gpu_ids is not None and o.gpu not in gpu_ids:
                continue
            if provider_ids is not None and o.provider not in provider_ids:
                continue
            if o.provider in excluded:
                continue
            if kinds is not None and self._kind_of(o.provider) not in kinds:
                continue
            if pricings is not None and o.pricing not in pricings:
                continue
            if min_gpus is not None and o.gpus_per_node < min_gpus:
                continue
            if max_price is not None and o.price_per_gpu_hour_usd > max_price:
                continue
            if region_re is not None and not region_re.search(o.region):
                continue
            if max_age_days is not None and o.age_days(today) > max_age_days:
                continue
            if min_rank is not None and CONFIDENCE_RANK[o.confidence] < min_rank:
                continue
            out.append(o)
        out.sort(key=OFFER_SORT_KEYS[sort])
        out = out[:limit] if limit else out
        return [o.to_offer() for o in out] if rows is not None else out

    def _kind_of(self, provider_id: str) -> str | None:
        p = self.providers.get(provider_id)
        return p.kind if p else None

    def provider_summary(self) -> list[dict]:
        """Per provider: kind, features, offer count, cheapest on-demand-like price per GPU type."""
        rows = []
        for p in sorted(self.providers.values(), key=lambda p: (PROVIDER_KINDS.index(p.kind), p.id)):
            offers = [o for o in self._offers if o.provider == p.id]
            cheapest: dict[str, float] = {}
            for o in offers:
                if o.gpu not in cheapest or o.price_per_gpu_hour_usd < cheapest[o.gpu]:
                    cheapest[o.gpu] = o.price_per_gpu_hour_usd
            rows.append({
                "id": p.id, "name": p.name, "kind": p.kind, "kind_unverified": p.kind_unverified,
                "billing_granularity": p.billing_granularity, "billing_increment_s": p.billing_increment_s,
                "kubernetes": p.kubernetes, "bare_metal": p.bare_metal, "infiniband": p.infiniband,
                "has_infiniband": p.has_infiniband, "egress_fee": p.egress_fee,
                "egress_usd_per_gb": p.egress_usd_per_gb, "spot": p.spot, "has_spot": p.has_spot,
                "sla": p.sla, "regions": p.regions, "best_for": p.best_for, "notes": p.notes,
                "source": p.source, "offer_count": len(offers),
                "priced_offer_count": len(offers),
                "spot_offer_count": sum(1 for o in offers if o.preemptible),
                "gpu_types": sorted(cheapest),
                "cheapest_per_gpu_hour_usd": dict(sorted(cheapest.items())),
                "newest_price": max((o.as_of for o in offers), default=None),
                "newest_as_of": max((o.as_of for o in offers), default=None),
                # why there is no price: the provider record's reason; offers found anyway (a refresh,
                # an import) make it moot
                "no_public_price": None if offers else (p.no_public_price or "no offers in this catalog; "
                                                        "reason not recorded"),
            })
        return rows


def _imported_provider(provider_id: str) -> Provider:
    return Provider(id=provider_id, name=provider_id, kind="neocloud", kind_unverified=True,
                    notes="known only from the user's imports: attributes unknown", source="user import")


def _check_kind(k: str) -> set[str]:
    k = k.strip().lower()
    if k not in PROVIDER_KINDS:
        raise UsageError(f"unknown provider kind {k!r}; use one of: {', '.join(PROVIDER_KINDS)}")
    return {k}


def _union(values, resolve) -> set[str] | None:
    """None when no filter is given; else the union of what each comma-separated value resolves to."""
    if values is None:
        return None
    if isinstance(values, str):
        values = [values]
    parts = [v.strip() for item in values for v in str(item).split(",") if v.strip()]
    if not parts:
        return None
    out: set[str] = set()
    for v in parts:
        out |= resolve(v)
    return out
