"""Deployability per instance type (catalog/data/deployability.csv and its reader)."""
from __future__ import annotations

import csv
import time
from importlib import resources

import pytest

from gpuplan.catalog import deployability as dep
from gpuplan.catalog.deployability import (
    FABRICS,
    UNKNOWN_FABRIC_GBPS_PER_NODE,
    Deployability,
    lookup,
)


def _csv_rows(name: str) -> list[dict[str, str]]:
    with resources.files("gpuplan.catalog.data").joinpath(name).open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


RAW = _csv_rows("deployability.csv")
OFFERS = _csv_rows("offers.csv")
OFFER_KEYS = sorted({(o["provider"], o["instance_type"], float(o["gpus_per_node"])) for o in OFFERS})

# Providers whose rows in deployability.csv are all unknown (cluster and fabric empty): listed
# explicitly so that adding knowledge, or losing it, is a visible change.
FULLY_UNKNOWN_PROVIDERS = {"cudo", "e2e", "fluidstack", "vultr"}


# --- the file itself ------------------------------------------------------------------------

def test_header_is_the_documented_one():
    with resources.files("gpuplan.catalog.data").joinpath("deployability.csv").open(encoding="utf-8") as f:
        header = f.readline().strip().split(",")
    assert header == ["provider", "instance_pattern", "gpus_per_node", "cluster", "fabric",
                      "fabric_gbps_per_node", "max_nodes", "source", "note", "node_multiple"]


@pytest.mark.parametrize("row", RAW, ids=lambda r: f"{r['provider']}:{r['instance_pattern']}:{r['gpus_per_node']}")
def test_every_row_parses(row):
    assert row["provider"].strip() and row["provider"] == row["provider"].strip().lower()
    assert row["instance_pattern"].strip()
    assert row["cluster"] in ("yes", "no", "")
    assert row["fabric"] in FABRICS | {""}
    for col in ("gpus_per_node", "fabric_gbps_per_node", "max_nodes", "node_multiple"):
        if (row.get(col) or "") != "":
            assert float(row[col]) > 0, col
    if row.get("node_multiple"):
        assert float(row["node_multiple"]) == int(float(row["node_multiple"]))
    if row["max_nodes"]:
        assert float(row["max_nodes"]) == int(float(row["max_nodes"]))
    if row["gpus_per_node"]:
        assert float(row["gpus_per_node"]) == int(float(row["gpus_per_node"]))


@pytest.mark.parametrize("row", RAW, ids=lambda r: f"{r['provider']}:{r['instance_pattern']}:{r['gpus_per_node']}")
def test_every_row_has_a_source_and_a_note(row):
    assert row["source"].strip()
    assert row["note"].strip()


def test_rows_are_internally_consistent():
    for r in RAW:
        where = f"{r['provider']} {r['instance_pattern']}"
        if r["cluster"] == "no":
            assert r["max_nodes"] == "", f"{where}: a non-cluster type cannot have max_nodes"
        if r["fabric_gbps_per_node"]:
            assert r["fabric"], f"{where}: bandwidth without a fabric type"
        if r["max_nodes"]:
            assert r["cluster"] == "yes", f"{where}: max_nodes on a type not known to cluster"
        if r.get("node_multiple"):
            assert r["cluster"] == "yes", f"{where}: node_multiple on a type not known to cluster"


def test_no_row_is_shadowed_by_a_catch_all():
    """A provider's unrestricted '*' row must be its last: rows after it could never match."""
    seen_catch_all: set[str] = set()
    for r in RAW:
        assert r["provider"] not in seen_catch_all, (
            f"row {r['provider']} {r['instance_pattern']} comes after that provider's catch-all '*'")
        if r["instance_pattern"] == "*" and r["gpus_per_node"] == "":
            seen_catch_all.add(r["provider"])


def test_no_duplicate_rows():
    keys = [(r["provider"], r["instance_pattern"].lower(), r["gpus_per_node"]) for r in RAW]
    assert len(keys) == len(set(keys))


