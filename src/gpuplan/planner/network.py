"""The network a multi-node plan runs over, per offer, pessimistic where it does not know.

An offer's fabric comes from its instance type (catalog/data/deployability.csv, or the user's
import): a cluster product with InfiniBand / RoCE / EFA / TCPX at a known bandwidth per node, or
single VMs with whatever Ethernet they have. Unknown is never fast: an unknown fabric is an
Ethernet-class TCP network per node (data/fabrics.json says which figure and why), and
multi-node training on offers that are not cluster products is not ranked unless the user allows
it, then costed over that network.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources

from gpuplan.catalog.records import Offer

FAST_FABRICS = frozenset({"infiniband", "roce", "efa", "tcpx"})


@functools.cache
def _fabrics() -> dict:
    with resources.files("gpuplan.planner.data").joinpath("fabrics.json").open() as f:
        return json.load(f)


def default_gbps_per_node(label: str | None) -> float:
    table = _fabrics()["gbps_per_node"]
    return float(table.get((label or "unknown").lower(), table["unknown"]))


def fabric_assumptions() -> dict:
    d = _fabrics()
    return {"gbps_per_node_when_not_published": d["gbps_per_node"], "sources": d["sources"]}


@dataclass(frozen=True)
class Network:
    """What a plan may assume about the network between an offer's nodes."""

    fabric: str  # infiniband | roce | efa | tcpx | ethernet | unknown
    gbps_per_node: float
    basis: str  # known (bandwidth published) | label_only (type known) | assumed (unknown: pessimistic)
    cluster: bool | None  # can several nodes be rented on one fabric
    max_nodes: int | None

    def gbps_per_gpu(self, gpus_per_node: float) -> float:
        return self.gbps_per_node / max(float(gpus_per_node), 1.0)

    @property
    def multi_node(self) -> bool:
        """Several nodes may be joined for tightly coupled work without the user's say-so."""
        return self.cluster is True and self.fabric in FAST_FABRICS

    def describe(self, gpus_per_node: float) -> str:
        how = {"known": "published", "label_only": "type known, bandwidth assumed",
               "assumed": "unknown: assumed Ethernet-class"}[self.basis]
        return f"{self.fabric} {self.gbps_per_node:,.0f} Gb/s per node ({how})"


def offer_network(o: Offer) -> Network:
    label = (o.interconnect or "unknown").strip().lower() or "unknown"
    if o.cluster is False:
        # Independent VMs: whatever the provider's cluster products use, these talk over TCP.
        label = "unknown" if label in FAST_FABRICS or label == "unknown" else label
    if o.fabric_gbps_per_node and label != "unknown":
        return Network(label, float(o.fabric_gbps_per_node), "known", o.cluster, o.max_nodes)
    if label == "unknown":
        return Network("unknown", default_gbps_per_node("unknown"), "assumed", o.cluster, o.max_nodes)
    return Network(label, default_gbps_per_node(label), "label_only", o.cluster, o.max_nodes)
