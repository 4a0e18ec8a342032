"""What a plan is asked for: the model, the workload and the constraints.

The CLI, the Python API and the HTTP API all build these, so validation lives in one place.
"""
from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gpuplan.units import SECONDS_PER_MONTH

MAX_GPUS_LIMIT = 131_072


class Constraints(BaseModel):
    """Filters every plan must pass; `None` means no constraint."""

    model_config = ConfigDict(extra="forbid")

    budget_usd: float | None = Field(default=None, gt=0, description="max expected total cost (p90 for --strict-budget)")
    deadline_hours: float | None = Field(default=None, gt=0, description="max expected wall time")
    providers: list[str] | None = None
    exclude: list[str] | None = None
    kinds: list[str] | None = None
    regions: list[str] | None = None
    gpus: list[str] | None = Field(default=None, description="GPU names; 'H100' means every H100 variant")
    max_gpus: int | None = Field(default=None, gt=0, le=MAX_GPUS_LIMIT)
    no_spot: bool = False
    min_confidence: Literal["primary", "third-party", "unverified"] | None = None
    max_price_age_days: int | None = Field(default=None, ge=0)
    allow_decentralized: bool = False
    allow_unclustered: bool = Field(default=False, description="join VMs that are not sold as a cluster (unknown or "
                                                               "Ethernet network) for multi-node training")
    max_wall_hours: float | None = Field(default=None, gt=0, le=24 * 3650,
                                         description="hard cap on expected wall time (default 90 days)")

    @field_validator("budget_usd", "deadline_hours", "max_wall_hours")
    @classmethod
    def _finite(cls, v: float | None) -> float | None:
        if v is not None and not math.isfinite(v):
            raise ValueError("must be a finite number")
        return v


class ModelChoice(BaseModel):
    """A preset id, a config.json path (CLI only), or a parameter count."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(default=None, description="preset id, e.g. llama-3.1-8b")
    params: float | None = Field(default=None, gt=0, le=1e14)
    active_params: float | None = Field(default=None, gt=0, le=1e14)

    @model_validator(mode="after")
    def _one_way_in(self) -> "ModelChoice":
        if (self.model is None) == (self.params is None):
            raise ValueError("give exactly one of model or params")
        if self.active_params is not None and self.params is not None and self.active_params > self.params:
            raise ValueError("active_params cannot exceed params")
        return self

    def resolve_model(self):
        """The ModelSpec: the preset, or a plausible shape derived from the parameter count."""
        from gpuplan.models import model_from_params, resolve_model

        if self.model is not None:
            return resolve_model(self.model)
        return model_from_params(self.params, self.active_params)


class TrainPlanRequest(ModelChoice):
    tokens: float | None = Field(default=None, gt=0, le=1e16, description="training tokens")
    epochs: float | None = Field(default=None, gt=0, le=1e4)
    dataset_tokens: float | None = Field(default=None, gt=0, le=1e16)
    method: Literal["full", "lora", "qlora"] = "full"
    lora_rank: int = Field(default=16, gt=0, le=4096)
    precision: Literal["bf16", "fp16", "fp8", "fp4"] = "bf16"
    seq_len: int = Field(default=4096, gt=0, le=1_048_576)
    global_batch: int | None = Field(default=None, gt=0, le=1_000_000, description="sequences per step")
    goodput: float | None = Field(default=None, gt=0, le=1)
    dataset_gb: float = Field(default=0.0, ge=0, le=1e7, description="data moved in (storage while training)")
    checkpoints_kept: int = Field(default=3, ge=1, le=1000)
    download_final_weights: bool = True
    constraints: Constraints = Field(default_factory=Constraints)
    limit: int = Field(default=20, gt=0, le=1000)
    all_rows: bool = Field(default=False, description="every offer's row, not one per distinct choice")
    seed: int = 0

    @model_validator(mode="after")
    def _how_many_tokens(self) -> "TrainPlanRequest":
        if self.tokens is None and not (self.epochs and self.dataset_tokens):
            raise ValueError("give tokens, or epochs and dataset_tokens")
        return self

    @property
    def total_tokens(self) -> float:
        return self.tokens if self.tokens is not None else self.epochs * self.dataset_tokens


# Interactive serving gets a latency target unless the request is offline (a chat user notices a
# first token after ~2 s and reads at ~20 tokens/s, i.e. 50 ms per token).
DEFAULT_MAX_TPOT_MS = 50.0
DEFAULT_MAX_TTFT_MS = 2000.0


class ServePlanRequest(ModelChoice):
    precision: Literal["bf16", "fp16", "fp8", "int8", "int4", "fp4"] | None = Field(
        default=None, description="weights; default: the model's native precision (DeepSeek-V3: fp8)")
    kv_precision: Literal["bf16", "fp16", "fp8", "int8", "fp4"] | None = None
    engine: Literal["vllm", "sglang", "trtllm"] = "vllm"
    input_len: int = Field(default=1000, gt=0, le=2_000_000)
    output_len: int = Field(default=250, gt=0, le=1_000_000)
    requests_per_s: float | None = Field(default=None, gt=0, le=1e7)
    tokens_per_month: float | None = Field(default=None, gt=0, le=1e18, description="input + output tokens")
    peak_factor: float = Field(default=2.0, ge=1, le=100)
    max_ttft_ms: float | None = Field(default=None, gt=0, le=1e7)
    max_tpot_ms: float | None = Field(default=None, gt=0, le=1e6)
    offline: bool = Field(default=False, description="no latency target: the max-throughput operating point")
    redundancy: bool = Field(default=True, description="N+1: one spare replica on another node")
    horizon_months: float = Field(default=1.0, gt=0, le=120)
    users: list[str] | None = Field(default=None, description="user geographies, e.g. ['eu', 'us-east']")
    constraints: Constraints = Field(default_factory=Constraints)
    limit: int = Field(default=20, gt=0, le=1000)
    all_rows: bool = Field(default=False, description="every offer's row, not one per distinct choice")
    seed: int = 0

    @model_validator(mode="after")
    def _traffic(self) -> "ServePlanRequest":
        if (self.requests_per_s is None) == (self.tokens_per_month is None):
            raise ValueError("give exactly one of requests_per_s or tokens_per_month")
        return self

    def targets_ms(self) -> tuple[float | None, float | None, str]:
        """(TTFT, TPOT, basis): the given targets, else the interactive defaults unless offline."""
        if self.offline:
            return self.max_ttft_ms, self.max_tpot_ms, "offline: no latency target"
        ttft = self.max_ttft_ms if self.max_ttft_ms is not None else DEFAULT_MAX_TTFT_MS
        tpot = self.max_tpot_ms if self.max_tpot_ms is not None else DEFAULT_MAX_TPOT_MS
        given = self.max_ttft_ms is not None and self.max_tpot_ms is not None
        return ttft, tpot, "given" if given else (f"interactive default TTFT <= {DEFAULT_MAX_TTFT_MS:g} ms, "
                                                   f"TPOT <= {DEFAULT_MAX_TPOT_MS:g} ms (--offline for none)")

    def resolved_precision(self, model) -> str:
        return self.precision or getattr(model, "native_precision", "bf16") or "bf16"

    @property
    def average_requests_per_s(self) -> float:
        if self.requests_per_s is not None:
            return self.requests_per_s
        return self.tokens_per_month / (self.input_len + self.output_len) / SECONDS_PER_MONTH
