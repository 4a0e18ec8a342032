"""Load the catalog files shipped inside the package (built by scripts/build_catalog.py)."""
from __future__ import annotations

import csv
import datetime as dt
import functools
import json
from importlib import resources

from gpuplan.catalog.records import Offer, Provider
from gpuplan.errors import GpuplanError

OFFER_FLOAT_FIELDS = ("gpus_per_node", "price_per_hour_usd", "price_per_gpu_hour_usd", "vcpus", "ram_gb", "commitment_term_h",
                      "fabric_gbps_per_node")


def _open(filename: str):
    return resources.files("gpuplan.catalog.data").joinpath(filename).open(encoding="utf-8", newline="")


def offer_from_row(row: dict[str, str]) -> Offer:
    """A CSV row (all strings, '' = unknown) to a validated Offer."""
    data: dict = {k: (v if v != "" else None) for k, v in row.items() if k in Offer.model_fields}
    for k in OFFER_FLOAT_FIELDS:
        if data.get(k) is not None:
            data[k] = float(data[k])
    data["as_of"] = dt.date.fromisoformat(data["as_of"])
    if data.get("max_nodes") is not None:
        data["max_nodes"] = int(float(data["max_nodes"]))
    if data.get("cluster") is not None:
        data["cluster"] = str(data["cluster"]).strip().lower() in ("yes", "true", "1")
    for k in ("region", "as_of_note"):
        data[k] = data.get(k) or ""
    return Offer(**data)


@functools.cache
def load_bundled_offers(filename: str = "offers.csv") -> tuple[Offer, ...]:
    try:
        with _open(filename) as f:
            return tuple(offer_from_row(r) for r in csv.DictReader(f))
    except (OSError, ValueError, KeyError) as e:
        raise GpuplanError(f"bundled catalog file {filename} is unreadable: {e}") from e


@functools.cache
def load_bundled_providers() -> dict[str, Provider]:
    with _open("providers.json") as f:
        rows = json.load(f)
    return {r["id"]: Provider(**{k: v for k, v in r.items() if k in Provider.model_fields}) for r in rows}


@functools.cache
def provider_fabrics() -> dict[str, str | None]:
    """Default inter-node fabric per provider (infiniband, roce, efa, ethernet or None = unknown)."""
    with _open("providers.json") as f:
        return {r["id"]: r.get("inter_node_fabric") for r in json.load(f)}


@functools.cache
def load_current_bundled_offers() -> tuple[Offer, ...]:
    """The packaged offers as the catalog shows them: where rows share a key (provider, instance, GPU,
    GPUs per node, region, pricing, term) only the newest dated price is current (store.merge_current)."""
    from gpuplan.catalog.store import merge_current

    return tuple(merge_current({"bundled": list(load_bundled_offers())}))
