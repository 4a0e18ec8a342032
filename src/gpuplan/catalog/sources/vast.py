"""Vast.ai marketplace: live bundle search (POST /api/v0/bundles/).

Vast is queried live because SkyPilot's catalog keeps only median buckets and misses the
cheapest listings (providers.md §3.2). Each listing gives two offers, as gpuhunt prices them:
the host's on-demand price (`dph_base`) and the interruptible minimum bid (`min_bid`), both
plus the disk we would rent with it (`storage_cost` is $/GB-month).
"""
from __future__ import annotations

import httpx

from gpuplan.catalog.sources.base import OfferBuilder, SourceResult, resolve_offer_gpu_cached, to_float, today_utc
from gpuplan.catalog.sources.http import base_url, expect, expect_key, fetch_json

DEFAULT_URL = "https://console.vast.ai/api/v0"
HOURS_PER_MONTH = 730.0
MIB_TO_GB = 2**20 / 1e9


class VastSource:
    name = "vast"
    needs_key = None

    def __init__(self, base: str | None = None, limit: int = 5000, disk_gb: float = 100.0):
        self.base = base_url("GPUPLAN_VAST_URL", DEFAULT_URL, base)
        self.limit, self.disk_gb = limit, disk_gb

    def query(self) -> dict:
        return {
            "rentable": {"eq": True}, "rented": {"eq": False}, "num_gpus": {"gte": 1},
            "type": "on-demand", "order": [["dph_total", "asc"]], "limit": self.limit,
            "allocated_storage": self.disk_gb,
        }

    def fetch(self, client: httpx.Client) -> SourceResult:
        data = fetch_json(client, "POST", f"{self.base}/bundles/", json_body=self.query())
        rows = expect_key(expect(data, dict, "answer"), "offers", list, "answer")
        b = OfferBuilder(provider="vast", source="vast.ai bundles search", as_of=today_utc(), confidence="live",
                         as_of_note=f"live listing; price includes {self.disk_gb:g} GB disk")
        for row in rows:
            b.raw_rows += 1
            if not isinstance(row, dict):
                b.skip("row is not an object")
                continue
            if row.get("rentable") is False or row.get("rented") is True:
                b.skip("listing not rentable")
                continue
            n = to_float(row.get("num_gpus"))
            name = str(row.get("gpu_name") or "")
            mem_mib = to_float(row.get("gpu_ram"))
            mem_gb = mem_mib * MIB_TO_GB if mem_mib and mem_mib > 0 else None
            storage = to_float(row.get("storage_cost")) or 0.0
            disk_usd_h = max(storage, 0.0) * self.disk_gb / HOURS_PER_MONTH
            machine = row.get("machine_id", row.get("id", "?"))
            itype = f"{int(n) if n and n == int(n) else n}x {name} m{machine}"
            ram_mib = to_float(row.get("cpu_ram"))
            # resolve once per (name, memory) rather than per listing: the machine id is no hint
            gid = resolve_offer_gpu_cached(name, round(mem_gb, 1) if mem_gb else None, name)
            if gid is None:
                b.skip(f"unknown GPU {name[:40]!r}")
                continue
            common = dict(instance_type=itype, gpu_name=name, gpu_id=gid, gpus_per_node=n, mem_gb_per_gpu=mem_gb,
                          region=str(row.get("geolocation") or ""), hint=name,
                          vcpus=row.get("cpu_cores_effective", row.get("cpu_cores")),
                          ram_gb=ram_mib * MIB_TO_GB if ram_mib else None)
            base_price = to_float(row.get("dph_base"))
            offer = b.add(pricing="community", price_per_hour_usd=None if base_price is None else base_price + disk_usd_h,
                          **common)
            if offer is None:
                continue  # a listing whose base row fails is not trusted for its bid either
            bid = to_float(row.get("min_bid"))
            if bid is not None and bid > 0:
                b.add(pricing="interruptible", price_per_hour_usd=bid + disk_usd_h, **common)
        return b.result()
