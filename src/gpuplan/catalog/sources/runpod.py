"""RunPod GPU types over GraphQL (`gpuTypes`): one offer per GPU type and cloud tier.

Prices are per GPU-hour; Secure Cloud is on-demand, Community Cloud is 'community', and
each tier's spot price is kept only when it is below the tier's on-demand price
(SkyPilot once billed RunPod spot above on-demand, providers.md §3.5).

Stock: each type's `lowestPrice(input: {gpuCount: 1}) { stockStatus }` (the field gpuhunt reads).
RunPod answers null when no 1-GPU pod of that type can be rented anywhere now; gpuhunt drops such
types and so do we ('out of stock at refresh', counted). A status ('High', 'Medium', 'Low') is
kept in the offer's note. An answer without `lowestPrice` (an older schema) keeps every type,
its stock unknown.
"""
from __future__ import annotations

import httpx

from gpuplan.catalog.sources.base import OfferBuilder, SourceError, SourceResult, clean_text, to_float, today_utc
from gpuplan.catalog.sources.http import base_url, expect, expect_key, fetch_json

DEFAULT_URL = "https://api.runpod.io"
QUERY = ("query GpuTypes { gpuTypes { id displayName memoryInGb secureCloud communityCloud "
         "securePrice communityPrice secureSpotPrice communitySpotPrice maxGpuCount "
         "lowestPrice(input: {gpuCount: 1}) { stockStatus } } }")
TIERS = (("securePrice", "on_demand", "secure"), ("secureSpotPrice", "spot", "secure"),
         ("communityPrice", "community", "community"), ("communitySpotPrice", "interruptible", "community"))


class RunPodSource:
    name = "runpod"
    needs_key = None

    def __init__(self, base: str | None = None):
        self.base = base_url("GPUPLAN_RUNPOD_URL", DEFAULT_URL, base)

    def fetch(self, client: httpx.Client) -> SourceResult:
        data = expect(fetch_json(client, "POST", f"{self.base}/graphql", json_body={"query": QUERY}), dict, "answer")
        if data.get("errors"):
            errs = data["errors"]
            msg = errs[0].get("message", "") if isinstance(errs, list) and errs and isinstance(errs[0], dict) else ""
            raise SourceError(f"RunPod GraphQL error: {str(msg)[:100]}")
        rows = expect_key(expect_key(data, "data", dict, "answer"), "gpuTypes", list, "answer.data")
        b = OfferBuilder(provider="runpod", source="runpod graphql gpuTypes", as_of=today_utc(), confidence="live",
                         as_of_note="live price per GPU-hour")
        for row in rows:
            b.raw_rows += 1
            if not isinstance(row, dict):
                b.skip("row is not an object")
                continue
            mem = to_float(row.get("memoryInGb"))
            gid = None
            for name in (row.get("id"), row.get("displayName")):
                from gpuplan.catalog.sources.base import resolve_offer_gpu
                if isinstance(name, str) and (gid := resolve_offer_gpu(name, mem, str(row.get("displayName") or ""))):
                    break
            label = str(row.get("displayName") or row.get("id") or "?")
            if gid is None:
                b.skip(f"unknown GPU {label[:40]!r}")
                continue
            note = "live price per GPU-hour"
            if "lowestPrice" in row:
                lowest = row.get("lowestPrice")
                stock = lowest.get("stockStatus") if isinstance(lowest, dict) else None
                if not stock:
                    b.skip("out of stock at refresh")
                    continue
                note = f"live price per GPU-hour; stock {clean_text(stock, 20)} at refresh"
            for field, pricing, tier in TIERS:
                price = to_float(row.get(field))
                if not price:
                    continue  # 0/None = tier not offered for this GPU
                b.add(instance_type=f"1x {label} {tier}", gpu_name=label, gpu_id=gid, gpus_per_node=1,
                      pricing=pricing, price_per_hour_usd=price, mem_gb_per_gpu=mem, as_of_note=note)
        return b.result()
