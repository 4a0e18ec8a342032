"""Terminal rendering of plan results: the ranked table, the Pareto front and the reasons."""
from __future__ import annotations

from typing import Any

from gpuplan.cli.output import fmt_usd, fmt_usd_short, print_json, print_table


def fmt_hours(h: float | None) -> str:
    if h is None:
        return "-"
    if h < 1:
        return f"{h * 60:.0f} min"
    if h < 72:
        return f"{h:.1f} h"
    return f"{h / 24:.1f} d"


def _layout_text(p: dict[str, Any]) -> str:
    lay = p["layout"]
    parts = [f"TP{lay['tp']}"]
    for key in ("pp", "cp", "ep"):
        if lay.get(key, 1) > 1:
            parts.append(f"{key.upper()}{lay[key]}")
    parts.append(f"DP{lay['dp']}")
    if p.get("replicas"):
        return f"{p['replicas']}x TP{p.get('gpus_per_replica') or lay['tp']}"
    return " ".join(parts)


def render_plan_result(result, as_json: bool) -> None:
    """Print the plans; with none, say why and exit 1 so scripts notice."""
    import typer

    _render(result, as_json)
    if not result.plans:
        raise typer.Exit(1)


def _render(result, as_json: bool) -> None:
    if as_json:
        print_json(result)
        return
    from rich.console import Console

    data = result.model_dump(mode="json")
    serve = data["workload"] == "serve"
    rows = []
    front = set(data["pareto_ranks"])
    for p in data["plans"]:
        rows.append({
            "rank": f"{p['rank']}{'*' if p['rank'] in front else ''}",
            "provider": p["provider"], "gpu": p["gpu"],
            "shape": f"{p['nodes']}x{p['gpus_per_node']:g}" if not serve else f"{p['gpus']} GPUs",
            "pricing": p["pricing"], "layout": _layout_text(p),
            "wall": fmt_hours(p["wall_hours"]), "wall_p90": fmt_hours(p["wall_p90_hours"]),
            "cost": fmt_usd(p["cost_usd"]), "cost_p90": fmt_usd(p["cost_p90_usd"]),
            "band": f"{fmt_usd_short(p.get('cost_p10_usd') or p['cost_usd'])}-{fmt_usd_short(p['cost_p90_usd'])}"
                    + (" =" if p.get("ties_first") else ""),
            "region": (p["region"] or "?") + (f" +{len(p['also_at'])}" if p.get("also_at") else ""),
            "per_mtok": fmt_usd(p["cost_per_million_output_tokens_usd"]) if serve else None,
            "rtt": f"{p['network_rtt_ms']:.0f} ms" if p.get("network_rtt_ms") is not None else "-",
            "ckpt": f"{p['checkpoint_interval_min']:.0f} min" if p.get("checkpoint_interval_min") else "-",
            "risk": f"{p['risk']:.2f}",
            "age": f"{p['price_age_days']}d{' stale' if p['stale'] else ''}", "confidence": p["confidence"],
        })
    if serve:
        columns = [("rank", "#"), ("provider", "provider"), ("gpu", "GPU"), ("shape", "GPUs"), ("pricing", "pricing"),
                   ("region", "region"), ("layout", "replicas"), ("cost", "cost"), ("band", "p10-p90 cost"),
                   ("per_mtok", "$/M out"), ("rtt", "RTT"), ("risk", "risk"), ("age", "price age"),
                   ("confidence", "confidence")]
    else:
        columns = [("rank", "#"), ("provider", "provider"), ("gpu", "GPU"), ("shape", "nodes x GPUs"),
                   ("pricing", "pricing"), ("region", "region"), ("layout", "layout"), ("wall", "wall"),
                   ("wall_p90", "p90 wall"), ("cost", "expected cost"), ("band", "p10-p90 cost"), ("risk", "risk"),
                   ("age", "price age"), ("confidence", "confidence")]
    title = f"{data['workload']} plans for {data['model']}: {len(rows)} shown"
    if rows:
        print_table(rows, columns, title=title, keep_whole=("rank", "cost", "band", "per_mtok", "wall", "wall_p90"),
                    caption="* = on the cost/time Pareto front; = ties with #1 (bands overlap); region +N = "
                            "same choice in N more places (--all-rows shows them)")
    console = Console()
    for line in data["why"]:
        console.print(f"  {line}")
    if data.get("placement", {}).get("reasons"):
        console.print(f"[dim]placement ({data['placement'].get('coupling')}): {data['placement']['reasons'][0]}[/dim]")
    for p in data.get("closest", [])[:6]:
        console.print(f"  closest (not ranked): {p['provider']} {p['nodes']}x{p['gpus_per_node']:g} {p['gpu']} "
                      f"({p['pricing']}): {fmt_hours(p['wall_hours'])}, {fmt_usd(p['cost_usd'])}")
    if data.get("rejected"):
        why = ", ".join(f"{k}: {v}" for k, v in sorted(data["rejected"].items(), key=lambda kv: -kv[1]))
        console.print(f"[dim]not ranked: {why}[/dim]")
    for t in data.get("thresholds", []):
        if t.get("exceeded") and t.get("active"):
            console.print(f"[yellow]compute threshold: {t['name']} ({t['threshold_flops']:.0e} FLOPs) is exceeded[/yellow]")


def render_project(project: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print_json(project)
        return
    from rich.console import Console

    console = Console()
    for key in ("train", "serve"):
        result = project[key]
        if result.plans:
            best = result.plans[0]
            console.print(f"[bold]{key}[/bold]: {best.provider} {best.gpus}x {best.gpu} ({best.pricing}), "
                          f"{fmt_hours(best.wall_hours) if key == 'train' else 'per horizon'} "
                          f"{fmt_usd(best.cost_usd)} (p90 {fmt_usd(best.cost_p90_usd)})")
        else:
            console.print(f"[bold]{key}[/bold]: no feasible plan ({', '.join(result.why)})")
    console.print(f"[bold]total[/bold]: {fmt_usd(project['total_usd'])} (p90 {fmt_usd(project['total_p90_usd'])})")
    for line in project.get("notes", []):
        console.print(f"  {line}")
