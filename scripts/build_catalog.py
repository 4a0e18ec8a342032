#!/usr/bin/env python3
"""Build gpuplan's bundled catalog from the shared research data.

    python scripts/build_catalog.py [--shared ../shared]

Reads ../shared/data/{gpu-specs,provider-attributes,price-snapshot-2025}.csv and the
SkyPilot catalog snapshots (Cudo and the frozen schema-v6 Paperspace/DO files are no longer read), plus
the hand-kept inputs in scripts/inputs/ (prices-dated.csv: one dated public figure per row), and writes
src/gpuplan/catalog/data/{gpus.csv,gpu_aliases.csv,providers.json,offers.csv,
offers-superseded.csv,build-report.json}. The output is deterministic (no timestamps, sorted
rows), so a rebuild from the same inputs changes nothing. Every dropped row is printed with
its reason. The newest dated price per (provider, GPU, node size, pricing) in a region (or for any
region) wins; older ones go to offers-superseded.csv and each conflict is listed in the report with
the freshness (share within 90 / 180 / 365 days of BUILD_DATE, observed vs nominal) and spot counts.
"""
from __future__ import annotations

import argparse
import ast
import collections
import csv
import datetime as dt
import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

OUT = ROOT / "src" / "gpuplan" / "catalog" / "data"
INPUTS = ROOT / "scripts" / "inputs"

# SkyPilot snapshot folder -> provider id, and how each cloud reports GPU memory in GpuInfo.
SKYPILOT_CLOUDS = {
    "lambda": "lambda", "fluidstack": "fluidstack", "ibm": "ibm", "nebius": "nebius",
    "vast": "vast", "hyperbolic": "hyperbolic", "runpod": "runpod", "oci": "oci", "gcp": "gcp",
}
# Snapshot folders no longer read, each with the reason (written to build-report.json).
DEAD_FEEDS = {
    "skypilot/cudo": "Cudo feed dead: gpuhunt dropped Cudo (PR #237, 2026-06-12) and dstack followed (dstackai/dstack#4017); "
                     "SkyPilot's Cudo workflow calls a pre-rename module path (v8/v9 files have 8 / 1 stored revisions)",
    "skypilot/paperspace": "SkyPilot schema-v6 catalog, frozen since 2024-25 (no refresh job upstream; v8 has no Paperspace)",
    "skypilot/do": "SkyPilot schema-v6 DigitalOcean catalog, frozen (2024 launch prices; no refresh job upstream)",
}
BUILD_DATE = dt.date(2026, 11, 23)  # the date freshness is measured against (deterministic output)
# Lambda: SkyPilot copies every instance type across a hard-coded region list that says nothing
# about availability; the build keeps one row per instance type and names the listed regions.
# Vast (SkyPilot's per-bucket median repeated in every location that had a listing) and RunPod (one
# global list price repeated per data-centre country) are the same kind of fan-out.
# OCI: the snapshot is a 16 kB head of the file, so the regions it shows are simply the first ones
# alphabetically; OCI publishes one global price list (the same rate in every commercial region).
COLLAPSE_REGIONS = {"lambda", "vast", "runpod", "oci"}
# GCP shapes sold only as Spot / Flex-start (gpuhunt filters their on-demand rows the same way).
GCP_NO_ON_DEMAND = re.compile(r"^a3-highgpu-[124]g$|^a4x?-|^a3-ultragpu-")
GPUINFO_MEMORY_UNIT = {"runpod": "gb_per_gpu", "vast": "mib_total", "nebius": "missing"}
SKYPILOT_AS_OF = "2026-08"  # README: "roughly August 2026 or earlier"
SKYPILOT_NOTE = "nominal: undated SkyPilot catalog snapshot (roughly Aug 2026 or earlier), commit {commit}"
# Vast: SkyPilot's fetch_vast.py takes the median of every listing in a {count}x-{gpu}-{cpu}-{ram} bucket,
# verified or not; verified-host medians ran 1.5-2x higher in Oct 2026 (shared/reviews/2026-11-catalog.md
# 2.3). Kept only where no dated Vast figure exists for the GPU and node size, and said so in the note.
SKYPILOT_NOTES = {"vast": "nominal: undated SkyPilot Vast bucket median (all hosts; verified-host medians "
                          "1.5-2x higher, Oct 2026), commit {commit}"}
