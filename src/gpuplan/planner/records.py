"""What the planner returns: ranked plans, each explainable down to the offer it rents.

This is also the contract of `gpuplan plan ... --json` that exports and the web page read.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gpuplan.catalog.records import Offer


class Layout(BaseModel):
    """Parallel layout per model replica (training) or per serving replica."""

    model_config = ConfigDict(frozen=True)

    tp: int = 1
    pp: int = 1
    cp: int = 1
    dp: int = 1
    ep: int = 1
    etp: int | None = None  # routed experts' tensor parallelism when it is not tp: 1 = folded whole over the TP ranks
    vp: int = 1  # interleaved pipeline chunks per stage (Megatron's virtual stages); 1 = plain 1F1B
    micro_batch: int | None = None
    recompute: str | None = None
    zero: int | None = None

    @field_validator("vp", mode="before")
    @classmethod
    def _vp_absent_is_plain(cls, v: Any) -> Any:
        # A plan file written before vp was recorded, or by hand, may say null: no interleaving, as when it is absent.
        return 1 if v is None else v

    @property
    def experts_folded(self) -> bool:
        """The routed experts sit whole on their EP ranks, not split over TP (Megatron's MoE parallel folding)."""
        return self.etp is not None and self.etp < self.tp


class CostBreakdown(BaseModel):
    model_config = ConfigDict(frozen=True)

    compute_usd: float
    storage_usd: float = 0.0
    egress_usd: float = 0.0
    other_usd: float = 0.0


class Plan(BaseModel):
    """One way to run the workload: an offer, how many nodes, the layout, and what it costs."""

    model_config = ConfigDict(frozen=True)

    rank: int = 0
    workload: Literal["train", "serve"]
    provider: str
    provider_name: str
    provider_kind: str
    gpu: str
    instance_type: str
    region: str
    pricing: str
    gpus_per_node: float
    nodes: int = Field(gt=0)
    gpus: int = Field(gt=0)
    precision: str
    layout: Layout
    wall_hours: float = Field(description="expected wall time incl. goodput, checkpoints, preemptions")
    wall_p90_hours: float
    wall_p10_hours: float | None = None
    gpu_hours: float = Field(description="billed GPU-hours")
    cost_usd: float = Field(description="expected total: compute + storage + egress")
    cost_p90_usd: float
    cost_p10_usd: float | None = None
    rank_cost_usd: float | None = Field(default=None, description="what the plan is ranked by: the 75th percentile of its cost band")
    ties_first: bool = Field(default=False, description="its p10-p90 cost band overlaps the #1's")
    uncertainty: dict[str, Any] = Field(default_factory=dict, description="the parts of the band (lognormal sigmas) and their bases")
    also_at: list[str] = Field(default_factory=list, description="the same choice elsewhere (regions, sizes) within 3%")
    cost: CostBreakdown
    checkpoint_interval_min: float | None = None
    expected_interruptions: float | None = None
    risk: float = Field(ge=0, le=1, description="0 = no known risk; higher = more likely to overrun or fail")
    risk_notes: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    price_age_days: int
    stale: bool
    confidence: str
    # Serving plans only.
    replicas: int | None = None
    gpus_per_replica: int | None = None
    output_tokens_per_s: float | None = None
    cost_per_million_output_tokens_usd: float | None = None
    cost_per_million_tokens_usd: float | None = None  # prompt and output tokens together (long prompts)
    network_rtt_ms: float | None = None
    offer: Offer
    assumptions: dict[str, Any] = Field(default_factory=dict)


class PlanResult(BaseModel):
    """Ranked plans, the cost-vs-time Pareto front, and why the first wins."""

    workload: Literal["train", "serve"]
    model: str
    summary: dict[str, Any]
    plans: list[Plan]
    pareto_ranks: list[int] = Field(description="ranks of plans on the cost/time Pareto front")
    why: list[str]
    placement: dict[str, Any] = Field(default_factory=dict)
    rejected: dict[str, int] = Field(default_factory=dict)
    assumptions: dict[str, Any] = Field(default_factory=dict)
    thresholds: list[dict[str, Any]] = Field(default_factory=list)
    closest: list[Plan] = Field(default_factory=list, description="when nothing fits: the nearest candidates, unranked")
