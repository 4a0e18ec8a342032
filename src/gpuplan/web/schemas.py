"""Request bodies of the HTTP API: the planner's own request models with web work limits.

The plan bodies *are* `TrainPlanRequest` / `ServePlanRequest` (subclasses), so validation
lives where the CLI's does; the web only tightens what one request may cost the server
(`limit`, `max_gpus`, list lengths, string lengths) and refuses non-finite numbers.
Every field is a value: nothing here names a file on the server.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from gpuplan.planner.records import PlanResult
from gpuplan.planner.requests import (
    DEFAULT_PLAN_LIMIT, BreakevenRequest, Constraints, Quantity, ServeEstimateRequest, ServePlanRequest, TcoRequest,
    TokenCount, TrainEstimateRequest, TrainPlanRequest,
)

# Work limits per request (the CLI's own limits are wider: a terminal user only slows themself).
MAX_PLANS = 200            # plans returned by one plan request
MAX_PLAN_GPUS = 16_384     # the planner's default cluster cap; a web request may lower it, not raise it
MAX_ESTIMATE_GPUS = 16_384
MAX_OFFERS = 1000
MAX_LIST_ITEMS = 64
MAX_SEED = 2**31 - 1

Name = Annotated[str, StringConstraints(min_length=1, max_length=100)]
NameList = Annotated[list[Name], Field(max_length=MAX_LIST_ITEMS)]

_STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)


class ErrorBody(BaseModel):
    """Every 4xx answer: one line a person can act on."""

    detail: str


class FieldError(BaseModel):
    loc: list[str | int]
    msg: str
    type: str


class ValidationErrorBody(BaseModel):
    """422: `detail` is the first problem in one line; `errors` lists them all."""

    detail: str
    errors: list[FieldError] = Field(default_factory=list)


class PlanConstraints(Constraints):
    model_config = _STRICT

    providers: NameList | None = None
    exclude: NameList | None = None
    kinds: NameList | None = None
    regions: NameList | None = None
    gpus: NameList | None = Field(default=None, description="GPU names; 'H100' means every H100 variant")
    max_gpus: int | None = Field(default=None, gt=0, le=MAX_PLAN_GPUS)


class TrainPlanBody(TrainPlanRequest):
    """`gpuplan plan train` as JSON. `model` is a preset id; or give `params` (and `active_params`)."""

    model_config = _STRICT

    model: Name | None = Field(default=None, description="preset id, e.g. llama-3.1-8b (see /api/models)")
    constraints: PlanConstraints = Field(default_factory=PlanConstraints)
    limit: int = Field(default=DEFAULT_PLAN_LIMIT, gt=0, le=MAX_PLANS)
    seed: int = Field(default=0, ge=0, le=MAX_SEED)


class ServePlanBody(ServePlanRequest):
    """`gpuplan plan serve` as JSON: a traffic profile (requests_per_s or tokens_per_month)."""

    model_config = _STRICT

    model: Name | None = Field(default=None, description="preset id, e.g. llama-3.1-8b (see /api/models)")
    users: NameList | None = Field(default=None, description="user geographies, e.g. ['eu', 'us-east']")
    constraints: PlanConstraints = Field(default_factory=PlanConstraints)
    limit: int = Field(default=DEFAULT_PLAN_LIMIT, gt=0, le=MAX_PLANS)
    seed: int = Field(default=0, ge=0, le=MAX_SEED)


class ProjectBody(BaseModel):
    """`gpuplan plan project`: train on one provider, serve on another."""

    model_config = _STRICT

    train: TrainPlanBody
    serve: ServePlanBody


class ProjectResult(BaseModel):
    """The best training plan, the best serving plan, and the total."""

    train: PlanResult
    serve: PlanResult
    total_usd: float
    total_p90_usd: float
    feasible: bool
    notes: list[str]


class ExportBody(BaseModel):
    """Which plan to export: the same plan request again (plans are deterministic) and a rank."""

    model_config = _STRICT

    train: TrainPlanBody | None = None
    serve: ServePlanBody | None = None
    rank: int = Field(default=1, ge=1, le=MAX_PLANS)
    name: Annotated[str, StringConstraints(max_length=64)] | None = None
    image: Annotated[str, StringConstraints(max_length=300)] | None = None
    script: Annotated[str, StringConstraints(min_length=1, max_length=300)] | None = Field(
        default=None, description="your training script; default: Megatron-LM for model parallelism and Megatron-timed "
                                 "pre-training, else an accelerate launch")
    script_args: Annotated[list[Annotated[str, StringConstraints(max_length=300)]], Field(max_length=32)] = Field(
        default_factory=list)
    model_id: Annotated[str, StringConstraints(max_length=200)] | None = None
    max_restarts: int = Field(default=3, ge=0, le=1000)
    megatron_args: bool = True

    @model_validator(mode="after")
    def _one_plan(self) -> "ExportBody":
        if (self.train is None) == (self.serve is None):
            raise ValueError("give exactly one of train or serve (the plan request to export from)")
        return self


class _PresetOnly(BaseModel):
    """Over HTTP a model is a preset id or a parameter count, never a server path."""

    model: Name | None = Field(default=None, description="preset id (see /api/models)")

    @model_validator(mode="after")
    def _params_alone(self):
        if getattr(self, "active_params", None) is not None and getattr(self, "params", None) is None:
            raise ValueError("active_params goes with params, not model")
        return self


class TrainEstimateBody(_PresetOnly, TrainEstimateRequest):
    """`gpuplan estimate train` as JSON: the library's TrainEstimateRequest with web work limits."""

    model_config = _STRICT

    gpu: Name = Field(description="GPU type, e.g. H100 (see /api/gpus)")
    gpus: int | None = Field(default=None, gt=0, le=MAX_ESTIMATE_GPUS, description="default: searched")
    tokens: Quantity | None = Field(default=None, gt=0, le=1e16, description="training tokens, e.g. 15T")
    epochs: float | None = Field(default=None, gt=0, le=1e4)
    dataset_tokens: Quantity | None = Field(default=None, gt=0, le=1e16)
    lora_rank: int = Field(default=16, gt=0, le=4096)
    seq_len: TokenCount = Field(default=4096, gt=0, le=1_048_576)
    global_batch: int | None = Field(default=None, gt=0, le=1_000_000)
    micro_batch: int | None = Field(default=None, gt=0, le=4096)
    tp: int | None = Field(default=None, gt=0, le=1024)
    pp: int | None = Field(default=None, gt=0, le=1024)
    cp: int | None = Field(default=None, gt=0, le=1024)
    ep: int | None = Field(default=None, gt=0, le=1024)
    vp: int | None = Field(default=None, gt=0, le=1024)
    zero: int | None = Field(default=None, ge=0, le=3)
    goodput: float | None = Field(default=None, gt=0, le=1)
    efficiency: float | None = Field(default=None, gt=0, le=1)
    fabric: Literal["infiniband", "ethernet"] | Annotated[float, Field(gt=0, le=100_000)] = "infiniband"
    gpus_per_node: int = Field(default=8, gt=0, le=72)
    deadline_days: float | None = Field(default=None, gt=0, le=36500)
    teacher: Name | None = Field(default=None, description="preset id of a teacher to distill from")
    recompute_layers: int | None = Field(default=None, gt=0, le=1024)