# as_of_note starts with 'observed' (the day the figure was read) or 'nominal' (a period label).
OBSERVED, NOMINAL = "observed", "nominal"
MAX_TEXT = 200  # text cells longer than this are refused by `gpuplan catalog import` (imports.MAX_TEXT)
MARKETPLACE_PROVIDERS = {"vast"}  # their listings are host-set 'community' prices
OFFER_COLUMNS = [
    "provider", "instance_type", "gpu", "gpus_per_node", "region", "pricing", "price_per_hour_usd",
    "price_per_gpu_hour_usd", "vcpus", "ram_gb", "interconnect", "commitment_term_h", "as_of",
    "as_of_note", "source", "confidence",
]
# Reserved offers in the price snapshot without a stated term: AWS Capacity Blocks start at one
# day; other reservations quoted in the seeds are multi-month or multi-year commitments.
RESERVED_TERM_H = {"aws": 24.0, "lambda": 24.0 * 365, "paperspace": 24.0 * 365 * 3}

# Instance types named in the price snapshot's source notes (AWS, Azure, OCI, GCP shapes).
INSTANCE_IN_SOURCE = re.compile(
    r"\b(p\d\w*\.\d+xlarge|g\d\w*\.\d*x?large|ND\w+_v\d|BM\.GPU[\w.\-]*\w|a\d-(?:high|ultra|mega)gpu-\d+g)\b"
)

dropped: list[tuple[str, str]] = []


from gpuplan.planner.geography import listed_regions, region_geography  # noqa: E402 - after the sys.path insert


def drop(what: str, why: str) -> None:
    dropped.append((what, why))


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


# ---- GPUs ----------------------------------------------------------------------------------
def canonical_gpu_id(name: str) -> str:
    return re.sub(r"\s*\(per GPU\)\s*$", "", name.strip())


def build_gpus(shared: Path) -> list[dict[str, str]]:
    rows = read_csv(shared / "data" / "gpu-specs.csv") + read_csv(INPUTS / "gpu-specs-extra.csv")
    out, seen = [], set()
    for r in rows:
        gid = canonical_gpu_id(r["gpu"])
        if gid in seen:
            raise SystemExit(f"duplicate GPU id {gid}")
        seen.add(gid)
        for col in ("memory_gb", "mem_bw_tbps", "bf16_tflops_dense"):
            if not r[col] or float(r[col]) <= 0:
                raise SystemExit(f"GPU {gid}: {col} must be positive")
        out.append({
            "id": gid, "vendor": r["vendor"], "memory_gb": r["memory_gb"], "mem_bw_tbps": r["mem_bw_tbps"],
            "bf16_tflops": r["bf16_tflops_dense"], "fp8_tflops": r["fp8_tflops_dense"],
            "fp4_tflops": r["fp4_tflops_dense"], "tf32_tflops": r["tf32_tflops_dense"],
            "nvlink_gbps": r["nvlink_gbps"] or "0", "tdp_w": r["tdp_w"], "year": r["year"],
            "form_factor": r["form_factor"], "source": r["source"],
        })
    return out


def build_aliases(gpu_ids: set[str]) -> list[dict[str, str]]:
    rows = read_csv(INPUTS / "gpu-aliases.csv")
    for r in rows:
        if r["gpu"] not in gpu_ids:
            raise SystemExit(f"alias {r['alias']!r} points at unknown GPU {r['gpu']!r}")
    return sorted(rows, key=lambda r: (r["gpu"], r["alias"].lower()))


# ---- providers -----------------------------------------------------------------------------
def clean(v: str | None) -> str | None:
    v = (v or "").strip()
    return v or None


def build_providers(shared: Path) -> list[dict]:
    attrs = {r["provider"]: r for r in read_csv(shared / "data" / "provider-attributes.csv")}
    extra = yaml.safe_load((INPUTS / "providers.yaml").read_text(encoding="utf-8"))["providers"]
    out = []
    for e in extra:
        a = attrs.pop(e["name"], None)
        kind_text = (a["kind"] if a else e.get("kind")) or ""
        kind = kind_text.replace("(unverified)", "").strip()
        rec = {
            "id": e["id"], "name": e["name"], "kind": kind, "kind_unverified": "unverified" in kind_text,
            "billing_granularity": clean(a and a["billing_granularity"]),
            "billing_increment_s": e.get("billing_increment_s"),
            "minimum_billing_s": e.get("minimum_billing_s"),
            "kubernetes": clean(a and a["kubernetes"]), "bare_metal": clean(a and a["bare_metal"]),
            "infiniband": clean(a and a["infiniband"]), "has_infiniband": e.get("has_infiniband"),
            "egress_fee": clean(a and a["egress_fee"]), "egress_usd_per_gb": e.get("egress_usd_per_gb"),
            "spot": clean(a and a["spot"]), "has_spot": e.get("has_spot"),
            "sla": clean(a and a["sla"]), "regions": clean(a and a["regions"]),
            "geographies": e.get("geographies", []), "best_for": e.get("best_for", []),
            "notes": (a["notes"] if a else e.get("notes", "")) or "",
            "source": (a["source"] if a else e.get("source", "")) or "",
            "aliases": e.get("aliases", []),
            "inter_node_fabric": e.get("inter_node_fabric"),
            "numbers_basis": e.get("basis", ""),
            # Why no offer carries a price (no public list price, sales-only...); None = priced.
            "no_public_price": e.get("no_public_price"),
        }
        for k in ("billing_granularity", "kubernetes", "bare_metal", "infiniband", "egress_fee", "spot", "sla", "regions"):
            if rec[k] and rec[k].lower() in ("unknown",):
                rec[k] = None
        out.append(rec)
    if attrs:
        raise SystemExit(f"providers in the attributes CSV without an entry in providers.yaml: {sorted(attrs)}")
    return sorted(out, key=lambda p: p["id"])


