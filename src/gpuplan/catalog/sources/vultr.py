"""Vultr plans (`GET /v2/plans?type=vcg`, cursor pages): cloud GPU plans.

Vultr sells whole GPUs and fractional slices of one (e.g. 1/10 of an A100); the GPU count
is the plan's VRAM over the spec VRAM (the variant Vultr sells comes from
sources/data/vultr_gpus.csv, e.g. its A100 is the 80 GB PCIe card), so a slice becomes `gpus_per_node` < 1 and its
per-GPU price is comparable with whole GPUs.
"""
from __future__ import annotations

import httpx

from gpuplan.catalog.sources.base import OfferBuilder, SourceResult, resolve_offer_gpu, to_float, today_utc
from gpuplan.catalog.sources.http import base_url, expect, expect_key, fetch_json, paginate, settings_of
from gpuplan.catalog.sources.tables import keyed

DEFAULT_URL = "https://api.vultr.com"
HOURS_PER_MONTH = 730.0


class VultrSource:
    name = "vultr"
    needs_key = None

    def __init__(self, base: str | None = None):
        self.base = base_url("GPUPLAN_VULTR_URL", DEFAULT_URL, base)

    def fetch(self, client: httpx.Client) -> SourceResult:
        from gpuplan.catalog.gpus import all_gpus

        url = f"{self.base}/v2/plans"

        def page(cursor):
            params = {"type": "vcg", "per_page": 500}
            if cursor:
                params["cursor"] = cursor
            data = expect(fetch_json(client, "GET", url, params=params), dict, "answer")
            plans = expect_key(data, "plans", list, "answer")
            meta = data.get("meta") if isinstance(data.get("meta"), dict) else {}
            links = meta.get("links") if isinstance(meta.get("links"), dict) else {}
            nxt = links.get("next")
            return plans, (nxt if isinstance(nxt, str) and nxt else None)

        b = OfferBuilder(provider="vultr", source="vultr api v2 plans", as_of=today_utc(), confidence="live",
                         interconnect="ethernet")
        gpus = all_gpus()
        known = keyed("vultr_gpus.csv", "gpu_type")
        for plans in paginate(page, settings_of(client).max_pages, "Vultr plans"):
            for p in plans:
                b.raw_rows += 1
                if not isinstance(p, dict):
                    b.skip("row is not an object")
                    continue
                gtype = str(p.get("gpu_type") or "").replace("_", " ").strip()
                vram = to_float(p.get("gpu_vram_gb"))
                if not gtype or not vram or vram <= 0:
                    b.skip("plan without GPU type or VRAM")
                    continue
                raw_type = str(p.get("gpu_type") or "")
                gid = known.get(raw_type, {}).get("gpu") or resolve_offer_gpu(gtype, None, str(p.get("id") or ""))
                if gid is None:
                    b.skip(f"unknown GPU {gtype[:40]!r}")
                    continue
                count = vram / gpus[gid].memory_gb
                if count >= 0.85:
                    whole = round(count)
                    if abs(count - whole) > 0.15 * whole:
                        b.skip("VRAM does not match spec table")
                        continue
                    count = float(whole)
                hourly = to_float(p.get("hourly_cost"))
                if hourly is None and (monthly := to_float(p.get("monthly_cost"))) is not None:
                    hourly = monthly / HOURS_PER_MONTH
                ram_mb = to_float(p.get("ram"))
                locations = [loc for loc in p.get("locations") or [] if isinstance(loc, str)] or [""]
                for loc in locations:
                    b.add(instance_type=str(p.get("id") or gtype), gpu_name=gtype, gpu_id=gid, gpus_per_node=count,
                          pricing="on_demand", price_per_hour_usd=hourly, region=loc, vcpus=p.get("vcpu_count"),
                          ram_gb=ram_mb * 2**20 / 1e9 if ram_mb else None,
                          as_of_note="live" if count >= 1 else f"live; {count:.3g} of one GPU ({vram:g} GB slice)")
        return b.result()
