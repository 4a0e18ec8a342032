"""Vast.ai marketplace: live bundle search (POST /api/v0/bundles/).

Vast is queried live because SkyPilot's catalog keeps only median buckets and misses the
cheapest listings (providers.md §3.2). Each listing gives two offers, as gpuhunt prices them:
the host's on-demand price (`dph_base`) and the interruptible minimum bid (`min_bid`), both
plus the disk we would rent with it (`storage_cost` is $/GB-month).

Verified hosts only (`verified: {eq: true}`, `external: {eq: false}`), as the Vast CLI and so
SkyPilot search by default. The search is sorted cheapest-first and capped at `limit`, so one
query for everything would cut exactly the expensive multi-GPU H100 / H200 / B200 listings:
one query per GPU family (`gpu_name in [...]`), then one for every other GPU
(`gpu_name notin [...]`). A query that comes back full (`limit` rows) is recorded in the
snapshot note as truncated.
"""
from __future__ import annotations

import json

import httpx

from gpuplan.catalog.sources.base import OfferBuilder, SourceResult, resolve_offer_gpu_cached, to_float, today_utc
from gpuplan.catalog.sources.http import base_url, expect, expect_key, fetch_json
from gpuplan.units import HOURS_PER_MONTH, MIB_TO_GB

DEFAULT_URL = "https://console.vast.ai/api/v0"


# Vast's gpu_name spellings, grouped so no family's query can crowd out another's listings.
GPU_FAMILIES: dict[str, tuple[str, ...]] = {
    "B200": ("B200", "B300", "GB200"),
    "H200": ("H200", "H200 NVL"),
    "H100": ("H100 SXM", "H100 PCIE", "H100 NVL", "GH200"),
    "A100": ("A100 SXM4", "A100 PCIE", "A100X", "A800 PCIE"),
    "MI300": ("MI300X", "MI325X", "MI355X"),
    "L40": ("L40S", "L40", "L4"),
    "RTX 6000": ("RTX 6000Ada", "RTX A6000", "A40", "RTX PRO 6000 WS", "RTX PRO 6000 S"),
    "RTX 5090": ("RTX 5090", "RTX 5080"),
    "RTX 4090": ("RTX 4090", "RTX 4080", "RTX 4080S"),
    "RTX 3090": ("RTX 3090", "RTX 3090 Ti", "RTX 3080"),
}


class VastSource:
    name = "vast"
    needs_key = None

    def __init__(self, base: str | None = None, limit: int = 5000, disk_gb: float = 100.0):
        self.base = base_url("GPUPLAN_VAST_URL", DEFAULT_URL, base)
        self.limit, self.disk_gb = limit, disk_gb

    def query(self, gpu_names: tuple[str, ...] | None = None, exclude: tuple[str, ...] = ()) -> dict:
        q = {
            "verified": {"eq": True}, "external": {"eq": False},
            "rentable": {"eq": True}, "rented": {"eq": False}, "num_gpus": {"gte": 1},
            "type": "on-demand", "order": [["dph_total", "asc"]], "limit": self.limit,
            "allocated_storage": self.disk_gb,
        }
        if gpu_names:
            q["gpu_name"] = {"in": list(gpu_names)}
        elif exclude:
            q["gpu_name"] = {"notin": list(exclude)}
        return q

    def queries(self) -> list[tuple[str, dict]]:
        """(label, body) for each family and one for the rest."""
        everything = tuple(n for names in GPU_FAMILIES.values() for n in names)
        return [*((fam, self.query(names)) for fam, names in GPU_FAMILIES.items()),
                ("other GPUs", self.query(exclude=everything))]

    def fetch(self, client: httpx.Client) -> SourceResult:
        rows, seen, truncated = [], set(), []
        for label, body in self.queries():
            data = fetch_json(client, "POST", f"{self.base}/bundles/", json_body=body)
            got = expect_key(expect(data, dict, "answer"), "offers", list, "answer")
            if len(got) >= self.limit:
                truncated.append(label)
            for row in got:  # a listing answered by two queries counts once
                key = ("id", row.get("id")) if isinstance(row, dict) and row.get("id") is not None else \
                    json.dumps(row, sort_keys=True, default=str)
                if key not in seen:
                    seen.add(key)
                    rows.append(row)
        b = OfferBuilder(provider="vast", source="vast.ai bundles search", as_of=today_utc(), confidence="live",
                         as_of_note=f"live listing, verified hosts; price includes {self.disk_gb:g} GB disk")
        for row in rows:
            b.raw_rows += 1
            if not isinstance(row, dict):
                b.skip("row is not an object")
                continue
            if row.get("rentable") is False or row.get("rented") is True:
                b.skip("listing not rentable")
                continue
            if row.get("verified") is False:
                b.skip("unverified host")
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
        note = ""
        if truncated:
            note = (f"truncated: the {', '.join(truncated)} search returned the {self.limit}-listing cap "
                    f"(cheapest first); pricier listings of {'that family' if len(truncated) == 1 else 'those'} missing")
        return b.result(note)
