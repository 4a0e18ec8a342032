"""SkyPilot's public catalog (`catalogs/<version>/<cloud>/vms.csv`), one source per cloud.

Parsed by header name (column order differs per cloud and version). Handles the traps in
providers.md §3: GCP GPU VMs are a host-only row plus separate GPU-price rows, joined here
per zone (or region); `SpotPrice` empty or 0.00 means no spot; Vast rows are SkyPilot's
median buckets, kept as 'community' listings; GpuInfo memory units differ per cloud.

Dates and versions come from upstream, never from the clock:
- the schema version is the one SkyPilot declares (`CATALOG_SCHEMA_VERSION` in
  sky/skylet/constants.py, 'v8' in 2026) when the catalog is read from its public home; the
  version column of sources/data/skypilot_clouds.csv is only the fallback (and clouds frozen
  before v7, paperspace/do at v6, stay there, said so in the note);
- `as_of` is the file's own date: a date column in the CSV when there is one, else the answer's
  `Last-Modified` header (the S3 mirror sends it), else the last commit touching the file
  (GitHub commits API). With none of these the rows are dated by the fetch and marked
  'third-party' with a note saying the upstream date is unknown.
"""
from __future__ import annotations

import csv
import datetime as dt
import email.utils
import io
import os
import re

import httpx

from gpuplan.catalog.sources.base import OfferBuilder, SourceError, SourceResult, parse_gpuinfo, to_float, today_utc
from gpuplan.catalog.sources.http import base_url, fetch_bytes, fetch_json, where
from gpuplan.catalog.sources.tables import keyed
from gpuplan.units import GIB_TO_GB

DEFAULT_URL = "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/catalogs"
CONSTANTS_URL = "https://raw.githubusercontent.com/skypilot-org/skypilot/master/sky/skylet/constants.py"
COMMITS_URL = "https://api.github.com/repos/skypilot-org/skypilot-catalog/commits"
SCHEMA_RE = re.compile(r"""^CATALOG_SCHEMA_VERSION\s*=\s*['"](v\d{1,3})['"]""", re.M)
DATE_COLUMNS = ("LastUpdated", "last_updated", "UpdatedAt", "updated_at", "Date", "date", "AsOf", "as_of")
_DECLARED: dict[str, str] = {}  # constants URL -> declared schema version, per process
FROZEN_BEFORE = 7  # clouds pinned below v7 (paperspace, do) are no longer refreshed upstream
REQUIRED = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region")


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
        self.pinned = self.meta["version"]
        self.version = version or os.environ.get("GPUPLAN_SKYPILOT_VERSION") or None
        self.version_note = "version given" if self.version else ""

    @property
    def url(self) -> str:
        return f"{self.base}/{self.version or self.pinned}/{self.cloud}/vms.csv"

    def resolve_version(self, client: httpx.Client) -> str:
        """The schema directory to read: given > SkyPilot's declared version > the pinned fallback."""
        if self.version:
            return self.version
        if _version_number(self.pinned) < FROZEN_BEFORE:
            self.version, self.version_note = self.pinned, f"frozen upstream at {self.pinned}"
            return self.version
        url = os.environ.get("GPUPLAN_SKYPILOT_CONSTANTS_URL") or (CONSTANTS_URL if self.base == DEFAULT_URL else "")
        declared = _DECLARED.get(url) if url else None
        if url and declared is None:
            try:
                m = SCHEMA_RE.search(fetch_bytes(client, "GET", url).decode("utf-8", "replace"))
                declared = m[1] if m else None
            except SourceError:
                declared = None
            if declared:
                _DECLARED[url] = declared  # one read per process, not one per cloud
        if declared:
            self.version, self.version_note = declared, f"schema {declared} as SkyPilot declares it"
        else:
            self.version = self.pinned
            self.version_note = f"schema {self.pinned} (pinned fallback; SkyPilot's declared version not read)"
        return self.version

    def upstream_date(self, client: httpx.Client, headers: dict) -> tuple[dt.date | None, str]:
        """The file's own date: Last-Modified, else the last commit touching it on GitHub."""
        d = _http_date(headers.get("last-modified"))
        if d:
            return d, "Last-Modified of the upstream file"
        url = os.environ.get("GPUPLAN_SKYPILOT_COMMITS_URL") or (COMMITS_URL if self.base == DEFAULT_URL else "")
        if not url:
            return None, ""
        try:
            data = fetch_json(client, "GET", url, params={"path": f"catalogs/{self.version}/{self.cloud}/vms.csv",
                                                          "per_page": 1})
            when = data[0]["commit"]["committer"]["date"] if isinstance(data, list) and data else None
            d = _iso_date(when)
        except (SourceError, KeyError, TypeError, IndexError):
            d = None
        return (d, "last upstream commit of the file") if d else (None, "")

    def fetch(self, client: httpx.Client) -> SourceResult:
        self.resolve_version(client)
        headers: dict = {}
        header, rows = read_csv_text(fetch_bytes(client, "GET", self.url, response_headers=headers), where(self.url))
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            raise SourceError(f"{where(self.url)} lacks column(s) {', '.join(missing)}: not a SkyPilot vms.csv")
        today = today_utc()
        date_col = next((c for c in DATE_COLUMNS if c in header), None)
        file_date, how = (None, "") if date_col else self.upstream_date(client, headers)
        confidence = _aggregated() if (date_col or file_date) else "third-party"
        if date_col:
            note = f"SkyPilot catalog {self.version}; dated by its {date_col} column"
        elif file_date:
            note = f"SkyPilot catalog {self.version}; dated by the {how} ({file_date.isoformat()})"
        else:
            note = (f"SkyPilot catalog {self.version}; upstream date unknown (fetched {today.isoformat()}), "
                    f"the prices may be much older")
        if self.version_note:
            note += f"; {self.version_note}"
        b = OfferBuilder(provider=self.meta["provider"], source=f"skypilot-catalog {self.version}/{self.cloud}/vms.csv",
                         as_of=file_date or today, confidence=confidence, as_of_note=note)
        self._date_col = date_col
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
                          hint=gname, as_of=self._row_date(r))
            self._priced(b, common, to_float(r.get("Price")), to_float(r.get("SpotPrice")), on_demand, spot_type)
        if self.cloud == "gcp":
            cpu_only += self._join_gcp(b, gpu_rows, host_rows, on_demand, spot_type)
        note = f"{cpu_only} CPU-only rows ignored" if cpu_only else ""
        return b.result(note)

    @staticmethod
    def _priced(b: OfferBuilder, common: dict, price, spot, on_demand: str, spot_type: str) -> None:
        if _spot_only_on_gcp(common):
            b.skip("GCP sells this machine type as Spot / Flex-start only (no on-demand)")
        else:
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
                          interconnect=host["interconnect"], as_of=self._row_date(r))
            self._priced(b, common, host_price + gpu[0], spot, on_demand, spot_type)
        for acc, count, _region, zone in gpu_rows:
            if zone and (acc, count) not in joined:
                b.raw_rows += 1
                b.skip("attachable GPU price without a host type (n1)")
        return cpu_only


    _date_col: str | None = None

    def _row_date(self, r: dict) -> dt.date | None:
        return _iso_date(r.get(self._date_col)) if self._date_col else None


