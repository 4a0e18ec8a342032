"""Which workloads suit decentralized networks and consumer GPUs, and why.

Tightly coupled work (multi-node training) exchanges gradients every step: it needs a fast
fabric between nodes and nodes that stay up together, which decentralized networks and
marketplace hosts do not promise. Independent work (serving replicas, batch inference, data
preparation) only needs each node to hold the model, so cheap and scattered GPUs suit it.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from gpuplan.catalog.records import Gpu, Offer, Provider

LOOSE_KINDS = frozenset({"decentralized", "marketplace"})
FAST_FABRICS = frozenset({"infiniband", "roce", "efa"})


class Placement(BaseModel):
    coupling: Literal["tightly-coupled", "independent"]
    decentralized_suitable: bool
    consumer_gpus_suitable: bool
    reasons: list[str]


def classify(workload: Literal["train", "serve", "batch", "data-prep"], min_nodes: int) -> Placement:
    """How a workload couples its GPUs, and what that means for where it can run."""
    if workload == "train" and min_nodes > 1:
        return Placement(
            coupling="tightly-coupled", decentralized_suitable=False, consumer_gpus_suitable=False,
            reasons=[
                f"multi-node training ({min_nodes}+ nodes) all-reduces gradients every step: it needs an "
                "InfiniBand/RoCE-class fabric between nodes",
                "one lost node stalls every other node until restart, so nodes must fail rarely and together",
                "decentralized and consumer GPUs are excluded unless you ask for them (--allow-decentralized)",
            ],
        )
    if workload == "train":
        return Placement(
            coupling="tightly-coupled", decentralized_suitable=True, consumer_gpus_suitable=True,
            reasons=[
                "single-node training keeps its communication inside one machine (NVLink or PCIe)",
                "decentralized or marketplace GPUs suit it when the model fits and checkpoints are frequent",
            ],
        )
    return Placement(
        coupling="independent", decentralized_suitable=True, consumer_gpus_suitable=True,
        reasons=[
            f"{workload} runs independent replicas: no traffic between nodes beyond requests",
            "decentralized and consumer GPUs suit it when one replica fits; expect no SLA and "
            "more latency variance, so keep a reliable replica for the latency-critical share",
        ],
    )


def excluded_reason(offer: Offer, provider: Provider, gpu: Gpu, nodes: int, workload: str,
                    allow_decentralized: bool) -> str | None:
    """Why this offer must not carry this workload at this node count (None = fine)."""
    if allow_decentralized or workload != "train" or nodes <= 1:
        return None
    if provider.kind == "decentralized":
        return "decentralized network for multi-node training"
    if gpu.is_consumer:
        return "consumer GPUs for multi-node training"
    if provider.kind in LOOSE_KINDS or offer.pricing in ("community", "interruptible"):
        return "marketplace hosts for multi-node training"
    return None