def test_loader_agrees_with_the_file():
    parsed = dep.rows()
    assert len(parsed) == len(RAW)
    for p, r in zip(parsed, RAW):
        assert p.provider == r["provider"]
        assert p.instance_pattern == r["instance_pattern"]
        assert p.deployability.source == r["source"]
        assert p.deployability.cluster is {"yes": True, "no": False, "": None}[r["cluster"]]
        assert p.deployability.fabric == (r["fabric"] or None)


@pytest.mark.parametrize("bad, message", [
    ({"cluster": "maybe"}, "cluster"),
    ({"fabric": "nvlink"}, "fabric"),
    ({"fabric_gbps_per_node": "-5"}, "positive"),
    ({"fabric_gbps_per_node": "fast"}, "not a number"),
    ({"max_nodes": "0"}, "positive"),
    ({"max_nodes": "2.5"}, "whole number"),
    ({"source": ""}, "source"),
    ({"node_multiple": "1.5"}, "whole number"),
    ({"node_multiple": "0"}, "positive"),
    ({"node_multiple": "18", "max_nodes": "64"}, "multiple of 18"),
    ({"node_multiple": "18", "cluster": "no"}, "not sold as a cluster"),
])
def test_parse_row_rejects_bad_cells(bad, message):
    good = {"provider": "x", "instance_pattern": "*", "gpus_per_node": "", "cluster": "yes",
            "fabric": "roce", "fabric_gbps_per_node": "800", "max_nodes": "4", "source": "doc",
            "note": "n"}
    dep.parse_row(good, 2)
    with pytest.raises(ValueError, match=message):
        dep.parse_row({**good, **bad}, 7)


# --- coverage of the offer catalog -------------------------------------------------------------

@pytest.mark.parametrize("key", OFFER_KEYS, ids=lambda k: f"{k[0]}:{k[1]}:{k[2]:g}")
def test_every_offer_type_resolves_to_a_row_of_its_provider(key):
    provider, instance_type, gpus = key
    d = lookup(provider, instance_type, gpus)
    assert d.source, f"no deployability row for {provider} {instance_type} x{gpus:g}"
    owners = [r for r in dep.rows() if r.provider == provider and r.deployability is d]
    assert owners, "resolved to another provider's row"


def test_fully_unknown_providers_are_the_listed_ones():
    by_provider: dict[str, list[dict[str, str]]] = {}
    for r in RAW:
        by_provider.setdefault(r["provider"], []).append(r)
    unknown = {p for p, rs in by_provider.items() if all(r["cluster"] == "" and r["fabric"] == "" for r in rs)}
    assert unknown == FULLY_UNKNOWN_PROVIDERS
    for p in FULLY_UNKNOWN_PROVIDERS:
        for o in OFFER_KEYS:
            if o[0] == p:
                d = lookup(*o)
                assert (d.cluster, d.fabric, d.fabric_gbps_per_node) == (None, None, None)


def test_every_offer_provider_has_rows():
    assert {k[0] for k in OFFER_KEYS} <= {r["provider"] for r in RAW}


# --- regression checks from the 2026-11 plan review (RC1) --------------------------------------

def test_aws_p4d_is_400_gbps_per_node_not_per_gpu():
    d = lookup("aws", "p4d.24xlarge", 8)
    assert d.cluster is True and d.fabric == "efa"
    assert d.fabric_gbps_per_node == 400
    assert lookup("aws", "p4de.24xlarge", 8).fabric_gbps_per_node == 400


def test_aws_p5_family_is_3200_gbps_per_node():
    for t in ("p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge"):
        d = lookup("aws", t, 8)
        assert (d.cluster, d.fabric, d.fabric_gbps_per_node) == (True, "efa", 3200), t


def test_aws_g6e_xlarge_is_not_a_cluster():
    d = lookup("aws", "g6e.xlarge", 1)
    assert d.cluster is False
    assert d.fabric != "efa"