def provider_lookup(providers: list[dict]) -> dict[str, str]:
    table = {}
    for p in providers:
        for name in [p["id"], p["name"], *p["aliases"]]:
            table[name.lower()] = p["id"]
    return table


# ---- offers --------------------------------------------------------------------------------
def fmt_num(x: float | None) -> str:
    if x is None:
        return ""
    return f"{x:.6f}".rstrip("0").rstrip(".")


def make_offer(**kw) -> dict[str, str]:
    from gpuplan.catalog.records import Offer

    offer = Offer(**kw)  # validates: positive prices, per-GPU arithmetic, pricing type
    row = offer.model_dump(mode="json")
    return {k: ("" if row[k] is None else (fmt_num(row[k]) if isinstance(row[k], float) else str(row[k]))) for k in OFFER_COLUMNS}


def refine_gpu(gid: str, instance_type: str, gpuinfo_name: str, mem_gb_per_gpu: float | None, gpus) -> str:
    """Pick the variant the instance really has: PCIe vs SXM from names, 40 vs 80 GB from memory."""
    hint = f"{instance_type} {gpuinfo_name}".lower()
    if gid == "A100-40GB-SXM" and mem_gb_per_gpu and mem_gb_per_gpu >= 60:
        gid = "A100-80GB-SXM"
    if "pci" in hint:
        if gid.startswith("A100") and (gid == "A100-80GB-SXM" or (mem_gb_per_gpu or 0) >= 60):
            gid = "A100-80GB-PCIe"
        elif gid.startswith("A100") and mem_gb_per_gpu and mem_gb_per_gpu < 60:
            gid = "A100-40GB-PCIe"  # e.g. Vast '2x-A100_PCIE' with 80 GiB in total
        elif gid == "H100-SXM":
            gid = "H100-PCIe"
    if gid == "A100-40GB-SXM" and re.fullmatch(r"gpu_[124]x_a100", instance_type):
        # Lambda's plain gpu_Nx_a100 are the 40 GB PCIe cards (its API now names them
        # gpu_Nx_a100_pcie_40gb: ewyluda/gpu-price-index 2026-10-10); only *_sxm4 are SXM.
        gid = "A100-40GB-PCIe"
    if gid == "H100-SXM" and re.search(r"nvl(?!ink)", hint):
        gid = "H100-NVL"
    return gid


def parse_gpuinfo(text: str) -> tuple[str, float | None]:
    """(GPU name, reported memory in MiB) from SkyPilot's Python-dict-like GpuInfo."""
    if not text or not text.strip().startswith("{"):
        return (text or "", None)
    try:
        info = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return ("", None)
    info = {k.lower(): v for k, v in info.items()}
    gpus = info.get("gpus") or [{}]
    g = {k.lower(): v for k, v in gpus[0].items()}
    mem = {k.lower(): v for k, v in (g.get("memoryinfo") or {}).items()}.get("sizeinmib")
    return (str(g.get("name", "")), float(mem) if mem else None)


