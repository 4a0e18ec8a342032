"""`plan train|serve --csv`: one flat row per ranked plan (the JSON has everything, nested)."""
from __future__ import annotations

from typing import Any

PLAN_CSV_COLUMNS = (
    "rank", "workload", "provider", "gpu", "instance_type", "region", "pricing", "nodes", "gpus_per_node", "gpus",
    "precision", "tp", "pp", "vp", "dp", "cp", "ep", "etp", "micro_batch", "recompute", "zero", "replicas",
    "gpus_per_replica",
    "wall_hours", "wall_p10_hours", "wall_p90_hours", "gpu_hours", "cost_usd", "cost_p10_usd", "cost_p90_usd",
    "rank_cost_usd", "cost_per_million_output_tokens_usd", "output_tokens_per_s", "network_rtt_ms", "ties_first",
    "expected_interruptions", "checkpoint_interval_min", "risk", "confidence", "price_age_days", "stale", "also_at",
)


def plan_csv_rows(result: Any) -> list[dict[str, Any]]:
    rows = []
    for plan in result.plans:
        d = plan.model_dump(mode="json")
        layout = d.get("layout") or {}
        also = d.get("also_at") or []
        axes = ("tp", "pp", "vp", "dp", "cp", "ep", "etp", "micro_batch", "recompute", "zero")
        rows.append({**d, **{k: layout.get(k) for k in axes},
                     "also_at": "; ".join(str(a.get("label", a) if isinstance(a, dict) else a) for a in also)})
    return rows


def print_plan_csv(result: Any) -> None:
    """CSV of the ranked plans; with none, the header only and exit 1 (as the table and JSON do)."""
    import typer

    from gpuplan.cli.output import print_csv

    print_csv(plan_csv_rows(result), PLAN_CSV_COLUMNS)
    if not result.plans:
        raise typer.Exit(1)


BATCH_CSV_COLUMNS = (
    "rank", "label", "fleet", "providers", "hosts", "spare_hosts", "gpus", "peer_share", "finish_hours",
    "finish_p10_hours", "finish_p90_hours", "meets_deadline", "meets_deadline_p90", "cost_usd", "cost_p10_usd",
    "cost_p90_usd", "rank_cost_usd", "ties_first", "compute_usd", "cold_start_usd", "egress_usd",
    "cost_per_item_usd", "cost_per_million_output_tokens_usd", "cost_per_million_tokens_usd",
    "expected_interruptions", "risk",
)


def print_batch_csv(result: Any) -> None:
    """`plan batch --csv`: one row per ranked fleet; with none, the header only and exit 1."""
    import typer

    from gpuplan.cli.output import print_csv
    from gpuplan.planner.batch_plan import fleet_text

    rows = [{**f.model_dump(mode="json"), "fleet": fleet_text(f, 99), "providers": "; ".join(f.providers)}
            for f in result.fleets]
    print_csv(rows, BATCH_CSV_COLUMNS)
    if not result.fleets:
        raise typer.Exit(1)


def print_project_csv(project: dict[str, Any]) -> None:
    """`plan project --csv`: the chosen training plan and serving plan, one row each (a stage with no
    feasible plan has no row; the total is their sum)."""
    from gpuplan.cli.output import print_csv

    rows = [plan_csv_rows(project[k])[0] for k in ("train", "serve") if project[k].plans]
    print_csv(rows, PLAN_CSV_COLUMNS)
