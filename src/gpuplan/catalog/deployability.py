"""Deployability per instance type: can several nodes be rented as one cluster, and over what fabric.

The data is ``catalog/data/deployability.csv``, one row per (provider, instance-type pattern):

``provider,instance_pattern,gpus_per_node,cluster,fabric,fabric_gbps_per_node,max_nodes,source,note,node_multiple``

- ``instance_pattern`` is a shell glob (:mod:`fnmatch`, matched case-insensitively) on the offer's
  ``instance_type``; ``gpus_per_node`` (optional) restricts a row to offers with that many GPUs per
  node. Rows are tried in file order per provider and the first match wins, so specific rows come
  before a provider's catch-all ``*`` row.
- ``cluster``: ``yes`` (several nodes of this type can be rented together on one GPU fabric,
  self-serve or through a documented cluster product), ``no`` (independent VMs / hosts only) or
  empty (unknown).
- ``fabric``: ``infiniband``, ``roce``, ``efa``, ``tcpx``, ``ethernet`` or empty (unknown).
- ``fabric_gbps_per_node``: inter-node bandwidth per **node** (not per GPU) in Gb/s, e.g. 3200
  for 8 x 400G; for ``cluster=no`` rows it is the VM's own network where the provider publishes it.
- ``max_nodes``: the largest cluster of this type that can be rented as one fabric where a limit
  or size is published, else empty.
- ``node_multiple``: the provider rents this type only in blocks of this many nodes (CoreWeave's
  GB200 NVL72: whole racks of 18 trays), so a cluster's node count is a multiple of it; empty where
  no granularity is published (any count, today's behaviour). The last column, so a row written
  without it reads as empty.
- every row carries a ``source`` (URL or document) and a short ``note``.

Unknown stays unknown: an empty cell is ``None`` here and is never filled with a guess. What a
planner should assume for an unknown fabric is :data:`UNKNOWN_FABRIC_GBPS_PER_NODE`: 25 Gb/s per
node, Ethernet-class TCP between VMs without a cluster network. Source: Microsoft's NC A100 v4
size table gives 20,000 Mbps for the 1-GPU size (40,000 / 80,000 Mbps for 2 / 4 GPUs) with
InfiniBand "Not Supported"
(https://learn.microsoft.com/azure/virtual-machines/nc-a100-v4-series), and AWS documents 25 Gbps
as the most a single flow between two instances reaches even with ENA Express (5 Gbps outside a
cluster placement group, 10 Gbps inside;
https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-network-bandwidth.html).

:func:`lookup` is cached per (provider, instance type, GPUs per node), so 100k lookups over a
catalog cost little more than one per distinct offer type.
"""
from __future__ import annotations

import csv
import fnmatch
import functools
import re
from dataclasses import dataclass
from importlib import resources

__all__ = [
    "CLUSTER_VALUES",
    "FABRICS",
    "UNKNOWN_FABRIC_GBPS_PER_NODE",
    "Deployability",
    "DeployabilityRow",
    "lookup",
    "node_multiple",
    "providers_with_node_multiples",
    "rows",
]

UNKNOWN_FABRIC_GBPS_PER_NODE: float = 25.0
"""Gb/s per node to assume when an offer's inter-node fabric is unknown (pessimistic).

Ethernet-class TCP between independent VMs with no cluster network: the NIC class of GPU VMs
without RDMA. Azure's NC24ads_A100_v4 (1 x A100, no InfiniBand) is rated 20,000 Mbps and AWS
caps a single TCP flow between instances at 25 Gbps with ENA Express (5-10 Gbps without); see the
module docstring for the sources. It is a per-node figure: divide by GPUs per node for a per-GPU
share, never multiply.
"""

FABRICS = frozenset({"infiniband", "roce", "efa", "tcpx", "ethernet"})
CLUSTER_VALUES = {"yes": True, "no": False, "": None}
COLUMNS = ("provider", "instance_pattern", "gpus_per_node", "cluster", "fabric",
           "fabric_gbps_per_node", "max_nodes", "source", "note", "node_multiple")
DATA_FILE = "deployability.csv"