def skypilot_offers(shared: Path, providers: dict[str, dict]) -> list[dict[str, str]]:
    from gpuplan.catalog.gpus import all_gpus, resolve_gpu_id
    from gpuplan.catalog.records import parse_as_of
    from gpuplan.catalog.validation import memory_problem, price_problem
    from gpuplan.errors import UnknownNameError

    gpus = all_gpus()
    base = shared / "catalog-snapshots" / "skypilot"
    manifest = {r["local_file"]: r for r in read_csv(base / "MANIFEST.csv")}
    out = []
    for folder, pid in sorted(SKYPILOT_CLOUDS.items()):
        files = sorted((base / folder).glob("vms*.csv"))
        for path in files:
            rel = f"{folder}/{path.name}"
            commit = manifest.get(rel, {}).get("source_commit", "unknown")[:12]
            upstream = manifest.get(rel, {}).get("source_path_in_repo", rel)
            source = f"skypilot-catalog {upstream}@{commit}"
            as_of, note = parse_as_of(SKYPILOT_AS_OF), SKYPILOT_NOTES.get(folder, SKYPILOT_NOTE)
            for i, r in enumerate(read_csv(path), start=2):
                where = f"skypilot/{rel} line {i} ({r.get('InstanceType')})"
                acc = (r.get("AcceleratorName") or "").strip()
                if not acc:
                    if folder == "gcp" and re.match(r"^(a2|a3|a4|g2)-", r.get("InstanceType", "")):
                        drop(where, "GCP host-only price; its GPU price rows are not in the partial snapshot")
                    continue  # CPU-only instance
                try:
                    gid = resolve_gpu_id(acc)
                except UnknownNameError:
                    drop(where, f"GPU {acc!r} not in the spec table")
                    continue
                count = float(r.get("AcceleratorCount") or 0)
                if count <= 0:
                    drop(where, "no GPU count")
                    continue
                gname, mem_mib = parse_gpuinfo(r.get("GpuInfo", ""))
                unit = GPUINFO_MEMORY_UNIT.get(folder, "mib_per_gpu")
                mem_gb = None
                if mem_mib and unit == "gb_per_gpu":
                    mem_gb = mem_mib * 1.073741824  # reported GiB, labelled MiB
                elif mem_mib and unit == "mib_total":
                    mem_gb = mem_mib * 2**20 / 1e9 / count
                elif mem_mib and unit == "mib_per_gpu":
                    mem_gb = mem_mib * 2**20 / 1e9
                gid = refine_gpu(gid, r.get("InstanceType", ""), gname, mem_gb, gpus)
                if problem := memory_problem(gpus[gid], mem_gb):
                    drop(where, problem)
                    continue
                common = dict(
                    provider=pid, instance_type=r["InstanceType"], gpu=gid, gpus_per_node=count,
                    region=clean_region(r.get("Region")), vcpus=float(r["vCPUs"]) if r.get("vCPUs") else None,
                    ram_gb=round(float(r["MemoryGiB"]) * 1.073741824, 1) if r.get("MemoryGiB") else None,
                    interconnect=providers[pid].get("inter_node_fabric"),
                    as_of=as_of, as_of_note=note.format(commit=commit),
                    source=source, confidence="aggregated",
                )
                price = float(r["Price"]) if r.get("Price") else 0.0
                on_demand_type = "community" if pid in MARKETPLACE_PROVIDERS else "on_demand"
                if pid == "gcp" and GCP_NO_ON_DEMAND.search(r["InstanceType"]):
                    drop(where, "GCP shape sold only as Spot / Flex-start: no on-demand offer")
                elif problem := price_problem(gpus[gid], price / count):
                    drop(where, f"{on_demand_type}: {problem}")
                else:
                    out.append(make_offer(**common, pricing=on_demand_type, price_per_hour_usd=price,
                                          price_per_gpu_hour_usd=price / count))
                spot = float(r["SpotPrice"]) if r.get("SpotPrice") else 0.0
                if spot <= 0:
                    continue  # empty or 0.00 = no spot data
                spot_type = "interruptible" if pid in MARKETPLACE_PROVIDERS else "spot"
                if price > 0 and spot > price * 1.0001:
                    drop(where, f"spot ${spot:.2f} above on-demand ${price:.2f}")
                elif price > 0 and abs(spot - price) < 1e-9:
                    drop(where, "spot equals on-demand (a copied column, not a spot price)")
                elif problem := price_problem(gpus[gid], spot / count):
                    drop(where, f"spot: {problem}")
                else:
                    out.append(make_offer(**common, pricing=spot_type, price_per_hour_usd=spot,
                                          price_per_gpu_hour_usd=spot / count))
    return out


