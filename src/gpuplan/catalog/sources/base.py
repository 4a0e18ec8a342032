"""What every live price source shares: its result, its protocol, and the offer builder
that turns a provider's raw row into a validated `Offer` or a counted skip.

A source never stores a half-parsed row: each row either becomes a complete, validated
`Offer` or is skipped with a reason (providers.md §3: $0 prices, spot above on-demand,
VRAM that does not match the spec table, unknown GPU names).
"""
from __future__ import annotations

import ast
import datetime as dt
import functools
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import httpx

from gpuplan.catalog.records import Offer
from gpuplan.errors import GpuplanError


class SourceError(GpuplanError):
    """A source could not be read (HTTP error, timeout, malformed or oversized answer).
    Messages name the host and the problem, never a key or header."""


@dataclass
class SourceResult:
    """One fetch: the valid offers, how many raw rows were read, and why others were skipped."""

    offers: list[Offer]
    raw_rows: int
    skipped: Counter = field(default_factory=Counter)
    note: str = ""

    @property
    def rows_skipped(self) -> int:
        return sum(self.skipped.values())


@runtime_checkable
class PriceSource(Protocol):
    """A live price source. `name` is the store's source name (e.g. 'vast', 'skypilot:gcp');
    `needs_key` names the secret it requires (None = keyless)."""

    name: str
    needs_key: str | None

    def fetch(self, client: httpx.Client) -> SourceResult: ...


def today_utc() -> dt.date:
    return dt.datetime.now(dt.timezone.utc).date()


def to_float(v) -> float | None:
    """A number from JSON/CSV text, or None for empty/garbage/non-finite."""
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        f = float(v)
    else:
        s = str(v).strip()
        if not s:
            return None
        try:
            f = float(s)
        except ValueError:
            return None
    return f if math.isfinite(f) else None


def parse_gpuinfo(text: str | None) -> tuple[str, float | None]:
    """(GPU name, reported memory in MiB) from SkyPilot's Python-dict-like GpuInfo string."""
    if not text or not text.strip().startswith("{"):
        return ("", None)
    try:
        info = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return ("", None)
    if not isinstance(info, dict):
        return ("", None)
    info = {str(k).lower(): v for k, v in info.items()}
    gpus = info.get("gpus")
    if not isinstance(gpus, list) or not gpus or not isinstance(gpus[0], dict):
        return ("", None)
    g = {str(k).lower(): v for k, v in gpus[0].items()}
    mem_info = g.get("memoryinfo") if isinstance(g.get("memoryinfo"), dict) else {}
    mem = to_float({str(k).lower(): v for k, v in mem_info.items()}.get("sizeinmib"))
    return (str(g.get("name", "")), mem if mem and mem > 0 else None)


@functools.lru_cache(maxsize=4096)
def resolve_offer_gpu_cached(name: str, mem_gb_per_gpu: float | None, hint: str = "") -> str | None:
    """`resolve_offer_gpu` memoized: a marketplace answer repeats a few GPU names thousands of times."""
    return resolve_offer_gpu(name, mem_gb_per_gpu, hint)


# Feed spellings the alias table (catalog/data/gpu_aliases.csv) cannot take as they are: Vast's
# 'RTX PRO 6000 S' ends in an edition letter the table's size/suffix stripping does not know.
FEED_SPELLINGS = {"rtx pro 6000 s": "RTX PRO 6000 Server Edition"}

_FORM_WORDS = re.compile(r"[\s_\-]*(sxm\d?|pcie|pci-e|nvl|nvlink|hgx|oam)\b", re.I)


def resolve_offer_gpu(name: str, mem_gb_per_gpu: float | None = None, hint: str = "") -> str | None:
    """Canonical GPU id for a provider's GPU name, refined by memory and form-factor hints
    (SXM vs PCIe vs NVL, 40 vs 80 GB); None when the name is unknown."""
    from gpuplan.catalog.gpus import resolve_gpu_id
    from gpuplan.errors import UnknownNameError

    name = (name or "").strip()
    if not name:
        return None
    name = FEED_SPELLINGS.get(" ".join(name.lower().split()), name)
    # Memory is not appended to the name: the alias table's trailing-size stripping can eat a
    # form-factor digit ('A100 SXM4 43GB'); memory refines the variant below instead.
    tries = [name]
    bare = _FORM_WORDS.sub("", name).strip()
    if bare and bare != name:
        tries.append(bare)
    gid = None
    for t in tries:
        try:
            gid = resolve_gpu_id(t)
            break
        except UnknownNameError:
            continue
    if gid is None:
        return None
    h = f"{name} {hint}".lower()
    mem = mem_gb_per_gpu or 0
    if gid == "A100-40GB-SXM" and mem >= 60:
        gid = "A100-80GB-SXM"
    elif gid == "A100-80GB-SXM" and 0 < mem < 60:
        gid = "A100-40GB-SXM"
    if gid == "V100-SXM2-16GB" and mem >= 24:
        gid = "V100-SXM2-32GB"
    if "pci" in h:
        from gpuplan.catalog.gpus import all_gpus

        if gid.startswith("A100"):  # the memory decides 40 vs 80 GB; the name decides PCIe
            if 0 < mem < 60 and "A100-40GB-PCIe" in all_gpus():
                gid = "A100-40GB-PCIe"  # Vast's 'A100 PCIE' 40 GB bucket: not an SXM card
            elif mem >= 60 or gid in ("A100-80GB-SXM", "A100-80GB-PCIe"):
                gid = "A100-80GB-PCIe"
            elif gid == "A100-40GB-SXM" and "A100-40GB-PCIe" in all_gpus():
                gid = "A100-40GB-PCIe"
        elif gid == "H100-SXM":
            gid = "H100-PCIe"
    if re.search(r"nvl(?!ink)", h):
        if gid == "H100-SXM":
            gid = "H100-NVL"
        elif gid == "H200-SXM":
            gid = "H200-NVL"
    return gid


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def clean_text(v, limit: int) -> str:
    """Provider text as a safe one-line cell: control characters dropped, length capped."""
    return _CONTROL.sub(" ", str(v or "")).strip()[:limit]


