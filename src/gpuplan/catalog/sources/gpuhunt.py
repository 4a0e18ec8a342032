"""dstack's gpuhunt offline catalog (v3): one CSV per provider inside `catalog.zip`.

Layout: `<base>/<provider>/version` names the newest build, `<base>/<provider>/<version>/catalog.zip`
holds `<provider>.csv` with columns instance_name, location, price, cpu, memory, gpu_count,
gpu_name, gpu_memory, spot, disk_size, gpu_vendor... Spot and on-demand are separate rows.
The archive is size-checked before and after decompression (a zip bomb is refused).
"""
from __future__ import annotations

import datetime as dt
import io
import re
import zipfile

import httpx

from gpuplan.catalog.sources.base import OfferBuilder, SourceError, SourceResult, to_float, today_utc
from gpuplan.catalog.sources.http import base_url, fetch_bytes, settings_of, where
from gpuplan.catalog.sources.skypilot import read_csv_text
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
                         confidence="primary", as_of_note=f"gpuhunt build {version}")
        cpu_only = 0
        for r in rows:
            count = to_float(r.get("gpu_count"))
            if not (r.get("gpu_name") or "").strip() and not count:
                cpu_only += 1
                continue
            b.raw_rows += 1
            spot = (r.get("spot") or "").strip().lower() in ("true", "1", "yes")
            b.add(instance_type=(r.get("instance_name") or "").strip(), gpu_name=(r.get("gpu_name") or "").strip(),
                  gpus_per_node=count, pricing="spot" if spot else "on_demand", price_per_hour_usd=r.get("price"),
                  region=(r.get("location") or "").strip(), vcpus=r.get("cpu"), ram_gb=r.get("memory"),
                  mem_gb_per_gpu=to_float(r.get("gpu_memory")), hint=r.get("instance_name") or "")
        return b.result(f"{cpu_only} CPU-only rows ignored" if cpu_only else "")
