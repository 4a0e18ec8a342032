"""Azure Retail Prices API (`GET /api/retail/prices`, OData `$filter`, `NextPageLink` pages).

Only GPU VM SKUs we can map are requested (sources/data/azure_skus.csv maps `armSkuName`
such as Standard_ND96isr_H100_v5 to GPU and count). Linux consumption meters become
on-demand offers, 'Spot' and 'Low Priority' meters spot offers (both are evictable capacity
billed per hour), reservations reserved offers with their term. Windows meters are skipped
whatever their spelling ('... Series Windows', and the ' Win' suffix SkyPilot's fetcher
documents, e.g. 'Virtual Machines NCCadsv5 Srs Win'), as are Cloud Services and DevTest meters.
The `NextPageLink` Azure answers is `https://prices.azure.com:443/...`: same host, explicit port. Azure has answered $0 for H100
SKUs before (skypilot#3615): the price floor drops those rows.
"""
from __future__ import annotations

import re

import httpx

from gpuplan.catalog.sources.base import OfferBuilder, SourceError, SourceResult, to_float, today_utc
from gpuplan.catalog.sources.http import base_url, expect, expect_key, fetch_json, paginate, same_host, settings_of
from gpuplan.catalog.sources.tables import keyed

DEFAULT_URL = "https://prices.azure.com"
API_VERSION = "2023-01-01-preview"
TERM_H = {"1 year": 8760.0, "3 years": 26280.0, "5 years": 43800.0}


_WINDOWS = re.compile(r"\bwin(dows)?\b", re.I)


def is_windows(product_name: str) -> bool:
    """Windows meter: 'Virtual Machines NDisrH100v5 Series Windows' or '... NCCadsv5 Srs Win'."""
    return bool(_WINDOWS.search(product_name or ""))


def odata_filter(skus: list[str]) -> str:
    names = " or ".join(f"armSkuName eq '{s}'" for s in skus)
    return f"serviceName eq 'Virtual Machines' and ({names})"


class AzureSource:
    name = "azure"
    needs_key = None

    def __init__(self, base: str | None = None):
        self.base = base_url("GPUPLAN_AZURE_URL", DEFAULT_URL, base)

    def fetch(self, client: httpx.Client) -> SourceResult:
        skus = keyed("azure_skus.csv", "arm_sku_name")
        first = f"{self.base}/api/retail/prices"
        params = {"api-version": API_VERSION, "currencyCode": "USD", "$filter": odata_filter(sorted(skus))}

        def page(link):
            if link is None:
                data = fetch_json(client, "GET", first, params=params)
            else:
                if not same_host(link, first):
                    raise SourceError("Azure NextPageLink points at another host; refused")
                data = fetch_json(client, "GET", link)
            data = expect(data, dict, "answer")
            items = expect_key(data, "Items", list, "answer")
            nxt = data.get("NextPageLink")
            return items, (nxt if isinstance(nxt, str) and nxt else None)

        b = OfferBuilder(provider="azure", source="azure retail prices api", as_of=today_utc(), confidence="live")
        for items in paginate(page, settings_of(client).max_pages, "Azure retail prices"):
            for it in items:
                b.raw_rows += 1
                if not isinstance(it, dict):
                    b.skip("row is not an object")
                    continue
                self._row(b, it, skus)
        return b.result()

    @staticmethod
    def _row(b: OfferBuilder, it: dict, skus: dict) -> None:
        sku = skus.get(str(it.get("armSkuName") or ""))
        if sku is None:
            b.skip("SKU not in the GPU table")
            return
        product, meter = str(it.get("productName") or ""), str(it.get("meterName") or "")
        if is_windows(product):
            b.skip("Windows meter")
            return
        if "cloud services" in product.lower() or "cloudservices" in product.lower():
            b.skip("Cloud Services meter")
            return
        if str(it.get("currencyCode") or "USD") != "USD":
            b.skip("not priced in USD")
            return
        kind, price, term = str(it.get("type") or ""), to_float(it.get("retailPrice")), None
        if kind == "Consumption":
            m = meter.lower()
            pricing = "spot" if ("spot" in m or "low priority" in m) else "on_demand"
        elif kind == "Reservation":
            term = TERM_H.get(str(it.get("reservationTerm") or "").lower())
            if term is None:
                b.skip("reservation without a known term")
                return
            pricing = "reserved"
            price = None if price is None else price / term  # reservation prices are the whole term
        else:
            b.skip(f"{kind or 'untyped'} meter")
            return
        if str(it.get("unitOfMeasure") or "1 Hour") != "1 Hour":
            b.skip("unit is not per hour")
            return
        b.add(instance_type=str(it["armSkuName"]).removeprefix("Standard_"), gpu_name=sku["gpu"], gpu_id=sku["gpu"],
              gpus_per_node=float(sku["gpus_per_node"]), pricing=pricing, price_per_hour_usd=price,
              region=str(it.get("armRegionName") or ""), interconnect=sku["interconnect"], commitment_term_h=term)
