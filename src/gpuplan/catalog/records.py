"""The catalog's records: a GPU's specs, a provider's attributes, one priced offer.

Every price carries when it was seen (`as_of`), where (`source`) and how sure we are
(`confidence`), because GPU prices move 30% a year and a stale or second-hand price
must never pass for a fresh one.
"""
from __future__ import annotations

import datetime as dt
import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gpuplan.errors import UsageError
from gpuplan.units import gpu_memory_bytes

ProviderKind = Literal["hyperscaler", "neocloud", "marketplace", "decentralized"]
PricingType = Literal["on_demand", "spot", "reserved", "community", "interruptible"]
Confidence = Literal["primary", "aggregated", "third-party", "unverified", "user", "live"]
Precision = Literal["fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4", "int4"]

PRICING_TYPES: tuple[str, ...] = ("on_demand", "spot", "reserved", "community", "interruptible")
PROVIDER_KINDS: tuple[str, ...] = ("hyperscaler", "neocloud", "marketplace", "decentralized")
# 'aggregated': a feed compiling providers' own APIs (SkyPilot catalogs, gpuhunt, price compilations):
# below the provider's own page or API ('primary'), above a third party's quote.
CONFIDENCE_RANK = {"live": 5, "user": 5, "primary": 4, "aggregated": 3, "third-party": 2, "unverified": 1}
# What `--min-confidence` accepts, highest first.
MIN_CONFIDENCE_LEVELS: tuple[str, ...] = ("primary", "aggregated", "third-party", "unverified")
MIN_CONFIDENCE_HELP = "primary, aggregated, third-party or unverified (highest first)."
# Pricing types whose capacity can be taken back mid-run.
PREEMPTIBLE_PRICING = frozenset({"spot", "interruptible"})

STALE_AFTER_DAYS = 180


class Gpu(BaseModel):
    """One accelerator model. All FLOP/s figures are dense (no 2:4 sparsity)."""

    model_config = ConfigDict(frozen=True)

    id: str
    vendor: str
    memory_gb: float = Field(gt=0)
    mem_bw_tbps: float = Field(gt=0)
    bf16_tflops: float = Field(gt=0, description="dense BF16 (FP16 tensor where no BF16)")
    fp8_tflops: float | None = None
    fp4_tflops: float | None = None
    tf32_tflops: float | None = None
    nvlink_gbps: float = Field(ge=0, description="scale-up bandwidth, bidirectional GB/s; 0 = PCIe only")
    tdp_w: float | None = None
    year: int | None = None
    form_factor: str = ""
    source: str = ""

    @property
    def memory_bytes(self) -> float:
        """Device memory in bytes: `memory_gb` is read as GiB (gpuplan.units explains why)."""
        return gpu_memory_bytes(self.memory_gb)

    @property
    def mem_bw_bytes_per_s(self) -> float:
        return self.mem_bw_tbps * 1e12

    @property
    def is_consumer(self) -> bool:
        return "consumer" in self.form_factor.lower()

    def supports(self, precision: str) -> bool:
        try:
            self.peak_tflops(precision)
        except UsageError:
            return False
        return True

    def peak_tflops(self, precision: str) -> float:
        """Dense peak for a compute precision; int8/int4 weights run on the bf16/fp8 units."""
        p = precision.lower()
        if p in ("bf16", "fp16", "int4", "int8_weights"):
            return self.bf16_tflops
        if p in ("fp8", "int8"):
            if self.fp8_tflops:
                return self.fp8_tflops
            if p == "int8":
                return self.bf16_tflops
        elif p == "fp4":
            if self.fp4_tflops:
                return self.fp4_tflops
        elif p in ("tf32", "fp32"):
            return self.tf32_tflops or self.bf16_tflops / 2
        else:
            raise UsageError(f"unknown precision {precision!r}; use bf16, fp16, fp8 or fp4")
        raise UsageError(f"{self.id} has no {p} tensor cores; use bf16" + ("" if p == "fp8" else " or fp8"))


