"""SkyPilot's public catalog (`catalogs/<version>/<cloud>/vms.csv`), one source per cloud.

Parsed by header name (column order differs per cloud and version). Handles the traps in
providers.md §3: GCP GPU VMs are a host-only row plus separate GPU-price rows, joined here
per zone (or region); `SpotPrice` empty or 0.00 means no spot; Vast rows are SkyPilot's
median buckets, kept as 'community' listings; GpuInfo memory units differ per cloud.
"""
from __future__ import annotations

import csv
import io

import httpx

from gpuplan.catalog.sources.base import OfferBuilder, SourceError, SourceResult, parse_gpuinfo, to_float, today_utc
from gpuplan.catalog.sources.http import base_url, fetch_bytes, where
from gpuplan.catalog.sources.tables import keyed

DEFAULT_URL = "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/catalogs"
REQUIRED = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region")
GIB_TO_GB = 2**30 / 1e9


def clouds() -> dict[str, dict[str, str]]:
    return keyed("skypilot_clouds.csv", "cloud")


def read_csv_text(body: bytes, what: str) -> tuple[list[str], list[dict[str, str]]]:
    """Header and rows of a CSV answer (BOM and CRLF tolerated); SourceError when it is not CSV."""
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SourceError(f"{what} is not UTF-8 text") from None
    if not text.strip():
        raise SourceError(f"empty answer from {what}")
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        header = [h.strip() for h in (reader.fieldnames or [])]
        reader.fieldnames = header
        rows = list(reader)
    except csv.Error as e:
        raise SourceError(f"{what} is not valid CSV ({e})") from None
    return header, rows


def memory_gb_per_gpu(unit: str, mem_mib: float | None, count: float) -> float | None:
    if not mem_mib:
        return None
    if unit == "gb_per_gpu":
        return mem_mib * GIB_TO_GB  # RunPod writes GiB into a field labelled MiB
    if unit == "mib_total":
        return mem_mib * 2**20 / 1e9 / count
    if unit == "mib_per_gpu":
        return mem_mib * 2**20 / 1e9
    return None  # 'missing': Nebius reports 0