def snapshot_offers(shared: Path, lookup: dict[str, str], providers: dict[str, dict]) -> list[dict[str, str]]:
    from gpuplan.catalog.gpus import all_gpus, resolve_gpu_id
    from gpuplan.catalog.records import parse_as_of
    from gpuplan.catalog.validation import price_problem
    from gpuplan.errors import UnknownNameError

    gpus = all_gpus()
    out = []
    for i, r in enumerate(read_csv(shared / "data" / "price-snapshot-2025.csv"), start=2):
        where = f"price-snapshot-2025.csv line {i} ({r['provider']} {r['gpu']})"
        pid = lookup.get(r["provider"].strip().lower())
        if pid is None:
            drop(where, f"provider {r['provider']!r} unknown")
            continue
        try:
            gid = resolve_gpu_id(r["gpu"])
        except UnknownNameError:
            drop(where, f"GPU {r['gpu']!r} not in the spec table")
            continue
        count = float(r["gpu_count_per_instance"])
        per_gpu = float(r["price_per_gpu_hour_usd"])
        if problem := price_problem(gpus[gid], per_gpu):
            drop(where, problem)
            continue
        label = r["as_of"].strip()
        try:
            as_of = parse_as_of(label)
        except ValueError:
            as_of = parse_as_of(SKYPILOT_AS_OF)  # 'undated snapshot' rows come from the same snapshots
        kind = OBSERVED if re.fullmatch(r"\d{4}-\d{2}-\d{2}", label) else NOMINAL
        pricing = r["pricing_type"].strip()
        named = INSTANCE_IN_SOURCE.search(r["source_url_or_doc"])
        if pid == "gcp" and pricing == "on_demand" and named and GCP_NO_ON_DEMAND.search(named[1]):
            drop(where, "GCP shape sold only as Spot / Flex-start: no on-demand offer")
            continue
        term = RESERVED_TERM_H.get(pid) if pricing == "reserved" else None
        if pricing == "reserved" and term is None:
            drop(where, "reserved price with no known commitment term")
            continue
        n = int(count) if count == int(count) else count
        out.append(make_offer(
            provider=pid, instance_type=named[1] if named else f"{n}x {gid}", gpu=gid, gpus_per_node=count,
            region=r["region_if_any"].strip(), pricing=pricing,
            price_per_hour_usd=round(per_gpu * count, 6), price_per_gpu_hour_usd=round(per_gpu * count, 6) / count,
            interconnect=providers[pid].get("inter_node_fabric"), commitment_term_h=term,
            as_of=as_of, as_of_note=f"{kind}: {label}", source=r["source_url_or_doc"].strip(), confidence=r["confidence"].strip(),
        ))
    return out


def drop_skypilot_quotes(quoted: list[dict[str, str]], direct: list[dict[str, str]]):
    """Price-snapshot rows that quote a SkyPilot catalog we also read directly: the same price is a
    duplicate; a different one is an older catalog version, kept as history only."""
    by_key = collections.defaultdict(list)
    for r in direct:
        by_key[(r["provider"], r["gpu"], r["gpus_per_node"], r["pricing"])].append(float(r["price_per_gpu_hour_usd"]))
    keep, older = [], []
    for r in quoted:
        prices = by_key.get((r["provider"], r["gpu"], r["gpus_per_node"], r["pricing"]))
        if "skypilot" not in r["source"].lower() or not prices:
            keep.append(r)
            continue
        what = f"price-snapshot {r['provider']} {r['gpu']} x{r['gpus_per_node']} {r['pricing']}"
        if any(abs(p - float(r["price_per_gpu_hour_usd"])) <= 0.01 * p for p in prices):
            drop(what, "duplicate of a row read directly from the SkyPilot snapshot")
        else:
            older.append(r)
            drop(what, "older SkyPilot catalog version than the snapshot read directly (kept as history)")
    return keep, older


def dated_offers(lookup: dict[str, str], providers: dict[str, dict]) -> list[dict[str, str]]:
    """The hand-kept dated prices (scripts/inputs/prices-dated.csv): one public figure per row,
    with its source, the day it was read (observed) or the period it names (nominal)."""
    from gpuplan.catalog.gpus import all_gpus, resolve_gpu_id
    from gpuplan.catalog.records import parse_as_of
    from gpuplan.catalog.validation import price_problem
    from gpuplan.errors import UnknownNameError

    gpus = all_gpus()
    path = INPUTS / "prices-dated.csv"
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip() and not ln.startswith("#")]
    out = []
    for i, r in enumerate(csv.DictReader(lines), start=2):
        where = f"prices-dated.csv row {i} ({r['provider']} {r['instance_type']} {r['pricing']})"
        pid = lookup.get(r["provider"].strip().lower())
        if pid is None:
            raise SystemExit(f"{where}: provider {r['provider']!r} unknown")
        try:
            gid = resolve_gpu_id(r["gpu"])
        except UnknownNameError:
            raise SystemExit(f"{where}: GPU {r['gpu']!r} not in the spec table") from None
        if r["date_kind"] not in (OBSERVED, NOMINAL):
            raise SystemExit(f"{where}: date_kind must be {OBSERVED!r} or {NOMINAL!r}")
        if not r["source"].strip():
            raise SystemExit(f"{where}: no source")
        count = float(r["gpus_per_node"])
        if r["price_per_hour_usd"]:
            node = float(r["price_per_hour_usd"])
        elif r["price_per_gpu_hour_usd"]:
            node = round(float(r["price_per_gpu_hour_usd"]) * count, 6)
        else:
            raise SystemExit(f"{where}: no price")
        if r["pricing"] == "on_demand" and pid == "gcp" and GCP_NO_ON_DEMAND.search(r["instance_type"]):
            drop(where, "GCP shape sold only as Spot / Flex-start: no on-demand offer")
            continue
        if problem := price_problem(gpus[gid], node / count):
            drop(where, problem)
            continue
        if "floor ('from')" in r["note"]:
            # a 'from $X' headline is the lowest price anyone pays, not the price a run pays: never a
            # current offer (unknown is pessimistic); the feed's own listed price stays current
            drop(where, "a 'from' floor is a lower bound, not a price")
            continue
        note = f"{r['date_kind']}: {r['as_of']}" + (f"; {r['note'].strip()}" if r["note"].strip() else "")
        for col, text in (("source", r["source"].strip()), ("as_of_note", note)):
            if len(text) > MAX_TEXT:  # the import format (and `catalog export`) caps text cells
                raise SystemExit(f"{where}: {col} is {len(text)} characters; at most {MAX_TEXT}")
        out.append(make_offer(
            provider=pid, instance_type=r["instance_type"].strip(), gpu=gid, gpus_per_node=count,
            region=r["region"].strip(), pricing=r["pricing"].strip(), price_per_hour_usd=node,
            price_per_gpu_hour_usd=node / count, interconnect=providers[pid].get("inter_node_fabric"),
            as_of=parse_as_of(r["as_of"]), as_of_note=note, source=r["source"].strip(),
            confidence=r["confidence"].strip(),
        ))
    return out