# GCP machine types Google does not sell on demand (Spot or DWS Flex-start only), as gpuhunt's gcp.py
# filters them: A4X, A4, A3 Ultra, and A3 High with fewer than 8 GPUs. SkyPilot's catalog lists an
# on-demand price for them that nobody can buy.
_GCP_SPOT_ONLY = re.compile(r"^(a4x-|a4-|a3-ultragpu-)")
_GCP_A3_HIGH = re.compile(r"^a3-highgpu-(\d+)g$")


def _spot_only_on_gcp(common: dict) -> bool:
    itype = str(common.get("instance_type") or "")
    if not itype.startswith(("a3-", "a4")):
        return False
    if _GCP_SPOT_ONLY.match(itype):
        return True
    m = _GCP_A3_HIGH.match(itype)
    return bool(m and int(m[1]) < 8)


def _aggregated() -> str:
    """'aggregated' once the records know that level (below 'primary'), else 'primary'."""
    from gpuplan.catalog.records import CONFIDENCE_RANK

    return "aggregated" if "aggregated" in CONFIDENCE_RANK else "primary"


def _version_number(v: str) -> int:
    m = re.fullmatch(r"v(\d+)", (v or "").strip())
    return int(m[1]) if m else 0


def _http_date(v: str | None) -> dt.date | None:
    if not v:
        return None
    try:
        d = email.utils.parsedate_to_datetime(v)
    except (TypeError, ValueError, IndexError):
        return None
    return d.date() if d and dt.date(2000, 1, 1) <= d.date() <= today_utc() + dt.timedelta(days=1) else None


def _iso_date(v) -> dt.date | None:
    m = re.match(r"^\s*(\d{4})-(\d{2})-(\d{2})", str(v or ""))
    if not m:
        return None
    try:
        d = dt.date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        return None
    return d if dt.date(2000, 1, 1) <= d <= today_utc() + dt.timedelta(days=1) else None


def _gib_to_gb(v) -> float | None:
    f = to_float(v)
    return round(f * GIB_TO_GB, 1) if f is not None and f >= 0 else None
