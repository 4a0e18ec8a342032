"""`POST /api/plan/batch`: `gpuplan plan batch` over HTTP.

The body *is* a `BatchPlanRequest` (a subclass) with the web's work limits: presets only for
the model, no non-finite numbers, at most MAX_PLANS fleets. `register_batch_routes(app)` adds
the route to an app made by `gpuplan.web.app.create_app` (it reads the app's catalog).
"""
from __future__ import annotations

from fastapi import FastAPI
from fastapi.responses import Response
from pydantic import ConfigDict, Field

from gpuplan.planner.batch_plan import BatchPlanResult
from gpuplan.planner.batch_request import BatchPlanRequest
from gpuplan.web.schemas import MAX_PLANS, MAX_SEED, Name, PlanConstraints

MAX_HOSTS_PER_OFFER = 4096  # a web request may say an offer has more hosts, within reason


class BatchPlanBody(BatchPlanRequest):
    """`gpuplan plan batch` as JSON: `items`, `deadline_hours` and the work (a model and token
    lengths, or `kind: "gpu"` with `gpu_seconds_per_item`)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    model: Name | None = Field(default=None, description="preset id, e.g. llama-3.1-8b (see /api/models)")
    reference_gpu: Name = Field(default="H100-SXM", description="the GPU gpu_seconds_per_item was measured on")
    hosts_per_offer: int | None = Field(default=None, gt=0, le=MAX_HOSTS_PER_OFFER)
    constraints: PlanConstraints = Field(default_factory=PlanConstraints)
    limit: int = Field(default=10, gt=0, le=MAX_PLANS)
    seed: int = Field(default=0, ge=0, le=MAX_SEED)


def register_batch_routes(app: FastAPI) -> None:
    """Add `POST /api/plan/batch` to an app from `create_app`."""
    from gpuplan.web.app import SafeJSONResponse, _check_model, _ok

    @app.post("/api/plan/batch", tags=["plan"], responses=_ok(BatchPlanResult))
    def plan_batch_endpoint(body: BatchPlanBody) -> Response:
        """Fleets that finish a batch job by its deadline, split across offers and providers at least
        cost, with p10/p90 cost and finish time (`gpuplan plan batch`)."""
        from gpuplan.planner.batch_plan import plan_batch

        _check_model(body.model)
        return SafeJSONResponse(plan_batch(body, app.state.gpuplan.catalog()))


__all__ = ["BatchPlanBody", "register_batch_routes"]