def test_gcp_a3_highgpu_1g_is_not_a_cluster():
    d = lookup("gcp", "a3-highgpu-1g", 1)
    assert d.cluster is False
    assert d.fabric not in ("roce", "tcpx", "infiniband")


def test_gcp_a3_highgpu_8g_is_tcpx_not_roce():
    d = lookup("gcp", "a3-highgpu-8g", 8)
    assert d.cluster is True and d.fabric == "tcpx"
    assert d.fabric_gbps_per_node == 800


def test_gcp_a2_ultragpu_1g_has_no_gpu_fabric():
    d = lookup("gcp", "a2-ultragpu-1g", 1)
    assert d.cluster is False and d.fabric == "ethernet"


def test_nebius_one_gpu_vms_are_not_clusters():
    for t in ("gpu-h100-sxm_1gpu-16vcpu-200gb", "gpu-h200-sxm_1gpu-16vcpu-200gb", "1x H100-SXM",
              "gpu-l40s-a_1gpu-8vcpu-32gb", "gpu-l40s-d_4gpu-128vcpu-768gb"):
        gpus = 4 if "_4gpu" in t else 1
        d = lookup("nebius", t, gpus)
        assert d.cluster is False, t
        assert d.fabric != "infiniband", t


def test_nebius_eight_gpu_presets_are_infiniband_clusters():
    for t in ("gpu-h100-sxm_8gpu-128vcpu-1600gb", "gpu-h200-sxm_8gpu-128vcpu-1600gb",
              "gpu-b200-sxm_8gpu-160vcpu-1792gb", "gpu-b200-sxm-a_8gpu-160vcpu-1792gb"):
        d = lookup("nebius", t, 8)
        assert d.cluster is True and d.fabric == "infiniband", t


def test_lambda_on_demand_vms_are_not_clusters():
    lambda_on_demand = [k for k in OFFER_KEYS if k[0] == "lambda" and k[1].startswith("gpu_")]
    assert len(lambda_on_demand) >= 20
    for key in lambda_on_demand:
        d = lookup(*key)
        assert d.cluster is False, key
        assert d.fabric != "infiniband", key


def test_lambda_reserved_cluster_is_infiniband():
    d = lookup("lambda", "8x H100-SXM", 8)
    assert d.cluster is True and d.fabric == "infiniband"


def test_cudo_is_not_an_infiniband_cluster():
    # Cudo's feed is no longer bundled (dead since mid-2026) but a refresh or an import can still bring
    # its VMs: they stay unknown, never an InfiniBand cluster.
    for key in [("cudo", "epyc-genoa_h100-sxm_8x", 8.0), ("cudo", "ice-lake_a100_4x", 4.0)]:
        d = lookup(*key)
        assert d.cluster is not True, key
        assert d.fabric != "infiniband", key
        assert d.max_nodes is None, key


def test_single_host_marketplaces_are_not_clusters():
    for key in OFFER_KEYS:
        if key[0] in ("vast", "runpod") and key[2] < 8:
            assert lookup(*key).cluster is False, key


def test_oci_vm_shapes_are_not_clusters_and_bare_metal_is_roce():
    assert lookup("oci", "VM.GPU.A10.1", 1).cluster is False
    assert lookup("oci", "VM.GPU3.4", 4).cluster is False
    d = lookup("oci", "BM.GPU.H100.8", 8)
    assert (d.cluster, d.fabric, d.fabric_gbps_per_node) == (True, "roce", 3200)
    assert lookup("oci", "BM.GPU4.8", 8).fabric_gbps_per_node == 1600


def test_azure_nd_v5_is_3200_and_nd_a100_v4_is_1600():
    assert lookup("azure", "ND96isr_H100_v5", 8).fabric_gbps_per_node == 3200
    assert lookup("azure", "Standard_ND96isr_H100_v5", 8).fabric_gbps_per_node == 3200
    assert lookup("azure", "ND96asr_A100_v4", 8).fabric_gbps_per_node == 1600
    assert lookup("azure", "ND96amsr_A100_v4", 8).fabric_gbps_per_node == 1600
    assert lookup("azure", "Standard_NC24ads_A100_v4", 1).cluster is False


