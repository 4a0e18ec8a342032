"""Scale-up topology: how much of a GPU's scale-up bandwidth a transfer among some of its node's GPUs can use.

Switched nodes (NVSwitch: HGX H100/B200, NVL72 racks) give any group of GPUs each GPU's full NVLink bandwidth.
Point-to-point meshes do not: AMD's MI300X / MI325X / MI355X platforms wire each of 8 GPUs to each other one with
a single Infinity Fabric link, and Gaudi 2 / Gaudi 3 boxes wire 3 of each accelerator's on-chip RoCE ports to
each of its 7 peers (data/scaleup-topology.csv, with sources). A collective over g GPUs of the box (a TP2 replica's
all-reduce, the data-parallel ring of 4 GPUs at TP2) moves over the g - 1 links among them only; a point-to-point
transfer (a pipeline hand-off, a context-parallel ring step) over one. An 8-GPU group uses all 7: the full figure.

gpus.csv's nvlink_gbps stays the device's aggregate (for Gaudi it counts the 3 scale-out ports too); this module
bounds it. A GPU not listed here is taken as switched, which every NVLink GPU in the catalog is. MI250X, whose
inter-module links vary by platform, has no offer in the catalog and is not listed.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

DATA_FILE = "scaleup-topology.csv"


@dataclass(frozen=True)
class Mesh:
    """A point-to-point scale-up mesh: `peers` links per GPU, each `peer_bytes_s` in each direction."""

    peers: int
    peer_bytes_s: float
    scaleup_bytes_s: float
    note: str


@lru_cache(maxsize=1)
def meshes() -> dict[str, Mesh]:
    """GPU id -> its mesh, for the GPUs whose scale-up is point to point."""
    text = resources.files("gpuplan.perf.data").joinpath(DATA_FILE).read_text(encoding="utf-8")
    out = {}
    for row in csv.DictReader(io.StringIO(text)):
        if row["topology"] == "mesh":
            out[row["gpu_id"]] = Mesh(int(row["peers"]), float(row["peer_gb_s_per_direction"]) * 1e9,
                                      float(row["scaleup_gb_s_per_direction"]) * 1e9, row["note"])
    return out


def mesh(gpu_id: str) -> Mesh | None:
    return meshes().get(gpu_id)


def _links(m: Mesh, group: int) -> int:
    """Mesh links a collective over `group` GPUs of the box uses: group - 1, at least one, at most all of them."""
    return min(max(int(group) - 1, 1), m.peers)


def group_share(gpu, group: int) -> float:
    """Share of the GPU's whole scale-up bandwidth (per direction, as the catalog states it) that a collective
    over `group` GPUs of its node can use: 1.0 on a switch; (group - 1) of the mesh's links otherwise, and never
    more than the links wired inside the box (Gaudi's scale-out ports are not among them)."""
    m = mesh(gpu.id)
    if m is None:
        return 1.0
    full = gpu.nvlink_gbps / 2 * 1e9
    if full <= 0:
        return 1.0
    return min(1.0, _links(m, group) * m.peer_bytes_s / full, m.scaleup_bytes_s / full)


def box_share(gpu) -> float:
    """group_share for a collective over every GPU of the box (all its mesh links)."""
    m = mesh(gpu.id)
    return 1.0 if m is None else group_share(gpu, m.peers + 1)


def describe(gpu, group: int) -> str | None:
    """One line for an estimate's assumptions, or None on a switched GPU."""
    m = mesh(gpu.id)
    if m is None:
        return None
    links = _links(m, group)
    return (f"{gpu.id} scale-up is a point-to-point mesh, not a switch: collectives over {group} GPUs move over "
            f"{links} of its {m.peers} peer links, {links * m.peer_bytes_s / 1e9:g} GB/s per direction "
            f"({m.peer_bytes_s / 1e9:g} each; {m.scaleup_bytes_s / 1e9:g} over all {m.peers})")
