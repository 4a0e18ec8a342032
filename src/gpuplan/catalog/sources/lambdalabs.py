"""Lambda Cloud instance types (`GET /api/v1/instance-types`, Bearer key).

The host is `cloud.lambda.ai`, where Lambda's docs moved (the old `cloud.lambdalabs.com` still
answers today, but a cross-host redirect would drop the Authorization header).

The catalog lists every type whether or not it can be launched; offers are written for the
regions with capacity now, and a type with none gets one region-less row so its price is
still known (providers.md §3.6: catalog rows are not availability). `price_cents_per_hour` is
the whole instance (an integer, or a string in Lambda's own documented example). The GPU count is
`specs.gpus`, else the count leading the description or the type name ('gpu_8x_h100_sxm5'):
Lambda's documented example answer omits `specs.gpus` and `gpu_description`.
"""
from __future__ import annotations

import re

import httpx

from gpuplan.catalog.sources.base import OfferBuilder, SourceError, SourceResult, to_float, today_utc
from gpuplan.catalog.sources.http import base_url, expect, expect_key, fetch_json
from gpuplan.units import GIB_TO_GB

DEFAULT_URL = "https://cloud.lambda.ai"
KEY = "LAMBDA_API_KEY"


def gpu_name_of(itype: dict, name: str) -> tuple[str, float | None]:
    """('H100 SXM5', 80.0) from gpu_description 'H100 (80 GB SXM5)' or the type name."""
    desc = str(itype.get("gpu_description") or "")
    if not desc:
        desc = re.sub(r"^\d+x\s*", "", str(itype.get("description") or ""))
    m = re.match(r"^\s*([^()]+?)\s*\((\d+(?:\.\d+)?)\s*GB\s*([^)]*)\)", desc)
    if m:
        return (f"{m[1]} {m[3]}".strip(), float(m[2]))
    if desc.strip():
        return (desc.strip(), None)
    m = re.match(r"^gpu_\d+x_(.+)$", name)
    return ((m[1].replace("_", " ") if m else name), None)


def gpu_count_of(itype: dict, name: str) -> float | None:
    """The GPU count when `specs.gpus` is absent: '8x H100 (80 GB SXM5)' or 'gpu_8x_h100_sxm5' (a 'cpu_'
    type has none)."""
    m = re.match(r"^\s*(\d+)x\s", str(itype.get("description") or "")) or re.match(r"^gpu_(\d+)x_", name)
    return float(m[1]) if m else None


class LambdaSource:
    name = "lambda"
    needs_key = KEY

    def __init__(self, base: str | None = None, api_key: str | None = None):
        self.base = base_url("GPUPLAN_LAMBDA_URL", DEFAULT_URL, base)
        self._key = api_key

    def fetch(self, client: httpx.Client) -> SourceResult:
        from gpuplan.catalog.secrets import get_secret, remember

        key = self._key or get_secret(KEY)
        if not key:
            raise SourceError(f"no API key: set {KEY} or add it to the gpuplan config file")
        remember(key)
        data = fetch_json(client, "GET", f"{self.base}/api/v1/instance-types",
                          headers={"Authorization": f"Bearer {key}"})
        types = expect_key(expect(data, dict, "answer"), "data", dict, "answer")
        b = OfferBuilder(provider="lambda", source="lambda api instance-types", as_of=today_utc(), confidence="live",
                         interconnect="ethernet")
        for name, entry in types.items():
            b.raw_rows += 1
            if not isinstance(entry, dict) or not isinstance(entry.get("instance_type"), dict):
                b.skip("row is not an object")
                continue
            it = entry["instance_type"]
            specs = it.get("specs") if isinstance(it.get("specs"), dict) else {}
            n = to_float(specs.get("gpus"))
            if n is None:
                n = gpu_count_of(it, str(it.get("name") or name))
            if not n:
                b.skip("CPU-only instance")
                continue
            gname, mem = gpu_name_of(it, str(it.get("name") or name))
            cents = to_float(it.get("price_cents_per_hour"))
            ram = to_float(specs.get("memory_gib"))
            regions = [r.get("name") for r in entry.get("regions_with_capacity_available") or []
                       if isinstance(r, dict) and isinstance(r.get("name"), str)]
            for region in regions or [""]:
                b.add(instance_type=str(it.get("name") or name), gpu_name=gname, gpus_per_node=n,
                      pricing="on_demand", price_per_hour_usd=None if cents is None else cents / 100,
                      region=region, vcpus=specs.get("vcpus"), ram_gb=ram * GIB_TO_GB if ram else None,
                      mem_gb_per_gpu=mem, hint=str(it.get("name") or name),
                      as_of_note="live; capacity available now" if region else "live; no capacity at refresh")
        return b.result()
