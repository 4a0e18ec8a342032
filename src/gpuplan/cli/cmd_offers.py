"""`gpuplan gpus`, `gpuplan providers`, `gpuplan offers`: the catalog, listed."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from gpuplan.cli.app import app

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
CsvOpt = Annotated[bool, typer.Option("--csv", help="Print CSV.")]
DbOpt = Annotated[Optional[str], typer.Option("--db", help="Catalog store (default: $GPUPLAN_DB or the user data dir).")]

GPU_COLUMNS = [
    ("id", "GPU"), ("vendor", "vendor"), ("memory_gb", "mem GB"), ("mem_bw_tbps", "HBM TB/s"),
    ("bf16_tflops", "BF16 TF"), ("fp8_tflops", "FP8 TF"), ("fp4_tflops", "FP4 TF"),
    ("nvlink_gbps", "NVLink GB/s"), ("tdp_w", "TDP W"), ("year", "year"), ("form_factor", "form factor"),
]


@app.command("gpus")
def gpus_command(
    compare: Annotated[Optional[str], typer.Option("--compare", help="Comma-separated GPUs side by side, e.g. H100,MI300X,B200.")] = None,
    vendor: Annotated[Optional[str], typer.Option("--vendor", help="Only this vendor (NVIDIA, AMD, Intel, Google).")] = None,
    as_json: JsonOpt = False,
    as_csv: CsvOpt = False,
) -> None:
    """The GPU spec table (dense peaks; sparse datasheet figures halved)."""
    from gpuplan.catalog.gpus import all_gpus, get_gpu
    from gpuplan.cli.output import emit, print_json, print_table
    from gpuplan.errors import UsageError

    if compare:
        names = [n.strip() for n in compare.split(",") if n.strip()]
        if not names:
            raise UsageError("--compare needs at least one GPU name")
        gpus = [get_gpu(n) for n in names]
    else:
        gpus = list(all_gpus().values())
    if vendor:
        gpus = [g for g in gpus if g.vendor.lower() == vendor.strip().lower()]
        if not gpus:
            raise UsageError(f"no GPUs from vendor {vendor!r}; vendors: {', '.join(sorted({g.vendor for g in all_gpus().values()}))}")
    rows = [g.model_dump() for g in gpus]
    if compare and not (as_json or as_csv):
        # Transposed: one column per GPU, one row per spec, easier to compare.
        spec_rows = [{"spec": header, **{r["id"]: r[key] for r in rows}} for key, header in GPU_COLUMNS[1:]]
        print_table(spec_rows, [("spec", "")] + [(r["id"], r["id"]) for r in rows], title="GPU comparison")
        return
    if as_json:
        print_json(rows)
        return
    emit(rows, GPU_COLUMNS + ([("source", "source")] if as_csv else []), as_csv=as_csv, title=f"{len(rows)} GPUs")


@app.command("providers")
def providers_command(
    kind: Annotated[Optional[str], typer.Option("--kind", help="hyperscaler, neocloud, marketplace or decentralized (comma-separated).")] = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
    as_csv: CsvOpt = False,
) -> None:
    """Every provider: kind, billing, Kubernetes, InfiniBand, spot, egress, offers, cheapest GPU prices."""
    from gpuplan.catalog.catalog import Catalog, _union, _check_kind
    from gpuplan.cli.output import emit, fmt_usd

    cat = Catalog.load(db)
    kinds = _union(kind, _check_kind)
    rows = [r for r in cat.provider_summary() if kinds is None or r["kind"] in kinds]
    if as_json:
        emit(rows, [], as_json=True)
        return
    for r in rows:
        cheapest = sorted(r["cheapest_per_gpu_hour_usd"].items(), key=lambda kv: kv[1])[:4]
        r["cheapest"] = ", ".join(f"{g} {fmt_usd(p)}" for g, p in cheapest) or "-"
        r["best_for_text"] = ", ".join(r["best_for"]) or "-"
        r["kind_text"] = r["kind"] + (" (unverified)" if r["kind_unverified"] else "")
        r["infiniband_text"] = {True: "yes", False: "no", None: "?"}[r["has_infiniband"]]
        r["spot_text"] = {True: "yes", False: "no", None: "?"}[r["has_spot"]]
        r["egress_text"] = "?" if r["egress_usd_per_gb"] is None else f"${r['egress_usd_per_gb']:.3g}/GB"
        r["newest_text"] = str(r["newest_as_of"]) if r["newest_as_of"] else "-"
        if r["no_public_price"]:
            r["cheapest"] = f"no public price: {r['no_public_price']}"
    if as_csv:
        flat = [{k: (v if not isinstance(v, (list, dict)) else str(v)) for k, v in r.items()} for r in rows]
        emit(flat, [], as_csv=True)
        return
    emit(rows, [
        ("name", "provider"), ("kind_text", "kind"), ("billing_granularity", "billing"),
        ("infiniband_text", "IB"), ("spot_text", "spot"), ("egress_text", "egress"),
        ("best_for_text", "best for"), ("priced_offer_count", "offers"), ("spot_offer_count", "spot offers"),
        ("newest_text", "newest as_of"), ("cheapest", "cheapest $/GPU-h"),
    ], title=f"{len(rows)} providers", caption=f"offers from: {cat.origin}; spot offers = spot or interruptible")


@app.command("offers")
def offers_command(
    gpu: Annotated[Optional[str], typer.Option("--gpu", help="GPU name(s), comma-separated; 'H100' means every H100 variant.")] = None,
    min_gpus: Annotated[Optional[float], typer.Option("--min-gpus", help="At least this many GPUs per node.")] = None,
    provider: Annotated[Optional[str], typer.Option("--provider", help="Provider id(s) or name(s), comma-separated.")] = None,
    kind: Annotated[Optional[str], typer.Option("--kind", help="hyperscaler, neocloud, marketplace, decentralized.")] = None,
    pricing: Annotated[Optional[str], typer.Option("--pricing", help="on_demand, spot, reserved, community, interruptible.")] = None,
    region: Annotated[Optional[str], typer.Option("--region", help="Region substring, case-insensitive.")] = None,
    max_price: Annotated[Optional[float], typer.Option("--max-price", help="Max USD per GPU-hour.")] = None,
    max_price_age: Annotated[Optional[int], typer.Option("--max-price-age", help="Only prices at most this many days old.")] = None,
    min_confidence: Annotated[Optional[str], typer.Option("--min-confidence", help="primary, aggregated, third-party or unverified (highest first).")] = None,
    sort: Annotated[str, typer.Option("--sort", help="price, node-price, gpus, provider, gpu, age, confidence.")] = "price",
    limit: Annotated[Optional[int], typer.Option("--limit", help="Show at most N offers.")] = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
    as_csv: CsvOpt = False,
) -> None:
    """Every matching offer across all providers, cheapest per GPU-hour first, with price age and confidence."""
    import datetime as dt

    from gpuplan.catalog.catalog import Catalog
    from gpuplan.catalog.records import STALE_AFTER_DAYS
    from gpuplan.cli.output import emit, fmt_usd

    cat = Catalog.load(db)
    offers = cat.offers(
        gpu=gpu, min_gpus=min_gpus, provider=provider, kind=kind, pricing=pricing, region=region,
        max_price=max_price, max_age_days=max_price_age, min_confidence=min_confidence, sort=sort, limit=limit,
    )
    today = dt.date.today()
    rows = []
    for o in offers:
        r = o.model_dump(mode="json")
        r["age_days"] = o.age_days(today)
        r["stale"] = o.is_stale(today)
        r["provider_kind"] = cat.providers[o.provider].kind if o.provider in cat.providers else None
        rows.append(r)
    if as_json or as_csv:
        emit(rows, [], as_json=as_json, as_csv=as_csv)
        return
    for r in rows:
        r["gpus_text"] = f"{r['gpus_per_node']:g}"
        r["age_text"] = f"{r['age_days']}d" + (" stale" if r["stale"] else "")
        fabric = r.get("interconnect") or "?"
        gbps = f" {r['fabric_gbps_per_node']:g}G" if r.get("fabric_gbps_per_node") else ""
        r["cluster_text"] = {True: "cluster", False: "single", None: "?"}[r.get("cluster")] + f" {fabric}{gbps}" \
            + (f" <={r['max_nodes']}" if r.get("max_nodes") else "")
    emit(rows, [
        ("provider", "provider"), ("instance_type", "instance"), ("gpu", "GPU"), ("gpus_text", "GPUs"),
        ("cluster_text", "multi-node"),
        ("region", "region"), ("pricing", "pricing"), ("price_per_hour_usd", "$/h"),
        ("price_per_gpu_hour_usd", "$/GPU-h"), ("age_text", "price age"), ("confidence", "confidence"),
    ], title=f"{len(rows)} offers", formatters={"price_per_hour_usd": fmt_usd, "price_per_gpu_hour_usd": fmt_usd},
        caption=f"offers from: {cat.origin}; prices older than {STALE_AFTER_DAYS} days are marked stale; multi-node: "
                "cluster product or single VMs, fabric, Gb/s per node, most nodes (? = unknown)")
