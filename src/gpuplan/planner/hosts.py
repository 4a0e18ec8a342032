"""How many hosts of one offer can be rented at once (data/hosts.json).

A price row says what one host costs, not how many are free. Where the offer names a limit
(`Offer.max_nodes`, from deployability.csv) that is the answer; elsewhere a default by pricing
(community listings) or provider kind, each an assumption with its reason. Batch fleets split work
across offers within these limits; a serving plan runs on one offer and is not ranked beyond them.
"""
from __future__ import annotations

import functools
import json
from importlib import resources

from gpuplan.catalog.records import Offer

PEER_KINDS = ("marketplace", "decentralized")


@functools.cache
def hosts_data() -> dict:
    with resources.files("gpuplan.planner.data").joinpath("hosts.json").open(encoding="utf-8") as f:
        return json.load(f)


def hosts_available(offer: Offer, kind: str, override: int | None = None) -> tuple[int, str]:
    """(hosts, basis): the most hosts of `offer` one plan may rent at once, and where that comes from."""
    if override is not None:
        return override, "--hosts-per-offer"
    if offer.max_nodes:
        return int(offer.max_nodes), "the offer's max_nodes"
    d = hosts_data()
    if kind not in PEER_KINDS and offer.pricing in d["by_pricing"]:  # e.g. RunPod Community Cloud
        return int(d["by_pricing"][offer.pricing]["hosts"]), f"default for a {offer.pricing} listing"
    return int(d["by_kind"][kind]["hosts"]), f"default for a {kind} listing"
