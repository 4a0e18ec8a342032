"""Launch a plan: SkyPilot task/service YAML, dstack configuration, Kubernetes manifests.

    from gpuplan.export import export_plan, ExportOptions
    text = export_plan(plan, "skypilot", ExportOptions(script="train.py"), summary=result.summary)

The files carry the planned GPU, node count, layout (launched by Megatron-LM for model parallelism,
by `accelerate launch` with the ZeRO stage's sharding otherwise), spot policy, checkpoint cadence and,
for multi-node plans, the fabric the plan assumed (SkyPilot `network_tier: best`, a dstack cluster
fleet, Kubernetes RDMA/EFA devices, NCCL settings). An orchestrator that cannot reach the provider is
a one-line UsageError naming the targets that can; secrets are passed only when set.
"""
from __future__ import annotations

from typing import Any

from gpuplan.errors import UsageError
from gpuplan.export.common import (
    TARGET_ALIASES, TARGETS, ExportOptions, ExportResult, load_plan_result, make_context, parse_plan_result,
    select_plan, supported_targets, write_atomic,
)
from gpuplan.planner.records import Plan, PlanResult

__all__ = [
    "TARGETS", "ExportOptions", "ExportResult", "build_export", "export_plan", "export_result",
    "load_plan_result", "parse_plan_result", "select_plan", "supported_targets", "write_atomic",
]


def resolve_target(target: str) -> str:
    t = (target or "").strip().lower()
    t = TARGET_ALIASES.get(t, t)
    if t not in TARGETS:
        from gpuplan.errors import UnknownNameError

        raise UnknownNameError("export target", target, list(TARGETS))
    return t


def build_export(plan: Plan, target: str, options: ExportOptions | None = None,
                 summary: dict[str, Any] | None = None) -> ExportResult:
    """The file text for one plan, its warnings (print them), the launch command and any further files
    the launch needs (ExportResult.files)."""
    t = resolve_target(target)
    if not isinstance(plan, Plan):
        raise UsageError("export needs a Plan (from PlanResult.plans)")
    ctx = make_context(plan, summary, options or ExportOptions())
    if t == "skypilot":
        from gpuplan.export import skypilot as mod
    elif t == "dstack":
        from gpuplan.export import dstack as mod
    else:
        from gpuplan.export import kubernetes as mod
    return mod.render(ctx)


def export_plan(plan: Plan, target: str, options: ExportOptions | None = None,
                summary: dict[str, Any] | None = None) -> str:
    """The file text only (warnings are in its header comment)."""
    return build_export(plan, target, options, summary).text


def export_result(result: PlanResult, target: str, rank: int | None = None,
                  options: ExportOptions | None = None) -> ExportResult:
    """Export the plan of this rank (default: the best) from a planner result."""
    return build_export(select_plan(result, rank), target, options, result.summary)