def test_no_fast_fabric_bandwidth_is_per_gpu():
    """Per-node figures: an 8-GPU RDMA node below 8 x 50 Gb/s would mean a per-GPU number slipped in."""
    for r in dep.rows():
        d = r.deployability
        if d.fabric in ("infiniband", "roce", "efa", "tcpx") and d.fabric_gbps_per_node is not None:
            assert d.fabric_gbps_per_node >= 400, (r.provider, r.instance_pattern)


# --- the reader ------------------------------------------------------------------------------

def test_unknown_provider_or_type_is_all_unknown():
    d = lookup("no-such-cloud", "whatever", 8)
    assert d == Deployability(None, None, None, None, "", "")


def test_matching_is_case_insensitive_and_first_match_wins():
    assert lookup("AWS", "P4D.24XLARGE", 8) == lookup("aws", "p4d.24xlarge", 8)
    # nebius gpu-l40s row precedes the 1-GPU rule and the catch-all
    first = next(r for r in dep.rows() if r.provider == "nebius" and r.instance_pattern == "gpu-l40s*")
    assert lookup("nebius", "gpu-l40s-d_2gpu-64vcpu-384gb", 2) is first.deployability


def test_gpus_per_node_restricts_a_row():
    # the nebius '*' row with gpus_per_node=1 must not catch an 8-GPU type it does not know
    d = lookup("nebius", "gpu-new-platform_8gpu", 8)
    assert d.cluster is None
    assert lookup("nebius", "gpu-new-platform_1gpu", 1).cluster is False
    assert lookup("nebius", "gpu-new-platform_1gpu", None).cluster is None


def test_unknown_fabric_constant_is_pessimistic_and_per_node():
    assert 0 < UNKNOWN_FABRIC_GBPS_PER_NODE <= 100
    doc = dep.__doc__ or ""
    assert "25 Gb/s" in doc and "learn.microsoft.com" in doc and "docs.aws.amazon.com" in doc


def test_lookup_is_fast_for_100k_calls():
    keys = OFFER_KEYS
    lookup(*keys[0])  # load the file
    start = time.perf_counter()
    for i in range(100_000):
        lookup(*keys[i % len(keys)])
    assert time.perf_counter() - start < 2.0


# --- sold in blocks (NVL72 racks) -------------------------------------------------------------

def test_coreweave_gb200_is_sold_in_whole_racks_of_18_nodes():
    assert dep.node_multiple("coreweave", "4x GB200", 4) == 18
    assert "multiple of 18" in lookup("coreweave", "4x GB200", 4).source


def test_aws_p6e_gb200_is_sold_in_ultraservers_and_oci_gb200_in_any_count():
    assert dep.node_multiple("aws", "p6e-gb200.36xlarge", 4) == 18  # x72 UltraServers: one 72-GPU domain
    assert dep.node_multiple("oci", "BM.GPU.GB200.4", 4) == 1  # memory clusters resize by host
    assert dep.node_multiple("oci", "BM.GPU.GB300.4", 4) == 1
    assert dep.node_multiple("aws", "p5.48xlarge", 8) == 1
    assert dep.node_multiple("nowhere", "x", 8) == 1


def test_a_row_written_without_the_last_column_reads_as_no_multiple():
    good = {"provider": "x", "instance_pattern": "*", "gpus_per_node": "", "cluster": "yes",
            "fabric": "infiniband", "fabric_gbps_per_node": "3200", "max_nodes": "", "source": "s", "note": "n"}
    assert dep.parse_row(good, 2).deployability.node_multiple is None
    assert dep.parse_row({**good, "node_multiple": "18"}, 2).deployability.node_multiple == 18