@dataclass(frozen=True)
class Deployability:
    """What the catalog knows about renting several nodes of one instance type together."""

    cluster: bool | None
    fabric: str | None
    fabric_gbps_per_node: float | None
    max_nodes: int | None
    source: str
    note: str
    node_multiple: int | None = None  # nodes are rented only in blocks of this many (None: any count)


UNKNOWN = Deployability(cluster=None, fabric=None, fabric_gbps_per_node=None, max_nodes=None,
                        source="", note="")


@dataclass(frozen=True)
class DeployabilityRow:
    """One parsed line of deployability.csv (``line`` is the 1-based line number in the file)."""

    provider: str
    instance_pattern: str
    gpus_per_node: float | None
    deployability: Deployability
    line: int
    regex: re.Pattern = None  # type: ignore[assignment]

    def matches(self, instance_type: str, gpus_per_node: float | None) -> bool:
        if self.gpus_per_node is not None:
            if gpus_per_node is None or float(gpus_per_node) != self.gpus_per_node:
                return False
        return self.regex.match(instance_type.lower()) is not None


def _positive(value: str, column: str, line: int, kind: type) -> float | int | None:
    if value == "":
        return None
    try:
        number = kind(float(value)) if kind is int else float(value)
    except ValueError as e:
        raise ValueError(f"{DATA_FILE} line {line}, column {column}: not a number: {value!r}") from e
    if kind is int and float(value) != int(float(value)):
        raise ValueError(f"{DATA_FILE} line {line}, column {column}: not a whole number: {value!r}")
    if not number > 0:
        raise ValueError(f"{DATA_FILE} line {line}, column {column}: must be positive: {value!r}")
    return number


def parse_row(raw: dict[str, str], line: int) -> DeployabilityRow:
    """Validate one CSV row (strings, '' = unknown); raise ValueError naming the line and column."""
    cells = {k: (raw.get(k) or "").strip() for k in COLUMNS}
    provider = cells["provider"].lower()
    pattern = cells["instance_pattern"]
    if not provider:
        raise ValueError(f"{DATA_FILE} line {line}: empty provider")
    if not pattern:
        raise ValueError(f"{DATA_FILE} line {line}: empty instance_pattern")
    cluster_text = cells["cluster"].lower()
    if cluster_text not in CLUSTER_VALUES:
        raise ValueError(f"{DATA_FILE} line {line}, column cluster: {cells['cluster']!r} "
                         "is not yes, no or empty")
    fabric = cells["fabric"].lower() or None
    if fabric is not None and fabric not in FABRICS:
        raise ValueError(f"{DATA_FILE} line {line}, column fabric: {cells['fabric']!r} "
                         f"is not one of {sorted(FABRICS)} or empty")
    if not cells["source"]:
        raise ValueError(f"{DATA_FILE} line {line}: every row needs a source")
    node_multiple = _positive(cells["node_multiple"], "node_multiple", line, int)
    max_nodes = _positive(cells["max_nodes"], "max_nodes", line, int)
    if node_multiple is not None:
        if cluster_text != "yes":
            raise ValueError(f"{DATA_FILE} line {line}, column node_multiple: set on a type not sold as a cluster")
        if max_nodes is not None and max_nodes % node_multiple:
            raise ValueError(f"{DATA_FILE} line {line}, column node_multiple: max_nodes {max_nodes} "
                             f"is not a multiple of {node_multiple}")
    dep = Deployability(
        cluster=CLUSTER_VALUES[cluster_text],
        fabric=fabric,
        fabric_gbps_per_node=_positive(cells["fabric_gbps_per_node"], "fabric_gbps_per_node", line, float),
        max_nodes=max_nodes,
        source=cells["source"],
        note=cells["note"],
        node_multiple=node_multiple,
    )
    return DeployabilityRow(
        provider=provider,
        instance_pattern=pattern,
        gpus_per_node=_positive(cells["gpus_per_node"], "gpus_per_node", line, float),
        deployability=dep,
        line=line,
        regex=re.compile(fnmatch.translate(pattern.lower())),
    )


@functools.cache
def rows() -> tuple[DeployabilityRow, ...]:
    """All rows of deployability.csv in file order, validated (loaded once)."""
    with resources.files("gpuplan.catalog.data").joinpath(DATA_FILE).open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise ValueError(f"{DATA_FILE}: missing columns {missing}")
        # Header is line 1; DictReader skips blank lines, so use the reader's own line counter.
        return tuple(parse_row(raw, reader.line_num) for raw in reader)