# the node size is part of the key: a 1x and an 8x row of one instance name are different offers
PRICE_KEY_FIELDS = ("provider", "instance_type", "gpu", "gpus_per_node", "region", "pricing", "commitment_term_h")
SPOT_PAIRS = {"spot": ("on_demand",), "interruptible": ("community", "on_demand")}


class OfferBuilder:
    """Collects a source's offers: validates each row against the spec table and the
    price floor, counts skips by reason, collapses duplicates and drops spot rows priced
    above their on-demand twin."""

    def __init__(self, *, provider: str, source: str, as_of: dt.date, confidence: str,
                 as_of_note: str = "", interconnect: str | None = None):
        self.provider, self.source, self.as_of = provider, source, as_of
        self.confidence, self.as_of_note, self.interconnect = confidence, as_of_note, interconnect
        self.offers: list[Offer] = []
        self.skipped: Counter = Counter()
        self.raw_rows = 0

    def skip(self, reason: str) -> None:
        self.skipped[reason] += 1

    def add(self, *, instance_type: str, gpu_name: str, gpus_per_node, pricing: str, price_per_hour_usd,
            region: str = "", vcpus=None, ram_gb=None, mem_gb_per_gpu: float | None = None,
            hint: str = "", gpu_id: str | None = None, commitment_term_h: float | None = None,
            interconnect: str | None = None, as_of_note: str | None = None, provider: str | None = None,
            as_of: dt.date | None = None) -> Offer | None:
        """Validate one priced row; returns the Offer or None (skip counted)."""
        from pydantic import ValidationError

        from gpuplan.catalog.gpus import all_gpus
        from gpuplan.catalog.validation import memory_problem, price_problem

        gid = gpu_id or resolve_offer_gpu_cached(str(gpu_name or ""), mem_gb_per_gpu, f"{instance_type} {hint}")
        if gid is None:
            self.skip(f"unknown GPU {clean_text(gpu_name, 40)!r}")
            return None
        gpu = all_gpus()[gid]
        count = to_float(gpus_per_node)
        if count is None or count <= 0 or count > 1024:
            self.skip("GPU count missing or out of range")
            return None
        price = to_float(price_per_hour_usd)
        if price is None:
            self.skip("price missing or not a number")
            return None
        if problem := price_problem(gpu, price / count):
            self.skip("price below floor or zero" if "floor" in problem or "zero" in problem else "price out of range")
            return None
        if problem := memory_problem(gpu, mem_gb_per_gpu):
            self.skip("VRAM does not match spec table")
            return None
        vc, ram = to_float(vcpus), to_float(ram_gb)
        try:
            offer = Offer(
                provider=provider or self.provider, instance_type=clean_text(instance_type, 120), gpu=gid,
                gpus_per_node=count, region=clean_text(region, 80), pricing=pricing,
                price_per_hour_usd=price, price_per_gpu_hour_usd=price / count,
                vcpus=vc if vc is not None and vc >= 0 else None,
                ram_gb=ram if ram is not None and ram >= 0 else None,
                interconnect=interconnect if interconnect is not None else self.interconnect,
                commitment_term_h=commitment_term_h, as_of=as_of or self.as_of,
                as_of_note=self.as_of_note if as_of_note is None else as_of_note,
                source=self.source, confidence=self.confidence,
            )
        except ValidationError as e:
            loc = e.errors()[0].get("loc", ("?",))
            self.skip(f"invalid {'.'.join(str(p) for p in loc) or 'row'}")
            return None
        self.offers.append(offer)
        return offer

    def result(self, note: str = "") -> SourceResult:
        return SourceResult(offers=finalize_offers(self.offers, self.skipped), raw_rows=self.raw_rows,
                            skipped=self.skipped, note=note)


def finalize_offers(offers: list[Offer], skipped: Counter) -> list[Offer]:
    """Collapse duplicates (same provider, instance, GPU, region, pricing, term: keep the
    cheapest, e.g. one row per zone) and drop spot rows above their on-demand twin."""
    best: dict[tuple, Offer] = {}
    for o in offers:
        key = tuple(getattr(o, f) for f in PRICE_KEY_FIELDS)
        cur = best.get(key)
        if cur is None:
            best[key] = o
        else:
            skipped["duplicate collapsed"] += 1
            if o.price_per_hour_usd < cur.price_per_hour_usd:
                best[key] = o
    base_price = {}
    for o in best.values():
        if o.pricing in ("on_demand", "community"):
            base_price[(o.provider, o.instance_type, o.gpu, o.gpus_per_node, o.region, o.pricing)] = o.price_per_hour_usd
    out = []
    for o in best.values():
        if o.pricing in SPOT_PAIRS:
            twins = [base_price.get((o.provider, o.instance_type, o.gpu, o.gpus_per_node, o.region, p))
                     for p in SPOT_PAIRS[o.pricing]]
            twin = next((t for t in twins if t is not None), None)
            if twin is not None and o.price_per_hour_usd > twin * (1 + 1e-9):
                skipped["spot above on-demand"] += 1
                continue
            if twin is not None and abs(o.price_per_hour_usd - twin) <= 1e-9 * twin:
                skipped["spot equals on-demand (copied column)"] += 1
                continue
        out.append(o)
    out.sort(key=lambda o: (o.gpu, o.pricing, o.price_per_hour_usd, o.instance_type, o.region))
    return out
