"""The planner: joins the estimators and the economics over every offer, ranks, explains."""
from __future__ import annotations

from typing import Any


def plan_training(req, catalog=None):
    """Every training offer ranked by expected total cost (see planner.train_plan)."""
    from gpuplan.planner.train_plan import plan_training as impl

    return impl(req, catalog)


def plan_serving(req, catalog=None):
    """Every serving offer ranked by cost for the traffic (see planner.serve_plan)."""
    from gpuplan.planner.serve_plan import plan_serving as impl

    return impl(req, catalog)


def plan_project(train, serve, catalog=None) -> dict[str, Any]:
    """Train on one provider, serve on another: each chosen on its own merits."""
    from gpuplan.planner.project import plan_project as impl

    return impl(train, serve, catalog)


def plan_batch(req, catalog=None):
    """Fleets for a divisible batch job across offers, ranked by cost (see planner.batch_plan)."""
    from gpuplan.planner.batch_plan import plan_batch as impl

    return impl(req, catalog)


__all__ = ["plan_batch", "plan_project", "plan_serving", "plan_training"]