class SkyPilotSource:
    needs_key = None

    def __init__(self, cloud: str, base: str | None = None, version: str | None = None):
        table = clouds()
        if cloud not in table:
            from gpuplan.errors import UnknownNameError
            raise UnknownNameError("SkyPilot cloud", cloud, list(table))
        self.cloud, self.meta = cloud, table[cloud]
        self.name = f"skypilot:{cloud}"
        self.base = base_url("GPUPLAN_SKYPILOT_URL", DEFAULT_URL, base)
        self.version = version or self.meta["version"]

    @property
    def url(self) -> str:
        return f"{self.base}/{self.version}/{self.cloud}/vms.csv"

    def fetch(self, client: httpx.Client) -> SourceResult:
        header, rows = read_csv_text(fetch_bytes(client, "GET", self.url), where(self.url))
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            raise SourceError(f"{where(self.url)} lacks column(s) {', '.join(missing)}: not a SkyPilot vms.csv")
        today = today_utc()
        b = OfferBuilder(provider=self.meta["provider"], source=f"skypilot-catalog {self.version}/{self.cloud}/vms.csv",
                         as_of=today, confidence="primary",
                         as_of_note=f"SkyPilot catalog fetched {today.isoformat()}; upstream refresh cadence varies")
        marketplace = self.meta["marketplace"] == "1"
        on_demand, spot_type = ("community", "interruptible") if marketplace else ("on_demand", "spot")
        cpu_only = 0
        gpu_rows, host_rows = self._split_gcp(rows) if self.cloud == "gcp" else ({}, [])
        for r in rows:
            acc = (r.get("AcceleratorName") or "").strip()
            itype = (r.get("InstanceType") or "").strip()
            if self.cloud == "gcp" and (not itype or not acc):
                continue  # GCP host and GPU-price rows are joined below
            if not acc:
                cpu_only += 1
                continue
            b.raw_rows += 1
            count = to_float(r.get("AcceleratorCount"))
            gname, mem_mib = parse_gpuinfo(r.get("GpuInfo"))
            mem = memory_gb_per_gpu(self.meta["gpuinfo_memory"], mem_mib, count or 1.0)
            common = dict(instance_type=itype, gpu_name=acc, gpus_per_node=count, region=(r.get("Region") or "").strip(),
                          vcpus=r.get("vCPUs"), ram_gb=_gib_to_gb(r.get("MemoryGiB")), mem_gb_per_gpu=mem,
                          hint=gname)
            self._priced(b, common, to_float(r.get("Price")), to_float(r.get("SpotPrice")), on_demand, spot_type)
        if self.cloud == "gcp":
            cpu_only += self._join_gcp(b, gpu_rows, host_rows, on_demand, spot_type)
        note = f"{cpu_only} CPU-only rows ignored" if cpu_only else ""
        return b.result(note)

    @staticmethod
    def _priced(b: OfferBuilder, common: dict, price, spot, on_demand: str, spot_type: str) -> None:
        b.add(pricing=on_demand, price_per_hour_usd=price, **common)
        if spot is not None and spot > 0:  # empty or 0.00 = no spot data
            b.add(pricing=spot_type, price_per_hour_usd=spot, **common)

    @staticmethod
    def _split_gcp(rows):
        """GPU-price rows keyed by (accelerator, count, region, zone) and by region; host rows."""
        hosts = keyed("gcp_hosts.csv", "instance_type")
        gpu_rows: dict[tuple, tuple] = {}
        host_rows = []
        for r in rows:
            acc, itype = (r.get("AcceleratorName") or "").strip(), (r.get("InstanceType") or "").strip()
            region, zone = (r.get("Region") or "").strip(), (r.get("AvailabilityZone") or "").strip()
            if not itype and acc:
                count = to_float(r.get("AcceleratorCount"))
                price, spot = to_float(r.get("Price")), to_float(r.get("SpotPrice"))
                for key in ((acc, count, region, zone), (acc, count, region, "")):
                    gpu_rows.setdefault(key, (price, spot))
            elif itype and not acc:
                host_rows.append((r, hosts.get(itype)))
        return gpu_rows, host_rows

    def _join_gcp(self, b: OfferBuilder, gpu_rows, host_rows, on_demand, spot_type) -> int:
        cpu_only = 0
        joined: set[tuple] = set()
        for r, host in host_rows:
            if host is None:
                cpu_only += 1
                continue
            b.raw_rows += 1
            count = float(host["accelerator_count"])
            region, zone = (r.get("Region") or "").strip(), (r.get("AvailabilityZone") or "").strip()
            gpu = gpu_rows.get((host["accelerator_name"], count, region, zone)) or \
                gpu_rows.get((host["accelerator_name"], count, region, ""))
            if gpu is None:
                b.skip("GCP host row without a GPU price row")
                continue
            joined.add((host["accelerator_name"], count))
            host_price, host_spot = to_float(r.get("Price")), to_float(r.get("SpotPrice"))
            if host_price is None or gpu[0] is None:
                b.skip("price missing or not a number")
                continue
            spot = host_spot + gpu[1] if host_spot and gpu[1] else None
            common = dict(instance_type=r["InstanceType"].strip(), gpu_name=host["accelerator_name"], gpus_per_node=count,
                          region=region, vcpus=r.get("vCPUs"), ram_gb=_gib_to_gb(r.get("MemoryGiB")),
                          interconnect=host["interconnect"])
            self._priced(b, common, host_price + gpu[0], spot, on_demand, spot_type)
        for acc, count, _region, zone in gpu_rows:
            if zone and (acc, count) not in joined:
                b.raw_rows += 1
                b.skip("attachable GPU price without a host type (n1)")
        return cpu_only


def _gib_to_gb(v) -> float | None:
    f = to_float(v)
    return round(f * GIB_TO_GB, 1) if f is not None and f >= 0 else None
