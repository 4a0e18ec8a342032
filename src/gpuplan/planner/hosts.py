"""What one host of an offer gives (data/hosts.json): how many can be rented at once, its internet
bandwidth, and the billed time before a training job's first step.

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
    d = hosts_data()["available"]
    if kind not in PEER_KINDS and offer.pricing in d["by_pricing"]:  # e.g. RunPod Community Cloud
        return int(d["by_pricing"][offer.pricing]["hosts"]), f"default for a {offer.pricing} listing"
    return int(d["by_kind"][kind]["hosts"]), f"default for a {kind} listing"


def bandwidth_gbps(kind: str) -> float:
    """Internet bandwidth of one host of this provider kind, Gb/s (an assumption with its reason)."""
    return float(hosts_data()["bandwidth_gbps"]["by_kind"][kind]["gbps"])


def provision_hours() -> float:
    """Hours to rent a host and boot it, before anything is downloaded (an assumption with its reason)."""
    return float(hosts_data()["provision_s"]) / 3600.0


def training_start_hours(kind: str, download_gb: float = 0.0) -> float:
    """Billed hours on every node before the first step: boot, image pull, `download_gb` of base
    weights (a fine-tune's; none when pre-training from scratch) at the host's bandwidth, launch."""
    d = hosts_data()["training_start"]
    gb_per_s = bandwidth_gbps(kind) / 8.0
    return provision_hours() + ((d["image_gb"] + download_gb) / gb_per_s + d["launch_s"]) / 3600.0
