"""Vultr plans, cursor pages: cloud GPU plans (`GET /v2/plans?type=vcg`, key `plans`) and bare-metal
servers (`GET /v2/plans-metal`, key `plans_metal`), where the whole 8x H100 / A100 / MI300X /
L40S servers and GH200 are sold. A metal plan has no gpu_type field (older answers) or a
`gpu_count` / `gpu_vram_gb` pair (newer ones); its GPU comes from the plan id, as gpuhunt reads it:
`vbm-112c-2048gb-8-h100-gpu` is 8x H100, `vbm-72c-480gb-gh200-gpu` one GH200. `hourly_cost_preemptible`
(when present and lower) is a spot offer.

Vultr sells whole GPUs and fractional slices of one (e.g. 1/10 of an A100); the GPU count
is the plan's VRAM over the spec VRAM (the variant Vultr sells comes from
sources/data/vultr_gpus.csv, e.g. its A100 is the 80 GB PCIe card), so a slice becomes `gpus_per_node` < 1 and its
per-GPU price is comparable with whole GPUs.
"""
from __future__ import annotations

import re

import httpx

from gpuplan.catalog.sources.base import OfferBuilder, SourceResult, resolve_offer_gpu, to_float, today_utc
from gpuplan.catalog.sources.http import base_url, expect, expect_key, fetch_json, paginate, settings_of
from gpuplan.catalog.sources.tables import keyed
from gpuplan.units import HOURS_PER_MONTH

DEFAULT_URL = "https://api.vultr.com"
# bare-metal plan id -> GPU: vbm-<cpus>c-<ram>gb[-<count>]-<gpu>-gpu (gpuhunt's BARE_METAL_GPU_DETAILS)
METAL_ID = re.compile(r"^vbm-\d+c-\d+gb-(?:(\d+)-)?([a-z0-9]+)-gpu$", re.I)
METAL_GPUS = {"h100": "H100-SXM", "h200": "H200-SXM", "b200": "B200", "a100": "A100-80GB-SXM", "l40": "L40S",
              "l40s": "L40S", "mi300x": "MI300X", "mi325x": "MI325X", "mi355x": "MI355X", "gh200": "GH200"}


class VultrSource:
    name = "vultr"
    needs_key = None

    def __init__(self, base: str | None = None):
        self.base = base_url("GPUPLAN_VULTR_URL", DEFAULT_URL, base)

    def fetch(self, client: httpx.Client) -> SourceResult:
        from gpuplan.catalog.gpus import all_gpus

        def pager(path: str, key: str, extra: dict):
            url = f"{self.base}{path}"

            def page(cursor):
                params = {**extra, "per_page": 500}
                if cursor:
                    params["cursor"] = cursor
                data = expect(fetch_json(client, "GET", url, params=params), dict, "answer")
                plans = expect_key(data, key, list, "answer")
                meta = data.get("meta") if isinstance(data.get("meta"), dict) else {}
                links = meta.get("links") if isinstance(meta.get("links"), dict) else {}
                nxt = links.get("next")
                return plans, (nxt if isinstance(nxt, str) and nxt else None)
            return page

        b = OfferBuilder(provider="vultr", source="vultr api v2 plans", as_of=today_utc(), confidence="live",
                         interconnect="ethernet")
        for plans in paginate(pager("/v2/plans-metal", "plans_metal", {}), settings_of(client).max_pages,
                              "Vultr bare-metal plans"):
            for p in plans:
                b.raw_rows += 1
                self._metal(b, p)
        page = pager("/v2/plans", "plans", {"type": "vcg"})
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
                spot = to_float(p.get("hourly_cost_preemptible"))
                for loc in locations:
                    common = dict(instance_type=str(p.get("id") or gtype), gpu_name=gtype, gpu_id=gid,
                                  gpus_per_node=count, region=loc, vcpus=p.get("vcpu_count"),
                                  ram_gb=ram_mb * 2**20 / 1e9 if ram_mb else None,
                                  as_of_note="live" if count >= 1 else f"live; {count:.3g} of one GPU ({vram:g} GB slice)")
                    b.add(pricing="on_demand", price_per_hour_usd=hourly, **common)
                    if spot and spot > 0:
                        b.add(pricing="spot", price_per_hour_usd=spot, **common)
        return b.result()

    @staticmethod
    def _metal(b: OfferBuilder, p) -> None:
        """One bare-metal plan: GPU servers only (CPU-only metal is counted and skipped)."""
        if not isinstance(p, dict):
            b.skip("row is not an object")
            return
        pid = str(p.get("id") or "")
        m = METAL_ID.match(pid)
        if not m:
            b.skip("bare-metal plan without GPUs")
            return
        gid = METAL_GPUS.get(m[2].lower())
        if gid is None:
            b.skip(f"unknown GPU {m[2][:40]!r}")
            return
        count = to_float(p.get("gpu_count")) or (float(m[1]) if m[1] else 1.0)
        vram = to_float(p.get("gpu_vram_gb"))
        hourly = to_float(p.get("hourly_cost"))
        if hourly is None and (monthly := to_float(p.get("monthly_cost"))) is not None:
            hourly = monthly / HOURS_PER_MONTH
        spot = to_float(p.get("hourly_cost_preemptible"))
        ram_mb = to_float(p.get("ram"))
        locations = [loc for loc in p.get("locations") or [] if isinstance(loc, str) and loc] or [""]
        for loc in locations:
            common = dict(instance_type=pid, gpu_name=m[2], gpu_id=gid, gpus_per_node=count, region=loc,
                          vcpus=p.get("cpu_threads") or p.get("cpu_count"),
                          ram_gb=ram_mb * 2**20 / 1e9 if ram_mb else None,
                          mem_gb_per_gpu=vram / count if vram and count else None,
                          as_of_note="live; bare-metal server")
            b.add(pricing="on_demand", price_per_hour_usd=hourly, **common)
            if spot and spot > 0:
                b.add(pricing="spot", price_per_hour_usd=spot, **common)
