"""dstack's gpuhunt offline catalog (v3): one CSV per provider inside `catalog.zip`.

Layout: `<base>/<provider>/version` names the newest build, `<base>/<provider>/<version>/catalog.zip`
holds `<provider>.csv` with columns instance_name, location, price, cpu, memory, gpu_count,
gpu_name, gpu_memory, spot, disk_size, gpu_vendor... Spot and on-demand are separate rows.
The archive is size-checked before and after decompression (a zip bomb is refused).

The `flags` column carries semantics (gpuhunt sets them; dstack's SUPPORTED_GPUHUNT_FLAGS):
- `gcp-dws-calendar-mode`: a Dynamic Workload Scheduler calendar-mode reservation price (fixed
  1-90 day blocks, cheaper than on-demand), with `spot=False`. It is not an on-demand price and
  must never replace one: such rows are skipped and counted.
- `runpod-cluster`: an Instant Cluster price; kept under its own instance type
  ('<id> (instant cluster)') so it never collapses into the single-pod row.
- `oci-spot`: a spot price gpuhunt derives (50% of on-demand); kept as spot, noted as derived.
- anything else (`lambda-arm`, `gcp-a4`, `gcp-g4`, ...): informational, the row is kept.
RunPod rows repeat one instance name for 1x, 2x, ... 8x pods: the GPU count is part of the
offer's instance type so each size is its own offer.
"""
from __future__ import annotations

import datetime as dt
import io
import re
import zipfile

import httpx

from gpuplan.catalog.sources.base import OfferBuilder, SourceError, SourceResult, to_float, today_utc
from gpuplan.catalog.sources.http import base_url, fetch_bytes, settings_of, where
from gpuplan.catalog.sources.skypilot import _aggregated, read_csv_text
from gpuplan.catalog.sources.tables import keyed

DEFAULT_URL = "https://dstack-gpu-pricing.s3.eu-west-1.amazonaws.com/v3"
REQUIRED = ("instance_name", "location", "price", "gpu_count", "gpu_name", "spot")
VERSION_RE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


def providers() -> dict[str, dict[str, str]]:
    return keyed("gpuhunt_providers.csv", "slug")


def version_date(version: str) -> dt.date | None:
    m = re.match(r"^(\d{4})(\d{2})(\d{2})", version)
    if not m:
        return None
    try:
        return dt.date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        return None


def parse_flags(v) -> frozenset[str]:
    """gpuhunt's flags cell: a list written as text (space-, comma-, semicolon- or pipe-separated,
    possibly with the brackets and quotes of a Python/JSON list)."""
    text = str(v or "")
    return frozenset(t.lower() for t in re.split(r"[\s,;|\[\]'\"]+", text) if t)


def _count_text(count: float) -> str:
    return str(int(count)) if count == int(count) else f"{count:g}"


class GpuhuntSource:
    needs_key = None

    def __init__(self, slug: str, base: str | None = None):
        table = providers()
        if slug not in table:
            from gpuplan.errors import UnknownNameError
            raise UnknownNameError("gpuhunt provider", slug, list(table))
        self.slug, self.provider = slug, table[slug]["provider"]
        self.name = f"gpuhunt:{slug}"
        self.base = base_url("GPUPLAN_GPUHUNT_URL", DEFAULT_URL, base)

    def fetch(self, client: httpx.Client) -> SourceResult:
        vurl = f"{self.base}/{self.slug}/version"
        version = fetch_bytes(client, "GET", vurl).decode("utf-8", "replace").strip()
        if not VERSION_RE.match(version):
            raise SourceError(f"{where(vurl)} did not answer a version name")
        zurl = f"{self.base}/{self.slug}/{version}/catalog.zip"
        body = fetch_bytes(client, "GET", zurl)
        cap = settings_of(client).max_bytes
        try:
            with zipfile.ZipFile(io.BytesIO(body)) as zf:
                info = zf.getinfo(f"{self.slug}.csv")
                if info.file_size > cap:
                    raise SourceError(f"{where(zurl)} unpacks to {info.file_size / 2**20:.0f} MiB, over the cap; refused")
                with zf.open(info) as f:
                    csv_bytes = f.read(cap + 1)
        except KeyError:
            raise SourceError(f"{where(zurl)} has no {self.slug}.csv") from None
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError) as e:
            raise SourceError(f"{where(zurl)} is not a readable zip ({type(e).__name__})") from None
        if len(csv_bytes) > cap:
            raise SourceError(f"{where(zurl)} unpacks past the size cap; refused")
        header, rows = read_csv_text(csv_bytes, where(zurl))
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            raise SourceError(f"{where(zurl)} lacks column(s) {', '.join(missing)}: not a gpuhunt catalog")
        as_of = version_date(version) or today_utc()
        b = OfferBuilder(provider=self.provider, source=f"gpuhunt catalog v3/{self.slug}/{version}", as_of=as_of,
                         confidence=_aggregated(), as_of_note=f"gpuhunt build {version}")
        cpu_only, multi_count = 0, self._multi_count_names(rows)
        for r in rows:
            count = to_float(r.get("gpu_count"))
            if not (r.get("gpu_name") or "").strip() and not count:
                cpu_only += 1
                continue
            b.raw_rows += 1
            spot = (r.get("spot") or "").strip().lower() in ("true", "1", "yes")
            flags = parse_flags(r.get("flags"))
            if "gcp-dws-calendar-mode" in flags:
                b.skip("DWS calendar-mode reservation (not on-demand)")
                continue
            name = (r.get("instance_name") or "").strip()
            itype, note = name, None
            if count and name in multi_count:
                itype = f"{_count_text(count)}x {name}"
            if "runpod-cluster" in flags:
                itype, note = f"{itype} (instant cluster)", f"gpuhunt build {version}; Instant Cluster price"
            if "oci-spot" in flags:
                note = f"gpuhunt build {version}; spot price derived by gpuhunt (50% of on-demand)"
            b.add(instance_type=itype, gpu_name=(r.get("gpu_name") or "").strip(),
                  gpus_per_node=count, pricing="spot" if spot else "on_demand", price_per_hour_usd=r.get("price"),
                  region=(r.get("location") or "").strip(), vcpus=r.get("cpu"), ram_gb=r.get("memory"),
                  mem_gb_per_gpu=to_float(r.get("gpu_memory")), hint=name, as_of_note=note)
        return b.result(f"{cpu_only} CPU-only rows ignored" if cpu_only else "")

    @staticmethod
    def _multi_count_names(rows) -> set[str]:
        """Instance names that appear with more than one GPU count (RunPod: the GPU id for 1x..8x)."""
        counts: dict[str, set] = {}
        for r in rows:
            counts.setdefault((r.get("instance_name") or "").strip(), set()).add(to_float(r.get("gpu_count")))
        return {n for n, c in counts.items() if len(c) > 1}
