"""gpuplan: plan LLM compute across GPU clouds.

    from gpuplan import Catalog, TrainPlanRequest, plan_training
    cat = Catalog.load()
    cat.offers(gpu="H100", min_gpus=8)
    plan_training(TrainPlanRequest(model="llama-3.1-8b", tokens=1e12), cat).plans[0]
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

# name -> module: imported on first use, so `import gpuplan` stays cheap for the CLI
_LAZY = {
    "Catalog": "gpuplan.catalog.catalog",
    "GpuplanError": "gpuplan.errors",
    "plan_training": "gpuplan.planner",
    "plan_serving": "gpuplan.planner",
    "plan_project": "gpuplan.planner",
    "TrainPlanRequest": "gpuplan.planner.requests",
    "ServePlanRequest": "gpuplan.planner.requests",
    "Constraints": "gpuplan.planner.requests",
    "estimate_training": "gpuplan.perf.training_estimate",
    "estimate_serving": "gpuplan.perf.inference_estimate",
}
__all__ = [*_LAZY, "__version__"]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(name)
