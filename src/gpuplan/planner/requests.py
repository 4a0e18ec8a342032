"""What a plan is asked for: the model, the workload and the constraints.

The CLI, the Python API and the HTTP API all build these, so validation lives in one place.
"""
from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from gpuplan.display import fmt_duration
from gpuplan.errors import UsageError
from gpuplan.perf.workload import Framework, MoeDispatcher
from gpuplan.units import SECONDS_PER_MONTH, parse_quantity

MAX_GPUS_LIMIT = 131_072
DEFAULT_PLAN_LIMIT = 15  # plans a train/serve request returns: the CLI, the API and the library alike


# ---- one parser for quantities and durations (the CLI's strings and the API's JSON alike) ------

def parse_duration_hours(text: str | float | int | None, flag: str = "--deadline") -> float | None:
    """'36', '36h', '14d', '2w', '90m' -> hours; a plain number is hours."""
    if text is None:
        return None
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?(?:e\d+)?)\s*([mhdw]?)\s*", str(text).lower())
        if not m:
            raise UsageError(f"{flag}: {text!r} is not a duration (examples: 36h, 14d, 2w)")
        value = float(m[1]) * {"": 1, "h": 1, "m": 1 / 60, "d": 24, "w": 168}[m[2]]
    if not (math.isfinite(value) and value > 0):
        raise UsageError(f"{flag} must be positive")
    return value


def _strip_flag(e: UsageError, flag: str) -> str:
    return str(e).removeprefix(flag + ": ").removeprefix(flag + " ")


def _as_quantity(v: Any) -> Any:
    """'15T', '5B', '8k', '1e12' -> float (numbers pass through to the field's own bounds)."""
    if isinstance(v, str):
        try:
            return parse_quantity(v, "@", allow_zero=True)
        except UsageError as e:
            raise ValueError(_strip_flag(e, "@")) from None
    return v


def _as_token_count(v: Any) -> Any:
    """'8k' -> 8000; a count of tokens is whole."""
    v = _as_quantity(v)
    if isinstance(v, float) and math.isfinite(v):
        if v != int(v):
            raise ValueError(f"must be a whole number of tokens, got {v:g}")
        return int(v)
    return v


def _as_duration(v: Any) -> Any:
    """'10d', '36h', '2w' -> hours; a number is hours."""
    if isinstance(v, str):
        try:
            return parse_duration_hours(v, "@")
        except UsageError as e:
            raise ValueError(_strip_flag(e, "@")) from None
    return v


FRAMEWORK_HELP = ("training stack: megatron (Megatron-Core / NeMo, fused FP8 casts, cuDNN attention; what "
                  "model-parallel exports launch) or pytorch (torchtitan, FSDP2, Composer, Accelerate)")
FUSED_MOE_HELP = ("MoE on data-centre Blackwell: the stack replays the whole iteration as one CUDA graph and runs each "
                  "MoE layer's experts as one fused grouped-MLP kernel (Megatron-Bridge's MXFP8 MoE recipes from NeMo "
                  "26.06), so no per-expert, per-MoE-layer or per-layer launch costs; the exported launch files do not "
                  "set it up")


MOE_DISPATCHER_HELP = ("MoE token dispatcher: flex (DeepEP / HybridEP, the default, as NVIDIA's MoE recipes run: a copy "
                       "of each token per destination GPU, and per remote node over the network) or alltoall "
                       "(Megatron's NCCL all-to-all, what the exported launch runs: a copy per selected expert)")
EP_OVERLAP_HELP = ("MoE: overlap the expert-parallel all-to-all with an adjacent micro-batch's compute (Megatron's "
                   "combined 1F1B schedule, --overlap-moe-expert-parallel-comm; needs PP 1 or an interleaved "
                   "pipeline); off, as in Megatron and the exported launch, the all-to-all is on the critical path")


def _lower(v: Any) -> Any:
    return v.strip().lower() if isinstance(v, str) else v


FrameworkField = Annotated[Framework, BeforeValidator(_lower)]


