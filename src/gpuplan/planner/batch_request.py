"""What a batch plan is asked for: N independent items, a deadline, an optional budget.

Three kinds of item: LLM generation (a model, input and output tokens per item), embeddings (a
model, tokens per item) and generic GPU work (GPU-seconds per item measured on a reference GPU).
The CLI, the Python API and the HTTP API all build this record, so validation lives here.
"""
from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gpuplan.planner.requests import Constraints, Hours, Quantity, TokenCount

MAX_ITEMS = 1e12
MAX_DEADLINE_HOURS = 24 * 3650.0


class BatchPlanRequest(BaseModel):
    """A batch job of `items` independent items, finished within `deadline_hours`."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    kind: Literal["generate", "embed", "gpu"] = Field(
        default="generate", description="generate: LLM generation; embed: embeddings; gpu: generic GPU work")
    model: str | None = Field(default=None, description="preset id, e.g. llama-3.1-8b (generate, embed)")
    params: Quantity | None = Field(default=None, gt=0, le=1e14)
    active_params: Quantity | None = Field(default=None, gt=0, le=1e14)
    items: Quantity = Field(gt=0, le=MAX_ITEMS, description="independent items (prompts, documents, images)")
    input_len: TokenCount = Field(default=1000, gt=0, le=2_000_000, description="input tokens per item (embed: tokens per item)")
    output_len: TokenCount = Field(default=250, gt=0, le=1_000_000, description="output tokens per item (generate)")
    gpu_seconds_per_item: float | None = Field(default=None, gt=0, le=86_400 * 7,
                                               description="generic work: GPU-seconds per item on the reference GPU")
    reference_gpu: str = Field(default="H100-SXM", min_length=1, max_length=100,
                               description="the GPU gpu_seconds_per_item was measured on")
    min_gpu_memory_gb: float | None = Field(default=None, gt=0, le=10_000, description="generic work: GPUs below this are skipped")
    precision: Literal["bf16", "fp16", "fp8", "int8", "int4", "fp4"] | None = Field(
        default=None, description="weights; default: the model's native precision")
    kv_precision: Literal["bf16", "fp16", "fp8", "int8", "fp4"] | None = None
    engine: Literal["vllm", "sglang", "trtllm"] = "vllm"
    deadline_hours: Hours = Field(gt=0, le=MAX_DEADLINE_HOURS, description="every item done within this wall time ('3d', '36h' or hours)")
    budget_usd: Quantity | None = Field(default=None, gt=0, le=1e12, description="max expected total cost")
    strict_deadline: bool = Field(default=False, description="size fleets so that the p90 finish (all spreads), "
                                                             "not only the expected one, meets the deadline")
    download_gb: float | None = Field(default=None, ge=0, le=100_000,
                                      description="what every new host downloads (image + weights); default derived")
    input_kb_per_item: float | None = Field(default=None, ge=0, le=10_000_000, description="staged in per item")
    output_kb_per_item: float | None = Field(default=None, ge=0, le=10_000_000, description="shipped out per item")
    bandwidth_gbps: float | None = Field(default=None, gt=0, le=10_000, description="every host's link; default by provider kind")
    hosts_per_offer: int | None = Field(default=None, gt=0, le=100_000,
                                        description="hosts one offer can supply; default its max_nodes, else by provider kind")
    constraints: Constraints = Field(default_factory=Constraints)
    limit: int = Field(default=10, gt=0, le=1000)
    seed: int = Field(default=0, ge=0, le=2**31 - 1)

    @field_validator("items", "params", "active_params", "gpu_seconds_per_item", "deadline_hours", "budget_usd",
                     "download_gb", "input_kb_per_item", "output_kb_per_item", "bandwidth_gbps", "min_gpu_memory_gb")
    @classmethod
    def _finite(cls, v: float | None) -> float | None:
        if v is not None and not math.isfinite(v):
            raise ValueError("must be a finite number")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> "BatchPlanRequest":
        if self.kind in ("generate", "embed"):
            if (self.model is None) == (self.params is None):
                raise ValueError(f"{self.kind} work needs exactly one of model or params")
            if self.gpu_seconds_per_item is not None:
                raise ValueError("gpu_seconds_per_item is for kind 'gpu' (generic GPU work)")
        else:
            if self.gpu_seconds_per_item is None:
                raise ValueError("generic GPU work (kind 'gpu') needs gpu_seconds_per_item on the reference GPU")
            if self.model is not None and self.params is not None:
                raise ValueError("give at most one of model or params")
        if self.active_params is not None:
            if self.params is None:
                raise ValueError("active_params goes with params")
            if self.active_params > self.params:
                raise ValueError("active_params cannot exceed params")
        if self.constraints.deadline_hours is not None or self.constraints.budget_usd is not None:
            raise ValueError("give deadline_hours and budget_usd on the request, not in constraints")
        return self

    def resolve_model(self):
        """The ModelSpec (None for generic work without a model)."""
        from gpuplan.models import model_from_params, resolve_model

        if self.model is not None:
            return resolve_model(self.model)
        if self.params is not None:
            return model_from_params(self.params, self.active_params)
        return None

    def resolved_precision(self, model) -> str:
        if self.precision:
            return self.precision
        return (getattr(model, "native_precision", "bf16") or "bf16") if model is not None else "bf16"

    @property
    def whole_items(self) -> int:
        return int(math.ceil(self.items - 1e-9))