@functools.cache
def _by_provider() -> dict[str, tuple[DeployabilityRow, ...]]:
    grouped: dict[str, list[DeployabilityRow]] = {}
    for row in rows():
        grouped.setdefault(row.provider, []).append(row)
    return {p: tuple(rs) for p, rs in grouped.items()}


@functools.lru_cache(maxsize=65536)
def _lookup(provider: str, instance_type: str, gpus_per_node: float | None) -> Deployability:
    for row in _by_provider().get(provider, ()):
        if row.matches(instance_type, gpus_per_node):
            return row.deployability
    return UNKNOWN


def lookup(provider: str, instance_type: str, gpus_per_node: float | None) -> Deployability:
    """Deployability of ``instance_type`` at ``provider``: the first matching row, else all unknown.

    ``provider`` is the catalog provider id (case-insensitive); ``instance_type`` is matched
    case-insensitively against the row globs. With no matching row every field is None and
    ``source`` is "".
    """
    gpn = None if gpus_per_node is None else float(gpus_per_node)
    return _lookup((provider or "").strip().lower(), (instance_type or "").strip(), gpn)


def node_multiple(provider: str, instance_type: str, gpus_per_node: float | None) -> int:
    """Nodes of this type are rented in blocks of this many (1: any count, also when unknown)."""
    return lookup(provider, instance_type, gpus_per_node).node_multiple or 1


@functools.cache
def providers_with_node_multiples() -> frozenset[tuple[str, float | None]]:
    """(provider, GPUs per node or None for any) of the rows that set node_multiple: the planner
    looks offer by offer only at offers these match."""
    return frozenset((r.provider, r.gpus_per_node) for r in rows() if r.deployability.node_multiple)


def with_deployability(offer):
    """The offer with what its instance type tells about clusters and fabric filled in.

    For the bundled catalog and live sources the instance-type row wins over the provider-level
    fabric label; for the user's own imports (confidence "user") only what they left empty is filled.
    """
    update = deployability_update(offer.provider, offer.instance_type, offer.gpus_per_node,
                                  offer.confidence == "user", offer.cluster, offer.fabric_gbps_per_node,
                                  offer.max_nodes, offer.interconnect)
    return _copy_with(offer, update) if update else offer


@functools.lru_cache(maxsize=65536)
def deployability_update(provider: str, instance_type: str, gpus_per_node: float | None, user: bool,
                         cluster, fabric_gbps_per_node, max_nodes, interconnect) -> dict:
    """The fields `with_deployability` changes on an offer with these values (empty: none); cached,
    since a large catalog repeats a few hundred instance types. Treat the result as read-only."""
    d = lookup(provider, instance_type, gpus_per_node)
    if d is UNKNOWN:
        return {}
    have = {"cluster": cluster, "fabric_gbps_per_node": fabric_gbps_per_node, "max_nodes": max_nodes,
            "interconnect": interconnect}
    update = {}
    for field, value in (("cluster", d.cluster), ("fabric_gbps_per_node", d.fabric_gbps_per_node),
                         ("max_nodes", d.max_nodes), ("interconnect", d.fabric)):
        if value is None:
            continue
        if user and have[field] is not None:
            continue
        if have[field] != value:
            update[field] = value
    return update


_object_setattr = object.__setattr__


def _copy_with(offer, update: dict):
    """`offer.model_copy(update=update)` without pydantic's generic copy machinery (same result:
    a shallow copy of the fields with `update` applied, no validation)."""
    cls = type(offer)
    new = cls.__new__(cls)
    d = dict(offer.__dict__)
    d.update(update)
    _object_setattr(new, "__dict__", d)
    _object_setattr(new, "__pydantic_extra__", None if offer.__pydantic_extra__ is None
                    else dict(offer.__pydantic_extra__))
    _object_setattr(new, "__pydantic_fields_set__", set(offer.__pydantic_fields_set__) | update.keys())
    _object_setattr(new, "__pydantic_private__", getattr(offer, "__pydantic_private__", None))
    return new