class ServeEstimateBody(_PresetOnly, ServeEstimateRequest):
    """`gpuplan estimate serve` as JSON: the library's ServeEstimateRequest with web work limits."""

    model_config = _STRICT

    gpu: Name = Field(description="GPU type, e.g. H100 (see /api/gpus)")
    gpus: int | None = Field(default=None, gt=0, le=4096, description="GPUs in total")
    tp: int | None = Field(default=None, gt=0, le=64, description="GPUs per replica")
    ep: int | None = Field(default=None, gt=0, le=1024)
    input_len: TokenCount = Field(default=1000, gt=0, le=2_000_000)
    output_len: TokenCount = Field(default=1000, gt=0, le=1_000_000)
    concurrency: int | None = Field(default=None, gt=0, le=1_000_000)
    requests: int | None = Field(default=None, gt=0, le=1_000_000)
    max_ttft_ms: float | None = Field(default=None, gt=0, le=1e7)
    max_tpot_ms: float | None = Field(default=None, gt=0, le=1e6)
    memory_fraction: float | None = Field(default=None, gt=0, le=1)
    max_num_seqs: int | None = Field(default=None, gt=0, le=1_000_000)
    eta_bw: float | None = Field(default=None, gt=0, le=1)
    eta_c: float | None = Field(default=None, gt=0, le=1)
    precision: Literal["bf16", "fp16", "fp8", "int8", "int4", "fp4"] | None = None  # None: the preset's native
    kv_precision: Literal["bf16", "fp16", "fp8", "int8", "fp4"] | None = None
    engine: Literal["vllm", "sglang", "trtllm", "optimum-habana"] = "vllm"


