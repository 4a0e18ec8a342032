"""Train here, serve there: the best training plan and the best serving plan, chosen separately."""
from __future__ import annotations

from typing import Any

from gpuplan.catalog.catalog import Catalog
from gpuplan.planner.requests import ServePlanRequest, TrainPlanRequest


def plan_project(train: TrainPlanRequest, serve: ServePlanRequest, catalog: Catalog | None = None) -> dict[str, Any]:
    from gpuplan.planner.serve_plan import plan_serving
    from gpuplan.planner.train_plan import plan_training

    catalog = catalog or Catalog.load()
    trained = plan_training(train, catalog)
    served = plan_serving(serve, catalog)
    best_t = trained.plans[0] if trained.plans else None
    best_s = served.plans[0] if served.plans else None
    notes = []
    if best_t and best_s:
        if best_t.provider != best_s.provider:
            notes.append(f"train on {best_t.provider_name}, serve on {best_s.provider_name}: each is cheapest for its job; "
                         "budget the one-time transfer of the final weights between them")
        else:
            notes.append(f"{best_t.provider_name} is cheapest for both training and serving")
    total = (best_t.cost_usd if best_t else 0.0) + (best_s.cost_usd if best_s else 0.0)
    total_p90 = (best_t.cost_p90_usd if best_t else 0.0) + (best_s.cost_p90_usd if best_s else 0.0)
    return {
        "train": trained, "serve": served, "total_usd": total, "total_p90_usd": total_p90,
        "feasible": bool(best_t and best_s), "notes": notes,
    }


def final_run_from_plan(plan) -> dict[str, Any]:
    """The TCO's final-run inputs from a ranked training plan: its expected cost, billed GPU-hours,
    GPU and region (for energy and emissions) and provider kind (for PUE)."""
    return {
        "final_run_usd": plan.cost_usd, "gpu_hours": plan.gpu_hours,
        "price_per_gpu_hour": plan.offer.price_per_gpu_hour_usd, "gpu": plan.gpu, "region": plan.region,
        "provider_kind": plan.provider_kind,
    }
