"""`gpuplan catalog refresh|status|history|import|export|remove|prune`: the store and its live sources.

Presentation only: fetching, validation and merging live in gpuplan.catalog.store/sources/imports.
"""
from __future__ import annotations

from typing import Optional

import typer

from gpuplan.cli.app import catalog_app

DB_HELP = "catalog store file (default: $GPUPLAN_DB, else the user data dir's gpuplan/catalog.db)"
SPARK = "▁▂▃▄▅▆▇█"


def _store(db: Optional[str], write: bool = False):
    """The store; `write` for commands that change it (a read-only store is refused in one line
    before any work), else read-write when possible and read-only otherwise."""
    from gpuplan.catalog.store import open_store

    return open_store(db, readonly=False if write else None)


def _skip_summary(skipped: dict[str, int], n: int = 3) -> str:
    top = sorted(skipped.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
    more = len(skipped) - len(top)
    return "; ".join(f"{k} ×{v}" for k, v in top) + (f"; +{more} more reasons" if more > 0 else "")


@catalog_app.command("refresh")
def refresh_cmd(
    source: Optional[list[str]] = typer.Option(None, "--source", "-s", help="source to refresh (repeatable): vast, runpod, azure, vultr, lambda, skypilot[:cloud], gpuhunt[:provider]; default: all keyless sources"),
    db: Optional[str] = typer.Option(None, "--db", help=DB_HELP),
    force: bool = typer.Option(False, "--force", help="accept an answer much smaller than the previous one"),
    as_json: bool = typer.Option(False, "--json", help="print the outcome as JSON"),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="overall deadline in seconds for the whole refresh (sources are fetched concurrently; one still unanswered by then fails and keeps its previous data); default: $GPUPLAN_REFRESH_TIMEOUT_S, else 60"),
) -> None:
    """Fetch today's prices; each source that answers becomes a new snapshot, failures keep the old one."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from gpuplan.catalog.sources import expand_source_names
    from gpuplan.cli.output import print_json, print_table
    from gpuplan.errors import GpuplanError

    from gpuplan.catalog.store import refresh_deadline_s

    names = expand_source_names(source)
    if source is not None and not names:
        from gpuplan.errors import UsageError

        raise UsageError("--source names no source (e.g. --source vast); leave it out to refresh every keyless source")
    deadline = refresh_deadline_s(timeout)  # a bad --timeout is refused before any work
    err = Console(stderr=True)
    with _store(db, write=True) as store:
        with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                      TimeElapsedColumn(), console=err, transient=True, disable=as_json) as progress:
            task = progress.add_task("refreshing", total=len(names))

            def on_progress(name, outcome):
                if outcome is not None:
                    progress.advance(task)

            outcomes = store.refresh(names, force=force, on_progress=on_progress, deadline_s=deadline)
    rows = [{"source": o.source, "status": o.status, "rows_added": o.rows_added, "rows_skipped": o.rows_skipped,
             "raw_rows": o.raw_rows, "seconds": round(o.elapsed_s, 2),
             "why": o.reason if o.status != "ok" else _skip_summary(o.skipped),
             "skipped_reasons": o.skipped} for o in outcomes]
    if as_json:
        print_json({"outcomes": rows})
    else:
        print_table(rows, [("source", "source"), ("status", "status"), ("rows_added", "added"),
                           ("rows_skipped", "skipped"), ("raw_rows", "read"), ("seconds", "s"),
                           ("why", "failed because / skipped because")], title="catalog refresh")
    if outcomes and not any(o.status == "ok" for o in outcomes):
        raise GpuplanError("no source refreshed; the previous catalog data is kept")


@catalog_app.command("status")
def status_cmd(
    db: Optional[str] = typer.Option(None, "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="print as JSON"),
    as_csv: bool = typer.Option(False, "--csv", help="print the sources as CSV"),
) -> None:
    """Each source: last good refresh, its age, offer count, stale flag and the last error."""
    from gpuplan.cli.output import print_json, print_table

    with _store(db) as store:
        rows = store.sources()
        counts = store.counts()
        conflicts = store.price_conflicts()
        path = str(store.path)
    if as_json:
        print_json({"db": path, "sources": rows, "totals": counts, "conflicts": conflicts})
        return
    if as_csv:
        from gpuplan.cli.output import print_csv

        print_csv(rows)
        return
    for r in rows:
        r["age"] = _age(r["age_h"])
        r["last_refresh"] = r["last_refresh"] and r["last_refresh"][:16].replace("T", " ")
        r["note"] = r["last_error"] and f"last attempt failed: {r['last_error']}"
    print_table(rows, [("source", "source"), ("last_refresh", "last good refresh (UTC)"), ("age", "age"),
                       ("offers", "offers"), ("skipped", "skipped"), ("newest_as_of", "newest as_of"),
                       ("stale", "stale"), ("note", "note")],
                title="catalog sources", caption=f"{path}: {counts['offers']} stored offers in "
                                                 f"{counts['complete']} snapshots ({counts['failed']} failed refreshes)")
    if conflicts:
        print_table([_conflict_row(c) for c in conflicts],
                    [("offer", "offer"), ("current", "current price (wins)"), ("superseded", "superseded")],
                    title=f"price conflicts: {len(conflicts)} offers listed at different prices",
                    caption="the newest dated price is current; a user import always wins")


def _conflict_row(c: dict) -> dict:
    def one(r: dict) -> str:
        return (f"${r['price_per_hour_usd']:.4g}/h on {r['as_of']} from {r['source']} "
                f"[{r['store_source']}, {r['confidence']}]")
    region = f" {c['region']}" if c["region"] else ""
    return {"offer": f"{c['provider']} {c['instance_type']} ({c['gpus_per_node']:g}x {c['gpu']}, {c['pricing']}{region})",
            "current": one(c["current"]), "superseded": "; ".join(one(r) for r in c["superseded"])}


def _age(age_h: float | None) -> str:
    if age_h is None:
        return "-"
    if age_h < 1:
        return f"{age_h * 60:.0f} min"
    if age_h < 48:
        return f"{age_h:.1f} h"
    return f"{age_h / 24:.0f} d"


def sparkline(values: list[float]) -> str:
    if not values:
        return ""
    lo, hi = min(values), max(values)
    if hi - lo < 1e-12:
        return SPARK[3] * len(values)
    return "".join(SPARK[min(7, int((v - lo) / (hi - lo) * 7.999))] for v in values)


@catalog_app.command("history")
def history_cmd(
    gpu: str = typer.Option(..., "--gpu", help="GPU name, e.g. H100, A100-80GB, 'RTX 4090'"),
    provider: Optional[str] = typer.Option(None, "--provider", help="only this provider"),
    pricing: Optional[str] = typer.Option(None, "--pricing", help="on_demand, spot, reserved, community or interruptible"),
    db: Optional[str] = typer.Option(None, "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="print as JSON"),
    as_csv: bool = typer.Option(False, "--csv", help="print the price points as CSV"),
) -> None:
    """Min and median price per GPU-hour over time, per provider and pricing type."""
    from rich.console import Console

    from gpuplan.catalog.gpus import resolve_gpu_id
    from gpuplan.catalog.records import PRICING_TYPES
    from gpuplan.cli.output import fmt_usd, print_json, print_table
    from gpuplan.errors import UnknownNameError, UsageError

    gid = resolve_gpu_id(gpu)
    if pricing is not None and pricing not in PRICING_TYPES:
        raise UsageError(f"unknown pricing {pricing!r}; use {', '.join(PRICING_TYPES)}")
    with _store(db) as store:
        if provider is not None:
            known = store.known_values("provider")
            if provider.lower() not in known:
                raise UnknownNameError("provider", provider, known)
            provider = provider.lower()
        rows = store.history(gid, provider, pricing)
    if as_json:
        print_json({"gpu": gid, "provider": provider, "pricing": pricing, "points": rows})
        return
    if as_csv:
        from gpuplan.cli.output import print_csv

        print_csv([{"gpu": gid, **r} for r in rows])
        return
    if not rows:
        Console().print(f"no stored prices for {gid}" + (f" at {provider}" if provider else "")
                        + (f" ({pricing})" if pricing else ""))
        return
    series: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        series.setdefault((r["provider"], r["pricing"]), []).append(r)
    summary = []
    for (prov, pr), pts in sorted(series.items(), key=lambda kv: kv[1][-1]["median_usd_per_gpu_h"]):
        first, last = pts[0]["median_usd_per_gpu_h"], pts[-1]["median_usd_per_gpu_h"]
        summary.append({"provider": prov, "pricing": pr, "from": pts[0]["date"], "to": pts[-1]["date"],
                        "points": len(pts), "min": pts[-1]["min_usd_per_gpu_h"], "median": last,
                        "change": f"{(last / first - 1) * 100:+.0f}%" if len(pts) > 1 else "-",
                        "trend": sparkline([p["median_usd_per_gpu_h"] for p in pts])})
    print_table(summary, [("provider", "provider"), ("pricing", "pricing"), ("from", "from"), ("to", "to"),
                          ("points", "dates"), ("min", "latest min $/GPU-h"), ("median", "latest median $/GPU-h"),
                          ("change", "change"), ("trend", "median over time")],
                title=f"{gid} price history", formatters={"min": fmt_usd, "median": fmt_usd})
    top = max(r["median_usd_per_gpu_h"] for r in rows)
    width = 30
    detail = [{**r, "bar": "█" * max(1, round(r["median_usd_per_gpu_h"] / top * width))} for r in rows]
    print_table(detail, [("date", "as_of"), ("provider", "provider"), ("pricing", "pricing"),
                         ("min_usd_per_gpu_h", "min"), ("median_usd_per_gpu_h", "median"), ("offers", "n"),
                         ("bar", "median $/GPU-h")],
                formatters={"min_usd_per_gpu_h": fmt_usd, "median_usd_per_gpu_h": fmt_usd})


@catalog_app.command("import")
def import_cmd(
    file: str = typer.Argument(..., help="CSV or YAML of offers (the columns `catalog export` writes)"),
    name: Optional[str] = typer.Option(None, "--name", help="import name; the source becomes user:<name> (default: file name)"),
    db: Optional[str] = typer.Option(None, "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="print what was imported as JSON"),
) -> None:
    """Add your own offers (negotiated prices, a private cluster); re-importing a name replaces it."""
    from gpuplan.catalog.imports import import_offers

    with _store(db, write=True) as store:
        snap = import_offers(store, file, name)
    if as_json:
        from gpuplan.cli.output import print_json

        print_json({"source": snap.source, "snapshot": snap.id, "rows_added": snap.rows_added})
        return
    typer.echo(f"imported {snap.rows_added} offers as source {snap.source} (snapshot {snap.id})")


@catalog_app.command("export")
def export_cmd(
    fmt: Optional[str] = typer.Option(None, "--format", "-f", help="csv or yaml (default: from --out, else csv)"),
    out: Optional[str] = typer.Option(None, "--out", "-o", help="write here (atomically; a symlink is written "
                                      "through) instead of stdout; '-' is stdout"),
    source: Optional[str] = typer.Option(None, "--source", help="only this source's newest snapshot, e.g. user:mine"),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="only this GPU"),
    provider: Optional[str] = typer.Option(None, "--provider", help="only this provider"),
    db: Optional[str] = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Write the current offers in the format `catalog import` reads."""
    from gpuplan.catalog.gpus import resolve_gpu_id
    from gpuplan.catalog.imports import render_offers
    from gpuplan.errors import UnknownNameError, UsageError
    from gpuplan.files import check_out_path, is_stdout, write_atomic

    if out is not None:
        check_out_path(out)  # a bad --out fails before the store is read
    if fmt is None:
        fmt = "yaml" if out and out.lower().endswith((".yaml", ".yml")) else "csv"
    fmt = fmt.lower()
    if fmt not in ("csv", "yaml"):
        raise UsageError(f"unknown format {fmt!r}; use csv or yaml")
    with _store(db) as store:
        if source is not None:
            latest = store.latest_complete()
            if source not in latest:
                raise UnknownNameError("source", source, sorted(latest))
            offers = store.snapshot_offers(latest[source])
        else:
            offers = store.current_offers()
    if gpu is not None:
        gid = resolve_gpu_id(gpu)
        offers = [o for o in offers if o.gpu == gid]
    if provider is not None:
        offers = [o for o in offers if o.provider == provider.lower()]
    text = render_offers(offers, fmt)
    write_atomic(out if out is not None else "-", text)
    if out is not None and not is_stdout(out):
        typer.echo(f"wrote {len(offers)} offers to {out}", err=True)