def collapse_region_fanout(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """One row per instance type (and price) for providers whose feed copies each type across a
    fixed region list; the regions it listed go into the note, the region becomes '' (any)."""
    keep, groups = [], collections.defaultdict(list)
    for r in rows:
        if r["provider"] in COLLAPSE_REGIONS and r["region"]:
            groups[(r["provider"], r["instance_type"], r["gpu"], r["gpus_per_node"], r["pricing"],
                    r["price_per_hour_usd"], r["as_of"], r["source"])].append(r)
        else:
            keep.append(r)
    prices_per_type = collections.Counter(key[:5] for key in groups)
    for key, group in groups.items():
        regions = sorted({r["region"] for r in group})
        row = dict(group[0])
        # the regions the feed listed at this price, '/'-separated (the planner places the offer in the
        # listed region nearest the users); a list too long for one cell ends in '+N more'
        row["region"] = _region_list(regions)
        row["as_of_note"] = _region_note(row["as_of_note"], regions)
        keep.append(row)
        if len(group) > 1:
            drop(f"{key[0]} {key[1]} x{len(group)} regions", "region fan-out of one list price collapsed to one row")
    return keep


def clean_region(region: str | None) -> str:
    """A region as listed, without the empty parts of a marketplace's 'city, country, continent'
    (Vast hosts that state no city are listed as ', CN, AS')."""
    return ", ".join(part.strip() for part in (region or "").split(",") if part.strip())


def _region_list(regions: list[str], limit: int = 160) -> str:
    """'us-east-1/eu-central-1/...' within `limit` characters; the rest counted as '+N more'. One region
    per geography comes first, so a cut list still places the offer near every user group it can."""
    seen: collections.Counter = collections.Counter()
    ranked = []
    for reg in sorted(regions):
        geo = region_geography(reg)
        ranked.append((seen[geo], reg))
        seen[geo] += 1
    regions = [reg for _, reg in sorted(ranked)]
    shown: list[str] = []
    for i, reg in enumerate(regions):
        rest = len(regions) - i - 1
        if len("/".join(shown + [reg])) + (len(f"/+{rest} more") if rest else 0) > limit:
            return "/".join(shown + [f"+{len(regions) - i} more"])
        shown.append(reg)
    return "/".join(shown)


def _region_note(note: str, regions: list[str]) -> str:
    """The note plus the regions the feed listed, as many as fit in MAX_TEXT characters."""
    head = f"{note}; listed in {len(regions)} regions at this price (not availability): "
    shown = []
    for i, reg in enumerate(regions):
        rest = len(regions) - i - 1
        tail = f" +{rest} more" if rest else ""
        if len(head + "; ".join(shown + [reg]) + tail) > MAX_TEXT:
            return head + "; ".join(shown) + f" +{len(regions) - i} more"
        shown.append(reg)
    return head + "; ".join(shown)


def is_observed(r: dict[str, str]) -> bool:
    return r["as_of_note"].startswith(OBSERVED)


def _covers(newer: dict[str, str], older: dict[str, str]) -> bool:
    """A newer price replaces an older one of the same kind in its region, or everywhere when it is
    a list price for any region ('' or 'global ...'); an older any-region ('') price is replaced by
    a newer observed price in any region."""
    region = newer["region"].strip().lower()
    if region == "" or region.startswith("global") or region == older["region"].strip().lower():
        return True
    # An older price that names no region claims to hold everywhere; a newer observed price of the
    # same kind in any region shows that claim is out of date (e.g. an undated Azure spot quote
    # against dated per-region Retail Prices API reads).
    return older["region"].strip() == "" and is_observed(newer)


def drop_outdated(rows: list[dict[str, str]], conflicts: list[dict]) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """The newest dated price wins: a row is history once a strictly newer price exists for the same
    provider, GPU, node size and pricing in its region (or for any region). Rows of the same date
    (different instance types or presets) stay side by side."""
    by_kind: dict[tuple, list[dict[str, str]]] = collections.defaultdict(list)
    for r in rows:
        by_kind[(r["provider"], r["gpu"], r["gpus_per_node"], r["pricing"])].append(r)
    keep, old = [], []
    inherited: dict[int, set[str]] = collections.defaultdict(set)
    for r in rows:
        newer = [n for n in by_kind[(r["provider"], r["gpu"], r["gpus_per_node"], r["pricing"])]
                 if n["as_of"] > r["as_of"] and _covers(n, r)]
        if not newer:
            keep.append(r)
            continue
        best = max(newer, key=lambda n: (n["as_of"], is_observed(n), n["instance_type"] == r["instance_type"]))
        if not best["region"].strip() and r["region"].strip():
            inherited[id(best)].update(listed_regions(r["region"]))
        old.append(r)
        conflicts.append(_conflict(r, best))
        drop(f"{r['provider']} {r['instance_type']} {r['region'] or '-'} {r['pricing']} @ {r['as_of']}",
             f"a newer {best['as_of']} price exists for the same GPU, node size and pricing (kept as history)")
    # A list price that names no region replaces the feed's regional rows: it is offered in the regions
    # the feed listed for that GPU and size (the planner places it in the one nearest the users).
    for r in keep:
        if id(r) in inherited:
            r["region"] = _region_list(sorted(inherited[id(r)]))
            tail = "; regions as the superseded feed listed them"
            if len(r["as_of_note"]) + len(tail) <= MAX_TEXT:
                r["as_of_note"] += tail
    return keep, old


def _conflict(old: dict[str, str], kept: dict[str, str]) -> dict:
    return {
        "key": [old["provider"], old["instance_type"], old["gpu"], old["gpus_per_node"], old["region"], old["pricing"]],
        "kept": {"instance_type": kept["instance_type"], "region": kept["region"], "price_per_gpu_hour_usd": kept["price_per_gpu_hour_usd"],
                 "as_of": kept["as_of"], "source": kept["source"][:120]},
        "superseded": {"price_per_gpu_hour_usd": old["price_per_gpu_hour_usd"], "as_of": old["as_of"], "source": old["source"][:120]},
    }


def resolve_duplicates(rows: list[dict[str, str]], conflicts: list[dict]) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """One offer per (provider, instance, GPU, count, region, pricing): the newest wins, then the
    more trusted source; the others are kept as price history."""
    from gpuplan.catalog.records import CONFIDENCE_RANK

    groups: dict[tuple, list[dict[str, str]]] = collections.defaultdict(list)
    for r in rows:
        key = (r["provider"], r["instance_type"], r["gpu"], r["gpus_per_node"], r["region"], r["pricing"])
        groups[key].append(r)
    current, superseded = [], []
    for key, group in groups.items():
        group.sort(key=lambda r: (r["as_of"], is_observed(r), CONFIDENCE_RANK[r["confidence"]], -float(r["price_per_hour_usd"])), reverse=True)
        best = group[0]
        current.append(best)
        what = f"{key[0]} {key[1]} {key[4] or '-'} {key[5]}"
        for old in group[1:]:
            if (old["as_of"], old["source"]) == (best["as_of"], best["source"]):
                drop(f"{what} ${old['price_per_hour_usd']}/h", "same instance and region in another availability zone; cheapest kept")
            else:
                superseded.append(old)
                conflicts.append(_conflict(old, best))
                drop(f"{what} @ {old['as_of']}", f"superseded by the {best['as_of']} price (kept as history)")
    order = lambda r: (r["provider"], r["gpu"], float(r["gpus_per_node"]), r["pricing"], r["region"], r["instance_type"], r["as_of"])
    return sorted(current, key=order), sorted(superseded, key=order)


def freshness(rows: list[dict[str, str]]) -> dict:
    """Share of offers whose date is within 90 / 180 / 365 days of BUILD_DATE, observed vs nominal."""
    n = len(rows) or 1
    out: dict = {"offers": len(rows), "observed": sum(map(is_observed, rows)),
                 "nominal": sum(not is_observed(r) for r in rows),
                 "within_days": {}, "observed_within_days": {}}
    for days in (90, 180, 365):
        fresh = [r for r in rows if (BUILD_DATE - dt.date.fromisoformat(r["as_of"])).days <= days]
        out["within_days"][str(days)] = round(len(fresh) / n, 3)
        out["observed_within_days"][str(days)] = round(sum(map(is_observed, fresh)) / n, 3)
    return out


def write_csv(path: Path, rows: list[dict[str, str]], columns: list[str]) -> None:
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, columns, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    ap.add_argument("--out", type=Path, default=OUT, help="output folder (default: the package data)")
    ap.add_argument("--quiet", action="store_true", help="print only the summary")
    args = ap.parse_args()
    shared, out_dir = args.shared, args.out
    if not (shared / "data" / "gpu-specs.csv").exists():
        raise SystemExit(f"no shared data under {shared}")
    out_dir.mkdir(parents=True, exist_ok=True)

    gpus = build_gpus(shared)
    write_csv(out_dir / "gpus.csv", gpus, list(gpus[0]))
    aliases = build_aliases({g["id"] for g in gpus})
    write_csv(out_dir / "gpu_aliases.csv", aliases, ["alias", "gpu"])
    from gpuplan.catalog import gpus as gpu_module

    gpu_module.all_gpus.cache_clear()
    gpu_module._alias_table.cache_clear()

    providers = build_providers(shared)
    (out_dir / "providers.json").write_text(json.dumps(providers, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    by_id = {p["id"]: p for p in providers}

    lookup = provider_lookup(providers)
    direct = collapse_region_fanout(skypilot_offers(shared, by_id))
    quoted, older = drop_skypilot_quotes(snapshot_offers(shared, lookup, by_id), direct)
    conflicts: list[dict] = []
    current, superseded = resolve_duplicates(direct + quoted + dated_offers(lookup, by_id), conflicts)
    current, outdated = drop_outdated(current, conflicts)
    superseded = sorted(superseded + older + outdated, key=lambda r: (r["provider"], r["gpu"], r["as_of"], r["instance_type"], r["region"]))
    write_csv(out_dir / "offers.csv", current, OFFER_COLUMNS)
    write_csv(out_dir / "offers-superseded.csv", superseded, OFFER_COLUMNS)

    reasons = collections.Counter(re.sub(r"\$[\d.]+|'[^']*'|\d+(\.\d+)?", "#", why) for _, why in dropped)
    priced = {r["provider"] for r in current}
    unpriced = {p["id"]: p.get("no_public_price") for p in providers if p["id"] not in priced}
    missing = sorted(pid for pid, why in unpriced.items() if not why)
    if missing:
        raise SystemExit(f"providers with no priced offer and no no_public_price reason: {missing}")
    report = {
        "build_date": BUILD_DATE.isoformat(),
        "gpus": len(gpus), "aliases": len(aliases), "providers": len(providers),
        "offers": len(current), "superseded": len(superseded),
        "offers_by_provider": dict(sorted(collections.Counter(r["provider"] for r in current).items())),
        "freshness": freshness(current),
        "freshness_by_provider": {pid: freshness([r for r in current if r["provider"] == pid])["observed_within_days"]["90"]
                                  for pid in sorted(priced)},
        "spot_by_provider": dict(sorted(collections.Counter(
            r["provider"] for r in current if r["pricing"] in ("spot", "interruptible")).items())),
        "spot_offers": sum(r["pricing"] in ("spot", "interruptible") for r in current),
        "confidence": dict(sorted(collections.Counter(r["confidence"] for r in current).items())),
        "no_public_price": dict(sorted(unpriced.items())),
        "dead_feeds": DEAD_FEEDS,
        "conflicts_resolved": len(conflicts),
        "conflicts": sorted(conflicts, key=lambda c: [str(x) for x in c["key"]] + [c["superseded"]["as_of"]]),
        "dropped": len(dropped), "dropped_by_reason": dict(reasons.most_common()),
    }
    (out_dir / "build-report.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    if not args.quiet:
        for what, why in dropped:
            print(f"dropped: {what}: {why}")
        for c in report["conflicts"]:
            k, kept, old = c["key"], c["kept"], c["superseded"]
            print(f"conflict: {' '.join(map(str, k))}: kept ${kept['price_per_gpu_hour_usd']}/GPU-h @ {kept['as_of']} "
                  f"({kept['instance_type']}), superseded ${old['price_per_gpu_hour_usd']} @ {old['as_of']}")
    summary = {k: v for k, v in report.items() if k not in ("conflicts", "dropped_by_reason")}
    print(json.dumps(summary, indent=1))
    print(f"conflicts resolved: {len(conflicts)} (listed in build-report.json)")


if __name__ == "__main__":
    main()