class Provider(BaseModel):
    """A cloud and what it offers beyond price. Unknown attributes stay None, never guessed."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    kind: ProviderKind
    kind_unverified: bool = False
    billing_granularity: str | None = None
    billing_increment_s: float | None = Field(default=None, gt=0)
    minimum_billing_s: float | None = Field(default=None, ge=0)
    kubernetes: str | None = None
    bare_metal: str | None = None
    infiniband: str | None = None
    has_infiniband: bool | None = None
    egress_fee: str | None = None
    egress_usd_per_gb: float | None = Field(default=None, ge=0)
    spot: str | None = None
    has_spot: bool | None = None
    sla: str | None = None
    regions: str | None = None
    geographies: list[str] = Field(default_factory=list)
    best_for: list[str] = Field(default_factory=list)
    notes: str = ""
    source: str = ""
    aliases: list[str] = Field(default_factory=list)
    # Why the catalog carries no price for this provider (e.g. 'contact sales only'); None = it publishes one.
    no_public_price: str | None = None


def parse_as_of(text: str) -> dt.date:
    """A dated label ('2026-05', '2025 (undated snapshot)', '2024-Q4') to a date at the middle
    of the period it names: a year alone could be any month of it."""
    import re

    t = text.strip()
    m = re.match(r"^(\d{4})-(\d{2})-(\d{2})", t)
    if m:
        return dt.date(int(m[1]), int(m[2]), int(m[3]))
    m = re.match(r"^(\d{4})-(\d{2})(?!\d)", t)
    if m and 1 <= int(m[2]) <= 12:
        return dt.date(int(m[1]), int(m[2]), 15)
    m = re.match(r"^(\d{4})-Q([1-4])", t)
    if m:
        return dt.date(int(m[1]), 3 * int(m[2]) - 1, 15)
    m = re.match(r"^(\d{4})", t)
    if m:
        year = int(m[1])
        if re.match(r"^\d{4}-\d{2}\b", t):  # '2025-26' spans two years: its middle
            return dt.date(year, 12, 31)
        return dt.date(year, 7, 1)
    raise ValueError(f"cannot read a date from {text!r}")


class Offer(BaseModel):
    """One way to rent GPUs: a provider's instance type, in a region, under one pricing type."""

    model_config = ConfigDict(frozen=True)

    provider: str
    instance_type: str
    gpu: str
    gpus_per_node: float = Field(gt=0)
    region: str = ""
    pricing: PricingType
    price_per_hour_usd: float = Field(gt=0)
    price_per_gpu_hour_usd: float = Field(gt=0)
    vcpus: float | None = Field(default=None, ge=0)
    ram_gb: float | None = Field(default=None, ge=0)
    interconnect: str | None = None
    commitment_term_h: float | None = Field(default=None, gt=0)
    as_of: dt.date
    as_of_note: str = ""
    source: str
    confidence: Confidence
    # Deployability (None = unknown, never guessed): can several nodes be rented as one cluster on a
    # GPU fabric, that fabric's bandwidth per node, and the most nodes one can rent together.
    cluster: bool | None = None
    fabric_gbps_per_node: float | None = Field(default=None, gt=0)
    max_nodes: int | None = Field(default=None, ge=1)

    @field_validator("price_per_hour_usd", "price_per_gpu_hour_usd", "gpus_per_node")
    @classmethod
    def _finite(cls, v: float) -> float:
        if not math.isfinite(v):
            raise ValueError("must be a finite number")
        return v

    @model_validator(mode="after")
    def _per_gpu_consistent(self) -> "Offer":
        expected = self.price_per_hour_usd / self.gpus_per_node
        if abs(expected - self.price_per_gpu_hour_usd) > 1e-6 * max(1.0, expected):
            raise ValueError(
                f"price_per_gpu_hour_usd {self.price_per_gpu_hour_usd} != "
                f"price_per_hour_usd / gpus_per_node = {expected:.6g}"
            )
        return self

    @property
    def preemptible(self) -> bool:
        return self.pricing in PREEMPTIBLE_PRICING

    def age_days(self, today: dt.date | None = None) -> int:
        return ((today or dt.date.today()) - self.as_of).days

    def is_stale(self, today: dt.date | None = None, max_age_days: int = STALE_AFTER_DAYS) -> bool:
        return self.age_days(today) > max_age_days