Quantity = Annotated[float, BeforeValidator(_as_quantity)]
TokenCount = Annotated[int, BeforeValidator(_as_token_count)]
Hours = Annotated[float, BeforeValidator(_as_duration)]


class Constraints(BaseModel):
    """Filters every plan must pass; `None` means no constraint."""

    model_config = ConfigDict(extra="forbid")

    budget_usd: Quantity | None = Field(default=None, gt=0, description="max expected total cost (plans whose p90 is over it say so)")
    deadline_hours: Hours | None = Field(default=None, gt=0, description="max expected wall time ('10d', '36h' or hours)")
    providers: list[str] | None = None
    exclude: list[str] | None = None
    kinds: list[str] | None = None
    regions: list[str] | None = None
    gpus: list[str] | None = Field(default=None, description="GPU names; 'H100' means every H100 variant")
    max_gpus: int | None = Field(default=None, gt=0, le=MAX_GPUS_LIMIT)
    no_spot: bool = False
    min_confidence: Literal["primary", "aggregated", "third-party", "unverified"] | None = None
    max_price_age_days: int | None = Field(default=None, ge=0)
    allow_decentralized: bool = False
    allow_unclustered: bool = Field(default=False, description="join VMs that are not sold as a cluster (unknown or "
                                                               "Ethernet network) for multi-node training")
    max_wall_hours: Hours | None = Field(default=None, gt=0, le=24 * 3650,
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
    params: Quantity | None = Field(default=None, gt=0, le=1e14, description="total parameters, e.g. 7B")
    active_params: Quantity | None = Field(default=None, gt=0, le=1e14, description="active parameters per token (MoE)")

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


SAMPLE_LEN_HELP = ("mean tokens per example when short examples are packed into each sequence with per-example "
                   "attention (SFT packing): attention spans one example, not the sequence")


class TrainPlanRequest(ModelChoice):
    tokens: Quantity | None = Field(default=None, gt=0, le=1e16, description="training tokens, e.g. 15T")
    epochs: float | None = Field(default=None, gt=0, le=1e4)
    dataset_tokens: Quantity | None = Field(default=None, gt=0, le=1e16)
    method: Literal["full", "lora", "qlora"] = "full"
    lora_rank: int = Field(default=16, gt=0, le=4096)
    precision: Literal["bf16", "fp16", "fp8", "fp4"] = "bf16"
    seq_len: int = Field(default=4096, gt=0, le=1_048_576)
    sample_len: int | None = Field(default=None, gt=0, le=1_048_576, description=SAMPLE_LEN_HELP)
    global_batch: int | None = Field(default=None, gt=0, le=1_000_000, description="sequences per step")
    goodput: float | None = Field(default=None, gt=0, le=1)
    framework: FrameworkField = Field(default="megatron", description=FRAMEWORK_HELP)
    dataset_gb: float = Field(default=0.0, ge=0, le=1e7, description="data moved in (storage while training)")
    checkpoints_kept: int = Field(default=3, ge=1, le=1000)
    download_final_weights: bool = True
    constraints: Constraints = Field(default_factory=Constraints)
    limit: int = Field(default=DEFAULT_PLAN_LIMIT, gt=0, le=1000, description="plans returned")
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
    input_len: TokenCount = Field(default=1000, gt=0, le=2_000_000, description="prompt tokens per request, e.g. 8k")
    output_len: TokenCount = Field(default=250, gt=0, le=1_000_000)
    requests_per_s: Quantity | None = Field(default=None, gt=0, le=1e7)
    tokens_per_month: Quantity | None = Field(default=None, gt=0, le=1e18, description="input + output tokens, e.g. 5B")
    peak_factor: float = Field(default=2.0, ge=1, le=100)
    max_ttft_ms: float | None = Field(default=None, gt=0, le=1e7)
    max_tpot_ms: float | None = Field(default=None, gt=0, le=1e6)
    offline: bool = Field(default=False, description="no latency target: the max-throughput operating point")
    redundancy: bool = Field(default=True, description="N+1: one spare replica on another node")
    horizon_months: float = Field(default=1.0, gt=0, le=120)
    users: list[str] | None = Field(default=None, description="user geographies, e.g. ['eu', 'us-east']")
    constraints: Constraints = Field(default_factory=Constraints)
    limit: int = Field(default=DEFAULT_PLAN_LIMIT, gt=0, le=1000, description="plans returned")
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


# ---- estimates ------------------------------------------------------------------------------
# Field names are the CLI's flag names (`--seq-len` = seq_len); `estimate_train(req)` /
# `estimate_serve(req)` answer them. Ranges are the estimators' to check (one message, naming the
# flag, for the CLI and the library); the web bodies (web/schemas.py) add the work limits of a server.

# Without tokens (and with gpus) the per-step figures stand and whole-run figures are per this many tokens.
NOMINAL_TOKENS = 1e9
LowerStr = Annotated[str, BeforeValidator(_lower)]


def training_workload(tokens=None, epochs=None, dataset_tokens=None, method="full", seq_len=4096, global_batch=None,
                      precision="bf16", lora_rank=16, lora_targets="all", default_tokens: float | None = None,
                      sample_len: int | None = None, framework: str = "megatron"):
    """The TrainingWorkload of an estimate: pre-training for `full` without a data set, else fine-tuning."""
    from gpuplan.perf.workload import make_workload

    method = str(method).strip().lower()
    if method not in ("full", "lora", "qlora"):
        raise UsageError(f"--method {method!r}: use full, lora or qlora")
    tok = parse_quantity(tokens, "--tokens") if tokens is not None else None
    data = parse_quantity(dataset_tokens, "--dataset-tokens") if dataset_tokens is not None else None
    if epochs is not None and data is None:
        raise UsageError("--epochs needs --dataset-tokens")
    if data is not None and epochs is None:
        raise UsageError("--dataset-tokens needs --epochs")
    if tok is None and data is None:
        if default_tokens is None:
            raise UsageError("give --tokens, or --epochs with --dataset-tokens")
        tok = default_tokens
    kind = "pretrain" if method == "full" and data is None else "finetune"
    return make_workload(kind=kind, method=method, tokens=tok, epochs=epochs, dataset_tokens=data, seq_len=seq_len,
                         global_batch=global_batch, precision=str(precision).strip().lower(), lora_rank=lora_rank,
                         lora_targets=str(lora_targets).strip().lower(), sample_len=sample_len, framework=framework)


def fabric_gbps(text: str | float) -> str | float:
    """--fabric: 'infiniband' / 'ethernet' (and their short names) or Gb/s per GPU."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    t = str(text).strip().lower()
    if t in ("infiniband", "ib", "ethernet", "eth", "roce"):
        return t
    try:
        return float(t.removesuffix("gbps").removesuffix("gb/s"))
    except ValueError:
        raise UsageError(f"--fabric {text!r}: use infiniband, ethernet or a number of Gb/s per GPU") from None


class TrainEstimateRequest(ModelChoice):
    """`gpuplan estimate train`: GPU-hours, wall time, MFU, memory and layout on one GPU type."""

    gpu: str = Field(min_length=1, max_length=100, description="GPU type, e.g. H100")
    gpus: int | None = Field(default=None, description="default: the smallest count that "
                                                                             "fits and meets deadline_days")
    tokens: Quantity | None = Field(default=None, description="training tokens, e.g. 15T")
    epochs: float | None = Field(default=None)
    dataset_tokens: Quantity | None = Field(default=None)
    method: Annotated[Literal["full", "lora", "qlora"], BeforeValidator(_lower)] = "full"
    lora_rank: int = Field(default=16)
    lora_targets: Annotated[Literal["attention", "all"], BeforeValidator(_lower)] = "all"
    precision: Annotated[Literal["bf16", "fp16", "fp8", "fp4"], BeforeValidator(_lower)] = "bf16"
    seq_len: TokenCount = Field(default=4096)
    sample_len: int | None = Field(default=None, gt=0, le=1_048_576, description=SAMPLE_LEN_HELP)
    global_batch: int | None = Field(default=None, description="sequences per optimizer step")
    micro_batch: int | None = Field(default=None)
    tp: int | None = Field(default=None)
    pp: int | None = Field(default=None)
    cp: int | None = Field(default=None)
    ep: int | None = Field(default=None)
    etp: int | None = Field(default=None, description="MoE: the experts' tensor parallelism, 1 (folded whole over "
                                                      "the TP ranks) or tp (default: searched)")
    vp: int | None = Field(default=None)
    recompute: Annotated[Literal["none", "selective", "full"], BeforeValidator(_lower)] | None = None
    zero: int | None = Field(default=None)
    goodput: float | None = Field(default=None)
    efficiency: float | None = Field(default=None)
    fabric: str | Annotated[float, Field(gt=0)] = Field(
        default="infiniband", description="infiniband (400 Gb/s per GPU), ethernet (100 Gb/s) or Gb/s per GPU")
    gpus_per_node: int = Field(default=8)
    deadline_days: float | None = Field(default=None)
    flops_convention: Annotated[Literal["causal", "full", "none"], BeforeValidator(_lower)] = "causal"
    teacher: str | None = Field(default=None, min_length=1, max_length=200,
                                description="distill from this model: its forward pass per token counts")
    recompute_layers: int | None = Field(default=None, description="with recompute full: layers recomputed per stage")
    framework: FrameworkField = Field(default="megatron", description=FRAMEWORK_HELP)
    fused_moe: bool = Field(default=False, description=FUSED_MOE_HELP)
    moe_dispatcher: Annotated[MoeDispatcher, BeforeValidator(_lower)] | None = Field(
        default=None, description=MOE_DISPATCHER_HELP)
    ep_overlap: bool = Field(default=False, description=EP_OVERLAP_HELP)

    @property
    def per_nominal_tokens(self) -> bool:
        return self.tokens is None and self.dataset_tokens is None

    def workload(self):
        wl = training_workload(self.tokens, self.epochs, self.dataset_tokens, self.method, self.seq_len,
                               self.global_batch, self.precision, self.lora_rank, self.lora_targets,
                               default_tokens=NOMINAL_TOKENS if self.per_nominal_tokens else None,
                               sample_len=self.sample_len, framework=self.framework)
        if self.fused_moe or self.ep_overlap or self.moe_dispatcher:
            wl = wl.model_copy(update={"fused_moe": self.fused_moe, "ep_overlap": self.ep_overlap,
                                       "moe_dispatcher": self.moe_dispatcher or wl.moe_dispatcher})
        return with_distillation_and_recompute(wl, self.teacher, self.recompute_layers, self.recompute)


def with_distillation_and_recompute(wl, teacher=None, recompute_layers=None, recompute=None):
    """The workload with a distillation teacher and partial recompute, checked."""
    if teacher is not None:
        from gpuplan.models import resolve_model
        from gpuplan.perf.workload import with_teacher

        wl = with_teacher(wl, resolve_model(teacher))
    if recompute_layers is not None:
        if recompute is None or str(recompute).strip().lower() != "full":
            raise UsageError("--recompute-layers needs --recompute full")
        if recompute_layers < 1:
            raise UsageError(f"--recompute-layers must be at least 1, got {recompute_layers}")
        wl = wl.model_copy(update={"recompute_layers": recompute_layers})
    return wl


def estimate_train(req: TrainEstimateRequest):
    """The TrainingEstimate for a request (the CLI's and the API's answer)."""
    from gpuplan.perf.training_estimate import estimate_training

    spec = req.resolve_model()
    if req.moe_dispatcher is not None and not spec.n_experts:
        raise UsageError(f"--moe-dispatcher times a MoE model's expert-parallel all-to-all; {spec.name} is dense")
    est = estimate_training(spec, req.workload(), req.gpu, req.gpus, tp=req.tp, pp=req.pp, cp=req.cp,
                            ep=req.ep, etp=req.etp, vp=req.vp, micro_batch=req.micro_batch, recompute=req.recompute,
                            zero=req.zero, inter_node_gbps_per_gpu=fabric_gbps(req.fabric),
                            gpus_per_node=req.gpus_per_node, goodput=req.goodput, efficiency=req.efficiency,
                            deadline_days=req.deadline_days, attention=req.flops_convention,
                            # without tokens: the count with the best throughput per GPU (step time, MFU, memory)
                            count_policy="throughput" if req.per_nominal_tokens and req.deadline_days is None
                            else "auto")
    if req.per_nominal_tokens:
        est = est.model_copy(update={"notes": est.notes + [
            f"no --tokens: step time, MFU, memory and layout stand; GPU-hours and wall time are per "
            f"{NOMINAL_TOKENS:.0e} tokens"]})
    return est


class ServeEstimateRequest(ModelChoice):
    """`gpuplan estimate serve`: throughput, TTFT/TPOT, KV cache and concurrency on one GPU type."""

    gpu: str = Field(min_length=1, max_length=100, description="GPU type, e.g. H100")
    gpus: int | None = Field(default=None, description="GPUs in total")
    tp: int | None = Field(default=None, description="GPUs per replica")
    ep: int | None = Field(default=None, description="MoE: expert-parallel degree")
    attention_dp: bool = Field(default=False, description="MoE: attention data parallel, experts EP over the replica")
    precision: LowerStr | None = Field(default=None, max_length=20, description="weights: bf16, fp16, fp8, int8, int4, "
                                       "fp4; default: the model's native precision (DeepSeek-V3: fp8), else bf16")
    kv_precision: LowerStr | None = Field(default=None, max_length=20)
    engine: LowerStr = Field(default="vllm", max_length=40, description="vllm, sglang, trtllm or optimum-habana")
    input_len: TokenCount = Field(default=1000, description="prompt tokens per request, e.g. 8k")
    output_len: TokenCount = Field(default=1000)
    concurrency: int | None = Field(default=None)
    requests: int | None = Field(default=None, description="a benchmark's request count: with concurrency (vllm bench "
                                 "serve --num-prompts) TTFT is the mean over them, the first wave arriving together; "
                                 "without (trtllm-bench throughput) all are queued at once and run in waves of as many "
                                 "as fit")
    fixed_lengths: bool = Field(default=False, description="with concurrency: every prompt and output has one length "
                                "(vllm bench serve's random data set at range ratio 0 with --ignore-eos), so the "
                                "closed loop's clients arrive in the groups their first wave was admitted in")
    max_ttft_ms: float | None = Field(default=None)
    max_tpot_ms: float | None = Field(default=None)
    memory_fraction: float | None = Field(default=None)
    max_num_seqs: int | None = Field(default=None, description="the engine's cap on running requests per replica; "
                                     "default: the engine's on this GPU (vLLM: 256 under 70 GiB or on an A100, else 1024)")
    eta_bw: float | None = Field(default=None, description="override the fitted HBM bandwidth efficiency")
    eta_c: float | None = Field(default=None, description="override the fitted compute efficiency")


def estimate_serve(req: ServeEstimateRequest):
    """The ServingEstimate for a request (the CLI's and the API's answer): at the given precision, else the
    model's native one (as `plan serve`), on an engine the GPU runs (as `plan serve` ranks offers)."""
    from gpuplan.perf.inference_estimate import check_engine_serves, estimate_serving

    model = req.resolve_model()
    if not model.is_moe and (req.attention_dp or (req.ep or 1) > 1):
        flag = "--attention-dp" if req.attention_dp else "--ep"
        raise UsageError(f"{flag} applies to mixture-of-experts models; {model.name} is dense")
    precision = req.precision or getattr(model, "native_precision", None) or "bf16"
    check_engine_serves(req.gpu, req.engine, precision)
    est = estimate_serving(model, req.gpu, n_gpus=req.gpus, tp=req.tp, precision=precision,
                           kv_precision=req.kv_precision, input_len=req.input_len, output_len=req.output_len,
                           concurrency=req.concurrency, max_ttft_ms=req.max_ttft_ms, max_tpot_ms=req.max_tpot_ms,
                           engine=req.engine, memory_fraction=req.memory_fraction, max_num_seqs=req.max_num_seqs,
                           eta_bw=req.eta_bw,
                           eta_c=req.eta_c, ep=req.ep, dp_attention=req.attention_dp, requests=req.requests,
                           fixed_lengths=req.fixed_lengths)
    native = getattr(model, "native_precision", None) or "bf16"
    est.assumptions["precision_basis"] = (f"the model's native precision ({est.precision})"
                                          if req.precision is None or req.precision == native else "given")
    return est


# ---- economics --------------------------------------------------------------------------------

class BreakevenRequest(BaseModel):
    """`gpuplan breakeven`: self-host a model vs hosted APIs."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1, description="preset id (or, from the CLI, a config.json path)")
    tokens_per_month: Quantity = Field(gt=0, description="input + output tokens per month, e.g. 5B")
    input_share: float = Field(default=0.5)
    api: list[str] | None = Field(
        default=None, description="API ids to compare; default: every API serving the model, plus nearest models")
    gpu: str = Field(default="H100-SXM", min_length=1, max_length=100)
    price_per_gpu_hour: float | None = Field(
        default=None,
        description="default: median on-demand price of hyperscaler/neocloud offers, one vote per provider")
    output_len: TokenCount = Field(default=1000)
    precision: LowerStr = Field(default="bf16", max_length=20)
    engine: Annotated[Literal["vllm", "sglang", "trtllm"], BeforeValidator(_lower)] = "vllm"
    max_ttft_ms: float | None = Field(default=None, description="default 2000 unless offline")
    max_tpot_ms: float | None = Field(default=None, description="default 50 unless offline")
    offline: bool = Field(default=False, description="no latency target: capacity at max throughput")
    target_utilization: float = Field(default=0.8)
    eng_usd_per_month: float | None = Field(default=None, description="default 8000 (~0.4 FTE)")
    peak_factor: float | None = Field(default=None, description="peak / average traffic; default 2.0")
    redundancy: bool = Field(default=True, description="N+1: one spare replica")


def breakeven(req: BreakevenRequest, catalog) -> dict[str, Any]:
    """Self-host vs API, priced from `catalog` (the one --db or the web app chose)."""
    from gpuplan.economics.self_host import compare_self_host_to_apis

    return compare_self_host_to_apis(
        req.model, req.tokens_per_month, input_share=req.input_share, api=req.api or None, gpu=req.gpu,
        price_per_gpu_hour=req.price_per_gpu_hour, output_len=req.output_len, precision=req.precision,
        engine=req.engine, max_ttft_ms=req.max_ttft_ms, max_tpot_ms=req.max_tpot_ms, offline=req.offline,
        target_utilization=req.target_utilization, eng_usd_per_month=req.eng_usd_per_month,
        peak_factor=req.peak_factor, redundancy=req.redundancy, catalog=catalog)


class TcoRequest(BaseModel):
    """`gpuplan tco`: what you know; every other line takes its documented default. The final run
    is given (final_run_usd, or gpu_hours x price_per_gpu_hour) or planned (model or params, with tokens)."""

    model_config = ConfigDict(extra="forbid")

    final_run_usd: float | None = Field(default=None)
    gpu_hours: float | None = Field(default=None)
    price_per_gpu_hour: float | None = Field(default=None)
    experiments_multiplier: float | None = Field(default=None)
    data_usd: float | None = Field(default=None)
    engineers: float | None = Field(default=None)
    months: float | None = Field(default=None)
    salary_usd_per_year: float | None = Field(default=None)
    labour_overhead: float | None = Field(default=None)
    labour_usd: float | None = Field(default=None)
    safety_fraction: float | None = Field(default=None)
    safety_usd: float | None = Field(default=None)
    storage_tb: float | None = Field(default=None)
    storage_months: float | None = Field(default=None)
    storage_usd_per_gb_month: float | None = Field(default=None)
    egress_tb: float | None = Field(default=None)
    egress_usd_per_gb: float | None = Field(default=None)
    hosting_months: float | None = Field(default=None)
    hosting_usd_per_month: float | None = Field(default=None)
    gpu: str | None = Field(default=None, min_length=1, max_length=100)
    region: str | None = Field(default=None, min_length=1, max_length=100)
    # Plan the final run instead of giving it.
    model: str | None = Field(default=None, description="preset id: plan the final run (with tokens)")
    params: Quantity | None = Field(default=None)
    active_params: Quantity | None = Field(default=None)
    tokens: Quantity | None = Field(default=None, description="training tokens of the planned run")
    method: Annotated[Literal["full", "lora", "qlora"], BeforeValidator(_lower)] = "full"
    precision: Annotated[Literal["bf16", "fp16", "fp8", "fp4"], BeforeValidator(_lower)] = "bf16"

    @model_validator(mode="after")
    def _given_or_planned(self) -> "TcoRequest":
        if self.planned and (self.final_run_usd is not None or self.gpu_hours is not None):
            raise ValueError("give the final run (final_run_usd/gpu_hours) or plan it (model and tokens), not both")
        return self

    @property
    def planned(self) -> bool:
        return self.model is not None or self.params is not None or self.tokens is not None

    def inputs(self) -> dict[str, Any]:
        """The TCO inputs this request gives (None = the documented default)."""
        skip = {"model", "params", "active_params", "tokens", "method", "precision"}
        return {k: v for k, v in self.model_dump().items() if k not in skip and v is not None}


def planned_final_run(req: TcoRequest, catalog) -> dict[str, Any]:
    """The first-ranked training plan for the request's model and tokens, as TCO inputs."""
    from gpuplan.errors import GpuplanError
    from gpuplan.planner.project import final_run_from_plan
    from gpuplan.planner.train_plan import plan_training

    if req.tokens is None:
        raise UsageError("planning the final run needs tokens (with model or params)")
    train = TrainPlanRequest(model=req.model, params=req.params, active_params=req.active_params, tokens=req.tokens,
                             method=req.method, precision=req.precision, limit=1)
    result = plan_training(train, catalog)
    if not result.plans:
        raise GpuplanError("no training plan for the final run; give final_run_usd instead")
    best = result.plans[0]
    return final_run_from_plan(best) | {
        "plan": best.model_dump(mode="json"),
        "summary": f"{best.provider_name} {best.nodes}x{best.gpus_per_node:g} {best.gpu} ({best.pricing}), "
                   f"{fmt_duration(best.wall_hours)}, ${best.cost_usd:,.0f}",
    }


def tco(req: TcoRequest, catalog=None) -> dict[str, Any]:
    """The TCO answer: every line, the chart rows and, when planned, the final-run plan. Unknown GPU
    or region names are errors before any planning."""
    from gpuplan.economics.tco import compute_tco, make_inputs

    kw = req.inputs()
    if req.gpu is not None:
        from gpuplan.catalog.gpus import resolve_gpu_id

        kw["gpu"] = resolve_gpu_id(req.gpu)
    if req.region is not None:
        from gpuplan.economics.energy import grid_intensity

        grid_intensity(req.region)
    planned: dict[str, Any] = {}
    if req.planned:
        if catalog is None:
            from gpuplan.catalog.catalog import Catalog

            catalog = Catalog.load()
        planned = planned_final_run(req, catalog)
        kw.update(final_run_usd=planned["final_run_usd"], gpu_hours=planned["gpu_hours"],
                  price_per_gpu_hour=planned["price_per_gpu_hour"])
        from gpuplan.economics.tco import planned_final_run_inputs

        kw.update(planned_final_run_inputs(planned["plan"], planned["summary"]))
        kw.setdefault("gpu", planned["gpu"])
        kw.setdefault("region", planned["region"])
        kw["provider_kind"] = planned.get("provider_kind")
    result = compute_tco(make_inputs(**kw))
    out = result.model_dump() | {"chart": result.chart(), "final_run_plan": planned.get("plan")}
    if planned:
        out["final_run_summary"] = planned["summary"]
    return out