@catalog_app.command("remove")
def remove_cmd(
    name: str = typer.Argument(..., help="import name (as given to `catalog import --name`) or a source from "
                                         "`catalog status`, e.g. mine, user:mine, vast"),
    db: Optional[str] = typer.Option(None, "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="print what was removed as JSON"),
) -> None:
    """Remove an import (every snapshot of that source, and its offers); the other sources stay."""
    from gpuplan.cli.output import print_json

    with _store(db, write=True) as store:
        source = store.resolve_source(name)
        done = store.remove_source(source)
    if as_json:
        print_json({"source": source, "removed_snapshots": done["snapshots"], "removed_offers": done["offers"]})
        return
    typer.echo(f"removed source {source}: {done['snapshots']} snapshot(s), {done['offers']} offers")


@catalog_app.command("prune")
def prune_cmd(
    keep: int = typer.Option(3, "--keep", help="complete snapshots to keep per source (newest first; at least 1)"),
    db: Optional[str] = typer.Option(None, "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="print what was pruned as JSON"),
) -> None:
    """Drop old snapshots of each source (keeping the newest --keep) and compact the file (VACUUM).

    `catalog history` draws on the snapshots kept."""
    from gpuplan.cli.output import print_json
    from gpuplan.errors import UsageError

    if keep < 1:
        raise UsageError(f"--keep must be at least 1 (the newest snapshot of each source is always kept), got {keep}")
    with _store(db, write=True) as store:
        done = store.prune(keep)
    if as_json:
        print_json({"keep": keep, "removed_snapshots": done["snapshots"], "removed_offers": done["offers"],
                    "bytes_before": done["bytes_before"], "bytes_after": done["bytes_after"]})
        return
    mib = 2**20
    typer.echo(f"pruned {done['snapshots']} snapshot(s) ({done['offers']} offers), keeping {keep} per source; "
               f"store {done['bytes_before'] / mib:.1f} MiB -> {done['bytes_after'] / mib:.1f} MiB")
