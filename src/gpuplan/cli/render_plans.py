"""Terminal rendering of plan results: the ranked table, the Pareto front and the reasons."""
from __future__ import annotations

from typing import Any

from gpuplan.cli.output import _console, print_json, print_table
from gpuplan.display import (
    PLAN_WHOLE_CELLS, SERVE_PLAN_COLUMNS, TRAIN_PLAN_COLUMNS, fit_columns, fmt_hours, fmt_usd, plan_row, table_width,
)


def render_plan_result(result, as_json: bool, wide: bool = False) -> None:
    """Print the plans; with none, say why and exit 1 so scripts notice."""
    import typer

    _render(result, as_json, wide)
    if not result.plans:
        raise typer.Exit(1)


def _render(result, as_json: bool, wide: bool = False) -> None:
    if as_json:
        print_json(result)
        return
    from rich.console import Console

    data = result.model_dump(mode="json")
    serve = data["workload"] == "serve"
    front = set(data["pareto_ranks"])
    rows = [plan_row(p, serve, p["rank"] in front) for p in data["plans"]]
    all_columns = SERVE_PLAN_COLUMNS if serve else TRAIN_PLAN_COLUMNS
    width = _console().width
    columns = fit_columns(rows, all_columns, 10**6 if wide else width)
    dropped = [h for k, h, _ in all_columns if (k, h) not in columns]
    title = f"{data['workload']} plans for {data['model']}: {len(rows)} shown"
    if rows:
        caption = ("* = on the cost/time Pareto front; = ties with #1 (bands overlap); region +N = "
                   "same choice in N more places (--all-rows shows them)")
        if dropped:
            caption += f"; {width} columns: {', '.join(dropped)} left out (--wide, --csv or --json show them)"
        print_table(rows, columns, title=title, keep_whole=PLAN_WHOLE_CELLS, caption=caption,
                    width=max(width, table_width(rows, all_columns)) if wide else None)
    console = Console()
    for line in data["why"]:
        console.print(f"  {line}")
    top = data["plans"][0] if data["plans"] else {}
    for w in top.get("warnings") or []:
        console.print(f"[yellow]  #1: {w}[/yellow]")
    for note in top.get("risk_notes") or []:
        console.print(f"[dim]  #1 risk: {note}[/dim]")
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