class TcoBody(TcoRequest):
    """`gpuplan tco` as JSON: the library's TcoRequest (a given or a planned final run)."""

    model_config = _STRICT

    gpu: Name | None = None
    region: Name | None = None
    model: Name | None = Field(default=None, description="preset id: plan the final run (with tokens)")
    final_run_usd: float | None = Field(default=None, ge=0)
    gpu_hours: float | None = Field(default=None, ge=0)
    price_per_gpu_hour: float | None = Field(default=None, ge=0)
    experiments_multiplier: float | None = Field(default=None, ge=0)
    data_usd: float | None = Field(default=None, ge=0)
    engineers: float | None = Field(default=None, ge=0)
    months: float | None = Field(default=None, ge=0)
    salary_usd_per_year: float | None = Field(default=None, ge=0)
    labour_overhead: float | None = Field(default=None, ge=0)
    labour_usd: float | None = Field(default=None, ge=0)
    safety_fraction: float | None = Field(default=None, ge=0)
    safety_usd: float | None = Field(default=None, ge=0)
    storage_tb: float | None = Field(default=None, ge=0)
    storage_months: float | None = Field(default=None, ge=0)
    storage_usd_per_gb_month: float | None = Field(default=None, ge=0)
    egress_tb: float | None = Field(default=None, ge=0)
    egress_usd_per_gb: float | None = Field(default=None, ge=0)
    hosting_months: float | None = Field(default=None, ge=0)
    hosting_usd_per_month: float | None = Field(default=None, ge=0)
    tokens: Quantity | None = Field(default=None, gt=0, le=1e16, description="training tokens of the planned run")

    def as_kwargs(self) -> dict[str, Any]:
        return self.inputs()


class BreakevenBody(BreakevenRequest):
    """`gpuplan breakeven` as JSON: the library's BreakevenRequest (presets only)."""

    model_config = _STRICT

    model: Name = Field(description="preset id (see /api/models)")
    api: Annotated[list[Name], Field(max_length=10)] | None = Field(
        default=None, description="API ids to compare; default: every API serving the model, plus nearest models")
    gpu: Name = "H100-SXM"
    tokens_per_month: Quantity = Field(gt=0, le=1e18, description="input + output tokens per month, e.g. 5B")
    input_share: float = Field(default=0.5, ge=0, lt=1)
    price_per_gpu_hour: float | None = Field(default=None, gt=0, le=1e4)
    output_len: TokenCount = Field(default=1000, ge=1, le=1_000_000)
    precision: Literal["bf16", "fp16", "fp8", "int8", "int4", "fp4"] = "bf16"
    engine: Literal["vllm", "sglang", "trtllm"] = "vllm"
    max_ttft_ms: float | None = Field(default=None, gt=0, le=1e7, description="default 2000 unless offline")
    max_tpot_ms: float | None = Field(default=None, gt=0, le=1e6, description="default 50 unless offline")
    target_utilization: float = Field(default=0.8, gt=0, le=1)
    eng_usd_per_month: float | None = Field(default=None, ge=0, le=1e9, description="default 8000 (~0.4 FTE)")
    peak_factor: float | None = Field(default=None, ge=1, le=100, description="peak / average traffic; default 2.0")


class SizeBody(BaseModel):
    """`gpuplan size` as JSON: exactly one of compute, quality_of, loss."""

    model_config = _STRICT

    compute: float | None = Field(default=None, gt=0, le=1e35, description="training FLOPs")
    quality_of: float | None = Field(default=None, gt=0, le=1e16, description="parameters of the reference model")
    loss: float | None = Field(default=None, gt=0, le=100)
    inference_tokens: float | None = Field(default=None, ge=0, le=1e20)
    laws: Literal["epoch", "sardana", "hoffmann", "hoffmann-rounded"] | None = None
    cost: bool = Field(default=False, description="optimise lifetime dollars with the default cost model")

    @model_validator(mode="after")
    def _one_target(self) -> "SizeBody":
        if sum(v is not None for v in (self.compute, self.quality_of, self.loss)) != 1:
            raise ValueError("give exactly one of compute, quality_of and loss")
        if self.compute is not None and self.inference_tokens is not None:
            raise ValueError("inference_tokens goes with quality_of or loss, not compute")
        if self.compute is None and self.inference_tokens is None:
            raise ValueError("inference_tokens is required with quality_of or loss (0 for plain Chinchilla)")
        return self
